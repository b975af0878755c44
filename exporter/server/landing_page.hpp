// The HTML landing page at "/": what is probed and how its last probe went,
// for a human checking the sidecar with kubectl port-forward. Pure: values in,
// HTML out, every value escaped.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>
#include "report/html.hpp"

#include "probe/result.hpp"
#include "server/server.hpp"

namespace lse::server {

// One escaper for every page the product renders (reports and landing page).
using report::html_escape;

// `last` is RowStore::last_by_target(); `now_unix` gives each row's age.
// A last probe with an id links to its page at `probe?id=<id>` (relative,
// like every link of the page).
std::string render_landing_page(const std::vector<TargetStatus>& targets,
                                const std::map<std::string, probe::ProbeResult>& last,
                                double now_unix);

// The page of one probe (RowStore::find_result), served at `probe?id=<id>`
// beside the landing page: identity, outcome, the parts of the clock, the
// phases, and the gap timeline as an inline SVG bar chart with the stall
// threshold drawn and stalls highlighted. Self-contained, no scripts.
std::string render_probe_page(const probe::ProbeResult& probe);

}  // namespace lse::server
