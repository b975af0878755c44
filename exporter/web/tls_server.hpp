// The OpenSSL server context a web config's tls_server_config asks for:
// certificate chain and key, client-certificate policy (Go's ClientAuthType
// mapped onto OpenSSL's verify modes), protocol versions, ciphers, curves.
// The I/O edge of the web module: it reads the PEM files.
#pragma once
#include <utility>  // before Asio with GCC 12 / C++20 (STYLE.md)

#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "web/web_config.hpp"

namespace lse::web {

// Throws config::ConfigError at the key whose material does not load (a
// missing file, a key that does not match the certificate, an unknown
// cipher suite), so a broken web config fails at startup with its place.
std::shared_ptr<boost::asio::ssl::context> make_tls_server_context(const WebConfig& config);

}  // namespace lse::web
