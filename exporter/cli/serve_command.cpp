// `serve`: sets the service up, starts it, waits for signals (see
// serve_command.hpp). The service does the work; this file is the shell.
#include "cli/serve_command.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <random>

#include "config/config.hpp"
#include "service/identity.hpp"
#include "service/service.hpp"

namespace lse::cli {
namespace {

namespace asio = boost::asio;

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitConfig = 2;

std::unique_ptr<service::Service> set_up(const std::string& config_path) {
  try {
    return std::make_unique<service::Service>(
        config_path,
        service::Identity{service::host_label(), service::user_agent(), service::build_info()},
        std::random_device{}());
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
        spdlog::info("msg=\"shutting down\" signal={}", sig);
      };
  signals.async_wait(on_signal);
  signal_io.run();
}

}  // namespace

int serve_command(const std::string& config_path) {
  auto svc = set_up(config_path);
  if (!svc) return kExitConfig;
  const auto cfg = svc->config();
  try {
    svc->start();
  } catch (const std::exception& e) {
    spdlog::error("msg=\"cannot listen\" listen={} error=\"{}\"", cfg->listen, e.what());
    return kExitFailure;
  }
  spdlog::info("msg=\"listening\" address={} port={} targets={}", cfg->listen, svc->port(),
               cfg->targets.size());
  wait_for_stop_signal(*svc);
  svc->stop();
  return kExitOk;
}

}  // namespace lse::cli
