// Client's private parts shared by its source files (client.cpp,
// client_deadlines.cpp, client_opening.cpp, client_body.cpp): the connection
// and what several steps need to know about its errors.
#pragma once
#include <memory>
#include <optional>

#include <boost/asio/ssl/error.hpp>

#include "h2/session.hpp"
#include "http/client.hpp"
#include "http/timestamping_socket.hpp"
#include "http/tls_stream.hpp"

namespace lse::http {

inline bool closed_by_peer(const error_code& ec) {
  namespace ssl = boost::asio::ssl;
  return ec == asio::error::eof || ec == ssl::error::stream_truncated ||
         ec == asio::error::connection_reset;
}

struct Client::Conn {
  explicit Conn(asio::io_context& io) : socket(io), reader(socket) {}
  ProbeSocket socket;         // the connection (timeouts cancel/close it)
  TimestampingSocket reader;  // reads with kernel receive stamps; plain, or the layer under tls
  // Set for https targets: OpenSSL reads through `reader`. In place, beside
  // the socket and its reader that every read touches with it.
  std::optional<TlsStream> tls;
  bool http2 = false;  // speaks HTTP/2 (ALPN h2, or prior-knowledge h2c)
  // HTTP/2: the connection's frames; one stream per exchange.
  std::unique_ptr<h2::Session> h2;
  // A write of the session's frames failed (the server closed or reset):
  // no more are written, and the reads that follow say how it ended (a
  // GOAWAY it sent before says more than the failed write).
  bool h2_writes_failed = false;
};

}  // namespace lse::http
