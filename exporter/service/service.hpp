// The long-lived part of `serve` (DESIGN §5): one object owning the running
// config snapshot, the metrics, the row store, the scheduler with its probe
// thread and the HTTP server, and the reload transaction that changes them
// together (blackbox_exporter's SafeConfig): the new file is read and
// validated whole, each part is switched in turn and switched back if a later
// one fails, and only then is the snapshot swapped. SIGHUP and POST /-/reload
// both go through reload(). A changed `listen:` moves the HTTP listener (the
// new address is bound first, the old one closed after; a new address that
// cannot be bound fails the reload), a changed `web:` applies its limits.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "metrics/metrics.hpp"
#include "probe/probe_loop.hpp"
#include "report/row_store.hpp"
#include "server/server.hpp"
#include "shard/shard.hpp"

namespace lse::service {

struct ReloadResult {
  bool ok = false;
  std::string message;  // "config reloaded", or why the running config was kept
};

// Who the probes say they are (see identity.hpp for the real values).
struct Identity {
  std::string host_label;
  std::string user_agent;
  metrics::BuildInfo build;
};

// How the HTTP side is served, from the `--web.*` flags.
struct HttpOptions {
  std::string listen_address;  // --web.listen-address; empty: the config's `listen:`
  server::Routing routing;
  std::string web_config_file;  // --web.config.file; empty: plain HTTP, no auth
};

struct ProbeOptions {
  // Probe threads (--probe.threads): each target is bound to one of them
  // (schedule/lanes.hpp). 0: schedule::auto_lanes() of the starting
  // config's targets and the machine's cores. Fixed for the process.
  std::size_t threads = 0;
  // How a busy probe thread coalesces its wake-ups (--probe.wakeup-window).
  probe::WakeupSettings wakeup;
  // The share of the config's targets this process runs (--shard.index,
  // --shard.count): at start and on every reload the running config holds
  // only these, so only they are probed, exposed and shown. Fixed for the
  // process; llm_stream_shard_index and _count say it.
  shard::Shard shard;
};

class Service {
 public:
  // Loads `config_path` and the web config file and sets every part up with
  // them; nothing runs yet. Throws config::ConfigError for an invalid file
  // (either), std::invalid_argument for bad routing and std::runtime_error
  // when a part cannot be set up (rows file, TLS material).
  Service(std::string config_path, const Identity& identity, std::uint64_t seed,
          HttpOptions http = {}, ProbeOptions probe = {});
  ~Service();  // stop()s
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Starts the probe thread, then the HTTP server on listen_address() (port
  // 0 picks a free one). Throws std::runtime_error when it cannot
  // listen; the probe thread is stopped again then. Call once.
  void start();

  // The bound HTTP port (after start(); after a reload that moved the
  // listener, the new one's).
  unsigned short port() const;
  // Where it listens: --web.listen-address, else the running config's
  // `listen:` (a reload that changes it moves the listener).
  std::string listen_address() const;

  // One reload transaction: on success the new config runs and
  // llm_stream_exporter_config_last_reload_successful is 1 with a fresh
  // timestamp; on any failure the old config keeps running whole (the
  // listener where it was) and the gauge is 0.
  // llm_stream_exporter_config_reloads_total{result} counts either.
  // Thread-safe; reloads run one at a time.
  ReloadResult reload(const std::string& config_path);
  // The file the service was started with.
  ReloadResult reload();

  // Not ready any more, server stopped, probes canceled, probe thread joined.
  // Idempotent.
  void stop();

  // The running config snapshot.
  std::shared_ptr<const config::Config> config() const;

  // The /metrics body: the diagnosis refreshed from the newest rows, then
  // the exposition in the negotiated format.
  std::string scrape(metrics::Exposition format = metrics::Exposition::text);

  const report::RowStore& rows() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lse::service
