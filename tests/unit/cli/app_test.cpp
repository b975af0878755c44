// The command line: every flag a subcommand takes is listed by its --help
// (serve's --log.* included), a flag it does not list is refused, and `help`
// / `help COMMAND` print what --help prints.
#include "cli/app.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace lse::cli {
namespace {

struct Built {
  CLI::App app{"llm-stream-exporter"};
  AppOptions options;
  AppCommands commands;
  Built() { commands = build_app(app, options); }
  // Parses like main does (argv without the program name); false when refused.
  bool parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    try {
      app.parse(args);
    } catch (const CLI::ParseError&) {
      return false;
    }
    return true;
  }
};

// Every name the command line takes for `cmd` ("--config.file", "-h",
// "args"), its option groups' included.
std::set<std::string> accepted(const CLI::App& cmd) {
  std::set<std::string> names;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const auto& l : o->get_lnames()) names.insert("--" + l);
    for (const auto& s : o->get_snames()) names.insert("-" + s);
    if (o->get_lnames().empty() && o->get_snames().empty()) names.insert(o->get_name());
  }
  for (const CLI::App* group :
       cmd.get_subcommands([](const CLI::App* a) { return a->get_name().empty(); })) {
    const auto more = accepted(*group);
    names.insert(more.begin(), more.end());
  }
  return names;
}

std::vector<const CLI::App*> commands_of(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* a) { return !a->get_name().empty(); });
}

TEST(App, EveryFlagASubcommandTakesIsInItsHelp) {
  Built b;
  const auto commands = commands_of(b.app);
  ASSERT_EQ(commands.size(), 6u);  // serve, check-config, run, compare, report, help
  for (const CLI::App* cmd : commands) {
    const std::string help = cmd->help();
    const auto names = accepted(*cmd);
    EXPECT_GE(names.size(), 2u) << cmd->get_name();
    for (const auto& name : names)
      EXPECT_NE(help.find(name), std::string::npos) << cmd->get_name() << " --help lacks " << name;
    // A subcommand takes nothing from the top level it does not list itself.
    EXPECT_FALSE(cmd->get_fallthrough()) << cmd->get_name();
  }
}

TEST(App, EveryCommandButHelpTakesTheLogFlags) {
  Built b;
  for (const CLI::App* cmd : commands_of(b.app)) {
    if (cmd->get_name() == "help") continue;
    const auto names = accepted(*cmd);
    EXPECT_EQ(names.count("--log.level"), 1u) << cmd->get_name();
    EXPECT_EQ(names.count("--log.format"), 1u) << cmd->get_name();
  }
  Built after;
  ASSERT_TRUE(after.parse({"serve", "--log.level=debug", "--log.format", "json"}));
  EXPECT_EQ(after.options.log_level, "debug");
  EXPECT_EQ(after.options.log_format, "json");
  Built before;
  ASSERT_TRUE(before.parse({"--log.level", "warn", "run", "--runs", "3"}));
  EXPECT_EQ(before.options.log_level, "warn");
  EXPECT_EQ(before.options.run.runs, 3);
  Built bad;
  EXPECT_FALSE(bad.parse({"serve", "--log.level=loud"}));
}

TEST(App, AFlagACommandDoesNotListIsRefused) {
  Built run;
  EXPECT_FALSE(run.parse({"run", "--dry-run"}));  // serve's, not run's
  Built compare;
  EXPECT_FALSE(compare.parse({"compare", "a.jsonl", "--web.listen-address", ":1"}));
  Built serve;
  EXPECT_TRUE(serve.parse({"--dry-run"}));  // serve is the default: its flags at the top
  EXPECT_TRUE(serve.options.serve.dry_run);
}

TEST(App, HelpPrintsTheProgramsOrOneCommandsHelp) {
  Built b;
  ASSERT_TRUE(b.parse({"help"}));
  EXPECT_TRUE(b.commands.help->parsed());
  std::ostringstream out, err;
  EXPECT_EQ(help_command(b.app, b.options.help_topic, out, err), 0);
  // The program's help: every command with its description, not `help`'s own.
  for (const CLI::App* cmd : commands_of(b.app))
    EXPECT_NE(out.str().find(cmd->get_description().substr(0, 30)), std::string::npos)
        << cmd->get_name() << "\n"
        << out.str();
  EXPECT_NE(out.str().find("Subcommands:"), std::string::npos) << out.str();

  Built one;
  ASSERT_TRUE(one.parse({"help", "serve"}));
  std::ostringstream serve_out, serve_err;
  EXPECT_EQ(help_command(one.app, one.options.help_topic, serve_out, serve_err), 0);
  Built flag;
  ASSERT_FALSE(flag.parse({"serve", "--help"}));  // CLI11 ends --help with a CallForHelp
  EXPECT_EQ(serve_out.str(), flag.commands.serve->help(flag.app.get_name()));
  EXPECT_NE(serve_out.str().find("--log.level"), std::string::npos) << serve_out.str();
  EXPECT_NE(serve_out.str().find("--web.listen-address"), std::string::npos);

  std::ostringstream none_out, none_err;
  EXPECT_EQ(help_command(b.app, "nope", none_out, none_err), 2);
  EXPECT_EQ(none_out.str(), "");
  EXPECT_NE(none_err.str().find("no command 'nope'"), std::string::npos);
}

}  // namespace
}  // namespace lse::cli
