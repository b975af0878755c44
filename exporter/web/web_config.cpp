// Parsing and validation of the exporter-toolkit web config (see
// web_config.hpp). Every message names file:line:col of the value at fault;
// a missing key is blamed on the section that lacks it (yaml-cpp has no mark
// for what is not there).
#include "web/web_config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <set>

#include "config/config.hpp"
#include "util/bounded_file.hpp"

namespace lse::web {
namespace {

constexpr std::array<std::pair<std::string_view, ClientAuth>, 6> kClientAuth{{
    {"NoClientCert", ClientAuth::no_client_cert},
    {"RequestClientCert", ClientAuth::request_client_cert},
    {"RequireAnyClientCert", ClientAuth::require_any_client_cert},
    {"RequireClientCert", ClientAuth::require_any_client_cert},  // exporter-toolkit's old name
    {"VerifyClientCertIfGiven", ClientAuth::verify_client_cert_if_given},
    {"RequireAndVerifyClientCert", ClientAuth::require_and_verify_client_cert},
}};

constexpr std::array<std::pair<std::string_view, TlsVersion>, 4> kVersions{{
    {"TLS10", TlsVersion::tls10},
    {"TLS11", TlsVersion::tls11},
    {"TLS12", TlsVersion::tls12},
    {"TLS13", TlsVersion::tls13},
}};

// Go's curve names -> OpenSSL's group names.
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kCurves{{
    {"CurveP256", "P-256"},
    {"CurveP384", "P-384"},
    {"CurveP521", "P-521"},
    {"X25519", "X25519"},
}};

// The headers exporter-toolkit lets an operator set, with the values it
// accepts (empty: any).
struct HeaderRule {
  std::string_view name;
  std::vector<std::string_view> values;
};
const std::vector<HeaderRule>& header_rules() {
  static const std::vector<HeaderRule> rules{
      {"Strict-Transport-Security", {}},
      {"X-Content-Type-Options", {"nosniff"}},
      {"X-Frame-Options", {"deny", "sameorigin"}},
      {"X-XSS-Protection", {}},
      {"Content-Security-Policy", {}},
  };
  return rules;
}

template <class Table>
std::string names_of(const Table& table) {
  std::string out;
  for (const auto& [name, value] : table) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// One key: value of a mapping, named by its path for messages.
struct Entry {
  std::string key;
  YAML::Node value;
  YAML::Mark mark;  // the value's; the key's when the value is empty
  std::string name;
};

class Reader {
 public:
  Reader(std::string file, std::string base_dir)
      : file_(std::move(file)), base_dir_(std::move(base_dir)) {}

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const {
    if (mark.is_null()) throw config::ConfigError(file_, 0, 0, message);
    throw config::ConfigError(file_, mark.line + 1, mark.column + 1, message);
  }
  [[noreturn]] void fail(const Entry& e, const std::string& message) const {
    fail(e.mark, e.name + ": " + message);
  }

  // The entries of a mapping (an empty value has none). Keys are distinct
  // strings, each in `allowed` unless `allowed` is empty.
  std::vector<Entry> entries(const Entry& map, const std::vector<std::string_view>& allowed) const {
    std::vector<Entry> out;
    if (map.value.IsNull()) return out;
    if (!map.value.IsMap()) fail(map, "expected a mapping");
    std::set<std::string> seen;
    for (const auto& kv : map.value) {
      const YAML::Node& key = kv.first;
      if (!key.IsScalar()) fail(key.Mark(), "mapping keys must be strings");
      const std::string& k = key.Scalar();
      if (!seen.insert(k).second) fail(key.Mark(), fmt::format("duplicate key '{}'", k));
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        fail(key.Mark(), fmt::format("unknown key '{}' in {} (allowed: {})", k, where(map),
                                     fmt::join(allowed, ", ")));
      const bool empty = kv.second.IsNull();
      out.push_back({k, kv.second, empty ? key.Mark() : kv.second.Mark(),
                     map.name.empty() ? k : map.name + "." + k});
    }
    return out;
  }

  std::string scalar(const Entry& e) const {
    if (e.value.IsNull()) return "";
    if (!e.value.IsScalar()) fail(e, "expected a string");
    return e.value.Scalar();
  }

  bool boolean(const Entry& e) const {
    const std::string s = scalar(e);
    if (s == "true") return true;
    if (s == "false") return false;
    fail(e, fmt::format("expected true or false, got '{}'", s));
  }

  // A list of strings, each with its mark.
  std::vector<std::pair<std::string, YAML::Mark>> strings(const Entry& e) const {
    std::vector<std::pair<std::string, YAML::Mark>> out;
    if (e.value.IsNull()) return out;
    if (!e.value.IsSequence()) fail(e, "expected a list of strings");
    for (const auto& item : e.value) {
      if (!item.IsScalar()) fail(item.Mark(), e.name + ": expected a list of strings");
      out.emplace_back(item.Scalar(), item.Mark());
    }
    return out;
  }

  std::string resolve(const std::string& path) const {
    std::filesystem::path p(path);
    if (p.is_absolute() || base_dir_.empty()) return p.lexically_normal().string();
    return (std::filesystem::path(base_dir_) / p).lexically_normal().string();
  }

  static Place place(const YAML::Mark& m) {
    return m.is_null() ? Place{} : Place{m.line + 1, m.column + 1};
  }

  const std::string& file() const { return file_; }

 private:
  static std::string where(const Entry& map) {
    return map.name.empty() ? std::string("the web config") : map.name;
  }
  std::string file_;
  std::string base_dir_;
};

template <class Table>
auto lookup(const Reader& r, const Entry& e, const Table& table, std::string_view what) {
  const std::string s = r.scalar(e);
  for (const auto& [name, value] : table)
    if (name == s) return value;
  r.fail(e, fmt::format("unknown {} '{}' (one of: {})", what, s, names_of(table)));
}

[[noreturn]] void unsupported(const Reader& r, const Entry& e) {
  r.fail(e,
         "not supported by llm-stream-exporter (it is a security setting, so it is refused "
         "rather than ignored); remove it, or put a proxy in front that enforces it");
}

// --- tls_server_config -------------------------------------------------------

// Sets `pem` from `cert:` (text) or `cert_file:` (path); both is an error.
void read_pem(const Reader& r, const Entry& e, bool is_file, Pem& pem) {
  const std::string value = r.scalar(e);
  if (value.empty()) return;  // blank: unset, as in exporter-toolkit
  const std::string_view base =
      is_file ? std::string_view(e.key).substr(0, e.key.size() - 5) : std::string_view(e.key);
  if (!pem.empty()) r.fail(e, fmt::format("set only one of {0} and {0}_file", base));
  pem.key = e.name;
  pem.place = Reader::place(e.mark);
  if (is_file) {
    pem.file = r.resolve(value);
  } else {
    pem.text = value;
  }
}

struct TlsSection {
  TlsServerConfig tls;
  std::optional<Entry> client_auth, min_version, other;  // for messages
};

void read_tls_entry(const Reader& r, const Entry& e, TlsSection& s) {
  TlsServerConfig& t = s.tls;
  const std::string& k = e.key;
  if (k == "cert" || k == "cert_file") return read_pem(r, e, k == "cert_file", t.cert);
  if (k == "key" || k == "key_file") return read_pem(r, e, k == "key_file", t.key);
  if (k == "client_ca" || k == "client_ca_file")
    return read_pem(r, e, k == "client_ca_file", t.client_ca);
  if (k == "client_allowed_sans") unsupported(r, e);
  if (k == "client_auth_type") {
    if (r.scalar(e).empty()) return;
    s.client_auth = e;
    t.client_auth = lookup(r, e, kClientAuth, "client_auth_type");
    return;
  }
  s.other = e;
  if (k == "min_version") {
    s.min_version = e;
    t.min_version = lookup(r, e, kVersions, "TLS version");
  } else if (k == "max_version") {
    t.max_version = lookup(r, e, kVersions, "TLS version");
  } else if (k == "prefer_server_cipher_suites") {
    t.prefer_server_cipher_suites = r.boolean(e);
  } else if (k == "cipher_suites") {
    for (const auto& [name, mark] : r.strings(e)) t.cipher_suites.push_back(name);
    t.cipher_suites_place = Reader::place(e.mark);
  } else if (k == "curve_preferences") {
    for (const auto& [name, mark] : r.strings(e)) {
      Entry item{name, YAML::Node(name), mark, e.name};
      t.curves.emplace_back(lookup(r, item, kCurves, "curve"));
    }
  }
}

void check_tls(const Reader& r, const Entry& section, const TlsSection& s) {
  const TlsServerConfig& t = s.tls;
  if (t.cert.empty()) r.fail(section, "missing cert_file (or cert): TLS needs a certificate");
  if (t.key.empty()) r.fail(section, "missing key_file (or key): TLS needs the certificate's key");
  const bool verifies = t.client_auth == ClientAuth::verify_client_cert_if_given ||
                        t.client_auth == ClientAuth::require_and_verify_client_cert;
  if (verifies && t.client_ca.empty())
    r.fail(*s.client_auth, fmt::format("{} needs client_ca_file (or client_ca): the CA to verify "
                                       "client certificates against",
                                       to_string(t.client_auth)));
  if (!t.client_ca.empty() && t.client_auth == ClientAuth::no_client_cert)
    throw config::ConfigError(r.file(), t.client_ca.place.line, t.client_ca.place.column,
                              t.client_ca.key +
                                  ": a client CA is set but client_auth_type is NoClientCert "
                                  "(the default); set client_auth_type: "
                                  "RequireAndVerifyClientCert to require client certificates");
  if (t.min_version > t.max_version)
    r.fail(*s.min_version, fmt::format("{} is above max_version {}", to_string(t.min_version),
                                       to_string(t.max_version)));
}

std::optional<TlsServerConfig> tls_section(const Reader& r, const Entry& section) {
  static const std::vector<std::string_view> kKeys{"cert",
                                                   "key",
                                                   "client_ca",
                                                   "cert_file",
                                                   "key_file",
                                                   "client_ca_file",
                                                   "client_auth_type",
                                                   "client_allowed_sans",
                                                   "min_version",
                                                   "max_version",
                                                   "cipher_suites",
                                                   "prefer_server_cipher_suites",
                                                   "curve_preferences"};
  TlsSection s;
  for (const Entry& e : r.entries(section, kKeys)) read_tls_entry(r, e, s);
  const TlsServerConfig& t = s.tls;
  // TLS is on when any of these is set, as in exporter-toolkit (TLSConfig.IsEnabled).
  const bool enabled = !t.cert.empty() || !t.key.empty() || !t.client_ca.empty() || s.client_auth;
  if (!enabled) {
    // exporter-toolkit would serve plain HTTP here; a min_version without a
    // certificate is a mistake worth stopping for, not a silent downgrade.
    if (s.other) r.fail(*s.other, "is set but TLS is off (no cert_file/key_file)");
    return std::nullopt;
  }
  check_tls(r, section, s);
  return t;
}

// --- http_server_config, basic_auth_users -----------------------------------

void http_section(const Reader& r, const Entry& section, WebConfig& out) {
  for (const Entry& e : r.entries(section, {"http2", "headers"})) {
    if (e.key == "http2") {
      r.boolean(e);  // accepted for compatibility: this server speaks HTTP/1.1 only
      continue;
    }
    std::vector<std::string_view> names;
    for (const auto& rule : header_rules()) names.push_back(rule.name);
    for (const Entry& h : r.entries(e, names)) {
      const std::string value = r.scalar(h);
      const auto& rule = *std::find_if(header_rules().begin(), header_rules().end(),
                                       [&](const HeaderRule& hr) { return hr.name == h.key; });
      if (!value.empty() && !rule.values.empty() &&
          std::find(rule.values.begin(), rule.values.end(), value) == rule.values.end())
        r.fail(h, fmt::format("must be one of {}, got '{}'", fmt::join(rule.values, ", "), value));
      out.headers.emplace_back(h.key, value);
    }
  }
}

void users_section(const Reader& r, const Entry& section, WebConfig& out) {
  for (const Entry& e : r.entries(section, {})) {
    if (e.key.find(':') != std::string::npos)
      r.fail(e, "a user name cannot contain ':' (basic auth separates user and password by it)");
    if (!e.value.IsNull() && !e.value.IsScalar()) r.fail(e, "expected a bcrypt hash");
    const std::string hash = r.scalar(e);
    // The hash itself is never echoed: it is as good as a password to an
    // offline attacker.
    if (!is_bcrypt_hash(hash))
      r.fail(e,
             "not a bcrypt hash ($2y$, $2b$ or $2a$, cost 04-31, 60 characters); make one with "
             "`htpasswd -nBC 10 \"\" | tr -d ':\\n'`");
    out.basic_auth_users.emplace(e.key, hash);
  }
}

YAML::Node load_root(const Reader& r, std::string_view yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    r.fail(e.mark, "invalid YAML: " + e.msg);
  }
  if (!root.IsNull() && !root.IsMap()) r.fail(root.Mark(), "expected a mapping at the top level");
  return root;
}

}  // namespace

std::string_view to_string(ClientAuth auth) {
  for (const auto& [name, value] : kClientAuth)
    if (value == auth && name != "RequireClientCert") return name;
  return "?";
}

std::string_view to_string(TlsVersion version) {
  for (const auto& [name, value] : kVersions)
    if (value == version) return name;
  return "?";
}

bool is_bcrypt_hash(std::string_view h) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (h.size() != 60 || h.substr(0, 2) != "$2" || h[3] != '$' || h[6] != '$') return false;
  if (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') return false;
  if (!digit(h[4]) || !digit(h[5])) return false;
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  return std::all_of(h.begin() + 7, h.end(), [&](char c) {
    return digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '/';
  });
}

WebConfig parse_web_config(std::string_view yaml_text, const std::string& file_name,
                           const std::string& base_dir) {
  const Reader r(file_name, base_dir);
  WebConfig out;
  out.file = file_name;
  const Entry root{"", load_root(r, yaml_text), YAML::Mark::null_mark(), ""};
  for (const Entry& e : r.entries(
           root, {"tls_server_config", "http_server_config", "basic_auth_users", "rate_limit"})) {
    if (e.key == "tls_server_config") out.tls = tls_section(r, e);
    if (e.key == "http_server_config") http_section(r, e, out);
    if (e.key == "basic_auth_users") users_section(r, e, out);
    if (e.key == "rate_limit") unsupported(r, e);
  }
  return out;
}

WebConfig load_web_config(const std::string& path) {
  // Bounded (util/bounded_file.hpp): a path set to /dev/zero or a FIFO is
  // an error, never a reload that hangs or eats the memory.
  constexpr std::uint64_t kMaxWebConfigBytes = 1ull << 20;
  util::FileRead file = util::read_bounded_file(path, kMaxWebConfigBytes, "web config files");
  if (file.problem == util::FileProblem::missing)
    throw config::ConfigError(path, 0, 0, "cannot read the web config file");
  if (!file.ok())
    throw config::ConfigError(path, 0, 0, "cannot read the web config file: " + file.error);
  const auto dir = std::filesystem::path(path).parent_path().string();
  return parse_web_config(file.content, path, dir);
}

}  // namespace lse::web
