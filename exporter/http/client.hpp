// Streaming HTTP client for one target: HTTP/1.1 or HTTP/2 (HttpVersion),
// TCP or TLS (Beast/Asio/OpenSSL, libnghttp2), optional HTTP proxy, one
// pooled connection (keep-alive, or an h2 connection carrying the next
// probe's stream), incremental body decoding. Every read is stamped before any SSE/JSON parsing
// (DESIGN §2) with the kernel's receive timestamp of the data (SO_TIMESTAMPNS, converted to
// steady_clock), or with steady_clock at read completion when there is none;
// no stamp of an exchange is earlier than the instant its request began.
// Failures are returned as facts (http/fault.hpp); probe/triage.hpp names them.
//
// HTTP semantics (interim responses, framing, codings, the decode cap):
// http/response_reader.hpp, fed each read's bytes; over HTTP/2 it reads the
// stream of the connection's h2::Session, fed the same stamped reads, so a
// DATA frame's bytes keep the arrival of the read that brought them and
// everything above the client reads one pipeline whatever the protocol.
// The session's frames (acknowledgements, WINDOW_UPDATE, RST_STREAM) are
// written between reads, never during one, and a write moves no stamp. The `headers` stamp is the
// final response's. Beyond it:
// - a read whose bytes arrived after its deadline is the deadline's fault
//   (a peer that never stops sending still times out);
// - A read that delivers good bytes and then a fault (a bad chunk, corrupt
//   compressed data, a reset) returns the bytes with that read's arrival
//   first, and the fault from the next read().
#pragma once
#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "h2/session.hpp"
#include "http/fault.hpp"
#include "http/request.hpp"
#include "http/response_reader.hpp"
#include "http/tls_context.hpp"
#include "net/url.hpp"

namespace lse::http {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

// The protocol a target's exchanges speak.
// - http1_1: HTTP/1.1 only; nothing offered by ALPN (the wire as it always was).
// - http2: over TLS, ALPN offers "h2,http/1.1" and anything but h2 is the
//   fault h2_not_negotiated (Stage::tls); over http://, prior-knowledge h2c
//   (the connection preface right after connect); through an HTTP proxy to
//   an http:// target, h2_not_negotiated (the proxy forwards HTTP/1.1).
// - automatic: over TLS, ALPN offers "h2,http/1.1" and the exchange speaks
//   what the server picked (HTTP/1.1 when it picked nothing); http:// is HTTP/1.1.
enum class HttpVersion { http1_1, http2, automatic };

struct ClientOptions {
  net::Url url;
  TlsOptions tls;
  std::optional<net::Url> proxy;  // HTTP proxy: CONNECT for https, absolute-form for http
  ResponseLimits limits;          // header size, decoded bytes per read
  HttpVersion http_version = HttpVersion::http1_1;
  h2::Settings http2;  // windows announced on an HTTP/2 connection
};

// Instants of the connection phases (empty when a pooled connection is reused).
struct Stamps {
  std::optional<TimePoint> resolved, connected, tls_done, request_sent, headers;
};

// Retry-After (RFC 9110 §10.2.3) in seconds from `now_unix`: delay-seconds
// ("120") or an HTTP-date (IMF-fixdate, RFC 850 or asctime form; a date in
// the past is 0). nullopt when absent or unreadable.
std::optional<double> retry_after_seconds(std::string_view value, double now_unix);

// What start() returns: the phase instants it reached (also when it failed,
// so the probe's clock shows where it stopped) and the response or the fault.
struct Started {
  Stamps stamps;
  Result<Response> response;
  std::size_t interim_responses = 0;  // 1xx answers skipped before the final one
};

// Decoded body bytes of one socket read (or of bytes an earlier read left
// buffered), with that read's arrival instant.
struct Chunk {
  std::string_view bytes;  // valid until the next read() or finish()
  TimePoint arrival{};
  bool body_done = false;  // the body ended with (or before) these bytes
};

// What Client::read_body() hands every chunk to, from the read's own
// handler. Returns the deadline of the next read, or nullopt when no more is
// wanted.
class ChunkSink {
 public:
  virtual std::optional<TimePoint> take(const Chunk& chunk) = 0;

 protected:
  ~ChunkSink() = default;
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
  asio::awaitable<Started> start(const Request& request, TimePoint deadline);

  // The next decoded body bytes, stamped with the arrival instant of the
  // socket read that delivered them: the kernel's receive stamp of its last
  // segment (never later than the read's completion), else the completion
  // instant. Bytes already buffered from an earlier read keep that read's
  // instant. After the end of the body: no bytes and body_done.
  asio::awaitable<Result<Chunk>> read(TimePoint deadline);

  // The same chunks as read() in a loop, each handed to `sink` as its read
  // completes, without a coroutine resuming per chunk: ends when the chunk
  // with body_done went to the sink, when the sink wants no more (nullopt),
  // or at a fault, which it returns (bytes that came with the fault went to
  // the sink first). `deadline` is the first read's.
  asio::awaitable<std::optional<Fault>> read_body(ChunkSink& sink, TimePoint deadline);

  // Ends the exchange: the connection goes back to the pool when `reuse` and
  // the response allowed it and was read to its end; otherwise it is closed.
  void finish(bool reuse);

  // Aborts any operation in flight (shutdown / reload); it completes with
  // Interrupt::canceled.
  void cancel();

  const ClientOptions& options() const { return options_; }

  // The response of the exchange in progress, from its headers until
  // finish(); null otherwise. For what only an error answer needs
  // (Retry-After).
  const Response* response() const;

 private:
  struct Conn;
  using Endpoints = std::vector<asio::ip::tcp::endpoint>;  // in the order to try
  using Step = std::optional<Fault>;                       // nullopt: the step succeeded

  // The steps of start(), in clock order.
  asio::awaitable<Step> open(TimePoint deadline, Stamps& stamps);
  asio::awaitable<Result<Endpoints>> resolve(TimePoint deadline);
  asio::awaitable<Step> connect(const Endpoints& endpoints, TimePoint deadline);
  asio::awaitable<Step> tunnel(TimePoint deadline);
  asio::awaitable<Step> handshake(TimePoint deadline);
  asio::awaitable<Step> send(const RequestMessage& message, TimePoint deadline);
  // HTTP/2 (client_h2.cpp): the request as a stream of the connection's
  // session; what the session has to write.
  asio::awaitable<Step> send_h2(const Request& request, TimePoint deadline);
  asio::awaitable<Step> write_h2(Stage stage, TimePoint deadline);
  template <class Handler>
  void write_h2_then_read(TimePoint deadline, Handler&& handler);
  asio::awaitable<Result<Response>> read_headers(TimePoint deadline, bool& nothing_received,
                                                 std::size_t& interim);
  asio::awaitable<Started> exchange(const RequestMessage& message, const Request& request,
                                    TimePoint deadline, bool& stale);

  // One socket read into in_, stamped; the fault is at `stage`. Its two
  // halves are shared with ReadOp (the body read, read()).
  asio::awaitable<Step> receive(Stage stage, TimePoint deadline);
  asio::mutable_buffer begin_receive(TimePoint deadline);
  template <class Handler>
  void read_some(TimePoint deadline, Handler&& handler);
  Step received(Stage stage, TimePoint deadline, error_code ec, std::size_t n);
  struct ReadOp;
  struct BodyOp;
  std::optional<Result<Chunk>> read_buffered();
  std::optional<Result<Chunk>> after_body_read(TimePoint deadline, error_code ec, std::size_t n);
  Chunk chunk() const;
  Result<Chunk> deliver_then(Fault fault);

  // The fault of an operation at `stage` that ended with `ec`: canceled, or
  // the deadline, or the operation's own error; nullopt when it succeeded.
  Step outcome(Stage stage, const error_code& ec, std::string_view timeout_detail,
               std::string error_detail) const;
  void arm(TimePoint deadline, std::function<void()> on_expiry);
  void arm_close(TimePoint deadline);
  void disarm();
  // The deadline of socket reads (headers and body), watched lazily: a read
  // only moves read_deadline_, and the timer stays armed at its expiry. When
  // it fires before read_deadline_ (the deadline moved later meanwhile, as an
  // idle deadline does with every chunk) it re-arms there; past it, it
  // cancels the read in flight. It also fires after every kSilenceRecheck of
  // a read in flight (see there). At most one timer operation per second
  // instead of a wait and a cancel per chunk.
  void watch_reads(TimePoint deadline);
  void arm_watch(TimePoint at);
  // How often a silent read is checked for a reset the reactor's edge could
  // not announce (TimestampingSocket::rearm()); it bounds that reset's delay.
  static constexpr std::chrono::milliseconds kSilenceRecheck{1000};

  asio::io_context& io_;
  ClientOptions options_;
  std::shared_ptr<asio::ssl::context> ssl_;  // shared by targets with the same TLS material
  asio::steady_timer timer_;
  std::uint64_t timer_generation_ = 0;
  bool timed_out_ = false;
  bool canceled_ = false;
  std::function<void()> abort_;
  TimePoint read_deadline_{};  // of the read in flight (or the last one)
  TimePoint watch_at_{};       // the timer's expiry while watch_armed_
  bool watch_armed_ = false;
  bool read_in_flight_ = false;
  std::unique_ptr<Conn> conn_;        // in use or pooled
  bool conn_pooled_ = false;          // conn_ came from the pool (reused)
  std::unique_ptr<char[]> read_buf_;  // each socket read lands here; only its bytes go to in_
  TimePoint last_read_at_{};
  ResponseReader reader_;         // the response's bytes: heads, framing, decoded body
  std::optional<Fault> pending_;  // for the next read(): its bytes went out first
};

}  // namespace lse::http
