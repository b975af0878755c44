// The on-demand probe's guard: the config's min_interval between one
// target's on-demand probes (Retry-After rounded up), the cap on probes at
// once, 0 meaning off; times are handed in.
#include "ondemand/guard.hpp"

#include <gtest/gtest.h>

namespace lse::ondemand {
namespace {

using V = Admission::Verdict;

TEST(OnDemandGuard, SpacesOneTargetsProbesByMinInterval) {
  Guard g;
  EXPECT_EQ(g.admit("a", 100.0, 5.0, 2).verdict, V::go);
  g.finish();
  const Admission soon = g.admit("a", 101.2, 5.0, 2);
  EXPECT_EQ(soon.verdict, V::too_soon);
  EXPECT_EQ(soon.retry_after_seconds, 4u);                         // 3.8 s left, rounded up
  EXPECT_EQ(g.admit("a", 104.9, 5.0, 2).retry_after_seconds, 1u);  // never 0
  EXPECT_EQ(g.admit("b", 101.2, 5.0, 2).verdict, V::go);           // another target
  EXPECT_EQ(g.admit("a", 105.0, 5.0, 2).verdict, V::go);
}

TEST(OnDemandGuard, RefusesBeyondMaxConcurrentUntilOneFinishes) {
  Guard g;
  EXPECT_EQ(g.admit("a", 0, 1, 2).verdict, V::go);
  EXPECT_EQ(g.admit("b", 0, 1, 2).verdict, V::go);
  EXPECT_EQ(g.admit("c", 0, 1, 2).verdict, V::busy);
  EXPECT_EQ(g.running(), 2u);
  g.finish();
  EXPECT_EQ(g.admit("c", 0, 1, 2).verdict, V::go);
  // A refused probe took no start: "c" was not spaced by the busy answer.
  EXPECT_EQ(g.running(), 2u);
}

TEST(OnDemandGuard, ZeroMaxConcurrentIsOff) {
  Guard g;
  EXPECT_EQ(g.admit("a", 0, 1, 0).verdict, V::off);
  EXPECT_EQ(g.running(), 0u);
}

TEST(OnDemandGuard, BusyDoesNotCountAsAStart) {
  Guard g;
  ASSERT_EQ(g.admit("a", 0, 10, 1).verdict, V::go);
  EXPECT_EQ(g.admit("b", 1, 10, 1).verdict, V::busy);
  g.finish();
  EXPECT_EQ(g.admit("b", 2, 10, 1).verdict, V::go);
}

}  // namespace
}  // namespace lse::ondemand
