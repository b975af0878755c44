// Client: the HTTP/2 steps of an exchange. The request goes out as a stream
// of the connection's h2::Session; what the session has to write
// (preface, SETTINGS, acknowledgements, WINDOW_UPDATE, RST_STREAM) is
// written between the socket reads, never during one. A request body the
// server's window holds back waits for its WINDOW_UPDATE, read like any
// answer, until the deadline. The answer is read by the same paths as
// HTTP/1.1 (client.cpp, client_body.cpp) through ResponseReader.
#include "http/client.hpp"
#include "http/client_conn.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace lse::http {

using asio::awaitable;
using asio::redirect_error;
using asio::use_awaitable;

namespace {

constexpr std::string_view kWindowHeldBody =
    "HTTP/2 flow control: the server's window held the request body back";

}  // namespace

// Writes all the session holds; its deadline closes the socket. A write
// the server refused is no fault here: the connection writes no more, and
// the next read brings what the server said before (a GOAWAY, a reset) or
// the end of the connection.
awaitable<Client::Step> Client::write_h2(Stage stage, TimePoint deadline) {
  Conn* c = conn_.get();
  h2::Session& session = *c->h2;
  if (c->h2_writes_failed) co_return std::nullopt;
  for (std::string_view out = session.output(); !out.empty(); out = session.output()) {
    arm_close(deadline);
    error_code ec;
    std::size_t n = 0;
    if (c->tls)
      n = co_await asio::async_write(*c->tls, asio::buffer(out.data(), out.size()),
                                     redirect_error(use_awaitable, ec));
    else
      n = co_await asio::async_write(c->socket, asio::buffer(out.data(), out.size()),
                                     redirect_error(use_awaitable, ec));
    disarm();
    session.wrote(n);
    Step f = outcome(stage, ec, "timeout writing HTTP/2 frames", "write: ");
    if (f && f->interrupt != Interrupt::none) co_return f;
    if (f) {
      c->h2_writes_failed = true;
      break;
    }
  }
  co_return std::nullopt;
}

// Submits the request and writes it. While the server's window holds the
// body back, reads (a WINDOW_UPDATE, or an early answer) and writes again;
// the answer read meanwhile stays in the session for read_headers().
awaitable<Client::Step> Client::send_h2(const Request& request, TimePoint deadline) {
  h2::Session& session = *conn_->h2;
  session.submit(build_h2_request(options_.url, request));
  for (;;) {
    // An answer or a reset read meanwhile is read_headers()' to report,
    // before any write that could only fail after it.
    if (session.head() != nullptr || session.trouble().kind != h2::Break::none)
      co_return std::nullopt;
    if (Step f = co_await write_h2(Stage::send, deadline)) co_return f;
    if (session.request_sent()) co_return std::nullopt;
    Step f = co_await receive(Stage::send, deadline);
    if (f && f->interrupt == Interrupt::deadline && session.window_blocked())
      f->detail = std::string(kWindowHeldBody);
    if (f) co_return f;
  }
}

}  // namespace lse::http
