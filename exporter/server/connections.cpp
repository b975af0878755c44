// ConnectionTable (see connections.hpp): slots by connection and by peer
// address, and the choice of whom a newcomer displaces.
#include "server/connections.hpp"

#include <algorithm>
#include <tuple>

namespace lse::server {

std::optional<std::vector<ConnectionTable::Id>> ConnectionTable::admit(const std::string& address,
                                                                       Caps caps) const {
  caps.total = std::max<std::size_t>(caps.total, 1);
  caps.per_address = std::max<std::size_t>(caps.per_address, 1);
  const std::size_t mine = count(address);
  // One more than the cap allows, in each; a lowered cap (reload) may ask
  // for more than one.
  const std::size_t over_mine = mine + 1 > caps.per_address ? mine + 1 - caps.per_address : 0;
  const std::size_t over_total = size() + 1 > caps.total ? size() + 1 - caps.total : 0;
  std::vector<Id> victims;
  while (victims.size() < over_mine) {
    auto v = next_victim(&address, victims);
    if (!v) return std::nullopt;
    victims.push_back(*v);
  }
  while (victims.size() < over_total) {
    auto v = next_victim(nullptr, victims);
    if (!v) return std::nullopt;
    victims.push_back(*v);
  }
  return victims;
}

std::optional<ConnectionTable::Id> ConnectionTable::next_victim(
    const std::string* address, const std::vector<Id>& taken) const {
  std::optional<Id> best;
  std::tuple<bool, std::uint64_t> best_rank{};
  for (const auto& [id, e] : entries_) {
    if (e.phase == Phase::busy || (address && e.address != *address)) continue;
    if (std::find(taken.begin(), taken.end(), id) != taken.end()) continue;
    const auto rank = std::tuple(e.phase != Phase::closing, e.since);
    if (!best || rank < best_rank) {
      best = id;
      best_rank = rank;
    }
  }
  return best;
}

ConnectionTable::Id ConnectionTable::add(const std::string& address) {
  const Id id = next_id_++;
  entries_.emplace(id, Entry{address, Phase::reading, ++clock_});
  ++per_address_[address];
  return id;
}

void ConnectionTable::set_phase(Id id, Phase phase) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.phase == phase) return;
  it->second.phase = phase;
  it->second.since = ++clock_;
}

void ConnectionTable::remove(Id id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  auto count = per_address_.find(it->second.address);
  if (--count->second == 0) per_address_.erase(count);
  entries_.erase(it);
}

std::size_t ConnectionTable::count(const std::string& address) const {
  auto it = per_address_.find(address);
  return it == per_address_.end() ? 0 : it->second;
}

std::optional<ConnectionTable::Phase> ConnectionTable::phase(Id id) const {
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.phase;
}

}  // namespace lse::server
