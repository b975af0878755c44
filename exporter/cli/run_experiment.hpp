// What one `run` probes, decided from a config file or from the MC_*
// environment and prompt files (DESIGN §5): targets, their prompts, the
// diagnosis thresholds and the series order.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/run_command.hpp"
#include "cli/run_proxy.hpp"
#include "config/config.hpp"
#include "report/summary.hpp"

namespace lse::cli {

// Bad input the user can fix: printed as "run: <message>", exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What one run probes: targets, their prompts, thresholds, series order.
struct Experiment {
  std::vector<config::Target> targets;
  std::vector<std::vector<config::Prompt>> prompts;  // per target
  config::DiagnosisThresholds thresholds;
  std::vector<double> gap_buckets = config::Buckets{}.gap;  // the report's gap histogram bins
  report::SeriesOrder order;
  int runs = 20;
  std::vector<ProxyRoute> routes;  // per target, decided before the first probe
};

// From --config: every target × its prompts. Throws UsageError.
Experiment from_config(const RunOptions& o, const Positionals& pos);

// From MC_BASE_URL / MC_MODEL / MC_API_KEY / MC_API and prompt files.
// Throws UsageError.
Experiment from_environment(const RunOptions& o, const Positionals& pos);

}  // namespace lse::cli
