// The TLS context built from a web config (material that does not load is
// an error at its key's line:col) and PolicyFile's re-reading: a change to
// the web config or to a certificate applies from the next connection, a
// broken change keeps the previous policy and is reported once.
#include "web/policy.hpp"

#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/config.hpp"
#include "test_pki.hpp"
#include "web/tls_server.hpp"

namespace lse::web {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHash = "$2y$10$Xc4ibDGsh4wvAg/eVu8i3.X0L0WN4uKWa7/8TrRYzbRGJtGWPPace";

class PolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lse-web-policy-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
    pki = testing::make_test_pki(dir);
    path = dir + "/web.yml";
  }
  void TearDown() override { fs::remove_all(dir); }

  void write(const std::string& text) {
    // A new inode each time, as a Kubernetes volume swap or an editor's save.
    std::ofstream(path + ".tmp") << text;
    fs::rename(path + ".tmp", path);
  }
  std::string tls(const std::string& extra = "") const {
    return "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n" + extra;
  }
  std::string error_of(const std::string& text) {
    write(text);
    try {
      PolicyFile file(path);
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "no error";
  }

  std::string dir, path;
  testing::TestPki pki;
};

TEST_F(PolicyTest, PlainWithoutTlsAndATlsContextWithIt) {
  write("basic_auth_users:\n  user: " + std::string(kHash) + "\n");
  PolicyFile plain(path);
  auto p = plain.current().policy;
  EXPECT_FALSE(p->tls);
  EXPECT_TRUE(p->requires_auth());

  write(
      tls("  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
          "  min_version: TLS13\n"));
  PolicyFile secured(path);
  auto s = secured.current().policy;
  ASSERT_TRUE(s->tls);
  EXPECT_FALSE(s->requires_auth());
  SSL_CTX* ctx = s->tls->native_handle();
  EXPECT_EQ(SSL_CTX_get_min_proto_version(ctx), TLS1_3_VERSION);
  EXPECT_EQ(SSL_CTX_get_verify_mode(ctx), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
  EXPECT_EQ(sk_X509_NAME_num(SSL_CTX_get_client_CA_list(ctx)), 1);
}

TEST_F(PolicyTest, EveryClientAuthTypeMapsToAVerifyMode) {
  const std::pair<const char*, int> cases[] = {
      {"NoClientCert", SSL_VERIFY_NONE},
      {"RequestClientCert", SSL_VERIFY_PEER},
      {"RequireAnyClientCert", SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT},
      {"VerifyClientCertIfGiven", SSL_VERIFY_PEER},
      {"RequireAndVerifyClientCert", SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT},
  };
  for (const auto& [name, mode] : cases) {
    const std::string ca = std::string(name) == "NoClientCert" ? "" : "  client_ca_file: ca.crt\n";
    write(tls("  client_auth_type: " + std::string(name) + "\n" + ca));
    PolicyFile file(path);
    EXPECT_EQ(SSL_CTX_get_verify_mode(file.current().policy->tls->native_handle()), mode) << name;
  }
}

TEST_F(PolicyTest, MaterialThatDoesNotLoadIsAnErrorAtItsKey) {
  EXPECT_EQ(error_of("tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n"),
            path + ":2:14: tls_server_config.cert_file: cannot read " + dir + "/nope.crt");
  EXPECT_EQ(error_of("tls_server_config:\n  cert_file: server.crt\n  key_file: client.key\n")
                .rfind(path + ":3:13: tls_server_config.key_file: the key does not match", 0),
            0u);
  EXPECT_EQ(error_of("tls_server_config:\n  cert_file: server.key\n  key_file: server.key\n")
                .rfind(path + ":2:14: tls_server_config.cert_file: no certificate chain in", 0),
            0u);
  EXPECT_EQ(error_of(tls("  client_auth_type: RequireAndVerifyClientCert\n"
                         "  client_ca_file: server.key\n")),
            path + ":5:19: tls_server_config.client_ca_file: no CA certificate in " + dir +
                "/server.key");
  EXPECT_EQ(error_of(tls("  cipher_suites: [TLS_MADE_UP]\n")),
            path + ":4:18: tls_server_config.cipher_suites: unknown cipher suite 'TLS_MADE_UP'");
  EXPECT_EQ(error_of(tls("  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "
                         "TLS_AES_128_GCM_SHA256]\n  curve_preferences: [X25519, CurveP256]\n")),
            "no error");
}

TEST_F(PolicyTest, InlinePemLoadsLikeFiles) {
  auto slurp = [](const std::string& file) {
    std::ifstream in(file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto indent = [](const std::string& text) {
    std::string out;
    for (char c : text) out += c == '\n' ? std::string("\n    ") : std::string(1, c);
    return out;
  };
  write("tls_server_config:\n  cert: |\n    " + indent(slurp(pki.server_cert)) +
        "\n  key: |\n    " + indent(slurp(pki.server_key)) + "\n");
  PolicyFile file(path);
  EXPECT_TRUE(file.current().policy->tls);
}

TEST_F(PolicyTest, ChangesApplyFromTheNextLookAndBadOnesAreRefused) {
  write("");
  PolicyFile file(path);
  auto first = file.current();
  EXPECT_FALSE(first.reread);
  EXPECT_FALSE(first.policy->requires_auth());
  EXPECT_EQ(file.current().policy, first.policy);  // nothing changed: the same policy

  write("basic_auth_users:\n  user: " + std::string(kHash) + "\n");
  auto second = file.current();
  EXPECT_TRUE(second.reread);
  EXPECT_TRUE(second.policy->requires_auth());

  write("basic_auth_users:\n  user: not-a-hash\n");
  auto refused = file.current();
  ASSERT_TRUE(refused.refused);
  EXPECT_NE(refused.refused->find(path + ":2:9:"), std::string::npos) << *refused.refused;
  EXPECT_EQ(refused.policy, second.policy);  // the previous one stays in force
  EXPECT_FALSE(file.current().refused);      // reported once, not re-read until it changes

  write(tls());
  auto secured = file.current();
  EXPECT_TRUE(secured.reread);
  EXPECT_TRUE(secured.policy->tls);
}

TEST_F(PolicyTest, ARotatedCertificateIsPickedUp) {
  write(tls());
  PolicyFile file(path);
  auto before = file.current().policy;
  // Rotation: new material under the same names (the web config is untouched).
  fs::copy_file(pki.client_cert, dir + "/new.crt");
  fs::copy_file(pki.client_key, dir + "/new.key");
  fs::rename(dir + "/new.key", dir + "/server.key");
  fs::rename(dir + "/new.crt", dir + "/server.crt");
  auto after = file.current();
  EXPECT_TRUE(after.reread);
  EXPECT_NE(after.policy, before);
  // Half a rotation (key swapped, certificate not yet) is refused, not served.
  fs::copy_file(pki.stranger_key, dir + "/next.key");
  fs::rename(dir + "/next.key", dir + "/server.key");
  auto half = file.current();
  ASSERT_TRUE(half.refused);
  EXPECT_NE(half.refused->find("does not match"), std::string::npos) << *half.refused;
  EXPECT_EQ(half.policy, after.policy);
}

TEST_F(PolicyTest, AnInvalidFileAtStartIsAnError) {
  EXPECT_EQ(error_of("bogus: 1\n").rfind(path + ":1:1: unknown key 'bogus'", 0), 0u);
  EXPECT_THROW(PolicyFile(dir + "/missing.yml"), config::ConfigError);
}

}  // namespace
}  // namespace lse::web
