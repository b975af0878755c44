// The `run` plan: warmups first, then rounds in which every target's prompts
// appear once each in a shuffled order; the same seed gives the same plan.
// And each target's route: its proxy, from which variable, or why none.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>

#include "cli/run_command.hpp"
#include "cli/run_proxy.hpp"

namespace lse::cli {
namespace {

TEST(RunPlan, WarmupsFirstThenShuffledRounds) {
  const auto plan = build_plan({3, 2}, 10, {2, 1}, 42);
  ASSERT_EQ(plan.size(), 2u + 1u + 10u * 5u);
  // Warmups: per target, its count, before any measured probe, no round.
  std::map<std::size_t, int> warm;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(plan[i].warmup);
    EXPECT_EQ(plan[i].round, -1);
    ++warm[plan[i].target];
  }
  EXPECT_EQ(warm[0], 2);
  EXPECT_EQ(warm[1], 1);
  // Each round: every (target, prompt) exactly once.
  std::set<std::vector<std::size_t>> orders;
  for (int r = 0; r < 10; ++r) {
    std::set<std::pair<std::size_t, std::size_t>> seen;
    std::vector<std::size_t> order0;
    for (std::size_t i = 3 + static_cast<std::size_t>(r) * 5;
         i < 3 + static_cast<std::size_t>(r + 1) * 5; ++i) {
      EXPECT_FALSE(plan[i].warmup);
      EXPECT_EQ(plan[i].round, r);
      seen.insert({plan[i].target, plan[i].prompt});
      if (plan[i].target == 0) order0.push_back(plan[i].prompt);
    }
    EXPECT_EQ(seen.size(), 5u);
    orders.insert(order0);
  }
  EXPECT_GT(orders.size(), 1u);  // the order changes between rounds
}

TEST(RunPlan, SeedReproducible) {
  auto key = [](const std::vector<PlanItem>& p) {
    std::vector<std::size_t> k;
    for (const auto& i : p) k.push_back(i.target * 100 + i.prompt);
    return k;
  };
  EXPECT_EQ(key(build_plan({3}, 20, {2}, 7)), key(build_plan({3}, 20, {2}, 7)));
  EXPECT_NE(key(build_plan({3}, 20, {2}, 7)), key(build_plan({3}, 20, {2}, 8)));
}

TEST(RunPlan, NoWarmupNoRuns) {
  EXPECT_TRUE(build_plan({3}, 0, {0}, 1).empty());
  EXPECT_EQ(build_plan({1}, 3, {0}, 1).size(), 3u);
}

TEST(RunPositionals, TrailingIntegerIsTheRunCount) {
  auto p = split_positionals({"prompt.txt", "20"});
  EXPECT_EQ(p.files, std::vector<std::string>{"prompt.txt"});
  EXPECT_EQ(p.runs, 20);
  p = split_positionals({"a.txt", "b.txt"});
  EXPECT_EQ(p.files.size(), 2u);
  EXPECT_EQ(p.runs, 0);
  p = split_positionals({"20"});
  EXPECT_TRUE(p.files.empty());
  EXPECT_EQ(p.runs, 20);
  p = split_positionals({"a.txt", "0"});  // not a positive count: a file name
  EXPECT_EQ(p.files.size(), 2u);
}

net::Getenv fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

// A target as MC_* mode builds it: it honours the environment.
config::Target mc_target(const std::string& url) {
  config::Target t;
  t.name = "t";
  t.url = url;
  t.proxy_from_environment = true;
  return t;
}

TEST(RunProxy, TheEnvironmentsProxyIsUsedAndNamedWithoutItsUserinfo) {
  config::Target t = mc_target("http://127.0.0.1:8080/v1");
  const auto r =
      route_target(t, false, fake_env({{"HTTP_PROXY", "http://alice:s3cret@127.0.0.1:3128/"}}));
  EXPECT_EQ(r.proxy, "http://127.0.0.1:3128");
  EXPECT_EQ(r.source, "HTTP_PROXY");
  EXPECT_EQ(r.text(), "proxy http://127.0.0.1:3128 (from HTTP_PROXY)");
  EXPECT_EQ(t.proxy_url, "http://127.0.0.1:3128");  // the prober does what the header says
  EXPECT_FALSE(t.proxy_from_environment);
}

TEST(RunProxy, HttpsTargetsReadHttpsProxy) {
  config::Target t = mc_target("https://api.example/v1");
  const auto r = route_target(
      t, false, fake_env({{"HTTP_PROXY", "http://a:1"}, {"https_proxy", "proxy.corp:3128"}}));
  EXPECT_EQ(r.text(), "proxy http://proxy.corp:3128 (from https_proxy)");
}

TEST(RunProxy, NoProxyAndTheFlagGoDirect) {
  const auto env = fake_env({{"HTTP_PROXY", "http://p:3128"}, {"NO_PROXY", "127.0.0.1"}});
  config::Target t = mc_target("http://127.0.0.1:8080/v1");
  auto r = route_target(t, false, env);
  EXPECT_EQ(r.proxy, "");
  EXPECT_EQ(r.text(), "no proxy (NO_PROXY matches 127.0.0.1)");
  EXPECT_EQ(t.proxy_url, "");
  t = mc_target("http://api.example/v1");
  t.proxy_url = "http://configured:3128";
  r = route_target(t, true, env);
  EXPECT_EQ(r.text(), "no proxy (--no-proxy)");
  EXPECT_EQ(t.proxy_url, "");
  EXPECT_FALSE(t.proxy_from_environment);
}

TEST(RunProxy, NothingSetSaysNothing) {
  config::Target t = mc_target("http://127.0.0.1:8080/v1");
  EXPECT_EQ(route_target(t, false, fake_env({})).text(), "");
  // A config target without proxy_from_environment ignores the variables.
  t.proxy_from_environment = false;
  EXPECT_EQ(route_target(t, false, fake_env({{"HTTP_PROXY", "http://p:3128"}})).text(), "");
  EXPECT_EQ(t.proxy_url, "");
}

TEST(RunProxy, ProxyUrlWinsOverTheEnvironment) {
  config::Target t = mc_target("http://127.0.0.1:8080/v1");
  t.proxy_url = "http://configured:3128";
  const auto r = route_target(t, false, fake_env({{"HTTP_PROXY", "http://p:1"}}));
  EXPECT_EQ(r.text(), "proxy http://configured:3128 (from proxy_url)");
}

TEST(RunProxy, AnUnusableVariableIsAnErrorWithoutItsSecret) {
  config::Target t = mc_target("https://api.example/v1");
  try {
    route_target(t, false, fake_env({{"HTTPS_PROXY", "socks5://alice:s3cret@p:1080"}}));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("HTTPS_PROXY: ", 0), 0U) << what;
    EXPECT_EQ(what.find("s3cret"), std::string::npos) << what;
  }
}

TEST(RunProxy, SeveralTargetsAreNamedInTheHeader) {
  std::vector<config::Target> ts{mc_target("http://a.example/v1"), mc_target("http://b.example/v1"),
                                 mc_target("http://c.example/v1")};
  ts[0].name = "a";
  ts[1].name = "b";
  ts[2].name = "c";
  ts[2].proxy_from_environment = false;
  const auto env = fake_env({{"HTTP_PROXY", "http://p:3128"}, {"NO_PROXY", "b.example"}});
  std::vector<ProxyRoute> routes;
  for (auto& t : ts) routes.push_back(route_target(t, false, env));
  EXPECT_EQ(describe_routes(ts, routes),
            "a: proxy http://p:3128 (from HTTP_PROXY), b: no proxy (NO_PROXY matches b.example)");
}

}  // namespace
}  // namespace lse::cli
