// Connection handling of the exporter's HTTP server: accept with connection
// caps (total and per peer address) where a newcomer displaces the oldest
// connection not being answered (connections.hpp), one Session per
// connection (plain or TLS, as the web config's policy says at accept time)
// reading with limits under a header deadline, an idle deadline between
// keep-alive requests and a write deadline, basic auth (bcrypt on a side
// thread), routes from routes.cpp, a listener that can move (rebind) and a
// prompt stop. Everything else runs on the server's single io_context
// thread, so the session registry needs no lock.
#include <utility>  // before Asio with GCC 12 / C++20 (STYLE.md)

#include "server/server.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <future>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include "log/log.hpp"
#include "net/listen_address.hpp"
#include "server/connections.hpp"
#include "server/routes.hpp"
#include "util/thread_priority.hpp"
#include "util/wall_clock.hpp"
#include "web/basic_auth.hpp"
#include "web/policy.hpp"

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

// After a newcomer displaced a connection (or was refused), the next accept
// waits this long. A client that reconnects the moment it is displaced would
// otherwise turn the caps into a race at the speed of accept(), in which a
// scraper's connection has only a few milliseconds to send its request
// before enough newer ones displace it. Paced, a connection waits in the
// kernel's accept queue instead (where it holds none of our slots) and its
// request is there by the time it is accepted; the wait is bounded by the
// queue (some hundreds of connections: well under a second).
constexpr auto kDisplacementPace = std::chrono::milliseconds(1);

// The address to bind, in the one grammar of net/listen_address.hpp.
net::ListenAddress parse_listen(const std::string& listen) {
  std::string error;
  auto address = net::parse_listen_address(listen, &error);
  if (!address) throw std::runtime_error("invalid listen address \"" + listen + "\": " + error);
  return *address;
}

class SessionBase;

// What the acceptor and every session share. Lives as long as the last
// session (sessions may outlive Server::Impl's members only inside a
// destroyed io_context, but never touch anything but this).
struct Shared {
  Shared(Hooks h, const report::RowStore& r, ServerOptions o)
      : hooks(std::move(h)),
        rows(r),
        routing(std::move(o.routing)),
        limits(o.limits),
        plain(std::make_shared<const web::Policy>()) {
    if (!o.web_config_file.empty())
      policy_file = std::make_unique<web::PolicyFile>(o.web_config_file);
  }

  // The policy for a new connection (io thread only): the web config file's
  // as it is on disk now, or plain HTTP without one.
  std::shared_ptr<const web::Policy> policy_for_new_connection() {
    if (!policy_file) return plain;
    auto current = policy_file->current();
    if (current.refused && refusals_logged.insert(*current.refused).second)
      log::error("web config change refused, the previous one stays in force",
                 {{"component", "http"}, {"error", *current.refused}});
    if (current.reread) log_policy("web config re-read", *current.policy);
    return current.policy;
  }

  static void log_policy(const char* what, const web::Policy& p) {
    const auto& tls = p.config.tls;
    log::info(what, {{"component", "http"},
                     {"file", p.config.file},
                     {"tls", tls ? "on" : "off"},
                     {"client_auth", tls ? web::to_string(tls->client_auth) : "none"},
                     {"basic_auth_users", p.config.basic_auth_users.size()}});
    if (!tls && p.requires_auth())
      log::warn("basic auth without TLS: passwords cross the network in clear",
                {{"component", "http"}});
  }

  Hooks hooks;
  const report::RowStore& rows;
  Routing routing;
  Limits limits;
  std::unique_ptr<web::PolicyFile> policy_file;  // io thread only; null without a web config
  std::shared_ptr<const web::Policy> plain;
  web::BasicAuth auth;                     // thread-safe
  asio::thread_pool* auth_pool = nullptr;  // bcrypt runs there (Server::Impl's)
  std::set<std::string> refusals_logged;   // io thread only
  // Every open connection: its slot and phase, and the session to close
  // when it is displaced (io thread only).
  ConnectionTable table;
  std::unordered_map<ConnectionTable::Id, std::weak_ptr<SessionBase>> sessions;
  bool stopping = false;  // io thread only
};

bool is_http_error(const beast::error_code& ec) {
  return ec.category() == make_error_code(http::error::bad_method).category();
}

// What stop() and a displacing newcomer need of a session, whatever its stream.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void close_now() = 0;
};

// The peer's address, the key of the per-address cap; "" when the peer is
// gone already (nothing to serve then).
std::string peer_address(const tcp::socket& socket) {
  beast::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  return ec ? std::string() : ep.address().to_string();
}

// One connection: plain (beast::tcp_stream) or TLS (beast::ssl_stream over
// it). The policy it was accepted under stays its policy to the end, so a
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
    write(handle_request(req, RouteContext{shared_->hooks, shared_->rows, wall_clock::unix_now(),
                                           shared_->routing, authorized}),
          /*linger=*/false);
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
};

using PlainSession = Session<beast::tcp_stream>;
using TlsSession = Session<beast::ssl_stream<beast::tcp_stream>>;

// Binding a listen address: a new acceptor of `ioc`, bound and listening,
// or std::runtime_error naming the address. Used by start() and rebind(),
// which may run on another thread than the server's (the acceptor is not
// shared with it until it is handed over).
class Binder {
 public:
  Binder(asio::io_context& ioc, std::string listen) : ioc_(ioc), listen_(std::move(listen)) {}

  std::shared_ptr<tcp::acceptor> bind() {
    const net::ListenAddress address = parse_listen(listen_);
    const auto port = static_cast<unsigned short>(std::stoi(address.port));
    acceptor_ = std::make_shared<tcp::acceptor>(ioc_);
    bind_and_listen(address.host.empty() ? any_interface_endpoint(port)
                                         : host_endpoint(address, port));
    return std::move(acceptor_);
  }

 private:
  struct Endpoint {
    tcp::endpoint endpoint;
    bool dual_stack = false;  // IPv6 any that also takes IPv4
  };

  std::runtime_error listen_error(const beast::error_code& ec) {
    beast::error_code ignored;
    acceptor_->close(ignored);
    return std::runtime_error("cannot listen on " + listen_ + ": " + ec.message());
  }

  // All interfaces: IPv6 any with v6_only off also takes IPv4; hosts
  // without IPv6 fall back to IPv4 any. Leaves the acceptor open when v6 works.
  Endpoint any_interface_endpoint(unsigned short port_number) {
    beast::error_code ec;
    acceptor_->open(tcp::v6(), ec);
    if (!ec) return {tcp::endpoint(tcp::v6(), port_number), true};
    return {tcp::endpoint(tcp::v4(), port_number), false};
  }

  // One host: an IP literal as is, a name through the resolver.
  Endpoint host_endpoint(const net::ListenAddress& address, unsigned short port_number) {
    beast::error_code ec;
    auto ip = asio::ip::make_address(address.host, ec);
    if (!ec) return {tcp::endpoint(ip, port_number), false};
    ec.clear();
    tcp::resolver resolver(ioc_);
    auto results = resolver.resolve(address.host, address.port, ec);
    if (!ec && results.empty()) ec = asio::error::host_not_found;
    if (ec) throw listen_error(ec);
    return {results.begin()->endpoint(), false};
  }

  // Open (unless already open), options, bind, listen.
  void bind_and_listen(const Endpoint& where) {
    beast::error_code ec;
    if (!acceptor_->is_open()) acceptor_->open(where.endpoint.protocol(), ec);
    if (ec) throw listen_error(ec);
    if (where.dual_stack) acceptor_->set_option(asio::ip::v6_only(false), ec);
    ec.clear();
    // Lets a restarted exporter bind while old connections sit in TIME_WAIT;
    // on Linux it does not let two listeners share the port.
    acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
    acceptor_->bind(where.endpoint, ec);
    if (ec) throw listen_error(ec);
    acceptor_->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw listen_error(ec);
  }

  asio::io_context& ioc_;
  std::string listen_;
  std::shared_ptr<tcp::acceptor> acceptor_;
};

}  // namespace

struct Server::Impl {
  // Declared first so it is destroyed last: sockets and timers below (and
  // sessions still held by queued handlers) are bound to it.
  asio::io_context ioc{1};
  // The listener (io thread only once started); rebind() hands a new one over.
  std::shared_ptr<tcp::acceptor> acceptor;
  asio::steady_timer accept_timer{ioc};  // paces and retries accepts
  std::shared_ptr<Shared> shared;
  // Where bcrypt runs (one thread: bcrypt is CPU-bound and the cache makes
  // repeats free); only with a web config file.
  std::optional<asio::thread_pool> auth_pool;
  std::string listen;  // where start() listens
  std::atomic<unsigned short> port{0};
  bool started = false;
  bool stopped = false;
  std::thread thread;
  std::promise<void> finished;

  // Serve: the server's own thread, running the io_context.
  void start_thread() {
    thread = std::thread([this] {
      // Scrapes yield to the probe thread: a /metrics render must never delay
      // the read that timestamps a chunk.
      util::step_below_probes("lse-server");
      run();
    });
  }

  void accept(const std::shared_ptr<tcp::acceptor>& on) {
    on->async_accept(ioc, [this, on](beast::error_code ec, tcp::socket socket) {
      on_accept(on, ec, std::move(socket));
    });
  }

  // A listener that rebind() replaced may still hand over a connection it
  // had accepted; that one is served, but only the current listener goes on.
  void on_accept(const std::shared_ptr<tcp::acceptor>& from, const beast::error_code& ec,
                 tcp::socket socket) {
    if (shared->stopping || ec == asio::error::operation_aborted) return;
    const bool current = from == acceptor;
    if (ec) {
      if (current) retry_accept_later(ec);
      return;
    }
    const bool crowded = !admit(std::move(socket));
    if (!current) return;
    if (crowded) return accept_later(kDisplacementPace);
    accept(from);
  }

  // Within the caps, displacing whom the connection table names; refused
  // (closed at once) only when every connection is being answered. False
  // when the caps were reached (someone displaced, or the newcomer refused).
  bool admit(tcp::socket socket) {
    beast::error_code ignored;
    std::string address = peer_address(socket);
    if (address.empty()) {  // gone already
      socket.close(ignored);
      return true;
    }
    const Limits& limits = shared->limits;
    const auto victims =
        shared->table.admit(address, {limits.max_connections, limits.max_connections_per_address});
    if (!victims) {
      log::debug("connection limit reached and every connection busy, closing new connection",
                 {{"component", "http"},
                  {"peer", address},
                  {"limit", limits.max_connections},
                  {"per_address_limit", limits.max_connections_per_address}});
      socket.close(ignored);
      return false;
    }
    for (const auto id : *victims) evict(id, address);
    start_session(std::move(socket), std::move(address));
    return victims->empty();
  }

  void evict(ConnectionTable::Id id, const std::string& for_peer) {
    auto it = shared->sessions.find(id);
    auto session = it == shared->sessions.end() ? nullptr : it->second.lock();
    log::debug("connection limit reached, closing the oldest connection not being answered",
               {{"component", "http"}, {"for_peer", for_peer}});
    if (session) return session->close_now();
    shared->table.remove(id);
  }

  void start_session(tcp::socket socket, std::string address) {
    auto policy = shared->policy_for_new_connection();
    if (policy->tls) {
      auto& tls = *policy->tls;
      std::make_shared<TlsSession>(shared, std::move(policy), std::move(address), std::move(socket),
                                   tls)
          ->start();
    } else {
      std::make_shared<PlainSession>(shared, std::move(policy), std::move(address),
                                     std::move(socket))
          ->start();
    }
  }

  // EMFILE and friends: retry shortly instead of spinning.
  void retry_accept_later(const beast::error_code& ec) {
    log::warn("accept failed", {{"component", "http"}, {"error", ec.message()}});
    accept_later(std::chrono::milliseconds(100));
  }

  // The current listener accepts again after `pause` (switch_to() and stop
  // cancel the wait).
  void accept_later(std::chrono::milliseconds pause) {
    accept_timer.expires_after(pause);
    accept_timer.async_wait([this](beast::error_code wait_ec) {
      if (!wait_ec && !shared->stopping) accept(acceptor);
    });
  }

  // On the io thread: the new listener takes over, the old one closes.
  void switch_to(std::shared_ptr<tcp::acceptor> next) {
    beast::error_code ignored;
    if (shared->stopping) return void(next->close(ignored));
    acceptor->close(ignored);
    accept_timer.cancel();
    acceptor = std::move(next);
    accept(acceptor);
  }

  void run() {
    // A handler that throws (bad_alloc, a hook bug) must not end the server.
    for (;;) {
      try {
        ioc.run();
        break;
      } catch (const std::exception& e) {
        log::error("handler failed", {{"component", "http"}, {"error", e.what()}});
      } catch (...) {
        log::error("handler failed", {{"component", "http"}, {"error", "unknown exception"}});
      }
    }
    finished.set_value();
  }

  // Stop, on the io thread: no new connections, every open one closed.
  void close_everything() {
    shared->stopping = true;
    beast::error_code ec;
    if (acceptor) acceptor->close(ec);
    accept_timer.cancel();
    std::vector<std::shared_ptr<SessionBase>> live;
    for (auto& [id, weak] : shared->sessions)
      if (auto s = weak.lock()) live.push_back(std::move(s));
    for (auto& s : live) s->close_now();
  }
};

namespace {

// Zero caps would refuse everyone; one connection is the least.
Limits sane(Limits limits) {
  if (limits.max_connections == 0) limits.max_connections = 1;
  if (limits.max_connections_per_address == 0) limits.max_connections_per_address = 1;
  return limits;
}

}  // namespace

Server::Server(const std::string& listen, Hooks hooks, const report::RowStore& rows,
               ServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (auto problem = routing_problem(options.routing); !problem.empty())
    throw std::invalid_argument(problem);
  options.limits = sane(options.limits);
  const bool web_config = !options.web_config_file.empty();
  impl_->shared = std::make_shared<Shared>(std::move(hooks), rows, std::move(options));
  if (web_config) {
    impl_->auth_pool.emplace(1);
    impl_->shared->auth_pool = &*impl_->auth_pool;
    // bcrypt is CPU-bound: below the probe thread too.
    asio::post(*impl_->auth_pool, [] { util::step_below_probes("lse-auth"); });
  }
  impl_->listen = listen;
}

Server::~Server() { stop(); }

void Server::start() {
  if (impl_->started) throw std::runtime_error("http server: already started");
  impl_->acceptor = Binder(impl_->ioc, impl_->listen).bind();
  impl_->port = impl_->acceptor->local_endpoint().port();
  impl_->started = true;
  // main logs the listening address; this is for debugging tests and embedders.
  log::debug("listening",
             {{"component", "http"}, {"address", impl_->listen}, {"port", impl_->port.load()}});
  if (impl_->shared->policy_file)
    Shared::log_policy("web config", *impl_->shared->policy_file->current().policy);
  impl_->accept(impl_->acceptor);
  impl_->start_thread();
}

unsigned short Server::port() const { return impl_->port; }

void Server::rebind(const std::string& listen) {
  if (impl_->stopped) throw std::runtime_error("http server: stopped");
  if (!impl_->started) {
    impl_->listen = listen;
    return;
  }
  auto next = Binder(impl_->ioc, listen).bind();  // throws: nothing changed
  impl_->port = next->local_endpoint().port();
  impl_->listen = listen;
  log::debug("listening",
             {{"component", "http"}, {"address", listen}, {"port", impl_->port.load()}});
  asio::post(impl_->ioc, [impl = impl_.get(), next = std::move(next)]() mutable {
    impl->switch_to(std::move(next));
  });
}

void Server::set_limits(const Limits& limits) {
  asio::post(impl_->ioc, [shared = impl_->shared, limits = sane(limits)] {
    // The session buffers are sized by these two: they stay.
    const std::size_t header_limit = shared->limits.header_limit;
    const std::size_t body_limit = shared->limits.body_limit;
    shared->limits = limits;
    shared->limits.header_limit = header_limit;
    shared->limits.body_limit = body_limit;
  });
}

void Server::stop() {
  if (impl_->started) impl_->stopped = true;
  if (!impl_->thread.joinable()) return;
  auto finished = impl_->finished.get_future();
  asio::post(impl_->ioc, [impl = impl_.get()] { impl->close_everything(); });
  // Normally the loop runs dry right away; a hook stuck in a slow call must
  // not keep shutdown waiting.
  if (finished.wait_for(std::chrono::milliseconds(800)) != std::future_status::ready)
    impl_->ioc.stop();
  impl_->thread.join();
  // A bcrypt in flight finishes (it cannot be interrupted); queued ones are dropped.
  if (impl_->auth_pool) {
    impl_->auth_pool->stop();
    impl_->auth_pool->join();
  }
}

}  // namespace lse::server
