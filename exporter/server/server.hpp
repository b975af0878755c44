// The exporter's own HTTP/1.1 endpoints (/metrics, /-/healthy, /-/ready,
// /-/reload, /config, /api/v1/probes, landing page) on a Beast server with
// its own io_context and thread, so a scrape never runs on a probe thread and
// a slow scraper never delays a probe. What is served comes from Hooks; the
// server only speaks HTTP.
#pragma once
#include <utility>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "report/row_store.hpp"

namespace lse::server {

// One configured target as the landing page shows it.
struct TargetStatus {
  std::string name, model, url_redacted;
  std::vector<std::string> prompts;
  double interval_seconds = 0;
};

// Called on the server thread; each must be thread-safe with respect to the
// probe threads. A hook that throws answers 500 with the exception's message.
// An empty hook degrades instead of crashing: /metrics serves an empty body,
// /-/ready answers 503, /-/reload 500, /config 503, the landing page no targets.
struct Hooks {
  std::function<std::string()> metrics;                  // exposition text
  std::function<bool()> ready;                           // config loaded and scheduler running
  std::function<std::pair<bool, std::string>()> reload;  // POST /-/reload -> ok + message
  std::function<std::string()> config_dump;              // redacted YAML for GET /config
  std::function<std::vector<TargetStatus>()> targets;    // for the landing page
};

// Protection against misbehaving clients; the defaults are the product's.
struct Limits {
  std::size_t max_connections = 64;                  // further connections are closed at accept
  std::chrono::milliseconds idle_timeout{30'000};    // per read and per write
  std::size_t header_limit = 8 * std::size_t{1024};  // request line + headers; more -> 431
  std::size_t body_limit = 64 * std::size_t{1024};   // more -> 413
};

class Server {
 public:
  // `listen` is "host:port", ":port" (all interfaces), "[v6addr]:port"; port 0
  // picks a free port (see port()). `rows` must outlive the server.
  Server(const std::string& listen, Hooks hooks, const report::RowStore& rows, Limits limits = {});
  ~Server();  // stop()s
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts serving on the server's own thread. Throws
  // std::runtime_error naming the address when it cannot listen (port taken,
  // bad address); call once.
  void start();

  // The bound port (after start()).
  unsigned short port() const;

  // Stops accepting, closes every connection (idle keep-alive ones included)
  // and joins the thread. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lse::server
