// One connection of the HTTP server: plain or TLS, reading with limits under
// a header deadline, an idle deadline between keep-alive requests and a
// write deadline, basic auth (bcrypt on a side thread), routes from
// routes.cpp, and a prompt close. Everything runs on the server's single
// io_context thread, so the session registry needs no lock.
#include "server/session.hpp"

#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <optional>
#include <type_traits>

#include "server/routes.hpp"
#include "util/wall_clock.hpp"

namespace lse::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

// After an error response the client may still be sending (an oversized
// header, say). Closing right away would make the kernel answer with RST and
// the client could lose our response; so half-close and drain for a moment.
constexpr auto kLingerTime = std::chrono::seconds(1);

bool is_http_error(const beast::error_code& ec) {
  return ec.category() == make_error_code(http::error::bad_method).category();
}

// web config change applies from the next connection on. Its phase in the
// connection table says whether a newcomer may displace it.
template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
  using Phase = ConnectionTable::Phase;

 public:
  template <class... StreamArgs>
  Session(std::shared_ptr<Shared> shared, std::shared_ptr<const web::Policy> policy,
          std::string address, StreamArgs&&... stream_args)
      : shared_(std::move(shared)),
        policy_(std::move(policy)),
        address_(std::move(address)),
        stream_(std::forward<StreamArgs>(stream_args)...),
        buffer_(shared_->limits.header_limit + shared_->limits.body_limit + 8192) {}

  ~Session() override { release(); }

  void start() {
    id_ = shared_->table.add(address_);
    shared_->sessions.emplace(id_, this->weak_from_this());
    if constexpr (kTls) {
      tcp().expires_after(shared_->limits.header_timeout);
      stream_.async_handshake(ssl::stream_base::server,
                              beast::bind_front_handler(&Session::on_handshake, self()));
    } else {
      read_request();
    }
  }

  // From stop() or a displacing newcomer: aborts whatever is pending (the
  // handlers then drop the session) and frees the slot at once.
  void close_now() override {
    cancel_probe();
    beast::error_code ec;
    tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
    tcp().close();
    release();
  }

 private:
  std::shared_ptr<Session> self() { return this->shared_from_this(); }
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  void phase(Phase p) { shared_->table.set_phase(id_, p); }

  // Out of the table and the registry; idempotent.
  void release() {
    if (id_ == 0) return;
    shared_->table.remove(id_);
    shared_->sessions.erase(id_);
    std::shared_ptr<SessionBase> keep;  // every caller holds one too
    if (auto it = shared_->awaiting.find(id_); it != shared_->awaiting.end()) {
      keep = std::move(it->second);
      shared_->awaiting.erase(it);
    }
    id_ = 0;
  }

  // A client without the certificate the policy requires, or one speaking
  // plain HTTP to the TLS port, ends here: OpenSSL has sent its alert.
  void on_handshake(beast::error_code ec) {
    if (ec) {
      log::debug("TLS handshake failed",
                 {{"component", "http"}, {"peer", peer()}, {"error", ec.message()}});
      return close_now();
    }
    read_request();
  }

  // Keep-alive: wait (idle_timeout) for the first byte of the next request,
  // then give the whole request header_timeout. Bytes already buffered (a
  // pipelined request) start it at once.
  void wait_for_request() {
    phase(Phase::idle);
    if (buffer_.size() > 0) return read_request();
    tcp().expires_after(shared_->limits.idle_timeout);
    stream_.async_read_some(buffer_.prepare(kFirstRead),
                            beast::bind_front_handler(&Session::on_first_byte, self()));
  }

  void on_first_byte(beast::error_code ec, std::size_t n) {
    if (ec == http::error::end_of_stream || ec == asio::error::eof) return close_gracefully();
    if (ec || shared_->stopping) return close_now();  // idle timeout, reset, stop
    buffer_.commit(n);
    read_request();
  }

  void read_request() {
    phase(Phase::reading);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_->limits.header_limit));
    parser_->body_limit(shared_->limits.body_limit);
    // One deadline for the whole request, however its bytes trickle in: a
    // client sending a header line every few seconds (slowloris) is cut off
    // after header_timeout, not kept alive by each line.
    tcp().expires_after(shared_->limits.header_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, self()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream || ec == http::error::partial_message) {
      // The client is done (or gave up mid-request): nothing to answer.
      return close_gracefully();
    }
    if (ec == beast::error::timeout || ec == asio::error::operation_aborted || shared_->stopping)
      return close_now();
    if (ec == http::error::header_limit)
      return send_error(http::status::request_header_fields_too_large,
                        "Request Header Fields Too Large\n");
    if (ec == http::error::body_limit)
      return send_error(http::status::payload_too_large, "Payload Too Large\n");
    if (ec && is_http_error(ec)) {
      log::debug("bad request", {{"component", "http"}, {"peer", peer()}, {"error", ec.message()}});
      return send_error(http::status::bad_request, "Bad Request\n");
    }
    if (ec) return close_now();  // reset, broken pipe: the client is gone
    phase(Phase::busy);
    authenticate(parser_->release());
  }

  // Basic auth of the policy, when it has users. A check the cache answers
  // is immediate; a bcrypt (50-250 ms of CPU) runs on the auth thread so
  // that other connections are served meanwhile, and the answer comes back
  // to this session on the I/O thread.
  void authenticate(Request req) {
    if (!policy_->requires_auth()) return respond(req, true);
    std::string authorization(req[http::field::authorization]);
    const auto& users = policy_->config.basic_auth_users;
    switch (shared_->auth.check_cached(users, authorization)) {
      case web::BasicAuth::Verdict::allow: return respond(req, true);
      case web::BasicAuth::Verdict::deny: return respond(req, false);
      case web::BasicAuth::Verdict::needs_bcrypt: break;
    }
    asio::post(
        *shared_->auth_pool, [self = self(), io = stream_.get_executor(), req = std::move(req),
                              authorization = std::move(authorization)]() mutable {
          const bool ok =
              self->shared_->auth.verify(self->policy_->config.basic_auth_users, authorization);
          asio::post(io, [self = std::move(self), req = std::move(req), ok] {
            if (self->shared_->stopping) return self->close_now();
            self->respond(req, ok);
          });
        });
  }

  void respond(const Request& req, bool authorized) {
    const RouteContext ctx{shared_->hooks, shared_->rows, wall_clock::unix_now(), shared_->routing,
                           authorized};
    if (auto probe = on_demand_probe(req, ctx)) return await_probe(req, *probe);
    write(handle_request(req, ctx), /*linger=*/false);
  }

  // GET /probe?target=: the probe runs on a probe thread; the answer comes
  // back through the mailbox. Meanwhile the connection is busy (never
  // displaced), without a deadline of its own (the probe's deadlines bound
  // it), and watched: a client that leaves cancels its probe.
  void await_probe(const Request& req, const ProbeRequest& probe) {
    phase(Phase::busy);
    tcp().expires_never();
    awaiting_probe_ = true;
    shared_->awaiting.emplace(id_, self());
    std::weak_ptr<Session> weak = self();
    auto done = [mailbox = shared_->mailbox, weak, req](ProbeAnswer answer) {
      mailbox->post([weak, req, answer = std::move(answer)] {
        if (auto session = weak.lock()) session->on_probe_answer(req, answer);
      });
    };
    cancel_ = shared_->hooks.probe(probe, std::move(done));
    watch_client();
  }

  // Readable while its probe runs: either the client closed (EOF, reset)
  // and its probe is canceled, or it sent more (a pipelined request, read
  // after the answer).
  void watch_client() {
    tcp().socket().async_wait(tcp::socket::wait_read, [self = self()](beast::error_code ec) {
      if (ec || !self->awaiting_probe_) return;
      auto& socket = self->tcp().socket();
      std::array<char, 1> byte{};
      beast::error_code peek_ec;
      socket.non_blocking(true, peek_ec);
      const std::size_t n = socket.receive(asio::buffer(byte), tcp::socket::message_peek, peek_ec);
      beast::error_code ignored;
      socket.non_blocking(false, ignored);
      if (peek_ec == asio::error::would_block) return self->watch_client();  // spurious
      if (n > 0 && !peek_ec) return;  // a pipelined request: read after the answer
      log::debug("client left while its on-demand probe ran, probe canceled",
                 {{"component", "http"}, {"peer", self->peer()}});
      self->close_now();
    });
  }

  void on_probe_answer(const Request& req, const ProbeAnswer& answer) {
    if (!awaiting_probe_) return;  // closed meanwhile
    awaiting_probe_ = false;
    cancel_ = nullptr;
    auto keep = self();
    shared_->awaiting.erase(id_);
    beast::error_code ignored;
    tcp().socket().cancel(ignored);  // the watch
    if (shared_->stopping) return close_now();
    write(probe_response(req, answer), /*linger=*/false);
  }

  void cancel_probe() {
    if (!std::exchange(awaiting_probe_, false)) return;
    if (auto cancel = std::exchange(cancel_, nullptr)) cancel();
  }

  void send_error(http::status status, std::string body) {
    Response res{status, 11};
    res.set(http::field::server, "llm-stream-exporter");
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = std::move(body);
    res.keep_alive(false);
    res.prepare_payload();
    write(std::move(res), /*linger=*/true);
  }

  void write(Response res, bool linger) {
    // http_server_config.headers, on every response (a blank one unsets).
    for (const auto& [name, value] : policy_->config.headers) {
      if (value.empty()) {
        res.erase(name);
      } else {
        res.set(name, value);
      }
    }
    phase(Phase::busy);
    response_ = std::make_shared<Response>(std::move(res));
    const bool close = response_->need_eof();
    tcp().expires_after(shared_->limits.write_timeout);
    http::async_write(stream_, *response_,
                      beast::bind_front_handler(&Session::on_write, self(), close, linger));
  }

  void on_write(bool close, bool linger, beast::error_code ec, std::size_t) {
    response_.reset();
    if (ec || shared_->stopping) return close_now();
    if (close) return linger ? drain_and_close() : close_gracefully();
    wait_for_request();
  }

  void close_gracefully() {
    if constexpr (kTls) return tls_shutdown();
    beast::error_code ec;
    tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
    tcp().close();
    release();
  }

  void drain_and_close() {
    if constexpr (kTls) return tls_shutdown();
    phase(Phase::closing);
    beast::error_code ec;
    tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
    tcp().expires_after(kLingerTime);  // one deadline for the whole drain
    drain();
  }

  // close_notify, then wait (briefly) for the client's: TLS's way of a
  // half-close, so the client can tell our end of data from a cut.
  void tls_shutdown() {
    if constexpr (kTls) {
      phase(Phase::closing);
      tcp().expires_after(kLingerTime);
      stream_.async_shutdown([self = self()](beast::error_code) { self->close_now(); });
    }
  }

  void drain() {
    tcp().async_read_some(asio::buffer(drain_buffer_),
                          [self = self()](beast::error_code ec, std::size_t) {
                            if (ec || self->shared_->stopping) return self->close_now();
                            self->drain();
                          });
  }

  std::string peer() {
    beast::error_code ec;
    auto ep = tcp().socket().remote_endpoint(ec);
    return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  // Bytes asked for while waiting for the next request on a keep-alive
  // connection; the rest of the request is read by the parser.
  static constexpr std::size_t kFirstRead = 1024;

  std::shared_ptr<Shared> shared_;
  std::shared_ptr<const web::Policy> policy_;  // holds the TLS context: outlives the stream
  std::string address_;                        // the peer's, for the per-address cap
  ConnectionTable::Id id_ = 0;                 // 0: not (or no longer) in the table
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<Response> response_;  // alive until its write completes
  std::array<char, 4096> drain_buffer_{};
  bool awaiting_probe_ = false;   // an on-demand probe runs for this connection
  std::function<void()> cancel_;  // cancels it (the probe hook's)
};

using PlainSession = Session<beast::tcp_stream>;
using TlsSession = Session<beast::ssl_stream<beast::tcp_stream>>;

}  // namespace

void Mailbox::post(std::function<void()> work) {
  std::lock_guard lock(mutex_);
  if (open_) asio::post(io_, std::move(work));
}

void Mailbox::close() {
  std::lock_guard lock(mutex_);
  open_ = false;
}

std::string peer_address(const tcp::socket& socket) {
  beast::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  return ec ? std::string() : ep.address().to_string();
}

void start_session(const std::shared_ptr<Shared>& shared, tcp::socket socket, std::string address) {
  auto policy = shared->policy_for_new_connection();
  if (policy->tls) {
    auto& tls = *policy->tls;
    std::make_shared<TlsSession>(shared, std::move(policy), std::move(address), std::move(socket),
                                 tls)
        ->start();
  } else {
    std::make_shared<PlainSession>(shared, std::move(policy), std::move(address), std::move(socket))
        ->start();
  }
}

}  // namespace lse::server
