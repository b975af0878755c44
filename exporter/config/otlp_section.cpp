// `otlp:`: where and how the measurements are pushed over OTLP/HTTP
// (docs/otlp.md). The variables of the OTLP exporter specification fill
// what the section leaves out: OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (used as
// it is) or OTEL_EXPORTER_OTLP_ENDPOINT (/v1/metrics appended),
// OTEL_EXPORTER_OTLP_(METRICS_)HEADERS, OTEL_EXPORTER_OTLP_(METRICS_)PROTOCOL,
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME. Header values read from
// env:, file: or the variables are secrets: never in a message or the dump.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "config/reader.hpp"
#include "config/rules.hpp"
#include "config/sections.hpp"
#include "net/url.hpp"
#include "util/text.hpp"

namespace lse::config {
namespace {

using detail::Fields;
using detail::Item;
using detail::Reader;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// The first of the variables that is set and not empty, with its name.
std::pair<std::string, std::string> first_env(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (std::string v = env(n); !v.empty()) return {n, v};
  return {};
}

// "http://host:4318" + "/v1/metrics", without a doubled '/'.
std::string with_metrics_path(std::string base) {
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/v1/metrics";
}

// An http(s) URL or the reason it is not one (never echoing a query or
// userinfo, which may hold a credential).
std::optional<std::string> endpoint_problem(const std::string& url) {
  const auto parts = net::parse_url(url);
  if (!text::istarts_with(url, "http://") && !text::istarts_with(url, "https://"))
    return "must be an http:// or https:// URL (OTLP/HTTP; gRPC is not supported)";
  if (!parts || parts->host.empty()) return "is not a valid URL";
  return std::nullopt;
}

OtlpOptions::Protocol protocol_named(const Reader& r, const YAML::Mark& mark,
                                     const std::string& name) {
  if (name == "http/protobuf") return OtlpOptions::Protocol::http_protobuf;
  if (name == "http/json") return OtlpOptions::Protocol::http_json;
  r.fail(mark, fmt::format("otlp.protocol: must be http/protobuf or http/json, got '{}'", name));
}

void set_header(OtlpOptions& o, const std::string& name, std::string value, bool secret) {
  const std::string lower = text::to_lower(name);
  std::erase(o.secret_headers, lower);
  if (secret) o.secret_headers.push_back(lower);
  auto same = std::find_if(o.headers.begin(), o.headers.end(),
                           [&](const auto& h) { return text::iequals(h.first, name); });
  if (same != o.headers.end()) {
    *same = {name, std::move(value)};
  } else {
    o.headers.emplace_back(name, std::move(value));
  }
}

void apply_headers(const Reader& r, OtlpOptions& o, const Item& item) {
  r.require_mapping(item);
  for (const auto& kv : item.node) {
    const std::string name = kv.first.Scalar();
    if (auto err = detail::check_header_name(name)) r.fail(kv.first.Mark(), *err);
    Item value{kv.second, kv.second.IsNull() ? kv.first.Mark() : kv.second.Mark(),
               item.name + "." + name};
    bool secret = false;
    std::string text = detail::header_text_or_secret(r, value, secret);
    if (auto err = detail::check_header_value(name, text)) r.fail(value, *err);
    set_header(o, name, std::move(text), secret);
  }
}

void apply_resource(const Reader& r, OtlpOptions& o, const Item& item) {
  r.require_mapping(item);
  for (const auto& kv : item.node) {
    const std::string key = kv.first.Scalar();
    if (key.empty()) r.fail(kv.first.Mark(), "otlp.resource: an attribute needs a name");
    Item value{kv.second, kv.second.IsNull() ? kv.first.Mark() : kv.second.Mark(),
               "otlp.resource." + key};
    std::string v = r.string(value);
    std::erase_if(o.resource, [&](const auto& a) { return a.first == key; });
    o.resource.emplace_back(key, std::move(v));
  }
}

void apply_otlp_key(const Reader& r, OtlpOptions& o, const std::string& key, const Item& v) {
  if (key == "endpoint") {
    const std::string url = r.nonempty_string(v);
    if (auto problem = endpoint_problem(url)) r.fail(v, *problem);
    o.endpoint = with_metrics_path(url);
    o.endpoint_source = "config";
  } else if (key == "headers") {
    apply_headers(r, o, v);
  } else if (key == "interval" || key == "timeout") {
    const Duration d = r.duration(v);
    if (d < std::chrono::milliseconds(10) || d > std::chrono::hours(1))
      r.fail(v, fmt::format("must be between 10ms and 1h, got {}", format_duration(d)));
    (key == "interval" ? o.interval : o.timeout) = d;
  } else if (key == "protocol") {
    o.protocol = protocol_named(r, v.mark, r.string(v));
  } else if (key == "temporality") {
    const std::string t = r.string(v);
    if (t != "cumulative" && t != "delta")
      r.fail(v, fmt::format("must be cumulative or delta, got '{}'", t));
    o.temporality =
        t == "delta" ? OtlpOptions::Temporality::delta : OtlpOptions::Temporality::cumulative;
  } else if (key == "compression") {
    const std::string c = r.string(v);
    if (c != "gzip" && c != "none") r.fail(v, fmt::format("must be gzip or none, got '{}'", c));
    o.gzip = c == "gzip";
  } else if (key == "ca_file") {
    o.ca_file = r.resolve(r.nonempty_string(v));
  } else if (key == "max_queue") {
    const std::int64_t n = r.integer(v);
    if (n < 1 || n > 1000) r.fail(v, fmt::format("must be between 1 and 1000, got {}", n));
    o.max_queue = static_cast<std::size_t>(n);
  } else if (key == "resource") {
    apply_resource(r, o, v);
  }
}

// What the variables give, before the section's own keys override it.
void apply_environment(const Reader& r, OtlpOptions& o, const Item& item) {
  if (auto [name, url] = first_env({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"}); !url.empty()) {
    o.endpoint = url;
    o.endpoint_source = name;
  } else if (auto [base_name, base] = first_env({"OTEL_EXPORTER_OTLP_ENDPOINT"}); !base.empty()) {
    o.endpoint = with_metrics_path(base);
    o.endpoint_source = base_name;
  }
  if (!o.endpoint.empty())
    if (auto problem = endpoint_problem(o.endpoint))
      r.fail(item.mark, fmt::format("otlp: {} {}", o.endpoint_source, *problem));
  if (auto [name, p] =
          first_env({"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"});
      !p.empty())
    o.protocol = protocol_named(r, item.mark, p);
  for (const char* var : {"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS"}) {
    const auto pairs = parse_otel_key_values(env(var));
    if (!pairs) r.fail(item.mark, fmt::format("otlp: {} is not a list of key=value", var));
    for (const auto& [k, v] : *pairs) {
      // Never the value in a message: it is a secret.
      if (auto err = detail::check_header_name(k))
        r.fail(item.mark, fmt::format("otlp: {}: {}", var, *err));
      if (auto err = detail::check_header_value(k, v))
        r.fail(item.mark, fmt::format("otlp: {}: {}", var, *err));
      set_header(o, k, v, true);
    }
  }
  const auto attrs = parse_otel_key_values(env("OTEL_RESOURCE_ATTRIBUTES"));
  if (!attrs) r.fail(item.mark, "otlp: OTEL_RESOURCE_ATTRIBUTES is not a list of key=value");
  o.resource = *attrs;
  if (std::string service = env("OTEL_SERVICE_NAME"); !service.empty()) {
    std::erase_if(o.resource, [](const auto& a) { return a.first == "service.name"; });
    o.resource.emplace_back("service.name", service);
  }
}

}  // namespace

std::optional<std::vector<std::pair<std::string, std::string>>> parse_otel_key_values(
    std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    item = text::trim_blanks(item);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return std::nullopt;
    out.emplace_back(text::percent_decoded(text::trim_blanks(item.substr(0, eq)), false),
                     text::percent_decoded(text::trim_blanks(item.substr(eq + 1)), false));
  }
  return out;
}

namespace detail {

OtlpOptions parse_otlp(const Reader& r, const Item& item) {
  OtlpOptions o;
  if (!item.node.IsNull()) r.require_mapping(item);
  apply_environment(r, o, item);
  bool endpoint_key = false;  // set, even when wrong: no second error for it
  if (!item.node.IsNull()) {
    Fields f(r, item, "otlp",
             {"endpoint", "headers", "interval", "timeout", "protocol", "temporality",
              "compression", "ca_file", "max_queue", "resource"},
             "otlp.");
    for (const auto& e : f.entries()) r.attempt([&] { apply_otlp_key(r, o, e.key, e.value); });
    endpoint_key = f.has("endpoint") || f.misspelt("endpoint");
  }
  if (o.endpoint.empty() && endpoint_key) Reader::abandon();
  if (o.endpoint.empty())
    r.fail(item.mark,
           "otlp: needs an endpoint (otlp.endpoint, or OTEL_EXPORTER_OTLP_ENDPOINT in the "
           "environment)");
  if (o.timeout > o.interval)
    r.fail(item.mark, fmt::format("otlp: timeout ({}) must not exceed interval ({})",
                                  format_duration(o.timeout), format_duration(o.interval)));
  return o;
}

}  // namespace detail
}  // namespace lse::config
