// Session against a real nghttp2 server session (peer.hpp): the request on
// the wire, DATA across reads, resets, GOAWAY, both directions of flow
// control, PING/SETTINGS acknowledgements, garbage, and reuse.
#include "h2/session.hpp"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <string>
#include <vector>

#include "peer.hpp"

namespace lse::h2 {
namespace {

using test::exchange;
using test::field;
using test::Peer;

Request post(std::string body) {
  Request r;
  r.scheme = "https";
  r.authority = "api.example.test:8443";
  r.path = "/v1/chat/completions?stream=1";
  r.fields = {{"Content-Type", "application/json"},
              {"Authorization", "Bearer sk-test"},
              {"Connection", "keep-alive"},
              {"Keep-Alive", "timeout=5"},
              {"Transfer-Encoding", "chunked"},
              {"Host", "api.example.test"},
              {"Upgrade", "h2c"},
              {"Proxy-Connection", "keep-alive"},
              {"TE", "gzip"},
              {"Content-Length", "999"},
              {"Accept", "text/event-stream"}};
  r.body = std::move(body);
  return r;
}

// A connected pair whose handshake (SETTINGS both ways, ACKs) is done and
// whose request reached the peer.
struct Pair {
  explicit Pair(Settings settings = {}, const std::vector<nghttp2_settings_entry>& peer = {})
      : client(settings), server(peer) {}
  void open(const Request& request) {
    client.submit(request);
    exchange(client, server);
  }
  std::string take() {
    std::string out;
    client.take_data(out);
    return out;
  }
  Session client;
  Peer server;
};

TEST(H2Session, RequestCarriesPseudoHeadersLowerCaseFieldsAndContentLength) {
  Pair p;
  const std::string body = R"({"model":"m","stream":true,"messages":[]})";
  p.open(post(body));
  ASSERT_EQ(p.client.stream_id(), 1);
  ASSERT_EQ(p.server.streams.count(1), 1u);
  const Peer::Stream& got = p.server.streams[1];
  EXPECT_EQ(field(got.fields, ":method"), "POST");
  EXPECT_EQ(field(got.fields, ":scheme"), "https");
  EXPECT_EQ(field(got.fields, ":authority"), "api.example.test:8443");
  EXPECT_EQ(field(got.fields, ":path"), "/v1/chat/completions?stream=1");
  EXPECT_EQ(field(got.fields, "content-type"), "application/json");
  EXPECT_EQ(field(got.fields, "authorization"), "Bearer sk-test");
  EXPECT_EQ(field(got.fields, "accept"), "text/event-stream");
  EXPECT_EQ(field(got.fields, "content-length"), std::to_string(body.size()));
  for (const char* gone : {"connection", "keep-alive", "transfer-encoding", "host", "upgrade",
                           "proxy-connection", "te"}) {
    EXPECT_EQ(field(got.fields, gone), "<absent>") << gone;
  }
  int lengths = 0;
  for (const Field& f : got.fields) lengths += f.name == "content-length" ? 1 : 0;
  EXPECT_EQ(lengths, 1);
  EXPECT_EQ(got.body, body);
  EXPECT_TRUE(got.request_ended);
  EXPECT_TRUE(p.client.request_sent());
  EXPECT_FALSE(p.client.window_blocked());
}

TEST(H2Session, TeTrailersIsKeptAndEmptyPostSaysZero) {
  Pair p;
  Request r = post("");
  r.fields = {{"TE", "trailers"}};
  p.open(r);
  const Peer::Stream& got = p.server.streams[1];
  EXPECT_EQ(field(got.fields, "te"), "trailers");
  EXPECT_EQ(field(got.fields, "content-length"), "0");
  EXPECT_TRUE(got.request_ended);
  EXPECT_TRUE(p.client.request_sent());
}

TEST(H2Session, RequestSentOnlyAfterTheEndStreamBytesWereWritten) {
  Session client;
  client.submit(post("{}"));
  const std::string_view out = client.output();
  ASSERT_GT(out.size(), 10u);
  EXPECT_FALSE(client.request_sent());
  client.wrote(out.size() - 1);
  EXPECT_FALSE(client.request_sent());
  client.wrote(1);
  EXPECT_TRUE(client.request_sent());
}

TEST(H2Session, HeadAndBodyEndWithEndStream) {
  Pair p;
  p.open(post("{}"));
  p.server.respond(1, 200, {{"content-type", "text/event-stream"}}, "data: a\n\n", false);
  exchange(p.client, p.server);
  ASSERT_NE(p.client.head(), nullptr);
  EXPECT_EQ(p.client.head()->status, 200);
  EXPECT_EQ(field(p.client.head()->fields, "content-type"), "text/event-stream");
  EXPECT_EQ(p.take(), "data: a\n\n");
  EXPECT_FALSE(p.client.ended());
  p.server.push(1, "data: b\n\ndata: [DONE]\n\n", true);
  exchange(p.client, p.server);
  EXPECT_TRUE(p.client.ended());
  EXPECT_EQ(p.take(), "data: b\n\ndata: [DONE]\n\n");
  EXPECT_EQ(p.client.trouble().kind, Break::none);
  EXPECT_TRUE(p.client.reusable());
}

TEST(H2Session, InterimHeadsAreCountedNotKept) {
  Pair p;
  p.open(post("{}"));
  std::string name = ":status";
  std::string value = "103";
  std::vector<nghttp2_nv> nva = {nghttp2_nv{reinterpret_cast<std::uint8_t*>(name.data()),
                                            reinterpret_cast<std::uint8_t*>(value.data()),
                                            name.size(), value.size(), NGHTTP2_NV_FLAG_NONE}};
  p.server.headers_only(1, nva, false);
  exchange(p.client, p.server);
  EXPECT_EQ(p.client.interim(), 1u);
  EXPECT_EQ(p.client.head(), nullptr);
  p.server.respond(1, 201, {{"x-answer", "yes"}}, "ok", true);
  exchange(p.client, p.server);
  ASSERT_NE(p.client.head(), nullptr);
  EXPECT_EQ(p.client.head()->status, 201);
  EXPECT_EQ(field(p.client.head()->fields, "x-answer"), "yes");
  EXPECT_EQ(p.take(), "ok");
  EXPECT_TRUE(p.client.ended());
}

TEST(H2Session, StreamIdsOneThenThreeOnAReusedConnection) {
  Pair p;
  p.open(post("first"));
  p.server.respond(1, 200, {}, "one", true);
  exchange(p.client, p.server);
  EXPECT_EQ(p.take(), "one");
  ASSERT_TRUE(p.client.ended());
  ASSERT_TRUE(p.client.reusable());
  p.client.finish_stream();
  p.open(post("second"));
  EXPECT_EQ(p.client.stream_id(), 3);
  EXPECT_EQ(p.server.streams[3].body, "second");
  EXPECT_EQ(p.client.head(), nullptr);
  p.server.respond(3, 200, {}, "two", true);
  exchange(p.client, p.server);
  EXPECT_EQ(p.take(), "two");
  EXPECT_TRUE(p.client.ended());
  EXPECT_TRUE(p.server.resets.empty());  // a finished stream is not reset
}

TEST(H2Session, FinishingAnOpenStreamCancelsIt) {
  Pair p;
  p.open(post("{}"));
  p.server.respond(1, 200, {}, "partial", false);
  exchange(p.client, p.server);
  p.client.finish_stream();
  exchange(p.client, p.server);
  ASSERT_EQ(p.server.resets.size(), 1u);
  EXPECT_EQ(p.server.resets[0].first, 1);
  EXPECT_EQ(p.server.resets[0].second, static_cast<std::uint32_t>(NGHTTP2_CANCEL));
  EXPECT_EQ(p.client.trouble().kind, Break::none);
}

TEST(H2Session, ErrorCodeNames) {
  const std::vector<std::string> names = {"NO_ERROR",
                                          "PROTOCOL_ERROR",
                                          "INTERNAL_ERROR",
                                          "FLOW_CONTROL_ERROR",
                                          "SETTINGS_TIMEOUT",
                                          "STREAM_CLOSED",
                                          "FRAME_SIZE_ERROR",
                                          "REFUSED_STREAM",
                                          "CANCEL",
                                          "COMPRESSION_ERROR",
                                          "CONNECT_ERROR",
                                          "ENHANCE_YOUR_CALM",
                                          "INADEQUATE_SECURITY",
                                          "HTTP_1_1_REQUIRED"};
  for (std::uint32_t code = 0; code < names.size(); ++code) {
    EXPECT_EQ(error_code_name(code), names[code]) << code;
  }
  EXPECT_EQ(error_code_name(0xe), "0xe");
  EXPECT_EQ(error_code_name(0x1f), "0x1f");
  EXPECT_EQ(error_code_name(0xdeadbeef), "0xdeadbeef");
}

}  // namespace
}  // namespace lse::h2
