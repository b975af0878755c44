// Client: reading the body. read() and read_body() are composed operations
// (no coroutine frame per chunk); bytes buffered by an earlier read keep that
// read's instant, and a fault that came with bytes follows them.
#include "http/client.hpp"
#include "http/client_conn.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace lse::http {

using asio::awaitable;
using asio::use_awaitable;

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
//
// HTTP/2: what the session has to write after the last read (a
// WINDOW_UPDATE, an acknowledgement) is written first; with nothing to
// write (the common case) the read starts as on HTTP/1.1.
template <class Handler>
void Client::read_some(TimePoint deadline, Handler&& handler) {
  Conn* conn = conn_.get();
  if (conn->h2 && !conn->h2_writes_failed && !conn->h2->output().empty()) {
    write_h2_then_read(deadline, std::forward<Handler>(handler));
    return;
  }
  const asio::mutable_buffer buf = begin_receive(deadline);
  auto bound = asio::bind_executor(io_.get_executor(), std::forward<Handler>(handler));
  if (conn->tls)
    conn->tls->async_read_some(buf, std::move(bound));
  else
    conn->reader.async_read_some(buf, std::move(bound));
}

// Writes the session's frames, then reads. The read's deadline also bounds
// the write (its watch cancels the socket: the handler gets the deadline's
// fault); a write the server refused is left to the read that follows, as
// in write_h2().
template <class Handler>
void Client::write_h2_then_read(TimePoint deadline, Handler&& handler) {
  Conn* conn = conn_.get();
  const std::string_view out = conn->h2->output();
  watch_reads(deadline);
  read_in_flight_ = true;
  auto next = [this, deadline, handler = std::forward<Handler>(handler)](error_code ec,
                                                                         std::size_t n) mutable {
    read_in_flight_ = false;
    conn_->h2->wrote(n);
    if (ec && (timed_out_ || canceled_)) {
      handler(ec, std::size_t{0});
      return;
    }
    if (ec) conn_->h2_writes_failed = true;
    read_some(deadline, std::move(handler));
  };
  auto bound = asio::bind_executor(io_.get_executor(), std::move(next));
  if (conn->tls)
    asio::async_write(*conn->tls, asio::buffer(out.data(), out.size()), std::move(bound));
  else
    asio::async_write(conn->socket, asio::buffer(out.data(), out.size()), std::move(bound));
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
}  // namespace lse::http
