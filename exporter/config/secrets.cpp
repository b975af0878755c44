// secret_values: what a target sends upstream that is a credential, so
// what an upstream echoes of it can be masked (util/redact.hpp). It judges
// by the same signs as the /config dump (dump.cpp): the auth secret, headers
// whose names are a credential's or whose values came from env:/file:, query
// values but api-version's, and body values under credential keys.
#include <algorithm>
#include <string_view>

#include "config/config.hpp"
#include "util/text.hpp"

namespace lse::config {
namespace {

void add(std::vector<std::string>& out, std::string_view value) {
  if (value.empty()) return;
  if (std::find(out.begin(), out.end(), value) == out.end()) out.emplace_back(value);
}

// "Bearer sk-..." is sent whole, but an upstream may echo only the credential.
void add_header_value(std::vector<std::string>& out, std::string_view value) {
  add(out, value);
  for (std::string_view scheme : {"Bearer ", "Basic ", "Token ", "Bot "}) {
    if (text::istarts_with(value, scheme)) add(out, value.substr(scheme.size()));
  }
}

// Every query value but api-version's, as the dump masks them (?key=...).
void add_query_values(std::vector<std::string>& out, std::string_view url) {
  const auto q = url.find('?');
  if (q == std::string_view::npos) return;
  std::string_view rest = url.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view param = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const auto eq = param.find('=');
    if (eq == std::string_view::npos || param.substr(0, eq) == "api-version") continue;
    add(out, param.substr(eq + 1));
    add(out, text::percent_decoded(param.substr(eq + 1), true));  // as an upstream may echo it
  }
}

// Strings under credential keys, at any depth of the body.
void add_body_values(std::vector<std::string>& out, const json::Value& v, bool credential) {
  if (const auto* s = std::get_if<std::string>(&v.v)) {
    if (credential) add(out, *s);
  } else if (const auto* a = std::get_if<json::Array>(&v.v)) {
    for (const auto& e : *a) add_body_values(out, e, credential);
  } else if (const auto* o = std::get_if<json::Object>(&v.v)) {
    for (const auto& [key, value] : *o)
      add_body_values(out, value, credential || is_credential_key(key));
  }
}

}  // namespace

std::vector<std::string> secret_values(const Target& target) {
  std::vector<std::string> out;
  add_header_value(out, target.auth.secret.value);
  for (const auto& [name, value] : target.headers)
    if (is_secret_header(target, name)) add_header_value(out, value);
  add_query_values(out, target.url);
  add_body_values(out, target.body, false);
  return out;
}

std::vector<std::string> secret_values(const Config& config) {
  std::vector<std::string> out;
  for (const auto& t : config.targets)
    for (const auto& s : secret_values(t)) add(out, s);
  return out;
}

}  // namespace lse::config
