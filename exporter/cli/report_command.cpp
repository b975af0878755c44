// `report`: rows files in, the run's HTML report out.
#include "cli/report_command.hpp"

#include <unistd.h>

#include <utility>
#include <fmt/format.h>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <set>

#include "config/config.hpp"
#include "report/html.hpp"
#include "report/rows_file.hpp"
#include "util/atomic_file.hpp"

namespace lse::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitNotWritten = 1;
constexpr int kExitUsage = 2;
constexpr std::size_t kBadLinesShown = 20;  // then "... and N more"

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(separator)) + p;
  return out;
}

// Every line of every source that is not a row, then one count per file.
// Returns false when a source cannot be used.
bool check_sources(const std::vector<RowsSource>& sources) {
  bool usable = true;
  std::size_t shown = 0, hidden = 0;
  for (const auto& s : sources) {
    if (!s.unreadable.empty()) {
      std::cerr << "report: " << s.unreadable << "\n";
      usable = false;
      continue;
    }
    if (!s.partial_tail.empty()) std::cerr << "report: warning: " << s.partial_tail << "\n";
    for (const auto& line : s.bad) {
      if (shown < kBadLinesShown) {
        std::cerr << "report: " << line << "\n";
        ++shown;
      } else {
        ++hidden;
      }
    }
  }
  if (hidden > 0) std::cerr << "report: ... and " << hidden << " more bad lines\n";
  for (const auto& s : sources) {
    if (!s.unreadable.empty()) continue;
    if (!s.bad.empty()) {
      std::cerr << fmt::format(
          "report: {}: {} of {} lines are not probe rows: nothing written (fix or remove them)\n",
          s.path, s.bad.size(), s.lines);
      usable = false;
    } else if (s.rows.empty()) {
      std::cerr << "report: " << s.path << ": no rows to report\n";
      usable = false;
    }
  }
  return usable;
}

// Rows whose stall count disagrees with `threshold` (they were measured with
// another one): the marks would not match the counts.
std::size_t rows_with_other_threshold(const std::vector<probe::ProbeResult>& rows,
                                      double threshold) {
  std::size_t n = 0;
  for (const auto& r : rows) {
    if (!r.ok) continue;
    const auto marked = static_cast<std::size_t>(
        std::count_if(r.gaps.begin(), r.gaps.end(), [&](double g) { return g >= threshold; }));
    if (marked != r.stalls) ++n;
  }
  return n;
}

}  // namespace

CLI::App* add_report_command(CLI::App& app, ReportOptions& o) {
  auto* cmd = app.add_subcommand(
      "report",
      "render the HTML report (as `run --report` writes it) from rows files.\n"
      "Several files (before/after, two hosts) keep their rows apart: each target becomes "
      "'TARGET @ LABEL', LABEL being the file's host when every file holds one host and they "
      "differ, else the file name. A file with any line that is not a probe row is refused: each "
      "bad line is listed as FILE:LINE and counted, and nothing is written.");
  cmd->add_option("ROWS", o.files, "rows files (JSONL from `run --out` or serve's rows: file)")
      ->required();
  cmd->add_option("--out,-o", o.out,
                  "HTML file to write (atomically); without it, or with '-', the HTML goes to "
                  "stdout, which is refused when stdout is a terminal");
  cmd->add_option("--title", o.title, "page title (default: made from the files' labels)");
  cmd->add_option("--stall-threshold", o.stall_threshold,
                  "gap drawn as a stall in timelines and histograms (default 250ms; rows keep "
                  "their own stall counts)");
  return cmd;
}

RowsSource read_rows_source(const std::string& path) {
  RowsSource s;
  s.path = path;
  try {
    report::RowsScan scan = report::scan_rows_file(path);
    s.rows = std::move(scan.rows);
    s.lines = scan.lines;
    s.bad = std::move(scan.bad);
    s.partial_tail = std::move(scan.partial_tail);
  } catch (const report::RowsFileError& e) {
    s.unreadable = e.what();
  }
  return s;
}

std::vector<std::string> source_labels(const std::vector<RowsSource>& sources) {
  std::vector<std::string> labels;
  // Hosts, when each file holds exactly one and no two files share it.
  std::set<std::string> distinct;
  bool by_host = sources.size() > 1;
  for (const auto& s : sources) {
    std::set<std::string> hosts;
    for (const auto& r : s.rows) hosts.insert(r.host);
    if (hosts.size() != 1 || hosts.begin()->empty() || !distinct.insert(*hosts.begin()).second)
      by_host = false;
    if (by_host) labels.push_back(*hosts.begin());
  }
  if (by_host) return labels;
  // File names, or the paths as given when two files share a name.
  labels.clear();
  std::set<std::string> names;
  bool names_unique = true;
  for (const auto& s : sources) {
    labels.push_back(std::filesystem::path(s.path).filename().string());
    names_unique &= names.insert(labels.back()).second;
  }
  if (names_unique) return labels;
  // The same path twice: numbered by position.
  labels.clear();
  std::set<std::string> paths;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const bool repeated = !paths.insert(sources[i].path).second;
    labels.push_back(repeated ? fmt::format("{} #{}", sources[i].path, i + 1) : sources[i].path);
  }
  return labels;
}

std::vector<probe::ProbeResult> merge_sources(const std::vector<RowsSource>& sources,
                                              const std::vector<std::string>& labels,
                                              report::SeriesOrder& order) {
  std::vector<probe::ProbeResult> rows;
  order.clear();
  const bool relabel = sources.size() > 1;
  // target+prompt as written → the sources that have it, in source order.
  std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> series;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    for (auto r : sources[i].rows) {
      auto& seen = series[{r.target, r.prompt}];
      if (seen.empty() || seen.back() != i) seen.push_back(i);
      if (relabel) r.target += " @ " + labels[i];
      rows.push_back(std::move(r));
    }
  }
  if (relabel)
    for (const auto& [key, in] : series)
      for (std::size_t i : in) order.emplace_back(key.first + " @ " + labels[i], key.second);
  return rows;
}

report::ReportSource describe_source(const RowsSource& source, const std::string& label) {
  report::ReportSource d;
  d.label = label;
  d.path = source.path;
  std::set<std::string> hosts;
  double first = std::numeric_limits<double>::max(), last = 0;
  for (const auto& r : source.rows) {
    if (!r.host.empty()) hosts.insert(r.host);
    first = std::min(first, r.ts);
    last = std::max(last, r.ts + r.duration);
    ++d.rows;
    d.ok += r.ok ? 1 : 0;
    d.warmups += r.warmup ? 1 : 0;
  }
  d.hosts.assign(hosts.begin(), hosts.end());
  d.first_unix = source.rows.empty() ? 0 : first;
  d.last_unix = source.rows.empty() ? 0 : last;
  return d;
}

report::ReportMeta report_meta(const ReportOptions& o, const std::vector<RowsSource>& sources,
                               const std::vector<std::string>& labels) {
  report::ReportMeta meta;
  meta.title = o.title.empty() ? "llm-stream-exporter report · " + join(labels, " vs ") : o.title;
  std::vector<std::string> paths;
  paths.reserve(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    paths.push_back(sources[i].path);
    meta.sources.push_back(describe_source(sources[i], i < labels.size() ? labels[i] : ""));
  }
  meta.command = "llm_stream_exporter report " + join(paths, " ");
  // Each file has its own hosts and time range (meta.sources); no one start,
  // host or "took" stands for several runs.
  meta.host.clear();
  meta.started_unix = 0;
  meta.elapsed_seconds = 0;
  meta.seed.clear();     // not in the rows
  meta.concurrency = 0;  // not in the rows
  return meta;
}

int report_command(const ReportOptions& o) {
  const auto threshold = config::parse_duration(o.stall_threshold);
  if (!threshold || *threshold <= config::Duration::zero()) {
    std::cerr << "report: --stall-threshold '" << o.stall_threshold
              << "' is not a positive duration (e.g. 250ms)\n";
    return kExitUsage;
  }
  const bool to_stdout = o.out.empty() || o.out == "-";
  if (to_stdout && isatty(STDOUT_FILENO) == 1) {
    std::cerr << "report: not writing HTML to a terminal: give --out FILE.html (or redirect "
                 "stdout)\n";
    return kExitUsage;
  }
  std::vector<RowsSource> sources;
  sources.reserve(o.files.size());
  for (const auto& f : o.files) sources.push_back(read_rows_source(f));
  if (!check_sources(sources)) return kExitUsage;

  const std::vector<std::string> labels = source_labels(sources);
  report::SeriesOrder order;
  std::vector<probe::ProbeResult> rows = merge_sources(sources, labels, order);
  const double stall_threshold = std::chrono::duration<double>(*threshold).count();
  for (auto& r : rows) r.stall_threshold = stall_threshold;
  if (const std::size_t other = rows_with_other_threshold(rows, stall_threshold); other > 0)
    std::cerr << fmt::format(
        "report: warning: {} of {} rows counted their stalls with another threshold than {}: "
        "the marks follow --stall-threshold, the counts the rows\n",
        other, rows.size(), o.stall_threshold);

  const config::DiagnosisThresholds thresholds;
  const report::Summary summary = report::summarize(rows, thresholds, order);
  report::ReportMeta meta = report_meta(o, sources, labels);
  meta.thresholds = thresholds;
  const std::string html = report::render_html(summary, meta);
  if (to_stdout) {
    std::cout << html;
    std::cout.flush();
  } else {
    try {
      util::write_file_atomically(o.out, html);
    } catch (const std::exception& e) {
      std::cerr << "report: " << e.what() << "\n";
      return kExitNotWritten;
    }
  }
  std::string what;
  for (std::size_t i = 0; i < sources.size(); ++i)
    what += fmt::format("{}{} ({} rows)", i ? ", " : "", labels[i], sources[i].rows.size());
  std::cerr << fmt::format("report: {} series from {} -> {}\n", summary.series.size(), what,
                           to_stdout ? "stdout" : o.out);
  return kExitOk;
}

}  // namespace lse::cli
