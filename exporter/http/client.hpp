// Streaming HTTP/1.1 client for one target: TCP or TLS (Beast/Asio/OpenSSL),
// optional HTTP proxy, one pooled keep-alive connection, incremental body
// decoding. Every read is stamped before any SSE/JSON parsing (DESIGN §2) with
// the kernel's receive timestamp of the data (SO_TIMESTAMPNS, converted to
// steady_clock), or with steady_clock at read completion when there is none.
#pragma once
#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/content_decoder.hpp"
#include "http/url.hpp"

namespace lse::http {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

struct TlsOptions {
  std::string ca_file, cert_file, key_file, server_name;
  bool insecure_skip_verify = false;
};

struct ClientOptions {
  Url url;
  TlsOptions tls;
  std::optional<Url> proxy;  // HTTP proxy: CONNECT for https, absolute-form for http
  std::size_t max_header_bytes = 64 * 1024;
};

enum class ErrorKind { none, resolve, connect, tls, timeout, closed, protocol, canceled };

struct Error {
  ErrorKind kind = ErrorKind::none;
  std::string detail;  // short, secret-free
  explicit operator bool() const { return kind != ErrorKind::none; }
};

// Instants of the connection phases (empty when a pooled connection is reused).
struct Stamps {
  std::optional<TimePoint> resolved, connected, tls_done, request_sent, headers;
};

struct Response {
  int status = 0;
  std::string content_type;
  std::string content_encoding;
  std::string retry_after;
  bool keep_alive = false;
};

struct Request {
  std::string path;  // appended to the base URL path
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond Host/Content-*
};

class Client {
 public:
  // Throws std::runtime_error when the TLS material cannot be loaded.
  Client(asio::io_context& io, ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Takes the pooled connection (or opens one), writes the request and reads
  // the response headers. A pooled connection the server closed meanwhile is
  // replaced transparently once.
  asio::awaitable<Error> start(const Request& request, TimePoint deadline, Stamps& stamps,
                               Response& response);

  // Appends the next decoded body bytes to `out` and sets `arrival` to the
  // arrival instant of the socket read that delivered them: the kernel's
  // receive stamp of its last segment (never later than the read's
  // completion), else the completion instant. Sets
  // `body_done` at the end of the body. Bytes already buffered from an earlier
  // read keep that read's instant.
  asio::awaitable<Error> read(TimePoint deadline, std::string& out, TimePoint& arrival,
                              bool& body_done);

  // Ends the exchange: the connection goes back to the pool when `reuse` and
  // the response allowed it and was read to its end; otherwise it is closed.
  void finish(bool reuse);

  // Aborts any operation in flight (shutdown / reload); it completes with
  // ErrorKind::canceled.
  void cancel();

  const ClientOptions& options() const { return options_; }

 private:
  struct Conn;
  struct Exchange;
  asio::awaitable<Error> connect(TimePoint deadline, Stamps& stamps);
  asio::awaitable<Error> write_and_read_headers(const std::string& wire, TimePoint deadline,
                                                Stamps& stamps, Response& response,
                                                bool& nothing_received);
  asio::awaitable<std::size_t> read_some(TimePoint deadline, Error& error);
  void arm(TimePoint deadline, std::function<void()> on_expiry);
  void disarm();
  Error parse_body(std::string& out, bool& body_done);
  std::string wire_request(const Request& request) const;

  asio::io_context& io_;
  ClientOptions options_;
  std::shared_ptr<asio::ssl::context> ssl_;  // shared by targets with the same TLS material
  asio::steady_timer timer_;
  std::uint64_t timer_generation_ = 0;
  bool timed_out_ = false;
  bool canceled_ = false;
  std::function<void()> abort_;
  std::unique_ptr<Conn> conn_;        // in use or pooled
  bool conn_pooled_ = false;          // conn_ came from the pool (reused)
  std::unique_ptr<Exchange> ex_;      // current response parser state
  std::string in_;                    // raw bytes read, not yet parsed
  std::unique_ptr<char[]> read_buf_;  // each socket read lands here; only its bytes go to in_
  TimePoint last_read_at_{};
  std::unique_ptr<ContentDecoder> decoder_;
};

}  // namespace lse::http
