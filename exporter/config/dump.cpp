// dump_redacted: the effective config (defaults applied, paths resolved) as
// YAML for `/config` and `check-config`. Secrets are resolved at load time, so
// this is the one place that could leak them: every Secret, every header that
// looks like a credential, every `body:` value under a credential-like key,
// and every string anywhere in headers or body that holds a loaded secret is
// written as "<secret>".
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>

#include "config/config.hpp"
#include "util/text.hpp"

namespace lse::config {
namespace {

constexpr const char* kRedacted = "<secret>";

// The secret values the config loaded (env, files): wherever one of them
// shows up again (pasted into a header or the body), it is not shown.
class Secrets {
 public:
  explicit Secrets(const Config& config) {
    for (const auto& t : config.targets) {
      if (!t.auth.secret.value.empty()) values_.push_back(t.auth.secret.value);
      for (const auto& [name, value] : t.headers) {
        const bool loaded = std::find(t.secret_headers.begin(), t.secret_headers.end(),
                                      text::to_lower(name)) != t.secret_headers.end();
        if (loaded && !value.empty()) values_.push_back(value);
      }
    }
  }
  bool in(std::string_view s) const {
    return std::any_of(values_.begin(), values_.end(),
                       [&](const std::string& v) { return s.find(v) != std::string_view::npos; });
  }

 private:
  std::vector<std::string> values_;
};

// Strings a YAML reader would type as something else must be quoted, or the
// dump would not read back as what it shows ("true", "1.5", "null", "0x1f").
bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  static constexpr std::string_view kWords[] = {"true", "false", "yes", "no",   "on",
                                                "off",  "y",     "n",   "null", "~"};
  std::string l = text::to_lower(s);
  if (std::find(std::begin(kWords), std::end(kWords), l) != std::end(kWords)) return true;
  char c = s.front();
  if (std::isdigit(static_cast<unsigned char>(c))) return true;
  if ((c == '-' || c == '+' || c == '.') && s.size() > 1) {
    char d = s[1];
    return std::isdigit(static_cast<unsigned char>(d)) || d == '.' || d == 'i' || d == 'I' ||
           d == 'n' || d == 'N';
  }
  return false;
}

void emit_string(YAML::Emitter& out, const std::string& s) {
  // Multi-line text (prompts) is double-quoted with \n escapes: yaml-cpp's
  // literal style cannot say "no trailing newline", so it would not read back.
  if (s.find('\n') != std::string::npos || needs_quotes(s)) {
    out << YAML::DoubleQuoted << s;
  } else {
    out << s;
  }
}

void emit_number(YAML::Emitter& out, double d) {
  // Shortest round-trip form (yaml-cpp's own prints 0.005 as 0.0050000000000000001).
  std::string s = fmt::format("{}", d);
  out << s;
}

void emit_float(YAML::Emitter& out, double d) {
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // stays a float when read back
  out << s;
}

void emit_key(YAML::Emitter& out, const std::string& key) {
  out << YAML::Key;
  emit_string(out, key);
  out << YAML::Value;
}

void emit_duration(YAML::Emitter& out, const char* key, Duration d) {
  out << YAML::Key << key << YAML::Value << format_duration(d);
}

void emit_json(YAML::Emitter& out, const json::Value& v, const Secrets& secrets) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) {
          out << YAML::Null;
        } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::int64_t>) {
          out << x;
        } else if constexpr (std::is_same_v<T, double>) {
          emit_float(out, x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (secrets.in(x)) {
            out << kRedacted;
          } else {
            emit_string(out, x);
          }
        } else if constexpr (std::is_same_v<T, json::Array>) {
          out << YAML::BeginSeq;
          for (const auto& e : x) emit_json(out, e, secrets);
          out << YAML::EndSeq;
        } else {
          out << YAML::BeginMap;
          for (const auto& [k, e] : x) {
            emit_key(out, k);
            if (is_credential_key(k)) {
              out << kRedacted;
            } else {
              emit_json(out, e, secrets);
            }
          }
          out << YAML::EndMap;
        }
      },
      v.v);
}

void emit_list(YAML::Emitter& out, const std::vector<std::string>& words) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const auto& w : words) emit_string(out, w);
  out << YAML::EndSeq;
}

void emit_bounds(YAML::Emitter& out, const char* key, const std::vector<double>& bounds) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double b : bounds) emit_number(out, b);
  out << YAML::EndSeq;
}

// The url as the dump shows it: a query value may be a key (?key=...), so
// every value but api-version's is masked.
std::string shown_url(const std::string& url) {
  const auto q = url.find('?');
  if (q == std::string::npos) return url;
  std::string out = url.substr(0, q + 1);
  std::string_view rest = std::string_view(url).substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view param = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const std::string_view name = param.substr(0, param.find('='));
    if (out.back() != '?') out += '&';
    out += name == "api-version" ? std::string(param) : std::string(name) + "=<secret>";
  }
  return out;
}

// What and whom a target asks: name, url, api, model, cadence, request shape.
void emit_request(YAML::Emitter& out, const Target& t) {
  emit_key(out, "name");
  emit_string(out, t.name);
  emit_key(out, "url");
  emit_string(out, shown_url(t.url));
  out << YAML::Key << "api" << YAML::Value << std::string(api::dialect_name(t.api));
  emit_key(out, "model");
  emit_string(out, t.model);
  emit_duration(out, "interval", t.interval);
  out << YAML::Key << "jitter" << YAML::Value;
  emit_number(out, t.jitter);
  out << YAML::Key << "timeout" << YAML::Value << YAML::Flow << YAML::BeginMap;
  emit_duration(out, "first_token", t.timeout.first_token);
  emit_duration(out, "idle", t.timeout.idle);
  emit_duration(out, "total", t.timeout.total);
  out << YAML::EndMap;
  emit_duration(out, "stall_threshold", t.stall_threshold);
  out << YAML::Key << "alert" << YAML::Value << YAML::Flow << YAML::BeginMap;
  emit_duration(out, "ttft", t.alert.ttft);
  emit_duration(out, "worst_gap", t.alert.worst_gap);
  out << YAML::Key << "stall_share" << YAML::Value;
  emit_number(out, t.alert.stall_share);
  out << YAML::EndMap;
  out << YAML::Key << "warmup" << YAML::Value << t.warmup;
  out << YAML::Key << "max_tokens" << YAML::Value << t.max_tokens;
  out << YAML::Key << "temperature" << YAML::Value;
  emit_number(out, t.temperature);
  std::vector<std::string> count;
  if (t.count.content) count.emplace_back("content");
  if (t.count.reasoning) count.emplace_back("reasoning");
  if (t.count.tool_calls) count.emplace_back("tool_calls");
  out << YAML::Key << "count" << YAML::Value;
  emit_list(out, count);
}

// auth and headers: where secrets live, so every value is redacted or judged.
void emit_credentials(YAML::Emitter& out, const Target& t, const Secrets& secrets) {
  if (t.auth.kind != Auth::Kind::none) {
    out << YAML::Key << "auth" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "kind" << YAML::Value
        << (t.auth.kind == Auth::Kind::bearer ? "bearer" : "header");
    emit_key(out, "header");
    emit_string(out, t.auth.header_name);
    emit_key(out, "source");
    emit_string(out, t.auth.secret.source);
    out << YAML::Key << "value" << YAML::Value << kRedacted;
    out << YAML::EndMap;
  }
  if (t.headers.empty()) return;
  out << YAML::Key << "headers" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, value] : t.headers) {
    emit_key(out, name);
    if (is_secret_header(t, name) || secrets.in(value)) {
      out << kRedacted;
    } else {
      emit_string(out, value);
    }
  }
  out << YAML::EndMap;
}

void emit_tls(YAML::Emitter& out, const Target& t) {
  out << YAML::Key << "tls" << YAML::Value << YAML::BeginMap;
  for (auto [key, value] :
       {std::pair{"ca_file", &t.tls.ca_file}, std::pair{"cert_file", &t.tls.cert_file},
        std::pair{"key_file", &t.tls.key_file}, std::pair{"server_name", &t.tls.server_name}}) {
    if (value->empty()) continue;
    emit_key(out, key);
    emit_string(out, *value);
  }
  out << YAML::Key << "insecure_skip_verify" << YAML::Value << t.tls.insecure_skip_verify;
  out << YAML::EndMap;
}

// How the request travels: encodings, client style, prompts, TLS, proxy, body.
void emit_transport(YAML::Emitter& out, const Target& t, const Secrets& secrets) {
  out << YAML::Key << "accept_encoding" << YAML::Value;
  emit_list(out,
            t.accept_encoding.empty() ? std::vector<std::string>{"identity"} : t.accept_encoding);
  if (t.client == ClientStyle::browser) out << YAML::Key << "client" << YAML::Value << "browser";
  // The version in effect (a browser's "auto" when unset), quoted: 1.1 and 2
  // are strings, not numbers.
  out << YAML::Key << "http_version" << YAML::Value << YAML::DoubleQuoted
      << std::string(to_string(effective_http_version(t)));
  out << YAML::Key << "http2" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "stream_window" << YAML::Value << t.http2.stream_window;
  out << YAML::Key << "connection_window" << YAML::Value << t.http2.connection_window;
  out << YAML::EndMap;
  out << YAML::Key << "prompts" << YAML::Value;
  emit_list(out, t.prompts);
  emit_tls(out, t);
  if (!t.proxy_url.empty()) {
    emit_key(out, "proxy_url");
    emit_string(out, t.proxy_url);
  }
  out << YAML::Key << "proxy_from_environment" << YAML::Value << t.proxy_from_environment;
  out << YAML::Key << "include_usage" << YAML::Value << t.include_usage;
  out << YAML::Key << "max_event_bytes" << YAML::Value
      << static_cast<std::uint64_t>(t.max_event_bytes);
  if (t.body.is_object()) {
    out << YAML::Key << "body" << YAML::Value;
    emit_json(out, t.body, secrets);
  }
}

void emit_target(YAML::Emitter& out, const Target& t, const Secrets& secrets) {
  out << YAML::BeginMap;
  emit_request(out, t);
  if (!t.provider.empty()) {
    emit_key(out, "provider");
    emit_string(out, t.provider);
  }
  emit_credentials(out, t, secrets);
  emit_transport(out, t, secrets);
  if (!t.labels.empty()) {
    out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, value] : t.labels) {
      emit_key(out, name);
      emit_string(out, value);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

void emit_prompts(YAML::Emitter& out, const std::map<std::string, Prompt>& prompts) {
  out << YAML::Key << "prompts" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, p] : prompts) {
    emit_key(out, name);
    out << YAML::BeginMap;
    emit_key(out, "source");
    emit_string(out, p.source);
    emit_key(out, "text");
    emit_string(out, p.text);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

const char* phase_series_name(PhaseSeries p) {
  switch (p) {
    case PhaseSeries::histogram: return "histogram";
    case PhaseSeries::sum_count: return "sum_count";
    case PhaseSeries::off: return "off";
  }
  return "";
}

void emit_native(YAML::Emitter& out, const std::optional<histogram::ExponentialSettings>& native) {
  out << YAML::Key << "native" << YAML::Value;
  if (!native) {
    out << false;
    return;
  }
  out << YAML::BeginMap;
  out << YAML::Key << "schema" << YAML::Value << native->schema;
  out << YAML::Key << "zero_threshold" << YAML::Value;
  emit_number(out, native->zero_threshold);
  out << YAML::Key << "max_buckets" << YAML::Value << native->max_buckets;
  out << YAML::EndMap;
}

// The buckets go under metrics: (where they belong now), so the dump reads
// back as a valid config.
void emit_metrics(YAML::Emitter& out, const Config& config) {
  out << YAML::Key << "metrics" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "buckets" << YAML::Value << YAML::BeginMap;
  for (std::string_view key : Buckets::kKeys)
    emit_bounds(out, std::string(key).c_str(), *config.buckets.named(key));
  out << YAML::EndMap;
  out << YAML::Key << "phases" << YAML::Value << phase_series_name(config.metrics.phases);
  out << YAML::Key << "per_prompt" << YAML::Value << config.metrics.per_prompt;
  out << YAML::Key << "max_series" << YAML::Value << config.metrics.max_series;
  out << YAML::Key << "max_scrape_bytes" << YAML::Value << config.metrics.max_scrape_bytes;
  emit_native(out, config.metrics.native);
  out << YAML::Key << "classic" << YAML::Value << config.metrics.classic;
  out << YAML::EndMap;
}

void emit_rows(YAML::Emitter& out, const Rows& rows) {
  out << YAML::Key << "rows" << YAML::Value << YAML::BeginMap;
  if (!rows.path.empty()) {
    emit_key(out, "path");
    emit_string(out, rows.path);
  }
  out << YAML::Key << "max_size" << YAML::Value << rows.max_size;
  out << YAML::Key << "keep" << YAML::Value << rows.keep;
  out << YAML::Key << "ring" << YAML::Value << static_cast<std::uint64_t>(rows.ring);
  out << YAML::Key << "memory" << YAML::Value << rows.memory;
  out << YAML::EndMap;
}

void emit_limits(YAML::Emitter& out, const Limits& limits) {
  out << YAML::Key << "limits" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "prompt_file_bytes" << YAML::Value << limits.prompt_file_bytes;
  out << YAML::Key << "secret_file_bytes" << YAML::Value << limits.secret_file_bytes;
  out << YAML::EndMap;
}

void emit_diagnosis(YAML::Emitter& out, const DiagnosisThresholds& d) {
  auto seconds = [](double s) {
    return format_duration(std::chrono::round<Duration>(std::chrono::duration<double>(s)));
  };
  out << YAML::Key << "diagnosis" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "queue_ttft_seconds" << YAML::Value << seconds(d.queue_ttft_seconds);
  out << YAML::Key << "queue_gap_p95_seconds" << YAML::Value << seconds(d.queue_gap_p95_seconds);
  out << YAML::Key << "transport_gap_ratio" << YAML::Value;
  emit_number(out, d.transport_gap_ratio);
  out << YAML::Key << "transport_min_stall_ratio" << YAML::Value;
  emit_number(out, d.transport_min_stall_ratio);
  out << YAML::Key << "long_answer_duration_seconds" << YAML::Value
      << seconds(d.long_answer_duration_seconds);
  out << YAML::Key << "spread_ratio" << YAML::Value;
  emit_number(out, d.spread_ratio);
  out << YAML::Key << "min_probes" << YAML::Value << d.min_probes;
  out << YAML::Key << "burst_chunks" << YAML::Value << d.burst_chunks;
  out << YAML::Key << "release_share" << YAML::Value;
  emit_number(out, d.release_share);
  out << YAML::Key << "tokens_per_chunk_ratio" << YAML::Value;
  emit_number(out, d.tokens_per_chunk_ratio);
  out << YAML::EndMap;
}

void emit_web(YAML::Emitter& out, const Web& web) {
  out << YAML::Key << "web" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "max_connections" << YAML::Value << web.max_connections;
  out << YAML::Key << "max_connections_per_address" << YAML::Value
      << web.max_connections_per_address;
  emit_duration(out, "header_timeout", web.header_timeout);
  emit_duration(out, "idle_timeout", web.idle_timeout);
  emit_duration(out, "write_timeout", web.write_timeout);
  out << YAML::EndMap;
}

void emit_probe_endpoint(YAML::Emitter& out, const ProbeEndpointOptions& pe) {
  out << YAML::Key << "probe_endpoint" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "max_concurrent" << YAML::Value << pe.max_concurrent;
  out << YAML::EndMap;
}

// `otlp:` with every header value that is a credential (by name, or read
// from env:, file: or OTEL_EXPORTER_OTLP_HEADERS) shown as <secret>, and
// the endpoint without userinfo or query.
void emit_otlp(YAML::Emitter& out, const OtlpOptions& o) {
  out << YAML::Key << "otlp" << YAML::Value << YAML::BeginMap;
  emit_key(out, "endpoint");
  emit_string(out, shown_url(o.endpoint));
  emit_key(out, "endpoint_source");
  emit_string(out, o.endpoint_source);
  if (!o.headers.empty()) {
    out << YAML::Key << "headers" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, value] : o.headers) {
      emit_key(out, name);
      const bool loaded = std::find(o.secret_headers.begin(), o.secret_headers.end(),
                                    text::to_lower(name)) != o.secret_headers.end();
      if (loaded || is_sensitive_header(name)) {
        out << kRedacted;
      } else {
        emit_string(out, value);
      }
    }
    out << YAML::EndMap;
  }
  emit_duration(out, "interval", o.interval);
  emit_duration(out, "timeout", o.timeout);
  out << YAML::Key << "protocol" << YAML::Value
      << (o.protocol == OtlpOptions::Protocol::http_json ? "http/json" : "http/protobuf");
  out << YAML::Key << "temporality" << YAML::Value
      << (o.temporality == OtlpOptions::Temporality::delta ? "delta" : "cumulative");
  out << YAML::Key << "compression" << YAML::Value << (o.gzip ? "gzip" : "none");
  if (!o.ca_file.empty()) {
    emit_key(out, "ca_file");
    emit_string(out, o.ca_file);
  }
  out << YAML::Key << "max_queue" << YAML::Value << static_cast<std::uint64_t>(o.max_queue);
  if (!o.resource.empty()) {
    out << YAML::Key << "resource" << YAML::Value << YAML::BeginMap;
    for (const auto& [key, value] : o.resource) {
      emit_key(out, key);
      emit_string(out, value);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

}  // namespace

// A body key that names a credential: key, token, secret, password, in any
// case and anywhere in the name (api_key, accessToken, client_secret). A
// "tokens" is a count (max_tokens, maxOutputTokens), not a credential.
bool is_credential_key(std::string_view key) {
  const std::string l = text::to_lower(key);
  for (std::string_view hint : {"key", "secret", "password"})
    if (l.find(hint) != std::string::npos) return true;
  for (auto at = l.find("token"); at != std::string::npos; at = l.find("token", at + 1))
    if (at + 5 >= l.size() || l[at + 5] != 's') return true;
  return false;
}

// By the name's words (split on '-' and '_'), never by a substring of
// another word: "x-portkey-provider" is no credential for the "key" in
// "portkey", "x-portkey-api-key" and "Helicone-Auth" are. The last word
// decides: authorization, proxy-authorization, cookie, set-cookie, x-api-key,
// api-key and every name ending in -key, -token, -secret, -auth (and the
// like: -password, -credentials, -signature, -apikey).
bool is_sensitive_header(std::string_view name) {
  static constexpr std::string_view kLastWords[] = {
      "authorization", "cookie",   "key",    "apikey",     "token",       "secret",
      "auth",          "password", "passwd", "credential", "credentials", "signature"};
  const std::string l = text::to_lower(name);
  const auto cut = l.find_last_of("-_");
  const std::string_view last =
      cut == std::string::npos ? std::string_view(l) : std::string_view(l).substr(cut + 1);
  return std::find(std::begin(kLastWords), std::end(kLastWords), last) != std::end(kLastWords);
}

bool is_secret_header(const Target& target, std::string_view name) {
  return is_sensitive_header(name) ||
         std::find(target.secret_headers.begin(), target.secret_headers.end(),
                   text::to_lower(name)) != target.secret_headers.end();
}

std::string dump_redacted(const Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  emit_key(out, "listen");
  emit_string(out, config.listen);
  emit_duration(out, "min_interval", config.min_interval);
  emit_prompts(out, config.prompts);
  const Secrets secrets(config);
  out << YAML::Key << "targets" << YAML::Value << YAML::BeginSeq;
  for (const auto& t : config.targets) emit_target(out, t, secrets);
  out << YAML::EndSeq;
  emit_metrics(out, config);
  emit_rows(out, config.rows);
  emit_limits(out, config.limits);
  emit_diagnosis(out, config.diagnosis);
  emit_web(out, config.web);
  emit_probe_endpoint(out, config.probe_endpoint);
  if (config.otlp) emit_otlp(out, *config.otlp);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace lse::config
