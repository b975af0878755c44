// The pure value rules behind the config messages (config/rules.hpp).
#include "config/rules.hpp"

#include <gtest/gtest.h>

namespace lse::config::detail {
namespace {

TEST(TargetUrl, NormalisesAcceptedShapes) {
  EXPECT_EQ(normalize_target_url("https://api.openai.com/v1").value, "https://api.openai.com/v1");
  EXPECT_EQ(normalize_target_url("https://api.openai.com/v1/").value, "https://api.openai.com/v1");
  EXPECT_EQ(normalize_target_url("http://localhost:8000").value, "http://localhost:8000");
  EXPECT_EQ(normalize_target_url("http://localhost:8000/").value, "http://localhost:8000");
  EXPECT_EQ(normalize_target_url("HTTPS://h/x").value, "https://h/x");
  EXPECT_EQ(normalize_target_url("http://[fe80::1%25eth0]:80/p").value,
            "http://[fe80::1%25eth0]:80/p");
  EXPECT_EQ(normalize_target_url("http://10.0.0.1:65535/a/b").value, "http://10.0.0.1:65535/a/b");
}

TEST(TargetUrl, KeepsTheQuery) {
  // Azure OpenAI: the api-version goes with every request.
  EXPECT_EQ(
      normalize_target_url("https://r.openai.azure.com/openai/deployments/d/?api-version=1").value,
      "https://r.openai.azure.com/openai/deployments/d?api-version=1");
  EXPECT_EQ(normalize_target_url("https://h/v1?").value, "https://h/v1");
  EXPECT_EQ(normalize_proxy_url("http://p:3128?x=1").error, "proxy_url must not contain a query");
}

TEST(TargetUrl, RejectsWithReasons) {
  auto error = [](const char* url) { return normalize_target_url(url).error; };
  EXPECT_NE(error("").find("must not be empty"), std::string::npos);
  EXPECT_NE(error("ws://h").find("must start with http:// or https://"), std::string::npos);
  EXPECT_EQ(error("http://h/v1#frag"), "url must not contain a fragment");
  EXPECT_EQ(error("http://h/v1?a=1#frag"), "url must not contain a fragment");
  EXPECT_NE(error("http://h:0").find("invalid port"), std::string::npos);
  EXPECT_NE(error("http://h:").find("invalid port"), std::string::npos);
  EXPECT_NE(error("http://h:8o").find("invalid port"), std::string::npos);
  EXPECT_NE(error("http://:80").find("no host"), std::string::npos);
  EXPECT_NE(error("http://[::1").find("IPv6"), std::string::npos);
  EXPECT_NE(error("http://h/a b").find("spaces"), std::string::npos);
  EXPECT_NE(error("http://a:b:c").find("invalid port"), std::string::npos);
  // A query may carry a key (?key=...): never echoed, even in other messages.
  EXPECT_EQ(error("https://h/v1?key=q5ecret").find("q5ecret"), std::string::npos);
  EXPECT_EQ(error("h/v1?key=q5ecret").find("q5ecret"), std::string::npos);
  // Credentials: rejected without echoing them.
  std::string e = error("user:s3cret@h/v1");
  EXPECT_NE(e.find("credentials"), std::string::npos);
  EXPECT_EQ(e.find("s3cret"), std::string::npos);
}

TEST(ProxyUrl, HttpHostPortOnly) {
  EXPECT_EQ(normalize_proxy_url("http://proxy:3128").value, "http://proxy:3128");
  EXPECT_EQ(normalize_proxy_url("http://proxy:3128/").value, "http://proxy:3128");
  EXPECT_FALSE(normalize_proxy_url("https://proxy:3128").ok());
  EXPECT_FALSE(normalize_proxy_url("socks5://proxy:1080").ok());
  EXPECT_FALSE(normalize_proxy_url("http://u:p@proxy:3128").ok());
  EXPECT_FALSE(normalize_proxy_url("http://proxy:3128/path").ok());
}

TEST(Listen, Forms) {
  for (const char* ok :
       {":9687", "127.0.0.1:9687", "[::1]:9687", "[::]:0", "localhost:65535", "my-host.local:80"}) {
    EXPECT_EQ(check_listen(ok), std::nullopt) << ok;
  }
  for (const char* bad :
       {"9687", "", ":", ":65536", ":-1", "[::1]", "::1:9687", "a b:1", "[x]:1", "h:80x"}) {
    EXPECT_NE(check_listen(bad), std::nullopt) << bad;
  }
}

TEST(Api, SupportedKnownAndUnknown) {
  EXPECT_EQ(parse_api("openai-chat").value, api::Dialect::openai_chat);
  EXPECT_TRUE(parse_api("openai-chat").ok());
  EXPECT_EQ(parse_api("openai-completions").value, api::Dialect::openai_completions);
  EXPECT_EQ(parse_api("anthropic-messages").value, api::Dialect::anthropic_messages);
  EXPECT_EQ(parse_api("openai-responses").value, api::Dialect::openai_responses);
  EXPECT_EQ(parse_api("ollama-chat").value, api::Dialect::ollama_chat);
  EXPECT_EQ(parse_api("ollama-generate").value, api::Dialect::ollama_generate);
  EXPECT_EQ(parse_api("gemini").value, api::Dialect::gemini);
  EXPECT_EQ(parse_api("OpenAI-Chat").error,
            "unknown api 'OpenAI-Chat' (supported: openai-chat, openai-completions, "
            "anthropic-messages, openai-responses, ollama-chat, ollama-generate, gemini)");
}

TEST(Names, LabelSafe) {
  EXPECT_EQ(check_name("target", "openai-mini_2.v1"), std::nullopt);
  EXPECT_NE(check_name("target", ""), std::nullopt);
  EXPECT_NE(check_name("target", "a/b"), std::nullopt);
  EXPECT_NE(check_name("prompt", "\xC3\xA9t\xC3\xA9"), std::nullopt);
}

TEST(Headers, NamesAndValues) {
  EXPECT_EQ(check_header_name("X-Team"), std::nullopt);
  EXPECT_NE(check_header_name("X Team"), std::nullopt);
  EXPECT_NE(check_header_name("X:Team"), std::nullopt);
  EXPECT_EQ(check_header_value("X", "a b\tc"), std::nullopt);
  auto err = check_header_value("Authorization", "Bearer x\r\nEvil: 1");
  ASSERT_NE(err, std::nullopt);
  EXPECT_EQ(err->find("Bearer"), std::string::npos);  // the value is never echoed
}

TEST(EnvNames, Posix) {
  EXPECT_EQ(check_env_name("OPENAI_API_KEY"), std::nullopt);
  EXPECT_EQ(check_env_name("_x1"), std::nullopt);
  EXPECT_NE(check_env_name("1X"), std::nullopt);
  EXPECT_NE(check_env_name("A-B"), std::nullopt);
}

}  // namespace
}  // namespace lse::config::detail
