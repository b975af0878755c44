// `llm_stream_exporter check-config FILE`: validates a config file, says how
// many series it implies, and for each target which dialect it speaks, where
// it posts and which header carries its key (never the key itself). Every
// error of the file is reported (file:line:col each, in file order, then a
// count), warnings go to stderr without failing, and the listen address is
// tried for real (resolved and bound once): an address already in use (the
// exporter running beside the check) is a warning, any other problem an error.
// After the targets, one line per prompt says where its text came from (built
// in, a file, the config itself).
// With --shard.count N each target's line ends with its shard, and a line per
// shard says how many targets and series that replica would have.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "config/config.hpp"

namespace lse::cli {

struct CheckConfigOptions {
  std::string path;
  // --no-env-check: validate without the secrets present (CI); the secret
  // env variables and files are listed as "not checked" instead of read.
  bool no_env_check = false;
  // --shard.count N: each target's shard among N (serve --shard.count N) and
  // each shard's targets and series, to see a split before rolling it out.
  // 0: not asked.
  std::uint64_t shard_count = 0;
};

// Adds the FILE argument, --no-env-check and --shard.count to the
// `check-config` subcommand.
void add_check_config_options(CLI::App& check_config, CheckConfigOptions& options);

// Exit codes: 0 valid (warnings and not-checked lines may still be printed);
// 2 invalid (every error, with file:line:col, then "N errors", on `err`).
int check_config_command(const CheckConfigOptions& options, std::ostream& out, std::ostream& err);
int check_config_command(const CheckConfigOptions& options);  // std::cout, std::cerr
int check_config_command(const std::string& path);

// "name: anthropic-messages POST https://h/v1/messages, model m, key in
// x-api-key (env ANTHROPIC_API_KEY)". The URL's userinfo and query are left out.
std::string describe_target(const config::Target& target);

// Where a prompt's text came from: "prompt short: built in", "prompt long: file
// /etc/llm-stream-exporter/prompts/long.txt", "prompt p: in the config".
std::string describe_prompt(const config::Prompt& prompt);

// "path: ok (1 target, 3 prompts, 3 target×prompt series)".
std::string summary_line(const std::string& path, const config::Config& cfg);

}  // namespace lse::cli
