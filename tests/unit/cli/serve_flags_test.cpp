// serve's probe flags: --probe.wakeup-window takes a duration up to 20ms (0
// turns the coalescing off) and reaches the probe threads' settings.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
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
