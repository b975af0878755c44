// The HTML landing page at "/": what is probed and how it goes, verdict
// first, for a human checking the sidecar with kubectl port-forward. Pure:
// values in, HTML out, every value escaped. Fits 1,280 px without a
// horizontal scroll: long endpoints are shortened (the full one on hover),
// numbers never wrap.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "probe/result.hpp"
#include "report/html.hpp"
#include "server/server.hpp"

namespace lse::server {

// One escaper for every page the product renders (reports and landing page).
using report::html_escape;

// `last` is RowStore::last_by_target(); `now_unix` gives each row's age.
// A target's name opens its last probe's page at `probe?id=<id>` (relative,
// like every link of the page), or its rows when that probe has no id.
std::string render_landing_page(const std::vector<TargetStatus>& targets,
                                const std::map<std::string, probe::ProbeResult>& last,
                                double now_unix);

}  // namespace lse::server
