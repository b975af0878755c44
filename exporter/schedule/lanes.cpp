#include "schedule/lanes.hpp"

#include <algorithm>
#include <cstdint>

namespace lse::schedule {

std::size_t lane_of(std::string_view target, std::size_t lanes) {
  if (lanes <= 1) return 0;
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : target) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return static_cast<std::size_t>(h % lanes);
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
