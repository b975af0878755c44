// `run`: the options, then plan (cli/run_experiment, run_plan) → drive
// (cli/run_driver, run_progress) → rows, summary, report.
#include "cli/run_command.hpp"

#include <unistd.h>

#include <utility>
#include <fmt/format.h>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <stdexcept>

#include "api/adapter.hpp"
#include "cli/run_driver.hpp"
#include "cli/run_experiment.hpp"
#include "cli/run_progress.hpp"
#include "cli/run_proxy.hpp"
#include "config/config.hpp"
#include "report/html.hpp"
#include "report/rows_file.hpp"
#include "report/summary.hpp"
#include "util/atomic_file.hpp"
#include "util/json.hpp"
#include "util/wall_clock.hpp"

namespace lse::cli {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitNoData = 1;
constexpr int kExitUsage = 2;

std::string describe_command(const RunOptions& o, const Experiment& ex, std::uint64_t seed) {
  std::string s = "llm_stream_exporter run";
  if (!o.config_path.empty()) s += " --config " + o.config_path;
  for (const auto& p : o.positional) s += " " + p;
  s += fmt::format(" --runs {} --seed {} --concurrency {}", ex.runs, seed, o.concurrency);
  if (o.warmup_flag && o.warmup_flag->count()) s += fmt::format(" --warmup {}", o.warmup);
  if (!o.stall_threshold.empty()) s += " --stall-threshold " + o.stall_threshold;
  if (o.no_proxy) s += " --no-proxy";
  return s;
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  auto* cmd = app.add_subcommand("run",
                                 "one-shot experiment: N runs per prompt (order shuffled every "
                                 "round, warmup discarded), raw rows, "
                                 "a summary with p50/p95/max and the diagnosis.\n"
                                 "Without --config: PROMPT_FILE... [RUNS] against MC_BASE_URL "
                                 "(MC_MODEL, MC_API_KEY, MC_API), e.g. `run prompt.txt 20`, "
                                 "through HTTPS_PROXY/HTTP_PROXY unless NO_PROXY matches or "
                                 "--no-proxy.");
  cmd->add_option("--config.file,--config", o.config_path,
                  "config file: every target × its prompts")
      ->check(CLI::ExistingFile);
  cmd->add_option("args", o.positional,
                  "[PROMPT_FILE...] [RUNS] (without --config; no files: the built-in short, "
                  "medium and long prompts)");
  o.runs_flag = cmd->add_option("--runs", o.runs, "runs per prompt per target (default 20)")
                    ->check(CLI::Range(1, 1000000));
  o.warmup_flag =
      cmd->add_option("--warmup", o.warmup,
                      "warmup probes per target, discarded (default: the config's warmup, else 2)")
          ->check(CLI::Range(0, 1000000));
  cmd->add_option("--stall-threshold", o.stall_threshold,
                  "gap that counts as a stall, e.g. 250ms (default: the target's)");
  cmd->add_option("--out", o.out,
                  "raw rows file, appended (default lse-rows-<UTC time>.jsonl); a row that "
                  "cannot be written is reported on stderr and the run exits 1");
  cmd->add_option("--report", o.report, "write a self-contained HTML report here");
  cmd->add_option("--seed", o.seed, "seed of the prompt-order shuffle (default: random, printed)");
  cmd->add_option("--concurrency", o.concurrency,
                  "streams in flight at once across the plan (default 1)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--api", o.api,
                  "without --config: the dialect MC_BASE_URL speaks (default: MC_API, else "
                  "openai-chat): " +
                      api::dialect_list());
  cmd->add_flag("--no-proxy", o.no_proxy,
                "connect directly: ignore HTTP_PROXY/HTTPS_PROXY (honoured like curl does "
                "without --config, and with a target's proxy_from_environment) and proxy_url");
  cmd->add_option("--format", o.format, "summary on stdout: table or json")
      ->check(CLI::IsMember({"table", "json"}));
  cmd->add_flag("-v,--explain", o.explain,
                "the table explained: per series every field's p50/p95/max and every rule of the "
                "diagnosis with its numbers, [x] holds, [ ] does not, [?] cannot tell (default: "
                "one line per series and one of evidence per verdict)");
  return cmd;
}

namespace {

// Everything decided before the first probe.
struct RunSetup {
  Experiment ex;
  std::uint64_t seed = 0;
  std::vector<PlanItem> plan;
  std::unique_ptr<report::RowsWriter> rows;
  std::size_t warmups = 0, measured = 0;
};

// --stall-threshold and --warmup over the targets; returns the warmup per target.
std::vector<int> apply_overrides(const RunOptions& o, Experiment& ex) {
  if (!o.stall_threshold.empty()) {
    const auto d = config::parse_duration(o.stall_threshold);
    if (!d || *d <= config::Duration::zero())
      throw UsageError(fmt::format("--stall-threshold '{}' is not a positive duration (e.g. 250ms)",
                                   o.stall_threshold));
    for (auto& t : ex.targets) t.stall_threshold = *d;
  }
  const bool warmup_given = (o.warmup_flag && o.warmup_flag->count()) || o.config_path.empty();
  std::vector<int> warmup;
  for (auto& t : ex.targets) {
    if (warmup_given) t.warmup = o.warmup;
    warmup.push_back(t.warmup);
  }
  return warmup;
}

std::uint64_t seed_of(const RunOptions& o) {
  if (o.seed.empty()) {
    std::uint64_t seed = std::random_device{}();
    return (seed << 32) ^ std::random_device{}();
  }
  try {
    std::size_t used = 0;
    const std::uint64_t seed = std::stoull(o.seed, &used, 0);
    if (used != o.seed.size()) throw std::invalid_argument("trailing");
    return seed;
  } catch (const std::exception&) {
    throw UsageError(fmt::format("--seed '{}' is not an unsigned integer", o.seed));
  }
}

std::unique_ptr<report::RowsWriter> open_rows(const RunOptions& o) {
  const std::string out =
      o.out.empty()
          ? "lse-rows-" + wall_clock::format_utc(wall_clock::unix_now(), "%Y%m%dT%H%M%SZ") +
                ".jsonl"
          : o.out;
  try {
    return std::make_unique<report::RowsWriter>(out);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
}

// Plan: the experiment from config or environment, the options over it, the
// shuffled plan and the rows file. Throws UsageError.
RunSetup plan_run(const RunOptions& o) {
  RunSetup s;
  const Positionals pos = split_positionals(o.positional);
  if (pos.runs && o.runs_flag && o.runs_flag->count() && pos.runs != o.runs)
    throw UsageError(
        fmt::format("the run count is given twice ({} and --runs {})", pos.runs, o.runs));
  if (!o.config_path.empty() && !o.api.empty())
    throw UsageError("--api applies without --config; a config names each target's api:");
  s.ex = o.config_path.empty() ? from_environment(o, pos) : from_config(o, pos);
  s.ex.runs = pos.runs ? pos.runs : o.runs;
  const std::vector<int> warmup = apply_overrides(o, s.ex);
  for (auto& t : s.ex.targets) {
    try {
      s.ex.routes.push_back(route_target(t, o.no_proxy));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  s.seed = seed_of(o);
  std::vector<std::size_t> prompt_counts;
  for (const auto& ps : s.ex.prompts) prompt_counts.push_back(ps.size());
  s.plan = build_plan(prompt_counts, s.ex.runs, warmup, s.seed);
  for (const auto& p : s.plan) s.warmups += p.warmup;
  s.measured = s.plan.size() - s.warmups;
  s.rows = open_rows(o);
  return s;
}

void announce(const RunSetup& s, const RunOptions& o) {
  std::size_t series = 0;
  for (const auto& ps : s.ex.prompts) series += ps.size();
  // Which proxy each target goes through and why (never its credentials).
  const std::string routes = describe_routes(s.ex.targets, s.ex.routes);
  std::fprintf(
      stderr,
      "run: %zu target%s, %zu target×prompt series, %d run%s each (%zu probes + %zu warmup), "
      "concurrency %d, seed %llu; rows -> %s%s%s\n",
      s.ex.targets.size(), s.ex.targets.size() == 1 ? "" : "s", series, s.ex.runs,
      s.ex.runs == 1 ? "" : "s", s.measured, s.warmups, o.concurrency,
      static_cast<unsigned long long>(s.seed), s.rows->path().c_str(), routes.empty() ? "" : "; ",
      routes.c_str());
  std::fflush(stderr);
}

// What the probing left: results, the stopping signal (or 0), and timing.
struct Probed {
  std::unique_ptr<Progress> progress;  // outlives the runner, which reports to it
  std::unique_ptr<Runner> runner;
  int signal = 0;
  double started_unix = 0, elapsed = 0;
};

// Probe: drive the plan. Throws UsageError (a target the prober rejects).
Probed probe_all(const RunSetup& s, const RunOptions& o, const std::string& user_agent,
                 const std::string& host) {
  Probed p;
  p.progress = std::make_unique<Progress>(s.measured, s.warmups, isatty(STDERR_FILENO) == 1);
  p.started_unix = wall_clock::unix_now();
  p.runner =
      std::make_unique<Runner>(s.ex, s.plan, o.concurrency, user_agent, host, *s.rows, *p.progress);
  p.signal = p.runner->run();
  p.elapsed = p.progress->elapsed();
  return p;
}

void print_summary(const report::Summary& summary, const RunSetup& s, const RunOptions& o,
                   const Probed& p) {
  if (o.format == "json") {
    json::Value doc = report::to_json(summary);
    doc.set("seed", std::to_string(s.seed));
    doc.set("rows_file", s.rows->path());
    doc.set("report_file", o.report);
    doc.set("interrupted", p.signal != 0);
    doc.set("elapsed_seconds", p.elapsed);
    std::cout << json::dump(doc) << "\n";
  } else {
    std::cout << report::render_table(summary, {.explain = o.explain});
  }
  std::cout.flush();
}

// The HTML report, when asked for. Returns false when it cannot be written.
bool write_report(const report::Summary& summary, const RunSetup& s, const RunOptions& o,
                  const Probed& p, const std::string& host) {
  if (o.report.empty()) return true;
  report::ReportMeta meta;
  meta.title = fmt::format("llm-stream-exporter run · {}", host);
  meta.command = describe_command(o, s.ex, s.seed);
  meta.host = host;
  meta.started_unix = p.started_unix;
  meta.elapsed_seconds = p.elapsed;
  meta.seed = std::to_string(s.seed);
  meta.concurrency = o.concurrency;
  meta.interrupted = p.signal != 0;
  meta.thresholds = s.ex.thresholds;
  meta.gap_buckets = s.ex.gap_buckets;
  try {
    util::write_file_atomically(o.report, report::render_html(summary, meta));
    std::fprintf(stderr, "run: report -> %s\n", o.report.c_str());
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run: %s\n", e.what());
    return false;
  }
}

// Rows that never reached the file: one closing line (each distinct error
// was printed when it first happened). Returns false when any is missing.
bool report_row_errors(const Runner& runner, const report::RowsWriter& rows) {
  if (runner.rows_failed() == 0) return true;
  const std::size_t distinct = runner.write_errors().size();
  std::fprintf(stderr,
               "run: error: %zu of %zu rows could not be written to %s (%zu distinct error%s, "
               "shown above)\n",
               runner.rows_failed(), runner.rows_failed() + rows.rows_written(),
               rows.path().c_str(), distinct, distinct == 1 ? "" : "s");
  return false;
}

// Series where nothing was measured. Returns false when there is one.
bool report_empty_series(const report::Summary& summary) {
  auto first_of = [](const std::string& example) {
    return example.empty() ? std::string() : "; first: " + example;
  };
  if (summary.runs > 0 && summary.ok == 0) {
    std::string first;
    for (const auto& s : summary.series)
      if (first.empty()) first = s.failure_example;
    std::fprintf(stderr,
                 "run: error: all %zu runs failed (%s%s): nothing was measured; is the endpoint "
                 "reachable?\n",
                 summary.runs, summary.failures_text.c_str(), first_of(first).c_str());
    return false;
  }
  bool all_measured = true;
  for (const auto& s : summary.series) {
    if (s.runs == 0 || s.ok > 0) continue;
    std::fprintf(
        stderr,
        "run: error: every run of target %s prompt %s failed (%s%s): nothing was measured\n",
        s.target.c_str(), s.prompt.c_str(), s.failures_text.c_str(),
        first_of(s.failure_example).c_str());
    all_measured = false;
  }
  return all_measured;
}

// Summarize and render; then the closing lines on stderr and the exit code.
int finish_run(const RunSetup& s, const RunOptions& o, const Probed& p, const std::string& host) {
  const Runner& runner = *p.runner;
  const report::Summary summary =
      report::summarize(p.runner->results(), s.ex.thresholds, s.ex.order);
  print_summary(summary, s, o, p);
  int code = kExitOk;
  if (!write_report(summary, s, o, p, host)) code = kExitNoData;
  if (!report_row_errors(runner, *s.rows)) code = kExitNoData;
  if (p.signal != 0) {
    std::fprintf(stderr,
                 "run: interrupted by %s after %zu of %zu runs: %zu in-flight probe%s canceled "
                 "(rows with reason canceled), %zu rows kept in %s\n",
                 p.signal == SIGINT ? "SIGINT" : "SIGTERM", runner.measured_done(),
                 runner.planned_measured(), runner.canceled(), runner.canceled() == 1 ? "" : "s",
                 s.rows->rows_written(), s.rows->path().c_str());
    return kExitInterrupted;
  }
  if (!report_empty_series(summary)) code = kExitNoData;
  std::fprintf(stderr, "run: %zu rows in %s\n", s.rows->rows_written(), s.rows->path().c_str());
  return code;
}

}  // namespace

int run_command(const RunOptions& o, const std::string& user_agent, const std::string& host) {
  RunSetup setup;
  Probed probed;
  try {
    setup = plan_run(o);
    announce(setup, o);
    probed = probe_all(setup, o, user_agent, host);
  } catch (const UsageError& e) {
    std::cerr << "run: " << e.what() << "\n";
    return kExitUsage;
  }
  return finish_run(setup, o, probed, host);
}

}  // namespace lse::cli
