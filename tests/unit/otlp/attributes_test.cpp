// gen_ai.operation.name, gen_ai.provider.name and the server attributes of a target.
#include "otlp/attributes.hpp"

#include <gtest/gtest.h>

namespace lse::otlp {
namespace {

config::Target target(api::Dialect d, const std::string& url) {
  config::Target t;
  t.name = "t";
  t.api = d;
  t.url = url;
  t.model = "m";
  return t;
}

TEST(Attributes, OperationFromTheDialect) {
  EXPECT_EQ(operation_name(api::Dialect::openai_chat), "chat");
  EXPECT_EQ(operation_name(api::Dialect::anthropic_messages), "chat");
  EXPECT_EQ(operation_name(api::Dialect::openai_completions), "text_completion");
  EXPECT_EQ(operation_name(api::Dialect::ollama_generate), "text_completion");
  EXPECT_EQ(operation_name(api::Dialect::gemini), "generate_content");
}

TEST(Attributes, ProviderFromDialectHostOrConfig) {
  using api::Dialect;
  EXPECT_EQ(provider_name(target(Dialect::openai_chat, "https://api.openai.com/v1")), "openai");
  EXPECT_EQ(provider_name(target(Dialect::openai_chat, "https://x.openai.azure.com/openai")),
            "azure.ai.openai");
  EXPECT_EQ(provider_name(target(Dialect::openai_chat, "https://api.groq.com/openai/v1")), "groq");
  EXPECT_EQ(provider_name(target(Dialect::anthropic_messages, "https://api.anthropic.com/v1")),
            "anthropic");
  EXPECT_EQ(provider_name(target(Dialect::gemini, "https://generativelanguage.googleapis.com")),
            "gcp.gemini");
  EXPECT_EQ(provider_name(target(Dialect::ollama_chat, "http://localhost:11434")), "ollama");
  // Not fooled by a look-alike host.
  EXPECT_EQ(provider_name(target(Dialect::openai_chat, "http://notapi.openai.com.evil/v1")),
            "openai_compatible");
  EXPECT_EQ(provider_name(target(Dialect::openai_chat, "http://10.0.0.5:8000/v1")),
            "openai_compatible");
  auto vllm = target(Dialect::openai_chat, "http://10.0.0.5:8000/v1");
  vllm.provider = "vllm";
  EXPECT_EQ(provider_name(vllm), "vllm");
}

TEST(Attributes, ServerFromTheUrlWithItsDefaultPort) {
  const auto a = target_attributes(target(api::Dialect::openai_chat, "https://api.openai.com/v1"));
  EXPECT_EQ(a.server_address, "api.openai.com");
  EXPECT_EQ(a.server_port, 443);
  EXPECT_EQ(a.model, "m");
  EXPECT_EQ(
      target_attributes(target(api::Dialect::openai_chat, "http://[::1]:8000/v1")).server_port,
      8000);
}

TEST(Attributes, ErrorTypeIsTheFailureReason) {
  EXPECT_EQ(error_type(probe::FailureReason::http_5xx), "http_5xx");
  EXPECT_EQ(error_type(probe::FailureReason::none), "_OTHER");
}

}  // namespace
}  // namespace lse::otlp
