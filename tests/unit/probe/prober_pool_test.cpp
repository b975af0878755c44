// ProberPool: probers reused per target across worker slots, idle ones
// bounded, the longest idle dropped first, busy ones canceled.
#include "probe/prober_pool.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace lse::probe {
namespace {

// What the pool needs of a prober (cancel()), and what the tests check: the
// target it was made for, an id, a live count (`alive`), cancels received.
struct FakeProber {
  std::size_t target;
  int id;
  int* alive;
  int canceled = 0;
  FakeProber(std::size_t t, int i, int* a) : target(t), id(i), alive(a) { ++*alive; }
  ~FakeProber() { --*alive; }
  void cancel() { ++canceled; }
};

struct ProberPoolTest : ::testing::Test {
  int alive = 0;
  int next_id = 0;
  std::vector<std::size_t> made_for;
  ProberPool<FakeProber> pool_with(std::size_t max_idle) {
    return ProberPool<FakeProber>(max_idle, [this](std::size_t t) {
      made_for.push_back(t);
      return std::make_unique<FakeProber>(t, next_id++, &alive);
    });
  }
};

TEST_F(ProberPoolTest, AProberGivenBackServesTheNextProbeOfItsTargetFromAnySlot) {
  auto pool = pool_with(4);
  FakeProber& a = pool.acquire(7);
  EXPECT_EQ(a.target, 7u);
  const int id = a.id;
  pool.release(a);
  FakeProber& again = pool.acquire(7);  // another slot, same target: same prober
  EXPECT_EQ(again.id, id);
  EXPECT_EQ(pool.created(), 1u);
  FakeProber& other = pool.acquire(3);  // another target: a new one
  EXPECT_NE(other.id, id);
  EXPECT_EQ(other.target, 3u);
  EXPECT_EQ(made_for, (std::vector<std::size_t>{7, 3}));
}

TEST_F(ProberPoolTest, TwoProbesOfOneTargetAtOnceGetTwoProbers) {
  auto pool = pool_with(4);
  FakeProber& a = pool.acquire(1);
  FakeProber& b = pool.acquire(1);
  EXPECT_NE(&a, &b);
  EXPECT_EQ(pool.size(), 2u);
  EXPECT_EQ(pool.idle(), 0u);
  pool.release(b);
  pool.release(a);
  EXPECT_EQ(pool.idle(), 2u);
  // The one given back last comes first.
  EXPECT_EQ(&pool.acquire(1), &a);
}

TEST_F(ProberPoolTest, SpareIdleProbersAreBoundedAndTheLongestIdleGoesFirst) {
  auto pool = pool_with(1);
  FakeProber& a0 = pool.acquire(0);
  FakeProber& a1 = pool.acquire(0);
  FakeProber& a2 = pool.acquire(0);
  FakeProber& b = pool.acquire(1);
  EXPECT_EQ(alive, 4);
  pool.release(a0);  // target 0's one idle prober
  pool.release(a1);  // one spare: within the bound
  EXPECT_EQ(alive, 4);
  pool.release(a2);  // two spares > 1: a0, idle longest, goes
  EXPECT_EQ(alive, 3);
  EXPECT_EQ(pool.idle(), 2u);
  EXPECT_EQ(pool.spare(), 1u);
  pool.release(b);  // target 1's one idle prober: not a spare, kept
  EXPECT_EQ(alive, 3);
  EXPECT_EQ(pool.spare(), 1u);
  EXPECT_EQ(&pool.acquire(0), &a2);  // the one given back last
  EXPECT_EQ(&pool.acquire(0), &a1);
  EXPECT_EQ(pool.created(), 4u);
  pool.acquire(0);  // a0 was dropped: a new prober
  EXPECT_EQ(pool.created(), 5u);
}

TEST_F(ProberPoolTest, EveryTargetKeepsItsWarmProberWhateverTheBound) {
  auto pool = pool_with(0);
  for (std::size_t t = 0; t < 10; ++t) pool.release(pool.acquire(t));
  EXPECT_EQ(alive, 10);
  EXPECT_EQ(pool.spare(), 0u);
  for (std::size_t t = 0; t < 10; ++t) pool.release(pool.acquire(t));
  EXPECT_EQ(pool.created(), 10u);  // each target's next probe found its prober
}

TEST_F(ProberPoolTest, BusyProbersAreNeverDroppedAndCancelReachesOnlyThem) {
  auto pool = pool_with(0);
  FakeProber& busy = pool.acquire(0);
  FakeProber& first = pool.acquire(1);
  FakeProber& second = pool.acquire(1);
  pool.release(first);
  pool.release(second);  // two idle for target 1, max_idle 0: the one idle longer (first) goes
  EXPECT_EQ(alive, 2);
  pool.cancel_busy();
  EXPECT_EQ(busy.canceled, 1);
  EXPECT_EQ(second.canceled, 0);  // idle: not canceled
  pool.release(busy);
  EXPECT_EQ(alive, 2);
}

TEST_F(ProberPoolTest, AdoptedProbersAreIdleAndServeTheFirstProbe) {
  auto pool = pool_with(0);
  for (std::size_t t = 0; t < 5; ++t)
    pool.adopt(t, std::make_unique<FakeProber>(t, 100 + static_cast<int>(t), &alive));
  pool.adopt(4, std::make_unique<FakeProber>(4, 200, &alive));  // a spare: dropped
  EXPECT_EQ(alive, 5);
  EXPECT_EQ(pool.acquire(4).id, 200);  // the one adopted last (the first went)
  EXPECT_EQ(pool.acquire(0).id, 100);
  EXPECT_EQ(pool.acquire(0).id, 0);  // a second probe of 0 at once: from the factory
}

TEST_F(ProberPoolTest, ReleasingTwiceOrAStrangerIsALogicError) {
  auto pool = pool_with(2);
  FakeProber& a = pool.acquire(0);
  pool.release(a);
  EXPECT_THROW(pool.release(a), std::logic_error);
  FakeProber stranger(0, -1, &alive);
  EXPECT_THROW(pool.release(stranger), std::logic_error);
}

// The bound that `run` relies on: with C slots driving a shuffled plan over
// T targets, never more than C busy + one idle per target + max_idle spares.
TEST_F(ProberPoolTest, ProbersStayWithinSlotsTargetsAndSpares) {
  constexpr std::size_t kSlots = 50, kTargets = 1000;
  auto pool = pool_with(kSlots);
  std::mt19937 rng(7);
  std::vector<FakeProber*> in_flight;
  std::size_t most = 0;
  for (int step = 0; step < 40000; ++step) {
    if (in_flight.size() < kSlots && (in_flight.empty() || rng() % 2)) {
      in_flight.push_back(&pool.acquire(rng() % kTargets));
    } else {
      const std::size_t i = rng() % in_flight.size();
      pool.release(*in_flight[i]);
      in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(i));
    }
    most = std::max(most, pool.size());
    ASSERT_EQ(static_cast<std::size_t>(alive), pool.size());
    ASSERT_LE(pool.spare(), kSlots);
  }
  EXPECT_LE(most, kSlots + kTargets + kSlots);
  EXPECT_GT(most, kTargets);  // every target's prober was kept
}

}  // namespace
}  // namespace lse::probe
