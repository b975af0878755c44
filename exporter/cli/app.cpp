// The command line (see app.hpp).
#include "cli/app.hpp"

#include <fmt/format.h>
#include <ostream>

#include "api/adapter.hpp"

namespace lse::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

// The program flags, on the app and on each subcommand (before or after the
// subcommand's name, `--log.level=debug serve` and `serve --log.level=debug`).
void add_log_flags(CLI::App& to, AppOptions& o) {
  to.add_option("--log.level", o.log_level, "debug, info, warn, error (default info)")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  to.add_option("--log.format", o.log_format, "logfmt or json (default logfmt)")
      ->check(CLI::IsMember({"logfmt", "json"}));
}

// check-config takes its file as FILE or, as serve does, --config.file:
// exactly one of the two.
void add_config_file_alternative(CLI::App& check_cmd, std::string& path) {
  auto* group = check_cmd.add_option_group("config file", "FILE or --config.file");
  group->add_option(check_cmd.get_option("file"))->required(false);
  group->add_option("--config.file,--config", path, "config file (instead of FILE)");
  group->require_option(1);
}

CLI::App* add_check_config_command(CLI::App& app, CheckConfigOptions& o) {
  auto* cmd = app.add_subcommand(
      "check-config",
      "validate a config file and exit (0 ok, 2 invalid); lists each target's api, request URL "
      "and key header; a listen address already in use is a warning. api values: " +
          api::dialect_list());
  add_check_config_options(*cmd, o);
  add_config_file_alternative(*cmd, o.path);
  return cmd;
}

CLI::App* add_help_command(CLI::App& app, std::string& topic) {
  auto* cmd = app.add_subcommand("help", "show the help of the program, or of one command");
  cmd->add_option("command", topic, "serve, check-config, run, compare, report or help");
  return cmd;
}

}  // namespace

AppCommands build_app(CLI::App& app, AppOptions& o) {
  add_log_flags(app, o);
  AppCommands c;
  c.serve = add_serve_command(app, o.serve);
  c.check_config = add_check_config_command(app, o.check_config);
  c.run = add_run_command(app, o.run);
  c.compare = add_compare_command(app, o.compare);
  c.report = add_report_command(app, o.report);
  c.help = add_help_command(app, o.help_topic);
  for (CLI::App* cmd : {c.serve, c.check_config, c.run, c.compare, c.report})
    add_log_flags(*cmd, o);
  app.require_subcommand(0, 1);
  return c;
}

int help_command(const CLI::App& app, const std::string& topic, std::ostream& out,
                 std::ostream& err) {
  // Not app.help(): once `help` is parsed, it would describe `help` itself.
  const std::string program = app.get_name();
  if (topic.empty()) {
    out << app.get_formatter()->make_help(&app, program, CLI::AppFormatMode::Normal);
    return kExitOk;
  }
  for (const CLI::App* cmd : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (cmd->get_name() != topic || topic.empty()) continue;
    out << cmd->help(program);
    return kExitOk;
  }
  err << fmt::format(
      "help: no command '{}' (commands: serve, check-config, run, compare, "
      "report, help)\n",
      topic);
  return kExitUsage;
}

}  // namespace lse::cli
