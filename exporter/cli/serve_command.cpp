// `serve`: sets the service up, starts it, waits for signals (see
// serve_command.hpp). The service does the work; this file is the shell.
#include "cli/serve_command.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <stdexcept>

#include "cli/check_config_command.hpp"
#include "config/config.hpp"
#include "log/log.hpp"
#include "net/listen_address.hpp"
#include "server/routes.hpp"
#include "service/identity.hpp"
#include "service/service.hpp"
#include "web/route_prefix.hpp"
#include "web/tls_server.hpp"
#include "web/web_config.hpp"

namespace lse::cli {
namespace {

namespace asio = boost::asio;

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitConfig = 2;
// Far more replicas than anyone runs; refuses -1 read as 2^64-1.
constexpr std::uint64_t kMaxShards = std::uint64_t{1} << 32;

// --probe.wakeup-window: a duration, or a bare 0 (off).
std::optional<std::chrono::nanoseconds> wakeup_window(const std::string& text) {
  if (text == "0") return std::chrono::nanoseconds(0);
  return config::parse_duration(text);
}

// The flags every Prometheus exporter has, with Prometheus's wording where
// it fits; on the top level and on `serve` alike.
void add_serve_flags(CLI::App& to, ServeOptions& o) {
  to.add_option("--config.file,--config", o.config_file, "config file (default config.yaml)")
      ->check(CLI::ExistingFile);
  to.add_option("--web.listen-address", o.listen_address,
                "address to listen on, e.g. :9687 or 127.0.0.1:9687 (overrides the config's "
                "listen:)");
  to.add_option("--web.telemetry-path", o.telemetry_path,
                "path under which to expose metrics (default /metrics)");
  to.add_option("--web.external-url", o.external_url,
                "the URL under which the exporter is reachable from outside (behind a reverse "
                "proxy); its path prefixes every endpoint unless --web.route-prefix is set");
  to.add_option("--web.route-prefix", o.route_prefix,
                "prefix of every endpoint (default: the path of --web.external-url)");
  to.add_flag("--web.enable-lifecycle", o.enable_lifecycle,
              "allow reloading the config with POST /-/reload (SIGHUP always reloads)");
  to.add_option("--web.config.file", o.web_config_file,
                "web config file (exporter-toolkit format) that enables TLS, client "
                "certificates and basic auth");
  to.add_option("--probe.threads", o.probe_threads,
                "probe threads, each target bound to one (default 0: one per 250 targets of the "
                "starting config, at most one per core)")
      ->check(CLI::Range(0, 64));
  to.add_option("--probe.wakeup-window", o.wakeup_window,
                "while a probe thread is busy, each wake-up first waits this long so that one "
                "serves many streams (chunk instants are the kernel's receive stamps and do not "
                "move; 0: read every chunk at once; at most 20ms)")
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            const auto window = wakeup_window(text);
            if (!window) return "not a duration (e.g. 2ms, 500us, 0)";
            if (*window > std::chrono::milliseconds(20)) return "more than 20ms";
            return {};
          },
          "DURATION"));
  to.add_option("--shard.index", o.shard_index,
                "this replica's shard, from 0, or auto: the trailing -<ordinal> of env POD_NAME "
                "(else of the host name), as a StatefulSet names its pods (default 0)");
  to.add_option("--shard.count", o.shard_count,
                "split the config's targets into this many shards; a replica probes and exposes "
                "the targets whose name's FNV-1a 64 hash mod the count is its index (default 1: "
                "all)")
      ->check(CLI::Range(std::uint64_t{0}, kMaxShards));
  to.add_flag("--dry-run", o.dry_run,
              "check the flags, the config (secrets not read) and the web config, print what "
              "would serve, and exit (0 ok, 2 invalid) without listening or probing");
}

// The address serve would listen on: the flag's, else the config's.
std::string checked_listen_address(const std::string& flag, const config::Config& cfg) {
  const std::string& address = flag.empty() ? cfg.listen : flag;
  std::string why;
  if (!net::parse_listen_address(address, &why))
    throw std::invalid_argument(fmt::format("--web.listen-address '{}': {}", address, why));
  return address;
}

// "TLS from TLS12, client_auth_type RequireAndVerifyClientCert, basic auth (2 users)".
std::string describe_web_config(const std::string& path) {
  if (path.empty()) return "plain HTTP, no authentication";
  const web::WebConfig web = web::load_web_config(path);
  std::string what = "plain HTTP";
  if (web.tls) {
    web::make_tls_server_context(web);  // the certificate and key load, or this throws
    what = fmt::format("TLS from {}, client_auth_type {}", web::to_string(web.tls->min_version),
                       web::to_string(web.tls->client_auth));
  }
  what += web.basic_auth_users.empty()
              ? ", no authentication"
              : fmt::format(", basic auth ({} user{})", web.basic_auth_users.size(),
                            web.basic_auth_users.size() == 1 ? "" : "s");
  return what;
}

// The --web.* flags as the service takes them; false (after saying why on
// stderr) when they do not make sense.
bool http_options(const ServeOptions& o, service::HttpOptions& out, std::ostream& err) {
  try {
    out.routing.route_prefix = web::route_prefix(o.route_prefix, o.external_url);
  } catch (const std::invalid_argument& e) {
    err << e.what() << "\n";
    return false;
  }
  out.routing.telemetry_path = o.telemetry_path;
  out.routing.enable_lifecycle = o.enable_lifecycle;
  if (auto problem = server::routing_problem(out.routing); !problem.empty()) {
    err << problem << "\n";
    return false;
  }
  out.listen_address = o.listen_address;
  out.web_config_file = o.web_config_file;
  return true;
}

// "shard 1 of 2 probes: a, b" (or "no target of the config").
std::string shard_line(const shard::Shard& shard, const config::Config& share) {
  std::string names;
  for (const auto& t : share.targets) names += (names.empty() ? "" : ", ") + t.name;
  return shard::describe(shard) + " probes " + (names.empty() ? "no target of the config" : names);
}

std::unique_ptr<service::Service> set_up(const std::string& config_path, service::HttpOptions http,
                                         service::ProbeOptions probe) {
  try {
    return std::make_unique<service::Service>(
        config_path,
        service::Identity{service::host_label(), service::user_agent(), service::build_info()},
        std::random_device{}(), std::move(http), probe);
  } catch (const config::ConfigError& e) {
    std::cerr << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << config_path << ": " << e.what() << "\n";
  }
  return nullptr;
}

// Blocks until SIGINT or SIGTERM; every SIGHUP is a reload on the way.
void wait_for_stop_signal(service::Service& svc) {
  asio::io_context signal_io;
  asio::signal_set signals(signal_io, SIGINT, SIGTERM, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP) {
          svc.reload();
          signals.async_wait(on_signal);
          return;
        }
        log::info("shutting down", {{"signal", sig}});
      };
  signals.async_wait(on_signal);
  signal_io.run();
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& options) {
  add_serve_flags(app, options);
  auto* cmd = app.add_subcommand("serve", "run the exporter (default)");
  add_serve_flags(*cmd, options);
  return cmd;
}

int serve_dry_run(const ServeOptions& o, std::ostream& out, std::ostream& err) {
  service::HttpOptions http;
  if (!http_options(o, http, err)) return kExitConfig;
  config::LoadOptions load;
  load.check_listen = false;  // the exporter may be running on it already
  load.read_secrets = false;
  try {
    const shard::Shard shard = shard_of_flags(o);
    load.keep_target = shard::target_filter(shard);
    const auto cfg = config::load_file(o.config_file, load);
    for (const auto& w : cfg.findings.warnings)
      err << config::Diagnostic{w.file, w.line, w.column, "warning: " + w.message}.where_and_what()
          << "\n";
    const std::string listen = checked_listen_address(o.listen_address, cfg);
    const std::string web = describe_web_config(o.web_config_file);
    const std::string& prefix = http.routing.route_prefix;
    out << summary_line(o.config_file, cfg) << "\n";
    if (shard.count > 1) out << "dry run: " << shard_line(shard, cfg) << "\n";
    out << fmt::format("dry run: would listen on {} ({}); metrics at {}{}; POST {}/-/reload {}\n",
                       listen, web, prefix, http.routing.telemetry_path, prefix,
                       o.enable_lifecycle ? "enabled" : "disabled (403)")
        << fmt::format(
               "dry run: connections at most {} ({} per address); a request within {}, keep-alive "
               "idle {}, a response within {}\n",
               cfg.web.max_connections, cfg.web.max_connections_per_address,
               config::format_duration(cfg.web.header_timeout),
               config::format_duration(cfg.web.idle_timeout),
               config::format_duration(cfg.web.write_timeout));
    return kExitOk;
  } catch (const config::ConfigError& e) {
    err << e.what() << "\n";
  } catch (const std::exception& e) {
    err << e.what() << "\n";
  }
  return kExitConfig;
}

shard::Shard shard_of_flags(const ServeOptions& options) {
  shard::PodName names;
  if (const char* pod = std::getenv("POD_NAME")) names.pod_name_env = pod;
  if (options.shard_index == "auto") {
    std::array<char, 256> host{};
    if (::gethostname(host.data(), host.size() - 1) == 0) names.host_name = host.data();
  }
  return shard::from_flags(options.shard_index, options.shard_count, names);
}

service::ProbeOptions probe_options(const ServeOptions& options) {
  service::ProbeOptions p;
  p.threads = options.probe_threads;
  p.wakeup.window = wakeup_window(options.wakeup_window).value_or(std::chrono::nanoseconds(0));
  p.shard = shard_of_flags(options);
  return p;
}

int serve_command(const ServeOptions& options) {
  if (options.dry_run) return serve_dry_run(options, std::cout, std::cerr);
  service::HttpOptions http;
  if (!http_options(options, http, std::cerr)) return kExitConfig;
  service::ProbeOptions probe;
  try {
    probe = probe_options(options);
  } catch (const std::invalid_argument& e) {
    std::cerr << e.what() << "\n";
    return kExitConfig;
  }
  auto svc = set_up(options.config_file, std::move(http), probe);
  if (!svc) return kExitConfig;
  const auto cfg = svc->config();
  try {
    svc->start();
  } catch (const std::exception& e) {
    log::error("cannot listen", {{"listen", svc->listen_address()}, {"error", e.what()}});
    return kExitFailure;
  }
  log::info("listening", {{"address", svc->listen_address()},
                          {"port", svc->port()},
                          {"targets", cfg->targets.size()}});
  wait_for_stop_signal(*svc);
  svc->stop();
  return kExitOk;
}

}  // namespace lse::cli
