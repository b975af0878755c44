// TLS material of a target: one SSL_CTX per distinct set of files (cached),
// and the per-connection settings: peer checks (SNI, host name or IP
// verification) and the protocols offered by ALPN.
#pragma once
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include <openssl/ssl.h>

namespace lse::http {

struct TlsOptions {
  std::string ca_file, cert_file, key_file, server_name;
  bool insecure_skip_verify = false;
};

// Targets with the same TLS material share one context. Throws
// std::runtime_error when the material cannot be loaded.
std::shared_ptr<boost::asio::ssl::context> shared_tls_context(const TlsOptions& tls);

// SNI and the name the certificate must carry, for one connection to `host`
// (options.server_name overrides it).
void configure_peer_check(SSL* ssl, const TlsOptions& tls, const std::string& host);

// Offers "h2,http/1.1" by ALPN (RFC 7301) in this connection's ClientHello,
// as browsers do. Not called for HTTP/1.1-only targets: their ClientHello
// stays as it always was.
void offer_h2_by_alpn(SSL* ssl);

// The protocol the server picked by ALPN after the handshake ("h2",
// "http/1.1"), or "" when it picked none. Printable ASCII only, cut short:
// it goes into failure details.
std::string alpn_selected(SSL* ssl);

// A handshake failure's detail: the verification error when there is one.
std::string tls_failure_detail(const boost::system::error_code& ec, SSL* ssl);

}  // namespace lse::http
