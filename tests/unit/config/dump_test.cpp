// dump_redacted: the effective config as YAML, with no secret in it.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "config/config.hpp"
#include "test_support.hpp"

namespace lse::config {
namespace {

class Dump : public ::testing::Test {
 protected:
  void SetUp() override { test::set_test_env(); }
};

TEST_F(Dump, NeverContainsSecretValues) {
  Config c = load_file(test::valid_dir() + "/full.yaml");
  std::string dump = dump_redacted(c);
  for (const char* secret : {test::kEnvSecret, "sk-file-secret-7f3a9c", "xapi-file-secret-51d2",
                             "literal-key-in-header"}) {
    EXPECT_EQ(dump.find(secret), std::string::npos) << secret << " leaked:\n" << dump;
  }
  EXPECT_NE(dump.find("<secret>"), std::string::npos);
  // Where a secret came from is not secret, and helps debugging.
  EXPECT_NE(dump.find("env LSE_TEST_SECRET"), std::string::npos);
}

TEST_F(Dump, IsYamlOfTheEffectiveConfig) {
  Config c = load_file(test::valid_dir() + "/full.yaml");
  YAML::Node root = YAML::Load(dump_redacted(c));
  EXPECT_EQ(root["listen"].as<std::string>(), "127.0.0.1:19687");
  ASSERT_EQ(root["targets"].size(), 4u);
  YAML::Node inherits = root["targets"][0];
  EXPECT_EQ(inherits["name"].as<std::string>(), "inherits");
  EXPECT_EQ(inherits["interval"].as<std::string>(), "1m30s");
  EXPECT_EQ(inherits["timeout"]["total"].as<std::string>(), "2m");
  EXPECT_EQ(inherits["stall_threshold"].as<std::string>(), "300ms");
  EXPECT_EQ(inherits["alert"]["ttft"].as<std::string>(), "8s");
  EXPECT_EQ(inherits["alert"]["worst_gap"].as<std::string>(), "1s");
  EXPECT_DOUBLE_EQ(inherits["alert"]["stall_share"].as<double>(), 0.3);
  EXPECT_EQ(inherits["auth"]["value"].as<std::string>(), "<secret>");
  EXPECT_EQ(inherits["headers"]["X-Team"].as<std::string>(), "probes");

  YAML::Node overrides = root["targets"][1];
  // Strings that look like numbers stay strings when read back.
  EXPECT_EQ(overrides["model"].Tag(), "!");
  EXPECT_EQ(overrides["model"].as<std::string>(), "7");
  EXPECT_EQ(overrides["headers"]["X-Api-Key"].as<std::string>(), "<secret>");
  EXPECT_EQ(overrides["body"]["temperature_str"].Tag(), "!");
  EXPECT_EQ(overrides["body"]["exp"].as<std::string>(), "1000.0");
  EXPECT_EQ(overrides["body"]["z_first"].as<int>(), 1);
  EXPECT_TRUE(overrides["body"]["nothing"].IsNull());
  EXPECT_EQ(overrides["prompts"].size(), 2u);

  // Labels as strings, the buckets under metrics: with the rest of that section.
  EXPECT_EQ(overrides["labels"]["provider"].as<std::string>(), "example");
  EXPECT_EQ(overrides["labels"]["team"].Tag(), "!");
  EXPECT_FALSE(inherits["labels"]);
  EXPECT_FALSE(root["buckets"]);
  EXPECT_EQ(root["metrics"]["buckets"]["gap"][1].as<std::string>(), "0.25");
  EXPECT_EQ(root["metrics"]["buckets"]["probe_max_gap"][1].as<std::string>(), "0.25");
  EXPECT_EQ(root["metrics"]["buckets"]["ttft"].size(), Buckets{}.ttft.size());
  EXPECT_EQ(root["metrics"]["phases"].as<std::string>(), "sum_count");
  EXPECT_EQ(root["metrics"]["per_prompt"].as<std::string>(), "false");
  EXPECT_EQ(root["metrics"]["max_series"].as<std::uint64_t>(), 5000u);
  EXPECT_EQ(root["metrics"]["max_scrape_bytes"].as<std::uint64_t>(), 32u << 20);
  EXPECT_EQ(root["metrics"]["native"]["schema"].as<int>(), 3);
  EXPECT_EQ(root["metrics"]["native"]["zero_threshold"].as<double>(), 1e-5);
  EXPECT_EQ(root["metrics"]["native"]["max_buckets"].as<int>(), 160);
  EXPECT_EQ(root["metrics"]["classic"].as<std::string>(), "true");
  EXPECT_EQ(root["rows"]["max_size"].as<std::uint64_t>(), 10'000'000u);
  EXPECT_EQ(root["diagnosis"]["queue_gap_p95_seconds"].as<std::string>(), "100ms");
  EXPECT_EQ(root["prompts"]["block"]["text"].as<std::string>(), "Line one.\nLine two.");
}

TEST_F(Dump, RedactsCredentialKeysAndLoadedSecretsInsideTheBody) {
  const std::string yaml =
      "prompts: {p: {text: hi}}\n"
      "targets:\n"
      "  - name: a\n"
      "    url: https://h\n"
      "    model: m\n"
      "    auth: {bearer_token_env: LSE_TEST_SECRET}\n"
      "    headers: {X-Copy: 'Bearer env-secret-9b1e44'}\n"
      "    body:\n"
      "      api_key: body-key-1\n"
      "      accessToken: body-token-2\n"
      "      nested: {Client_SECRET: body-secret-3, list: [{PASSWORD: body-password-4}]}\n"
      "      credentials: {value: env-secret-9b1e44}\n"
      "      copy: [env-secret-9b1e44]\n"
      "      max_tokens: 77\n"
      "      generationConfig: {maxOutputTokens: 88}\n"
      "      user: visible-user\n";
  const Config c = parse(yaml, "b.yaml", "");
  const std::string dump = dump_redacted(c);
  for (const char* secret :
       {"body-key-1", "body-token-2", "body-secret-3", "body-password-4", test::kEnvSecret}) {
    EXPECT_EQ(dump.find(secret), std::string::npos) << secret << " leaked:\n" << dump;
  }
  const YAML::Node body = YAML::Load(dump)["targets"][0]["body"];
  EXPECT_EQ(body["api_key"].as<std::string>(), "<secret>");
  EXPECT_EQ(body["accessToken"].as<std::string>(), "<secret>");
  EXPECT_EQ(body["nested"]["Client_SECRET"].as<std::string>(), "<secret>");
  EXPECT_EQ(body["nested"]["list"][0]["PASSWORD"].as<std::string>(), "<secret>");
  EXPECT_EQ(body["credentials"]["value"].as<std::string>(), "<secret>");
  EXPECT_EQ(body["copy"][0].as<std::string>(), "<secret>");
  // Counts of tokens are not credentials; ordinary values stay visible.
  EXPECT_EQ(body["max_tokens"].as<int>(), 77);
  EXPECT_EQ(body["generationConfig"]["maxOutputTokens"].as<int>(), 88);
  EXPECT_EQ(body["user"].as<std::string>(), "visible-user");
  // A header whose name looks harmless still hides a loaded secret.
  EXPECT_EQ(YAML::Load(dump)["targets"][0]["headers"]["X-Copy"].as<std::string>(), "<secret>");
}

// The dumped metrics section reads back as the same settings, `native: false` too.
TEST_F(Dump, NativeHistogramSettingsReadBack) {
  const std::string rest =
      "prompts: {p: {text: hi}}\ntargets: [{name: a, url: 'http://h', model: m}]\n";
  for (const std::string metrics :
       {"metrics: {native: {schema: -2, zero_threshold: 0.001, max_buckets: 12}, classic: false}\n",
        "metrics: {native: false}\n"}) {
    const Config c = parse(metrics + rest, "f.yaml", "");
    YAML::Node metrics_only;
    metrics_only["metrics"] = YAML::Load(dump_redacted(c))["metrics"];
    const Config again = parse(YAML::Dump(metrics_only) + "\n" + rest, "dump.yaml", "");
    EXPECT_EQ(again.metrics, c.metrics) << metrics;
  }
}

TEST(SensitiveHeader, MatchesCredentialLikeNames) {
  for (const char* name :
       {"Authorization", "proxy-authorization", "X-Api-Key", "api-key", "X-Auth-Token", "Cookie",
        "Set-Cookie", "X-Client-Secret", "Ocp-Apim-Subscription-Key", "x-portkey-api-key",
        "Helicone-Auth", "X_Custom_Token", "x-goog-api-key"}) {
    EXPECT_TRUE(is_sensitive_header(name)) << name;
  }
  for (const char* name :
       {"X-Team", "Accept", "User-Agent", "X-Request-Id", "OpenAI-Organization"}) {
    EXPECT_FALSE(is_sensitive_header(name)) << name;
  }
}

// Judged by the name's words, never by a substring of another word: "key"
// in "portkey", "auth" in "author", "token" in "tokens".
TEST(SensitiveHeader, ASubstringOfAnotherWordIsNoCredential) {
  for (const char* name :
       {"x-portkey-provider", "x-portkey-custom-host", "X-Portkey-Trace-Id", "x-keyboard-layout",
        "X-Author", "x-max-tokens", "x-authority-region", "Helicone-Property-Session"}) {
    EXPECT_FALSE(is_sensitive_header(name)) << name;
  }
}

TEST(SensitiveHeader, PortkeyHeadersAreShownAndItsKeyIsMasked) {
  const std::string yaml =
      "prompts: {p: {text: hi}}\n"
      "targets:\n"
      "  - name: a\n"
      "    url: http://127.0.0.1:18799\n"
      "    model: m\n"
      "    headers: {x-portkey-provider: openai, x-portkey-custom-host: 'http://127.0.0.1:18799',\n"
      "              x-portkey-api-key: pk-literal-6e21a0, Helicone-Auth: 'Bearer hel-5c8d'}\n";
  const Config c = parse(yaml, "p.yaml", "");
  const YAML::Node headers = YAML::Load(dump_redacted(c))["targets"][0]["headers"];
  EXPECT_EQ(headers["x-portkey-provider"].as<std::string>(), "openai");
  EXPECT_EQ(headers["x-portkey-custom-host"].as<std::string>(), "http://127.0.0.1:18799");
  EXPECT_EQ(headers["x-portkey-api-key"].as<std::string>(), "<secret>");
  EXPECT_EQ(headers["Helicone-Auth"].as<std::string>(), "<secret>");
}

}  // namespace
}  // namespace lse::config
