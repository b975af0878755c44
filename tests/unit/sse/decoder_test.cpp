// Tests for sse/decoder: the WHATWG event-stream rules, feed-boundary
// independence, limits and allocation behaviour.
#include "sse/decoder.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace std::string_literals;

namespace lse::sse {
namespace {

struct Decoded {
  std::vector<Event> events;
  Status status = Status::ok;
  std::uint64_t comments = 0;
  bool partial = false;
};

bool operator==(const Decoded& a, const Decoded& b) {
  if (a.events.size() != b.events.size()) return false;
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const Event& x = a.events[i];
    const Event& y = b.events[i];
    if (x.type != y.type || x.data != y.data || x.id != y.id || x.retry != y.retry) return false;
  }
  return a.status == b.status && a.comments == b.comments && a.partial == b.partial;
}

std::ostream& operator<<(std::ostream& os, const Decoded& d) {
  os << "status=" << static_cast<int>(d.status) << " comments=" << d.comments
     << " partial=" << d.partial << " events=" << d.events.size();
  for (const Event& e : d.events) {
    os << "\n  {type='" << e.type << "' data='" << e.data << "' id='" << e.id
       << "' retry=" << (e.retry ? std::to_string(*e.retry) : "-") << "}";
  }
  return os;
}

Decoded decode_pieces(const std::vector<std::string_view>& pieces,
                      std::size_t max_event_bytes = 1 << 20) {
  Decoder dec(max_event_bytes);
  Decoded out;
  for (std::string_view piece : pieces) {
    out.status = dec.feed(piece, [&](const Event& e) { out.events.push_back(e); });
  }
  out.status = dec.status();
  out.comments = dec.comments();
  out.partial = dec.has_partial_event();
  return out;
}

Decoded decode(std::string_view bytes, std::size_t max_event_bytes = 1 << 20) {
  return decode_pieces({bytes}, max_event_bytes);
}

Decoded decode_bytewise(std::string_view bytes, std::size_t max_event_bytes = 1 << 20) {
  std::vector<std::string_view> pieces;
  for (std::size_t i = 0; i < bytes.size(); ++i) pieces.push_back(bytes.substr(i, 1));
  return decode_pieces(pieces, max_event_bytes);
}

// Asserts that feeding `bytes` in one piece, in every two-piece split, every
// three-piece split (for short inputs) and byte by byte all decode the same.
void expect_split_invariant(std::string_view bytes, std::size_t max_event_bytes = 1 << 20) {
  const Decoded whole = decode(bytes, max_event_bytes);
  for (std::size_t i = 0; i <= bytes.size(); ++i) {
    ASSERT_EQ(decode_pieces({bytes.substr(0, i), bytes.substr(i)}, max_event_bytes), whole)
        << "split at " << i;
  }
  if (bytes.size() <= 160) {
    for (std::size_t i = 0; i <= bytes.size(); ++i) {
      for (std::size_t j = i; j <= bytes.size(); ++j) {
        ASSERT_EQ(decode_pieces({bytes.substr(0, i), bytes.substr(i, j - i), bytes.substr(j)},
                                max_event_bytes),
                  whole)
            << "split at " << i << "," << j;
      }
    }
  }
  ASSERT_EQ(decode_bytewise(bytes, max_event_bytes), whole);
}

TEST(SseDecoder, SingleEvent) {
  const Decoded d = decode("data: hello\n\n");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].data, "hello");
  EXPECT_EQ(d.events[0].type, "");
  EXPECT_EQ(d.events[0].id, "");
  EXPECT_FALSE(d.events[0].retry.has_value());
  EXPECT_EQ(d.status, Status::ok);
  EXPECT_FALSE(d.partial);
}

TEST(SseDecoder, MultipleDataLinesJoinedWithNewline) {
  const Decoded d = decode("data: a\ndata: b\ndata:\ndata: c\n\n");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].data, "a\nb\n\nc");
}

TEST(SseDecoder, OnlyOneLeadingSpaceStripped) {
  const Decoded d = decode("data:x\n\ndata:  two\n\ndata: \n\ndata:\t tab\n\n");
  ASSERT_EQ(d.events.size(), 4u);
  EXPECT_EQ(d.events[0].data, "x");
  EXPECT_EQ(d.events[1].data, " two");
  EXPECT_EQ(d.events[2].data, "");
  EXPECT_EQ(d.events[3].data, "\t tab");
}

TEST(SseDecoder, ValueMayContainColons) {
  const Decoded d = decode("data: {\"a\": \"b:c\"}\n\n");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].data, "{\"a\": \"b:c\"}");
}

TEST(SseDecoder, FieldWithoutColonHasEmptyValue) {
  // "data" alone appends an empty line: the event is dispatched with "".
  const Decoded d = decode("data\n\ndata\ndata\n\n");
  ASSERT_EQ(d.events.size(), 2u);
  EXPECT_EQ(d.events[0].data, "");
  EXPECT_EQ(d.events[1].data, "\n");
}

TEST(SseDecoder, EventWithoutDataIsNotDispatchedButResetsType) {
  const Decoded d = decode("event: ping\n\ndata: x\n\nevent: only\nid: 7\n\n");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].type, "");  // "ping" did not leak into the next event
  EXPECT_EQ(d.events[0].data, "x");
  EXPECT_FALSE(d.partial);
}

TEST(SseDecoder, EventType) {
  const Decoded d = decode("event: error\ndata: {}\n\ndata: 2\n\nevent:x\nevent: y\ndata: 3\n\n");
  ASSERT_EQ(d.events.size(), 3u);
  EXPECT_EQ(d.events[0].type, "error");
  EXPECT_EQ(d.events[1].type, "");
  EXPECT_EQ(d.events[2].type, "y");  // last one wins
}

TEST(SseDecoder, IdIsStickyAndNulIgnored) {
  const std::string in =
      "id: 1\ndata: a\n\n"
      "data: b\n\n"
      "id: 2\0x\ndata: c\n\n"s  // an id containing NUL is ignored
      "id\ndata: d\n\n"         // an empty id resets the last id
      "data: e\nid: 9\n\n";     // set before dispatch of the same event
  const Decoded d = decode(in);
  ASSERT_EQ(d.events.size(), 5u);
  EXPECT_EQ(d.events[0].id, "1");
  EXPECT_EQ(d.events[1].id, "1");
  EXPECT_EQ(d.events[2].id, "1");
  EXPECT_EQ(d.events[3].id, "");
  EXPECT_EQ(d.events[4].id, "9");
  expect_split_invariant(in);
}

TEST(SseDecoder, RetryDigitsOnlyAndPerEvent) {
  const Decoded d = decode(
      "retry: 3000\ndata: a\n\n"
      "data: b\n\n"
      "retry: 12a\ndata: c\n\n"
      "retry: -5\ndata: d\n\n"
      "retry:\ndata: e\n\n"
      "retry: 99999999999999999999999\ndata: f\n\n"
      "retry:7\ndata: g\n\n");
  ASSERT_EQ(d.events.size(), 7u);
  EXPECT_EQ(d.events[0].retry, 3000u);
  EXPECT_FALSE(d.events[1].retry.has_value());
  EXPECT_FALSE(d.events[2].retry.has_value());
  EXPECT_FALSE(d.events[3].retry.has_value());
  EXPECT_FALSE(d.events[4].retry.has_value());
  EXPECT_FALSE(d.events[5].retry.has_value());  // overflow: ignored
  EXPECT_EQ(d.events[6].retry, 7u);
}

TEST(SseDecoder, CommentsCountedAndNotEvents) {
  const Decoded d = decode(": keep-alive\n\n:\n: OPENROUTER PROCESSING\n\ndata: x\n: mid\n\n");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].data, "x");
  EXPECT_EQ(d.comments, 4u);
}

TEST(SseDecoder, UnknownFieldsIgnored) {
  const Decoded d = decode("foo: bar\nDATA: no\ndata : no\n data: no\ndata: yes\nx\n\n");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].data, "yes");
}

TEST(SseDecoder, LineEndingsLfCrCrlfMixed) {
  for (const char* in : {"data: a\n\ndata: b\n\n", "data: a\r\rdata: b\r\r",
                         "data: a\r\n\r\ndata: b\r\n\r\n", "data: a\r\n\rdata: b\n\r\n"}) {
    const Decoded d = decode(in);
    ASSERT_EQ(d.events.size(), 2u) << in;
    EXPECT_EQ(d.events[0].data, "a");
    EXPECT_EQ(d.events[1].data, "b");
    EXPECT_FALSE(d.partial);
    expect_split_invariant(in);
  }
}

TEST(SseDecoder, CrLfIsOneLineEnd) {
  // "\r\n" must not count as two line ends (that would be a blank line and
  // dispatch "a" before "b" is appended).
  const Decoded d = decode("data: a\r\ndata: b\r\n\r\n");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].data, "a\nb");
}

TEST(SseDecoder, CrAtEndOfFeedThenLfIsOneLineEnd) {
  const Decoded d = decode_pieces({"data: a\r", "\ndata: b\r", "\n\r", "\n"});
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].data, "a\nb");
}

TEST(SseDecoder, CrAtEndOfFeedThenOtherByte) {
  const Decoded d = decode_pieces({"data: a\r", "data: b\r", "\r"});
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].data, "a\nb");
}

TEST(SseDecoder, CrThenEmptyFeedThenLf) {
  const Decoded d = decode_pieces({"data: a\r", "", "\n", "data: b\n\n"});
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].data, "a\nb");
}

TEST(SseDecoder, CrOnlyStream) {
  std::string in = ": hi\rid: 1\revent: output\rdata: one\rdata: two\r\r";
  for (int i = 0; i < 50; ++i) in += "data: " + std::to_string(i) + "\r\r";
  const Decoded d = decode(in);
  ASSERT_EQ(d.events.size(), 51u);
  EXPECT_EQ(d.events[0].data, "one\ntwo");
  EXPECT_EQ(d.events[0].type, "output");
  EXPECT_EQ(d.events[50].data, "49");
  EXPECT_EQ(d.events[50].id, "1");
  EXPECT_EQ(d.comments, 1u);
  EXPECT_EQ(decode_bytewise(in), d);
  for (std::size_t i = 0; i <= in.size(); ++i) {
    ASSERT_EQ(decode_pieces({std::string_view(in).substr(0, i), std::string_view(in).substr(i)}),
              d);
  }
}

TEST(SseDecoder, LeadingBomStrippedOnce) {
  const Decoded d = decode(
      "\xEF\xBB\xBF"
      "data: a\n\n\xEF\xBB\xBF"
      "data: b\n\ndata: c\n\n");
  // The second BOM is not at the start of the stream: it is part of the field
  // name "\xEF\xBB\xBFdata", which is unknown, so that event has no data.
  ASSERT_EQ(d.events.size(), 2u);
  EXPECT_EQ(d.events[0].data, "a");
  EXPECT_EQ(d.events[1].data, "c");
}

TEST(SseDecoder, BomSplitAcrossFeeds) {
  const std::string in =
      "\xEF\xBB\xBF"
      "data: a\n\n";
  for (std::size_t i = 0; i <= in.size(); ++i) {
    for (std::size_t j = i; j <= in.size(); ++j) {
      const Decoded d =
          decode_pieces({std::string_view(in).substr(0, i), std::string_view(in).substr(i, j - i),
                         std::string_view(in).substr(j)});
      ASSERT_EQ(d.events.size(), 1u) << i << "," << j;
      EXPECT_EQ(d.events[0].data, "a");
    }
  }
  expect_split_invariant(in);
}

TEST(SseDecoder, PartialBomIsOrdinaryBytes) {
  // "\xEF\xBB" then "data": not a BOM, so the first line's field name starts
  // with those two bytes and is unknown.
  const Decoded d = decode_pieces({"\xEF\xBB", "data: a\n\ndata: b\n\n"});
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].data, "b");
  EXPECT_EQ(decode("\xEF\xBB"
                   "data: a\n\ndata: b\n\n"),
            d);
  expect_split_invariant(
      "\xEF\xBB"
      "data: a\n\ndata: b\n\n");
  // A lone partial BOM at end of stream is pending bytes.
  EXPECT_TRUE(decode("\xEF").partial);
  // A partial BOM followed by a line end: the bytes form a line (unknown field).
  const Decoded e = decode_pieces({"\xEF", "\ndata: z\n\n"});
  ASSERT_EQ(e.events.size(), 1u);
  EXPECT_EQ(e.events[0].data, "z");
}

TEST(SseDecoder, ManyEventsInOneFeed) {
  std::string in;
  for (int i = 0; i < 1000; ++i) {
    in += "data: {\"i\":" + std::to_string(i) + "}\n\n";
    if (i % 100 == 0) in += ": keep-alive\n\n";
  }
  in += "data: [DONE]\n\n";
  const Decoded d = decode(in);
  ASSERT_EQ(d.events.size(), 1001u);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(d.events[i].data, "{\"i\":" + std::to_string(i) + "}");
  }
  EXPECT_EQ(d.events.back().data, "[DONE]");
  EXPECT_EQ(d.comments, 10u);
  EXPECT_EQ(decode_bytewise(in), d);
}

TEST(SseDecoder, SplitAtEveryBoundaryMatchesOnePiece) {
  const std::string in =
      "\xEF\xBB\xBF: hello\n"
      "retry: 10\r\n"
      "id: abc\n"
      "event: message_start\n"
      "data: {\"a\":1}\n"
      "data: second line\r"
      "\n\n"
      "event: dropped\r\n\r\n"
      "data:no-space\r\r"
      "data\n"
      "ignored: x\n"
      "\n"
      "data: [DONE]\r\n"
      "\r\n"
      "data: tail-unterminated";
  const Decoded d = decode(in);
  ASSERT_EQ(d.events.size(), 4u) << d;
  EXPECT_EQ(d.events[0].type, "message_start");
  EXPECT_EQ(d.events[0].data, "{\"a\":1}\nsecond line");
  EXPECT_EQ(d.events[0].id, "abc");
  EXPECT_EQ(d.events[0].retry, 10u);
  EXPECT_EQ(d.events[1].type, "");
  EXPECT_EQ(d.events[1].data, "no-space");
  EXPECT_EQ(d.events[2].data, "");
  EXPECT_EQ(d.events[3].data, "[DONE]");
  EXPECT_EQ(d.comments, 1u);
  EXPECT_TRUE(d.partial);
  expect_split_invariant(in);
}

TEST(SseDecoder, HasPartialEvent) {
  EXPECT_FALSE(decode("").partial);
  EXPECT_FALSE(decode("data: a\n\n").partial);
  EXPECT_TRUE(decode("data: a\n").partial);           // no blank line yet
  EXPECT_TRUE(decode("data: a\n\ndata: b").partial);  // unterminated line
  EXPECT_TRUE(decode("event: x\n").partial);
  EXPECT_FALSE(decode(": comment\n").partial);
  EXPECT_TRUE(decode(": comm").partial);
  EXPECT_FALSE(decode("data: a\r\n\r\n").partial);
}

TEST(SseDecoder, OversizeDataIsStickyAndStopsBuffering) {
  const std::size_t limit = 64;
  Decoder dec(limit);
  std::vector<std::string> got;
  auto sink = [&](const Event& e) { got.push_back(e.data); };
  EXPECT_EQ(dec.feed("data: small\n\n", sink), Status::ok);
  std::string big = "data: " + std::string(40, 'x') + "\n";
  EXPECT_EQ(dec.feed(big, sink), Status::ok);
  EXPECT_EQ(dec.feed(big, sink), Status::event_too_large);  // data + line > 64
  EXPECT_EQ(dec.status(), Status::event_too_large);
  EXPECT_EQ(dec.feed("\ndata: after\n\n", sink), Status::event_too_large);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "small");
  EXPECT_TRUE(dec.has_partial_event());  // the stream stopped inside an event
}

TEST(SseDecoder, OversizeUnterminatedLineStopsBuffering) {
  Decoder dec(100);
  int events = 0;
  auto sink = [&](const Event&) { ++events; };
  Status s = Status::ok;
  // A server that never sends a line end: memory must stay bounded.
  for (int i = 0; i < 1000 && s == Status::ok; ++i) s = dec.feed(std::string(30, 'y'), sink);
  EXPECT_EQ(s, Status::event_too_large);
  EXPECT_EQ(events, 0);
  EXPECT_EQ(dec.feed(std::string(1 << 16, 'y'), sink), Status::event_too_large);
}

TEST(SseDecoder, LimitIsIndependentOfFeedBoundaries) {
  // Exactly at the limit is fine; one byte more is not, however it is fed.
  const std::string ok = "data: 0123456789\n\n";  // 16-byte line, then 11 data bytes
  EXPECT_EQ(decode(ok, 16).status, Status::ok);
  EXPECT_EQ(decode(ok, 15).status, Status::event_too_large);
  const std::string two = "data: 0123456789\ndata: abcdefghij\n\n";
  // Second line (16) + buffered data "0123456789\n" (11) = 27.
  EXPECT_EQ(decode(two, 27).status, Status::ok);
  EXPECT_EQ(decode(two, 26).status, Status::event_too_large);
  for (std::size_t limit : {10u, 15u, 16u, 26u, 27u, 40u}) {
    expect_split_invariant(two, limit);
  }
  // A comment line longer than the limit also trips it (it must be buffered
  // when split), consistently for one-piece feeds.
  EXPECT_EQ(decode(": " + std::string(50, 'c') + "\n", 20).status, Status::event_too_large);
}

TEST(SseDecoder, EventsBeforeOversizeAreDelivered) {
  const std::string in = "data: a\n\ndata: b\n\ndata: " + std::string(100, 'z') + "\n\ndata: c\n\n";
  const Decoded d = decode(in, 50);
  EXPECT_EQ(d.status, Status::event_too_large);
  ASSERT_EQ(d.events.size(), 2u);
  expect_split_invariant(in, 50);
}

TEST(SseDecoder, ResetStartsAFreshStream) {
  Decoder dec(32);
  std::vector<Event> got;
  auto sink = [&](const Event& e) { got.push_back(e); };
  dec.feed("\xEF\xBB\xBFid: 5\n: c\ndata: partial", sink);
  EXPECT_TRUE(dec.has_partial_event());
  dec.feed(std::string(100, 'q'), sink);
  EXPECT_EQ(dec.status(), Status::event_too_large);
  dec.reset();
  EXPECT_EQ(dec.status(), Status::ok);
  EXPECT_EQ(dec.comments(), 0u);
  EXPECT_FALSE(dec.has_partial_event());
  EXPECT_EQ(dec.feed("\xEF\xBB\xBF"
                     "data: x\n\n",
                     sink),
            Status::ok);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, "x");
  EXPECT_EQ(got[0].id, "");  // the last id does not survive a reset
}

TEST(SseDecoder, NoBufferReallocationOnceWarm) {
  // The Event handed to the sink is reused: once its strings have grown to the
  // stream's event size, later events reuse the same storage.
  Decoder dec;
  std::string in;
  for (int i = 0; i < 200; ++i) {
    in += "event: e\ndata: " + std::string(i == 0 ? 300 : 100 + i % 7, 'a') + "\n\n";
  }
  std::vector<const char*> data_ptrs;
  dec.feed(in.substr(0, 1000), [&](const Event& e) { data_ptrs.push_back(e.data.data()); });
  // Split mid-lines afterwards so line_ is exercised as well.
  for (std::size_t pos = 1000; pos < in.size(); pos += 37) {
    dec.feed(std::string_view(in).substr(pos, 37),
             [&](const Event& e) { data_ptrs.push_back(e.data.data()); });
  }
  ASSERT_EQ(data_ptrs.size(), 200u);
  for (std::size_t i = 1; i < data_ptrs.size(); ++i) EXPECT_EQ(data_ptrs[i], data_ptrs[0]) << i;
}

}  // namespace
}  // namespace lse::sse
