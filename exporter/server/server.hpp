// The exporter's own HTTP/1.1 endpoints (/metrics, /-/healthy, /-/ready,
// /-/reload, /config, /api/v1/probes, landing page) on a Beast server with
// its own io_context and thread, so a scrape never runs on a probe thread and
// a slow scraper never delays a probe. What is served comes from Hooks; where
// it is served (route prefix, telemetry path) from Routing; TLS and basic
// auth from the `--web.config.file` (web/), applied to every endpoint. The
// server only speaks HTTP.
#pragma once
#include <utility>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metrics/exposition.hpp"
#include "report/diagnosis.hpp"
#include "report/row_store.hpp"

namespace lse::server {

// One configured target as the landing page shows it.
struct TargetStatus {
  std::string name, model, url_redacted;
  std::vector<std::string> prompts;
  double interval_seconds = 0;
  // The diagnosis of its recent probes, per prompt: "short: transport",
  // "long: none", "short: no verdict yet" (service/views.cpp).
  std::vector<std::string> diagnosis;
  // The same diagnosis as values, one per prompt: the window's numbers and
  // its verdicts, for the landing page's verdict and evidence.
  struct PromptDiagnosis {
    std::string prompt;
    report::WindowStats window;
    std::vector<report::Verdict> verdicts;
    // Facts that change how the window's figures read (report::notes):
    // "the server sends 4 tokens per chunk: ...".
    std::vector<report::Note> notes{};
  };
  std::vector<PromptDiagnosis> prompt_diagnosis{};
};

// Called on the server thread; each must be thread-safe with respect to the
// probe threads. A hook that throws answers 500 with the exception's message.
// An empty hook degrades instead of crashing: /metrics serves an empty body,
// /-/ready answers 503, /-/reload 500, /config 503, the landing page no targets.
// The exposition of a scrape, handed a piece at a time to the sink (which
// compresses as it goes when the scraper takes gzip); "" when whole, else
// why the scrape is refused (answered 500 with that message).
using MetricsHook = std::function<std::string(metrics::Exposition, const metrics::ExpositionSink&)>;

// A MetricsHook from an exposition built whole (tests, tools).
MetricsHook whole_exposition(std::function<std::string(metrics::Exposition)> render);

// GET /probe?target=NAME[&prompt=P][&debug=true][&format=json]: one probe
// now, of a configured target (the service looks the names up).
struct ProbeRequest {
  std::string target;
  std::optional<std::string> prompt;  // nullopt: the target's first
  bool debug = false;                 // the probe's log and every event, as text
  bool json = false;                  // format=json: the probe's row
};

// What to answer when the probe is done (or refused at once).
struct ProbeAnswer {
  int status = 200;
  std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
  std::optional<unsigned> retry_after_seconds;  // 429: the Retry-After header
};

using ProbeDone = std::function<void(ProbeAnswer)>;
// Starts an on-demand probe without blocking (the server thread serves
// everyone). `done` is called exactly once, from any thread, possibly
// before the hook returns (a refusal). Returns what cancels the probe (the
// client went away); calling it after `done` does nothing.
using ProbeHook = std::function<std::function<void()>(const ProbeRequest&, ProbeDone done)>;

struct Hooks {
  MetricsHook metrics;                                   // exposition in that format
  std::function<bool()> ready;                           // config loaded, scheduler running
  std::function<std::pair<bool, std::string>()> reload;  // POST /-/reload -> ok + message
  std::function<std::string()> config_dump;              // redacted YAML for GET /config
  std::function<std::vector<TargetStatus>()> targets;    // for the landing page
  ProbeHook probe;                                       // GET /probe?target=; empty: answered 503
};

// Where the endpoints answer, as the `--web.*` flags set it.
struct Routing {
  // "" or "/a/b" (web::route_prefix()): every endpoint answers under it,
  // "/" and the bare prefix redirect to "<prefix>/".
  std::string route_prefix;
  std::string telemetry_path = "/metrics";  // under the prefix; "/" replaces the landing page
  // POST /-/reload; off unless --web.enable-lifecycle, as in Prometheus
  // (SIGHUP always reloads).
  bool enable_lifecycle = false;
};

// Protection against misbehaving clients (issue 13); the defaults are the
// product's, and the config's `web:` section sets the first five.
struct Limits {
  // Open connections at most; at the cap a new connection displaces the
  // oldest one that is not being answered (ConnectionTable), and is refused
  // only when every connection is in the middle of an answer.
  std::size_t max_connections = 64;
  // The same from one peer address: its own oldest connection makes room,
  // so one address never holds more than this many slots.
  std::size_t max_connections_per_address = 32;
  // A request (line, headers and the small body) must arrive within this
  // from its first byte (from the accept, or the TLS handshake, on a new
  // connection): a client trickling header lines is cut off after it.
  std::chrono::milliseconds header_timeout{5'000};
  // A keep-alive connection waits this long for the next request's first byte.
  std::chrono::milliseconds idle_timeout{30'000};
  // Writing one response may take this long.
  std::chrono::milliseconds write_timeout{30'000};
  std::size_t header_limit = 8 * std::size_t{1024};  // request line + headers; more -> 431
  std::size_t body_limit = 64 * std::size_t{1024};   // more -> 413
};

struct ServerOptions {
  Routing routing;
  // exporter-toolkit web config (TLS, basic auth, headers); "" for plain
  // HTTP without authentication. Re-read as web/policy.hpp says.
  std::string web_config_file;
  Limits limits;
};

class Server {
 public:
  // `listen` is "host:port", ":port" (all interfaces), "[v6addr]:port"; port 0
  // picks a free port (see port()). `rows` must outlive the server. Throws
  // std::invalid_argument for bad routing (routing_problem() in routes.hpp)
  // and config::ConfigError for a web config file that does not load.
  Server(const std::string& listen, Hooks hooks, const report::RowStore& rows,
         ServerOptions options = {});
  ~Server();  // stop()s
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts serving on the server's own thread. Throws
  // std::runtime_error naming the address when it cannot listen (port taken,
  // bad address); call once.
  void start();

  // The bound port (after start(); after rebind(), the new listener's).
  unsigned short port() const;

  // Listens on `listen` instead: the new listener is bound first, then the
  // old one is closed (on the server's thread, right after); connections
  // already open stay open. Throws std::runtime_error naming the address
  // when it cannot listen there, and then keeps listening where it did.
  // Before start(), only changes where start() listens. Thread-safe with
  // respect to the server thread (a hook may call it); one caller at a time.
  void rebind(const std::string& listen);

  // Limits for what happens next: new connections, and the next read or
  // write of open ones (header_limit and body_limit stay as they were).
  // Thread-safe.
  void set_limits(const Limits& limits);

  // Stops accepting, closes every connection (idle keep-alive ones included)
  // and joins the thread. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lse::server
