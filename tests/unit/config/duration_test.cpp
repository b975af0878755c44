// parse_duration / format_duration: the duration grammar of the config.
#include <gtest/gtest.h>

#include "config/config.hpp"

namespace lse::config {
namespace {

using namespace std::chrono_literals;

TEST(ParseDuration, AcceptsUnitsFractionsAndCompounds) {
  EXPECT_EQ(parse_duration("250ms"), Duration(250ms));
  EXPECT_EQ(parse_duration("1.5s"), Duration(1500ms));
  EXPECT_EQ(parse_duration("2m"), Duration(120s));
  EXPECT_EQ(parse_duration("1h"), Duration(3600s));
  EXPECT_EQ(parse_duration("500us"), Duration(500us));
  EXPECT_EQ(parse_duration("500\xC2\xB5s"), Duration(500us));
  EXPECT_EQ(parse_duration("10ns"), Duration(10ns));
  EXPECT_EQ(parse_duration("1m30s"), Duration(90s));
  EXPECT_EQ(parse_duration("1h2m3s4ms"), Duration(1h + 2min + 3s + 4ms));
  EXPECT_EQ(parse_duration("0.1s"), Duration(100ms));
  EXPECT_EQ(parse_duration(".5s"), Duration(500ms));
  EXPECT_EQ(parse_duration("1d"), Duration(24h));
  EXPECT_EQ(parse_duration("0s"), Duration(0));
  EXPECT_EQ(parse_duration("1.0000000001s"), Duration(1s));  // below 1ns: rounded away
}

TEST(ParseDuration, RejectsBareNumbersAndGarbage) {
  for (const char* bad : {"",        "60",    "1.5",  "abc",   "s",
                          "ms",      "1 s",   " 1s",  "1s ",   "-1s",
                          "+1s",     "1x",    "1sec", "30s1m", "1s1s",
                          "1ms1s",   "1..5s", "1e3s", "1m30",  "99999999999999999999s",
                          "3000000h"}) {
    EXPECT_EQ(parse_duration(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(FormatDuration, ShortestFormThatParsesBack) {
  EXPECT_EQ(format_duration(0s), "0s");
  EXPECT_EQ(format_duration(250ms), "250ms");
  EXPECT_EQ(format_duration(1500ms), "1.5s");
  EXPECT_EQ(format_duration(60s), "1m");
  EXPECT_EQ(format_duration(90s), "1m30s");
  EXPECT_EQ(format_duration(3h), "3h");
  EXPECT_EQ(format_duration(1h + 500ms), "1h0.5s");
  EXPECT_EQ(format_duration(500us), "500us");
  EXPECT_EQ(format_duration(1500us), "1.5ms");
  EXPECT_EQ(format_duration(7ns), "7ns");
  for (Duration d : {Duration(1), Duration(999), Duration(1234567), Duration(61s + 1ns),
                     Duration(25h), Duration(100ms), Duration(180s)}) {
    EXPECT_EQ(parse_duration(format_duration(d)), d) << format_duration(d);
  }
}

}  // namespace
}  // namespace lse::config
