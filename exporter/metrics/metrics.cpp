// The prometheus-cpp families of DESIGN §3 and the per-(target, prompt) series
// behind them. prometheus-cpp 1.0.1 invalidates a series reference when it is
// removed, so every cached pointer lives in a map guarded by a shared_mutex:
// probe threads record under the shared lock, reload rebuilds under the
// exclusive one.
#include "metrics/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <utility>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <variant>
#include <vector>

#include "api/adapter.hpp"
#include "net/url.hpp"
#include "util/text.hpp"

namespace lse::metrics {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;

// Finish reasons are label values reported by upstream servers; only these
// become series so a misbehaving server cannot blow up cardinality.
constexpr std::array<std::string_view, 6> kFinishReasons = {
    "stop", "length", "content_filter", "tool_calls", "function_call", "other"};
constexpr std::size_t kFinishOther = kFinishReasons.size() - 1;

// Dialects name the same outcome differently (Anthropic "end_turn"/"max_tokens",
// Responses "max_output_tokens", Gemini "MAX_TOKENS"/"SAFETY"); the label uses
// the OpenAI names so one dashboard panel covers every target. Rows keep the
// server's own word.
std::size_t finish_reason_index(std::string_view reason) {
  const std::string r = text::to_lower(reason);
  static constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"end_turn", "stop"},          {"stop_sequence", "stop"},       {"completed", "stop"},
      {"max_tokens", "length"},      {"max_output_tokens", "length"}, {"safety", "content_filter"},
      {"refusal", "content_filter"}, {"tool_use", "tool_calls"},
  };
  std::string_view name = r;
  for (const auto& [alias, canonical] : kAliases)
    if (alias == name) name = canonical;
  for (std::size_t i = 0; i < kFinishReasons.size(); ++i)
    if (kFinishReasons[i] == name) return i;
  return kFinishOther;
}

// DESIGN §7 shapes; the label value is report::to_string(shape).
constexpr std::size_t kShapeCount = report::kAllShapes.size();

std::size_t shape_index(report::Shape shape) {
  for (std::size_t i = 0; i < kShapeCount; ++i)
    if (report::kAllShapes[i] == shape) return i;
  throw std::logic_error("unknown diagnosis shape");
}

// Histogram kinds that share a bucket setting; a reload that changes one
// setting recreates only the histograms of that kind.
enum class BucketKind { gap, ttft, duration, tail, phase, tokens_per_second };
constexpr std::array<BucketKind, 6> kBucketKinds = {
    BucketKind::gap,  BucketKind::ttft,  BucketKind::duration,
    BucketKind::tail, BucketKind::phase, BucketKind::tokens_per_second};

const std::vector<double>& buckets_of(const config::Buckets& b, BucketKind kind) {
  switch (kind) {
    case BucketKind::gap: return b.gap;
    case BucketKind::ttft: return b.ttft;
    case BucketKind::duration: return b.duration;
    case BucketKind::tail: return b.tail;
    case BucketKind::phase: return b.phase;
    case BucketKind::tokens_per_second: return b.tokens_per_second;
  }
  throw std::logic_error("unknown bucket kind");
}

const char* bucket_setting_name(BucketKind kind) {
  switch (kind) {
    case BucketKind::gap: return "gap";
    case BucketKind::ttft: return "ttft";
    case BucketKind::duration: return "duration";
    case BucketKind::tail: return "tail";
    case BucketKind::phase: return "phase";
    case BucketKind::tokens_per_second: return "tokens_per_second";
  }
  return "";
}

// Checked before anything is touched so a bad override leaves the old series
// intact (prometheus-cpp would throw half-way through a rebuild otherwise).
void validate_buckets(const config::Buckets& b) {
  for (BucketKind kind : kBucketKinds) {
    const auto& v = buckets_of(b, kind);
    if (v.empty())
      throw std::invalid_argument(std::string("buckets.") + bucket_setting_name(kind) +
                                  ": must not be empty");
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i]))
        throw std::invalid_argument(std::string("buckets.") + bucket_setting_name(kind) +
                                    ": bounds must be finite");
      if (i > 0 && !(v[i - 1] < v[i]))
        throw std::invalid_argument(std::string("buckets.") + bucket_setting_name(kind) +
                                    ": bounds must be strictly increasing");
    }
  }
}

// Every series of one (target, prompt). Pointers are owned by the families.
struct Series {
  Labels labels;  // target, model, prompt

  Histogram* ttft = nullptr;
  Histogram* gap = nullptr;
  Histogram* gap_p95 = nullptr;
  Histogram* max_gap = nullptr;
  Histogram* tail = nullptr;
  Histogram* duration = nullptr;
  Histogram* tokens_per_second = nullptr;
  std::array<Histogram*, probe::kAllPhases.size()> phase{};

  Counter* success = nullptr;
  Counter* failure = nullptr;
  std::array<Counter*, probe::kAllFailureReasons.size()> failures{};
  Counter* stalls = nullptr;
  Counter* stall_seconds = nullptr;
  Counter* stalled_probes = nullptr;
  Counter* chunks = nullptr;
  Counter* output_tokens = nullptr;
  Counter* input_tokens = nullptr;
  Counter* warmup = nullptr;
  // Created on first sight under the *shared* lock, hence atomic; Family::Add
  // is itself thread-safe and returns the existing series for the same labels.
  std::array<std::atomic<Counter*>, kFinishReasons.size()> finish{};

  Gauge* last_success = nullptr;
  Gauge* last_timestamp = nullptr;
  std::array<Gauge*, kShapeCount> diagnosis{};
};

struct TargetSeries {
  std::string model;
  Gauge* stall_threshold = nullptr;
  Gauge* info = nullptr;  // llm_stream_target_info
  Labels info_labels;
  std::map<std::string, std::unique_ptr<Series>, std::less<>> prompts;
};

Labels with(Labels labels, const char* key, std::string_view value) {
  labels.emplace(key, std::string(value));
  return labels;
}

// What a config implies: target -> (model, threshold, prompts). The first
// definition of a duplicated name wins; config validation rejects those anyway.
struct WantedTarget {
  std::string model;
  double stall_threshold = 0;
  std::vector<std::string> prompts;
  Labels info;  // target, api, model, host
};

// The upstream host of a target URL ("api.openai.com", "127.0.0.1:8080"):
// what a dashboard shows beside the target name.
std::string upstream_host(const std::string& url) {
  const auto u = net::parse_url(url);
  if (!u) return "";
  const bool default_port = u->port == (u->tls ? "443" : "80");
  return default_port ? u->host : u->authority();
}
using WantedSeries = std::map<std::string, WantedTarget, std::less<>>;

WantedSeries wanted_series(const config::Config& config) {
  WantedSeries wanted;
  for (const auto& t : config.targets) {
    if (wanted.count(t.name)) continue;
    Labels info = {{"target", t.name},
                   {"api", std::string(api::dialect_name(t.api))},
                   {"model", t.model},
                   {"host", upstream_host(t.url)}};
    wanted.emplace(t.name,
                   WantedTarget{t.model, std::chrono::duration<double>(t.stall_threshold).count(),
                                t.prompts, std::move(info)});
  }
  return wanted;
}

// Every family of DESIGN §3, in one table: its type, name and help. `F`
// names a row; FamilySet holds the registered families in the same order.
enum class F : std::size_t {
  // the clock of one stream, per (target, prompt)
  ttft,
  gap,
  gap_p95,
  max_gap,
  tail,
  duration,
  phase,
  tokens_per_second,
  // what happened to the probes, per (target, prompt)
  probes,
  failures,
  stalls,
  stall_seconds,
  stalled_probes,
  chunks,
  output_tokens,
  input_tokens,
  finish_reasons,
  warmup,
  // the last probe and the diagnosis per series; per target
  last_success,
  last_timestamp,
  diagnosis,
  stall_threshold,
  target_info,
  // the exporter itself: one series each, created at startup
  reload_ok,
  reload_timestamp,
  row_write_errors,
  build_info,
};

enum class Type { histogram, counter, gauge };

struct FamilySpec {
  F id;
  Type type;
  const char* name;
  const char* help;
};

constexpr FamilySpec kFamilies[] = {
    {F::ttft, Type::histogram, "llm_stream_time_to_first_token_seconds",
     "Time from probe start to the first content chunk."},
    {F::gap, Type::histogram, "llm_stream_inter_chunk_gap_seconds",
     "Every gap between consecutive content chunks of a stream."},
    {F::gap_p95, Type::histogram, "llm_stream_probe_gap_p95_seconds",
     "One observation per probe: that stream's inter-chunk gap p95."},
    {F::max_gap, Type::histogram, "llm_stream_probe_max_gap_seconds",
     "One observation per probe: that stream's largest inter-chunk gap."},
    {F::tail, Type::histogram, "llm_stream_tail_seconds",
     "Time from the last content chunk to the end of the stream."},
    {F::duration, Type::histogram, "llm_stream_duration_seconds",
     "Time from probe start to the end of the stream."},
    {F::phase, Type::histogram, "llm_stream_phase_seconds",
     "Phases of time to first token: resolve, connect, tls, request, headers, first_token."},
    {F::tokens_per_second, Type::histogram, "llm_stream_output_tokens_per_second",
     "Completion tokens divided by the time between the first and last content chunk, when "
     "usage is known."},
    {F::probes, Type::counter, "llm_stream_probes_total", "Probes completed, by result."},
    {F::failures, Type::counter, "llm_stream_probe_failures_total", "Failed probes, by reason."},
    {F::stalls, Type::counter, "llm_stream_stalls_total",
     "Inter-chunk gaps at or above the target's stall threshold."},
    {F::stall_seconds, Type::counter, "llm_stream_stall_seconds_total",
     "Sum of stalled gaps in seconds."},
    {F::stalled_probes, Type::counter, "llm_stream_stalled_probes_total",
     "Probes with at least one stall."},
    {F::chunks, Type::counter, "llm_stream_chunks_total", "Content chunks received."},
    {F::output_tokens, Type::counter, "llm_stream_output_tokens_total",
     "Completion tokens reported by the server's usage."},
    {F::input_tokens, Type::counter, "llm_stream_input_tokens_total",
     "Prompt tokens reported by the server's usage."},
    {F::finish_reasons, Type::counter, "llm_stream_finish_reasons_total",
     "Streams by the finish reason the server reported."},
    {F::warmup, Type::counter, "llm_stream_warmup_probes_total", "Probes discarded as warmup."},
    {F::last_success, Type::gauge, "llm_stream_last_probe_success",
     "Whether the last completed probe succeeded (1) or failed (0)."},
    {F::last_timestamp, Type::gauge, "llm_stream_last_probe_timestamp_seconds",
     "Unix time the last completed probe ended."},
    {F::diagnosis, Type::gauge, "llm_stream_diagnosis",
     "Diagnosis verdict per shape (queue, transport, long_answer, shared_capacity): 1 when the "
     "shape holds for the recent window."},
    {F::stall_threshold, Type::gauge, "llm_stream_stall_threshold_seconds",
     "Configured stall threshold of the target."},
    {F::target_info, Type::gauge, "llm_stream_target_info",
     "Which API dialect, model and upstream host a target speaks to; the value is always 1."},
    {F::reload_ok, Type::gauge, "llm_stream_exporter_config_last_reload_successful",
     "Whether the last configuration reload attempt succeeded."},
    {F::reload_timestamp, Type::gauge,
     "llm_stream_exporter_config_last_reload_success_timestamp_seconds",
     "Unix time of the last successful configuration reload."},
    {F::row_write_errors, Type::counter, "llm_stream_row_write_errors_total",
     "Failed rows-file operations (write, open, rotate); the rows they concerned are missing "
     "from the file."},
    {F::build_info, Type::gauge, "llm_stream_exporter_build_info",
     "Exporter version and revision; the value is always 1."},
};

constexpr bool rows_in_id_order() {
  for (std::size_t i = 0; i < std::size(kFamilies); ++i)
    if (static_cast<std::size_t>(kFamilies[i].id) != i) return false;
  return true;
}
static_assert(rows_in_id_order(), "kFamilies rows must follow the order of F");
static_assert(std::size(kFamilies) == static_cast<std::size_t>(F::build_info) + 1);

// The registered families of kFamilies; typed access by row.
class FamilySet {
 public:
  explicit FamilySet(prometheus::Registry& r) {
    for (const FamilySpec& spec : kFamilies) {
      switch (spec.type) {
        case Type::histogram:
          all_.emplace_back(
              &prometheus::BuildHistogram().Name(spec.name).Help(spec.help).Register(r));
          break;
        case Type::counter:
          all_.emplace_back(
              &prometheus::BuildCounter().Name(spec.name).Help(spec.help).Register(r));
          break;
        case Type::gauge:
          all_.emplace_back(&prometheus::BuildGauge().Name(spec.name).Help(spec.help).Register(r));
          break;
      }
    }
  }
  Family<Histogram>& histogram(F f) const { return get<Histogram>(f); }
  Family<Counter>& counter(F f) const { return get<Counter>(f); }
  Family<Gauge>& gauge(F f) const { return get<Gauge>(f); }

 private:
  template <class M>
  Family<M>& get(F f) const {
    return *std::get<Family<M>*>(all_[static_cast<std::size_t>(f)]);
  }
  std::vector<std::variant<Family<Histogram>*, Family<Counter>*, Family<Gauge>*>> all_;
};

// The exporter itself: one unlabelled series each, created at startup.
struct ExporterSeries {
  Gauge& reload_ok;
  Gauge& reload_timestamp;
  Counter& row_write_errors;

  ExporterSeries(const FamilySet& families, const BuildInfo& build)
      : reload_ok(families.gauge(F::reload_ok).Add({})),
        reload_timestamp(families.gauge(F::reload_timestamp).Add({})),
        row_write_errors(families.counter(F::row_write_errors).Add({})) {
    families.gauge(F::build_info)
        .Add({{"version", build.version}, {"revision", build.revision}})
        .Set(1);
  }
};

}  // namespace

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  FamilySet families{*registry};
  ExporterSeries exporter;

  mutable std::shared_mutex mutex;
  // glibc's rwlock prefers readers: with probes recording and scrapes
  // rendering back to back, a reload could wait indefinitely. Writers hold
  // the gate while they wait, so new readers queue behind them.
  mutable std::mutex gate;
  std::map<std::string, TargetSeries, std::less<>> targets;
  config::Buckets buckets;  // what the existing histograms were built with

  explicit Impl(const BuildInfo& build) : exporter(families, build) {}

  // --- histograms, per bucket kind -------------------------------------------

  void add_histograms(Series& s, BucketKind kind, const config::Buckets& b) {
    const auto& bounds = buckets_of(b, kind);
    switch (kind) {
      case BucketKind::gap:
        s.gap = &families.histogram(F::gap).Add(s.labels, bounds);
        s.gap_p95 = &families.histogram(F::gap_p95).Add(s.labels, bounds);
        s.max_gap = &families.histogram(F::max_gap).Add(s.labels, bounds);
        break;
      case BucketKind::ttft: s.ttft = &families.histogram(F::ttft).Add(s.labels, bounds); break;
      case BucketKind::duration:
        s.duration = &families.histogram(F::duration).Add(s.labels, bounds);
        break;
      case BucketKind::tail: s.tail = &families.histogram(F::tail).Add(s.labels, bounds); break;
      case BucketKind::phase:
        for (std::size_t i = 0; i < probe::kAllPhases.size(); ++i)
          s.phase[i] = &families.histogram(F::phase).Add(
              with(s.labels, "phase", probe::to_string(probe::kAllPhases[i])), bounds);
        break;
      case BucketKind::tokens_per_second:
        s.tokens_per_second = &families.histogram(F::tokens_per_second).Add(s.labels, bounds);
        break;
    }
  }

  void remove_histograms(Series& s, BucketKind kind) {
    auto drop = [](Family<Histogram>& f, Histogram*& h) {
      if (h) f.Remove(h);
      h = nullptr;
    };
    switch (kind) {
      case BucketKind::gap:
        drop(families.histogram(F::gap), s.gap);
        drop(families.histogram(F::gap_p95), s.gap_p95);
        drop(families.histogram(F::max_gap), s.max_gap);
        break;
      case BucketKind::ttft: drop(families.histogram(F::ttft), s.ttft); break;
      case BucketKind::duration: drop(families.histogram(F::duration), s.duration); break;
      case BucketKind::tail: drop(families.histogram(F::tail), s.tail); break;
      case BucketKind::phase:
        for (auto& h : s.phase) drop(families.histogram(F::phase), h);
        break;
      case BucketKind::tokens_per_second:
        drop(families.histogram(F::tokens_per_second), s.tokens_per_second);
        break;
    }
  }

  // --- whole series -----------------------------------------------------------

  std::unique_ptr<Series> create_series(const std::string& target, const std::string& model,
                                        const std::string& prompt, const config::Buckets& b) {
    auto s = std::make_unique<Series>();
    s->labels = {{"target", target}, {"model", model}, {"prompt", prompt}};
    for (BucketKind kind : kBucketKinds) add_histograms(*s, kind, b);
    s->success = &families.counter(F::probes).Add(with(s->labels, "result", "success"));
    s->failure = &families.counter(F::probes).Add(with(s->labels, "result", "failure"));
    for (std::size_t i = 0; i < probe::kAllFailureReasons.size(); ++i)
      s->failures[i] =
          &families.counter(F::failures)
               .Add(with(s->labels, "reason", probe::to_string(probe::kAllFailureReasons[i])));
    s->stalls = &families.counter(F::stalls).Add(s->labels);
    s->stall_seconds = &families.counter(F::stall_seconds).Add(s->labels);
    s->stalled_probes = &families.counter(F::stalled_probes).Add(s->labels);
    s->chunks = &families.counter(F::chunks).Add(s->labels);
    s->output_tokens = &families.counter(F::output_tokens).Add(s->labels);
    s->input_tokens = &families.counter(F::input_tokens).Add(s->labels);
    s->warmup = &families.counter(F::warmup).Add(s->labels);
    s->last_success = &families.gauge(F::last_success).Add(s->labels);
    s->last_timestamp = &families.gauge(F::last_timestamp).Add(s->labels);
    for (std::size_t i = 0; i < kShapeCount; ++i)
      s->diagnosis[i] =
          &families.gauge(F::diagnosis)
               .Add(with(s->labels, "shape", report::to_string(report::kAllShapes[i])));
    return s;
  }

  void remove_series(Series& s) {
    for (BucketKind kind : kBucketKinds) remove_histograms(s, kind);
    families.counter(F::probes).Remove(s.success);
    families.counter(F::probes).Remove(s.failure);
    for (Counter* c : s.failures) families.counter(F::failures).Remove(c);
    families.counter(F::stalls).Remove(s.stalls);
    families.counter(F::stall_seconds).Remove(s.stall_seconds);
    families.counter(F::stalled_probes).Remove(s.stalled_probes);
    families.counter(F::chunks).Remove(s.chunks);
    families.counter(F::output_tokens).Remove(s.output_tokens);
    families.counter(F::input_tokens).Remove(s.input_tokens);
    families.counter(F::warmup).Remove(s.warmup);
    for (auto& f : s.finish)
      if (Counter* c = f.load()) families.counter(F::finish_reasons).Remove(c);
    families.gauge(F::last_success).Remove(s.last_success);
    families.gauge(F::last_timestamp).Remove(s.last_timestamp);
    for (Gauge* g : s.diagnosis) families.gauge(F::diagnosis).Remove(g);
  }

  void remove_target(TargetSeries& t) {
    for (auto& [name, s] : t.prompts) remove_series(*s);
    t.prompts.clear();
    if (t.stall_threshold) families.gauge(F::stall_threshold).Remove(t.stall_threshold);
    t.stall_threshold = nullptr;
    if (t.info) families.gauge(F::target_info).Remove(t.info);
    t.info = nullptr;
  }

  // Caller holds the shared lock; nullptr when the combination is not
  // configured (a probe that finished after a reload removed it, say).
  Series* find(std::string_view target, std::string_view prompt) const {
    auto t = targets.find(target);
    if (t == targets.end()) return nullptr;
    auto p = t->second.prompts.find(prompt);
    return p == t->second.prompts.end() ? nullptr : p->second.get();
  }

  // --- apply_config, step by step (caller holds the write lock) -------------

  // Targets that are gone, or whose model changed (the model is a label, so
  // its series are different series).
  void remove_gone_targets(const WantedSeries& wanted) {
    for (auto it = targets.begin(); it != targets.end();) {
      auto w = wanted.find(it->first);
      if (w == wanted.end() || w->second.model != it->second.model) {
        remove_target(it->second);
        it = targets.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Prompts that are gone from targets that stay.
  void remove_gone_prompts(const WantedSeries& wanted) {
    for (auto& [name, t] : targets) {
      const auto& keep = wanted.at(name).prompts;
      for (auto it = t.prompts.begin(); it != t.prompts.end();) {
        if (std::find(keep.begin(), keep.end(), it->first) == keep.end()) {
          remove_series(*it->second);
          it = t.prompts.erase(it);
        } else {
          ++it;
        }
      }
    }
  }

  // Family::Add would hand back an existing histogram with its old bounds, so
  // the histograms of a changed bucket kind are removed and added again.
  // Other series (counters, histograms of unchanged kinds) keep their values.
  void rebuild_changed_histograms(const config::Buckets& next) {
    for (BucketKind kind : kBucketKinds) {
      if (buckets_of(buckets, kind) == buckets_of(next, kind)) continue;
      for (auto& [tname, t] : targets)
        for (auto& [pname, s] : t.prompts) {
          remove_histograms(*s, kind);
          add_histograms(*s, kind, next);
        }
    }
    buckets = next;
  }

  // New targets and prompts, zero-initialised; thresholds always refreshed.
  void add_new_series(const WantedSeries& wanted, const config::Buckets& b) {
    for (const auto& [name, w] : wanted) {
      auto& t = targets[name];
      t.model = w.model;
      for (const auto& prompt : w.prompts) {
        if (t.prompts.count(prompt)) continue;
        t.prompts.emplace(prompt, create_series(name, w.model, prompt, b));
      }
      if (!t.stall_threshold)
        t.stall_threshold = &families.gauge(F::stall_threshold).Add({{"target", name}});
      t.stall_threshold->Set(w.stall_threshold);
      set_info(t, w.info);
    }
  }

  // The info series changes its labels when the target's API or URL does.
  void set_info(TargetSeries& t, const Labels& labels) {
    if (t.info && t.info_labels == labels) return;
    if (t.info) families.gauge(F::target_info).Remove(t.info);
    t.info = &families.gauge(F::target_info).Add(labels);
    t.info->Set(1);
    t.info_labels = labels;
  }

  std::shared_lock<std::shared_mutex> read_lock() const {
    std::lock_guard g(gate);
    return std::shared_lock(mutex);
  }
  std::unique_lock<std::shared_mutex> write_lock() const {
    std::lock_guard g(gate);
    return std::unique_lock(mutex);
  }

  Counter& finish_counter(Series& s, std::string_view reason) {
    std::size_t i = finish_reason_index(reason);
    Counter* c = s.finish[i].load(std::memory_order_acquire);
    if (!c) {
      c = &families.counter(F::finish_reasons).Add(with(s.labels, "reason", kFinishReasons[i]));
      s.finish[i].store(c, std::memory_order_release);
    }
    return *c;
  }
};

Metrics::Metrics(const BuildInfo& build) : impl_(std::make_unique<Impl>(build)) {}
Metrics::~Metrics() = default;

void Metrics::apply_config(const config::Config& config) {
  validate_buckets(config.buckets);
  const auto wanted = wanted_series(config);
  auto lock = impl_->write_lock();
  impl_->remove_gone_targets(wanted);
  impl_->remove_gone_prompts(wanted);
  impl_->rebuild_changed_histograms(config.buckets);
  impl_->add_new_series(wanted, config.buckets);
}

void Metrics::record(const probe::ProbeResult& r) {
  auto lock = impl_->read_lock();
  Series* s = impl_->find(r.target, r.prompt);
  if (!s) return;

  if (r.warmup) {
    s->warmup->Increment();
    return;
  }

  (r.ok ? s->success : s->failure)->Increment();
  if (!r.ok) {
    for (std::size_t i = 0; i < probe::kAllFailureReasons.size(); ++i)
      if (probe::kAllFailureReasons[i] == r.reason) s->failures[i]->Increment();
  }

  // What happened is counted whatever the outcome: a stall before a timeout
  // was still a stall the user felt, and a first token that arrived arrived.
  s->duration->Observe(r.duration);
  for (std::size_t i = 0; i < r.phases.size() && i < s->phase.size(); ++i)
    if (r.phases[i]) s->phase[i]->Observe(*r.phases[i]);
  if (r.ttft) s->ttft->Observe(*r.ttft);
  for (double g : r.gaps) s->gap->Observe(g);
  s->chunks->Increment(static_cast<double>(r.chunks));
  s->stalls->Increment(static_cast<double>(r.stalls));
  s->stall_seconds->Increment(r.stall_seconds);
  if (r.stalls > 0) s->stalled_probes->Increment();
  if (r.prompt_tokens >= 0) s->input_tokens->Increment(static_cast<double>(r.prompt_tokens));
  if (r.completion_tokens >= 0)
    s->output_tokens->Increment(static_cast<double>(r.completion_tokens));
  if (!r.finish_reason.empty()) impl_->finish_counter(*s, r.finish_reason).Increment();

  // Per-stream summaries describe a whole stream; a cut-off stream's tail or
  // p95 would describe the failure, not the stream, so only successes count.
  if (r.ok) {
    if (r.tail) s->tail->Observe(*r.tail);
    if (r.gap_p95) s->gap_p95->Observe(*r.gap_p95);
    if (r.gap_max) s->max_gap->Observe(*r.gap_max);
    if (r.output_tokens_per_second) s->tokens_per_second->Observe(*r.output_tokens_per_second);
  }

  s->last_success->Set(r.ok ? 1 : 0);
  s->last_timestamp->Set(r.ts + r.duration);
}

void Metrics::set_diagnosis(const SeriesKey& key, const std::vector<report::Verdict>& verdicts) {
  auto lock = impl_->read_lock();
  Series* s = impl_->find(key.target, key.prompt);
  if (!s) return;
  for (const auto& v : verdicts)
    s->diagnosis[shape_index(v.shape)]->Set(v.holds && v.enough_probes ? 1 : 0);
}

void Metrics::set_reload_result(bool ok, double unix_seconds) {
  impl_->exporter.reload_ok.Set(ok ? 1 : 0);
  if (ok) impl_->exporter.reload_timestamp.Set(unix_seconds);
}

void Metrics::count_row_write_error() { impl_->exporter.row_write_errors.Increment(); }

std::string Metrics::render() const {
  std::vector<prometheus::MetricFamily> families;
  {
    // Shared lock: a scrape sees either the old or the new config's series,
    // never half a reload.
    auto lock = impl_->read_lock();
    families = impl_->registry->Collect();
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

std::string Metrics::render(Exposition format) const {
  static_cast<void>(format);
  return render();
}

}  // namespace lse::metrics
