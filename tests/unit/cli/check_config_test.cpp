// check-config's line per target: dialect, where it posts, where the key goes
// (the key's source, never its value), and no query or userinfo shown; its
// summary in singular and plural; every error of a file then the count;
// warnings that do not fail; --no-env-check; the listen address tried.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../util/within_deadline.hpp"
#include "cli/check_config_command.hpp"

namespace lse::cli {
namespace {

config::Target target(api::Dialect dialect, std::string url) {
  config::Target t;
  t.name = "t";
  t.url = std::move(url);
  t.model = "m-1";
  t.api = dialect;
  return t;
}

TEST(CheckConfig, DescribesEachDialectsRequestAndKeyHeader) {
  auto claude = target(api::Dialect::anthropic_messages, "https://api.anthropic.com/v1");
  claude.auth.kind = config::Auth::Kind::bearer;
  claude.auth.secret = {"sk-ant-value", "env ANTHROPIC_API_KEY"};
  EXPECT_EQ(describe_target(claude),
            "t: anthropic-messages POST https://api.anthropic.com/v1/messages, model m-1, key in "
            "x-api-key (env ANTHROPIC_API_KEY)");

  auto gem = target(api::Dialect::gemini, "https://g.example/v1beta?key=q5ecret");
  gem.auth.kind = config::Auth::Kind::bearer;
  gem.auth.secret = {"AIza-value", "file /run/key"};
  EXPECT_EQ(describe_target(gem),
            "t: gemini POST https://g.example/v1beta/models/m-1:streamGenerateContent?alt=sse, "
            "model m-1, key in x-goog-api-key (file /run/key)");

  auto azure = target(api::Dialect::openai_chat, "https://r.openai.azure.com/d?api-version=1");
  azure.auth.kind = config::Auth::Kind::header;
  azure.auth.header_name = "api-key";
  azure.auth.secret = {"az-value", "env AZURE_OPENAI_API_KEY"};
  EXPECT_EQ(describe_target(azure),
            "t: openai-chat POST https://r.openai.azure.com/d/chat/completions, model m-1, key in "
            "api-key (env AZURE_OPENAI_API_KEY)");

  EXPECT_EQ(describe_target(target(api::Dialect::ollama_generate, "http://localhost:11434")),
            "t: ollama-generate POST http://localhost:11434/api/generate, model m-1, no key");
}

// The HTTP version in effect ends the line when it is not 1.1: a browser's
// "auto" when unset, or what the target sets.
TEST(CheckConfig, NamesAnHttpVersionOtherThan11) {
  auto t = target(api::Dialect::openai_chat, "https://api.example.test/v1");
  t.client = config::ClientStyle::browser;
  EXPECT_EQ(describe_target(t),
            "t: openai-chat POST https://api.example.test/v1/chat/completions, model m-1, no key, "
            "http_version auto");
  t.http_version = config::HttpVersion::v2;
  EXPECT_EQ(describe_target(t),
            "t: openai-chat POST https://api.example.test/v1/chat/completions, model m-1, no key, "
            "http_version 2");
  t.http_version = config::HttpVersion::v1_1;
  EXPECT_EQ(describe_target(t),
            "t: openai-chat POST https://api.example.test/v1/chat/completions, model m-1, no key");
}

TEST(CheckConfig, SummaryLineSaysOneTargetNotOneTargetsAndCountsEverySeries) {
  config::Config c;
  c.prompts["p"] = {"p", "hi", "inline"};
  c.targets = {target(api::Dialect::openai_chat, "http://h")};
  c.targets[0].prompts = {"p"};
  // One series set (300 + 6 finish reasons), 7 per target, 6 of the
  // exporter's own and 6 process_*; finish reasons appear on first sight.
  EXPECT_EQ(summary_line("f.yaml", c),
            "f.yaml: ok (1 target, 1 prompt, 322 series at start, at most 328)");
  c.prompts["q"] = {"q", "ho", "inline"};
  c.targets.push_back(c.targets[0]);
  c.targets[1].prompts = {"p", "q"};
  EXPECT_EQ(summary_line("f.yaml", c),
            "f.yaml: ok (2 targets, 2 prompts, 929 series at start, at most 947)");
  // The number is config::series_count's: the metrics section moves it.
  c.metrics.per_prompt = false;
  c.metrics.phases = config::PhaseSeries::off;
  EXPECT_EQ(summary_line("f.yaml", c),
            fmt::format("f.yaml: ok (2 targets, 2 prompts, {} series at start, at most {})",
                        config::series_count(c).at_start, config::series_count(c).at_most));
  // Native only: a histogram is one series, failure reasons appear on first sight.
  auto native_only = c;
  native_only.metrics.classic = false;
  EXPECT_EQ(summary_line("f.yaml", native_only),
            fmt::format("f.yaml: ok (2 targets, 2 prompts, {} series at start, at most {})",
                        config::series_count(native_only).at_start,
                        config::series_count(native_only).at_most));
  EXPECT_LT(config::series_count(native_only).at_most, config::series_count(c).at_start);
  for (int i = 0; i < 10; ++i) c.targets.push_back(c.targets[0]);
  EXPECT_EQ(summary_line("f.yaml", c),
            "f.yaml: ok (12 targets, 2 prompts, 2,475 series at start, at most 2,547)");
}

TEST(CheckConfigOptions, FileAndNoEnvCheckFromTheCommandLine) {
  CLI::App app;
  auto* cmd = app.add_subcommand("check-config");
  CheckConfigOptions o;
  add_check_config_options(*cmd, o);
  const char* argv[] = {"x", "check-config", "--no-env-check", "c.yaml"};
  app.parse(4, const_cast<char**>(argv));
  EXPECT_EQ(o.path, "c.yaml");
  EXPECT_TRUE(o.no_env_check);

  CheckConfigOptions plain;
  CLI::App app2;
  add_check_config_options(*app2.add_subcommand("check-config"), plain);
  const char* argv2[] = {"x", "check-config", "d.yaml"};
  app2.parse(3, const_cast<char**>(argv2));
  EXPECT_EQ(plain.path, "d.yaml");
  EXPECT_FALSE(plain.no_env_check);
}

struct Checked {
  int exit_code;
  std::string out, err;
};

Checked check(const std::string& path, bool no_env_check = false) {
  std::ostringstream out, err;
  const int rc = check_config_command(CheckConfigOptions{path, no_env_check}, out, err);
  return {rc, out.str(), err.str()};
}

// A config file in a fresh temporary folder.
class TempConfig {
 public:
  explicit TempConfig(const std::string& text) {
    char dir[] = "/tmp/lse-check-config-XXXXXX";
    dir_ = ::mkdtemp(dir);
    path_ = dir_ + "/c.yaml";
    std::ofstream(path_) << text;
  }
  ~TempConfig() { std::filesystem::remove_all(dir_); }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

TEST(CheckConfig, ReportsEveryErrorThenTheCount) {
  const std::string path = std::string(LSE_TEST_DATA) + "/config/multi/several-errors.yaml";
  const Checked c = check(path);
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_EQ(c.out, "");
  std::vector<std::string> lines;
  std::istringstream in(c.err);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 11u) << c.err;
  EXPECT_EQ(lines[0].rfind(path + ":1:9: listen port", 0), 0u) << lines[0];
  EXPECT_EQ(lines[9].rfind(path + ":22:1: unknown key 'bukets'", 0), 0u) << lines[9];
  EXPECT_EQ(lines[10], "10 errors");

  TempConfig one("listen: 127.0.0.1:0\nprompts: {p: {text: hi}}\ntargets: []\n");
  EXPECT_EQ(check(one.path()).err,
            one.path() + ":3:10: targets: must list at least one target\n1 error\n");
}

TEST(CheckConfig, WarningsGoToStderrAndDoNotFail) {
  TempConfig cfg(
      "listen: 127.0.0.1:0\nprompts: {p: {text: hi}}\n"
      "targets: [{name: a, url: 'http://h', model: m, stall_threshold: 260ms}]\n");
  const Checked c = check(cfg.path());
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.err.rfind(cfg.path() + ":3:65: warning: stall_threshold: 260ms is not a bucket "
                                     "boundary of buckets.gap (nearest boundaries: 250ms below, "
                                     "300ms above)",
                        0),
            0u)
      << c.err;
  EXPECT_EQ(
      c.out.rfind(cfg.path() + ": ok (1 target, 1 prompt, 322 series at start, at most 328)\n", 0),
      0u)
      << c.out;
}

// Each prompt's line says where its text came from: the built-in set, a file
// beside the config that overrides one of them, or the config itself.
TEST(CheckConfig, SaysWhereEachPromptCameFrom) {
  TempConfig built_in("listen: 127.0.0.1:0\ntargets: [{name: a, url: 'http://h', model: m}]\n");
  const std::string dir = std::filesystem::path(built_in.path()).parent_path().string();
  std::filesystem::create_directory(dir + "/prompts");
  std::ofstream(dir + "/prompts/long.txt") << "A long question?\n";
  const Checked c = check(built_in.path());
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, built_in.path() +
                       ": ok (1 target, 3 prompts, 922 series at start, at most 940)\n"
                       "  a: openai-chat POST http://h/chat/completions, model m, "
                       "no key\n"
                       "  prompt long: file " +
                       dir +
                       "/prompts/long.txt\n"
                       "  prompt medium: built in\n"
                       "  prompt short: built in\n");
  TempConfig in_config(
      "listen: 127.0.0.1:0\nprompts: {p: {text: hi}}\n"
      "targets: [{name: a, url: 'http://h', model: m}]\n");
  EXPECT_NE(check(in_config.path()).out.find("\n  prompt p: in the config\n"), std::string::npos);
}

TEST(CheckConfig, NoEnvCheckListsSecretsAsNotChecked) {
  unsetenv("LSE_CHECK_CONFIG_TEST_UNSET");
  TempConfig cfg(
      "listen: 127.0.0.1:0\nprompts: {p: {text: hi}}\n"
      "targets:\n"
      "  - {name: a, url: 'https://h', model: m, auth: {bearer_token_env: "
      "LSE_CHECK_CONFIG_TEST_UNSET}}\n"
      "  - {name: b, url: 'https://h', model: m, auth: {bearer_token_file: /run/absent/key}}\n");
  const Checked strict = check(cfg.path());
  EXPECT_EQ(strict.exit_code, 2);
  EXPECT_NE(strict.err.find("2 errors"), std::string::npos) << strict.err;

  const Checked lenient = check(cfg.path(), /*no_env_check=*/true);
  EXPECT_EQ(lenient.exit_code, 0) << lenient.err;
  EXPECT_EQ(lenient.err, "");
  EXPECT_NE(lenient.out.find(cfg.path() +
                             ":4:68: not checked: auth.bearer_token_env: environment variable "
                             "LSE_CHECK_CONFIG_TEST_UNSET\n"),
            std::string::npos)
      << lenient.out;
  EXPECT_NE(lenient.out.find(cfg.path() + ":5:69: not checked: auth.bearer_token_file: secret "
                                          "file '/run/absent/key'\n"),
            std::string::npos)
      << lenient.out;
}

// A prompt file on /dev/zero once made check-config read until memory ran
// out: now it is refused at once, at the file: value, without being read.
TEST(CheckConfig, APromptFileOnDevZeroFailsAtOnce) {
  TempConfig cfg(
      "listen: 127.0.0.1:0\nprompts: {p: {file: /dev/zero}}\n"
      "targets: [{name: a, url: 'http://h', model: m}]\n");
  const auto start = std::chrono::steady_clock::now();
  const auto got = lse::test::within_deadline(std::chrono::seconds(10), [&] {
    const Checked c = check(cfg.path());
    return std::to_string(c.exit_code) + "|" + c.out + "|" + c.err;
  });
  ASSERT_TRUE(got.has_value()) << "check-config did not end within 10s";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(*got, "2||" + cfg.path() +
                      ":2:21: prompts.p.file: cannot read '/dev/zero': is not a regular file "
                      "(character device)\n1 error\n");
}

// Beside a running exporter (here: a socket the test binds and listens on)
// the address is taken: a warning on stderr, exit 0, the config reported ok.
TEST(CheckConfig, ListenAddressInUseIsAWarningNotAnError) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string listen = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  TempConfig cfg("listen: \"" + listen +
                 "\"\nprompts: {p: {text: hi}}\ntargets: [{name: a, url: 'http://h', model: m}]\n");
  const Checked c = check(cfg.path());
  ::close(fd);
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.err, cfg.path() + ":1:9: warning: listen: cannot bind " + listen +
                       ": Address already in use (is the exporter already running? serve cannot "
                       "start beside it)\n");
  EXPECT_EQ(c.out.rfind(cfg.path() + ": ok (1 target, 1 prompt, ", 0), 0u) << c.out;
  const Checked free_again = check(cfg.path());
  EXPECT_EQ(free_again.exit_code, 0);
  EXPECT_EQ(free_again.err, "");
}

// Every other listen problem stays an error: an address this host does not
// have (TEST-NET-1) cannot be bound whatever runs here.
TEST(CheckConfig, ListenAddressNotOnThisHostFailsTheCheck) {
  TempConfig cfg(
      "listen: \"192.0.2.1:9687\"\nprompts: {p: {text: hi}}\n"
      "targets: [{name: a, url: 'http://h', model: m}]\n");
  const Checked c = check(cfg.path());
  EXPECT_EQ(c.exit_code, 2) << c.err;
  EXPECT_EQ(c.err, cfg.path() +
                       ":1:9: listen: cannot bind 192.0.2.1:9687: Cannot assign requested "
                       "address\n1 error\n");
}

// --shard.count N: each target's line ends with its shard (FNV-1a 64 of the
// name mod N: openai-mini 1, anthropic-haiku 0 of 2), then one line per
// shard with its targets and series; without it, nothing of shards.
TEST(CheckConfig, ShardCountShowsEachTargetsShardAndEachShardsSize) {
  TempConfig cfg(
      "listen: 127.0.0.1:0\n"
      "prompts: {short: {text: hi}}\n"
      "targets:\n"
      "  - {name: openai-mini, url: 'http://127.0.0.1:1/v1', model: m, prompts: [short]}\n"
      "  - {name: anthropic-haiku, url: 'http://127.0.0.1:1/v1', model: m, prompts: [short]}\n");
  std::ostringstream out, err;
  CheckConfigOptions o{cfg.path(), false};
  o.shard_count = 2;
  ASSERT_EQ(check_config_command(o, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("openai-mini: openai-chat POST http://127.0.0.1:1/v1/chat/completions, "
                      "model m, no key (shard 1 of 2)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("anthropic-haiku: openai-chat POST http://127.0.0.1:1/v1/chat/completions, "
                      "model m, no key (shard 0 of 2)\n"),
            std::string::npos)
      << text;
  // Each shard: one target's series plus the exporter's own, as
  // metrics.max_series counts them in that replica (328 = 313 + 15).
  EXPECT_NE(
      text.find(
          "shard 0 of 2: 1 target, 322 series at start, at most 328\nshard 1 of 2: 1 target, 322 "
          "series at start, at most 328\n"),
      std::string::npos)
      << text;
  const Checked plain = check(cfg.path());
  EXPECT_EQ(plain.out.find("shard"), std::string::npos) << plain.out;

  CLI::App app;
  CheckConfigOptions parsed;
  add_check_config_options(*app.add_subcommand("check-config"), parsed);
  const char* argv[] = {"x", "check-config", "c.yaml", "--shard.count", "3"};
  app.parse(5, const_cast<char**>(argv));
  EXPECT_EQ(parsed.shard_count, 3u);
  CLI::App zero_app;
  CheckConfigOptions zero;
  add_check_config_options(*zero_app.add_subcommand("check-config"), zero);
  const char* zero_argv[] = {"x", "check-config", "c.yaml", "--shard.count", "0"};
  EXPECT_THROW(zero_app.parse(5, const_cast<char**>(zero_argv)), CLI::ValidationError);
}

}  // namespace
}  // namespace lse::cli
