// One connection of the HTTP server and the state every connection shares:
// the hooks, the routing, the limits, the web config's policy at accept
// time, basic auth and the connection table. start_session() is the only way
// a connection begins; the acceptor (server.cpp) decides whether it may.
#pragma once
#include <utility>  // before Asio with GCC 12 / C++20 (STYLE.md)

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "log/log.hpp"
#include "report/row_store.hpp"
#include "server/connections.hpp"
#include "server/server.hpp"
#include "web/basic_auth.hpp"
#include "web/policy.hpp"

namespace lse::server {

// Hands work to the server's io thread from any thread (an on-demand probe
// ends on a probe thread) until the server stops: after close() nothing
// more is posted, so nothing reaches an io_context that is being destroyed.
class Mailbox {
 public:
  explicit Mailbox(boost::asio::io_context::executor_type io) : io_(std::move(io)) {}
  void post(std::function<void()> work);
  void close();

 private:
  std::mutex mutex_;
  bool open_ = true;
  boost::asio::io_context::executor_type io_;
};

// What stop() and a displacing newcomer need of a session, whatever its stream.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void close_now() = 0;
};

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
  web::BasicAuth auth;                            // thread-safe
  boost::asio::thread_pool* auth_pool = nullptr;  // bcrypt runs there (Server::Impl's)
  std::set<std::string> refusals_logged;          // io thread only
  // Every open connection: its slot and phase, and the session to close
  // when it is displaced (io thread only).
  ConnectionTable table;
  std::unordered_map<ConnectionTable::Id, std::weak_ptr<SessionBase>> sessions;
  // Sessions waiting for an on-demand probe: nothing is pending on their
  // socket that would keep them alive, so this does (io thread only).
  std::unordered_map<ConnectionTable::Id, std::shared_ptr<SessionBase>> awaiting;
  std::shared_ptr<Mailbox> mailbox;  // set by the server
  bool stopping = false;             // io thread only
};

// The peer's address, the key of the per-address cap; "" when the peer is
// gone already (nothing to serve then).
std::string peer_address(const boost::asio::ip::tcp::socket& socket);

// Starts serving `socket` (accepted from `address`) under the policy for a
// new connection: plain or TLS. Io thread only.
void start_session(const std::shared_ptr<Shared>& shared, boost::asio::ip::tcp::socket socket,
                   std::string address);

}  // namespace lse::server
