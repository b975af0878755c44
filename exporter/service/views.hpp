// What `serve` derives from the running config and the latest rows at the
// moment someone looks: the diagnosis gauges at scrape time and the landing
// page's list of targets. Pure functions of their inputs.
#pragma once
#include <cstddef>
#include <vector>

#include "config/config.hpp"
#include "metrics/metrics.hpp"
#include "probe/result.hpp"
#include "report/row_store.hpp"
#include "server/server.hpp"

namespace lse::service {

// The diagnosis of DESIGN §7 looks at this many newest probes per series.
inline constexpr std::size_t kDiagnosisWindow = 50;

// The newest probes (newest first, at most kDiagnosisWindow) of one series
// out of `latest`, a target's rows newest first. A row of another model
// (from before a model change) is not part of the series.
std::vector<probe::ProbeResult> diagnosis_window(const std::vector<probe::ProbeResult>& latest,
                                                 const config::Target& target,
                                                 const std::string& prompt);

// Sets llm_stream_diagnosis of every configured series from its window. Runs
// on the server thread at scrape time, so the probe thread never pays for it.
void update_diagnosis(metrics::Metrics& metrics, const report::RowStore& rows,
                      const config::Config& config);

// The landing page's targets (URLs without credentials) with the diagnosis of each prompt.
std::vector<server::TargetStatus> target_statuses(const config::Config& config,
                                                  const report::RowStore& rows);

}  // namespace lse::service
