// serve's probe flags: --probe.wakeup-window takes a duration up to 20ms (0
// turns the coalescing off) and reaches the probe threads' settings;
// --shard.index (a number or auto) and --shard.count give the shard.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/serve_command.hpp"

namespace {

using namespace std::chrono_literals;

// Parses serve's flags as the command line would; false when CLI11 refused them.
bool parse(std::vector<std::string> args, lse::cli::ServeOptions& options) {
  CLI::App app;
  lse::cli::add_serve_command(app, options);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError&) {
    return false;
  }
  return true;
}

TEST(ServeFlags, TheWakeupWindowIsTwoMillisecondsByDefault) {
  lse::cli::ServeOptions o;
  ASSERT_TRUE(parse({}, o));
  EXPECT_EQ(lse::cli::probe_options(o).wakeup.window, 2ms);
}

TEST(ServeFlags, TheWakeupWindowTakesADurationOrZero) {
  lse::cli::ServeOptions o;
  ASSERT_TRUE(parse({"--probe.wakeup-window", "500us"}, o));
  EXPECT_EQ(lse::cli::probe_options(o).wakeup.window, 500us);
  lse::cli::ServeOptions off;
  ASSERT_TRUE(parse({"--probe.wakeup-window", "0"}, off));
  EXPECT_EQ(lse::cli::probe_options(off).wakeup.window, 0ns);
  lse::cli::ServeOptions threads;
  ASSERT_TRUE(parse({"--probe.threads", "3"}, threads));
  EXPECT_EQ(lse::cli::probe_options(threads).threads, 3u);
}

TEST(ServeFlags, AWakeupWindowAbove20msOrNotADurationIsRefused) {
  for (const char* bad : {"21ms", "1s", "2", "fast", "-1ms", ""}) {
    lse::cli::ServeOptions o;
    EXPECT_FALSE(parse({"--probe.wakeup-window", bad}, o)) << bad;
  }
  lse::cli::ServeOptions edge;
  EXPECT_TRUE(parse({"--probe.wakeup-window", "20ms"}, edge));
}

}  // namespace

namespace {

// Sets (or unsets, with nullptr) POD_NAME for one test.
class PodNameEnv {
 public:
  explicit PodNameEnv(const char* value) {
    if (const char* old = std::getenv("POD_NAME")) old_ = old;
    value ? ::setenv("POD_NAME", value, 1) : ::unsetenv("POD_NAME");
  }
  ~PodNameEnv() { old_ ? ::setenv("POD_NAME", old_->c_str(), 1) : ::unsetenv("POD_NAME"); }
  PodNameEnv(const PodNameEnv&) = delete;
  PodNameEnv& operator=(const PodNameEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

TEST(ServeFlags, NotShardedByDefault) {
  lse::cli::ServeOptions o;
  ASSERT_TRUE(parse({}, o));
  EXPECT_EQ(lse::cli::probe_options(o).shard, (lse::shard::Shard{0, 1}));
}

TEST(ServeFlags, ShardFlagsOnServeAndOnTheTopLevel) {
  lse::cli::ServeOptions o;
  ASSERT_TRUE(parse({"serve", "--shard.index", "1", "--shard.count", "3"}, o));
  EXPECT_EQ(lse::cli::probe_options(o).shard, (lse::shard::Shard{1, 3}));
  lse::cli::ServeOptions top;
  ASSERT_TRUE(parse({"--shard.index=2", "--shard.count=4"}, top));
  EXPECT_EQ(lse::cli::probe_options(top).shard, (lse::shard::Shard{2, 4}));
}

TEST(ServeFlags, AutoShardIndexIsTheOrdinalOfPodName) {
  const PodNameEnv env("llm-stream-exporter-2");
  lse::cli::ServeOptions o;
  ASSERT_TRUE(parse({"--shard.index=auto", "--shard.count=3"}, o));
  EXPECT_EQ(lse::cli::probe_options(o).shard, (lse::shard::Shard{2, 3}));
}

TEST(ServeFlags, AShardThatCannotBeIsRefusedNamingTheValue) {
  lse::cli::ServeOptions negative;
  EXPECT_FALSE(parse({"--shard.count", "-1"}, negative));
  lse::cli::ServeOptions out_of_range;
  ASSERT_TRUE(parse({"--shard.index", "2", "--shard.count", "2"}, out_of_range));
  EXPECT_THROW(lse::cli::probe_options(out_of_range), std::invalid_argument);
  const PodNameEnv env("exporter");
  lse::cli::ServeOptions no_ordinal;
  ASSERT_TRUE(parse({"--shard.index=auto", "--shard.count=2"}, no_ordinal));
  try {
    lse::cli::probe_options(no_ordinal);
    ADD_FAILURE() << "accepted POD_NAME=exporter";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("env POD_NAME 'exporter'"), std::string::npos) << e.what();
  }
}

}  // namespace
