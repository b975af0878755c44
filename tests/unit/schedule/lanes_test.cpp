// Lanes: every target on exactly one lane, the same one in every run and
// after any reload, lanes about even over many targets.
#include "schedule/lanes.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lse::schedule {
namespace {

// The shard hash (shard/shard.hpp), written out: schedule does not link shard.
std::uint64_t shard_fnv1a(const std::string& name) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

config::Config with_targets(std::size_t n) {
  config::Config c;
  for (std::size_t i = 0; i < n; ++i) {
    config::Target t;
    t.name = "target-" + std::to_string(i);
    c.targets.push_back(t);
  }
  return c;
}

TEST(Lanes, OneLaneHoldsEverything) {
  EXPECT_EQ(lane_of("anything", 1), 0u);
  EXPECT_EQ(lane_of("anything", 0), 0u);
  EXPECT_EQ(lane_config(with_targets(5), 0, 1).targets.size(), 5u);
}

TEST(Lanes, ALaneDependsOnTheNameOnly) {
  // Fixed values, so two runs (and two builds) bind alike: FNV-1a of ""
  // is its offset basis, 0xcbf29ce484222325, mixed by MurmurHash3's fmix64
  // into 0xefd01f60ba992926 (= 17280346270528514342).
  EXPECT_EQ(lane_of("", 7), 17280346270528514342ull % 7);
  EXPECT_EQ(lane_of("openai-mini", 4), lane_of(std::string("openai-") + "mini", 4));
  for (std::size_t lanes = 2; lanes < 9; ++lanes)
    for (int i = 0; i < 50; ++i) EXPECT_LT(lane_of("t" + std::to_string(i), lanes), lanes);
}

TEST(Lanes, EveryTargetIsOnExactlyOneLaneAndTheLanesAreAboutEven) {
  constexpr std::size_t kTargets = 1000, kLanes = 4;
  const config::Config all = with_targets(kTargets);
  std::vector<int> seen(kTargets, 0);
  for (std::size_t k = 0; k < kLanes; ++k) {
    const config::Config mine = lane_config(all, k, kLanes);
    EXPECT_GT(mine.targets.size(), kTargets / kLanes * 8 / 10) << "lane " << k;
    EXPECT_LT(mine.targets.size(), kTargets / kLanes * 12 / 10) << "lane " << k;
    for (const auto& t : mine.targets) {
      EXPECT_EQ(lane_of(t.name, kLanes), k);
      ++seen[std::stoul(t.name.substr(7))];
    }
  }
  for (std::size_t i = 0; i < kTargets; ++i) EXPECT_EQ(seen[i], 1) << "target-" << i;
}

// A shard's targets share their FNV-1a mod the shard count: the lanes must
// still split them about evenly (bare FNV-1a mod 2 put every target of
// shard 0 of 2 on lane 0 of 2).
TEST(Lanes, TheTargetsOfOneShardSpreadOverTheLanes) {
  for (const std::uint64_t shards : {2ull, 4ull}) {
    std::vector<std::string> names;
    for (int i = 0; names.size() < 400; ++i) {
      const std::string name = "target-" + std::to_string(i);
      if (shard_fnv1a(name) % shards == 0) names.push_back(name);
    }
    for (const std::size_t lanes : {2u, 4u}) {
      std::vector<int> per_lane(lanes, 0);
      for (const auto& n : names) ++per_lane[lane_of(n, lanes)];
      for (std::size_t k = 0; k < lanes; ++k)
        EXPECT_GT(per_lane[k], 400 / static_cast<int>(lanes) * 7 / 10)
            << shards << " shards, lane " << k << " of " << lanes;
    }
  }
}

TEST(Lanes, ALaneConfigKeepsEverythingButOtherLanesTargets) {
  config::Config all = with_targets(10);
  all.listen = "127.0.0.1:9999";
  all.rows.ring = 7;
  const config::Config mine = lane_config(all, 1, 3);
  EXPECT_EQ(mine.listen, all.listen);
  EXPECT_EQ(mine.rows.ring, 7u);
}

}  // namespace
}  // namespace lse::schedule

namespace lse::schedule {
namespace {

TEST(Lanes, AutoIsOnePerQuarterThousandTargetsAtMostOnePerCore) {
  EXPECT_EQ(auto_lanes(0, 8), 1u);
  EXPECT_EQ(auto_lanes(1, 8), 1u);
  EXPECT_EQ(auto_lanes(250, 8), 1u);
  EXPECT_EQ(auto_lanes(251, 8), 2u);
  EXPECT_EQ(auto_lanes(1000, 8), 4u);
  EXPECT_EQ(auto_lanes(1000, 2), 2u);
  EXPECT_EQ(auto_lanes(1000, 0), 1u);  // hardware_concurrency() may not know
}

}  // namespace
}  // namespace lse::schedule
