// ConnectionTable (issue 13): who a newcomer displaces at the caps, without
// sockets.
#include "server/connections.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace lse::server {
namespace {

using Phase = ConnectionTable::Phase;
using Ids = std::vector<ConnectionTable::Id>;

constexpr ConnectionTable::Caps kCaps{3, 2};

TEST(ConnectionTable, BelowTheCapsNobodyIsDisplaced) {
  ConnectionTable t;
  t.add("a");
  t.add("b");
  EXPECT_EQ(t.admit("a", kCaps), Ids{});
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.count("a"), 1u);
}

TEST(ConnectionTable, AtTheTotalCapTheOldestNotBeingAnsweredGoes) {
  ConnectionTable t;
  const auto first = t.add("a");
  const auto second = t.add("b");
  const auto third = t.add("c");
  EXPECT_EQ(t.admit("d", kCaps), Ids{first});
  // A connection being answered keeps its slot.
  t.set_phase(first, Phase::busy);
  EXPECT_EQ(t.admit("d", kCaps), Ids{second});
  // Entering a phase makes it young again: an idle keep-alive connection
  // is as old as its last answer.
  t.set_phase(second, Phase::busy);
  t.set_phase(second, Phase::idle);
  EXPECT_EQ(t.admit("d", kCaps), Ids{third});
  // One on its way out goes first, however young.
  t.set_phase(second, Phase::closing);
  EXPECT_EQ(t.admit("d", kCaps), Ids{second});
}

TEST(ConnectionTable, EveryoneBusyRefusesTheNewcomer) {
  ConnectionTable t;
  for (const char* address : {"a", "b", "c"}) t.set_phase(t.add(address), Phase::busy);
  EXPECT_EQ(t.admit("d", kCaps), std::nullopt);
}

TEST(ConnectionTable, AnAddressAtItsCapDisplacesItsOwn) {
  ConnectionTable t;
  const auto other = t.add("b");  // oldest of all
  const auto mine1 = t.add("a");
  t.add("a");
  EXPECT_EQ(t.admit("a", kCaps), Ids{mine1});
  // Its own all busy: refused, the other address untouched.
  ConnectionTable u;
  u.add("b");
  u.set_phase(u.add("a"), Phase::busy);
  u.set_phase(u.add("a"), Phase::busy);
  EXPECT_EQ(u.admit("a", kCaps), std::nullopt);
  EXPECT_EQ(t.phase(other), Phase::reading);
}

TEST(ConnectionTable, LoweredCapsDisplaceAsManyAsNeeded) {
  ConnectionTable t;
  const auto a1 = t.add("a");
  const auto a2 = t.add("a");
  const auto a3 = t.add("a");
  const auto b1 = t.add("b");
  // Total 2 for 5: three go; per address 1: a's two oldest, then the oldest left.
  EXPECT_EQ(t.admit("a", {2, 1}), (Ids{a1, a2, a3}));
  EXPECT_EQ(t.admit("b", {2, 1}), (Ids{b1, a1, a2}));
}

TEST(ConnectionTable, RemoveFreesTheSlotOnce) {
  ConnectionTable t;
  const auto id = t.add("a");
  t.add("a");
  t.remove(id);
  t.remove(id);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.count("a"), 1u);
  EXPECT_EQ(t.phase(id), std::nullopt);
  t.set_phase(id, Phase::busy);  // unknown: no-op
  EXPECT_EQ(t.size(), 1u);
}

}  // namespace
}  // namespace lse::server
