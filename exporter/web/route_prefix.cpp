// --web.route-prefix / --web.external-url (see route_prefix.hpp).
#include "web/route_prefix.hpp"

#include <stdexcept>

#include "net/url.hpp"

namespace lse::web {
namespace {

// "/" + the text without its leading and trailing slashes, "" for the root.
std::string normalise(std::string_view flag, std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '?' || c == '#')
      throw std::invalid_argument(std::string(flag) +
                                  ": a path without spaces, control characters, '?' or '#'");
  }
  while (!text.empty() && text.front() == '/') text.remove_prefix(1);
  while (!text.empty() && text.back() == '/') text.remove_suffix(1);
  return text.empty() ? std::string() : "/" + std::string(text);
}

}  // namespace

std::string route_prefix(std::string_view route_prefix_flag, std::string_view external_url) {
  if (!route_prefix_flag.empty()) return normalise("--web.route-prefix", route_prefix_flag);
  if (external_url.empty()) return "";
  const net::UrlParts url = net::split_url(external_url);
  if ((url.scheme != "http" && url.scheme != "https") || url.host.empty() ||
      url.issue != net::AuthorityIssue::none || url.has_control_or_space)
    throw std::invalid_argument(
        "--web.external-url: expected an absolute http(s) URL such as "
        "https://example.com/llm-stream/" +
        (url.has_userinfo ? std::string() : ", got \"" + std::string(external_url) + "\""));
  return normalise("--web.external-url", url.path);
}

}  // namespace lse::web
