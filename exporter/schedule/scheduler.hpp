// The probe loop (DESIGN §1): per target, a round of all its prompts in a
// shuffled order every `interval` (± jitter), probes of one target never
// overlapping, all targets concurrently on one io_context. A 429 with
// Retry-After ends the round and pushes the next one back (plan.hpp back_off). Warmup probes are
// marked and still delivered (metrics count them, rows drop them). The rules
// of the rhythm are pure (plan.hpp); this file owns the timers and reloads.
#pragma once
#include <utility>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "config/config.hpp"
#include "probe/result.hpp"
#include "schedule/plan.hpp"
#include "schedule/probe_runner.hpp"

namespace lse::schedule {

using ResultSink = std::function<void(const probe::ProbeResult&)>;
// Told each time a target backs off after a 429 with Retry-After: the
// target and how long its next probe waits (seconds). For a counter.
using BackoffHook = std::function<void(const std::string& target, double wait_seconds)>;

class Scheduler {
 public:
  // `make_runner` builds each target's prober; empty: the real probe::Prober
  // (prober_factory(host_label, user_agent)).
  Scheduler(boost::asio::io_context& io, ResultSink sink, std::string host_label,
            std::string user_agent, std::uint64_t seed, ProbeRunnerFactory make_runner = {});
  ~Scheduler();

  // Starts, keeps or restarts target loops to match `config`: a loop whose
  // LoopSpec (target + prompts, by value) is unchanged keeps running, every
  // other one is restarted, removed targets stop. Call on the io thread.
  // Throws std::runtime_error when a target cannot be set up (TLS material);
  // in that case nothing changes.
  void apply(const config::Config& config);

  // Cancels every loop and probe in flight. Call on the io thread.
  void stop();

  // Sets the hook told about every backoff (replacing the previous one).
  // Call on the io thread, or before its run() starts.
  void on_backoff(BackoffHook hook) { *backoff_ = std::move(hook); }

  std::size_t running() const { return loops_.size(); }

  struct Loop;  // one target's loop (defined in scheduler.cpp)

 private:
  boost::asio::io_context& io_;
  ResultSink sink_;
  std::shared_ptr<BackoffHook> backoff_ = std::make_shared<BackoffHook>();  // shared with loops
  ProbeRunnerFactory make_runner_;
  Rng rng_;
  std::map<std::string, std::shared_ptr<Loop>> loops_;
};

}  // namespace lse::schedule
