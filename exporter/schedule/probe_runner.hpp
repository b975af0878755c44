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
#include "util/redact.hpp"

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

// The upstream's own words in a result (error detail, finish reason, content
// encoding) made safe to show: the target's secrets masked (util/redact.hpp;
// a gateway that echoes the key it refused gets it into no log, metric, row
// or report), then control characters escaped and the length capped
// (text::one_line: a line break in an error cannot forge a log line, an
// escape sequence cannot reach a terminal). Called once where each probe
// returns: here for serve, in run_command for run.
void clean_upstream_text(probe::ProbeResult& result, const util::Redactor& secrets);

// The product's factory: a probe::Prober per target, its results masked
// with the target's secrets (config::secret_values).
ProbeRunnerFactory prober_factory(std::string host_label, std::string user_agent);

}  // namespace lse::schedule
