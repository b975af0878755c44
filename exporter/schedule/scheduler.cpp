// Target loops on the io_context: wait for the planned instant, probe a
// shuffled round, deliver each result (warmup marked), plan the next round;
// and reload as a diff of LoopSpecs.
#include "schedule/scheduler.hpp"

#include <utility>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>

#include "log/log.hpp"

namespace lse::schedule {

namespace asio = boost::asio;

struct Scheduler::Loop {
  Loop(asio::io_context& io, LoopSpec s, std::unique_ptr<ProbeRunner> r, std::uint64_t seed)
      : spec(std::move(s)),
        prompts(spec.prompts),
        runner(std::move(r)),
        timer(io),
        rng(seed),
        warmup(spec.target.warmup) {}

  const LoopSpec spec;
  std::vector<config::Prompt> prompts;  // this round's order
  std::unique_ptr<ProbeRunner> runner;
  asio::steady_timer timer;
  Rng rng;
  Warmup warmup;
  bool stopped = false;
  std::optional<double> retry_after;  // the server asked us to stay away (429)
  // The stream came under another Content-Type (or none): said once per loop.
  bool told_content_type = false;

  void stop() {
    stopped = true;
    timer.cancel();
    runner->cancel();
  }
};

Scheduler::Scheduler(asio::io_context& io, ResultSink sink, std::string host_label,
                     std::string user_agent, std::uint64_t seed, ProbeRunnerFactory make_runner)
    : io_(io),
      sink_(std::move(sink)),
      make_runner_(make_runner ? std::move(make_runner)
                               : prober_factory(std::move(host_label), std::move(user_agent))),
      rng_(seed) {}

Scheduler::~Scheduler() { stop(); }

namespace {

using LoopPtr = std::shared_ptr<Scheduler::Loop>;

// Waits until `at` (or until the loop is stopped, which cancels the timer).
asio::awaitable<void> wait_until(Scheduler::Loop& loop, Clock::time_point at) {
  loop.timer.expires_at(at);
  boost::system::error_code ec;
  co_await loop.timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

void log_result(const probe::ProbeResult& r) {
  if (r.ok)
    log::debug("probe succeeded", {{"target", r.target},
                                   {"prompt", r.prompt},
                                   {"probe_id", r.id},
                                   {"ttft_ms", r.ttft.value_or(0) * 1e3},
                                   {"chunks", r.chunks},
                                   {"stalls", r.stalls},
                                   {"warmup", r.warmup}});
  else
    log::warn("probe failed", {{"target", r.target},
                               {"prompt", r.prompt},
                               {"probe_id", r.id},
                               {"reason", probe::to_string(r.reason)},
                               {"detail", r.error_detail},
                               {"warmup", r.warmup}});
}

// Probe: one round of every prompt in a fresh order. Returns early when the
// loop is stopped: a probe that stop (reload, shutdown) cut short measured
// nothing and is no failure of the target, so it reaches no row and no
// counter (only the log); one that completed before the stop took effect is
// delivered as usual. Returns early too when the server answered 429 with
// Retry-After: the rest of the round would only be refused as well.
asio::awaitable<void> probe_round(LoopPtr loop, const ResultSink& sink) {
  shuffle_round(loop->prompts, loop->rng);
  for (const auto& prompt : loop->prompts) {
    if (loop->stopped) co_return;
    probe::ProbeResult r = co_await loop->runner->run(prompt);
    if (loop->stopped) {
      if (r.ok) {
        r.warmup = loop->warmup.take();
        sink(r);
      } else {
        log::debug("probe canceled by stop", {{"target", r.target}, {"probe_id", r.id}});
      }
      co_return;
    }
    r.warmup = loop->warmup.take();
    log_result(r);
    if (r.unexpected_content_type && !std::exchange(loop->told_content_type, true))
      log::warn("stream under an unexpected content type, measured all the same",
                {{"target", r.target}, {"content_type", r.content_type}});
    sink(r);
    if (r.retry_after_seconds) {
      loop->retry_after = r.retry_after_seconds;
      co_return;
    }
  }
}

// Plan after a round: the next one, pushed back when the server asked.
RoundTimes plan_next_round(Scheduler::Loop& loop, const RoundTimes& round,
                           const BackoffHook& backoff) {
  const auto& target = loop.spec.target;
  const auto now = Clock::now();
  RoundTimes next = next_round(round.nominal, now, target.interval, target.jitter, loop.rng);
  if (!loop.retry_after) return next;
  next = back_off(next, now, *loop.retry_after, target.interval);
  const double wait = std::chrono::duration<double>(next.start - now).count();
  log::info("backing off",
            {{"target", target.name}, {"retry_after_s", *loop.retry_after}, {"wait_s", wait}});
  loop.retry_after.reset();
  if (backoff) backoff(target.name, wait);
  return next;
}

asio::awaitable<void> run_loop(LoopPtr loop, ResultSink sink,
                               std::shared_ptr<BackoffHook> backoff) {
  const auto& target = loop->spec.target;
  RoundTimes round;
  round.nominal = first_round_start(Clock::now(), target.interval, target.jitter, loop->rng);
  if (target.jitter > 0) co_await wait_until(*loop, round.nominal);
  log::info("probe loop started",
            {{"target", target.name},
             {"prompts", loop->prompts.size()},
             {"interval_s", std::chrono::duration<double>(target.interval).count()}});
  while (!loop->stopped) {
    co_await probe_round(loop, sink);
    if (loop->stopped) break;
    round = plan_next_round(*loop, round, *backoff);
    co_await wait_until(*loop, round.start);
  }
}

}  // namespace

void Scheduler::apply(const config::Config& config) {
  // Build every new loop first so a failure leaves the running set untouched.
  std::map<std::string, LoopPtr> next;
  std::vector<LoopPtr> fresh;
  for (const auto& t : config.targets) {
    LoopSpec spec = loop_spec(t, config);
    auto it = loops_.find(t.name);
    if (it != loops_.end() && it->second->spec == spec) {
      next[t.name] = it->second;
      continue;
    }
    auto loop = std::make_shared<Loop>(io_, std::move(spec), make_runner_(io_, t), rng_());
    next[t.name] = loop;
    fresh.push_back(loop);
  }
  for (auto& [name, loop] : loops_) {
    auto it = next.find(name);
    if (it == next.end() || it->second != loop) loop->stop();
  }
  loops_ = std::move(next);
  for (auto& loop : fresh) asio::co_spawn(io_, run_loop(loop, sink_, backoff_), asio::detached);
}

void Scheduler::stop() {
  for (auto& [name, loop] : loops_) loop->stop();
  loops_.clear();
}

}  // namespace lse::schedule
