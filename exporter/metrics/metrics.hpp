// prometheus-cpp families of DESIGN §3. Owns the registry; thread-safe:
// record() is called from probe threads, render() from the server thread,
// apply_config() from the reload path.
#pragma once
#include <memory>
#include <string>

#include "config/config.hpp"
#include "probe/result.hpp"

namespace lse::metrics {

struct BuildInfo {
  std::string version;
  std::string revision;
};

class Metrics {
 public:
  explicit Metrics(BuildInfo build);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Creates every series the config implies (zero-initialised) and removes the
  // series of targets/prompts that are gone. Buckets come from config.buckets.
  void apply_config(const config::Config& config);

  // One finished probe. Warmup results only count llm_stream_warmup_probes_total.
  void record(const probe::ProbeResult& result);

  // Diagnosis verdict for dashboards: llm_stream_diagnosis{target,model,prompt,shape} 0/1.
  void set_diagnosis(const std::string& target, const std::string& model, const std::string& prompt,
                     const std::string& shape, bool holds);

  void set_reload_result(bool ok, double unix_seconds);

  // Prometheus text exposition format 0.0.4.
  std::string render() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lse::metrics
