// Sharding (see shard.hpp).
#include "shard/shard.hpp"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>
#include <system_error>

#include "util/fnv1a.hpp"

namespace lse::shard {
namespace {

std::optional<std::uint64_t> parse_number(std::string_view text) {
  std::uint64_t n = 0;
  if (text.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

// The index `auto` finds in the pod's (or host's) name.
std::uint64_t auto_index(std::uint64_t count, const PodName& names) {
  const bool from_env = names.pod_name_env && !names.pod_name_env->empty();
  const std::string& name = from_env ? *names.pod_name_env : names.host_name;
  const std::string where = from_env ? "env POD_NAME" : "the host name";
  const auto ordinal = ordinal_of(name);
  if (!ordinal)
    throw std::invalid_argument(fmt::format(
        "--shard.index=auto: {} '{}' does not end in -<ordinal> (a StatefulSet pod's name "
        "does, e.g. llm-stream-exporter-0); set POD_NAME or give the index",
        where, name));
  if (*ordinal >= count)
    throw std::invalid_argument(
        fmt::format("--shard.index=auto: the ordinal {} of {} '{}' is not below --shard.count {}",
                    *ordinal, where, name, count));
  return *ordinal;
}

}  // namespace

std::uint64_t fnv1a64(std::string_view name) { return util::fnv1a64(name); }

std::uint64_t shard_of(std::string_view target, std::uint64_t count) {
  return count <= 1 ? 0 : fnv1a64(target) % count;
}

bool owns(const Shard& shard, std::string_view target) {
  return shard_of(target, shard.count) == shard.index;
}

std::function<bool(std::string_view)> target_filter(const Shard& shard) {
  if (shard.count <= 1) return {};
  return [shard](std::string_view target) { return owns(shard, target); };
}

std::optional<std::uint64_t> ordinal_of(std::string_view name) {
  const auto dash = name.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  return parse_number(name.substr(dash + 1));
}

Shard from_flags(std::string_view index_flag, std::uint64_t count, const PodName& names) {
  if (count == 0) throw std::invalid_argument("--shard.count 0: at least 1 (1: no sharding)");
  if (index_flag == "auto") return {auto_index(count, names), count};
  const auto index = parse_number(index_flag);
  if (!index)
    throw std::invalid_argument(
        fmt::format("--shard.index '{}': a number from 0 to {} or auto", index_flag, count - 1));
  if (*index >= count)
    throw std::invalid_argument(
        fmt::format("--shard.index {} is not below --shard.count {} (indexes run from 0 to {})",
                    *index, count, count - 1));
  return {*index, count};
}

std::string describe(const Shard& shard) {
  return fmt::format("shard {} of {}", shard.index, shard.count);
}

}  // namespace lse::shard
