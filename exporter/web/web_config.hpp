// The web configuration file of `--web.config.file`, in the format every
// Prometheus exporter built on exporter-toolkit reads (TLS server settings,
// basic-auth users with bcrypt hashes, extra response headers), so an
// operator's existing file works here unchanged. Parsing and validation
// only: text in, a WebConfig or a config::ConfigError at file:line:col out.
// Loading certificates is tls_server.hpp's; when to re-read is policy.hpp's.
#pragma once
#include <utility>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lse::web {

// Go's crypto/tls ClientAuthType, spelled as exporter-toolkit spells it.
enum class ClientAuth {
  no_client_cert,                 // NoClientCert (default)
  request_client_cert,            // RequestClientCert: asked for, neither required nor verified
  require_any_client_cert,        // RequireAnyClientCert: required, not verified
  verify_client_cert_if_given,    // VerifyClientCertIfGiven: optional, verified when sent
  require_and_verify_client_cert  // RequireAndVerifyClientCert: required and verified
};

enum class TlsVersion { tls10, tls11, tls12, tls13 };

// The exporter-toolkit spelling ("RequireAndVerifyClientCert", "TLS12").
std::string_view to_string(ClientAuth auth);
std::string_view to_string(TlsVersion version);

// Where a value stands in the file (1-based), for problems found only when
// the value is used (a certificate that does not load).
struct Place {
  int line = 0;
  int column = 0;
  bool operator==(const Place&) const = default;
};

// PEM material: a file (resolved against the web config's folder, as
// exporter-toolkit does) or the PEM text itself (`cert:`, `key:`, `client_ca:`).
struct Pem {
  std::string file;
  std::string text;
  std::string key;  // "tls_server_config.cert_file", for messages
  Place place;
  bool empty() const { return file.empty() && text.empty(); }
  bool operator==(const Pem&) const = default;
};

struct TlsServerConfig {
  Pem cert, key, client_ca;
  ClientAuth client_auth = ClientAuth::no_client_cert;
  TlsVersion min_version = TlsVersion::tls12;
  TlsVersion max_version = TlsVersion::tls13;
  // IANA names as Go spells them (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256);
  // they apply up to TLS 1.2. Checked against OpenSSL when the context is built.
  std::vector<std::string> cipher_suites;
  Place cipher_suites_place;
  std::vector<std::string> curves;  // OpenSSL group names (P-256, X25519), in preference order
  bool prefer_server_cipher_suites = true;
  bool operator==(const TlsServerConfig&) const = default;
};

// User name -> bcrypt hash ($2a$, $2b$ or $2y$).
using Users = std::map<std::string, std::string, std::less<>>;

struct WebConfig {
  std::string file;                    // the file it was read from, for messages
  std::optional<TlsServerConfig> tls;  // nullopt: plain HTTP
  Users basic_auth_users;              // empty: no authentication
  // http_server_config.headers, on every response; a blank value unsets.
  std::vector<std::pair<std::string, std::string>> headers;
  bool operator==(const WebConfig&) const = default;
};

// Parses and validates; throws config::ConfigError naming file:line:col.
// Unknown keys are errors (exporter-toolkit reads strictly too); its keys
// this exporter cannot honour (client_allowed_sans, rate_limit) are errors
// that say so rather than being ignored, since both are security settings.
// An empty file is valid: plain HTTP, no authentication.
WebConfig parse_web_config(std::string_view yaml_text, const std::string& file_name,
                           const std::string& base_dir);

// Reads `path` and parses it (relative paths inside resolve against its folder).
WebConfig load_web_config(const std::string& path);

// "$2y$10$" + 53 characters of bcrypt's base64, cost 4..31.
bool is_bcrypt_hash(std::string_view hash);

}  // namespace lse::web
