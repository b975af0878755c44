// The experiment's HTML report (issue 3 point 7): one self-contained file,
// inline SVG and CSS, a few lines of inline JS that only check the page,
// nothing loaded from the network. Per target+prompt: a timeline of every
// run (chunk arrivals as ticks, stalls marked), the gap distribution with the
// stall threshold, TTFT and duration distributions, the summary table and
// the diagnosis.
#pragma once
#include <string>
#include <vector>

#include "config/config.hpp"
#include "report/summary.hpp"

namespace lse::report {

struct ReportMeta {
  std::string title = "llm-stream-exporter run";
  std::string command;      // the invocation, secret-free
  std::string host;         // where the probes ran
  double started_unix = 0;  // wall clock at start
  double elapsed_seconds = 0;
  std::string seed;          // shuffle seed, as text; "" (not shown) when unknown
  int concurrency = 1;       // 0 (not shown) when unknown: a report made from rows
  bool interrupted = false;  // a partial run (SIGINT/SIGTERM)
  std::vector<double> gap_buckets = config::Buckets{}.gap;  // histogram bins (seconds)
  config::DiagnosisThresholds thresholds;
};

// Every timeline row carries data-run (and data-series, data-ok); the page
// sets data-selfcheck="ok" on <html> once its inline check found the
// expected number of rows (or "failed: why" otherwise).
std::string render_html(const Summary& summary, const ReportMeta& meta);

// Text with &, <, >, " and ' escaped (exposed for tests).
std::string html_escape(std::string_view text);

}  // namespace lse::report
