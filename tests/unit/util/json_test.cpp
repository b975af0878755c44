// Tests for util/json: member access, deep merge and the RFC 8259 writer.
#include "util/json.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace lse::json {
namespace {

TEST(JsonValue, FindSetErase) {
  Value v{Object{}};
  EXPECT_EQ(v.find("a"), nullptr);
  v.set("a", 1);
  v.set("b", "x");
  ASSERT_NE(v.find("a"), nullptr);
  EXPECT_EQ(std::get<std::int64_t>(v.find("a")->v), 1);
  v.set("a", true);  // replaced in place: order kept
  EXPECT_EQ(dump(v), R"({"a":true,"b":"x"})");
  EXPECT_TRUE(v.erase("a"));
  EXPECT_FALSE(v.erase("a"));
  EXPECT_EQ(dump(v), R"({"b":"x"})");

  Value* b = v.find("b");
  ASSERT_NE(b, nullptr);
  *b = Value(2.5);
  EXPECT_EQ(dump(v), R"({"b":2.5})");
}

TEST(JsonValue, FindOnNonObjectIsNull) {
  const Value arr{Array{1, 2}};
  EXPECT_EQ(arr.find("a"), nullptr);
  Value s{"str"};
  EXPECT_EQ(s.find("a"), nullptr);
  EXPECT_FALSE(s.erase("a"));
}

TEST(JsonValue, SetOnNullMakesObject) {
  Value v;
  v.set("k", nullptr);
  EXPECT_TRUE(v.is_object());
  EXPECT_EQ(dump(v), R"({"k":null})");
}

TEST(JsonValue, SetOnScalarThrows) {
  Value v{3};
  EXPECT_THROW(v.set("k", 1), std::logic_error);
}

TEST(JsonMerge, DeepMergeKeepsOrderAndOverlayWins) {
  Value base{Object{{"model", "m"}, {"stream_options", Object{{"include_usage", true}}}, {"n", 1}}};
  Value overlay{Object{{"stream_options", Object{{"continuous_usage_stats", true}}},
                       {"n", "two"},
                       {"extra", Array{1, 2}}}};
  merge(base, overlay);
  EXPECT_EQ(dump(base), R"({"model":"m","stream_options":{"include_usage":true,)"
                        R"("continuous_usage_stats":true},"n":"two","extra":[1,2]})");
}

TEST(JsonMerge, NonObjectsAreReplaced) {
  Value base{Object{{"a", Object{{"x", 1}}}, {"b", Array{1}}}};
  merge(base, Value{Object{{"a", 5}, {"b", Array{2, 3}}}});
  EXPECT_EQ(dump(base), R"({"a":5,"b":[2,3]})");

  Value scalar{1};
  merge(scalar, Value{Object{{"k", 1}}});
  EXPECT_EQ(dump(scalar), R"({"k":1})");

  Value obj{Object{{"k", 1}}};
  merge(obj, Value{nullptr});
  EXPECT_EQ(dump(obj), "null");
}

TEST(JsonMerge, OverlayNullMemberReplaces) {
  Value base{Object{{"stream_options", Object{{"include_usage", true}}}}};
  merge(base, Value{Object{{"stream_options", nullptr}}});
  EXPECT_EQ(dump(base), R"({"stream_options":null})");
}

TEST(JsonMerge, SelfMergeIsNoop) {
  Value v{Object{{"a", 1}}};
  merge(v, v);
  EXPECT_EQ(dump(v), R"({"a":1})");
}

TEST(JsonDump, Scalars) {
  EXPECT_EQ(dump(Value{}), "null");
  EXPECT_EQ(dump(Value{true}), "true");
  EXPECT_EQ(dump(Value{false}), "false");
  EXPECT_EQ(dump(Value{0}), "0");
  EXPECT_EQ(dump(Value{-42}), "-42");
  EXPECT_EQ(dump(Value{std::numeric_limits<std::int64_t>::max()}), "9223372036854775807");
  EXPECT_EQ(dump(Value{std::numeric_limits<std::int64_t>::min()}), "-9223372036854775808");
  EXPECT_EQ(dump(Value{Array{}}), "[]");
  EXPECT_EQ(dump(Value{Object{}}), "{}");
}

TEST(JsonDump, DoublesShortestRoundTrip) {
  EXPECT_EQ(dump(Value{0.1}), "0.1");
  EXPECT_EQ(dump(Value{0.7}), "0.7");
  EXPECT_EQ(dump(Value{1.5}), "1.5");
  EXPECT_EQ(dump(Value{-2.25}), "-2.25");
  EXPECT_EQ(dump(Value{1.0}), "1.0");  // stays a float when read back
  EXPECT_EQ(dump(Value{0.0}), "0.0");
  EXPECT_EQ(dump(Value{1e300}), "1e+300");
  EXPECT_EQ(dump(Value{5e-324}), "5e-324");
  // Every double survives dump + strtod.
  for (double d : {0.1 + 0.2, 1.0 / 3, 123456.789, 2.5e-8, 9007199254740993.0}) {
    const std::string s = dump(Value{d});
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), d) << s;
  }
}

TEST(JsonDump, NonFiniteDoublesBecomeNull) {
  EXPECT_EQ(dump(Value{std::numeric_limits<double>::infinity()}), "null");
  EXPECT_EQ(dump(Value{-std::numeric_limits<double>::infinity()}), "null");
  EXPECT_EQ(dump(Value{std::nan("")}), "null");
}

TEST(JsonDump, StringEscaping) {
  EXPECT_EQ(dump(Value{"plain"}), R"("plain")");
  EXPECT_EQ(dump(Value{"q\"b\\s/"}), R"("q\"b\\s/")");
  EXPECT_EQ(dump(Value{"\b\f\n\r\t"}), R"("\b\f\n\r\t")");
  EXPECT_EQ(dump(Value{std::string("\x00\x01\x1f\x7f", 4)}), "\"\\u0000\\u0001\\u001f\x7f\"");
  EXPECT_EQ(dump(Value{"\x0b\x1b"}), R"("\u000b\u001b")");
  // UTF-8 passes through untouched.
  EXPECT_EQ(dump(Value{"h\xC3\xA9llo \xE2\x9C\x93"}), "\"h\xC3\xA9llo \xE2\x9C\x93\"");
  EXPECT_EQ(dump(Value{""}), R"("")");
}

TEST(JsonDump, AllControlCharactersEscaped) {
  for (int c = 0; c < 0x20; ++c) {
    const std::string out = dump(Value{std::string(1, static_cast<char>(c))});
    for (char o : out) EXPECT_GE(static_cast<unsigned char>(o), 0x20) << c;
    EXPECT_EQ(out.front(), '"');
    EXPECT_EQ(out.back(), '"');
  }
}

TEST(JsonDump, KeysAreEscaped) {
  Value v{Object{{"a\"b\n", 1}}};
  EXPECT_EQ(dump(v), R"({"a\"b\n":1})");
}

TEST(JsonDump, NestedAndAppend) {
  Value v{Object{{"a", Array{1, 2.5, "x", nullptr, Object{{"b", false}}}}}};
  std::string out = "prefix:";
  dump_to(out, v);
  EXPECT_EQ(out, R"(prefix:{"a":[1,2.5,"x",null,{"b":false}]})");
  std::string q;
  append_quoted(q, "a\tb");
  EXPECT_EQ(q, R"("a\tb")");
}

}  // namespace
}  // namespace lse::json
