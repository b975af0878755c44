// The page of one probe (RowStore::find_result), served at `probe?id=<id>`
// beside the landing page: the verdict and its evidence on top, the chunk
// arrivals on a time axis (coalesced chunks and stalls marked), the gaps in
// order (0-ms gaps drawn and counted), the diagnosis of its target+prompt's
// recent probes in three states ([x] holds, [ ] does not, [?] cannot tell;
// from `targets`, the landing page's list), then identity, outcome, the
// parts of the clock and the phases. Self-contained, no scripts. Bounded: past
// `detailed_gaps` gaps both charts are summarised in bins, so the page of a
// 100,000-chunk row stays small; the full row is one link away
// (`api/v1/probes?id=<id>`).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "probe/result.hpp"
#include "server/server.hpp"

namespace lse::server {

inline constexpr std::size_t kProbePageDetailedGaps = 2000;

std::string render_probe_page(const probe::ProbeResult& probe,
                              const std::vector<TargetStatus>& targets = {},
                              std::size_t detailed_gaps = kProbePageDetailedGaps);

}  // namespace lse::server
