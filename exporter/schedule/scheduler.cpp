// Target loops: rounds, shuffle, jitter, warmup, reload.
#include "schedule/scheduler.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "probe/prober.hpp"

namespace lse::schedule {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

std::string fingerprint(const config::Target& t, const config::Config& c) {
  std::string f = fmt::format(
      "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}{}{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|", t.name,
      t.url, t.api, t.model, t.interval.count(), t.jitter, t.timeout.first_token.count(),
      t.timeout.idle.count(), t.timeout.total.count(), t.stall_threshold.count(), t.warmup,
      t.max_tokens, t.temperature, t.count.content, t.count.reasoning, t.count.tool_calls,
      static_cast<int>(t.auth.kind), t.auth.header_name,
      std::hash<std::string>{}(t.auth.secret.value), t.client, t.tls.ca_file, t.tls.cert_file,
      t.tls.key_file, t.tls.server_name, t.tls.insecure_skip_verify, t.proxy_url,
      t.proxy_from_environment, t.include_usage);
  f += json::dump(t.body) + "|" + std::to_string(t.max_event_bytes);
  for (const auto& [k, v] : t.headers) f += "|h:" + k + "=" + v;
  for (const auto& e : t.accept_encoding) f += "|e:" + e;
  for (const auto& p : t.prompts) {
    auto it = c.prompts.find(p);
    f += "|p:" + p + "=" + (it != c.prompts.end() ? it->second.text : "");
  }
  return f;
}

struct Scheduler::Loop {
  Loop(asio::io_context& io, const config::Target& t, const config::Config& c,
       const std::string& host, const std::string& ua, std::uint64_t seed)
      : target(t), prober(io, t, host, ua), timer(io), rng(seed), warmup_left(t.warmup) {
    for (const auto& p : t.prompts) prompts.push_back(c.prompts.at(p));
    print = fingerprint(t, c);
  }
  config::Target target;
  std::vector<config::Prompt> prompts;
  probe::Prober prober;
  asio::steady_timer timer;
  std::mt19937_64 rng;
  int warmup_left;
  bool stopped = false;
  std::string print;

  void stop() {
    stopped = true;
    timer.cancel();
    prober.cancel();
  }
};

Scheduler::Scheduler(asio::io_context& io, ResultSink sink, std::string host_label,
                     std::string user_agent, std::uint64_t seed)
    : io_(io),
      sink_(std::move(sink)),
      host_label_(std::move(host_label)),
      user_agent_(std::move(user_agent)),
      rng_(seed) {}

Scheduler::~Scheduler() { stop(); }

namespace {

asio::awaitable<void> run_loop(std::shared_ptr<Scheduler::Loop> loop, ResultSink sink);

}  // namespace

void Scheduler::apply(const config::Config& config) {
  // Build every new loop first so a failure leaves the running set untouched.
  std::map<std::string, std::shared_ptr<Loop>> next;
  std::vector<std::shared_ptr<Loop>> fresh;
  for (const auto& t : config.targets) {
    auto it = loops_.find(t.name);
    if (it != loops_.end() && it->second->print == fingerprint(t, config)) {
      next[t.name] = it->second;
      continue;
    }
    auto loop = std::make_shared<Loop>(io_, t, config, host_label_, user_agent_, rng_());
    next[t.name] = loop;
    fresh.push_back(loop);
  }
  for (auto& [name, loop] : loops_) {
    auto it = next.find(name);
    if (it == next.end() || it->second != loop) loop->stop();
  }
  loops_ = std::move(next);
  for (auto& loop : fresh) asio::co_spawn(io_, run_loop(loop, sink_), asio::detached);
}

void Scheduler::stop() {
  for (auto& [name, loop] : loops_) loop->stop();
  loops_.clear();
}

namespace {

asio::awaitable<void> run_loop(std::shared_ptr<Scheduler::Loop> loop, ResultSink sink) {
  const auto interval = loop->target.interval;
  const double jitter = loop->target.jitter;
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  // Spread the first round of many targets over a share of the interval.
  auto next = Clock::now();
  if (jitter > 0) {
    std::uniform_real_distribution<double> first(0.0, jitter);
    next += std::chrono::duration_cast<Clock::duration>(interval * first(loop->rng));
    loop->timer.expires_at(next);
    boost::system::error_code ec;
    co_await loop->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  spdlog::info("target={} msg=\"probe loop started\" prompts={} interval_s={:.3f}",
               loop->target.name, loop->prompts.size(),
               std::chrono::duration<double>(interval).count());
  while (!loop->stopped) {
    std::shuffle(loop->prompts.begin(), loop->prompts.end(), loop->rng);
    for (const auto& prompt : loop->prompts) {
      if (loop->stopped) break;
      probe::ProbeResult r = co_await loop->prober.run(prompt);
      if (loop->stopped) {
        // Canceled by a reload or shutdown: counted as `canceled`, never as a
        // measurement of the stream.
        if (!r.ok && r.reason == probe::FailureReason::canceled) sink(r);
        break;
      }
      if (loop->warmup_left > 0) {
        --loop->warmup_left;
        r.warmup = true;
      }
      if (r.ok)
        spdlog::debug("target={} prompt={} ok ttft_ms={:.1f} chunks={} stalls={} warmup={}",
                      r.target, r.prompt, r.ttft.value_or(0) * 1e3, r.chunks, r.stalls, r.warmup);
      else
        spdlog::warn("target={} prompt={} msg=\"probe failed\" reason={} detail=\"{}\" warmup={}",
                     r.target, r.prompt, probe::to_string(r.reason), r.error_detail, r.warmup);
      sink(r);
    }
    if (loop->stopped) break;
    next += interval;
    auto at =
        next + std::chrono::duration_cast<Clock::duration>(interval * (jitter * unit(loop->rng)));
    const auto now = Clock::now();
    if (at < now) {
      // The round overran its interval: start the next one now, not a burst of catch-ups.
      next = now;
      at = now;
    }
    loop->timer.expires_at(at);
    boost::system::error_code ec;
    co_await loop->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

}  // namespace

}  // namespace lse::schedule
