// Streaming HTTP/1.1 client: the steps of one exchange in clock order
// (resolve, connect, proxy CONNECT, TLS, send, read headers, read body),
// deadlines, the pooled keep-alive connection, and Beast's parser fed
// incrementally from our own socket reads so that every byte keeps the instant
// of the read that delivered it. Each step reports facts (http/fault.hpp).
// What this adds to Beast's parser (interim responses, framing checks,
// transfer codings) is listed in client.hpp.
#include "http/client.hpp"

#include "http/opening.hpp"
#include "http/timestamping_socket.hpp"
#include "http/tls_stream.hpp"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>
#include <ctime>

namespace lse::http {

namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::redirect_error;
using asio::use_awaitable;

namespace {

constexpr std::size_t kReadChunk = 64 * std::size_t{1024};
constexpr std::size_t kMaxProxyAnswer = 16384;

bool closed_by_peer(const error_code& ec) {
  return ec == asio::error::eof || ec == ssl::error::stream_truncated ||
         ec == asio::error::connection_reset;
}

// "host:port" with the port always written (brackets for IPv6), as failures
// name the proxy and the CONNECT target.
std::string host_port(const net::Url& url) {
  const bool ipv6 = url.host.find(':') != std::string::npos;
  return (ipv6 ? "[" + url.host + "]" : url.host) + ":" + url.port;
}

// The proxy's answer to CONNECT: its status and reason phrase (printable
// ASCII only, cut: it is the proxy's text), or nullopt when it is not HTTP.
struct ProxyStatus {
  int code = 0;
  std::string reason;
};
std::optional<ProxyStatus> proxy_status(std::string_view answer) {
  const std::string_view line = answer.substr(0, answer.find("\r\n"));
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ') return std::nullopt;
  ProxyStatus s;
  for (const char c : line.substr(9, 3)) {
    if (c < '0' || c > '9') return std::nullopt;
    s.code = s.code * 10 + (c - '0');
  }
  constexpr std::size_t kMaxReason = 60;
  for (const char c : line.substr(12)) {
    if (s.reason.size() == kMaxReason) break;
    if (c >= ' ' && c <= '~') s.reason += c;
  }
  while (!s.reason.empty() && s.reason.front() == ' ') s.reason.erase(0, 1);
  return s;
}

}  // namespace

struct Client::Conn {
  explicit Conn(asio::io_context& io) : socket(io), reader(socket) {}
  ProbeSocket socket;         // the connection (timeouts cancel/close it)
  TimestampingSocket reader;  // reads with kernel receive stamps; plain, or the layer under tls
  // Set for https targets: OpenSSL reads through `reader`. In place, beside
  // the socket and its reader that every read touches with it.
  std::optional<TlsStream> tls;
};

Client::Client(asio::io_context& io, ClientOptions options)
    : io_(io), options_(std::move(options)), timer_(io), reader_(options_.limits) {
  if (options_.url.tls) ssl_ = shared_tls_context(options_.tls);
}

Client::~Client() = default;

const Response* Client::response() const { return reader_.response(); }

std::optional<double> retry_after_seconds(std::string_view value, double now_unix) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    double seconds = 0;
    for (char c : value) seconds = seconds * 10 + (c - '0');
    return seconds;
  }
  // The three date forms RFC 9110 §5.6.7 says a recipient must accept.
  const std::string text(value);
  for (const char* format :
       {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"}) {
    std::tm tm{};
    const char* end = ::strptime(text.c_str(), format, &tm);
    if (end == nullptr || *end != '\0') continue;
    const double at = static_cast<double>(::timegm(&tm));
    return std::max(0.0, at - now_unix);
  }
  return std::nullopt;
}

// --- deadlines and cancellation ---------------------------------------------

void Client::arm(TimePoint deadline, std::function<void()> on_expiry) {
  timed_out_ = false;
  watch_armed_ = false;
  abort_ = std::move(on_expiry);
  const auto generation = ++timer_generation_;
  timer_.expires_at(deadline);
  timer_.async_wait([this, generation](error_code ec) {
    // A stale expiry (the operation already finished) must not touch the next one.
    if (ec || generation != timer_generation_) return;
    timed_out_ = true;
    if (abort_) abort_();
  });
}

// Connect, CONNECT, handshake and write are aborted by closing the socket.
void Client::arm_close(TimePoint deadline) {
  arm(deadline, [c = conn_.get()] {
    error_code ignored;
    c->socket.close(ignored);
  });
}

void Client::disarm() {
  ++timer_generation_;
  timer_.cancel();
  abort_ = nullptr;
  watch_armed_ = false;
}

void Client::watch_reads(TimePoint deadline) {
  timed_out_ = false;
  abort_ = nullptr;  // cancel() cancels the socket itself
  read_deadline_ = deadline;
  const TimePoint at = std::min(deadline, Clock::now() + kSilenceRecheck);
  if (!watch_armed_ || watch_at_ > at) arm_watch(at);
}

void Client::arm_watch(TimePoint at) {
  const auto generation = ++timer_generation_;
  watch_armed_ = true;
  watch_at_ = at;
  timer_.expires_at(at);
  timer_.async_wait([this, generation](error_code ec) {
    if (ec || generation != timer_generation_) return;
    watch_armed_ = false;
    // No read in flight: the next one arms the watch at its own deadline
    // (and one past it is caught by its arrival stamp).
    if (!read_in_flight_) return;
    const TimePoint now = Clock::now();
    if (now < read_deadline_) {
      // A read waiting for the reactor's next edge may wait for one that
      // already came with the last bytes (a reset right behind them): after
      // a silence, the edge is re-armed so that it reports what is pending.
      const bool silent = now - last_read_at_ >= kSilenceRecheck;
      if (silent && conn_ && conn_->reader.drained()) conn_->reader.rearm();
      arm_watch(std::min(read_deadline_, (silent ? now : last_read_at_) + kSilenceRecheck));
      return;
    }
    timed_out_ = true;
    error_code ignored;
    conn_->socket.cancel(ignored);
  });
}

void Client::cancel() {
  canceled_ = true;
  if (abort_) abort_();
  if (conn_) {
    error_code ignored;
    conn_->socket.cancel(ignored);
  }
}

Client::Step Client::outcome(Stage stage, const error_code& ec, std::string_view timeout_detail,
                             std::string error_detail) const {
  if (canceled_) return Fault{stage, Interrupt::canceled, ec, "canceled"};
  if (timed_out_) return Fault{stage, Interrupt::deadline, ec, std::string(timeout_detail)};
  if (ec) return Fault{stage, Interrupt::none, ec, std::move(error_detail) + ec.message()};
  return std::nullopt;
}

// --- opening a connection: resolve, connect, proxy CONNECT, TLS -----------

awaitable<Client::Step> Client::open(TimePoint deadline, Stamps& stamps) {
  auto endpoints = co_await resolve(deadline);
  if (!endpoints) co_return endpoints.fault();
  stamps.resolved = Clock::now();
  if (Step f = co_await connect(endpoints.value(), deadline)) co_return f;
  if (options_.proxy && options_.url.tls) {
    if (Step f = co_await tunnel(deadline)) co_return f;
  }
  stamps.connected = Clock::now();
  if (options_.url.tls) {
    if (Step f = co_await handshake(deadline)) co_return f;
    stamps.tls_done = Clock::now();
  }
  co_return std::nullopt;
}

awaitable<Result<Client::Endpoints>> Client::resolve(TimePoint deadline) {
  const net::Url& hop = options_.proxy ? *options_.proxy : options_.url;
  tcp::resolver resolver(io_);
  arm(deadline, [&resolver] { resolver.cancel(); });
  error_code ec;
  auto endpoints =
      co_await resolver.async_resolve(hop.host, hop.port, redirect_error(use_awaitable, ec));
  disarm();
  // A proxy's failures name the proxy: the target was never reached.
  const bool proxy = options_.proxy.has_value();
  if (Step f = outcome(
          Stage::resolve, ec,
          proxy ? "proxy " + hop.host + ": timeout resolving" : "timeout resolving " + hop.host,
          proxy ? "proxy " + hop.host + ": resolve: " : "resolve " + hop.host + ": "))
    co_return std::move(*f);
  co_return endpoints;
}

awaitable<Client::Step> Client::connect(const Endpoints& endpoints, TimePoint deadline) {
  const net::Url& hop = options_.proxy ? *options_.proxy : options_.url;
  conn_ = std::make_unique<Conn>(io_);
  conn_pooled_ = false;
  arm_close(deadline);
  error_code ec;
  co_await asio::async_connect(conn_->socket, endpoints, redirect_error(use_awaitable, ec));
  disarm();
  const bool proxy = options_.proxy.has_value();
  if (Step f = outcome(
          Stage::connect, ec,
          proxy ? "proxy " + host_port(hop) + ": timeout connecting"
                : "timeout connecting to " + hop.authority(),
          proxy ? "proxy " + host_port(hop) + ": connect: " : "connect " + hop.authority() + ": "))
    co_return f;
  conn_->socket.set_option(tcp::no_delay(true), ec);
  // Kernel receive timestamps for the arrival instants; without them reads
  // fall back to Clock::now() at completion.
  conn_->reader.enable_timestamps();
  conn_->reader.enable_queue_hints();
  co_return std::nullopt;
}

// HTTP CONNECT tunnel for https through a proxy; the proxy's answer is read
// here, not by the response parser.
awaitable<Client::Step> Client::tunnel(TimePoint deadline) {
  Conn* c = conn_.get();
  const ConnectMessage request = build_connect(options_.url);
  arm_close(deadline);
  error_code ec;
  co_await bhttp::async_write(c->socket, request, redirect_error(use_awaitable, ec));
  std::string answer;
  while (!ec && answer.find("\r\n\r\n") == std::string::npos && answer.size() < kMaxProxyAnswer) {
    char buf[1024];
    const std::size_t n =
        co_await c->socket.async_read_some(asio::buffer(buf), redirect_error(use_awaitable, ec));
    answer.append(buf, n);
  }
  disarm();
  // Named as the proxy's doing, never with what we sent (no credentials).
  const std::string proxy = "proxy " + host_port(*options_.proxy);
  const std::string target(request.target().data(), request.target().size());
  Step f = outcome(Stage::proxy_connect, ec, proxy + ": timeout in CONNECT " + target,
                   proxy + ": CONNECT " + target + ": ");
  if (f && f->interrupt == Interrupt::none && closed_by_peer(ec))
    f->detail = proxy + ": CONNECT " + target + ": connection closed by the proxy";
  if (f) co_return f;
  const auto status = proxy_status(answer);
  if (!status)
    co_return Fault{Stage::proxy_connect, Interrupt::none, make_error_code(Errc::proxy_refused),
                    proxy + " did not answer CONNECT " + target + " in HTTP"};
  if (status->code < 200 || status->code > 299)
    co_return Fault{Stage::proxy_connect, Interrupt::none, make_error_code(Errc::proxy_refused),
                    proxy + " answered " + std::to_string(status->code) +
                        (status->reason.empty() ? "" : " (" + status->reason + ")") +
                        " to CONNECT " + target};
  co_return std::nullopt;
}

awaitable<Client::Step> Client::handshake(TimePoint deadline) {
  Conn* c = conn_.get();
  c->tls.emplace(c->reader, *ssl_);
  SSL* s = c->tls->native_handle();
  configure_peer_check(s, options_.tls, options_.url.host);
  arm_close(deadline);
  error_code ec;
  co_await c->tls->async_handshake(redirect_error(use_awaitable, ec));
  disarm();
  Step f = outcome(Stage::tls, ec, "timeout in TLS handshake", "");
  if (f && f->interrupt == Interrupt::none) f->detail = "tls: " + tls_failure_detail(ec, s);
  co_return f;
}

// --- one exchange: send, read headers ---------------------------------------

awaitable<Client::Step> Client::send(const RequestMessage& message, TimePoint deadline) {
  Conn* c = conn_.get();
  arm_close(deadline);
  error_code ec;
  if (c->tls)
    co_await bhttp::async_write(*c->tls, message, redirect_error(use_awaitable, ec));
  else
    co_await bhttp::async_write(c->socket, message, redirect_error(use_awaitable, ec));
  disarm();
  co_return outcome(Stage::send, ec, "timeout writing request", "write: ");
}

// A socket read: the deadline watched, the buffer ready, the read in flight.
// One buffer per client, allocated once and never cleared: growing in_ by
// kReadChunk before every read zero-filled 64 KiB per chunk (the largest CPU
// cost per chunk) and kept 64 KiB of every target resident.
asio::mutable_buffer Client::begin_receive(TimePoint deadline) {
  if (!read_buf_) read_buf_ = std::make_unique_for_overwrite<char[]>(kReadChunk);
  watch_reads(deadline);
  read_in_flight_ = true;
  return asio::buffer(read_buf_.get(), kReadChunk);
}

// What a socket read of `n` bytes ending with `ec` brought: its arrival
// stamped, its bytes fed to the reader, its fault at `stage`.
Client::Step Client::received(Stage stage, TimePoint deadline, error_code ec, std::size_t n) {
  read_in_flight_ = false;
  Conn* c = conn_.get();
  // The arrival instant, before any parsing: the kernel's receive stamp of the
  // latest segment read (under TLS, the last one that fed these bytes), never
  // later than now nor earlier than the previous arrival; now without a stamp.
  const TimePoint now = Clock::now();
  const std::int64_t kernel_ns = c->reader.last_kernel_ns();
  if (n > 0 && kernel_ns != 0)
    last_read_at_ = std::max(last_read_at_, kernel_stamp_to_steady(kernel_ns, now));
  else
    last_read_at_ = now;
  // Bytes that arrived after the deadline are the deadline's, not the
  // stream's. Reads of a peer that keeps sending complete at once and would
  // otherwise always win the race with the timer: such a stream never ended.
  if (!ec && n > 0 && last_read_at_ > deadline) {
    timed_out_ = true;
    ec = asio::error::timed_out;
    n = 0;
  }
  reader_.feed(std::string_view(read_buf_.get(), n));
  Step f = outcome(stage, ec, "timeout", "");
  if (f && f->interrupt == Interrupt::none && closed_by_peer(ec))
    f->detail = "connection closed by peer";
  return f;
}

awaitable<Client::Step> Client::receive(Stage stage, TimePoint deadline) {
  Conn* c = conn_.get();
  const asio::mutable_buffer buf = begin_receive(deadline);
  error_code ec;
  std::size_t n = 0;
  if (c->tls)
    n = co_await c->tls->async_read_some(buf, redirect_error(use_awaitable, ec));
  else
    n = co_await c->reader.async_read_some(buf, redirect_error(use_awaitable, ec));
  co_return received(stage, deadline, ec, n);
}

// Reads heads until the final one: interim (1xx) responses are counted in
// `interim` and skipped, each with its own fields; one read may bring several.
awaitable<Result<Response>> Client::read_headers(TimePoint deadline, bool& nothing_received,
                                                 std::size_t& interim) {
  reader_.start();
  pending_.reset();
  nothing_received = true;
  interim = 0;
  for (;;) {
    Step fault = co_await receive(Stage::headers, deadline);
    if (reader_.holds_bytes()) nothing_received = false;
    if (fault) co_return std::move(*fault);
    auto heads = reader_.read_heads();
    interim = reader_.interim_responses();
    if (!heads) co_return heads.fault();
    if (heads.value()) {
      pending_ = reader_.take_body_fault();
      co_return *reader_.response();
    }
  }
}

// Opens a connection when none is pooled, sends, reads the headers. `stale`:
// it failed on a pooled connection the server had closed before answering.
awaitable<Started> Client::exchange(const RequestMessage& message, TimePoint deadline,
                                    bool& stale) {
  Started s{Stamps{}, Fault{}};
  stale = false;
  // Until the request is out, this exchange's instants are Clock::now().
  OpeningCount::Guard opening(io_);
  if (!conn_) {
    if (Step f = co_await open(deadline, s.stamps)) {
      conn_.reset();
      s.response = std::move(*f);
      co_return s;
    }
  }
  const bool reused = conn_pooled_;
  bool nothing_received = false;
  // No answer arrives before its request began: the floor of this exchange's
  // arrival stamps (receive() never goes below last_read_at_). A kernel stamp
  // converted across a step of the wall clock could otherwise land before the
  // probe started, and a TTFT go negative.
  last_read_at_ = Clock::now();
  Step f = co_await send(message, deadline);
  if (!f) {
    s.stamps.request_sent = Clock::now();
    opening.release();
    s.response = co_await read_headers(deadline, nothing_received, s.interim_responses);
    if (reader_.head_done()) s.stamps.headers = last_read_at_;
    if (s.response) co_return s;
    f = s.response.fault();
  }
  s.response = *f;
  conn_.reset();
  conn_pooled_ = false;
  stale = reused && nothing_received && is_connection_lost(*f);
  co_return s;
}

awaitable<Started> Client::start(const Request& request, TimePoint deadline) {
  canceled_ = false;
  const RequestMessage message = build_request(options_.url, options_.proxy.has_value(), request);
  bool stale = false;
  Started started = co_await exchange(message, deadline, stale);
  // A pooled connection the server had already closed: once more on a fresh one.
  if (stale) started = co_await exchange(message, deadline, stale);
  co_return started;
}

// --- the body -----------------------------------------------------------------

Chunk Client::chunk() const { return Chunk{reader_.decoded(), last_read_at_, reader_.body_done()}; }

// Bytes decoded before a fault came with the read that brought the fault:
// they go out first, stamped with that read's arrival, and the fault is the
// next read()'s answer.
Result<Chunk> Client::deliver_then(Fault fault) {
  if (reader_.decoded().empty()) return fault;
  pending_ = std::move(fault);
  return chunk();
}

// What read() answers without a socket read, if anything.
std::optional<Result<Chunk>> Client::read_buffered() {
  reader_.clear_decoded();
  if (pending_) {
    Fault fault = std::move(*pending_);
    pending_.reset();
    return Result<Chunk>(std::move(fault));
  }
  if (!reader_.in_response() || reader_.body_done()) return chunk();
  // Bytes buffered by an earlier read belong to that read's instant.
  if (reader_.has_unparsed()) {
    if (Step f = reader_.decode_body()) return deliver_then(std::move(*f));
    if (!reader_.decoded().empty() || reader_.body_done()) return chunk();
  }
  return std::nullopt;
}

// What read() answers after a socket read of the body, or nullopt: it
// brought no body bytes yet (read again).
std::optional<Result<Chunk>> Client::after_body_read(TimePoint deadline, error_code ec,
                                                     std::size_t n) {
  const Step fault = received(Stage::body, deadline, ec, n);
  if (reader_.has_unparsed()) {
    if (Step f = reader_.decode_body()) return deliver_then(std::move(*f));
  }
  if (fault) {
    if (Step f = reader_.end_of_stream(*fault)) return deliver_then(std::move(*f));
    return chunk();
  }
  if (!reader_.decoded().empty() || reader_.body_done()) return chunk();
  return std::nullopt;
}

// One socket read of the body into the read buffer, through TLS when the
// connection has it; `handler` gets (error_code, bytes). The handler runs on
// the io_context's own executor, the socket's: bound to it, the read tracks
// its work once, where the coroutine's type-erased executor would be built
// and destroyed again for every read.
template <class Handler>
void Client::read_some(TimePoint deadline, Handler&& handler) {
  Conn* conn = conn_.get();
  const asio::mutable_buffer buf = begin_receive(deadline);
  auto bound = asio::bind_executor(io_.get_executor(), std::forward<Handler>(handler));
  if (conn->tls)
    conn->tls->async_read_some(buf, std::move(bound));
  else
    conn->reader.async_read_some(buf, std::move(bound));
}

// read() as one asynchronous operation rather than a coroutine awaiting
// coroutines: per chunk, the caller's await of it is the only coroutine
// frame and the socket read the only operation, and asio recycles both
// (one block per kind per thread): no heap allocation per chunk. An answer
// without a socket read goes through post(), never completing inside read().
struct Client::ReadOp {
  Client* client;
  TimePoint deadline;
  std::optional<Result<Chunk>> ready;
  bool started = false;

  template <class Self>
  void operator()(Self& self, error_code ec = {}, std::size_t n = 0) {
    Client& c = *client;
    if (ready) {
      Result<Chunk> answer = std::move(*ready);
      ready.reset();
      self.complete(std::move(answer));
      return;
    }
    if (!started) {
      started = true;
      ready = c.read_buffered();
      if (ready) {
        asio::post(c.io_, std::move(self));
        return;
      }
    } else if (std::optional<Result<Chunk>> answer = c.after_body_read(deadline, ec, n)) {
      self.complete(std::move(*answer));
      return;
    }
    c.read_some(deadline, std::move(self));
  }
};

awaitable<Result<Chunk>> Client::read(TimePoint deadline) {
  return asio::async_compose<const asio::use_awaitable_t<>&, void(Result<Chunk>)>(
      ReadOp{this, deadline, std::nullopt, false}, use_awaitable, io_);
}

// read_body(): ReadOp's loop with the sink in it. A chunk goes to the sink
// from the read's handler and the next read starts there; only the end
// completes the operation (through post() when nothing was read, as in
// ReadOp).
struct Client::BodyOp {
  Client* client;
  ChunkSink* sink;
  TimePoint deadline;
  std::optional<Fault> fault;
  bool reading = false;  // a socket read is in flight
  bool ended = false;    // posted: complete with `fault`

  template <class Self>
  void operator()(Self& self, error_code ec = {}, std::size_t n = 0) {
    Client& c = *client;
    if (ended) {
      self.complete(std::move(fault));
      return;
    }
    const bool initiating = !reading;
    std::optional<Result<Chunk>> answer =
        reading ? c.after_body_read(deadline, ec, n) : c.read_buffered();
    reading = false;
    while (answer) {
      bool over = !*answer;
      if (over) {
        fault = answer->fault();
      } else {
        const std::optional<TimePoint> next = sink->take(answer->value());
        over = !next || answer->value().body_done;
        if (next) deadline = *next;
      }
      if (over) {
        end(self, initiating);
        return;
      }
      answer = c.read_buffered();
    }
    reading = true;
    c.read_some(deadline, std::move(self));
  }

  template <class Self>
  void end(Self& self, bool initiating) {
    if (!initiating) {
      self.complete(std::move(fault));
      return;
    }
    ended = true;
    asio::post(client->io_, std::move(self));
  }
};

awaitable<std::optional<Fault>> Client::read_body(ChunkSink& sink, TimePoint deadline) {
  return asio::async_compose<const asio::use_awaitable_t<>&, void(std::optional<Fault>)>(
      BodyOp{this, &sink, deadline, std::nullopt, false, false}, use_awaitable, io_);
}

void Client::finish(bool reuse) {
  disarm();
  const bool keep = reuse && conn_ && reader_.body_done() && !reader_.holds_bytes() && !pending_ &&
                    reader_.keep_alive() && !canceled_;
  reader_.clear();
  pending_.reset();
  if (keep) {
    conn_pooled_ = true;
  } else {
    conn_.reset();
    conn_pooled_ = false;
  }
}

}  // namespace lse::http
