// Connection handling of the exporter's HTTP server: accept with a connection
// cap, one Session per connection reading with limits and an idle deadline,
// routes from routes.cpp, and a prompt stop. Everything runs on the server's
// single io_context thread, so the session registry needs no lock.
#include <utility>  // before Asio with GCC 12 / C++20 (STYLE.md)

#include "server/server.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "net/listen_address.hpp"
#include "server/routes.hpp"
#include "util/wall_clock.hpp"

namespace lse::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// After an error response the client may still be sending (an oversized
// header, say). Closing right away would make the kernel answer with RST and
// the client could lose our response; so half-close and drain for a moment.
constexpr auto kLingerTime = std::chrono::seconds(1);

// The address to bind, in the one grammar of net/listen_address.hpp.
net::ListenAddress parse_listen(const std::string& listen) {
  std::string error;
  auto address = net::parse_listen_address(listen, &error);
  if (!address) throw std::runtime_error("invalid listen address \"" + listen + "\": " + error);
  return *address;
}

class Session;

// What the acceptor and every session share. Lives as long as the last
// session (sessions may outlive Server::Impl's members only inside a
// destroyed io_context, but never touch anything but this).
struct Shared {
  Shared(Hooks h, const report::RowStore& r, Limits l) : hooks(std::move(h)), rows(r), limits(l) {}
  Hooks hooks;
  const report::RowStore& rows;
  Limits limits;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;  // io thread only
  bool stopping = false;                                          // io thread only
};

bool is_http_error(const beast::error_code& ec) {
  return ec.category() == make_error_code(http::error::bad_method).category();
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<Shared> shared)
      : stream_(std::move(socket)),
        buffer_(shared->limits.header_limit + shared->limits.body_limit + 8192),
        shared_(std::move(shared)) {}

  ~Session() { shared_->sessions.erase(this); }

  void start() {
    shared_->sessions.emplace(this, weak_from_this());
    read();
  }

  // From stop(): aborts whatever is pending; the handlers then drop the session.
  void close_now() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_->limits.header_limit));
    parser_->body_limit(shared_->limits.body_limit);
    // The deadline covers the whole request, so a client trickling header
    // bytes (slowloris) is cut off like an idle keep-alive connection.
    stream_.expires_after(shared_->limits.idle_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, shared_from_this()));
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
      spdlog::debug("component=http msg=\"bad request\" peer={} error=\"{}\"", peer(),
                    ec.message());
      return send_error(http::status::bad_request, "Bad Request\n");
    }
    if (ec) return close_now();  // reset, broken pipe: the client is gone

    Request req = parser_->release();
    Response res =
        handle_request(req, RouteContext{shared_->hooks, shared_->rows, wall_clock::unix_now()});
    write(std::move(res), /*linger=*/false);
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
    response_ = std::make_shared<Response>(std::move(res));
    const bool close = response_->need_eof();
    stream_.expires_after(shared_->limits.idle_timeout);
    http::async_write(
        stream_, *response_,
        beast::bind_front_handler(&Session::on_write, shared_from_this(), close, linger));
  }

  void on_write(bool close, bool linger, beast::error_code ec, std::size_t) {
    response_.reset();
    if (ec || shared_->stopping) return close_now();
    if (close) return linger ? drain_and_close() : close_gracefully();
    read();
  }

  void close_gracefully() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  void drain_and_close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(kLingerTime);  // one deadline for the whole drain
    drain();
  }

  void drain() {
    stream_.async_read_some(asio::buffer(drain_buffer_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec || self->shared_->stopping) return self->close_now();
                              self->drain();
                            });
  }

  std::string peer() const {
    beast::error_code ec;
    auto ep = stream_.socket().remote_endpoint(ec);
    return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<Response> response_;  // alive until its write completes
  std::shared_ptr<Shared> shared_;
  std::array<char, 4096> drain_buffer_{};
};

}  // namespace

struct Server::Impl {
  // Declared first so it is destroyed last: sockets and timers below (and
  // sessions still held by queued handlers) are bound to it.
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  asio::steady_timer accept_retry{ioc};
  std::shared_ptr<Shared> shared;
  std::string listen;
  unsigned short port = 0;
  bool started = false;
  std::thread thread;
  std::promise<void> finished;

  struct Endpoint {
    tcp::endpoint endpoint;
    bool dual_stack = false;  // IPv6 any that also takes IPv4
  };

  std::runtime_error listen_error(const beast::error_code& ec) {
    beast::error_code ignored;
    acceptor.close(ignored);
    return std::runtime_error("cannot listen on " + listen + ": " + ec.message());
  }

  // Bind, all interfaces: IPv6 any with v6_only off also takes IPv4; hosts
  // without IPv6 fall back to IPv4 any. Leaves the acceptor open when v6 works.
  Endpoint any_interface_endpoint(unsigned short port_number) {
    beast::error_code ec;
    acceptor.open(tcp::v6(), ec);
    if (!ec) return {tcp::endpoint(tcp::v6(), port_number), true};
    return {tcp::endpoint(tcp::v4(), port_number), false};
  }

  // Bind, one host: an IP literal as is, a name through the resolver.
  Endpoint host_endpoint(const net::ListenAddress& address, unsigned short port_number) {
    beast::error_code ec;
    auto ip = asio::ip::make_address(address.host, ec);
    if (!ec) return {tcp::endpoint(ip, port_number), false};
    ec.clear();
    tcp::resolver resolver(ioc);
    auto results = resolver.resolve(address.host, address.port, ec);
    if (!ec && results.empty()) ec = asio::error::host_not_found;
    if (ec) throw listen_error(ec);
    return {results.begin()->endpoint(), false};
  }

  // Bind: open (unless already open), options, bind, listen; records the port.
  void bind_and_listen(const Endpoint& where) {
    beast::error_code ec;
    if (!acceptor.is_open()) acceptor.open(where.endpoint.protocol(), ec);
    if (ec) throw listen_error(ec);
    if (where.dual_stack) acceptor.set_option(asio::ip::v6_only(false), ec);
    ec.clear();
    // Lets a restarted exporter bind while old connections sit in TIME_WAIT;
    // on Linux it does not let two listeners share the port.
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    acceptor.bind(where.endpoint, ec);
    if (ec) throw listen_error(ec);
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw listen_error(ec);
    port = acceptor.local_endpoint().port();
  }

  // Serve: the server's own thread, running the io_context.
  void start_thread() {
    thread = std::thread([this] {
      // Scrapes yield to the probe thread: a /metrics render must never delay
      // the read that timestamps a chunk (Linux nice values are per thread).
      setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 10);
      run();
    });
  }

  void accept() {
    acceptor.async_accept(ioc, [this](beast::error_code ec, tcp::socket socket) {
      on_accept(ec, std::move(socket));
    });
  }

  void on_accept(const beast::error_code& ec, tcp::socket socket) {
    if (shared->stopping || ec == asio::error::operation_aborted) return;
    if (ec) return retry_accept_later(ec);
    if (shared->sessions.size() >= shared->limits.max_connections) {
      spdlog::debug(
          "component=http msg=\"connection limit reached, closing new connection\" limit={}",
          shared->limits.max_connections);
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      std::make_shared<Session>(std::move(socket), shared)->start();
    }
    accept();
  }

  // EMFILE and friends: retry shortly instead of spinning.
  void retry_accept_later(const beast::error_code& ec) {
    spdlog::warn("component=http msg=\"accept failed\" error=\"{}\"", ec.message());
    accept_retry.expires_after(std::chrono::milliseconds(100));
    accept_retry.async_wait([this](beast::error_code wait_ec) {
      if (!wait_ec && !shared->stopping) accept();
    });
  }

  void run() {
    // A handler that throws (bad_alloc, a hook bug) must not end the server.
    for (;;) {
      try {
        ioc.run();
        break;
      } catch (const std::exception& e) {
        spdlog::error("component=http msg=\"handler failed\" error=\"{}\"", e.what());
      } catch (...) {
        spdlog::error("component=http msg=\"handler failed\" error=\"unknown exception\"");
      }
    }
    finished.set_value();
  }

  // Stop, on the io thread: no new connections, every open one closed.
  void close_everything() {
    shared->stopping = true;
    beast::error_code ec;
    acceptor.close(ec);
    accept_retry.cancel();
    std::vector<std::shared_ptr<Session>> live;
    for (auto& [ptr, weak] : shared->sessions)
      if (auto s = weak.lock()) live.push_back(std::move(s));
    for (auto& s : live) s->close_now();
  }
};

Server::Server(const std::string& listen, Hooks hooks, const report::RowStore& rows, Limits limits)
    : impl_(std::make_unique<Impl>()) {
  if (limits.max_connections == 0) limits.max_connections = 1;
  impl_->shared = std::make_shared<Shared>(std::move(hooks), rows, limits);
  impl_->listen = listen;
}

Server::~Server() { stop(); }

void Server::start() {
  if (impl_->started) throw std::runtime_error("http server: already started");
  const net::ListenAddress address = parse_listen(impl_->listen);
  const auto port = static_cast<unsigned short>(std::stoi(address.port));
  impl_->bind_and_listen(address.host.empty() ? impl_->any_interface_endpoint(port)
                                              : impl_->host_endpoint(address, port));
  impl_->started = true;
  // main logs the listening address; this is for debugging tests and embedders.
  spdlog::debug("component=http msg=\"listening\" address={} port={}", impl_->listen, impl_->port);
  impl_->accept();
  impl_->start_thread();
}

unsigned short Server::port() const { return impl_->port; }

void Server::stop() {
  if (!impl_->thread.joinable()) return;
  auto finished = impl_->finished.get_future();
  asio::post(impl_->ioc, [impl = impl_.get()] { impl->close_everything(); });
  // Normally the loop runs dry right away; a hook stuck in a slow call must
  // not keep shutdown waiting.
  if (finished.wait_for(std::chrono::milliseconds(800)) != std::future_status::ready)
    impl_->ioc.stop();
  impl_->thread.join();
}

}  // namespace lse::server
