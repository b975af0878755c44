// DATA across reads, resets and GOAWAY: what the server's frames do to the
// probe's stream, fed in the pieces a socket could deliver.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <string>
#include <vector>

#include "h2/session.hpp"
#include "peer.hpp"

namespace lse::h2 {
namespace {

using test::exchange;
using test::Peer;

Request post() {
  Request r;
  r.scheme = "https";
  r.authority = "llm.test";
  r.path = "/v1/stream";
  r.body = R"({"stream":true})";
  return r;
}

// A request on stream 1 after the handshake; answer() returns the server's
// bytes for HEADERS and the body in DATA frames of at most `frame` bytes.
struct Fixture {
  Session client;
  Peer server;
  explicit Fixture(std::size_t frame) {
    server.frame_limit = frame;
    client.submit(post());
    exchange(client, server);
  }
  std::string answer(const std::string& body) {
    server.respond(1, 200, {{"content-type", "text/event-stream"}}, body, true);
    return server.drain();
  }
};

TEST(H2Stream, EverySplitPointOfATwoFrameAnswerYieldsTheBytesInOrder) {
  const std::string body = "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n";  // 30 bytes
  const std::size_t wire_size = Fixture(16).answer(body).size();
  ASSERT_GT(wire_size, body.size() + 18);  // HEADERS + 2 DATA frame headers at least
  for (std::size_t cut = 0; cut <= wire_size; ++cut) {
    Fixture f(16);  // 16-byte frames: the body travels in two DATA frames
    const std::string wire = f.answer(body);
    ASSERT_EQ(wire.size(), wire_size);
    std::string got;
    f.client.feed(std::string_view(wire).substr(0, cut));
    f.client.take_data(got);
    EXPECT_EQ(f.client.ended(), cut == wire_size) << cut;
    f.client.feed(std::string_view(wire).substr(cut));
    f.client.take_data(got);
    EXPECT_EQ(got, body) << "cut at " << cut;
    EXPECT_TRUE(f.client.ended()) << cut;
    EXPECT_EQ(f.client.trouble().kind, Break::none) << cut;
  }
}

// One byte per read: a payload byte is available right after the read that
// carried it, never later (the arrival stamp of that read is its stamp).
TEST(H2Stream, OneByteReadsDeliverEachPayloadByteWithItsRead) {
  Fixture f(7);
  const std::string body = "data: x\n\ndata: yy\n\ndata: [DONE]\n\n";
  const std::string wire = f.answer(body);
  std::string got;
  std::size_t delivered_reads = 0;
  for (std::size_t i = 0; i < wire.size(); ++i) {
    EXPECT_FALSE(f.client.ended()) << i;
    f.client.feed(std::string_view(wire).substr(i, 1));
    const std::size_t before = got.size();
    f.client.take_data(got);
    ASSERT_LE(got.size() - before, 1u) << i;
    delivered_reads += got.size() - before;
  }
  EXPECT_EQ(got, body);
  EXPECT_EQ(delivered_reads, body.size());
  EXPECT_TRUE(f.client.ended());
}

TEST(H2Stream, SeveralEventsInOneFrameAndOneEventAcrossManyFrames) {
  std::string events;
  for (int i = 0; i < 20; ++i) events += "data: {\"i\":" + std::to_string(i) + "}\n\n";
  std::string big = "data: ";
  for (int i = 0; i < 50000; ++i) big.push_back(static_cast<char>('a' + i % 26));
  big += "\n\n";
  for (const std::size_t frame : {std::size_t{0}, std::size_t{16384}, std::size_t{100}}) {
    Fixture f(frame);
    const std::string body = events + big;
    f.server.respond(1, 200, {}, body, true);
    exchange(f.client, f.server);
    std::string got;
    for (int round = 0; round < 100 && !f.client.ended(); ++round) {
      f.client.take_data(got);
      exchange(f.client, f.server);
    }
    f.client.take_data(got);
    EXPECT_EQ(got, body) << "frame limit " << frame;
    EXPECT_TRUE(f.client.ended());
  }
}

TEST(H2Stream, TrailersEndTheStreamAndLeaveTheHeadAlone) {
  Fixture f(0);
  f.server.respond(1, 200, {{"content-type", "text/event-stream"}}, "data: a\n\n", false);
  exchange(f.client, f.server);
  std::string name = "x-usage";
  std::string value = "12";
  const std::vector<nghttp2_nv> trailer = {nghttp2_nv{
      reinterpret_cast<std::uint8_t*>(name.data()), reinterpret_cast<std::uint8_t*>(value.data()),
      name.size(), value.size(), NGHTTP2_NV_FLAG_NONE}};
  nghttp2_submit_trailer(f.server.ng(), 1, trailer.data(), trailer.size());
  exchange(f.client, f.server);
  ASSERT_NE(f.client.head(), nullptr);
  EXPECT_EQ(f.client.head()->status, 200);
  ASSERT_EQ(f.client.head()->fields.size(), 1u);
  EXPECT_EQ(f.client.head()->fields[0].name, "content-type");
  EXPECT_TRUE(f.client.ended());
  EXPECT_EQ(f.client.trouble().kind, Break::none);
  std::string got;
  f.client.take_data(got);
  EXPECT_EQ(got, "data: a\n\n");
}

// A reset read one byte at a time: the data before it, then the trouble,
// each right after the read that completed it.
TEST(H2Stream, AResetFedByteByByteArrivesWithItsLastByte) {
  Fixture f(0);
  f.server.respond(1, 200, {}, "data: a\n\n", false);
  std::string wire = f.server.drain();
  const std::size_t answer = wire.size();
  nghttp2_submit_rst_stream(f.server.ng(), NGHTTP2_FLAG_NONE, 1, NGHTTP2_CANCEL);
  wire += f.server.drain();
  ASSERT_EQ(wire.size(), answer + 13);  // RST_STREAM: 9-byte header + 4-byte code
  std::string got;
  for (std::size_t i = 0; i < wire.size(); ++i) {
    f.client.feed(std::string_view(wire).substr(i, 1));
    f.client.take_data(got);
    const bool last = i + 1 == wire.size();
    EXPECT_EQ(f.client.trouble().kind, last ? Break::stream_reset : Break::none) << i;
    if (i + 1 == answer) {
      EXPECT_EQ(got, "data: a\n\n");
    }
  }
  EXPECT_EQ(got, "data: a\n\n");
  EXPECT_EQ(f.client.trouble().error_code, 8u);  // CANCEL
  EXPECT_TRUE(f.client.trouble().by_peer);
}

TEST(H2Stream, ServerResetMidBodyKeepsTheDataBeforeIt) {
  Fixture f(0);
  f.server.respond(1, 200, {}, "data: a\n\n", false);
  exchange(f.client, f.server);
  nghttp2_submit_rst_stream(f.server.ng(), NGHTTP2_FLAG_NONE, 1, NGHTTP2_INTERNAL_ERROR);
  exchange(f.client, f.server);
  std::string got;
  f.client.take_data(got);
  EXPECT_EQ(got, "data: a\n\n");
  const Trouble& t = f.client.trouble();
  EXPECT_EQ(t.kind, Break::stream_reset);
  EXPECT_TRUE(t.by_peer);
  EXPECT_EQ(t.error_code, 2u);
  EXPECT_EQ(error_code_name(t.error_code), "INTERNAL_ERROR");
  EXPECT_EQ(t.detail, "RST_STREAM INTERNAL_ERROR (0x2) from the server");
  EXPECT_FALSE(t.unprocessed);
  EXPECT_FALSE(f.client.ended());
  EXPECT_FALSE(f.client.reusable());
}

TEST(H2Stream, ResetBeforeAnyHeadIsStillTheServers) {
  Fixture f(0);
  nghttp2_submit_rst_stream(f.server.ng(), NGHTTP2_FLAG_NONE, 1, NGHTTP2_REFUSED_STREAM);
  exchange(f.client, f.server);
  EXPECT_EQ(f.client.head(), nullptr);
  EXPECT_EQ(f.client.trouble().kind, Break::stream_reset);
  EXPECT_TRUE(f.client.trouble().by_peer);
  EXPECT_EQ(f.client.trouble().error_code, 7u);
  EXPECT_TRUE(f.client.trouble().unprocessed);  // REFUSED_STREAM: safe to send again
}

TEST(H2Stream, GoawayBelowOurStreamCutsIt) {
  Fixture f(0);
  nghttp2_submit_goaway(f.server.ng(), NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, nullptr, 0);
  exchange(f.client, f.server);
  const Trouble& t = f.client.trouble();
  EXPECT_EQ(t.kind, Break::goaway);
  EXPECT_TRUE(t.by_peer);
  EXPECT_EQ(t.error_code, 0u);
  EXPECT_NE(t.detail.find("last stream 0"), std::string::npos) << t.detail;
  EXPECT_TRUE(t.unprocessed);
  EXPECT_FALSE(f.client.reusable());
}

TEST(H2Stream, GoawayWithAnErrorCodeMidStreamCutsIt) {
  Fixture f(0);
  f.server.respond(1, 200, {}, "data: a\n\n", false);
  exchange(f.client, f.server);
  nghttp2_submit_goaway(f.server.ng(), NGHTTP2_FLAG_NONE, 1, NGHTTP2_ENHANCE_YOUR_CALM, nullptr, 0);
  exchange(f.client, f.server);
  EXPECT_EQ(f.client.trouble().kind, Break::goaway);
  EXPECT_EQ(f.client.trouble().error_code, 0xbu);
  EXPECT_FALSE(f.client.trouble().unprocessed);  // stream 1 <= last_stream_id 1
  std::string got;
  f.client.take_data(got);
  EXPECT_EQ(got, "data: a\n\n");
}

TEST(H2Stream, GracefulGoawayAfterTheAnswerOnlyEndsReuse) {
  Fixture f(0);
  f.server.respond(1, 200, {}, "done", true);
  exchange(f.client, f.server);
  ASSERT_TRUE(f.client.reusable());
  nghttp2_submit_goaway(f.server.ng(), NGHTTP2_FLAG_NONE, 1, NGHTTP2_NO_ERROR, nullptr, 0);
  exchange(f.client, f.server);
  EXPECT_EQ(f.client.trouble().kind, Break::none);
  EXPECT_TRUE(f.client.ended());
  EXPECT_FALSE(f.client.reusable());
}

TEST(H2Stream, GracefulGoawayAboveOurStreamLetsItFinish) {
  Fixture f(0);
  f.server.respond(1, 200, {}, "part ", false);
  exchange(f.client, f.server);
  nghttp2_submit_goaway(f.server.ng(), NGHTTP2_FLAG_NONE, 1, NGHTTP2_NO_ERROR, nullptr, 0);
  exchange(f.client, f.server);
  EXPECT_EQ(f.client.trouble().kind, Break::none);
  EXPECT_FALSE(f.client.reusable());
  f.server.push(1, "rest", true);
  exchange(f.client, f.server);
  std::string got;
  f.client.take_data(got);
  EXPECT_EQ(got, "part rest");
  EXPECT_TRUE(f.client.ended());
  EXPECT_EQ(f.client.trouble().kind, Break::none);
}

TEST(H2Stream, ContentLengthMismatchIsOurResetForAMalformedAnswer) {
  Fixture f(0);
  f.server.respond(1, 200, {{"content-length", "5"}}, "0123456789", true);
  exchange(f.client, f.server);
  const Trouble& t = f.client.trouble();
  EXPECT_EQ(t.kind, Break::stream_reset);
  EXPECT_FALSE(t.by_peer);
  EXPECT_EQ(t.error_code, 1u);  // PROTOCOL_ERROR
  EXPECT_NE(t.detail.find("malformed response"), std::string::npos) << t.detail;
  ASSERT_EQ(f.server.resets.size(), 1u);
  EXPECT_EQ(f.server.resets[0].second, 1u);
  EXPECT_FALSE(f.client.ended());
}

// Three digits pass nghttp2's check, but 051 is no HTTP status.
TEST(H2Stream, AStatusBelow100IsMalformed) {
  Fixture f(0);
  f.server.respond(1, 51, {}, "body", true);
  exchange(f.client, f.server);
  EXPECT_EQ(f.client.head(), nullptr);
  EXPECT_FALSE(f.client.has_data());
  EXPECT_FALSE(f.client.ended());
  const Trouble& t = f.client.trouble();
  EXPECT_EQ(t.kind, Break::stream_reset);
  EXPECT_FALSE(t.by_peer);
  EXPECT_EQ(t.error_code, 1u);
  EXPECT_NE(t.detail.find("status 051"), std::string::npos) << t.detail;
}

TEST(H2Stream, HeaderListOverTheLimitIsResetByUs) {
  Settings small;
  small.max_header_bytes = 300;
  Session client(small);
  Peer server;
  client.submit(post());
  exchange(client, server);
  server.respond(1, 200, {{"x-big", std::string(400, 'v')}}, "body", true);
  exchange(client, server);
  const Trouble& t = client.trouble();
  EXPECT_EQ(t.kind, Break::stream_reset);
  EXPECT_FALSE(t.by_peer);
  EXPECT_NE(t.detail.find("over 300 bytes"), std::string::npos) << t.detail;
  EXPECT_EQ(client.head(), nullptr);
  EXPECT_FALSE(client.has_data());  // the DATA after the rejected head is dropped
  EXPECT_FALSE(client.ended());
  ASSERT_EQ(server.resets.size(), 1u);
  EXPECT_EQ(server.resets[0].second, t.error_code);
  // The value itself never reaches the detail.
  EXPECT_EQ(t.detail.find("vvvv"), std::string::npos);
}

}  // namespace
}  // namespace lse::h2
