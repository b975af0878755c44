// Internal to the config module: the value rules of DESIGN §4 as pure
// functions on strings, with no YAML and no positions. The section parsers
// call them and attach the file:line:col; tests can call them directly.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/adapter.hpp"

namespace lse::config::detail {

// A normalised value or the reason it is not acceptable (never both).
struct Checked {
  std::string value;
  std::string error;
  bool ok() const { return error.empty(); }
};

// Target and prompt names become label values: [A-Za-z0-9_.-]+.
std::optional<std::string> check_name(std::string_view kind, std::string_view name);

// http(s)://host[:port][/path], no credentials, query or fragment; the
// trailing slash is dropped so adapters can append "/chat/completions".
Checked normalize_target_url(std::string_view url);

// http://host[:port] only (we speak HTTP CONNECT to the proxy in clear).
Checked normalize_proxy_url(std::string_view url);

// ":9687", "127.0.0.1:9687", "[::1]:9687", "localhost:0".
std::optional<std::string> check_listen(std::string_view listen);

// A parsed value or the reason it is not acceptable.
template <typename T>
struct Parsed {
  T value{};
  std::string error;
  bool ok() const { return error.empty(); }
};

// The dialects the api module builds; the other DESIGN dialects are named
// with a clearer message than "unknown".
Parsed<api::Dialect> parse_api(std::string_view name);

// RFC 9110 token characters.
std::optional<std::string> check_header_name(std::string_view name);
// CR/LF/NUL would let a value inject headers; the value is never echoed
// because header values are often credentials.
std::optional<std::string> check_header_value(std::string_view name, std::string_view value);

// Where a stall threshold falls among histogram bucket bounds (seconds): on
// one of them, or between the nearest below and above (nullopt: none on that
// side). Stalls are counted against the threshold while dashboards read the
// gap histogram, so a threshold off the bounds makes the two disagree.
struct BucketPlace {
  bool on_bound = false;
  std::optional<double> below, above;
};
BucketPlace bucket_place(const std::vector<double>& bounds, std::chrono::nanoseconds threshold);

// A target's extra label name (`labels:`): Prometheus' grammar
// [a-zA-Z_][a-zA-Z0-9_]*, not `__`-prefixed (Prometheus' own), and none of
// `reserved` (the labels the exporter sets; sorted, listed in the message).
std::optional<std::string> check_label_name(std::string_view name,
                                            const std::vector<std::string>& reserved);

// POSIX environment variable names.
std::optional<std::string> check_env_name(std::string_view name);

}  // namespace lse::config::detail
