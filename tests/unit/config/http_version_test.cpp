// http_version and the HTTP/2 windows (`http2:`): per target and in
// `defaults:`, the browser's "auto" when unset, byte sizes in both forms,
// range and spelling errors at their line and column, reload equality and
// the dump.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "config/config.hpp"

namespace lse::config {
namespace {

constexpr const char* kHead = "min_interval: 1s\n";

Config parse_text(const std::string& yaml) { return parse(kHead + yaml, "h2.yaml", ""); }

std::string one_target(const std::string& settings) {
  return "targets:\n"
         "  - name: t\n"
         "    url: https://api.example.test/v1\n"
         "    model: m\n" +
         settings;
}

TEST(HttpVersion, UnsetIsHttp11ForPlainAndAutoForBrowser) {
  const Config c = parse_text(
      "targets:\n"
      "  - {name: plain, url: https://a.test/v1, model: m}\n"
      "  - {name: browser, url: https://a.test/v1, model: m, client: browser}\n");
  EXPECT_FALSE(c.targets[0].http_version.has_value());
  EXPECT_EQ(effective_http_version(c.targets[0]), HttpVersion::v1_1);
  EXPECT_EQ(effective_http_version(c.targets[1]), HttpVersion::automatic);
  EXPECT_EQ(c.targets[0].http2.stream_window, 6u << 20);
  EXPECT_EQ(c.targets[0].http2.connection_window, 15u << 20);
}

TEST(HttpVersion, EachSpellingAndTheTargetOverridesDefaults) {
  const Config c = parse_text(
      "defaults:\n"
      "  http_version: \"2\"\n"
      "targets:\n"
      "  - {name: inherits, url: https://a.test/v1, model: m}\n"
      "  - {name: one, url: https://a.test/v1, model: m, http_version: \"1.1\"}\n"
      "  - {name: bare, url: https://a.test/v1, model: m, http_version: 1.1}\n"
      "  - {name: auto, url: https://a.test/v1, model: m, http_version: auto}\n"
      "  - {name: browser-one, url: https://a.test/v1, model: m, client: browser,\n"
      "     http_version: \"1.1\"}\n");
  EXPECT_EQ(effective_http_version(c.targets[0]), HttpVersion::v2);
  EXPECT_EQ(effective_http_version(c.targets[1]), HttpVersion::v1_1);
  EXPECT_EQ(effective_http_version(c.targets[2]), HttpVersion::v1_1);
  EXPECT_EQ(effective_http_version(c.targets[3]), HttpVersion::automatic);
  // An explicit version wins over the browser's default.
  EXPECT_EQ(effective_http_version(c.targets[4]), HttpVersion::v1_1);
}

TEST(HttpVersion, WindowsTakeByteSizesAndMergeFieldByField) {
  const Config c = parse_text(
      "defaults:\n"
      "  http2: {stream_window: 1MiB, connection_window: 2097152}\n"
      "targets:\n"
      "  - {name: inherits, url: https://a.test/v1, model: m}\n"
      "  - {name: own, url: https://a.test/v1, model: m, http2: {stream_window: 65535}}\n"
      "  - {name: max, url: https://a.test/v1, model: m,\n"
      "     http2: {connection_window: 2147483647}}\n");
  EXPECT_EQ(c.targets[0].http2.stream_window, 1u << 20);
  EXPECT_EQ(c.targets[0].http2.connection_window, 2u << 20);
  EXPECT_EQ(c.targets[1].http2.stream_window, 65535u);
  EXPECT_EQ(c.targets[1].http2.connection_window, 2u << 20);  // from defaults
  EXPECT_EQ(c.targets[2].http2.connection_window, 2147483647u);
}

// "file:line:col: message" of the one error a text makes.
std::string error_of(const std::string& yaml) {
  try {
    parse_text(yaml);
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.errors().size(), 1u) << e.what();
    return e.what();
  }
  return "parsed";
}

TEST(HttpVersion, UnknownVersionFailsAtItsValue) {
  // Lines count from the min_interval line that kHead adds.
  EXPECT_EQ(error_of(one_target("    http_version: 3\n")),
            "h2.yaml:6:19: http_version: must be \"1.1\", \"2\" or \"auto\", got '3'");
  EXPECT_EQ(error_of(one_target("    http_version: h2\n")),
            "h2.yaml:6:19: http_version: must be \"1.1\", \"2\" or \"auto\", got 'h2'");
  EXPECT_EQ(error_of("defaults:\n  http_version: [2]\n" + one_target("")),
            "h2.yaml:3:17: http_version: must be \"1.1\", \"2\" or \"auto\", got a list");
}

TEST(HttpVersion, WindowOutOfRangeOrUnknownKeyFailsAtItsPlace) {
  EXPECT_EQ(error_of(one_target("    http2: {stream_window: 65534}\n")),
            "h2.yaml:6:28: http2.stream_window: must be between 65535 and 2147483647 bytes "
            "(64KiB - 1 .. 2GiB - 1), got 65534");
  EXPECT_EQ(error_of(one_target("    http2:\n      connection_window: 2GiB\n")),
            "h2.yaml:7:26: http2.connection_window: must be between 65535 and 2147483647 bytes "
            "(64KiB - 1 .. 2GiB - 1), got 2147483648");
  EXPECT_EQ(error_of(one_target("    http2: {stream_window: lots}\n")),
            "h2.yaml:6:28: http2.stream_window: expected a size in bytes (e.g. 1048576, 64MiB, "
            "10MB), got 'lots'");
  const std::string unknown = error_of(one_target("    http2: {initial_window: 1MiB}\n"));
  EXPECT_EQ(unknown.rfind("h2.yaml:6:13: ", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("initial_window"), std::string::npos) << unknown;
}

TEST(HttpVersion, ReloadSeesAChangedVersionOrWindow) {
  const Config a = parse_text(one_target(""));
  const Config same = parse_text(one_target("    http_version: \"1.1\"\n"));
  const Config two = parse_text(one_target("    http_version: \"2\"\n"));
  const Config window = parse_text(one_target("    http2: {stream_window: 1MiB}\n"));
  // Setting the default explicitly is a change of the setting, not of what
  // goes on the wire; reload compares settings.
  EXPECT_NE(a.targets[0], same.targets[0]);
  EXPECT_NE(a.targets[0], two.targets[0]);
  EXPECT_NE(a.targets[0], window.targets[0]);
  EXPECT_EQ(two.targets[0], parse_text(one_target("    http_version: '2'\n")).targets[0]);
}

TEST(HttpVersion, DumpShowsTheVersionInEffectAndTheWindows) {
  const Config c = parse_text(
      "targets:\n"
      "  - {name: plain, url: https://a.test/v1, model: m}\n"
      "  - {name: browser, url: https://a.test/v1, model: m, client: browser,\n"
      "     http2: {stream_window: 1MiB}}\n");
  const YAML::Node dump = YAML::Load(dump_redacted(c));
  EXPECT_EQ(dump["targets"][0]["http_version"].as<std::string>(), "1.1");
  EXPECT_EQ(dump["targets"][1]["http_version"].as<std::string>(), "auto");
  EXPECT_EQ(dump["targets"][0]["http2"]["stream_window"].as<std::uint64_t>(), 6u << 20);
  EXPECT_EQ(dump["targets"][1]["http2"]["stream_window"].as<std::uint64_t>(), 1u << 20);
  EXPECT_EQ(dump["targets"][1]["http2"]["connection_window"].as<std::uint64_t>(), 15u << 20);
}

}  // namespace
}  // namespace lse::config
