// What a config means for the series (Metrics::apply_config's steps): the
// series of targets and prompts that are gone are removed, histograms whose
// bounds changed rebuilt, new ones added at zero, thresholds and the info
// series refreshed. The caller holds the write lock.
#include <algorithm>
#include <vector>

#include "metrics/metrics_impl.hpp"

namespace lse::metrics {

void Metrics::Impl::remove_target(TargetSeries& t) {
  for (auto& [name, s] : t.prompts) factory.remove(*s);
  t.prompts.clear();
  if (t.stall_threshold) families.gauge(F::stall_threshold).Remove(t.stall_threshold);
  t.stall_threshold = nullptr;
  for (std::size_t i = 0; i < t.alert.size(); ++i) {
    if (t.alert[i]) families.gauge(kAlertRows[i]).Remove(t.alert[i]);
    t.alert[i] = nullptr;
  }
  if (t.info) families.gauge(F::target_info).Remove(t.info);
  t.info = nullptr;
  if (t.backoffs) families.counter(F::backoffs).Remove(t.backoffs);
  t.backoffs = nullptr;
  if (t.unexpected_content_type)
    families.counter(F::unexpected_content_type).Remove(t.unexpected_content_type);
  t.unexpected_content_type = nullptr;
}

void Metrics::Impl::remove_gone_targets(const WantedSeries& wanted) {
  for (auto it = targets.begin(); it != targets.end();) {
    auto w = wanted.find(it->first);
    const TargetSeries& t = it->second;
    if (w == wanted.end() || w->second.model != t.model || w->second.own_labels != t.own_labels ||
        w->second.per_prompt != t.per_prompt) {
      remove_target(it->second);
      it = targets.erase(it);
    } else {
      ++it;
    }
  }
}

void Metrics::Impl::remove_gone_prompts(const WantedSeries& wanted) {
  for (auto& [name, t] : targets) {
    const auto& keep = wanted.at(name).prompts;
    auto gone = [&](const std::string& prompt) {
      return std::find(keep.begin(), keep.end(), prompt) == keep.end();
    };
    t.prompt_names = keep;
    if (!t.per_prompt) {
      for (auto& [key, s] : t.prompts) forget_verdicts(*s, gone);
      continue;
    }
    for (auto it = t.prompts.begin(); it != t.prompts.end();) {
      if (gone(it->first)) {
        factory.remove(*it->second);
        it = t.prompts.erase(it);
      } else {
        ++it;
      }
    }
  }
}

void Metrics::Impl::rebuild_changed_histograms(const HistogramBounds& next,
                                               const NativeSettings& next_native) {
  for (std::size_t i = 0; i < kHistogramCount; ++i) {
    if (bounds[i] == next[i] && native == next_native) continue;
    for (auto& [tname, t] : targets)
      for (auto& [pname, s] : t.prompts) {
        factory.remove_histograms(*s, static_cast<F>(i));
        factory.add_histograms(*s, static_cast<F>(i), next[i], next_native);
      }
  }
  bounds = next;
  native = next_native;
}

void Metrics::Impl::add_new_series(const WantedSeries& wanted, const HistogramBounds& b) {
  for (const auto& [name, w] : wanted) {
    auto& t = targets[name];
    t.model = w.model;
    t.own_labels = w.own_labels;
    t.per_prompt = w.per_prompt;
    t.prompt_names = w.prompts;
    const Labels set_labels = merged({{"target", name}, {"model", w.model}}, w.own_labels);
    if (!w.per_prompt && t.prompts.empty())
      t.prompts.emplace("", factory.create(set_labels, b, native, classic));
    for (const auto& prompt : w.per_prompt ? w.prompts : std::vector<std::string>{}) {
      if (t.prompts.count(prompt)) continue;
      t.prompts.emplace(prompt,
                        factory.create(with(set_labels, "prompt", prompt), b, native, classic));
    }
    if (!t.stall_threshold)
      t.stall_threshold =
          &families.gauge(F::stall_threshold).Add(merged({{"target", name}}, w.own_labels));
    t.stall_threshold->Set(w.stall_threshold);
    set_alert_thresholds(t, name, w);
    if (!t.backoffs)
      t.backoffs = &families.counter(F::backoffs).Add(merged({{"target", name}}, w.own_labels));
    if (!t.unexpected_content_type)
      t.unexpected_content_type = &families.counter(F::unexpected_content_type)
                                       .Add(merged({{"target", name}}, w.own_labels));
    set_info(t, w.info);
  }
}

void Metrics::Impl::set_alert_thresholds(TargetSeries& t, const std::string& name,
                                         const WantedTarget& w) {
  for (std::size_t i = 0; i < t.alert.size(); ++i) {
    if (!t.alert[i])
      t.alert[i] = &families.gauge(kAlertRows[i]).Add(merged({{"target", name}}, w.own_labels));
    t.alert[i]->Set(w.alert[i]);
  }
}

void Metrics::Impl::set_info(TargetSeries& t, const Labels& configured) {
  std::lock_guard lock(t.info_mutex);
  replace_info(t, with(configured, "http_version", t.http_version));
}

void Metrics::Impl::replace_info(TargetSeries& t, Labels labels) {
  if (t.info && t.info_labels == labels) return;
  if (t.info) families.gauge(F::target_info).Remove(t.info);
  t.info = &families.gauge(F::target_info).Add(labels);
  t.info->Set(1);
  t.info_labels = std::move(labels);
}

void Metrics::apply_config(const config::Config& config) {
  validate_buckets(config.buckets);
  const auto wanted = wanted_series(config);
  const auto bounds = planned_bounds(config);
  auto lock = impl_->write_lock();
  impl_->remove_gone_targets(wanted);
  impl_->remove_gone_prompts(wanted);
  impl_->rebuild_changed_histograms(bounds, config.metrics.native);
  impl_->classic = config.metrics.classic;
  impl_->add_new_series(wanted, bounds);
}

}  // namespace lse::metrics
