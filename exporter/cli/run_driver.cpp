#include "cli/run_driver.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "probe/probe_loop.hpp"
#include "schedule/probe_runner.hpp"
#include "util/redact.hpp"

namespace lse::cli {

namespace asio = boost::asio;

Runner::Runner(const Experiment& ex, std::vector<PlanItem> plan, int concurrency,
               const std::string& user_agent, const std::string& host, report::RowsWriter& rows,
               Progress& progress)
    : ex_(ex),
      plan_(std::move(plan)),
      rows_(rows),
      progress_(progress),
      signals_(io_, SIGINT, SIGTERM),
      ticker_(io_),
      workers_(static_cast<std::size_t>(std::max(1, concurrency))),
      usage_rejected_(ex_.targets.size(), false),
      pool_(workers_, [this, user_agent, host](std::size_t t) {
        auto p = std::make_unique<probe::Prober>(io_, ex_.targets[t], host, user_agent);
        if (usage_rejected_[t]) p->set_include_usage(false);
        return p;
      }) {
  // One prober per target up front: a bad URL or TLS file fails here,
  // before the first probe (each stays as its target's idle prober).
  for (std::size_t t = 0; t < ex_.targets.size(); ++t) {
    try {
      pool_.adopt(t, std::make_unique<probe::Prober>(io_, ex_.targets[t], host, user_agent));
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
  }
}

int Runner::run() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) { on_signal(ec, sig); });
  if (progress_.tty()) tick();
  active_ = workers_;
  for (std::size_t w = 0; w < workers_; ++w)
    asio::co_spawn(io_, worker(), [this](const std::exception_ptr& e) {
      if (e && !error_) error_ = e;
      if (--active_ == 0) {
        boost::system::error_code ignored;
        signals_.cancel(ignored);
        ticker_.cancel();
      }
    });
  probe::run_probe_loop(io_);  // the default wake-up window, as serve's
  progress_.finish();
  if (error_) std::rethrow_exception(error_);
  return stopped_by_;
}

std::size_t Runner::planned_measured() const {
  return static_cast<std::size_t>(
      std::count_if(plan_.begin(), plan_.end(), [](const PlanItem& p) { return !p.warmup; }));
}

// Gives a prober back to the pool however its probe ends, and remembers
// what it learned about the target (a rejected stream_options).
struct Runner::Lease {
  Runner& runner;
  std::size_t target;
  probe::Prober& prober;
  Lease(Runner& r, std::size_t t) : runner(r), target(t), prober(r.pool_.acquire(t)) {}
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() {
    if (!prober.include_usage()) runner.usage_rejected_[target] = true;
    runner.pool_.release(prober);
  }
};

asio::awaitable<void> Runner::worker() {
  while (!stopping_ && next_ < plan_.size()) {
    const PlanItem item = plan_[next_++];
    probe::ProbeResult r;
    {
      const Lease lease(*this, item.target);
      r = co_await lease.prober.run(ex_.prompts[item.target][item.prompt]);
    }
    schedule::clean_upstream_text(r,
                                  util::Redactor(config::secret_values(ex_.targets[item.target])));
    if (stopping_ && !r.ok && r.reason == probe::FailureReason::canceled) {
      // Not a measurement, but the row says the run was cut here (never a
      // lost row): reason canceled, which every summary leaves out (neither
      // a success nor a failure of the target).
      if (!item.warmup) {
        ++canceled_;
        write_row(r);
      }
      break;
    }
    r.warmup = item.warmup;
    if (!item.warmup) {
      ++measured_done_;
      write_row(r);
    }
    results_.push_back(r);
    progress_.completed(r, item);
  }
}

// A row that cannot be written (disk full, permission) does not stop the
// experiment: probing goes on, every later row is tried again (space may
// come back), each distinct error is printed once, and the end of the run
// says how many rows are missing (exit 1).
void Runner::write_row(const probe::ProbeResult& r) {
  try {
    rows_.append(r);
  } catch (const std::exception& e) {
    ++rows_failed_;
    if (write_errors_.insert(e.what()).second) progress_.note(fmt::format("run: {}", e.what()));
  }
}

void Runner::on_signal(const boost::system::error_code& ec, int sig) {
  if (ec) return;
  if (stopping_) {
    // A second Ctrl-C: the user does not want to wait for cancellation.
    std::fprintf(stderr, "\nrun: second signal, exiting now; rows written so far are intact\n");
    std::_Exit(kExitInterrupted);
  }
  stopping_ = true;
  stopped_by_ = sig;
  pool_.cancel_busy();
  ticker_.cancel();
  signals_.async_wait([this](const boost::system::error_code& e, int s) { on_signal(e, s); });
}

void Runner::tick() {
  ticker_.expires_after(std::chrono::milliseconds(500));
  ticker_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_ || active_ == 0) return;
    progress_.redraw();
    tick();
  });
}

}  // namespace lse::cli
