// The `run` plan: warmups first, then rounds in which every target's prompts
// appear once each in a shuffled order; the same seed gives the same plan.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "cli/run_command.hpp"

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

}  // namespace
}  // namespace lse::cli
