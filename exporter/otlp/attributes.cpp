#include "otlp/attributes.hpp"

#include <array>

#include "net/url.hpp"
#include "util/text.hpp"

namespace lse::otlp {
namespace {

bool host_is(std::string_view host, std::string_view domain) {
  if (text::iequals(host, domain)) return true;
  return host.size() > domain.size() && host[host.size() - domain.size() - 1] == '.' &&
         text::iequals(host.substr(host.size() - domain.size()), domain);
}

// Hosted OpenAI-dialect APIs with a well-known gen_ai.provider.name.
std::string_view provider_of_host(std::string_view host) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kHosts = {{
      {"openai.azure.com", "azure.ai.openai"},
      {"api.openai.com", "openai"},
      {"api.groq.com", "groq"},
      {"api.deepseek.com", "deepseek"},
      {"api.mistral.ai", "mistral_ai"},
      {"api.x.ai", "x_ai"},
      {"api.perplexity.ai", "perplexity"},
  }};
  for (const auto& [domain, name] : kHosts)
    if (host_is(host, domain)) return name;
  return "openai_compatible";
}

}  // namespace

std::string_view operation_name(api::Dialect dialect) {
  switch (dialect) {
    case api::Dialect::openai_completions:
    case api::Dialect::ollama_generate: return "text_completion";
    case api::Dialect::gemini: return "generate_content";
    case api::Dialect::openai_chat:
    case api::Dialect::openai_responses:
    case api::Dialect::anthropic_messages:
    case api::Dialect::ollama_chat: return "chat";
  }
  return "chat";
}

std::string provider_name(const config::Target& target) {
  if (!target.provider.empty()) return target.provider;
  switch (target.api) {
    case api::Dialect::anthropic_messages: return "anthropic";
    case api::Dialect::gemini: return "gcp.gemini";
    case api::Dialect::ollama_chat:
    case api::Dialect::ollama_generate: return "ollama";
    default: break;
  }
  const auto url = net::parse_url(target.url);
  return std::string(provider_of_host(url ? url->host : std::string()));
}

std::string error_type(probe::FailureReason reason) {
  const std::string_view name = probe::to_string(reason);
  return name.empty() ? "_OTHER" : std::string(name);
}

TargetAttributes target_attributes(const config::Target& target) {
  TargetAttributes a;
  a.operation = std::string(operation_name(target.api));
  a.provider = provider_name(target);
  a.model = target.model;
  if (const auto url = net::parse_url(target.url)) {
    a.server_address = url->host;
    a.server_port = std::stoll(url->port.empty() ? "0" : url->port);
  }
  return a;
}

}  // namespace lse::otlp
