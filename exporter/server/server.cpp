// The exporter's HTTP server: the accept loop with connection caps (total
// and per peer address) where a newcomer displaces the oldest connection not
// being answered (connections.hpp), a listener that can move (rebind),
// limits that can change, and a prompt stop. Sessions are session.cpp's,
// binding listener.cpp's. Everything runs on the server's single io_context
// thread, so the session registry needs no lock.
#include <utility>  // before Asio with GCC 12 / C++20 (STYLE.md)

#include "server/server.hpp"

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/error.hpp>
#include <chrono>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "log/log.hpp"
#include "server/connections.hpp"
#include "server/listener.hpp"
#include "server/routes.hpp"
#include "server/session.hpp"
#include "util/thread_priority.hpp"

namespace lse::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

// After a newcomer displaced a connection (or was refused), the next accept
// waits this long. A client that reconnects the moment it is displaced would
// otherwise turn the caps into a race at the speed of accept(), in which a
// scraper's connection has only a few milliseconds to send its request
// before enough newer ones displace it. Paced, a connection waits in the
// kernel's accept queue instead (where it holds none of our slots) and its
// request is there by the time it is accepted; the wait is bounded by the
// queue (some hundreds of connections: well under a second).
constexpr auto kDisplacementPace = std::chrono::milliseconds(1);

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
    start_session(shared, std::move(socket), std::move(address));
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
  impl_->shared->mailbox = std::make_shared<Mailbox>(impl_->ioc.get_executor());
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
  impl_->acceptor = bind_listener(impl_->ioc, impl_->listen);
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
  auto next = bind_listener(impl_->ioc, listen);  // throws: nothing changed
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
  // On-demand probes that end from now on answer nobody.
  impl_->shared->mailbox->close();
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
