// prometheus-cpp families of DESIGN §3. Owns the registry; thread-safe:
// record() is called from probe threads, render() from the server thread,
// apply_config() from the reload path.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "metrics/exposition.hpp"
#include "probe/result.hpp"
#include "report/diagnosis.hpp"

namespace lse::metrics {

// Which configured series a diagnosis belongs to. The model label is the one
// the config gave the target, so it is not part of the key.
struct SeriesKey {
  std::string target;
  std::string prompt;
};

struct BuildInfo {
  std::string version;
  std::string revision;
};

class Metrics {
 public:
  explicit Metrics(const BuildInfo& build);
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

  // One failed rows-file operation: llm_stream_row_write_errors_total.
  void count_row_write_error();

  void set_reload_result(bool ok, double unix_seconds);

  // Prometheus text exposition format 0.0.4.
  std::string render() const;
  // The format a scrape negotiated (metrics/exposition.hpp). OpenMetrics is
  // not written yet: until then both give the text format.
  std::string render(Exposition format) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lse::metrics
