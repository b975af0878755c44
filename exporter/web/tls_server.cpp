// Builds the server's OpenSSL context from a validated tls_server_config
// (see tls_server.hpp). PEM files are read here into memory first, so file
// and inline material take one path and one set of messages.
#include "web/tls_server.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/buffer.hpp>
#include <cstdint>
#include <map>
#include <string>

#include "config/config.hpp"
#include "util/bounded_file.hpp"

namespace lse::web {
namespace {

namespace ssl = boost::asio::ssl;

[[noreturn]] void fail(const WebConfig& c, const Pem& pem, const std::string& message) {
  throw config::ConfigError(c.file, pem.place.line, pem.place.column, pem.key + ": " + message);
}

std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

// A certificate chain or CA bundle is kilobytes (the system bundle some
// hundred): a PEM path set to /dev/zero or a FIFO is refused, not read.
constexpr std::uint64_t kMaxPemFileBytes = 1ull << 20;

// The PEM text, read (bounded, util/bounded_file.hpp) from its file when it has one.
std::string pem_text(const WebConfig& c, const Pem& pem) {
  if (pem.file.empty()) return pem.text;
  util::FileRead file = util::read_bounded_file(pem.file, kMaxPemFileBytes, "PEM files");
  if (file.problem == util::FileProblem::missing) fail(c, pem, "cannot read " + pem.file);
  if (!file.ok()) fail(c, pem, "cannot read " + pem.file + ": " + file.error);
  return std::move(file.content);
}

bool holds_private_key(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  ERR_clear_error();
  EVP_PKEY_free(key);
  return key != nullptr;
}

std::string what_of(const Pem& pem) { return pem.file.empty() ? "the PEM text" : pem.file; }

void use_certificate_and_key(ssl::context& ctx, const WebConfig& c, const TlsServerConfig& t) {
  boost::system::error_code ec;
  const std::string cert = pem_text(c, t.cert);
  ctx.use_certificate_chain(boost::asio::buffer(cert), ec);
  if (ec) fail(c, t.cert, "no certificate chain in " + what_of(t.cert) + ": " + ec.message());
  const std::string key = pem_text(c, t.key);
  if (!holds_private_key(key)) fail(c, t.key, "no private key in " + what_of(t.key));
  // OpenSSL checks the pair as it takes the key.
  ctx.use_private_key(boost::asio::buffer(key), ssl::context::pem, ec);
  if (ec || SSL_CTX_check_private_key(ctx.native_handle()) != 1)
    fail(c, t.key, "the key does not match the certificate of " + what_of(t.cert));
  ERR_clear_error();
}

// Trusts every certificate of the client CA PEM and names them in the
// CertificateRequest, so a client with several certificates picks the right one.
void use_client_ca(ssl::context& ctx, const WebConfig& c, const Pem& pem) {
  const std::string text = pem_text(c, pem);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), BIO_free);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx.native_handle());
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    std::unique_ptr<X509, decltype(&X509_free)> owned(cert, X509_free);
    if (X509_STORE_add_cert(store, cert) != 1 ||
        SSL_CTX_add_client_CA(ctx.native_handle(), cert) != 1)
      fail(c, pem, "cannot use a CA certificate of " + what_of(pem) + ": " + openssl_error());
    ++count;
  }
  ERR_clear_error();  // the read that ended the loop
  if (count == 0) fail(c, pem, "no CA certificate in " + what_of(pem));
}

// Go's ClientAuthType on OpenSSL: "request" and "require any" ask for a
// certificate but accept whatever comes (no chain check), the verifying ones
// check it against the client CA.
void use_client_auth(ssl::context& ctx, ClientAuth auth) {
  const auto any = [](bool, ssl::verify_context&) { return true; };
  switch (auth) {
    case ClientAuth::no_client_cert: ctx.set_verify_mode(ssl::verify_none); break;
    case ClientAuth::request_client_cert:
      ctx.set_verify_mode(ssl::verify_peer);
      ctx.set_verify_callback(any);
      break;
    case ClientAuth::require_any_client_cert:
      ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
      ctx.set_verify_callback(any);
      break;
    case ClientAuth::verify_client_cert_if_given: ctx.set_verify_mode(ssl::verify_peer); break;
    case ClientAuth::require_and_verify_client_cert:
      ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
      break;
  }
}

int protocol_version(TlsVersion v) {
  switch (v) {
    case TlsVersion::tls10: return TLS1_VERSION;
    case TlsVersion::tls11: return TLS1_1_VERSION;
    case TlsVersion::tls12: return TLS1_2_VERSION;
    case TlsVersion::tls13: return TLS1_3_VERSION;
  }
  return TLS1_2_VERSION;
}

// Go names cipher suites by their IANA names, OpenSSL by its own: translate
// through OpenSSL's table. Go ignores TLS 1.3 suites in this list (they are
// not configurable), and so does this.
void use_cipher_suites(ssl::context& ctx, const WebConfig& c, const TlsServerConfig& t) {
  if (t.cipher_suites.empty()) return;
  SSL_CTX* native = ctx.native_handle();
  Pem where{"", "", "tls_server_config.cipher_suites", t.cipher_suites_place};
  if (SSL_CTX_set_cipher_list(native, "ALL:COMPLEMENTOFALL") != 1)
    fail(c, where, "cannot list OpenSSL's cipher suites: " + openssl_error());
  std::map<std::string, std::string> openssl_name;
  STACK_OF(SSL_CIPHER)* all = SSL_CTX_get_ciphers(native);
  for (int i = 0; i < sk_SSL_CIPHER_num(all); ++i) {
    const SSL_CIPHER* cipher = sk_SSL_CIPHER_value(all, i);
    openssl_name[SSL_CIPHER_standard_name(cipher)] = SSL_CIPHER_get_name(cipher);
  }
  std::string list;
  for (const auto& name : t.cipher_suites) {
    if (name.rfind("TLS_AES_", 0) == 0 || name.rfind("TLS_CHACHA20_", 0) == 0) continue;
    auto it = openssl_name.find(name);
    if (it == openssl_name.end()) fail(c, where, "unknown cipher suite '" + name + "'");
    if (!list.empty()) list += ':';
    list += it->second;
  }
  if (list.empty()) list = "DEFAULT";
  if (SSL_CTX_set_cipher_list(native, list.c_str()) != 1)
    fail(c, where, "OpenSSL refuses the cipher suites: " + openssl_error());
}

void use_versions_and_curves(ssl::context& ctx, const WebConfig& c, const TlsServerConfig& t) {
  SSL_CTX* native = ctx.native_handle();
  // Below TLS 1.2 OpenSSL 3's default security level refuses the handshake anyway.
  SSL_CTX_set_min_proto_version(native, protocol_version(t.min_version));
  SSL_CTX_set_max_proto_version(native, protocol_version(t.max_version));
  if (t.prefer_server_cipher_suites) SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (t.curves.empty()) return;
  std::string groups;
  for (const auto& g : t.curves) groups += (groups.empty() ? "" : ":") + g;
  if (SSL_CTX_set1_groups_list(native, groups.c_str()) != 1)
    fail(c, Pem{"", "", "tls_server_config.curve_preferences", {}},
         "OpenSSL refuses " + groups + ": " + openssl_error());
}

}  // namespace

std::shared_ptr<ssl::context> make_tls_server_context(const WebConfig& config) {
  if (!config.tls) return nullptr;
  const TlsServerConfig& t = *config.tls;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_compression |
                   ssl::context::single_dh_use);
  use_certificate_and_key(*ctx, config, t);
  if (!t.client_ca.empty()) use_client_ca(*ctx, config, t.client_ca);
  use_client_auth(*ctx, t.client_auth);
  use_versions_and_curves(*ctx, config, t);
  use_cipher_suites(*ctx, config, t);
  return ctx;
}

}  // namespace lse::web
