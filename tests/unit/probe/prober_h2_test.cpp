// The prober over prior-knowledge h2c against a peer that writes raw HTTP/2
// frames: a stream the server resets (RST_STREAM, or a GOAWAY that leaves it
// out) is `reset` with the RFC 9113 name of its code in the row and the
// chunks before it counted; a clean answer with a planted pause is one stall
// of the pause's length, as over HTTP/1.1; the row says the answer spoke "2".
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "../http/h2_peer.hpp"
#include "probe_harness.hpp"

namespace {

using lse::probe::FailureReason;
using lse::test::expect_gap_between_writes;
using lse::test::PeerConn;
using lse::test::probe;
using lse::test::ScriptedPeer;
using lse::test::target_for;
using namespace std::chrono_literals;

using lse::test::h2frame::frame;
using lse::test::h2frame::kData;
using lse::test::h2frame::kEndHeaders;
using lse::test::h2frame::kEndStream;
using lse::test::h2frame::kGoaway;
using lse::test::h2frame::kHeaders;
using lse::test::h2frame::kRstStream;
using lse::test::h2frame::kSettings;

// HPACK: ":status: 200" (static index 8), then content-type (static index
// 31) literal without indexing: text/event-stream.
std::string stream_head() {
  const std::string type = "text/event-stream";
  std::string block = "\x88";
  block += "\x0f\x10";
  block += static_cast<char>(type.size());
  return block + type;
}

std::string content_event(int i) {
  return "data: {\"choices\":[{\"delta\":{\"content\":\"w" + std::to_string(i) + "\"}}]}\n\n";
}

TEST(ProberHttp2, AStreamResetMidAnswerIsResetWithItsCode) {
  ScriptedPeer peer([](PeerConn& c) {
    PeerConn::pause(50ms);  // the client's preface and request come first
    c.send(frame(kSettings, 0, 0, ""));
    c.send(frame(kHeaders, kEndHeaders, 1, stream_head()));
    c.send(frame(kData, 0, 1, content_event(1)));
    c.send(frame(kData, 0, 1, content_event(2)));
    c.send(frame(kRstStream, 0, 1, std::string("\0\0\0\x02", 4)));  // INTERNAL_ERROR
    c.hang();
  });
  lse::config::Target t = target_for(peer.url("http"));
  t.http_version = lse::config::HttpVersion::v2;  // prior-knowledge h2c
  const auto p = probe(t);
  EXPECT_FALSE(p.result.ok);
  EXPECT_EQ(lse::probe::to_string(p.result.reason), "reset") << p.result.error_detail;
  EXPECT_EQ(p.result.h2_error, "INTERNAL_ERROR") << p.result.error_detail;
  EXPECT_EQ(p.result.http_version, "2");
  EXPECT_EQ(p.result.http_status, 200);
  EXPECT_EQ(p.result.chunks, 2u);
  EXPECT_FALSE(p.result.error_detail.empty());
}

// The server's GOAWAY that leaves our stream out (last stream id 0) after a
// content chunk: `reset`, with the GOAWAY's code.
TEST(ProberHttp2, AGoawayThatCutsTheStreamIsResetWithItsCode) {
  ScriptedPeer peer([](PeerConn& c) {
    PeerConn::pause(50ms);
    c.send(frame(kSettings, 0, 0, ""));
    c.send(frame(kHeaders, kEndHeaders, 1, stream_head()));
    c.send(frame(kData, 0, 1, content_event(1)));
    // last stream id 0, ENHANCE_YOUR_CALM (0xb)
    c.send(frame(kGoaway, 0, 0, std::string("\0\0\0\0\0\0\0\x0b", 8)));
    c.hang();
  });
  lse::config::Target t = target_for(peer.url("http"));
  t.http_version = lse::config::HttpVersion::v2;
  const auto p = probe(t);
  EXPECT_EQ(lse::probe::to_string(p.result.reason), "reset") << p.result.error_detail;
  EXPECT_EQ(p.result.h2_error, "ENHANCE_YOUR_CALM") << p.result.error_detail;
  EXPECT_EQ(p.result.chunks, 1u);
}

// A clean h2 answer with a planted pause: the same clock as HTTP/1.1, one
// stall of the pause's length, and the row says "2" with no h2_error.
TEST(ProberHttp2, APlantedPauseOverH2IsExactlyOneStall) {
  ScriptedPeer peer([](PeerConn& c) {
    PeerConn::pause(50ms);
    c.send(frame(kSettings, 0, 0, ""));
    c.send(frame(kHeaders, kEndHeaders, 1, stream_head()));
    for (int i = 1; i <= 3; ++i) c.send(frame(kData, 0, 1, content_event(i)));
    PeerConn::pause(400ms);
    for (int i = 4; i <= 6; ++i) c.send(frame(kData, 0, 1, content_event(i)));
    c.send(frame(kData, kEndStream, 1,
                 "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                 "data: [DONE]\n\n"));
    c.hang();
  });
  lse::config::Target t = target_for(peer.url("http"));
  t.http_version = lse::config::HttpVersion::v2;
  const auto p = probe(t);
  EXPECT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(p.result.http_version, "2");
  EXPECT_EQ(p.result.h2_error, "");
  EXPECT_EQ(p.result.chunks, 6u);
  EXPECT_EQ(p.result.stalls, 1u);
  ASSERT_EQ(p.result.gaps.size(), 5u);
  // Writes: 0 SETTINGS, 1 HEADERS, 2 + i content i: the 400 ms pause is
  // between writes 4 and 5, measured against what the peer really did.
  expect_gap_between_writes(p.result.gaps[2], peer, 4, 5, 0.030);
  EXPECT_GE(p.result.gaps[2], 0.400 - 0.001);
  ASSERT_TRUE(p.result.gap_max);
  EXPECT_EQ(*p.result.gap_max, p.result.gaps[2]);
}

// Over HTTP/1.1 nothing HTTP/2 reaches the row: a cut stream is truncated,
// h2_error stays empty.
TEST(ProberHttp2, AnHttp11CutHasNoH2Error) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    c.send_content(1);
    c.close();
  });
  const auto p = probe(target_for(peer.url("http")));
  EXPECT_EQ(lse::probe::to_string(p.result.reason), "truncated") << p.result.error_detail;
  EXPECT_EQ(p.result.h2_error, "");
  EXPECT_EQ(p.result.http_version, "1.1");
}

}  // namespace
