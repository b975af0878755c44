// `llm_stream_exporter run`: the one-shot experiment (DESIGN §5, issue 3).
// N runs per prompt per target, prompt order shuffled every round, warmup
// probes discarded, rows appended as they finish, a summary with the
// diagnosis on stdout, optionally an HTML report. Probing is the probe
// module's Prober; this file only plans, drives and reports.
#pragma once
#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lse::cli {

struct RunOptions {
  std::string config_path;              // --config; empty: MC_BASE_URL/MC_API_KEY/MC_MODEL mode
  std::vector<std::string> positional;  // PROMPT_FILE... [RUNS]
  int runs = 20;
  int warmup = 2;
  std::string stall_threshold;  // "250ms"; empty: the target's
  std::string out;              // rows file; empty: lse-rows-<UTC time>.jsonl
  std::string report;           // HTML report path; empty: none
  std::string seed;             // shuffle seed; empty: random (printed)
  int concurrency = 1;
  std::string format = "table";  // table | json
  bool explain = false;          // --explain, -v: every field and every rule in the table
  std::string api;               // --api (without --config); empty: MC_API, else openai-chat
  bool no_proxy = false;         // --no-proxy: every target connects directly (cli/run_proxy.hpp)

  // Set by add_run_command: whether the flag was given (defaults differ by mode).
  const CLI::Option* runs_flag = nullptr;
  const CLI::Option* warmup_flag = nullptr;
};

CLI::App* add_run_command(CLI::App& app, RunOptions& options);

// Exit codes: 0 done; 1 a target+prompt had no successful run; 2 bad
// input (config, prompt file, options); 130 interrupted (SIGINT/SIGTERM).
int run_command(const RunOptions& options, const std::string& user_agent, const std::string& host);

// One probe of the plan.
struct PlanItem {
  std::size_t target = 0;  // index into the run's targets
  std::size_t prompt = 0;  // index into that target's prompts
  bool warmup = false;
  int round = -1;  // -1 for warmup probes
};

// The whole experiment, decided before the first probe: per target its
// `warmup[t]` warmup probes first (cycling through its prompts), then `runs`
// rounds; in each round every target's prompts in a fresh shuffled order
// (targets in a shuffled order too). The same seed gives the same plan.
// Warmup counts per target, not per stream: with --concurrency N each of the
// N streams opens its own connection, so warming every one of them takes
// --warmup >= N.
std::vector<PlanItem> build_plan(const std::vector<std::size_t>& prompts_per_target, int runs,
                                 const std::vector<int>& warmup, std::uint64_t seed);

// Splits `run prompt.txt other.txt 20` positionals: files, and a trailing
// run count when the last one is a positive integer.
struct Positionals {
  std::vector<std::string> files;
  int runs = 0;  // 0: not given
};
Positionals split_positionals(const std::vector<std::string>& args);

}  // namespace lse::cli
