// Who holds the HTTP server's connection slots, and whom a new connection
// displaces when they are taken (issue 13). Pure bookkeeping, no sockets:
// server.cpp registers every connection here and closes what admit() names.
//
// A slot held by a connection that is doing nothing useful for anyone (a
// client still sending its headers, an idle keep-alive, a connection on its
// way out) is given to the newcomer; a connection in the middle of being
// answered keeps its slot. Without that, a few hundred half-open
// connections (slowloris) would keep every scrape out until they time out.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace lse::server {

class ConnectionTable {
 public:
  using Id = std::uint64_t;

  // Where a connection is. A newcomer displaces one that is closing first,
  // else the one that has waited longest in `reading` (a fresh connection
  // that has not sent a complete request, or a keep-alive one in its next
  // request) or `idle` (keep-alive between requests): the oldest connection
  // that is not being answered. `busy` (request read, answer not yet
  // written) is never displaced, and a request in flight is the youngest.
  enum class Phase { closing, reading, idle, busy };

  struct Caps {
    std::size_t total = 64;
    std::size_t per_address = 32;
  };

  // For a new connection from `address`: the connections to close so that
  // it fits both caps (usually none, or one), or nullopt when there are not
  // enough displaceable ones (then the new connection is refused instead).
  // The per-address cap is met from that address's own connections, so a
  // crowd from one address only ever displaces itself.
  std::optional<std::vector<Id>> admit(const std::string& address, Caps caps) const;

  // A new connection, in Phase::reading.
  Id add(const std::string& address);
  // No-op for an unknown id or the phase it is in already.
  void set_phase(Id id, Phase phase);
  // Frees the slot; no-op for an unknown id (a connection removed twice).
  void remove(Id id);

  std::size_t size() const { return entries_.size(); }
  std::size_t count(const std::string& address) const;
  std::optional<Phase> phase(Id id) const;

 private:
  struct Entry {
    std::string address;
    Phase phase = Phase::reading;
    std::uint64_t since = 0;  // when it entered `phase`, in table events
  };

  // The next one to displace among the connections not in `taken`
  // (restricted to `address` unless empty).
  std::optional<Id> next_victim(const std::string* address, const std::vector<Id>& taken) const;

  std::unordered_map<Id, Entry> entries_;
  std::unordered_map<std::string, std::size_t> per_address_;
  Id next_id_ = 1;
  std::uint64_t clock_ = 0;
};

}  // namespace lse::server
