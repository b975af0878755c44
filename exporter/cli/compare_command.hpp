// `llm_stream_exporter compare A.jsonl B.jsonl`: the second-host experiment
// (DESIGN §5): which parts of the clock moved from A to B, with bootstrap 95%
// confidence intervals and a verdict in plain words (report/compare).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace lse::cli {

struct CompareOptions {
  std::string a, b;              // rows files
  std::string format = "table";  // table | json
  int resamples = 2000;
  std::uint64_t seed = 20240601;
  std::string resolution = "1ms";  // CIs of time parts are widened by this much each side
};

CLI::App* add_compare_command(CLI::App& app, CompareOptions& options);

// Exit codes: 0 compared; 2 a file is missing or malformed ("FILE:LINE: error"),
// or A and B have nothing in common.
int compare_command(const CompareOptions& options);

}  // namespace lse::cli
