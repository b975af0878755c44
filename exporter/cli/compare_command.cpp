// `compare`: read two rows files (or one, with --pair), compare, print.
#include "cli/compare_command.hpp"

#include <fmt/format.h>
#include <iostream>
#include <set>

#include "config/config.hpp"
#include "report/compare.hpp"
#include "report/rows_file.hpp"
#include "util/json.hpp"

namespace lse::cli {

CLI::App* add_compare_command(CLI::App& app, CompareOptions& o) {
  auto* cmd = app.add_subcommand(
      "compare",
      "second-host experiment: which parts of the clock (TTFT, gaps, tail, duration, stalls) "
      "moved from A to B, with bootstrap 95% confidence intervals and a verdict.\n"
      "Targets are matched by name (by prompt alone when A and B each hold one target); "
      "--pair A_TARGET=B_TARGET matches them explicitly, also two targets of one file: "
      "`compare rows.jsonl --pair direct=via-nginx` (B omitted: B is A).\n"
      "A change moved when its CI excludes 0 and |change| >= max(--min-effect, 10% of A); the "
      "verdict quotes the largest move, and names a buffer between the hosts when TTFT grew "
      "while the gaps collapsed to ~0.");
  cmd->add_option("A", o.a, "rows file of the first host (JSONL from `run --out`)")->required();
  cmd->add_option("B", o.b, "rows file of the second host (default with --pair: A)");
  cmd->add_option("--pair", o.pairs,
                  "A_TARGET=B_TARGET: compare A's target A_TARGET with B's B_TARGET, prompt by "
                  "prompt (repeatable; only the pairs are compared)")
      ->allow_extra_args(false);
  cmd->add_option("--format", o.format, "table or json")->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--resamples", o.resamples, "bootstrap resamples (default 2000)")
      ->check(CLI::Range(100, 1000000));
  cmd->add_option("--seed", o.seed,
                  "bootstrap seed (fixed by default: the same rows give the same intervals)");
  cmd->add_option(
      "--resolution", o.resolution,
      "clock resolution between two runs: time CIs are widened by this each side (default 1ms)");
  cmd->add_option("--min-effect", o.min_effect,
                  "smallest time change that counts as moved, besides 10% of A (default 5ms)");
  return cmd;
}

std::optional<std::pair<std::string, std::string>> parse_pair(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return std::nullopt;
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

namespace {

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The --pair values, each checked against the targets of its file. Returns
// an error message, or "" when every pair is usable.
std::string resolve_pairs(const CompareOptions& o, const std::vector<probe::ProbeResult>& a,
                          const std::vector<probe::ProbeResult>& b,
                          std::vector<std::pair<std::string, std::string>>& out) {
  std::set<std::string> ta, tb;
  for (const auto& r : a) ta.insert(r.target);
  for (const auto& r : b) tb.insert(r.target);
  for (const auto& text : o.pairs) {
    auto pair = parse_pair(text);
    if (!pair) return fmt::format("--pair '{}' is not A_TARGET=B_TARGET", text);
    if (!ta.count(pair->first))
      return fmt::format("--pair '{}': {} has no target '{}' (it has: {})", text, o.a, pair->first,
                         join(ta));
    const std::string& file_b = o.b.empty() ? o.a : o.b;
    if (!tb.count(pair->second))
      return fmt::format("--pair '{}': {} has no target '{}' (it has: {})", text, file_b,
                         pair->second, join(tb));
    out.push_back(*pair);
  }
  return "";
}

}  // namespace

int compare_command(const CompareOptions& o) {
  if (o.b.empty() && o.pairs.empty()) {
    std::cerr << "compare: give two rows files (A B), or one with --pair A_TARGET=B_TARGET\n";
    return 2;
  }
  const std::string file_b = o.b.empty() ? o.a : o.b;
  std::vector<probe::ProbeResult> a, b;
  std::vector<std::string> warnings;
  try {
    a = report::read_rows_file(o.a, &warnings);
    b = file_b == o.a ? a : report::read_rows_file(file_b, &warnings);
  } catch (const report::RowsFileError& e) {
    std::cerr << "compare: " << e.what() << "\n";
    return 2;
  }
  for (const auto& w : warnings) std::cerr << "compare: warning: " << w << "\n";
  if (a.empty() || b.empty()) {
    std::cerr << "compare: " << (a.empty() ? o.a : file_b) << ": no rows to compare\n";
    return 2;
  }
  report::CompareOptions opts;
  opts.resamples = o.resamples;
  opts.seed = o.seed;
  if (const std::string error = resolve_pairs(o, a, b, opts.pairs); !error.empty()) {
    std::cerr << "compare: " << error << "\n";
    return 2;
  }
  const auto resolution = config::parse_duration(o.resolution);
  if (!resolution || resolution->count() < 0) {
    std::cerr << "compare: --resolution '" << o.resolution << "' is not a duration (e.g. 1ms)\n";
    return 2;
  }
  opts.resolution_seconds = std::chrono::duration<double>(*resolution).count();
  const auto min_effect = config::parse_duration(o.min_effect);
  if (!min_effect || min_effect->count() < 0) {
    std::cerr << "compare: --min-effect '" << o.min_effect << "' is not a duration (e.g. 5ms)\n";
    return 2;
  }
  opts.min_effect_seconds = std::chrono::duration<double>(*min_effect).count();
  const report::Comparison c = report::compare(a, b, opts);
  if (o.format == "json")
    std::cout << json::dump(report::to_json(c, o.a, file_b)) << "\n";
  else
    std::cout << report::render_text(c, fmt::format("{} ({} rows)", o.a, a.size()),
                                     fmt::format("{} ({} rows)", file_b, b.size()));
  if (c.series.empty()) {
    std::cerr << "compare: " << o.a << " and " << file_b << " have no target/prompt in common\n";
    return 2;
  }
  return 0;
}

}  // namespace lse::cli
