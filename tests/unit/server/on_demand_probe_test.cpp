// GET /probe?target= over real sockets with a fake probe hook: the answer
// comes later from another thread while the server keeps serving others;
// refusals carry Retry-After; a bad query never reaches the hook; a client
// that leaves cancels its probe; stop() with a probe pending is prompt and an
// answer after it reaches nobody. The query grammar as plain calls.
#include <utility>  // before Asio with GCC 12 / C++20

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "server/routes.hpp"
#include "server/server.hpp"
#include "test_client.hpp"

namespace lse::server {
namespace {

using test::Client;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

class OnDemandProbeTest : public ::testing::Test {
 protected:
  report::RowStore rows{10, {}};
  std::mutex mutex;
  std::vector<ProbeRequest> asked;  // guarded by mutex
  ProbeDone pending;                // guarded by mutex
  std::atomic<int> cancels{0};
  std::unique_ptr<Server> server;

  // The hook keeps `done` for the test to call.
  Hooks hooks() {
    Hooks h;
    h.probe = [this](const ProbeRequest& r, ProbeDone done) -> std::function<void()> {
      const std::lock_guard lock(mutex);
      asked.push_back(r);
      pending = std::move(done);
      return [this] { ++cancels; };
    };
    return h;
  }

  void start(Hooks h, ServerOptions options = {}) {
    server = std::make_unique<Server>("127.0.0.1:0", std::move(h), rows, std::move(options));
    server->start();
  }

  bool wait_pending(std::chrono::milliseconds within = 2s) {
    const auto until = Clock::now() + within;
    while (Clock::now() < until) {
      {
        const std::lock_guard lock(mutex);
        if (pending) return true;
      }
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  void answer(ProbeAnswer a) {
    ProbeDone done;
    {
      const std::lock_guard lock(mutex);
      done = std::exchange(pending, nullptr);
    }
    done(std::move(a));
  }

  void TearDown() override {
    if (server) server->stop();
  }
};

TEST_F(OnDemandProbeTest, AnswerComesLaterFromAnotherThreadAndOthersAreServedMeanwhile) {
  start(hooks());
  std::thread asker([&] {
    Client c(server->port());
    auto res = c.request(boost::beast::http::verb::get, "/probe?target=a%20b&prompt=long&debug=1");
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "probe_success 1\n");
    EXPECT_EQ(res[boost::beast::http::field::content_type],
              "text/plain; version=0.0.4; charset=utf-8");
  });
  ASSERT_TRUE(wait_pending());
  {
    const std::lock_guard lock(mutex);
    ASSERT_EQ(asked.size(), 1u);
    EXPECT_EQ(asked[0].target, "a b");
    EXPECT_EQ(asked[0].prompt.value_or(""), "long");
    EXPECT_TRUE(asked[0].debug);
    EXPECT_FALSE(asked[0].json);
  }
  // The server thread is not held by the pending probe.
  Client other(server->port());
  const auto t0 = Clock::now();
  EXPECT_EQ(other.request(boost::beast::http::verb::get, "/-/healthy").result_int(), 200);
  EXPECT_LT(Clock::now() - t0, 500ms);
  std::thread([this] {
    std::this_thread::sleep_for(50ms);
    ProbeAnswer a;
    a.body = "probe_success 1\n";
    answer(std::move(a));
  }).join();
  asker.join();
  EXPECT_EQ(cancels.load(), 0);
}

TEST_F(OnDemandProbeTest, RefusalCarriesRetryAfter) {
  Hooks h;
  h.probe = [](const ProbeRequest&, const ProbeDone& done) -> std::function<void()> {
    ProbeAnswer a;
    a.status = 429;
    a.content_type = "text/plain; charset=utf-8";
    a.body = "too soon\n";
    a.retry_after_seconds = 7;
    done(std::move(a));  // before the hook returns
    return {};
  };
  start(std::move(h));
  Client c(server->port());
  auto res = c.request(boost::beast::http::verb::get, "/probe?target=a");
  EXPECT_EQ(res.result_int(), 429);
  EXPECT_EQ(res[boost::beast::http::field::retry_after], "7");
  EXPECT_EQ(res.body(), "too soon\n");
  // The connection goes on serving.
  EXPECT_EQ(c.request(boost::beast::http::verb::get, "/-/healthy").result_int(), 200);
}

TEST_F(OnDemandProbeTest, BadQueryIs400AndNeverReachesTheHook) {
  start(hooks());
  for (const char* bad :
       {"/probe?target=", "/probe?target=a&debug=maybe", "/probe?target=a&format=xml"}) {
    Client c(server->port());
    auto res = c.request(boost::beast::http::verb::get, bad);
    EXPECT_EQ(res.result_int(), 400) << bad;
  }
  const std::lock_guard lock(mutex);
  EXPECT_TRUE(asked.empty());
}

TEST_F(OnDemandProbeTest, WithoutAHookIs503) {
  start(Hooks{});
  Client c(server->port());
  EXPECT_EQ(c.request(boost::beast::http::verb::get, "/probe?target=a").result_int(), 503);
}

TEST_F(OnDemandProbeTest, ClientThatLeavesCancelsItsProbe) {
  start(hooks());
  {
    Client c(server->port());
    c.send_raw("GET /probe?target=a HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(wait_pending());
  }  // closed
  const auto until = Clock::now() + 2s;
  while (cancels.load() == 0 && Clock::now() < until) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(cancels.load(), 1);
  // The probe's late answer reaches no one and harms nothing.
  answer({});
  Client c(server->port());
  EXPECT_EQ(c.request(boost::beast::http::verb::get, "/-/healthy").result_int(), 200);
}

TEST_F(OnDemandProbeTest, StopWithAProbePendingIsPromptAndALateAnswerIsDropped) {
  start(hooks());
  Client c(server->port());
  c.send_raw("GET /probe?target=a HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(wait_pending());
  const auto t0 = Clock::now();
  server->stop();
  EXPECT_LT(Clock::now() - t0, 1s);
  EXPECT_EQ(cancels.load(), 1);
  EXPECT_TRUE(c.closed_by_server());
  answer({});  // after stop: dropped
  server.reset();
}

TEST_F(OnDemandProbeTest, AnswersUnderTheRoutePrefixOnly) {
  ServerOptions options;
  options.routing.route_prefix = "/llm";
  start(hooks(), options);
  Client c(server->port());
  EXPECT_EQ(c.request(boost::beast::http::verb::get, "/probe?target=a").result_int(), 404);
  {
    const std::lock_guard lock(mutex);
    EXPECT_TRUE(asked.empty());
  }
  std::thread asker([&] {
    Client p(server->port());
    EXPECT_EQ(p.request(boost::beast::http::verb::get, "/llm/probe?target=a").result_int(), 200);
  });
  ASSERT_TRUE(wait_pending());
  answer({});
  asker.join();
}

// Behind the web config like every endpoint: without the password the probe
// is never started (401); with it, it is.
TEST_F(OnDemandProbeTest, BasicAuthComesFirst) {
  char dir[] = "/tmp/lse-on-demand-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string web_config = std::string(dir) + "/web.yml";
  // user:pass, made with `htpasswd -nbBC 10 user pass` (web/basic_auth_test.cpp).
  std::ofstream(web_config) << "basic_auth_users:\n  user: "
                               "'$2y$10$Xc4ibDGsh4wvAg/eVu8i3.X0L0WN4uKWa7/8TrRYzbRGJtGWPPace'\n";
  ServerOptions options;
  options.web_config_file = web_config;
  start(hooks(), options);
  {
    Client c(server->port());
    EXPECT_EQ(c.request(boost::beast::http::verb::get, "/probe?target=a").result_int(), 401);
  }
  {
    const std::lock_guard lock(mutex);
    EXPECT_TRUE(asked.empty());
  }
  std::thread asker([&] {
    Client c(server->port());
    EXPECT_EQ(c.request(boost::beast::http::verb::get, "/probe?target=a",
                        {{"Authorization", "Basic dXNlcjpwYXNz"}})
                  .result_int(),
              200);
  });
  ASSERT_TRUE(wait_pending(5s));
  answer({});
  asker.join();
  std::filesystem::remove_all(dir);
}

TEST(ProbeQuery, Grammar) {
  auto ok = [](std::string_view q) { return std::get<ProbeRequest>(parse_probe_query(q)); };
  EXPECT_EQ(ok("target=a").target, "a");
  EXPECT_FALSE(ok("target=a").prompt.has_value());
  EXPECT_FALSE(ok("target=a&prompt=").prompt.has_value());
  EXPECT_TRUE(ok("target=a&debug=true").debug);
  EXPECT_FALSE(ok("target=a&debug=false").debug);
  EXPECT_TRUE(ok("target=a&format=json").json);
  EXPECT_FALSE(ok("target=a&format=text").json);
  EXPECT_EQ(ok("target=x%2Fy+z").target, "x/y z");
  EXPECT_EQ(std::get<std::string>(parse_probe_query("prompt=p")),
            "target= names the configured target to probe");
  EXPECT_NE(std::get<std::string>(parse_probe_query("target=a&debug=yes")).find("debug"),
            std::string::npos);
}

TEST(ProbeQuery, OnlyAnAuthorizedGetWithAHookStartsAProbe) {
  Hooks h;
  report::RowStore rows{10, {}};
  Request req{boost::beast::http::verb::get, "/probe?target=a", 11};
  EXPECT_FALSE(on_demand_probe(req, RouteContext{h, rows, 0, {}, true}));  // no hook
  h.probe = [](const ProbeRequest&, const ProbeDone&) { return std::function<void()>(); };
  EXPECT_TRUE(on_demand_probe(req, RouteContext{h, rows, 0, {}, true}));
  EXPECT_FALSE(on_demand_probe(req, RouteContext{h, rows, 0, {}, false}));  // 401 instead
  req.method(boost::beast::http::verb::post);
  EXPECT_FALSE(on_demand_probe(req, RouteContext{h, rows, 0, {}, true}));
  req.method(boost::beast::http::verb::get);
  req.target("/probe?id=abc");
  EXPECT_FALSE(on_demand_probe(req, RouteContext{h, rows, 0, {}, true}));  // a kept probe's page
  // Unauthorized: 401 whatever the query.
  req.target("/probe?target=a");
  EXPECT_EQ(handle_request(req, RouteContext{h, rows, 0, {}, false}).result_int(), 401);
}

}  // namespace
}  // namespace lse::server
