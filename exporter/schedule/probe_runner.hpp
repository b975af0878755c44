// What a target's loop probes with: by default the real probe::Prober; tests
// hand the Scheduler a factory of scripted runners instead, so the loop's
// rhythm is testable without an upstream.
#pragma once
#include <utility>  // before Asio with GCC 12 / C++20 (STYLE.md)

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "probe/result.hpp"

namespace lse::schedule {

// One target's prober. run() is awaited on the io thread, one at a time.
class ProbeRunner {
 public:
  virtual ~ProbeRunner() = default;
  virtual boost::asio::awaitable<probe::ProbeResult> run(const config::Prompt& prompt) = 0;
  // Aborts the probe in flight; it ends with reason `canceled`.
  virtual void cancel() = 0;
};

// Builds the runner of one target. Throws std::runtime_error when the target
// cannot be set up (unusable TLS material or URL).
using ProbeRunnerFactory = std::function<std::unique_ptr<ProbeRunner>(
    boost::asio::io_context& io, const config::Target& target)>;

// The product's factory: a probe::Prober per target.
ProbeRunnerFactory prober_factory(std::string host_label, std::string user_agent);

}  // namespace lse::schedule
