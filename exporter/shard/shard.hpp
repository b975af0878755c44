// Sharding, the kube-state-metrics way (`--shard.index`, `--shard.count`):
// N replicas run one config, and each probes, exposes and shows only the
// targets whose name hashes to its index. Pure: the name of the pod or host
// that `--shard.index=auto` reads is handed in by the caller (cli/).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.hpp"

namespace lse::shard {

// Which share of a config's targets this process runs. {0, 1}: all of them.
struct Shard {
  std::uint64_t index = 0;
  std::uint64_t count = 1;

  bool operator==(const Shard&) const = default;
};

// FNV-1a 64-bit of the bytes of `name` (offset basis 14695981039346656037,
// prime 1099511628211): fixed, so users can predict where a target runs.
std::uint64_t fnv1a64(std::string_view name);

// The shard of a target among `count`: fnv1a64(name) mod count (0 when
// count is 0 or 1).
std::uint64_t shard_of(std::string_view target, std::uint64_t count);

// True when `shard` runs `target`.
bool owns(const Shard& shard, std::string_view target);

// The config loader's filter for `shard` (config::LoadOptions::keep_target):
// empty, keeping every target, when the count is 1.
std::function<bool(std::string_view)> target_filter(const Shard& shard);

// The trailing `-<ordinal>` of a StatefulSet pod's name ("lse-2" -> 2);
// nullopt when the name does not end in '-' and digits (or they overflow).
std::optional<std::uint64_t> ordinal_of(std::string_view name);

// Where `--shard.index=auto` reads the ordinal: the env variable POD_NAME
// when set and not empty, else the host name.
struct PodName {
  std::optional<std::string> pod_name_env;  // POD_NAME
  std::string host_name;                    // gethostname()
};

// The shard from the flags: `index_flag` is a number or "auto". Throws
// std::invalid_argument with a message naming the flag and the value read
// (count 0, an index out of range, no ordinal in the name, ...).
Shard from_flags(std::string_view index_flag, std::uint64_t count, const PodName& names);

// "shard 1 of 2": the index as given (from 0), then the count.
std::string describe(const Shard& shard);

}  // namespace lse::shard
