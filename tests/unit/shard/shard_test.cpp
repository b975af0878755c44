// Sharding: the documented hash (FNV-1a 64-bit, mod the count) with known
// values, every target in exactly one shard, the config loader leaving out
// the others, and --shard.index / --shard.count / auto read and refused.
#include "shard/shard.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace lse::shard {
namespace {

// The published FNV-1a 64 test vectors ("", "a", "foobar") and two names
// whose shards docs/deploy.md shows.
TEST(Shard, TheHashIsFnv1a64) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  EXPECT_EQ(fnv1a64("openai-mini"), 7923580275546302421ull);
  EXPECT_EQ(fnv1a64("anthropic-haiku"), 526483130421164648ull);
}

TEST(Shard, ATargetsShardIsItsHashModTheCount) {
  EXPECT_EQ(shard_of("openai-mini", 2), 1u);
  EXPECT_EQ(shard_of("openai-mini", 3), 0u);
  EXPECT_EQ(shard_of("anthropic-haiku", 2), 0u);
  EXPECT_EQ(shard_of("anthropic-haiku", 3), 2u);
  EXPECT_EQ(shard_of("anything", 1), 0u);
  EXPECT_EQ(shard_of("anything", 0), 0u);
  EXPECT_TRUE(owns({1, 2}, "openai-mini"));
  EXPECT_FALSE(owns({0, 2}, "openai-mini"));
  EXPECT_TRUE(owns({}, "openai-mini"));
}

TEST(Shard, EveryTargetIsInExactlyOneShardAndTheyAreAboutEven) {
  constexpr int kTargets = 900;
  for (const std::uint64_t count : {2ull, 3ull, 5ull}) {
    std::vector<int> per_shard(count, 0);
    for (int i = 0; i < kTargets; ++i) {
      const std::string name = "target-" + std::to_string(i);
      int owners = 0;
      for (std::uint64_t k = 0; k < count; ++k) owners += owns({k, count}, name) ? 1 : 0;
      EXPECT_EQ(owners, 1) << name;
      ++per_shard[shard_of(name, count)];
    }
    for (std::uint64_t k = 0; k < count; ++k)
      EXPECT_GT(per_shard[k], kTargets / static_cast<int>(count) * 8 / 10)
          << "shard " << k << " of " << count;
  }
}

TEST(Shard, TheOrdinalIsTheTrailingNumberAfterADash) {
  EXPECT_EQ(ordinal_of("llm-stream-exporter-0"), 0u);
  EXPECT_EQ(ordinal_of("x-1"), 1u);
  EXPECT_EQ(ordinal_of("release-lse-12"), 12u);
  EXPECT_EQ(ordinal_of("lse"), std::nullopt);
  EXPECT_EQ(ordinal_of("lse-"), std::nullopt);
  EXPECT_EQ(ordinal_of("lse-1a"), std::nullopt);
  EXPECT_EQ(ordinal_of("lse-+1"), std::nullopt);
  EXPECT_EQ(ordinal_of("lse-99999999999999999999999"), std::nullopt);
  EXPECT_EQ(ordinal_of(""), std::nullopt);
}

std::string refusal(std::string_view index, std::uint64_t count, const PodName& names = {}) {
  try {
    from_flags(index, count, names);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Shard, FlagsGiveTheShard) {
  EXPECT_EQ(from_flags("0", 1, {}), (Shard{0, 1}));
  EXPECT_EQ(from_flags("1", 2, {}), (Shard{1, 2}));
  EXPECT_EQ(from_flags("auto", 3, {std::string("lse-2"), "host-0"}), (Shard{2, 3}));
  // POD_NAME wins over the host name; unset or empty, the host name counts.
  EXPECT_EQ(from_flags("auto", 3, {std::nullopt, "node-1"}), (Shard{1, 3}));
  EXPECT_EQ(from_flags("auto", 3, {std::string(), "node-1"}), (Shard{1, 3}));
}

TEST(Shard, BadFlagsAreRefusedNamingWhatWasRead) {
  EXPECT_EQ(refusal("0", 0), "--shard.count 0: at least 1 (1: no sharding)");
  EXPECT_EQ(refusal("2", 2),
            "--shard.index 2 is not below --shard.count 2 (indexes run from 0 to 1)");
  EXPECT_EQ(refusal("-1", 2), "--shard.index '-1': a number from 0 to 1 or auto");
  EXPECT_EQ(refusal("one", 2), "--shard.index 'one': a number from 0 to 1 or auto");
  EXPECT_EQ(refusal("auto", 2, {std::string("exporter"), "node-0"}),
            "--shard.index=auto: env POD_NAME 'exporter' does not end in -<ordinal> (a "
            "StatefulSet pod's name does, e.g. llm-stream-exporter-0); set POD_NAME or give the "
            "index");
  EXPECT_EQ(refusal("auto", 2, {std::nullopt, "laptop"}),
            "--shard.index=auto: the host name 'laptop' does not end in -<ordinal> (a "
            "StatefulSet pod's name does, e.g. llm-stream-exporter-0); set POD_NAME or give the "
            "index");
  EXPECT_EQ(refusal("auto", 2, {std::string("lse-2"), "node-0"}),
            "--shard.index=auto: the ordinal 2 of env POD_NAME 'lse-2' is not below "
            "--shard.count 2");
}

TEST(Shard, TheLoaderKeepsOnlyTheShardsTargets) {
  const std::string yaml =
      "prompts: {short: {text: hi}}\n"
      "targets:\n"
      "  - {name: openai-mini, url: 'http://127.0.0.1:1/v1', model: m, prompts: [short]}\n"
      "  - {name: anthropic-haiku, url: 'http://127.0.0.1:1/v1', model: m, prompts: [short]}\n";
  config::LoadOptions load;
  EXPECT_EQ(config::parse(yaml, "c.yaml", ".", load).targets.size(), 2u);
  EXPECT_FALSE(target_filter({0, 1}));
  load.keep_target = target_filter({1, 2});
  const auto one = config::parse(yaml, "c.yaml", ".", load);
  ASSERT_EQ(one.targets.size(), 1u);
  EXPECT_EQ(one.targets[0].name, "openai-mini");
  load.keep_target = target_filter({0, 2});
  const auto zero = config::parse(yaml, "c.yaml", ".", load);
  ASSERT_EQ(zero.targets.size(), 1u);
  EXPECT_EQ(zero.targets[0].name, "anthropic-haiku");
  // Still validated whole: an error in another shard's target is an error here.
  EXPECT_THROW(config::parse(yaml + "  - {name: bad, model: m}\n", "c.yaml", ".", load),
               config::ConfigError);
}

// metrics.max_series bounds one replica: a config over it whole loads in a
// shard whose share is under it.
TEST(Shard, MaxSeriesCountsTheShardsShare) {
  std::string yaml = "prompts: {short: {text: hi}}\nmetrics: {max_series: 1000}\ntargets:\n";
  for (int i = 0; i < 8; ++i)
    yaml += "  - {name: t" + std::to_string(i) +
            ", url: 'http://127.0.0.1:1/v1', model: m, prompts: [short]}\n";
  config::LoadOptions load;
  EXPECT_THROW(config::parse(yaml, "c.yaml", ".", load), config::ConfigError);
  std::uint64_t loaded = 0;
  for (std::uint64_t k = 0; k < 8; ++k) {
    load.keep_target = target_filter({k, 8});
    const auto share = config::parse(yaml, "c.yaml", ".", load);
    loaded += share.targets.size();
    EXPECT_LE(config::series_count(share).at_most, 1000u);
  }
  EXPECT_EQ(loaded, 8u);
  // Over it all the same, a shard says that its share is.
  load.keep_target = target_filter({0, 2});
  try {
    config::parse(yaml, "c.yaml", ".", load);
    ADD_FAILURE() << "half of 8 targets fit in 1,000 series";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("this shard's targets imply"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lse::shard
