#include "schedule/lanes.hpp"

#include <algorithm>
#include <cstdint>

#include "util/fnv1a.hpp"

namespace lse::schedule {

namespace {

// MurmurHash3's 64-bit finaliser: every bit of the input moves every bit of
// the output.
std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

}  // namespace

std::size_t lane_of(std::string_view target, std::size_t lanes) {
  if (lanes <= 1) return 0;
  const std::uint64_t h = util::fnv1a64(target);
  // A shard holds the names whose bare FNV-1a is its index mod the shard
  // count (shard/shard.hpp); taken mod the lanes as well, it would put a
  // shard's targets on few lanes (2 shards, 2 lanes: all on one).
  return static_cast<std::size_t>(mix(h) % lanes);
}

std::size_t auto_lanes(std::size_t targets, std::size_t cores) {
  constexpr std::size_t kTargetsPerLane = 250;
  const std::size_t wanted = (targets + kTargetsPerLane - 1) / kTargetsPerLane;
  return std::max<std::size_t>(1, std::min(wanted, cores));
}

config::Config lane_config(const config::Config& all, std::size_t lane, std::size_t lanes) {
  config::Config mine = all;
  mine.targets.clear();
  for (const auto& t : all.targets)
    if (lane_of(t.name, lanes) == lane) mine.targets.push_back(t);
  return mine;
}

}  // namespace lse::schedule
