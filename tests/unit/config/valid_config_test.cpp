// Valid configs parse to the values DESIGN §4 promises: defaults inheritance
// and per-target overrides, durations, secrets from env and files, body typing
// and key order, default prompts, and the shipped config/example.yaml.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "config/config.hpp"
#include "test_support.hpp"

namespace lse::config {
namespace {

using namespace std::chrono_literals;

class ValidConfig : public ::testing::Test {
 protected:
  void SetUp() override { test::set_test_env(); }

  static const Target& target(const Config& c, const std::string& name) {
    for (const auto& t : c.targets) {
      if (t.name == name) return t;
    }
    throw std::runtime_error("no target " + name);
  }

  static std::string path_in(const std::string& dir, const std::string& rel) {
    return (std::filesystem::path(dir) / rel).lexically_normal().string();
  }
};

TEST_F(ValidConfig, TopLevelSections) {
  Config c = load_file(test::valid_dir() + "/full.yaml");
  EXPECT_EQ(c.source_file, test::valid_dir() + "/full.yaml");
  EXPECT_EQ(c.listen, "127.0.0.1:19687");
  ASSERT_EQ(c.targets.size(), 4u);
  EXPECT_EQ(c.targets[0].name, "inherits");
  EXPECT_EQ(c.targets[3].name, "header-env");
  EXPECT_EQ(c.targets[0].line.value, 29);

  EXPECT_EQ(c.buckets.gap, (std::vector<double>{0.1, 0.25, 1}));
  EXPECT_EQ(c.buckets.tokens_per_second, (std::vector<double>{10, 100}));
  EXPECT_EQ(c.buckets.ttft, Buckets{}.ttft);  // not overridden
  // The per-probe gap histograms follow the gap buckets of the older section.
  EXPECT_EQ(c.buckets.probe_gap_p95, c.buckets.gap);
  EXPECT_EQ(c.buckets.probe_max_gap, c.buckets.gap);
  EXPECT_EQ(c.metrics.phases, PhaseSeries::sum_count);
  EXPECT_FALSE(c.metrics.per_prompt);
  EXPECT_EQ(c.metrics.max_series, 5000u);
  EXPECT_EQ(c.metrics.max_scrape_bytes, 32u << 20);
  EXPECT_TRUE(c.targets[0].labels.empty());
  EXPECT_EQ(c.targets[1].labels,
            (std::map<std::string, std::string>{{"provider", "example"}, {"team", "7"}}));

  EXPECT_EQ(c.rows.path, path_in(test::valid_dir(), "rows/rows.jsonl"));
  EXPECT_EQ(c.rows.max_size, 10'000'000u);
  EXPECT_EQ(c.rows.keep, 3);
  EXPECT_EQ(c.rows.ring, 50u);

  EXPECT_DOUBLE_EQ(c.diagnosis.queue_ttft_seconds, 1.5);
  EXPECT_DOUBLE_EQ(c.diagnosis.queue_gap_p95_seconds, 0.1);
  EXPECT_DOUBLE_EQ(c.diagnosis.transport_gap_ratio, 3);
  EXPECT_DOUBLE_EQ(c.diagnosis.transport_min_stall_ratio, 0.5);
  EXPECT_DOUBLE_EQ(c.diagnosis.long_answer_duration_seconds, 60);
  EXPECT_DOUBLE_EQ(c.diagnosis.spread_ratio, 2.5);
  EXPECT_EQ(c.diagnosis.min_probes, 10);
  EXPECT_EQ(c.diagnosis.burst_chunks, 4);
  EXPECT_DOUBLE_EQ(c.diagnosis.release_share, 0.75);
  EXPECT_DOUBLE_EQ(c.diagnosis.tokens_per_chunk_ratio, 3);

  EXPECT_EQ(c.web.max_connections, 100u);
  EXPECT_EQ(c.web.max_connections_per_address, 10u);
  EXPECT_EQ(c.web.header_timeout, 2500ms);
  EXPECT_EQ(c.web.idle_timeout, 1min);
  EXPECT_EQ(c.web.write_timeout, 15s);
}

TEST_F(ValidConfig, PromptsInlineFileAndBlock) {
  Config c = load_file(test::valid_dir() + "/full.yaml");
  ASSERT_EQ(c.prompts.size(), 3u);
  EXPECT_EQ(c.prompts.at("short").text, "What is 2 + 2?");
  EXPECT_EQ(c.prompts.at("short").source, "inline");
  EXPECT_EQ(c.prompts.at("short").name, "short");
  // Trailing newlines of files and block scalars are not part of the prompt.
  EXPECT_EQ(c.prompts.at("custom").text, "Summarise the plot of Hamlet in five bullet points.");
  EXPECT_EQ(c.prompts.at("custom").source, path_in(test::valid_dir(), "files/custom-prompt.txt"));
  EXPECT_EQ(c.prompts.at("block").text, "Line one.\nLine two.");
}

TEST_F(ValidConfig, TargetInheritsDefaults) {
  Config c = load_file(test::valid_dir() + "/full.yaml");
  const Target& t = target(c, "inherits");
  EXPECT_EQ(t.url, "https://api.example.com/v1");  // trailing slash dropped
  EXPECT_EQ(t.api, lse::api::Dialect::openai_chat);
  EXPECT_EQ(t.model, "gpt-test");
  EXPECT_EQ(t.interval, 90s);
  EXPECT_DOUBLE_EQ(t.jitter, 0.2);
  EXPECT_EQ(t.timeout.first_token, 20s);
  EXPECT_EQ(t.timeout.idle, 15s);
  EXPECT_EQ(t.timeout.total, 120s);
  EXPECT_EQ(t.stall_threshold, 300ms);
  // alert: from the defaults, worst_gap built in.
  EXPECT_EQ(t.alert.ttft, 8s);
  EXPECT_EQ(t.alert.worst_gap, 1s);
  EXPECT_DOUBLE_EQ(t.alert.stall_share, 0.3);
  EXPECT_EQ(t.warmup, 1);
  EXPECT_EQ(t.max_tokens, 128);
  EXPECT_DOUBLE_EQ(t.temperature, 0.7);
  EXPECT_TRUE(t.count.content);
  EXPECT_TRUE(t.count.reasoning);
  EXPECT_FALSE(t.count.tool_calls);
  EXPECT_EQ(t.accept_encoding, std::vector<std::string>{"gzip"});
  EXPECT_EQ(t.client, ClientStyle::plain);
  using H = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(t.headers, (H{{"X-Team", "probes"}, {"X-Env", "test"}}));
  EXPECT_FALSE(t.include_usage);
  EXPECT_EQ(t.max_event_bytes, 256u * 1024);
  EXPECT_TRUE(t.proxy_from_environment);
  EXPECT_EQ(t.tls.ca_file, path_in(test::valid_dir(), "files/ca.pem"));
  EXPECT_EQ(t.tls.cert_file, "");
  EXPECT_FALSE(t.tls.insecure_skip_verify);
  EXPECT_EQ(t.proxy_url, "");
  // No prompts key: every prompt, in name order.
  EXPECT_EQ(t.prompts, (std::vector<std::string>{"block", "custom", "short"}));
  EXPECT_FALSE(t.body.is_object());
}

TEST_F(ValidConfig, TargetOverridesDefaults) {
  Config c = load_file(test::valid_dir() + "/full.yaml");
  const Target& t = target(c, "overrides");
  EXPECT_EQ(t.url, "http://[::1]:8000/v1");
  EXPECT_EQ(t.api, lse::api::Dialect::openai_completions);
  EXPECT_EQ(t.model, "7");  // quoted: a string, whatever it looks like
  EXPECT_EQ(t.interval, 500ms);
  EXPECT_DOUBLE_EQ(t.jitter, 0);
  // timeout merges field by field: only total is overridden.
  EXPECT_EQ(t.timeout.first_token, 20s);
  EXPECT_EQ(t.timeout.idle, 15s);
  EXPECT_EQ(t.timeout.total, 25s);
  EXPECT_EQ(t.stall_threshold, 1s);
  // alert merges field by field: stall_share still from the defaults.
  EXPECT_EQ(t.alert.ttft, 20s);
  EXPECT_EQ(t.alert.worst_gap, 2s);
  EXPECT_DOUBLE_EQ(t.alert.stall_share, 0.3);
  EXPECT_EQ(t.warmup, 0);
  EXPECT_EQ(t.max_tokens, 4096);
  EXPECT_DOUBLE_EQ(t.temperature, 2);
  // count replaces the whole set.
  EXPECT_FALSE(t.count.content);
  EXPECT_FALSE(t.count.reasoning);
  EXPECT_TRUE(t.count.tool_calls);
  EXPECT_EQ(t.accept_encoding, std::vector<std::string>{"identity"});
  EXPECT_EQ(t.client, ClientStyle::browser);
  // headers merge by case-insensitive name; the target's spelling and value win.
  using H = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(t.headers,
            (H{{"x-team", "other"}, {"X-Env", "test"}, {"X-Api-Key", "literal-key-in-header"}}));
  EXPECT_TRUE(t.include_usage);
  EXPECT_EQ(t.max_event_bytes, 2048u);
  EXPECT_FALSE(t.proxy_from_environment);
  // tls merges too: ca_file from defaults, the rest from the target.
  EXPECT_EQ(t.tls.ca_file, path_in(test::valid_dir(), "files/ca.pem"));
  EXPECT_EQ(t.tls.cert_file, path_in(test::valid_dir(), "files/client.crt"));
  EXPECT_EQ(t.tls.key_file, path_in(test::valid_dir(), "files/client.key"));
  EXPECT_EQ(t.tls.server_name, "llm.internal");
  EXPECT_TRUE(t.tls.insecure_skip_verify);
  EXPECT_EQ(t.prompts, (std::vector<std::string>{"custom", "short"}));
  EXPECT_EQ(t.proxy_url, "http://proxy.internal:3128");
}

TEST_F(ValidConfig, SecretsFromEnvAndFiles) {
  Config c = load_file(test::valid_dir() + "/full.yaml");

  const Auth& env = target(c, "inherits").auth;
  EXPECT_EQ(env.kind, Auth::Kind::bearer);
  EXPECT_EQ(env.header_name, "Authorization");
  EXPECT_EQ(env.secret.value, test::kEnvSecret);
  EXPECT_EQ(env.secret.source, "env LSE_TEST_SECRET");

  const Auth& file = target(c, "overrides").auth;
  EXPECT_EQ(file.kind, Auth::Kind::bearer);
  EXPECT_EQ(file.secret.value, "sk-file-secret-7f3a9c");  // trailing newline trimmed
  EXPECT_EQ(file.secret.source, "file " + path_in(test::valid_dir(), "files/token.txt"));

  const Auth& header_file = target(c, "header-file").auth;
  EXPECT_EQ(header_file.kind, Auth::Kind::header);
  EXPECT_EQ(header_file.header_name, "api-key");
  EXPECT_EQ(header_file.secret.value, "xapi-file-secret-51d2");  // CRLF trimmed

  const Auth& header_env = target(c, "header-env").auth;
  EXPECT_EQ(header_env.kind, Auth::Kind::header);
  EXPECT_EQ(header_env.header_name, "X-Api-Key");
  EXPECT_EQ(header_env.secret.value, test::kEnvSecret);

  EXPECT_EQ(target(c, "header-file").url, "http://localhost:8080");
  // Scheme is case-insensitive and normalised; every trailing slash goes.
  EXPECT_EQ(target(c, "header-env").url, "http://LocalHost:8080/openai/deployments/x");
}

TEST_F(ValidConfig, BodyKeepsOrderAndYamlTypes) {
  Config c = load_file(test::valid_dir() + "/full.yaml");
  const json::Value& body = target(c, "overrides").body;
  ASSERT_TRUE(body.is_object());
  std::vector<std::string> keys;
  for (const auto& [k, v] : body.object()) keys.push_back(k);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"z_first", "temperature_str", "float", "neg", "exp",
                                      "yes_is_string", "t", "nothing", "tilde", "empty",
                                      "quoted_true", "block", "list", "nested", "stream_options"}));
  auto get = [&](const char* key) -> const json::Value& {
    for (const auto& [k, v] : body.object()) {
      if (k == key) return v;
    }
    throw std::runtime_error(key);
  };
  EXPECT_EQ(std::get<std::int64_t>(get("z_first").v), 1);
  EXPECT_EQ(std::get<std::string>(get("temperature_str").v), "0.5");
  EXPECT_DOUBLE_EQ(std::get<double>(get("float").v), 1.5);
  EXPECT_EQ(std::get<std::int64_t>(get("neg").v), -3);
  EXPECT_DOUBLE_EQ(std::get<double>(get("exp").v), 1000);
  EXPECT_EQ(std::get<std::string>(get("yes_is_string").v), "yes");  // YAML 1.2: not a bool
  EXPECT_EQ(std::get<bool>(get("t").v), true);
  EXPECT_TRUE(std::holds_alternative<std::nullptr_t>(get("nothing").v));
  EXPECT_TRUE(std::holds_alternative<std::nullptr_t>(get("tilde").v));
  EXPECT_TRUE(std::holds_alternative<std::nullptr_t>(get("empty").v));
  EXPECT_EQ(std::get<std::string>(get("quoted_true").v), "true");
  EXPECT_EQ(std::get<std::string>(get("block").v), "multi\n");
  const auto& list = std::get<json::Array>(get("list").v);
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(std::get<std::int64_t>(list[0].v), 1);
  EXPECT_EQ(std::get<std::string>(list[1].v), "2");
  EXPECT_EQ(std::get<std::string>(list[2].v), "three");
  EXPECT_DOUBLE_EQ(std::get<double>(list[3].v), 4.0);
  // The whole tree, serialised: nested order is kept too.
  EXPECT_EQ(json::dump(get("nested")), R"({"b":2,"a":{"c":["x"]}})");
  EXPECT_EQ(json::dump(get("stream_options")), R"({"include_usage":true})");
}

TEST_F(ValidConfig, MinimalUsesBuiltInDefaultsAndDefaultPrompts) {
  Config c = load_file(test::valid_dir() + "/minimal.yaml");
  EXPECT_EQ(c.listen, ":9687");
  ASSERT_EQ(c.targets.size(), 1u);
  const Target& t = c.targets[0];
  const Target builtin;
  EXPECT_EQ(t.interval, builtin.interval);
  EXPECT_EQ(t.timeout.first_token, 30s);
  EXPECT_EQ(t.timeout.idle, 30s);
  EXPECT_EQ(t.timeout.total, 180s);
  EXPECT_EQ(t.stall_threshold, 250ms);
  EXPECT_EQ(t.warmup, 2);
  EXPECT_EQ(t.max_tokens, 256);
  EXPECT_TRUE(t.count.content);
  EXPECT_FALSE(t.count.reasoning);
  EXPECT_EQ(t.auth.kind, Auth::Kind::none);
  EXPECT_TRUE(t.include_usage);
  EXPECT_TRUE(t.accept_encoding.empty());
  // prompts/{short,medium,long}.txt next to the config file.
  ASSERT_EQ(c.prompts.size(), 3u);
  EXPECT_EQ(c.prompts.at("short").text, "Valid-folder prompt short.");
  EXPECT_EQ(c.prompts.at("long").source, path_in(test::valid_dir(), "prompts/long.txt"));
  EXPECT_EQ(t.prompts, (std::vector<std::string>{"long", "medium", "short"}));
  EXPECT_EQ(c.rows.path, "");
  EXPECT_EQ(c.diagnosis.min_probes, DiagnosisThresholds{}.min_probes);
  EXPECT_EQ(c.web, Web{});
  EXPECT_EQ(c.web.max_connections, 64u);
  EXPECT_EQ(c.web.max_connections_per_address, 32u);
  EXPECT_EQ(c.web.header_timeout, 5s);
  EXPECT_EQ(c.web.idle_timeout, 30s);
  EXPECT_EQ(c.web.write_timeout, 30s);
}

// A lower total cap brings the unset per-address cap down with it, so the
// effective values (and the /config dump of them) are valid themselves.
TEST_F(ValidConfig, WebPerAddressCapFollowsALowerTotalCap) {
  const std::string head =
      "listen: 127.0.0.1:0\nprompts: {p: {text: hi}}\n"
      "targets: [{name: a, url: 'http://h', model: m, prompts: [p]}]\n";
  Config c = parse(head + "web: {max_connections: 8}\n", "f.yaml", "");
  EXPECT_EQ(c.web.max_connections, 8u);
  EXPECT_EQ(c.web.max_connections_per_address, 8u);
  c = parse(head + "web: {max_connections: 8, max_connections_per_address: 3}\n", "f.yaml", "");
  EXPECT_EQ(c.web.max_connections_per_address, 3u);
  // The dump's web: section reads back as the same values.
  YAML::Node dumped = YAML::Load(dump_redacted(c))["web"];
  dumped.SetStyle(YAML::EmitterStyle::Flow);
  YAML::Emitter web;
  web << dumped;
  EXPECT_EQ(parse(head + "web: " + web.c_str() + "\n", "f.yaml", "").web, c.web) << web.c_str();
}

TEST_F(ValidConfig, DefaultPromptsAreBuiltInWhereNoFilesAre) {
  const std::string yaml = "targets:\n  - {name: a, url: http://h, model: m}\n";
  const Config c = parse(yaml, "inline.yaml", test::valid_dir() + "/no-such-folder");
  ASSERT_EQ(c.prompts.size(), 3u);
  for (const auto& [name, p] : c.prompts) EXPECT_EQ(p.source, "built in") << name;
}

TEST_F(ValidConfig, ShippedPromptsAreTheDefaultSet) {
  const std::string yaml = "targets:\n  - {name: a, url: http://h, model: m}\n";
  Config c = parse(yaml, "inline.yaml", test::repo_config_dir());
  ASSERT_EQ(c.prompts.size(), 3u);
  // short < medium < long, each a real question (fixed text, not empty).
  EXPECT_LT(c.prompts.at("short").text.size(), c.prompts.at("medium").text.size());
  EXPECT_LT(c.prompts.at("medium").text.size(), c.prompts.at("long").text.size());
  EXPECT_NE(c.prompts.at("short").text.find('?'), std::string::npos);
}

TEST_F(ValidConfig, ExampleYamlParses) {
  Config c = load_file(test::repo_config_dir() + "/example.yaml");
  ASSERT_EQ(c.targets.size(), 3u);
  const Target& openai = target(c, "openai-mini");
  EXPECT_EQ(openai.url, "https://api.openai.com/v1");
  EXPECT_EQ(openai.auth.secret.value, "sk-example-0000");
  EXPECT_EQ(openai.accept_encoding, (std::vector<std::string>{"gzip", "br"}));
  const Target& vllm = target(c, "vllm-local");
  EXPECT_EQ(vllm.interval, 30s);
  EXPECT_EQ(vllm.timeout.first_token, 10s);
  EXPECT_EQ(vllm.timeout.total, 180s);
  EXPECT_TRUE(vllm.count.reasoning);
  EXPECT_EQ(vllm.auth.kind, Auth::Kind::none);
  EXPECT_EQ(target(c, "vllm-local-completions").api, lse::api::Dialect::openai_completions);
  EXPECT_EQ(c.prompts.size(), 3u);
}

TEST_F(ValidConfig, ParseWithoutBaseDirResolvesAgainstCwd) {
  const std::string yaml =
      "prompts: {p: {text: hi}}\n"
      "rows: {path: out/rows.jsonl}\n"
      "targets:\n  - {name: a, url: 'http://h:1/', model: m}\n";
  Config c = parse(yaml, "<inline>", "");
  EXPECT_EQ(c.rows.path, "out/rows.jsonl");
  EXPECT_EQ(c.targets[0].url, "http://h:1");
  EXPECT_EQ(c.targets[0].prompts, std::vector<std::string>{"p"});
}

TEST_F(ValidConfig, EveryDialectAndAnAzureQuery) {
  const std::string yaml =
      "prompts: {p: {text: hi}}\n"
      "targets:\n"
      "  - {name: claude, url: 'https://api.anthropic.com/v1', model: m, api: anthropic-messages,\n"
      "     auth: {bearer_token_env: LSE_TEST_SECRET}}\n"
      "  - {name: resp, url: 'https://api.openai.com/v1', model: m, api: openai-responses}\n"
      "  - {name: oc, url: 'http://localhost:11434', model: m, api: ollama-chat}\n"
      "  - {name: og, url: 'http://localhost:11434', model: m, api: ollama-generate}\n"
      "  - {name: gem, url: 'https://generativelanguage.googleapis.com/v1beta?key=s3cr3t-q',\n"
      "     model: gemini-2.0-flash, api: gemini}\n"
      "  - {name: azure, model: gpt-4o,\n"
      "     url: 'https://r.openai.azure.com/openai/deployments/d/?api-version=2024-10-21',\n"
      "     auth: {header: api-key, env: LSE_TEST_SECRET}}\n";
  Config c = parse(yaml, "x.yaml", "");
  ASSERT_EQ(c.targets.size(), 6u);
  EXPECT_EQ(c.targets[0].api, api::Dialect::anthropic_messages);
  EXPECT_EQ(c.targets[0].auth.kind, Auth::Kind::bearer);
  EXPECT_EQ(c.targets[1].api, api::Dialect::openai_responses);
  EXPECT_EQ(c.targets[2].api, api::Dialect::ollama_chat);
  EXPECT_EQ(c.targets[3].api, api::Dialect::ollama_generate);
  EXPECT_EQ(c.targets[4].api, api::Dialect::gemini);
  EXPECT_EQ(c.targets[5].url,
            "https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21");
  EXPECT_EQ(c.targets[5].auth.header_name, "api-key");
  // The dump keeps api-version but never a query value that may be a key.
  const std::string dump = dump_redacted(c);
  EXPECT_NE(dump.find("?api-version=2024-10-21"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("s3cr3t-q"), std::string::npos) << dump;
  EXPECT_NE(dump.find("v1beta?key=<secret>"), std::string::npos) << dump;
}

TEST_F(ValidConfig, ListenForms) {
  for (const char* listen :
       {":9687", "127.0.0.1:9687", "[::1]:9687", "localhost:0", "0.0.0.0:65535"}) {
    std::string yaml =
        std::string("listen: \"") + listen +
        "\"\nprompts: {p: {text: hi}}\ntargets: [{name: a, url: 'http://h', model: m}]\n";
    EXPECT_EQ(parse(yaml, "x.yaml", "").listen, listen);
  }
}

TEST_F(ValidConfig, UnreadableConfigFile) {
  const std::string path = test::valid_dir() + "/does-not-exist.yaml";
  try {
    load_file(path);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 0);
    EXPECT_EQ(std::string(e.what()), path + ": cannot read config file: No such file or directory");
  }
}

TEST(ConfigErrorTest, WhatIsFileLineColMessage) {
  ConfigError e("a.yaml", 3, 7, "boom");
  EXPECT_STREQ(e.what(), "a.yaml:3:7: boom");
  EXPECT_EQ(e.file(), "a.yaml");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.column(), 7);
  EXPECT_EQ(e.message(), "boom");
}

}  // namespace
}  // namespace lse::config
