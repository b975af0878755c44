// A throw-away PKI for the TLS tests, made in-process with OpenSSL (no
// openssl CLI, no fixture files to expire): a CA, a server certificate for
// 127.0.0.1/localhost and a client certificate signed by it, and a
// self-signed "stranger" client certificate no CA vouches for. Shared by
// tests/unit/web and tests/unit/server (included by relative path).
#pragma once
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>
#include <string>

namespace lse::testing {

struct TestPki {
  std::string ca, server_cert, server_key, client_cert, client_key, stranger_cert, stranger_key;
};

namespace pki_detail {

struct Issued {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  ~Issued() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

inline void check(int ok, const char* what) {
  if (ok != 1) throw std::runtime_error(std::string("test PKI: ") + what);
}

inline void extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer ? issuer : cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) throw std::runtime_error("test PKI: extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `cn`, signed by `issuer` (self-signed when null).
inline void issue(Issued& out, const char* cn, const Issued* issuer, bool ca, const char* usage,
                  const char* san, long serial) {
  out.key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  out.cert = X509_new();
  if (!out.key || !out.cert) throw std::runtime_error("test PKI: keygen");
  X509_set_version(out.cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(out.cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(out.cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(out.cert), 86400L * 30);
  X509_set_pubkey(out.cert, out.key);
  X509_NAME* name = X509_get_subject_name(out.cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(out.cert, issuer ? X509_get_subject_name(issuer->cert) : name);
  X509* issuer_cert = issuer ? issuer->cert : nullptr;
  extension(out.cert, issuer_cert, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
  extension(out.cert, issuer_cert, NID_key_usage,
            ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
  if (usage) extension(out.cert, issuer_cert, NID_ext_key_usage, usage);
  if (san) extension(out.cert, issuer_cert, NID_subject_alt_name, san);
  check(X509_sign(out.cert, issuer ? issuer->key : out.key, EVP_sha256()) > 0 ? 1 : 0, "sign");
}

inline void write_cert(const std::string& path, X509* cert) {
  BIO* bio = BIO_new_file(path.c_str(), "w");
  if (!bio) throw std::runtime_error("test PKI: cannot write " + path);
  check(PEM_write_bio_X509(bio, cert), "write certificate");
  BIO_free(bio);
}

inline void write_key(const std::string& path, EVP_PKEY* key) {
  BIO* bio = BIO_new_file(path.c_str(), "w");
  if (!bio) throw std::runtime_error("test PKI: cannot write " + path);
  check(PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr), "write key");
  BIO_free(bio);
}

}  // namespace pki_detail

// Writes ca.crt, server.crt/.key, client.crt/.key, stranger.crt/.key into `dir`.
inline TestPki make_test_pki(const std::string& dir) {
  using namespace pki_detail;
  Issued ca, server, client, stranger;
  issue(ca, "lse test CA", nullptr, true, nullptr, nullptr, 1);
  issue(server, "localhost", &ca, false, "serverAuth", "DNS:localhost,IP:127.0.0.1", 2);
  issue(client, "lse test client", &ca, false, "clientAuth", nullptr, 3);
  issue(stranger, "lse stranger", nullptr, false, "clientAuth", nullptr, 4);
  TestPki p{dir + "/ca.crt",     dir + "/server.crt",   dir + "/server.key",  dir + "/client.crt",
            dir + "/client.key", dir + "/stranger.crt", dir + "/stranger.key"};
  write_cert(p.ca, ca.cert);
  write_cert(p.server_cert, server.cert);
  write_key(p.server_key, server.key);
  write_cert(p.client_cert, client.cert);
  write_key(p.client_key, client.key);
  write_cert(p.stranger_cert, stranger.cert);
  write_key(p.stranger_key, stranger.key);
  return p;
}

}  // namespace lse::testing
