// The exporter-toolkit web config: what a valid file gives, every
// client_auth_type and TLS version, and each invalid case with the
// file:line:col of the value at fault.
#include "web/web_config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "config/config.hpp"

namespace lse::web {
namespace {

// Made with `htpasswd -nbBC 10 user pass` when this test was written.
constexpr const char* kHash = "$2y$10$Xc4ibDGsh4wvAg/eVu8i3.X0L0WN4uKWa7/8TrRYzbRGJtGWPPace";

WebConfig parse(const std::string& text) { return parse_web_config(text, "web.yml", "/etc/lse"); }

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

#define EXPECT_STARTS_WITH(text, prefix) \
  EXPECT_EQ(std::string(text).substr(0, std::string(prefix).size()), prefix) << (text)

const std::string kTlsHead = "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n";

TEST(WebConfig, EmptyFileIsPlainHttpWithoutAuth) {
  for (const char* text : {"", "# nothing yet\n", "tls_server_config:\nbasic_auth_users: {}\n"}) {
    const WebConfig c = parse(text);
    EXPECT_FALSE(c.tls) << text;
    EXPECT_TRUE(c.basic_auth_users.empty()) << text;
    EXPECT_TRUE(c.headers.empty()) << text;
    EXPECT_EQ(c.file, "web.yml");
  }
}

TEST(WebConfig, FullFile) {
  const WebConfig c = parse(
      "tls_server_config:\n"
      "  cert_file: server.crt\n"
      "  key_file: /abs/server.key\n"
      "  client_auth_type: RequireAndVerifyClientCert\n"
      "  client_ca_file: ../ca/ca.crt\n"
      "  min_version: TLS13\n"
      "  curve_preferences: [X25519, CurveP256]\n"
      "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n"
      "  prefer_server_cipher_suites: false\n"
      "http_server_config:\n"
      "  http2: false\n"
      "  headers:\n"
      "    X-Frame-Options: deny\n"
      "    Strict-Transport-Security: max-age=31536000\n"
      "    X-XSS-Protection: \"\"\n"
      "basic_auth_users:\n"
      "  alice: " +
      std::string(kHash) + "\n  bob: \"" + kHash + "\"\n");
  ASSERT_TRUE(c.tls);
  const TlsServerConfig& t = *c.tls;
  EXPECT_EQ(t.cert.file, "/etc/lse/server.crt");  // relative to the web config's folder
  EXPECT_EQ(t.cert.key, "tls_server_config.cert_file");
  EXPECT_EQ(t.cert.place, (Place{2, 14}));
  EXPECT_EQ(t.key.file, "/abs/server.key");
  EXPECT_EQ(t.client_ca.file, "/etc/ca/ca.crt");
  EXPECT_EQ(t.client_auth, ClientAuth::require_and_verify_client_cert);
  EXPECT_EQ(t.min_version, TlsVersion::tls13);
  EXPECT_EQ(t.max_version, TlsVersion::tls13);
  EXPECT_EQ(t.curves, (std::vector<std::string>{"X25519", "P-256"}));
  EXPECT_EQ(t.cipher_suites, (std::vector<std::string>{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}));
  EXPECT_FALSE(t.prefer_server_cipher_suites);
  EXPECT_EQ(c.headers, (std::vector<std::pair<std::string, std::string>>{
                           {"X-Frame-Options", "deny"},
                           {"Strict-Transport-Security", "max-age=31536000"},
                           {"X-XSS-Protection", ""}}));
  EXPECT_EQ(c.basic_auth_users, (Users{{"alice", kHash}, {"bob", kHash}}));
}

TEST(WebConfig, InlinePem) {
  const WebConfig c = parse(
      "tls_server_config:\n  cert: |\n    -----BEGIN CERTIFICATE-----\n    x\n"
      "  key: \"-----BEGIN PRIVATE KEY-----\"\n");
  ASSERT_TRUE(c.tls);
  EXPECT_TRUE(c.tls->cert.file.empty());
  EXPECT_EQ(c.tls->cert.text, "-----BEGIN CERTIFICATE-----\nx\n");
  EXPECT_EQ(c.tls->key.text, "-----BEGIN PRIVATE KEY-----");
}

TEST(WebConfig, EveryClientAuthType) {
  struct Case {
    const char* name;
    ClientAuth auth;
    bool needs_ca;
  };
  const Case cases[] = {
      {"NoClientCert", ClientAuth::no_client_cert, false},
      {"RequestClientCert", ClientAuth::request_client_cert, false},
      {"RequireAnyClientCert", ClientAuth::require_any_client_cert, false},
      {"RequireClientCert", ClientAuth::require_any_client_cert, false},  // old name
      {"VerifyClientCertIfGiven", ClientAuth::verify_client_cert_if_given, true},
      {"RequireAndVerifyClientCert", ClientAuth::require_and_verify_client_cert, true},
  };
  for (const auto& c : cases) {
    const std::string head = kTlsHead + "  client_auth_type: " + c.name + "\n";
    const std::string with_ca = head + "  client_ca_file: ca.crt\n";
    if (c.auth != ClientAuth::no_client_cert) {
      EXPECT_EQ(parse(with_ca).tls->client_auth, c.auth) << c.name;
      EXPECT_EQ(parse(with_ca).tls->client_ca.file, "/etc/lse/ca.crt");
    }
    if (c.needs_ca) {
      EXPECT_STARTS_WITH(error_of(head), "web.yml:4:21: tls_server_config.client_auth_type: " +
                                             std::string(c.name) + " needs client_ca_file");
    } else {
      EXPECT_EQ(parse(head).tls->client_auth, c.auth) << c.name;
    }
    if (std::string(c.name) != "RequireClientCert") {
      EXPECT_EQ(to_string(c.auth), c.name);
    }
  }
  // Blank is the default, as in exporter-toolkit.
  EXPECT_EQ(parse(kTlsHead + "  client_auth_type: \"\"\n").tls->client_auth,
            ClientAuth::no_client_cert);
}

TEST(WebConfig, TlsVersions) {
  EXPECT_EQ(parse(kTlsHead).tls->min_version, TlsVersion::tls12);  // exporter-toolkit's default
  EXPECT_EQ(parse(kTlsHead).tls->max_version, TlsVersion::tls13);
  EXPECT_EQ(parse(kTlsHead + "  min_version: TLS13\n").tls->min_version, TlsVersion::tls13);
  EXPECT_EQ(parse(kTlsHead + "  min_version: TLS10\n").tls->min_version, TlsVersion::tls10);
  const auto both = parse(kTlsHead + "  min_version: TLS12\n  max_version: TLS12\n");
  EXPECT_EQ(both.tls->max_version, TlsVersion::tls12);
  EXPECT_EQ(to_string(TlsVersion::tls13), "TLS13");
  EXPECT_STARTS_WITH(error_of(kTlsHead + "  min_version: TLS1.3\n"),
                     "web.yml:4:16: tls_server_config.min_version: unknown TLS version 'TLS1.3' "
                     "(one of: TLS10, TLS11, TLS12, TLS13)");
  EXPECT_STARTS_WITH(error_of(kTlsHead + "  max_version: TLS12\n  min_version: TLS13\n"),
                     "web.yml:5:16: tls_server_config.min_version: TLS13 is above max_version "
                     "TLS12");
}

TEST(WebConfig, ErrorsNameFileLineAndColumn) {
  struct Case {
    std::string text, error;
  };
  const Case cases[] = {
      {"tls_config:\n", "web.yml:1:1: unknown key 'tls_config' in the web config (allowed: "},
      {"- a\n", "web.yml:1:1: expected a mapping at the top level"},
      {"tls_server_config: 3\n", "web.yml:1:20: tls_server_config: expected a mapping"},
      {kTlsHead + "  client_auth_type: Sometimes\n",
       "web.yml:4:21: tls_server_config.client_auth_type: unknown client_auth_type 'Sometimes'"},
      {kTlsHead + "  cert: inline\n",
       "web.yml:4:9: tls_server_config.cert: set only one of cert and cert_file"},
      {"tls_server_config:\n  cert_file: a.crt\n",
       "web.yml:2:3: tls_server_config: missing key_file (or key)"},
      {"tls_server_config:\n  key_file: a.key\n",
       "web.yml:2:3: tls_server_config: missing cert_file (or cert)"},
      {kTlsHead + "  client_ca_file: ca.crt\n",
       "web.yml:4:19: tls_server_config.client_ca_file: a client CA is set but client_auth_type "
       "is NoClientCert"},
      {"tls_server_config:\n  min_version: TLS13\n",
       "web.yml:2:16: tls_server_config.min_version: is set but TLS is off"},
      {kTlsHead + "  client_allowed_sans: [a]\n",
       "web.yml:4:24: tls_server_config.client_allowed_sans: not supported by llm-stream-exporter"},
      {kTlsHead + "  curve_preferences: [P-256]\n",
       "web.yml:4:23: tls_server_config.curve_preferences: unknown curve 'P-256'"},
      {kTlsHead + "  prefer_server_cipher_suites: yes\n",
       "web.yml:4:32: tls_server_config.prefer_server_cipher_suites: expected true or false"},
      {"rate_limit:\n  interval: 1s\n", "web.yml:2:3: rate_limit: not supported"},
      {"http_server_config:\n  headers:\n    X-Powered-By: me\n",
       "web.yml:3:5: unknown key 'X-Powered-By' in http_server_config.headers"},
      {"http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
       "web.yml:3:22: http_server_config.headers.X-Frame-Options: must be one of deny, "
       "sameorigin, got 'allow'"},
      {"http_server_config:\n  http3: true\n",
       "web.yml:2:3: unknown key 'http3' in http_server_config"},
      {"basic_auth_users:\n  alice: " + std::string(kHash) + "\n  alice: " + kHash + "\n",
       "web.yml:3:3: duplicate key 'alice'"},
      {"basic_auth_users:\n  alice: [x]\n", "web.yml:2:10: basic_auth_users.alice: expected a "},
      {"basic_auth_users:\n  \"a:b\": " + std::string(kHash) + "\n",
       "web.yml:2:10: basic_auth_users.a:b: a user name cannot contain ':'"},
      {"tls_server_config: [\n", "web.yml:"},
  };
  for (const auto& c : cases) EXPECT_STARTS_WITH(error_of(c.text), c.error);
  EXPECT_NE(error_of("tls_server_config: [\n").find("invalid YAML"), std::string::npos);
}

TEST(WebConfig, ABadHashIsNotEchoed) {
  const std::string secretish = "$2y$10$short";
  const std::string e = error_of("basic_auth_users:\n  alice: " + secretish + "\n");
  EXPECT_STARTS_WITH(e, "web.yml:2:10: basic_auth_users.alice: not a bcrypt hash");
  EXPECT_EQ(e.find(secretish), std::string::npos) << e;
  EXPECT_STARTS_WITH(error_of("basic_auth_users:\n  alice:\n"),
                     "web.yml:2:3: basic_auth_users.alice: not a bcrypt hash");
}

TEST(WebConfig, IsBcryptHash) {
  const std::string h = kHash;
  EXPECT_TRUE(is_bcrypt_hash(h));
  EXPECT_TRUE(is_bcrypt_hash("$2b$" + h.substr(4)));
  EXPECT_TRUE(is_bcrypt_hash("$2a$04$" + h.substr(7)));
  EXPECT_FALSE(is_bcrypt_hash("$2x$" + h.substr(4)));     // unknown variant
  EXPECT_FALSE(is_bcrypt_hash("$2y$03$" + h.substr(7)));  // cost below 4
  EXPECT_FALSE(is_bcrypt_hash("$2y$32$" + h.substr(7)));  // cost above 31
  EXPECT_FALSE(is_bcrypt_hash(h.substr(0, 59)));
  EXPECT_FALSE(is_bcrypt_hash(h + "x"));
  EXPECT_FALSE(is_bcrypt_hash(h.substr(0, 59) + "!"));
  EXPECT_FALSE(is_bcrypt_hash("$6$rounds=5000$salt$hash"));  // sha512-crypt
  EXPECT_FALSE(is_bcrypt_hash("pass"));
}

TEST(WebConfig, LoadFileResolvesAgainstItsFolder) {
  char tmpl[] = "/tmp/lse-web-config-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/web.yml") << kTlsHead;
  const WebConfig c = load_web_config(dir + "/web.yml");
  EXPECT_EQ(c.file, dir + "/web.yml");
  EXPECT_EQ(c.tls->cert.file, dir + "/a.crt");
  try {
    load_web_config(dir + "/missing.yml");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/missing.yml: cannot read the web config file");
  }
  std::remove((dir + "/web.yml").c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace lse::web
