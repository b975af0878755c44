// probe::Trace: each event's kinds from the dialect's meaning, a restart
// for a retried attempt, and the cap past which events are only counted.
#include "probe/trace.hpp"

#include <gtest/gtest.h>

namespace lse::probe {
namespace {

TEST(Trace, RecordsKindsBytesAndArrival) {
  Trace t;
  const TimePoint start = Clock::now();
  t.restart(start);
  api::EventMeaning content;
  content.content = true;
  content.text_bytes = 5;
  content.finish_reason = "stop";
  api::EventMeaning usage;
  usage.usage = api::Usage{};
  usage.done = true;
  t.record(start + std::chrono::milliseconds(150), 120, content);
  t.record(start + std::chrono::milliseconds(151), 80, usage);
  t.record(start + std::chrono::milliseconds(152), 10, api::EventMeaning{});
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.events[0].arrival - t.start, std::chrono::milliseconds(150));
  EXPECT_EQ(t.events[0].bytes, 120u);
  EXPECT_EQ(t.events[0].text_bytes, 5u);
  EXPECT_EQ(event_kind_names(t.events[0].kinds), "content+finish");
  EXPECT_EQ(event_kind_names(t.events[1].kinds), "usage+done");
  EXPECT_EQ(event_kind_names(t.events[2].kinds), "other");
  t.restart(start + std::chrono::seconds(1));  // a retry starts the clock again
  EXPECT_TRUE(t.events.empty());
  EXPECT_EQ(t.start, start + std::chrono::seconds(1));
}

TEST(Trace, KeepsAtMostTheCapAndCountsTheRest) {
  Trace t;
  t.restart(Clock::now());
  api::EventMeaning m;
  m.content = true;
  for (std::size_t i = 0; i < Trace::kMaxEvents + 3; ++i) t.record(t.start, 1, m);
  EXPECT_EQ(t.events.size(), Trace::kMaxEvents);
  EXPECT_EQ(t.dropped, 3u);
}

}  // namespace
}  // namespace lse::probe
