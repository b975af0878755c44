// The metric families of DESIGN §3 as data: name, type, help, whose series
// they hold and which labels those carry. metrics.cpp registers them; the
// config module reads the same table to count the series a config implies
// (config::series_count, the metrics.max_series guard) and to refuse target
// `labels:` that would collide with a label of ours. Header-only and free of
// prometheus-cpp, so config reads it without linking the metrics module.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "probe/failure_reason.hpp"
#include "probe/result.hpp"

namespace lse::metrics {

// Every family, one row each in kFamilies (same order). The histograms come
// first: their rows index the per-histogram settings.
enum class F : std::size_t {
  // the clock of one stream, per series set
  ttft,
  gap,
  gap_p95,
  max_gap,
  tail,
  duration,
  phase,
  tokens_per_second,
  tokens_per_chunk,
  // what happened to the probes, per series set
  probes,
  failures,
  stalls,
  stall_seconds,
  stalled_probes,
  chunks,
  coalesced,
  output_tokens,
  input_tokens,
  finish_reasons,
  warmup,
  // the last probe and the diagnosis, per series set
  last_success,
  last_timestamp,
  diagnosis,
  // per target
  stall_threshold,
  alert_ttft,
  alert_worst_gap,
  alert_stall_share,
  target_info,
  backoffs,
  unexpected_content_type,
  // the exporter itself: one series each, created at startup
  reload_ok,
  reload_timestamp,
  reloads,
  row_write_errors,
  build_info,
  shard_index,
  shard_count,
  otlp_dropped,
};

enum class Type { histogram, counter, gauge };

// Whose series a family holds, and so the labels every series of it has.
enum class Scope {
  // One series set per (target, prompt): labels target, model, prompt and the
  // target's own `labels:`. With metrics.per_prompt: false, one per target,
  // without the prompt label.
  series_set,
  // One per target: label target and the target's own `labels:`.
  target,
  // One for the process, no labels of a target.
  exporter,
};

// Finish reasons are label values reported by upstream servers; only these
// become series so a misbehaving server cannot blow up cardinality.
inline constexpr std::array<std::string_view, 6> kFinishReasons = {
    "stop", "length", "content_filter", "tool_calls", "function_call", "other"};

// DESIGN §7 shapes (report::kAllShapes; metrics.cpp checks the count).
inline constexpr std::size_t kShapeCount = 5;

// The process_* series (process.cpp checks the count). Each is left out when
// its /proc file cannot be read; series_count counts all of them.
inline constexpr std::size_t kProcessSeries = 6;

struct FamilySpec {
  F id;
  Type type;
  const char* name;
  const char* help;
  Scope scope;
  // Labels of the family's own, beside those of its scope.
  std::array<std::string_view, 4> labels{};
  // Label sets per series set (or target) made when a config is applied,
  // zero-initialised ...
  std::size_t label_sets = 1;
  // ... and how many more may appear on first sight (finish reasons).
  std::size_t later_label_sets = 0;
  // Histograms: the key of their bucket setting under metrics.buckets.
  std::string_view buckets{};
};

inline constexpr std::array<std::string_view, 3> kSeriesSetLabels = {"target", "model", "prompt"};

inline constexpr FamilySpec kFamilies[] = {
    {F::ttft,
     Type::histogram,
     "llm_stream_time_to_first_token_seconds",
     "Time from probe start to the first content chunk.",
     Scope::series_set,
     {},
     1,
     0,
     "ttft"},
    {F::gap,
     Type::histogram,
     "llm_stream_inter_chunk_gap_seconds",
     "Every gap between consecutive content chunks of a stream.",
     Scope::series_set,
     {},
     1,
     0,
     "gap"},
    {F::gap_p95,
     Type::histogram,
     "llm_stream_probe_gap_p95_seconds",
     "One observation per probe: that stream's inter-chunk gap p95.",
     Scope::series_set,
     {},
     1,
     0,
     "probe_gap_p95"},
    {F::max_gap,
     Type::histogram,
     "llm_stream_probe_max_gap_seconds",
     "One observation per probe: that stream's largest inter-chunk gap.",
     Scope::series_set,
     {},
     1,
     0,
     "probe_max_gap"},
    {F::tail,
     Type::histogram,
     "llm_stream_tail_seconds",
     "Time from the last content chunk to the end of the stream.",
     Scope::series_set,
     {},
     1,
     0,
     "tail"},
    {F::duration,
     Type::histogram,
     "llm_stream_duration_seconds",
     "Time from probe start to the end of the stream.",
     Scope::series_set,
     {},
     1,
     0,
     "duration"},
    {F::phase,
     Type::histogram,
     "llm_stream_phase_seconds",
     "Phases of time to first token: resolve, connect, tls, request, headers, first_token.",
     Scope::series_set,
     {"phase"},
     probe::kAllPhases.size(),
     0,
     "phase"},
    {F::tokens_per_second,
     Type::histogram,
     "llm_stream_output_tokens_per_second",
     "Completion tokens divided by the time between the first and last content chunk, when "
     "usage is known.",
     Scope::series_set,
     {},
     1,
     0,
     "tokens_per_second"},
    {F::tokens_per_chunk,
     Type::histogram,
     "llm_stream_tokens_per_chunk",
     "Completion tokens per content chunk of a stream (usage over content chunks), when usage "
     "is known: far above 1, the server batches tokens and a gap spans several tokens.",
     Scope::series_set,
     {},
     1,
     0,
     "tokens_per_chunk"},
    {F::probes,
     Type::counter,
     "llm_stream_probes_total",
     "Probes completed, by result.",
     Scope::series_set,
     {"result"},
     2},
    {F::failures,
     Type::counter,
     "llm_stream_probe_failures_total",
     "Failed probes, by reason.",
     Scope::series_set,
     {"reason"},
     probe::kAllFailureReasons.size()},
    {F::stalls, Type::counter, "llm_stream_stalls_total",
     "Inter-chunk gaps at or above the target's stall threshold.", Scope::series_set},
    {F::stall_seconds, Type::counter, "llm_stream_stall_seconds_total",
     "Sum of stalled gaps in seconds.", Scope::series_set},
    {F::stalled_probes, Type::counter, "llm_stream_stalled_probes_total",
     "Probes with at least one stall.", Scope::series_set},
    {F::chunks, Type::counter, "llm_stream_chunks_total", "Content chunks received.",
     Scope::series_set},
    {F::coalesced, Type::counter, "llm_stream_coalesced_chunks_total",
     "Content chunks that arrived in the same socket read as the chunk before them: data held "
     "somewhere and released together.",
     Scope::series_set},
    {F::output_tokens, Type::counter, "llm_stream_output_tokens_total",
     "Completion tokens reported by the server's usage.", Scope::series_set},
    {F::input_tokens, Type::counter, "llm_stream_input_tokens_total",
     "Prompt tokens reported by the server's usage.", Scope::series_set},
    {F::finish_reasons,
     Type::counter,
     "llm_stream_finish_reasons_total",
     "Streams by the finish reason the server reported.",
     Scope::series_set,
     {"reason"},
     0,
     kFinishReasons.size()},
    {F::warmup, Type::counter, "llm_stream_warmup_probes_total", "Probes discarded as warmup.",
     Scope::series_set},
    {F::last_success, Type::gauge, "llm_stream_last_probe_success",
     "Whether the last completed probe succeeded (1) or failed (0).", Scope::series_set},
    {F::last_timestamp, Type::gauge, "llm_stream_last_probe_timestamp_seconds",
     "Unix time the last completed probe ended.", Scope::series_set},
    {F::diagnosis,
     Type::gauge,
     "llm_stream_diagnosis",
     "Diagnosis verdict per shape (queue, transport, long_answer, shared_capacity, generation): 1 "
     "when the "
     "shape holds for the recent window.",
     Scope::series_set,
     {"shape"},
     kShapeCount},
    {F::stall_threshold, Type::gauge, "llm_stream_stall_threshold_seconds",
     "Configured stall threshold of the target.", Scope::target},
    {F::alert_ttft, Type::gauge, "llm_stream_alert_ttft_seconds",
     "TTFT p95 above which LLMStreamTTFTP95High fires for the target (alert.ttft).", Scope::target},
    {F::alert_worst_gap, Type::gauge, "llm_stream_alert_worst_gap_seconds",
     "Largest gap of the typical (median) probe above which LLMStreamStalling fires for the "
     "target (alert.worst_gap).",
     Scope::target},
    {F::alert_stall_share, Type::gauge, "llm_stream_alert_stall_share",
     "Share of probes with at least one stall above which LLMStreamStalling fires for the target "
     "(alert.stall_share).",
     Scope::target},
    {F::target_info,
     Type::gauge,
     "llm_stream_target_info",
     "Which API dialect, model and upstream host a target speaks to, and the HTTP version its "
     "latest answered probe spoke (\"\" before any); the value is always 1.",
     Scope::target,
     {"api", "model", "host", "http_version"}},
    {F::backoffs, Type::counter, "llm_stream_backoffs_total",
     "Rounds of the target pushed back because the server answered 429 with Retry-After.",
     Scope::target},
    {F::unexpected_content_type, Type::counter, "llm_stream_unexpected_content_type_total",
     "Probes whose 2xx stream came under another Content-Type than the dialect's (or none); "
     "measured all the same.",
     Scope::target},
    {F::reload_ok, Type::gauge, "llm_stream_exporter_config_last_reload_successful",
     "Whether the last configuration reload attempt succeeded.", Scope::exporter},
    {F::reload_timestamp, Type::gauge,
     "llm_stream_exporter_config_last_reload_success_timestamp_seconds",
     "Unix time of the last successful configuration reload.", Scope::exporter},
    {F::reloads,
     Type::counter,
     "llm_stream_exporter_config_reloads_total",
     "Configuration reload attempts (SIGHUP, POST /-/reload), by result.",
     Scope::exporter,
     {"result"},
     2},
    {F::row_write_errors, Type::counter, "llm_stream_row_write_errors_total",
     "Failed rows-file operations (write, open, rotate); the rows they concerned are missing "
     "from the file.",
     Scope::exporter},
    {F::build_info,
     Type::gauge,
     "llm_stream_exporter_build_info",
     "Exporter version and revision; the value is always 1.",
     Scope::exporter,
     {"version", "revision"}},
    {F::shard_index, Type::gauge, "llm_stream_shard_index",
     "Which shard of the config's targets this exporter probes and exposes (--shard.index, from "
     "0): the targets whose FNV-1a 64 name hash mod llm_stream_shards is this; 0 when not "
     "sharded.",
     Scope::exporter},
    {F::shard_count, Type::gauge, "llm_stream_shards",
     "How many shards the config's targets are split into (--shard.count); 1 when not sharded. "
     "Replicas of one job that disagree drop or double targets (LLMStreamShardingMismatch).",
     Scope::exporter},
    {F::otlp_dropped, Type::counter, "llm_stream_otlp_dropped_total",
     "OTLP data points dropped: their batch found the export queue full, was refused, or still "
     "failed after its retries (docs/otlp.md).",
     Scope::exporter},
};

constexpr const FamilySpec& spec_of(F f) { return kFamilies[static_cast<std::size_t>(f)]; }

// The histograms are the first rows; their settings are indexed by row.
inline constexpr std::size_t kHistogramCount = static_cast<std::size_t>(F::tokens_per_chunk) + 1;

namespace detail {
constexpr bool rows_in_id_order() {
  for (std::size_t i = 0; i < std::size(kFamilies); ++i)
    if (static_cast<std::size_t>(kFamilies[i].id) != i) return false;
  return true;
}
constexpr bool histograms_first() {
  for (std::size_t i = 0; i < std::size(kFamilies); ++i)
    if ((kFamilies[i].type == Type::histogram) != (i < kHistogramCount)) return false;
  return true;
}
}  // namespace detail
static_assert(detail::rows_in_id_order(), "kFamilies rows must follow the order of F");
static_assert(std::size(kFamilies) == static_cast<std::size_t>(F::otlp_dropped) + 1);
static_assert(detail::histograms_first(), "the histogram rows come first");

// Label names a target's `labels:` may not use, sorted: every label a family
// sets (its scope's and its own), `le` and `quantile` (which the exposition
// format adds), and `job` and `instance` (which Prometheus adds at scrape
// time; a series' own would be renamed exported_job).
inline std::vector<std::string> reserved_label_names() {
  std::vector<std::string> names = {"le", "quantile", "job", "instance"};
  names.insert(names.end(), kSeriesSetLabels.begin(), kSeriesSetLabels.end());
  for (const FamilySpec& spec : kFamilies)
    for (std::string_view label : spec.labels)
      if (!label.empty()) names.emplace_back(label);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace lse::metrics
