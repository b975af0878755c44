// `llm_stream_exporter report ROWS.jsonl... [--out FILE.html]`: the HTML
// report `run --report` writes, rendered from rows files afterwards (DESIGN
// §5). One file renders as its run did; several (before/after, two hosts)
// keep their rows apart: each target becomes "TARGET @ LABEL", LABEL being
// the file's host when every file holds exactly one host and the hosts
// differ, else the file's name. A file that cannot be read, holds no rows, or
// has any line that is not a probe row is refused: every bad line is listed
// as FILE:LINE with its reason and counted, and nothing is written.
#pragma once
#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>
#include <vector>

#include "probe/result.hpp"
#include "report/html.hpp"
#include "report/summary.hpp"

namespace lse::cli {

struct ReportOptions {
  std::vector<std::string> files;         // rows files (JSONL)
  std::string out;                        // "" or "-": stdout (refused when it is a terminal)
  std::string title;                      // "" → made from the labels
  std::string stall_threshold = "250ms";  // draws stall marks and the histogram's line
};

CLI::App* add_report_command(CLI::App& app, ReportOptions& options);

// Exit codes: 0 written; 1 the HTML could not be written; 2 a file is unreadable, empty or has bad
// lines, an option is bad, or the HTML would go to a terminal.
int report_command(const ReportOptions& options);

// One rows file, read to the end: every row, and every line that is not one.
struct RowsSource {
  std::string path;
  std::vector<probe::ProbeResult> rows;
  std::size_t lines = 0;         // non-blank lines
  std::vector<std::string> bad;  // "FILE:LINE: not a probe row: why", one per bad line
  std::string partial_tail;      // a last line cut mid-row: skipped with this warning, or ""
  std::string unreadable;        // "FILE: cannot read rows file: why", or ""
};
RowsSource read_rows_source(const std::string& path);

// The label of each source (see the file comment): hosts when they tell the
// files apart, else file names (the paths as given when names repeat).
std::vector<std::string> source_labels(const std::vector<RowsSource>& sources);

// Every source's rows in one list; with several sources each target renamed
// "TARGET @ LABEL", and `order` set so that a target+prompt's series of every
// source stand next to each other, in source order.
std::vector<probe::ProbeResult> merge_sources(const std::vector<RowsSource>& sources,
                                              const std::vector<std::string>& labels,
                                              report::SeriesOrder& order);

// One rows file as the report's header names it: label, path, hosts, the
// time range of its rows, rows and ok rows, warmup rows.
report::ReportSource describe_source(const RowsSource& source, const std::string& label);

// The report's header for these sources: title, command, one ReportSource
// per file (no single start, host or duration for separate runs).
report::ReportMeta report_meta(const ReportOptions& options, const std::vector<RowsSource>& sources,
                               const std::vector<std::string>& labels);

}  // namespace lse::cli
