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
std::string render_landing_page(const std::vector<TargetStatus>& targets,
                                const std::map<std::string, probe::ProbeResult>& last,
                                double now_unix);

}  // namespace lse::server
