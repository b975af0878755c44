// The proxy the environment names for a URL, read the way curl and the
// providers' SDKs read it: HTTPS_PROXY for https, HTTP_PROXY for http (each
// upper case first, then lower case), NO_PROXY (then no_proxy) to bypass.
// A proxy URL may carry "user:password@": it is a secret, so everything shown
// goes through redact_userinfo.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "net/url.hpp"

namespace lse::net {

// Reads one environment variable (nullptr: unset): the process's by default
// (process_env), tests pass their own.
using Getenv = std::function<const char*(const char*)>;
const char* process_env(const char* name);

struct EnvProxy {
  std::string
      variable;       // the variable naming a proxy for the URL ("HTTPS_PROXY", ...); empty: none
  std::string value;  // its value as set (may carry userinfo: never show it unredacted)
  std::string bypassed_by;  // "NO_PROXY" or "no_proxy" when that list matches the URL's host

  // A proxy is named and not bypassed.
  bool applies() const { return !variable.empty() && bypassed_by.empty(); }
};

EnvProxy env_proxy_for(const Url& url, const Getenv& getenv = process_env);

// A proxy as the variables (or proxy_url) spell it: "http://[user:pass@]host[:port][/]"
// or "host[:port]" (http assumed, as curl does). Only plain http proxies are
// spoken to (CONNECT for https targets, the absolute form for http ones).
struct ProxyUrl {
  std::optional<Url> url;  // userinfo dropped
  std::string error;       // set when url is empty; free of the value's userinfo
};
ProxyUrl parse_proxy_url(std::string_view value);

// The URL with "user:password@" replaced by "<secret>@" (nothing else changes).
std::string redact_userinfo(std::string_view url);

}  // namespace lse::net
