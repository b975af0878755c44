// check-config's line per target: dialect, where it posts, where the key goes
// (the key's source, never its value), and no query or userinfo shown.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace lse::cli
