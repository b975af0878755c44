// The Scheduler with scripted probe runners (no upstream): reload restarts
// exactly the targets whose config changed, a failed set-up changes nothing,
// and, on real timers bounded to well under a second each, the rhythm of
// rounds, warmup marking, probes of one target never overlapping while
// targets run concurrently, and cancellation on stop.
#include <utility>  // before Asio with GCC 12 / C++20

#include "schedule/scheduler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace lse::schedule {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

struct ProbeStart {
  std::string target, prompt;
  Clock::time_point at;
};

// What every scripted runner of one test shares and records.
struct Script {
  Clock::duration probe_time{0};        // how long each probe takes (0: returns at once)
  std::set<std::string> cannot_set_up;  // targets whose runner throws when built
  std::map<std::string, int> built, canceled;
  std::vector<ProbeStart> starts;
  std::map<std::string, int> in_flight;
  int in_flight_total = 0, max_in_flight_total = 0, max_in_flight_one_target = 0;
  int answer_429_times = 0;  // this many first probes answer 429 with ...
  double retry_after = 0;    // ... this Retry-After (seconds)
};

class ScriptedRunner final : public ProbeRunner {
 public:
  ScriptedRunner(asio::io_context& io, std::string target, Script& script)
      : target_(std::move(target)), script_(script), timer_(io) {}

  asio::awaitable<probe::ProbeResult> run(const config::Prompt& prompt) override {
    script_.starts.push_back({target_, prompt.name, Clock::now()});
    enter();
    probe::ProbeResult r;
    r.target = target_;
    r.prompt = prompt.name;
    r.ok = true;
    if (script_.answer_429_times > 0) {
      --script_.answer_429_times;
      r.ok = false;
      r.reason = probe::FailureReason::http_429;
      r.http_status = 429;
      r.retry_after_seconds = script_.retry_after;
    }
    if (script_.probe_time > Clock::duration::zero()) {
      timer_.expires_after(script_.probe_time);
      boost::system::error_code ec;
      co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (ec == asio::error::operation_aborted) {
        r.ok = false;
        r.reason = probe::FailureReason::canceled;
      }
    }
    leave();
    co_return r;
  }

  void cancel() override {
    ++script_.canceled[target_];
    timer_.cancel();
  }

 private:
  void enter() {
    const int mine = ++script_.in_flight[target_];
    script_.max_in_flight_one_target = std::max(script_.max_in_flight_one_target, mine);
    script_.max_in_flight_total = std::max(script_.max_in_flight_total, ++script_.in_flight_total);
  }
  void leave() {
    --script_.in_flight[target_];
    --script_.in_flight_total;
  }

  std::string target_;
  Script& script_;
  asio::steady_timer timer_;
};

ProbeRunnerFactory scripted(Script& script) {
  return [&script](asio::io_context& io, const config::Target& t) -> std::unique_ptr<ProbeRunner> {
    if (script.cannot_set_up.count(t.name)) throw std::runtime_error(t.name + ": bad TLS material");
    ++script.built[t.name];
    return std::make_unique<ScriptedRunner>(io, t.name, script);
  };
}

config::Target target(const std::string& name, std::vector<std::string> prompts,
                      config::Duration interval, int warmup = 0) {
  config::Target t;
  t.name = name;
  t.url = "https://" + name + ".example/v1";
  t.model = "m";
  t.prompts = std::move(prompts);
  t.interval = interval;
  t.jitter = 0;
  t.warmup = warmup;
  return t;
}

// Three targets probing once an hour: after apply() each has probed its
// prompts once and sits waiting, so only reloads can build new runners.
config::Config three_targets() {
  config::Config c;
  for (const char* p : {"short", "long", "only_b"})
    c.prompts[p] = {p, std::string("say ") + p, "inline"};
  const auto hour = std::chrono::hours(1);
  c.targets = {target("a", {"short", "long"}, hour), target("b", {"short", "only_b"}, hour),
               target("c", {"long"}, hour)};
  c.targets[0].headers = {{"X-Team", "probes"}};
  return c;
}

struct Harness {
  asio::io_context io;
  Script script;
  std::vector<probe::ProbeResult> results;
  Scheduler scheduler{io,     [this](const probe::ProbeResult& r) { results.push_back(r); },
                      "host", "ua",
                      42,     scripted(script)};

  ~Harness() {
    scheduler.stop();
    io.restart();
    io.run_for(milliseconds(200));  // let canceled loops finish
  }
};

struct FieldChange {
  const char* name;
  std::function<void(config::Config&)> change;
  std::set<std::string> restarted;
};

void PrintTo(const FieldChange& f, std::ostream* os) { *os << f.name; }

class ReloadTest : public ::testing::TestWithParam<FieldChange> {};

TEST_P(ReloadTest, RestartsExactlyTheTargetsWhoseSettingsChanged) {
  Harness h;
  const auto before = three_targets();
  h.scheduler.apply(before);
  h.io.poll();
  ASSERT_EQ(h.scheduler.running(), 3u);

  auto after = before;
  GetParam().change(after);
  h.scheduler.apply(after);
  h.io.poll();

  EXPECT_EQ(h.scheduler.running(), 3u);
  for (const char* name : {"a", "b", "c"}) {
    const bool restarted = GetParam().restarted.count(name) > 0;
    EXPECT_EQ(h.script.built[name], restarted ? 2 : 1) << name;
    EXPECT_EQ(h.script.canceled[name], restarted ? 1 : 0) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    FieldChanges, ReloadTest,
    ::testing::Values(
        FieldChange{"nothing", [](config::Config&) {}, {}},
        FieldChange{"line_only", [](config::Config& c) { c.targets[0].line.value = 99; }, {}},
        FieldChange{"order_of_targets",
                    [](config::Config& c) { std::swap(c.targets[0], c.targets[2]); },
                    {}},
        FieldChange{"tls_server_name",
                    [](config::Config& c) { c.targets[0].tls.server_name = "sni.example"; },
                    {"a"}},
        FieldChange{"body",
                    [](config::Config& c) {
                      c.targets[2].body = json::Object{{"top_p", 0.5}};
                    },
                    {"c"}},
        FieldChange{"header_value",
                    [](config::Config& c) { c.targets[0].headers[0].second = "other"; },
                    {"a"}},
        FieldChange{
            "prompt_text", [](config::Config& c) { c.prompts["only_b"].text = "say more"; }, {"b"}},
        FieldChange{"shared_prompt_text",
                    [](config::Config& c) { c.prompts["long"].text = "say much more"; },
                    {"a", "c"}},
        FieldChange{"max_event_bytes",
                    [](config::Config& c) { c.targets[1].max_event_bytes = 4096; },
                    {"b"}},
        FieldChange{
            "secret", [](config::Config& c) { c.targets[1].auth.secret.value = "k2"; }, {"b"}},
        FieldChange{"interval",
                    [](config::Config& c) { c.targets[2].interval = std::chrono::minutes(5); },
                    {"c"}},
        FieldChange{"settings_that_do_not_probe",
                    [](config::Config& c) {
                      c.listen = ":9999";
                      c.rows.ring = 7;
                      c.buckets.gap = {0.1, 1};
                    },
                    {}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Reload, RemovedTargetsStopAndNewOnesStart) {
  Harness h;
  auto c = three_targets();
  h.scheduler.apply(c);
  c.targets.erase(c.targets.begin() + 1);
  c.targets.push_back(target("d", {"short"}, std::chrono::hours(1)));
  h.scheduler.apply(c);
  EXPECT_EQ(h.scheduler.running(), 3u);
  EXPECT_EQ(h.script.canceled["b"], 1);
  EXPECT_EQ(h.script.built["d"], 1);
  EXPECT_EQ(h.script.canceled["a"] + h.script.canceled["c"], 0);
}

TEST(Reload, ATargetThatCannotBeSetUpChangesNothing) {
  Harness h;
  auto c = three_targets();
  h.scheduler.apply(c);
  c.targets[0].tls.ca_file = "/nonexistent/ca.pem";  // a would restart ...
  c.targets.push_back(target("bad", {"short"}, std::chrono::hours(1)));
  h.script.cannot_set_up.insert("bad");  // ... but bad cannot be built
  EXPECT_THROW(h.scheduler.apply(c), std::runtime_error);
  EXPECT_EQ(h.scheduler.running(), 3u);
  for (const char* name : {"a", "b", "c"}) EXPECT_EQ(h.script.canceled[name], 0) << name;
}

std::vector<std::vector<ProbeStart>> rounds_of(const std::vector<ProbeStart>& starts,
                                               std::size_t per_round) {
  std::vector<std::vector<ProbeStart>> rounds;
  for (std::size_t i = 0; i + per_round <= starts.size(); i += per_round)
    rounds.emplace_back(starts.begin() + i, starts.begin() + i + per_round);
  return rounds;
}

TEST(Loop, RoundsOfAllPromptsOneIntervalApartWithWarmupMarked) {
  Harness h;
  config::Config c;
  for (const char* p : {"p1", "p2", "p3"}) c.prompts[p] = {p, p, "inline"};
  c.targets = {target("t", {"p1", "p2", "p3"}, milliseconds(100), /*warmup=*/2)};
  const auto applied = Clock::now();
  h.scheduler.apply(c);
  h.io.run_for(milliseconds(450));

  const auto rounds = rounds_of(h.script.starts, 3);
  ASSERT_GE(rounds.size(), 4u);
  ASSERT_LE(rounds.size(), 5u);
  for (std::size_t k = 0; k < rounds.size(); ++k) {
    std::set<std::string> seen;
    for (const auto& s : rounds[k]) seen.insert(s.prompt);
    EXPECT_EQ(seen.size(), 3u) << "round " << k << " is not one of each prompt";
    // Round k is due k intervals after the loop started, which is no earlier
    // than apply(): timers never fire early, and a late round (the first
    // one on a loaded machine) does not push the later ones back (no drift).
    // The upper bound only catches drift: k late rounds would add up.
    const auto since_apply = rounds[k][0].at - applied;
    EXPECT_GE(since_apply, static_cast<int>(k) * milliseconds(100)) << "round " << k;
    EXPECT_LE(since_apply, static_cast<int>(k) * milliseconds(100) + milliseconds(90))
        << "round " << k;
  }
  ASSERT_GE(h.results.size(), 12u);
  for (std::size_t i = 0; i < h.results.size(); ++i)
    EXPECT_EQ(h.results[i].warmup, i < 2) << "probe " << i;
}

TEST(Loop, ProbesOfOneTargetNeverOverlapWhileTargetsRunConcurrently) {
  Harness h;
  h.script.probe_time = milliseconds(40);
  config::Config c;
  c.prompts["p"] = {"p", "p", "inline"};
  // Each round (one 40 ms probe) overruns its 10 ms interval.
  c.targets = {target("x", {"p"}, milliseconds(10)), target("y", {"p"}, milliseconds(10))};
  h.scheduler.apply(c);
  h.io.run_for(milliseconds(300));

  EXPECT_EQ(h.script.max_in_flight_one_target, 1);
  EXPECT_EQ(h.script.max_in_flight_total, 2);
  // Overrun: the next round starts right after the last, never as a burst of
  // catch-ups (which would start probes closer than one probe's duration).
  std::vector<Clock::time_point> x;
  for (const auto& s : h.script.starts)
    if (s.target == "x") x.push_back(s.at);
  ASSERT_GE(x.size(), 4u);
  ASSERT_LE(x.size(), 8u);
  for (std::size_t i = 1; i < x.size(); ++i) EXPECT_GE(x[i] - x[i - 1], milliseconds(39));
}

// A probe the stop cut short measured nothing: no row, no failure count.
TEST(Loop, StopCancelsTheProbeInFlightAndDeliversNothing) {
  Harness h;
  h.script.probe_time = std::chrono::seconds(10);
  config::Config c;
  c.prompts["p"] = {"p", "p", "inline"};
  c.targets = {target("t", {"p"}, std::chrono::hours(1), /*warmup=*/1)};
  h.scheduler.apply(c);
  h.io.run_for(milliseconds(30));
  ASSERT_EQ(h.script.starts.size(), 1u);
  h.scheduler.stop();
  const auto t0 = Clock::now();
  h.io.restart();
  h.io.run_for(std::chrono::seconds(2));  // returns early once the loop ended
  EXPECT_LT(Clock::now() - t0, milliseconds(500));
  EXPECT_EQ(h.script.canceled["t"], 1);
  EXPECT_TRUE(h.results.empty()) << "delivered: " << probe::to_string(h.results[0].reason);
  EXPECT_EQ(h.script.starts.size(), 1u);
}

TEST(Loop, RetryAfterEndsTheRoundAndPushesTheNextProbeBack) {
  Harness h;
  h.script.answer_429_times = 1;
  h.script.retry_after = 0.3;
  std::vector<std::pair<std::string, double>> backoffs;
  h.scheduler.on_backoff(
      [&](const std::string& target, double wait) { backoffs.emplace_back(target, wait); });
  config::Config c;
  for (const char* p : {"p1", "p2", "p3"}) c.prompts[p] = {p, p, "inline"};
  c.targets = {target("t", {"p1", "p2", "p3"}, milliseconds(50))};
  h.scheduler.apply(c);
  h.io.run_for(milliseconds(450));

  // The 429 round stopped after its first probe; the next probe came no
  // sooner than Retry-After (not one 50 ms interval) later, and then the
  // rhythm went on as before.
  ASSERT_GE(h.script.starts.size(), 4u);
  EXPECT_GE(h.script.starts[1].at - h.script.starts[0].at, milliseconds(299));
  EXPECT_LE(h.script.starts[1].at - h.script.starts[0].at, milliseconds(360));
  ASSERT_EQ(h.results.size(), h.script.starts.size());
  EXPECT_EQ(h.results[0].reason, probe::FailureReason::http_429);
  ASSERT_EQ(backoffs.size(), 1u);
  EXPECT_EQ(backoffs[0].first, "t");
  EXPECT_NEAR(backoffs[0].second, 0.3, 0.02);
}

TEST(Loop, NoRetryAfterNoBackoff) {
  Harness h;
  int backoffs = 0;
  h.scheduler.on_backoff([&](const std::string&, double) { ++backoffs; });
  config::Config c;
  c.prompts["p"] = {"p", "p", "inline"};
  c.targets = {target("t", {"p"}, milliseconds(50))};
  h.scheduler.apply(c);
  h.io.run_for(milliseconds(180));
  EXPECT_GE(h.script.starts.size(), 3u);
  EXPECT_EQ(backoffs, 0);
}

}  // namespace
}  // namespace lse::schedule
