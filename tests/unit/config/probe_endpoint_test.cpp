// `probe_endpoint:` (GET /probe?target=): its default, its bounds with the
// error at the value (file:line:col), an unknown key as a typo, and the
// dump reading back.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "config/config.hpp"

namespace lse::config {
namespace {

const std::string kHead =
    "prompts: {p: {text: hi}}\n"
    "targets: [{name: a, url: 'http://h', model: m, prompts: [p]}]\n";

TEST(ProbeEndpointConfig, DefaultsToTwoAtOnce) {
  EXPECT_EQ(parse(kHead, "f.yaml", "").probe_endpoint.max_concurrent, 2u);
}

TEST(ProbeEndpointConfig, TakesZeroToTheCap) {
  EXPECT_EQ(parse(kHead + "probe_endpoint: {max_concurrent: 0}\n", "f.yaml", "")
                .probe_endpoint.max_concurrent,
            0u);
  EXPECT_EQ(parse(kHead + "probe_endpoint: {max_concurrent: 64}\n", "f.yaml", "")
                .probe_endpoint.max_concurrent,
            64u);
}

TEST(ProbeEndpointConfig, OutOfRangeIsAnErrorAtTheValue) {
  for (const std::string bad : {"-1", "65", "two"}) {
    std::string yaml = kHead;
    yaml.append("probe_endpoint:\n  max_concurrent: ").append(bad).append("\n");
    try {
      parse(yaml, "f.yaml", "");
      FAIL() << bad << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.line(), 4) << e.what();
      EXPECT_EQ(e.column(), 19) << e.what();
      EXPECT_NE(std::string(e.what()).find("max_concurrent"), std::string::npos) << e.what();
    }
  }
}

TEST(ProbeEndpointConfig, UnknownKeyIsRefused) {
  try {
    parse(kHead + "probe_endpoint: {max_concurent: 3}\n", "f.yaml", "");
    FAIL() << "typo accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 3) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_concurrent"), std::string::npos) << e.what();
  }
}

TEST(ProbeEndpointConfig, DumpReadsBack) {
  const Config c = parse(kHead + "probe_endpoint: {max_concurrent: 5}\n", "f.yaml", "");
  const YAML::Node dumped = YAML::Load(dump_redacted(c))["probe_endpoint"];
  ASSERT_TRUE(dumped) << dump_redacted(c);
  EXPECT_EQ(dumped["max_concurrent"].as<int>(), 5);
  std::string again = kHead;
  again.append("probe_endpoint: {max_concurrent: ")
      .append(dumped["max_concurrent"].as<std::string>())
      .append("}\n");
  EXPECT_EQ(parse(again, "f.yaml", "").probe_endpoint, c.probe_endpoint);
}

}  // namespace
}  // namespace lse::config
