// Who a probe spoke to, in the GenAI semantic conventions' words
// (docs/otlp.md names the pinned version): gen_ai.operation.name from the
// API dialect, gen_ai.provider.name from `provider:` or the dialect and host,
// gen_ai.request.model, server.address and server.port from the target's
// URL, error.type from the failure reason. Pure: config in, values out.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "api/adapter.hpp"
#include "config/config.hpp"
#include "otlp/batch.hpp"
#include "probe/failure_reason.hpp"

namespace lse::otlp {

// chat, text_completion or generate_content.
std::string_view operation_name(api::Dialect dialect);

// The target's `provider:` when set; else a well-known value of the
// conventions where the dialect or host names one (anthropic, gcp.gemini,
// openai for api.openai.com, azure.ai.openai, groq, deepseek, mistral_ai,
// x_ai, perplexity), "ollama" for the Ollama dialects, and
// "openai_compatible" for any other server speaking an OpenAI dialect
// (vLLM, llama.cpp, gateways: set `provider:` to name it).
std::string provider_name(const config::Target& target);

// A failure reason as error.type (its low-cardinality name, "timeout_idle").
std::string error_type(probe::FailureReason reason);

// The attributes every point of a target's probes carries.
struct TargetAttributes {
  std::string operation, provider, model, server_address;
  std::int64_t server_port = 0;
};
TargetAttributes target_attributes(const config::Target& target);

}  // namespace lse::otlp
