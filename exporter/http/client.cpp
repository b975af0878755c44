// Streaming HTTP client: one exchange (send, read headers) over the
// pooled connection or a new one, and the socket read every
// stage shares, with Beast's parser fed incrementally from our own reads so
// that every byte keeps the instant of the read that delivered it. Each step
// reports facts (http/fault.hpp). Opening a connection: client_opening.cpp;
// the body: client_body.cpp; deadlines: client_deadlines.cpp; the HTTP/2
// steps: client_h2.cpp. What this adds
// to Beast's parser (interim responses, framing checks, transfer codings) is
// listed in client.hpp.
#include "http/client.hpp"

#include "http/client_conn.hpp"
#include "http/opening.hpp"

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/write.hpp>

namespace lse::http {

namespace bhttp = boost::beast::http;
using asio::awaitable;
using asio::redirect_error;
using asio::use_awaitable;

namespace {

constexpr std::size_t kReadChunk = 64 * std::size_t{1024};

}  // namespace

Client::Client(asio::io_context& io, ClientOptions options)
    : io_(io), options_(std::move(options)), timer_(io), reader_(options_.limits) {
  if (options_.url.tls) ssl_ = shared_tls_context(options_.tls);
}

Client::~Client() = default;

const Response* Client::response() const { return reader_.response(); }

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
  pending_.reset();
  nothing_received = true;
  interim = 0;
  // HTTP/2: what came while the request waited for the server's window (an
  // early answer, a reset) is in the session already.
  if (reader_.http2()) {
    if (reader_.answered()) nothing_received = false;
    auto early = reader_.read_heads();
    interim = reader_.interim_responses();
    if (!early) co_return early.fault();
    if (early.value()) co_return *reader_.response();
  }
  for (;;) {
    Step fault = co_await receive(Stage::headers, deadline);
    if (reader_.answered()) nothing_received = false;
    if (fault) co_return std::move(*fault);
    auto heads = reader_.read_heads();
    interim = reader_.interim_responses();
    if (!heads) co_return heads.fault();
    if (heads.value()) {
      pending_ = reader_.take_body_fault();
      co_return *reader_.response();
    }
    // HTTP/2: the session's answers (SETTINGS and PING acks) go out between
    // reads, after what the read said; those owed after the head go before
    // the first body read (read_some()).
    if (reader_.http2()) {
      if (Step f = co_await write_h2(Stage::headers, deadline)) co_return std::move(*f);
    }
  }
}

// Opens a connection when none is pooled, sends, reads the headers. `stale`:
// it failed on a pooled connection the server had closed before answering.
awaitable<Started> Client::exchange(const RequestMessage& message, const Request& request,
                                    TimePoint deadline, bool& stale) {
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
  h2::Session* session = conn_->h2.get();
  if (session)
    reader_.start(*session);
  else
    reader_.start();
  // Not one conditional expression of two co_await: GCC 12 destroys its
  // result twice.
  Step f;
  if (session)
    f = co_await send_h2(request, deadline);
  else
    f = co_await send(message, deadline);
  if (!f) {
    s.stamps.request_sent = Clock::now();
    opening.release();
    s.response = co_await read_headers(deadline, nothing_received, s.interim_responses);
    if (reader_.head_done()) s.stamps.headers = last_read_at_;
    if (s.response) co_return s;
    f = s.response.fault();
  }
  s.response = *f;
  // An h2 stream the server refused unprocessed (GOAWAY, REFUSED_STREAM) is
  // as safe to send again as a request a closed connection never answered.
  stale = reused && nothing_received && (is_connection_lost(*f) || reader_.refused_unprocessed());
  if (session) reader_.clear();  // it reads the session that goes with conn_
  conn_.reset();
  conn_pooled_ = false;
  co_return s;
}

awaitable<Started> Client::start(const Request& request, TimePoint deadline) {
  canceled_ = false;
  const RequestMessage message = build_request(options_.url, options_.proxy.has_value(), request);
  bool stale = false;
  Started started = co_await exchange(message, request, deadline, stale);
  // A pooled connection the server had already closed: once more on a fresh one.
  if (stale) started = co_await exchange(message, request, deadline, stale);
  co_return started;
}

void Client::finish(bool reuse) {
  disarm();
  const bool keep = reuse && conn_ && reader_.body_done() && !reader_.holds_bytes() && !pending_ &&
                    reader_.keep_alive() && !canceled_;
  // HTTP/2: a stream still open is reset (RST_STREAM CANCEL written before
  // the next stream, or dropped with the connection).
  if (conn_ && conn_->h2) conn_->h2->finish_stream();
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
