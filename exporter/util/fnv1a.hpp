// FNV-1a 64-bit (offset basis 14695981039346656037, prime 1099511628211):
// the one name hash of the exporter. Shards (shard/) and probe threads
// (schedule/lanes) both place targets by it, so it is fixed and documented.
// Header-only, like util/text.hpp.
#pragma once
#include <cstdint>
#include <string_view>

namespace lse::util {

constexpr std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace lse::util
