// The `metrics:` section (how /metrics spends series: buckets per histogram,
// phases, per_prompt, max_series, native histograms and classic buckets) and the older top-level
// `buckets:`, which keeps working on its own. The max_series guard runs last, on the whole parsed
// config, with the number config::series_count computes.
#include <fmt/format.h>

#include <iterator>
#include <optional>

#include "config/reader.hpp"
#include "config/sections.hpp"

namespace lse::config {

namespace {

// The members behind Buckets::kKeys, in the same order.
constexpr std::vector<double> Buckets::*kSettings[] = {
    &Buckets::gap,   &Buckets::probe_gap_p95,     &Buckets::probe_max_gap,
    &Buckets::ttft,  &Buckets::duration,          &Buckets::tail,
    &Buckets::phase, &Buckets::tokens_per_second, &Buckets::tokens_per_chunk};
static_assert(std::size(kSettings) == Buckets::kKeys.size());

std::optional<std::size_t> setting_index(std::string_view key) {
  for (std::size_t i = 0; i < Buckets::kKeys.size(); ++i)
    if (Buckets::kKeys[i] == key) return i;
  return std::nullopt;
}

}  // namespace

const std::vector<double>* Buckets::named(std::string_view key) const {
  const auto i = setting_index(key);
  return i ? &(this->*kSettings[*i]) : nullptr;
}

std::vector<double>* Buckets::named(std::string_view key) {
  const auto i = setting_index(key);
  return i ? &(this->*kSettings[*i]) : nullptr;
}

namespace detail {
namespace {

std::vector<double> bucket_bounds(const Reader& r, const Item& item) {
  std::vector<double> bounds;
  for (const Item& element : r.list(item)) {
    double b = r.number(element);
    if (b <= 0) r.fail(element, fmt::format("bucket bounds must be > 0, got {}", b));
    if (!bounds.empty() && b <= bounds.back()) {
      r.fail(element, fmt::format("bucket bounds must be strictly increasing, got {} after {}", b,
                                  bounds.back()));
    }
    bounds.push_back(b);
  }
  if (bounds.empty()) r.fail(item, "must list at least one bucket bound");
  return bounds;
}

// One bucket section (`buckets:` or `metrics.buckets:`, named `where`). The
// per-probe gap histograms follow the gap buckets unless set themselves. Notes
// where gap and phase are: stall thresholds are checked against gap, and
// phase buckets are unused unless phases: histogram.
Buckets parse_buckets(const Reader& r, const Item& item, const std::string& where, Context& ctx) {
  Buckets b;
  const std::vector<std::string_view> keys(Buckets::kKeys.begin(), Buckets::kKeys.end());
  Fields f(r, item, where, keys, where + ".");
  for (const auto& e : f.entries()) {
    std::vector<double> bounds;
    if (!r.attempt([&] { bounds = bucket_bounds(r, e.value); })) continue;
    *b.named(e.key) = bounds;
    if (e.key == "gap") ctx.gap_item = e.value;
    if (e.key == "phase") ctx.phase_buckets_item = e.value;
  }
  if (!f.has("probe_gap_p95")) b.probe_gap_p95 = b.gap;
  if (!f.has("probe_max_gap")) b.probe_max_gap = b.gap;
  return b;
}

PhaseSeries phase_series(const Reader& r, const Item& item) {
  const std::string word = r.string(item);
  if (word == "histogram") return PhaseSeries::histogram;
  if (word == "sum_count") return PhaseSeries::sum_count;
  if (word == "off") return PhaseSeries::off;
  r.fail(item, fmt::format("unknown value '{}' (allowed: histogram, sum_count, off)", word));
}

// `native: false` (off), `native: true` (the defaults) or its settings.
std::optional<histogram::ExponentialSettings> native_settings(const Reader& r, const Item& item) {
  if (item.node.IsScalar()) {
    if (!r.boolean(item)) return std::nullopt;
    return histogram::ExponentialSettings{};
  }
  histogram::ExponentialSettings s;
  Fields f(r, item, "metrics.native", {"schema", "zero_threshold", "max_buckets"},
           "metrics.native.");
  for (const auto& e : f.entries()) {
    r.attempt([&] {
      if (e.key == "schema") {
        const std::int64_t n = r.integer(e.value);
        if (n < histogram::kMinSchema || n > histogram::kMaxSchema)
          r.fail(e.value, fmt::format("must be between {} and {} (the schemas Prometheus reads), "
                                      "got {}",
                                      histogram::kMinSchema, histogram::kMaxSchema, n));
        s.schema = static_cast<int>(n);
      } else if (e.key == "zero_threshold") {
        const double t = r.number(e.value);
        if (t < 0) r.fail(e.value, fmt::format("must be >= 0, got {}", t));
        s.zero_threshold = t;
      } else if (e.key == "max_buckets") {
        const std::int64_t n = r.integer(e.value);
        if (n < 1) r.fail(e.value, fmt::format("must be >= 1, got {}", n));
        s.max_buckets = static_cast<std::size_t>(n);
      }
    });
  }
  return s;
}

void apply_metrics_key(const Reader& r, Config& config, const Fields::Entry& e, Context& ctx) {
  const Item& v = e.value;
  if (e.key == "buckets") {
    config.buckets = parse_buckets(r, v, "metrics.buckets", ctx);
  } else if (e.key == "phases") {
    config.metrics.phases = phase_series(r, v);
  } else if (e.key == "per_prompt") {
    config.metrics.per_prompt = r.boolean(v);
  } else if (e.key == "max_series") {
    const std::int64_t n = r.integer(v);
    if (n < 1) r.fail(v, fmt::format("must be >= 1, got {}", n));
    config.metrics.max_series = static_cast<std::uint64_t>(n);
    ctx.max_series_item = v;
  } else if (e.key == "max_scrape_bytes") {
    const std::uint64_t n = r.byte_size(v);
    if (n < 4096) r.fail(v, fmt::format("must be at least 4KiB, got {} bytes", n));
    config.metrics.max_scrape_bytes = n;
  } else if (e.key == "native") {
    config.metrics.native = native_settings(r, v);
  } else if (e.key == "classic") {
    config.metrics.classic = r.boolean(v);
  }
}

void parse_metrics(const Reader& r, const Item& item, Config& config, Context& ctx) {
  Fields f(
      r, item, "metrics",
      {"buckets", "phases", "per_prompt", "max_series", "max_scrape_bytes", "native", "classic"},
      "metrics.");
  for (const auto& e : f.entries()) r.attempt([&] { apply_metrics_key(r, config, e, ctx); });
  // Histograms with neither buckets nor native buckets would say only how
  // many observations there were and their sum.
  if (const auto classic = f.get("classic");
      classic && !config.metrics.classic && !config.metrics.native) {
    r.record(classic->mark,
             "metrics.classic: false needs native histograms, but metrics.native is false; "
             "keep one of them");
  }
}

const Fields::Entry* entry_of(const Fields& f, std::string_view key) {
  for (const auto& e : f.entries())
    if (e.key == key) return &e;
  return nullptr;
}

// The line of `buckets:` inside `metrics:` (1-based), when it is there.
std::optional<int> buckets_line(const Item& metrics) {
  if (!metrics.node.IsMap()) return std::nullopt;
  for (const auto& kv : metrics.node)
    if (kv.first.Scalar() == "buckets") return kv.first.Mark().line + 1;
  return std::nullopt;
}

// Buckets that phases: sum_count or off leave unused are likely a mistake.
void warn_unused_phase_buckets(const Reader& r, const Config& config, const Context& ctx) {
  if (!ctx.phase_buckets_item || config.metrics.phases == PhaseSeries::histogram) return;
  r.warn(*ctx.phase_buckets_item,
         fmt::format("unused: metrics.phases is {}",
                     config.metrics.phases == PhaseSeries::off ? "off" : "sum_count"));
}

}  // namespace

void parse_metrics_sections(const Reader& r, const Fields& top, Config& config, Context& ctx) {
  const Fields::Entry* old_buckets = entry_of(top, "buckets");
  if (old_buckets)
    r.attempt([&] { config.buckets = parse_buckets(r, old_buckets->value, "buckets", ctx); });
  const auto metrics = top.get("metrics");
  if (metrics) r.attempt([&] { parse_metrics(r, *metrics, config, ctx); });
  // Two sources of one setting: which wins would be a guess.
  if (const auto line = metrics ? buckets_line(*metrics) : std::nullopt; old_buckets && line) {
    r.record(old_buckets->key_mark,
             fmt::format("buckets: set both here and as metrics.buckets (line {}); keep one "
                         "(metrics.buckets is where they belong now)",
                         *line));
  }
  ctx.gap_bounds = config.buckets.gap;
  warn_unused_phase_buckets(r, config, ctx);
}

void check_max_series(const Reader& r, const Fields& top, const Config& config,
                      const Context& ctx) {
  const std::uint64_t implied = series_count(config).at_most;
  const std::uint64_t limit = config.metrics.max_series;
  if (implied <= limit) return;
  // A shard (LoadOptions::keep_target) is held to the limit by its own share.
  const std::string message = fmt::format(
      "{} {} series, above metrics.max_series {}{}; set metrics.per_prompt: "
      "false or metrics.phases: sum_count, use fewer buckets, prompts or targets, or raise "
      "metrics.max_series",
      r.options().keep_target ? "this shard's targets imply" : "the config implies",
      with_thousands(implied), with_thousands(limit), ctx.max_series_item ? "" : " (the default)");
  if (ctx.max_series_item) r.fail(*ctx.max_series_item, message);
  const Fields::Entry* targets = entry_of(top, "targets");
  r.fail(targets ? targets->key_mark : top.self().mark, "targets: " + message);
}

}  // namespace detail
}  // namespace lse::config
