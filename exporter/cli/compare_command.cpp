// `compare`: read two rows files, compare, print.
#include "cli/compare_command.hpp"

#include <fmt/format.h>
#include <iostream>

#include "config/config.hpp"
#include "report/compare.hpp"
#include "report/rows_file.hpp"
#include "util/json.hpp"

namespace lse::cli {

CLI::App* add_compare_command(CLI::App& app, CompareOptions& o) {
  auto* cmd = app.add_subcommand("compare",
                                 "second-host experiment: which parts of the clock (TTFT, gaps, "
                                 "tail, duration, stalls) moved from A to B, "
                                 "with bootstrap 95% confidence intervals and a verdict");
  cmd->add_option("A", o.a, "rows file of the first host (JSONL from `run --out`)")->required();
  cmd->add_option("B", o.b, "rows file of the second host")->required();
  cmd->add_option("--format", o.format, "table or json")->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--resamples", o.resamples, "bootstrap resamples (default 2000)")
      ->check(CLI::Range(100, 1000000));
  cmd->add_option("--seed", o.seed,
                  "bootstrap seed (fixed by default: the same rows give the same intervals)");
  cmd->add_option(
      "--resolution", o.resolution,
      "clock resolution between two runs: time CIs are widened by this each side (default 1ms)");
  return cmd;
}

int compare_command(const CompareOptions& o) {
  std::vector<probe::ProbeResult> a, b;
  try {
    a = report::read_rows_file(o.a);
    b = report::read_rows_file(o.b);
  } catch (const report::RowsFileError& e) {
    std::cerr << "compare: " << e.what() << "\n";
    return 2;
  }
  if (a.empty() || b.empty()) {
    std::cerr << "compare: " << (a.empty() ? o.a : o.b) << ": no rows to compare\n";
    return 2;
  }
  report::CompareOptions opts;
  opts.resamples = o.resamples;
  opts.seed = o.seed;
  const auto resolution = config::parse_duration(o.resolution);
  if (!resolution || resolution->count() < 0) {
    std::cerr << "compare: --resolution '" << o.resolution << "' is not a duration (e.g. 1ms)\n";
    return 2;
  }
  opts.resolution_seconds = std::chrono::duration<double>(*resolution).count();
  const report::Comparison c = report::compare(a, b, opts);
  if (o.format == "json")
    std::cout << json::dump(report::to_json(c, o.a, o.b)) << "\n";
  else
    std::cout << report::render_text(c, fmt::format("{} ({} rows)", o.a, a.size()),
                                     fmt::format("{} ({} rows)", o.b, b.size()));
  if (c.series.empty()) {
    std::cerr << "compare: " << o.a << " and " << o.b << " have no target/prompt in common\n";
    return 2;
  }
  return 0;
}

}  // namespace lse::cli
