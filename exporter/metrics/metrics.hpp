// prometheus-cpp families of DESIGN §3. Owns the registry; thread-safe:
// record() is called from probe threads, render() from the server thread,
// apply_config() from the reload path.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "metrics/exposition.hpp"
#include "metrics/process.hpp"
#include "probe/result.hpp"
#include "report/diagnosis.hpp"

namespace lse::metrics {

// Which configured series a diagnosis belongs to. The model label is the one
// the config gave the target, so it is not part of the key.
struct SeriesKey {
  std::string target;
  std::string prompt;
};

// What the exporter's own series say about the process, fixed for its
// life: its build (llm_stream_exporter_build_info) and the shard of the
// config's targets it runs (llm_stream_shard_index and _count, from
// --shard.index and --shard.count; 0 and 1 when not sharded).
struct BuildInfo {
  std::string version;
  std::string revision;
  std::uint64_t shard_index = 0;
  std::uint64_t shard_count = 1;
};

// Where the process_* metrics come from at scrape time; tests pass a fixed
// reading, an empty function leaves them out.
using ProcessReader = std::function<ProcessStats()>;

class Metrics {
 public:
  explicit Metrics(const BuildInfo& build, ProcessReader read_process = read_process_stats);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Creates every series the config implies (zero-initialised) and removes the
  // series of targets/prompts that are gone. Buckets come from config.buckets.
  void apply_config(const config::Config& config);

  // One finished probe. Warmup results only count llm_stream_warmup_probes_total.
  void record(const probe::ProbeResult& result);

  // The diagnosis of one series for dashboards: llm_stream_diagnosis{target,model,prompt,shape}
  // is 1 where the verdict holds with enough probes, else 0. Unconfigured keys are ignored.
  void set_diagnosis(const SeriesKey& key, const std::vector<report::Verdict>& verdicts);

  // One round of `target` pushed back by a server's Retry-After:
  // llm_stream_backoffs_total{target}. Unconfigured targets are ignored.
  void count_backoff(std::string_view target);

  // One failed rows-file operation: llm_stream_row_write_errors_total.
  void count_row_write_error();

  // OTLP data points dropped (otlp/pipeline.hpp): llm_stream_otlp_dropped_total.
  void count_otlp_dropped(std::uint64_t data_points);

  // llm_stream_exporter_config_last_reload_successful (1/0) and, when ok,
  // the success timestamp: at startup and after every reload attempt.
  void set_reload_result(bool ok, double unix_seconds);
  // One reload attempt (not the startup load):
  // llm_stream_exporter_config_reloads_total{result="success"|"failure"}.
  void count_reload(bool ok);

  // Prometheus text exposition format 0.0.4.
  std::string render() const;
  // The format a scrape negotiated (metrics/exposition.hpp): text 0.0.4, or
  // OpenMetrics 1.0.0 with `_created` for counters and histograms, and
  // exemplars {probe_id} (ProbeResult::id) on the buckets of TTFT, gaps
  // (the largest gap of a probe) and max gap. Both end with process_*.
  std::string render(Exposition format) const;
  // The same exposition handed to `sink` a piece at a time (one family, then
  // the end), so that a caller compresses or counts as it goes instead of
  // holding the whole text (30 MB at 1,000 targets); `sink` returns false to
  // stop the render there. True when every piece was taken.
  using Sink = ExpositionSink;
  bool render(Exposition format, const Sink& sink) const;

  // The families render() writes (registry and process_*), for benchmarks
  // that compare serializers on the same input.
  std::vector<prometheus::MetricFamily> collect() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ProcessReader read_process_;
};

}  // namespace lse::metrics
