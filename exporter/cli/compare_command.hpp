// `llm_stream_exporter compare A.jsonl [B.jsonl] [--pair A_TARGET=B_TARGET]...`:
// the second-host experiment (DESIGN §5): which parts of the clock moved from
// A to B, with bootstrap 95% confidence intervals and a verdict in plain words
// (report/compare). Targets are matched by name; `--pair` matches them
// explicitly, also two targets of one rows file (B omitted: B is A).
#pragma once
#include <utility>
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lse::cli {

struct CompareOptions {
  std::string a, b;                // rows files; b empty: the same as a (with --pair)
  std::vector<std::string> pairs;  // "A_TARGET=B_TARGET"
  std::string format = "table";    // table | json
  int resamples = 2000;
  std::uint64_t seed = 20240601;
  std::string resolution = "1ms";  // CIs of time parts are widened by this much each side
  std::string min_effect = "5ms";  // the floor of the minimum effect for time parts
};

CLI::App* add_compare_command(CLI::App& app, CompareOptions& options);

// "direct=via-nginx" → {"direct", "via-nginx"}; nullopt when either side is
// empty or there is no '=' (a target name cannot contain '=' here: the first
// '=' splits).
std::optional<std::pair<std::string, std::string>> parse_pair(const std::string& text);

// Exit codes: 0 compared; 2 a file is missing or malformed ("FILE:LINE: error"),
// a --pair is malformed or names a target a file does not have, or A and B
// have nothing in common.
int compare_command(const CompareOptions& options);

}  // namespace lse::cli
