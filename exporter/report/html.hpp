// The experiment's HTML report (issue 3 point 7): one self-contained file,
// inline SVG and CSS, a few lines of inline JS that only check the page,
// nothing loaded from the network. Per target+prompt: a timeline of every
// run (chunk arrivals as ticks, stalls marked), the gap distribution with the
// stall threshold, TTFT and duration distributions, the summary table and
// the diagnosis. The sections of one comparison (a target+prompt from
// several rows files: "svc @ before", "svc @ after") share their time axes,
// histogram bins and count axis, so they can be compared by eye; counts are on a log scale, so a
// handful of stalls stays visible next to hundreds of small gaps.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "report/summary.hpp"

namespace lse::report {

// One rows file a report was made from, as its rows tell it.
struct ReportSource {
  std::string label, path;
  std::vector<std::string> hosts;        // distinct, sorted; empty when the rows name none
  double first_unix = 0, last_unix = 0;  // first probe's start, last probe's end
  std::size_t rows = 0, ok = 0;
  std::size_t warmups = 0;  // rows marked warmup (`run` writes measured probes only)
};

struct ReportMeta {
  std::string title = "llm-stream-exporter run";
  std::string command;      // the invocation, secret-free
  std::string host;         // where the probes ran
  double started_unix = 0;  // wall clock at start
  double elapsed_seconds = 0;
  std::string seed;          // shuffle seed, as text; "" (not shown) when unknown
  int concurrency = 1;       // 0 (not shown) when unknown: a report made from rows
  bool interrupted = false;  // a partial run (SIGINT/SIGTERM)
  // Rows files the report was made from (`report`): the header then names
  // each file with its hosts, time range and rows instead of one start, one
  // "took" and a warmup count the rows cannot tell. Empty for `run --report`.
  std::vector<ReportSource> sources;
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
