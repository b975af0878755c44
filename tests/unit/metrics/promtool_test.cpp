// `promtool check metrics` (Prometheus 2.42, Debian's prometheus package) on
// what /metrics serves in the text format: it must find nothing to say. That
// promtool reads only the text format (an exemplar is a parse error to it,
// and it lints OpenMetrics `_created` lines as families without help), so the
// OpenMetrics output is checked by the strict reader here and by a real
// Prometheus in tests/integration/test_exemplars.py.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>

#include "metrics/metrics.hpp"
#include "metrics_fixtures.hpp"

namespace lse::metrics {
namespace {

std::string promtool_path() {
  for (const char* p : {"/usr/bin/promtool", "/usr/local/bin/promtool"})
    if (::access(p, X_OK) == 0) return p;
  return {};
}

// promtool's exit status and everything it printed, for `text` on its stdin.
std::pair<int, std::string> promtool_check(const std::string& promtool, const std::string& text) {
  char path[] = "/tmp/lse-promtool-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return {-1, "mkstemp failed"};
  ::close(fd);
  std::ofstream(path, std::ios::binary) << text;
  const std::string cmd = promtool + " check metrics < " + path + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (p && std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int status = p ? ::pclose(p) : -1;
  ::unlink(path);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(Promtool, FindsNothingInTheTextExposition) {
  const std::string promtool = promtool_path();
  if (promtool.empty()) GTEST_SKIP() << "promtool not installed (scripts/setup.sh installs it)";
  Metrics metrics{BuildInfo{"1.2.3", "abc"}};  // the real process_* reading
  std::vector<config::Target> targets;
  for (int i = 0; i < 10; ++i)
    targets.push_back(lse::testing::make_target(
        "target-" + std::to_string(i), "m\"\\" + std::to_string(i), {"short", "medium", "long"}));
  metrics.apply_config(lse::testing::make_config(targets));
  for (const auto& t : targets)
    for (const auto& p : t.prompts) {
      auto r = lse::testing::success(t.name, t.model, p);
      r.id = "0123456789abcdef";
      metrics.record(r);
    }
  const auto [status, output] = promtool_check(promtool, metrics.render(Exposition::text));
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, "");

  // It does lint: a counter without _total is reported (so an empty answer above means something).
  const auto [bad_status, bad_output] =
      promtool_check(promtool, "# HELP requests R.\n# TYPE requests counter\nrequests 1\n");
  EXPECT_NE(bad_output.find("counter metrics should have \"_total\" suffix"), std::string::npos)
      << bad_output;
  EXPECT_NE(bad_status, 0);
}

}  // namespace
}  // namespace lse::metrics
