// HTTP(S)_PROXY / NO_PROXY as curl and the SDKs read them (see proxy_env.hpp).
#include "net/proxy_env.hpp"

#include <utility>
#include <cstdlib>
#include <tuple>

namespace lse::net {
namespace {

// The first of the two spellings that is set and not empty.
std::pair<std::string, std::string> first_set(const Getenv& getenv, const char* upper,
                                              const char* lower) {
  for (const char* name : {upper, lower}) {
    const char* v = getenv(name);
    if (v != nullptr && *v != '\0') return {name, v};
  }
  return {};
}

}  // namespace

const char* process_env(const char* name) { return std::getenv(name); }

EnvProxy env_proxy_for(const Url& url, const Getenv& getenv) {
  EnvProxy out;
  std::tie(out.variable, out.value) = url.tls ? first_set(getenv, "HTTPS_PROXY", "https_proxy")
                                              : first_set(getenv, "HTTP_PROXY", "http_proxy");
  if (out.variable.empty()) return out;
  const auto [no_proxy, list] = first_set(getenv, "NO_PROXY", "no_proxy");
  if (!no_proxy.empty() && no_proxy_matches(list, url)) out.bypassed_by = no_proxy;
  return out;
}

std::string redact_userinfo(std::string_view url) {
  const auto sep = url.find("://");
  const std::size_t start = sep == std::string_view::npos ? 0 : sep + 3;
  const std::size_t end = url.find_first_of("/?#", start);
  const std::string_view authority = url.substr(start, end - start);
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, start)) + "<secret>" + std::string(url.substr(start + at));
}

ProxyUrl parse_proxy_url(std::string_view value) {
  std::string text(value);
  if (text.find("://") == std::string::npos) text = "http://" + text;
  const UrlParts parts = split_url(text);
  if (parts.scheme != "http")
    return {std::nullopt, "'" + redact_userinfo(value) +
                              "' is not an http:// proxy (TLS or SOCKS to the proxy is not "
                              "supported)"};
  auto url = parse_url(text);
  if (!url) return {std::nullopt, "'" + redact_userinfo(value) + "' is not a proxy URL"};
  url->path.clear();
  url->query.clear();
  return {std::move(url), {}};
}

}  // namespace lse::net
