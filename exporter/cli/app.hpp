// The command line (DESIGN §5): every subcommand with its flags, the
// program flags (--log.*) that each of them takes too, and `help`.
// main.cpp parses with it and dispatches; tests build the same app.
#pragma once
#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>

#include "cli/check_config_command.hpp"
#include "cli/compare_command.hpp"
#include "cli/report_command.hpp"
#include "cli/run_command.hpp"
#include "cli/serve_command.hpp"

namespace lse::cli {

struct AppOptions {
  std::string log_level = "info";     // --log.level
  std::string log_format = "logfmt";  // --log.format
  ServeOptions serve;
  CheckConfigOptions check_config;
  RunOptions run;
  CompareOptions compare;
  ReportOptions report;
  std::string help_topic;  // `help [COMMAND]`
};

struct AppCommands {
  CLI::App* serve = nullptr;
  CLI::App* check_config = nullptr;
  CLI::App* run = nullptr;
  CLI::App* compare = nullptr;
  CLI::App* report = nullptr;
  CLI::App* help = nullptr;
};

// Adds every subcommand and flag to `app` (serve's flags also at the top,
// serve being the default). Each subcommand takes exactly the flags its
// --help lists: its own and --log.level / --log.format.
AppCommands build_app(CLI::App& app, AppOptions& options);

// `help`: the program's help; `help COMMAND`: that command's (as
// `COMMAND --help`). Exit 0, or 2 (on `err`) for a command there is not.
int help_command(const CLI::App& app, const std::string& topic, std::ostream& out,
                 std::ostream& err);

}  // namespace lse::cli
