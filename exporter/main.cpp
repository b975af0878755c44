// llm_stream_exporter: parses the command line and hands it to one function
// per subcommand (DESIGN §5); `serve` is the default.
#include <CLI/CLI.hpp>
#include <string>

#include "cli/check_config_command.hpp"
#include "cli/compare_command.hpp"
#include "cli/logging.hpp"
#include "cli/report_command.hpp"
#include "cli/run_command.hpp"
#include "cli/serve_command.hpp"
#include "service/identity.hpp"

namespace {

constexpr int kExitUsage = 2;  // what a bad command line exits with

// check-config takes its file as FILE or, as serve does, --config.file:
// exactly one of the two.
void add_config_file_alternative(CLI::App& check_cmd, std::string& path) {
  auto* group = check_cmd.add_option_group("config file", "FILE or --config.file");
  group->add_option(check_cmd.get_option("file"))->required(false);
  group->add_option("--config.file,--config", path, "config file (instead of FILE)");
  group->require_option(1);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lse;
  CLI::App app{"llm-stream-exporter: measures where streamed LLM answers stall"};
  app.set_version_flag("--version", std::string("llm_stream_exporter ") + LSE_VERSION +
                                        " (revision " + LSE_REVISION + ")");
  std::string log_level = "info", log_format = "logfmt";
  app.add_option("--log.level", log_level, "debug, info, warn, error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app.add_option("--log.format", log_format, "logfmt or json")
      ->check(CLI::IsMember({"logfmt", "json"}));

  // Top-level flags (--log.*) are accepted after a subcommand too
  // (`serve --log.level=debug`), as manifests and the Dockerfile write them.
  app.fallthrough();

  cli::ServeOptions serve_opts;
  cli::add_serve_command(app, serve_opts);

  cli::CheckConfigOptions check_opts;
  auto* check_cmd =
      app.add_subcommand("check-config",
                         "validate a config file and exit (0 ok, 2 invalid); lists each target's "
                         "api, request URL and key header. api values: " +
                             api::dialect_list());
  cli::add_check_config_options(*check_cmd, check_opts);
  add_config_file_alternative(*check_cmd, check_opts.path);

  cli::RunOptions run_opts;
  auto* run_cmd = cli::add_run_command(app, run_opts);
  cli::CompareOptions compare_opts;
  auto* compare_cmd = cli::add_compare_command(app, compare_opts);
  cli::ReportOptions report_opts;
  auto* report_cmd = cli::add_report_command(app, report_opts);

  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  cli::setup_logging(log_level, log_format);

  if (check_cmd->parsed()) return cli::check_config_command(check_opts);
  if (run_cmd->parsed())
    return cli::run_command(run_opts, service::user_agent(), service::host_label());
  if (compare_cmd->parsed()) return cli::compare_command(compare_opts);
  if (report_cmd->parsed()) return cli::report_command(report_opts);
  return cli::serve_command(serve_opts);
}
