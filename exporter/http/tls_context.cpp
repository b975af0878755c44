// TLS contexts (cached by file identity) and per-connection peer checks.
#include "http/tls_context.hpp"

#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <map>
#include <mutex>
#include <stdexcept>

#include <sys/stat.h>

namespace lse::http {
namespace {

namespace ssl = boost::asio::ssl;
using boost::system::error_code;

bool is_ip_literal(const std::string& host) {
  error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

// A file's identity for the context cache: a rotated CA or certificate (new
// mtime or size) gets a fresh context.
std::string file_stamp(const std::string& path) {
  if (path.empty()) return {};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path + "@missing";
  return path + "@" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) +
         ":" + std::to_string(st.st_size);
}

std::shared_ptr<ssl::context> build_tls_context(const TlsOptions& tls) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  error_code ec;
  if (!tls.ca_file.empty()) {
    ctx->load_verify_file(tls.ca_file, ec);
    if (ec) throw std::runtime_error("cannot load ca_file " + tls.ca_file + ": " + ec.message());
  } else {
    ctx->set_default_verify_paths(ec);
  }
  if (!tls.cert_file.empty()) {
    ctx->use_certificate_chain_file(tls.cert_file, ec);
    if (!ec) ctx->use_private_key_file(tls.key_file, ssl::context::pem, ec);
    if (ec) throw std::runtime_error("cannot load client certificate: " + ec.message());
  }
  ctx->set_verify_mode(tls.insecure_skip_verify ? ssl::verify_none : ssl::verify_peer);
  return ctx;
}

}  // namespace

// Targets with the same TLS material share one SSL_CTX (its parsed CA store is
// most of a TLS target's memory). Hostname checks are per connection, so
// sharing is safe; OpenSSL contexts are thread-safe once configured.
std::shared_ptr<ssl::context> shared_tls_context(const TlsOptions& tls) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<ssl::context>> cache;
  const std::string key = file_stamp(tls.ca_file) + "|" + file_stamp(tls.cert_file) + "|" +
                          file_stamp(tls.key_file) + "|" + (tls.insecure_skip_verify ? "1" : "0");
  std::lock_guard lock(mu);
  for (auto it = cache.begin(); it != cache.end();)
    it = it->second.expired() ? cache.erase(it) : ++it;
  if (auto found = cache.find(key); found != cache.end())
    if (auto ctx = found->second.lock()) return ctx;
  auto ctx = build_tls_context(tls);
  cache[key] = ctx;
  return ctx;
}

void configure_peer_check(SSL* s, const TlsOptions& tls, const std::string& host) {
  const std::string& name = tls.server_name.empty() ? host : tls.server_name;
  if (!is_ip_literal(name)) SSL_set_tlsext_host_name(s, name.c_str());
  if (tls.insecure_skip_verify) return;
  X509_VERIFY_PARAM* param = SSL_get0_param(s);
  if (is_ip_literal(name)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
  } else {
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
  }
}

void offer_h2_by_alpn(SSL* s) {
  // Length-prefixed protocol names, the server's preference decides.
  static constexpr unsigned char kProtocols[] = {2,   'h', '2', 8,   'h', 't',
                                                 't', 'p', '/', '1', '.', '1'};
  SSL_set_alpn_protos(s, kProtocols, sizeof kProtocols);
}

std::string alpn_selected(SSL* s) {
  const unsigned char* data = nullptr;
  unsigned int size = 0;
  SSL_get0_alpn_selected(s, &data, &size);
  constexpr unsigned int kMax = 32;
  std::string out;
  for (unsigned int i = 0; i < size && i < kMax; ++i)
    if (data[i] >= ' ' && data[i] <= '~') out += static_cast<char>(data[i]);
  return out;
}

std::string tls_failure_detail(const error_code& ec, SSL* ssl) {
  if (ssl) {
    const long vr = SSL_get_verify_result(ssl);
    if (vr != X509_V_OK)
      return std::string("certificate verify failed: ") + X509_verify_cert_error_string(vr);
  }
  return ec.message();
}

}  // namespace lse::http
