// llm_stream_exporter: parses the command line (cli/app.hpp) and hands it to
// one function per subcommand (DESIGN §5); `serve` is the default.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "cli/app.hpp"
#include "cli/logging.hpp"
#include "service/identity.hpp"

namespace {

constexpr int kExitUsage = 2;  // what a bad command line exits with

}  // namespace

int main(int argc, char** argv) {
  using namespace lse;
  CLI::App app{"llm-stream-exporter: measures where streamed LLM answers stall"};
  app.set_version_flag("--version", std::string("llm_stream_exporter ") + LSE_VERSION +
                                        " (revision " + LSE_REVISION + ")");
  cli::AppOptions o;
  const cli::AppCommands cmd = cli::build_app(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (cmd.help->parsed()) return cli::help_command(app, o.help_topic, std::cout, std::cerr);
  cli::setup_logging(o.log_level, o.log_format);

  if (cmd.check_config->parsed()) return cli::check_config_command(o.check_config);
  if (cmd.run->parsed())
    return cli::run_command(o.run, service::user_agent(), service::host_label());
  if (cmd.compare->parsed()) return cli::compare_command(o.compare);
  if (cmd.report->parsed()) return cli::report_command(o.report);
  return cli::serve_command(o.serve);
}
