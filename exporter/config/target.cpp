// `defaults:` and `targets:` (DESIGN §4). Every key of `defaults` is a
// "setting" a target may override; a target is a copy of the defaults with its
// own settings applied on top, so inheritance is one assignment per key.
// Merging, not replacing, happens where a partial override is the natural
// reading: timeout and tls merge field by field, headers and labels merge by
// name.
// Cross-field rules (first_token <= total, cert+key) are checked in the scope
// that sets them, against the merged values, so the error points at the line
// that made the combination invalid. Each key is one Reader::attempt: a
// target with three mistakes reports three errors. Rules that need the rest
// of the file (the interval floor, stall thresholds on gap bucket bounds) are
// checked at the key that sets the value, or, for a built-in default, at the
// top-level key that makes it wrong.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "config/body.hpp"
#include "config/rules.hpp"
#include "config/sections.hpp"
#include "metrics/families.hpp"
#include "util/text.hpp"

namespace lse::config::detail {
namespace {

const std::vector<std::string_view> kSettingKeys = {"interval",
                                                    "jitter",
                                                    "timeout",
                                                    "stall_threshold",
                                                    "warmup",
                                                    "max_tokens",
                                                    "temperature",
                                                    "count",
                                                    "accept_encoding",
                                                    "client",
                                                    "headers",
                                                    "include_usage",
                                                    "max_event_bytes",
                                                    "proxy_from_environment",
                                                    "tls",
                                                    "labels",
                                                    "alert",
                                                    "http_version",
                                                    "http2"};

const std::vector<std::string_view> kTargetOnlyKeys = {
    "name", "url", "api", "model", "auth", "prompts", "proxy_url", "body", "provider"};

std::vector<std::string_view> target_keys() {
  std::vector<std::string_view> keys = kTargetOnlyKeys;
  keys.insert(keys.end(), kSettingKeys.begin(), kSettingKeys.end());
  return keys;
}

std::string join(const std::vector<std::string_view>& words) {
  std::string out;
  for (auto w : words) out += (out.empty() ? "" : ", ") + std::string(w);
  return out;
}

Duration positive_duration(const Reader& r, const Item& item) {
  Duration d = r.duration(item);
  if (d <= Duration::zero()) r.fail(item, fmt::format("must be > 0, got {}", format_duration(d)));
  return d;
}

double number_in(const Reader& r, const Item& item, double lo, double hi) {
  double v = r.number(item);
  if (v < lo || v > hi) r.fail(item, fmt::format("must be between {} and {}, got {}", lo, hi, v));
  return v;
}

int int_at_least(const Reader& r, const Item& item, std::int64_t min) {
  std::int64_t v = r.integer(item);
  if (v < min) r.fail(item, fmt::format("must be >= {}, got {}", min, v));
  if (v > std::numeric_limits<int>::max()) r.fail(item, fmt::format("is too large: {}", v));
  return static_cast<int>(v);
}

// A list of distinct words from `allowed`.
std::vector<std::string> word_list(const Reader& r, const Item& item,
                                   const std::vector<std::string_view>& allowed) {
  std::vector<std::string> out;
  for (const Item& element : r.list(item)) {
    std::string word = r.string(element);
    if (std::find(allowed.begin(), allowed.end(), word) == allowed.end()) {
      r.fail(element, fmt::format("unknown value '{}' (allowed: {})", word, join(allowed)));
    }
    if (std::find(out.begin(), out.end(), word) != out.end()) {
      r.fail(element, fmt::format("'{}' is listed twice", word));
    }
    out.push_back(word);
  }
  return out;
}

void apply_timeout(const Reader& r, Target& t, const Item& item) {
  Fields f(r, item, item.name, {"first_token", "idle", "total"}, item.name + ".");
  for (const auto& e : f.entries()) {
    Duration d = positive_duration(r, e.value);
    if (e.key == "first_token") t.timeout.first_token = d;
    if (e.key == "idle") t.timeout.idle = d;
    if (e.key == "total") t.timeout.total = d;
  }
  // The total budget bounds the others; blame the key this scope set.
  auto check = [&](std::string_view part, Duration value) {
    if (value <= t.timeout.total) return;
    if (auto own = f.get(part)) {
      r.fail(*own, fmt::format("{} must not exceed {}.total ({})", format_duration(value),
                               item.name, format_duration(t.timeout.total)));
    }
    if (auto total = f.get("total")) {
      r.fail(*total,
             fmt::format("{} must not be shorter than {}.{} ({})", format_duration(t.timeout.total),
                         item.name, part, format_duration(value)));
    }
    // Neither key is set here (both inherited, the scope's own keys unknown
    // or misspelt): blame the scope.
    r.fail(item, fmt::format("{} ({}) exceeds total ({}), both set elsewhere", part,
                             format_duration(value), format_duration(t.timeout.total)));
  };
  check("first_token", t.timeout.first_token);
  check("idle", t.timeout.idle);
}

// The on-call thresholds merge field by field with those of `defaults:`,
// like timeout.
void apply_alert(const Reader& r, Target& t, const Item& item) {
  Fields f(r, item, item.name, {"ttft", "worst_gap", "stall_share"}, item.name + ".");
  for (const auto& e : f.entries()) {
    if (e.key == "ttft") t.alert.ttft = positive_duration(r, e.value);
    if (e.key == "worst_gap") t.alert.worst_gap = positive_duration(r, e.value);
    if (e.key == "stall_share") t.alert.stall_share = number_in(r, e.value, 0, 1);
  }
}

// A client certificate and its key are mounted secrets like the API key:
// with read_secrets off their paths are only listed as not checked.
std::string existing_file(const Reader& r, const Item& item, bool secret = false) {
  std::string path = r.resolve(r.nonempty_string(item));
  if (secret && !r.options().read_secrets) {
    r.not_checked(item, fmt::format("file '{}'", path));
    return path;
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    r.fail(item, fmt::format("file '{}' does not exist or is not a regular file", path));
  }
  return path;
}

void apply_tls(const Reader& r, Target& t, const Item& item) {
  Fields f(r, item, item.name,
           {"ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify"},
           item.name + ".");
  for (const auto& e : f.entries()) {
    if (e.key == "ca_file") t.tls.ca_file = existing_file(r, e.value);
    if (e.key == "cert_file") t.tls.cert_file = existing_file(r, e.value, true);
    if (e.key == "key_file") t.tls.key_file = existing_file(r, e.value, true);
    if (e.key == "server_name") t.tls.server_name = r.nonempty_string(e.value);
    if (e.key == "insecure_skip_verify") t.tls.insecure_skip_verify = r.boolean(e.value);
  }
  if (t.tls.cert_file.empty() != t.tls.key_file.empty()) {
    r.fail(item, "cert_file and key_file must be set together (client certificate and its key)");
  }
}

void apply_count(const Reader& r, Target& t, const Item& item) {
  auto words = word_list(r, item, {"content", "reasoning", "tool_calls"});
  if (words.empty()) r.fail(item, "must name at least one of content, reasoning, tool_calls");
  t.count = api::CountSet{false, false, false};
  for (const auto& w : words) {
    if (w == "content") t.count.content = true;
    if (w == "reasoning") t.count.reasoning = true;
    if (w == "tool_calls") t.count.tool_calls = true;
  }
}

std::string secret_from_file(const Reader& r, const Item& item);
std::string secret_from_env(const Reader& r, const Item& item);

// A header's value: text, or `{env: NAME}` / `{file: path}` read at load
// like auth's secret (then `secret` is set: always masked, whatever the name).
std::string header_value(const Reader& r, const Item& value, bool& secret) {
  secret = value.node.IsMap();
  if (!secret) return r.string(value);
  Fields f(r, value, value.name, {"env", "file"}, value.name + ".");
  if (f.entries().size() != 1) {
    if (f.entries().empty() && f.had_unknown_keys()) Reader::abandon();
    r.fail(value.mark, fmt::format("{} takes exactly one of env or file (where its value "
                                   "comes from)",
                                   value.name));
  }
  const Fields::Entry& source = f.entries().front();
  return source.key == "file" ? secret_from_file(r, source.value)
                              : secret_from_env(r, source.value);
}

// Remembers by lower-case name which headers hold a loaded secret.
void mark_secret_header(Target& t, const std::string& name, bool secret) {
  const std::string lower = text::to_lower(name);
  std::erase(t.secret_headers, lower);
  if (secret) t.secret_headers.push_back(lower);
}

void apply_headers(const Reader& r, Target& t, const Item& item) {
  r.require_mapping(item);
  std::vector<std::string> seen;
  for (const auto& kv : item.node) {
    std::string name = kv.first.Scalar();
    if (auto err = check_header_name(name)) r.fail(kv.first.Mark(), *err);
    for (const auto& s : seen) {
      if (text::iequals(s, name))
        r.fail(kv.first.Mark(), fmt::format("header '{}' repeats '{}'", name, s));
    }
    seen.push_back(name);
    Item value{kv.second, kv.second.IsNull() ? kv.first.Mark() : kv.second.Mark(),
               item.name + "." + name};
    bool secret = false;
    std::string text = header_value(r, value, secret);
    if (auto err = check_header_value(name, text)) r.fail(value, *err);
    mark_secret_header(t, name, secret);
    auto same = std::find_if(t.headers.begin(), t.headers.end(),
                             [&](const auto& h) { return text::iequals(h.first, name); });
    if (same != t.headers.end()) {
      *same = {name, text};  // a target's header replaces the default of that name
    } else {
      t.headers.emplace_back(name, text);
    }
  }
}

// Extra labels on every series of the target. A target's labels merge with
// those of `defaults:` by name (the target's value wins), like headers.
void apply_labels(const Reader& r, Target& t, const Item& item) {
  r.require_mapping(item);
  static const std::vector<std::string> reserved = metrics::reserved_label_names();
  for (const auto& kv : item.node) {
    const std::string name = kv.first.Scalar();
    if (auto err = check_label_name(name, reserved))
      r.fail(kv.first.Mark(), fmt::format("{}: {}", item.name, *err));
    Item value{kv.second, kv.second.IsNull() ? kv.first.Mark() : kv.second.Mark(),
               item.name + "." + name};
    // Prometheus reads an empty value as no label at all.
    t.labels.insert_or_assign(name, r.nonempty_string(value));
  }
}

HttpVersion http_version(const Reader& r, const Item& item) {
  // `http_version: 2` and `"2"` are the same scalar to yaml-cpp; 1.1 too.
  const std::string text = item.node.IsScalar() ? item.node.Scalar() : std::string();
  if (text == "1.1") return HttpVersion::v1_1;
  if (text == "2") return HttpVersion::v2;
  if (text == "auto") return HttpVersion::automatic;
  r.fail(item, fmt::format("must be \"1.1\", \"2\" or \"auto\", got {}", describe(item.node)));
}

std::uint32_t window_size(const Reader& r, const Item& item) {
  const std::uint64_t n = r.byte_size(item);
  if (n < Http2Windows::kMin || n > Http2Windows::kMax) {
    r.fail(item, fmt::format("must be between {} and {} bytes (64KiB - 1 .. 2GiB - 1), got {}",
                             Http2Windows::kMin, Http2Windows::kMax, n));
  }
  return static_cast<std::uint32_t>(n);
}

// The windows merge field by field with those of `defaults:`, like timeout.
void apply_http2(const Reader& r, Target& t, const Item& item) {
  Fields f(r, item, item.name, {"stream_window", "connection_window"}, item.name + ".");
  for (const auto& e : f.entries()) {
    if (e.key == "stream_window") t.http2.stream_window = window_size(r, e.value);
    if (e.key == "connection_window") t.http2.connection_window = window_size(r, e.value);
  }
}

// The floor keeps a typo (`interval: 1ms`) from hammering a paid API.
Duration interval_at_least_floor(const Reader& r, const Item& item, const Context& ctx) {
  const Duration d = positive_duration(r, item);
  if (d < ctx.min_interval) {
    r.fail(item, fmt::format("{} is below min_interval ({}); raise it, or lower min_interval: "
                             "if probing that often is intended",
                             format_duration(d), format_duration(ctx.min_interval)));
  }
  return d;
}

std::string bound_text(double seconds) {
  return format_duration(std::chrono::round<Duration>(std::chrono::duration<double>(seconds)));
}

// "is not a bucket boundary of buckets.gap (nearest: 250ms below, 300ms above)"
std::optional<std::string> off_gap_bounds(Duration threshold, const Context& ctx) {
  const BucketPlace place = bucket_place(ctx.gap_bounds, threshold);
  if (place.on_bound) return std::nullopt;
  std::string nearest;
  if (place.below) nearest = bound_text(*place.below) + " below";
  if (place.above) nearest += (nearest.empty() ? "" : ", ") + bound_text(*place.above) + " above";
  return fmt::format(
      "{} is not a bucket boundary of buckets.gap (nearest boundaries: {}), so the stalls "
      "counted and the gap histogram's buckets disagree",
      format_duration(threshold), nearest);
}

Duration stall_threshold(const Reader& r, const Item& item, const Context& ctx) {
  const Duration d = positive_duration(r, item);
  if (auto off = off_gap_bounds(d, ctx)) r.warn(item, *off);
  return d;
}

// One `defaults:` key, also overridable per target. Returns false for keys
// that are not settings.
bool apply_setting(const Reader& r, Target& t, const std::string& key, const Item& v,
                   const Context& ctx) {
  if (key == "interval") {
    t.interval = interval_at_least_floor(r, v, ctx);
  } else if (key == "jitter") {
    t.jitter = number_in(r, v, 0, 0.5);
  } else if (key == "timeout") {
    apply_timeout(r, t, v);
  } else if (key == "stall_threshold") {
    t.stall_threshold = stall_threshold(r, v, ctx);
  } else if (key == "alert") {
    apply_alert(r, t, v);
  } else if (key == "warmup") {
    t.warmup = int_at_least(r, v, 0);
  } else if (key == "max_tokens") {
    t.max_tokens = int_at_least(r, v, 1);
  } else if (key == "temperature") {
    t.temperature = number_in(r, v, 0, 2);
  } else if (key == "accept_encoding") {
    t.accept_encoding = word_list(r, v, {"gzip", "deflate", "br", "identity"});
  } else if (key == "client") {
    std::string client = r.string(v);
    if (client != "browser")
      r.fail(v, fmt::format("unknown client '{}' (allowed: browser)", client));
    t.client = ClientStyle::browser;
  } else if (key == "headers") {
    apply_headers(r, t, v);
  } else if (key == "include_usage") {
    t.include_usage = r.boolean(v);
  } else if (key == "max_event_bytes") {
    std::uint64_t n = r.byte_size(v);
    if (n == 0) r.fail(v, "must be > 0");
    t.max_event_bytes = static_cast<std::size_t>(n);
  } else if (key == "proxy_from_environment") {
    t.proxy_from_environment = r.boolean(v);
  } else if (key == "tls") {
    apply_tls(r, t, v);
  } else if (key == "count") {
    apply_count(r, t, v);
  } else if (key == "labels") {
    apply_labels(r, t, v);
  } else if (key == "http_version") {
    t.http_version = http_version(r, v);
  } else if (key == "http2") {
    apply_http2(r, t, v);
  } else {
    return false;
  }
  return true;
}

// The secret's value never appears in a message, only where it came from;
// nor does the secret file's path (the token pasted there by mistake would
// be echoed): the error's place shows the value.
std::string secret_from_file(const Reader& r, const Item& item) {
  if (!r.options().read_secrets) {
    r.not_checked(item, fmt::format("secret file '{}'", r.resolve(r.nonempty_string(item))));
    return {};
  }
  auto [path, content] = r.read_file(item, Reader::FileKind::secret);
  std::string value = trim_trailing_newlines(std::move(content));
  if (value.empty()) r.fail(item, "secret file is empty");
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
    r.fail(item, "secret file must hold a single line");
  }
  return value;
}

// A name with digits and lower-case letters that long is more likely the
// key pasted where its variable's name goes (ghp_..., a hex key) than a
// variable (OPENAI_API_KEY, http_proxy): messages then leave it out.
bool looks_like_a_token(std::string_view name) {
  constexpr std::size_t kLong = 16;
  const auto has = [&](auto pred) { return std::any_of(name.begin(), name.end(), pred); };
  return name.size() >= kLong && has([](char c) { return c >= '0' && c <= '9'; }) &&
         has([](char c) { return c >= 'a' && c <= 'z'; });
}

// "environment variable OPENAI_API_KEY", or without the name when it may be
// the secret itself.
std::string env_variable(std::string_view name) {
  if (looks_like_a_token(name))
    return "the environment variable it names (a name that looks like a token: "
           "bearer_token_env and env name the variable, not the token)";
  return fmt::format("environment variable {}", name);
}

std::string secret_from_env(const Reader& r, const Item& item) {
  std::string name = r.nonempty_string(item);
  // Never the value: a token pasted here is the usual reason it is no name.
  if (check_env_name(name).has_value()) {
    r.fail(item,
           "must name an environment variable (letters, digits and _, not starting with a "
           "digit), not hold the token itself");
  }
  if (!r.options().read_secrets) {
    r.not_checked(item, env_variable(name));
    return {};
  }
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) r.fail(item, env_variable(name) + " is not set");
  std::string s = value;
  if (s.empty()) r.fail(item, env_variable(name) + " is empty");
  if (s.find_first_of("\r\n") != std::string::npos) {
    r.fail(item, env_variable(name) + " must hold a single line");
  }
  return s;
}

// Exactly one secret source, and auth.header exactly when the source is a
// plain file/env (a bearer token names its own header).
const Fields::Entry& secret_source(const Reader& r, const Item& item, const Fields& f) {
  const Fields::Entry* source = nullptr;
  for (const auto& e : f.entries()) {
    if (e.key == "header") continue;
    if (source != nullptr) {
      r.fail(e.key_mark, fmt::format("auth takes exactly one secret source, got both {} and {}",
                                     source->key, e.key));
    }
    source = &e;
  }
  auto header = f.get("header");
  if (source == nullptr && f.had_unknown_keys()) Reader::abandon();  // `token:` said it
  if (source == nullptr) {
    r.fail(
        item.mark,
        header
            ? "auth.header needs file or env (where the header value comes from)"
            : "auth needs one of bearer_token_file, bearer_token_env, or header with file or env");
  }
  const bool bearer = source->key.rfind("bearer_token_", 0) == 0;
  if (bearer && header) {
    r.fail(
        header->mark,
        "auth.header cannot be combined with bearer_token_file/bearer_token_env; use file or env");
  }
  if (!bearer && !header) {
    r.fail(source->key_mark, fmt::format("auth.{} needs auth.header (the header to send it in); "
                                         "for a bearer token use bearer_token_{}",
                                         source->key, source->key));
  }
  return *source;
}

Auth parse_auth(const Reader& r, const Item& item) {
  // Not describe(): `auth: sk-...` would be echoed back.
  if (!item.node.IsMap()) {
    r.fail(item,
           "expected a mapping (bearer_token_file, bearer_token_env, or header with file "
           "or env), not a value: the key goes in a file or an environment variable");
  }
  Fields f(r, item, "auth", {"bearer_token_file", "bearer_token_env", "header", "file", "env"},
           "auth.");
  const Fields::Entry& source = secret_source(r, item, f);
  Auth auth;
  const bool from_file = source.key == "bearer_token_file" || source.key == "file";
  if (from_file) {
    auth.secret.value = secret_from_file(r, source.value);
    auth.secret.source = "file " + r.resolve(r.string(source.value));
  } else {
    auth.secret.value = secret_from_env(r, source.value);
    auth.secret.source = "env " + r.string(source.value);
  }
  if (source.key.rfind("bearer_token_", 0) == 0) {
    auth.kind = Auth::Kind::bearer;
  } else {
    auth.kind = Auth::Kind::header;
    const Item header = *f.get("header");
    auth.header_name = r.nonempty_string(header);
    // Not the value: `header: Bearer sk-...` is the usual way to get it wrong.
    if (check_header_name(auth.header_name).has_value()) {
      r.fail(header,
             "must be a header name (letters, digits and !#$%&'*+-.^_`|~, e.g. X-Api-Key), not "
             "the header's value: the value comes from file or env");
    }
  }
  return auth;
}

std::vector<std::string> prompt_names(const Reader& r, const Item& item, const Context& ctx) {
  std::vector<std::string> defined;
  defined.reserve(ctx.prompts.size());
  for (const auto& [name, p] : ctx.prompts) defined.push_back(name);
  std::vector<std::string_view> allowed(defined.begin(), defined.end());
  std::vector<std::string> names;
  for (const Item& element : r.list(item)) {
    std::string name = r.string(element);
    if (!ctx.prompts.count(name) && ctx.prompts_complete) {
      r.fail(element, fmt::format("unknown prompt '{}' (defined: {})", name, join(allowed)));
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      r.fail(element, fmt::format("prompt '{}' is listed twice", name));
    }
    names.push_back(name);
  }
  if (names.empty()) r.fail(item, "must list at least one prompt (omit the key to use all)");
  return names;
}

// A key only a target has (not a setting of `defaults:`).
void apply_target_key(const Reader& r, Target& t, const Fields::Entry& e, const Context& ctx) {
  const Item& v = e.value;
  if (e.key == "name") {
    t.name = r.string(v);
    if (auto err = check_name("target", t.name)) r.fail(v, *err);
  } else if (e.key == "url") {
    auto url = normalize_target_url(r.string(v));
    if (!url.ok()) r.fail(v.mark, url.error);
    t.url = url.value;
  } else if (e.key == "api") {
    auto dialect = parse_api(r.string(v));
    if (!dialect.ok()) r.fail(v.mark, dialect.error);
    t.api = dialect.value;
  } else if (e.key == "model") {
    t.model = r.nonempty_string(v);
  } else if (e.key == "auth") {
    t.auth = parse_auth(r, v);
  } else if (e.key == "prompts") {
    t.prompts = prompt_names(r, v, ctx);
  } else if (e.key == "proxy_url") {
    auto url = normalize_proxy_url(r.string(v));
    if (!url.ok()) r.fail(v.mark, url.error);
    t.proxy_url = url.value;
  } else if (e.key == "body") {
    t.body = yaml_to_json_object(r, v);
  } else if (e.key == "provider") {
    t.provider = r.nonempty_string(v);  // gen_ai.provider.name of its OTLP metrics
  }
}

// The auth header must not also be set by headers: (merged from defaults too).
// A bearer token goes in the dialect's key header (api::key_header).
void check_auth_header_unique(const Reader& r, const Target& t, const Item& auth_item) {
  const std::string auth_header = t.auth.kind == Auth::Kind::bearer
                                      ? std::string(api::key_header(t.api).name)
                                      : t.auth.header_name;
  for (const auto& [name, value] : t.headers) {
    if (text::iequals(name, auth_header)) {
      r.fail(auth_item.mark, fmt::format("header '{}' is set both by auth and by headers", name));
    }
  }
}

// A target that sets neither key itself nor through `defaults:` runs on the
// built-in value; when a top-level key makes that value wrong, the fix goes
// there (said once, however many targets inherit it).
void check_built_in_settings(const Reader& r, const Target& t, const Fields& f,
                             const Context& ctx) {
  auto built_in = [&](std::string_view key) {
    return !f.has(key) && !ctx.set_in_defaults.count(std::string(key));
  };
  if (built_in("interval") && t.interval < ctx.min_interval && ctx.min_interval_item) {
    r.record(ctx.min_interval_item->mark,
             fmt::format("min_interval: {} is above the built-in interval ({}) of targets that "
                         "set none; set defaults.interval",
                         format_duration(ctx.min_interval), format_duration(t.interval)));
  }
  if (built_in("stall_threshold") && ctx.gap_item) {
    if (auto off = off_gap_bounds(t.stall_threshold, ctx))
      r.warn(*ctx.gap_item, "the built-in stall_threshold " + *off);
  }
}

// The target's place and, when it has a valid one, its name item (for the
// duplicate-name error, which belongs at the second target's name).
struct ParsedTarget {
  Target target;
  std::optional<Item> name;
};

ParsedTarget parse_target(const Reader& r, const Item& item, const Target& defaults,
                          const Context& ctx) {
  Fields f(r, item, item.name, target_keys(), "");
  Target t = defaults;
  t.line.value = item.mark.line + 1;
  // Required keys first, so a half-written target says what it lacks (a
  // misspelt one was reported as the typo already).
  for (std::string_view key : {"name", "url", "model"})
    if (!f.misspelt(key)) r.attempt([&] { f.require(key); });
  bool auth_ok = true, name_ok = true;
  for (const auto& e : f.entries()) {
    const bool ok = r.attempt([&] {
      if (!apply_setting(r, t, e.key, e.value, ctx)) apply_target_key(r, t, e, ctx);
    });
    if (e.key == "auth") auth_ok = auth_ok && ok;
    if (e.key == "name") name_ok = name_ok && ok;
  }
  if (!f.get("prompts")) {
    for (const auto& [name, p] : ctx.prompts) t.prompts.push_back(name);
  }
  if (auto auth_item = f.get("auth"); auth_item && auth_ok)
    r.attempt([&] { check_auth_header_unique(r, t, *auth_item); });
  check_built_in_settings(r, t, f, ctx);
  auto name = f.get("name");
  return {std::move(t), name_ok ? name : std::nullopt};
}

}  // namespace

Target parse_defaults(const Reader& reader, const std::optional<Item>& defaults, Context& context) {
  Target t;
  if (!defaults) return t;
  Fields f(reader, *defaults, "defaults", kSettingKeys, "");
  for (const auto& e : f.entries()) {
    reader.attempt([&] { apply_setting(reader, t, e.key, e.value, context); });
    context.set_in_defaults.insert(e.key);
  }
  return t;
}

std::vector<Target> parse_targets(const Reader& reader, const Item& targets, const Target& defaults,
                                  const Context& context) {
  std::vector<Item> items = reader.list(targets);
  if (items.empty()) reader.fail(targets, "must list at least one target");
  std::vector<Target> out;
  std::map<std::string, int> first_line;
  for (const Item& item : items) {
    reader.attempt([&] {
      ParsedTarget p = parse_target(reader, item, defaults, context);
      if (p.name) {
        auto [it, inserted] = first_line.emplace(p.target.name, p.target.line.value);
        // Blame the second target's name, where the fix goes.
        if (!inserted)
          reader.record(p.name->mark,
                        fmt::format("name: duplicate target name '{}' (first defined on line {})",
                                    p.target.name, it->second));
      }
      out.push_back(std::move(p.target));
    });
  }
  return out;
}

std::string header_text_or_secret(const Reader& r, const Item& value, bool& secret) {
  return header_value(r, value, secret);
}

}  // namespace lse::config::detail

namespace lse::config {

HttpVersion effective_http_version(const Target& target) {
  if (target.http_version) return *target.http_version;
  return target.client == ClientStyle::browser ? HttpVersion::automatic : HttpVersion::v1_1;
}

std::string_view to_string(HttpVersion version) {
  switch (version) {
    case HttpVersion::v1_1: return "1.1";
    case HttpVersion::v2: return "2";
    case HttpVersion::automatic: return "auto";
  }
  return "";
}

}  // namespace lse::config
