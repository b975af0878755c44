// Drives the plan of `run` on one io_context thread (DESIGN §5): probes,
// rows appended as they finish, progress, SIGINT/SIGTERM.
#pragma once
#include <utility>  // before asio/awaitable.hpp (GCC 12, Boost 1.74)
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "cli/run_command.hpp"
#include "cli/run_experiment.hpp"
#include "cli/run_progress.hpp"
#include "probe/prober.hpp"
#include "probe/prober_pool.hpp"
#include "probe/result.hpp"
#include "report/rows_file.hpp"

namespace lse::cli {

// A second SIGINT/SIGTERM exits at once with this code.
inline constexpr int kExitInterrupted = 130;

// Drives the plan on one io_context thread: `concurrency` coroutines share
// the plan index and a pool of probers per target (probe/prober_pool.hpp):
// a slot takes one for its item's target and gives it back, so probers and
// their keep-alive connections grow with the work (at most `concurrency`
// busy, one idle per target, `concurrency` idle spares), not with
// slots × targets.
class Runner {
 public:
  // Throws UsageError when a target's prober cannot be made (bad URL, TLS file).
  Runner(const Experiment& ex, std::vector<PlanItem> plan, int concurrency,
         const std::string& user_agent, const std::string& host, report::RowsWriter& rows,
         Progress& progress);

  // Returns the signal that stopped the run, or 0.
  int run();

  std::vector<probe::ProbeResult>& results() { return results_; }
  std::size_t planned_measured() const;
  std::size_t measured_done() const { return measured_done_; }
  std::size_t canceled() const { return canceled_; }  // in-flight probes a signal cut
  // Rows that could not be appended, and the distinct reasons (each was
  // printed once on stderr when it first happened).
  std::size_t rows_failed() const { return rows_failed_; }
  const std::set<std::string>& write_errors() const { return write_errors_; }

 private:
  struct Lease;

  boost::asio::awaitable<void> worker();
  void write_row(const probe::ProbeResult& r);
  void on_signal(const boost::system::error_code& ec, int sig);
  void tick();

  const Experiment& ex_;
  std::vector<PlanItem> plan_;
  report::RowsWriter& rows_;
  Progress& progress_;
  boost::asio::io_context io_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer ticker_;
  std::size_t workers_;
  std::vector<bool> usage_rejected_;  // per target: the server refused stream_options
  probe::ProberPool<probe::Prober> pool_;
  std::size_t next_ = 0;
  std::size_t active_ = 0;
  std::size_t measured_done_ = 0;
  std::size_t canceled_ = 0;
  bool stopping_ = false;
  int stopped_by_ = 0;
  std::exception_ptr error_;
  std::size_t rows_failed_ = 0;
  std::set<std::string> write_errors_;
  std::vector<probe::ProbeResult> results_;
};

}  // namespace lse::cli
