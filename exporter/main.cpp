// llm_stream_exporter: wiring only. Parses the command line, sets up logging,
// and connects config → scheduler → metrics/rows → server (DESIGN §5).
#include <unistd.h>

#include <utility>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <cstdio>
#include <future>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>

#include "cli/compare_command.hpp"
#include "cli/logging.hpp"
#include "cli/run_command.hpp"
#include "config/config.hpp"
#include "http/url.hpp"
#include "metrics/metrics.hpp"
#include "report/diagnosis.hpp"
#include "report/row_store.hpp"
#include "schedule/scheduler.hpp"
#include "server/server.hpp"

namespace asio = boost::asio;
using namespace lse;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitConfig = 2;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_label() {
  // Explicit label first, then the Kubernetes node (downward API in the chart's
  // daemonset mode: the "second host" of a comparison is a node), then hostname.
  if (const char* h = std::getenv("LSE_HOST"); h && *h) return h;
  if (const char* n = std::getenv("NODE_NAME"); n && *n) return n;
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) == 0) return buf;
  return "unknown";
}

std::string user_agent() { return std::string("llm-stream-exporter/") + LSE_VERSION; }

int check_config(const std::string& path) {
  try {
    const auto cfg = config::load_file(path);
    std::size_t probes = 0;
    for (const auto& t : cfg.targets) probes += t.prompts.size();
    std::cout << path << ": ok (" << cfg.targets.size() << " targets, " << cfg.prompts.size()
              << " prompts, " << probes << " target×prompt series)\n";
    return kExitOk;
  } catch (const config::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitConfig;
  }
}

std::vector<server::TargetStatus> target_statuses(const config::Config& cfg) {
  std::vector<server::TargetStatus> out;
  for (const auto& t : cfg.targets) {
    server::TargetStatus s;
    s.name = t.name;
    s.model = t.model;
    auto u = http::parse_url(t.url);
    s.url_redacted = u ? u->redacted() : "";
    s.prompts = t.prompts;
    s.interval_seconds = std::chrono::duration<double>(t.interval).count();
    out.push_back(std::move(s));
  }
  return out;
}

// The diagnosis verdicts of DESIGN §7 for dashboards: computed at scrape time
// on the server thread from the newest rows of each target+prompt, so the
// probe thread never pays for it.
constexpr std::size_t kDiagnosisWindow = 50;

void update_diagnosis(metrics::Metrics& metrics, const report::RowStore& rows,
                      const config::Config& cfg) {
  for (const auto& t : cfg.targets) {
    const auto latest = rows.latest(t.name, rows.capacity());
    for (const auto& prompt : t.prompts) {
      std::vector<probe::ProbeResult> window;
      for (const auto& r : latest) {
        if (r.prompt != prompt || r.model != t.model) continue;
        window.push_back(r);
        if (window.size() == kDiagnosisWindow) break;
      }
      for (const auto& v : report::diagnose(window, cfg.diagnosis))
        metrics.set_diagnosis(t.name, t.model, prompt, std::string(report::to_string(v.shape)),
                              v.holds && v.enough_probes);
    }
  }
}

int serve(const std::string& path) {
  std::shared_ptr<const config::Config> current;
  try {
    current = std::make_shared<const config::Config>(config::load_file(path));
  } catch (const config::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitConfig;
  }

  metrics::Metrics metrics({LSE_VERSION, LSE_REVISION});
  metrics.apply_config(*current);
  metrics.set_reload_result(true, unix_now());
  report::RowStore rows(current->rows.ring, current->rows);

  asio::io_context probe_io;
  auto work = asio::make_work_guard(probe_io);
  schedule::Scheduler scheduler(
      probe_io,
      [&](const probe::ProbeResult& r) {
        metrics.record(r);
        rows.add(r);
      },
      host_label(), user_agent(), std::random_device{}());
  try {
    scheduler.apply(*current);
  } catch (const std::exception& e) {
    std::cerr << path << ": " << e.what() << "\n";
    return kExitConfig;
  }
  std::thread probe_thread([&] { probe_io.run(); });
  std::atomic<bool> ready{true};

  std::mutex reload_mu;
  auto on_probe_thread = [&](auto fn) {
    std::promise<std::string> done;
    asio::post(probe_io, [&] {
      try {
        fn();
        done.set_value("");
      } catch (const std::exception& e) {
        done.set_value(e.what());
      }
    });
    return done.get_future().get();
  };
  auto reload = [&]() -> std::pair<bool, std::string> {
    std::lock_guard lock(reload_mu);
    std::shared_ptr<const config::Config> next;
    try {
      next = std::make_shared<const config::Config>(config::load_file(path));
    } catch (const config::ConfigError& e) {
      metrics.set_reload_result(false, 0);
      spdlog::error("msg=\"reload failed, keeping the running config\" error=\"{}\"", e.what());
      return {false, e.what()};
    }
    auto refuse = [&](const std::string& err) -> std::pair<bool, std::string> {
      metrics.set_reload_result(false, 0);
      spdlog::error("msg=\"reload failed, keeping the running config\" error=\"{}\"", err);
      return {false, err};
    };
    // Each step can be undone; the first that fails rolls back the earlier ones.
    try {
      rows.reconfigure(next->rows.ring, next->rows);
    } catch (const std::exception& e) {
      return refuse(e.what());
    }
    try {
      metrics.apply_config(*next);
    } catch (const std::exception& e) {
      rows.reconfigure(current->rows.ring, current->rows);
      return refuse(e.what());
    }
    if (auto err = on_probe_thread([&] { scheduler.apply(*next); }); !err.empty()) {
      metrics.apply_config(*current);
      rows.reconfigure(current->rows.ring, current->rows);
      return refuse(err);
    }
    current = next;
    metrics.set_reload_result(true, unix_now());
    spdlog::info("msg=\"config reloaded\" targets={}", next->targets.size());
    return {true, "config reloaded"};
  };

  server::Hooks hooks;
  hooks.metrics = [&] {
    std::shared_ptr<const config::Config> cfg;
    {
      std::lock_guard lock(reload_mu);
      cfg = current;
    }
    update_diagnosis(metrics, rows, *cfg);
    return metrics.render();
  };
  hooks.ready = [&] { return ready.load(); };
  hooks.reload = reload;
  hooks.config_dump = [&] {
    std::lock_guard lock(reload_mu);
    return config::dump_redacted(*current);
  };
  hooks.targets = [&] {
    std::lock_guard lock(reload_mu);
    return target_statuses(*current);
  };
  server::Server http_server(current->listen, hooks, rows);
  try {
    http_server.start();
  } catch (const std::exception& e) {
    spdlog::error("msg=\"cannot listen\" listen={} error=\"{}\"", current->listen, e.what());
    on_probe_thread([&] { scheduler.stop(); });
    work.reset();
    probe_io.stop();
    probe_thread.join();
    return kExitFailure;
  }
  spdlog::info("msg=\"listening\" address={} port={} targets={}", current->listen,
               http_server.port(), current->targets.size());

  asio::io_context signal_io;
  asio::signal_set signals(signal_io, SIGINT, SIGTERM, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP) {
          reload();
          signals.async_wait(on_signal);
          return;
        }
        spdlog::info("msg=\"shutting down\" signal={}", sig);
      };
  signals.async_wait(on_signal);
  signal_io.run();

  ready = false;
  http_server.stop();
  on_probe_thread([&] { scheduler.stop(); });
  work.reset();
  // In-flight probes were canceled; give their handlers a moment, then stop.
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    probe_io.stop();
  });
  probe_thread.join();
  stopper.join();
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"llm-stream-exporter: measures where streamed LLM answers stall"};
  app.set_version_flag("--version", std::string("llm_stream_exporter ") + LSE_VERSION +
                                        " (revision " + LSE_REVISION + ")");
  std::string log_level = "info", log_format = "logfmt";
  app.add_option("--log.level", log_level, "debug, info, warn, error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app.add_option("--log.format", log_format, "logfmt or json")
      ->check(CLI::IsMember({"logfmt", "json"}));
  std::string serve_config = "config.yaml";
  app.add_option("--config", serve_config, "config file (for the default `serve`)");

  auto* serve_cmd = app.add_subcommand("serve", "run the exporter (default)");
  serve_cmd->add_option("--config", serve_config, "config file")->check(CLI::ExistingFile);

  std::string check_path;
  auto* check_cmd =
      app.add_subcommand("check-config", "validate a config file and exit (0 ok, 2 invalid)");
  check_cmd->add_option("file", check_path, "config file")->required();

  cli::RunOptions run_opts;
  auto* run_cmd = cli::add_run_command(app, run_opts);
  cli::CompareOptions compare_opts;
  auto* compare_cmd = cli::add_compare_command(app, compare_opts);

  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitConfig;
  }
  cli::setup_logging(log_level, log_format);

  if (check_cmd->parsed()) return check_config(check_path);
  if (run_cmd->parsed()) return cli::run_command(run_opts, user_agent(), host_label());
  if (compare_cmd->parsed()) return cli::compare_command(compare_opts);
  return serve(serve_config);
}
