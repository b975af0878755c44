// `llm_stream_exporter serve` (the default): runs the service (service/) until
// SIGINT or SIGTERM; SIGHUP reloads the config file. Its flags are the ones
// a Prometheus operator knows from every exporter (--config.file,
// --web.listen-address, --web.telemetry-path, --web.route-prefix,
// --web.external-url, --web.enable-lifecycle, --web.config.file), and
// kube-state-metrics' sharding (--shard.index, --shard.count).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "service/service.hpp"
#include "shard/shard.hpp"

namespace lse::cli {

struct ServeOptions {
  std::string config_file = "config.yaml";  // --config.file (alias --config)
  std::string listen_address;               // --web.listen-address; empty: the config's listen:
  std::string telemetry_path = "/metrics";  // --web.telemetry-path
  std::string route_prefix;                 // --web.route-prefix; empty: external URL's path
  std::string external_url;                 // --web.external-url
  bool enable_lifecycle = false;            // --web.enable-lifecycle (POST /-/reload)
  std::string web_config_file;              // --web.config.file (exporter-toolkit format)
  bool dry_run = false;                     // --dry-run: check everything, serve nothing
  std::size_t probe_threads = 0;            // --probe.threads (0: auto); targets bound to each
  std::string wakeup_window = "2ms";        // --probe.wakeup-window (probe/probe_loop.hpp)
  std::string shard_index = "0";            // --shard.index: a number or auto (shard/shard.hpp)
  std::uint64_t shard_count = 1;            // --shard.count (1: not sharded)
};

// Adds the serve flags to `app` (so `llm_stream_exporter --config.file=x`
// serves without naming the subcommand) and to a `serve` subcommand, both
// into `options`; returns the subcommand.
CLI::App* add_serve_command(CLI::App& app, ServeOptions& options);

// With --dry-run: checks the flags, the config (as check-config
// --no-env-check: secrets not read, `listen:` not bound) and the web config
// (its TLS material loaded), prints what would serve on `out` and returns 0,
// or prints why not on `err` and returns 2. Nothing listens or probes.
int serve_dry_run(const ServeOptions& options, std::ostream& out, std::ostream& err);

// The probe threads' settings from the flags (checked when parsed) and the
// shard (--shard.index, --shard.count; `auto` reads env POD_NAME, else the
// host name). Throws std::invalid_argument, naming the flag and the value it
// read, for a shard that cannot be.
service::ProbeOptions probe_options(const ServeOptions& options);

// The shard the flags name, `auto` resolved from the environment (see
// probe_options).
shard::Shard shard_of_flags(const ServeOptions& options);

// Exit codes: 0 stopped by a signal; 1 cannot listen; 2 invalid config, web
// config or flags, or a part that cannot be set up with them (rows file,
// TLS material).
int serve_command(const ServeOptions& options);

}  // namespace lse::cli
