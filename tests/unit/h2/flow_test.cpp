// Flow control both ways, SETTINGS and PING acknowledgements, and bytes
// that are not HTTP/2 at all.
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

Request post(std::string body) {
  Request r;
  r.scheme = "http";
  r.authority = "127.0.0.1:8080";
  r.path = "/v1/chat/completions";
  r.body = std::move(body);
  return r;
}

std::uint32_t setting(const std::vector<nghttp2_settings_entry>& all, std::int32_t id) {
  for (const auto& e : all) {
    if (e.settings_id == id) return e.value;
  }
  return 0xffffffffu;
}

TEST(H2Flow, SettingsCarryTheConfiguredWindowsAndABrowsersValues) {
  for (const Settings s : {Settings{}, Settings{65535, 1u << 20, 8192}}) {
    Session client(s);
    Peer server;
    client.submit(post("{}"));
    exchange(client, server);
    ASSERT_EQ(server.client_settings_frames, 1);
    EXPECT_EQ(setting(server.client_settings, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE),
              s.stream_window);
    EXPECT_EQ(setting(server.client_settings, NGHTTP2_SETTINGS_ENABLE_PUSH), 0u);
    EXPECT_EQ(setting(server.client_settings, NGHTTP2_SETTINGS_HEADER_TABLE_SIZE), 65536u);
    EXPECT_EQ(setting(server.client_settings, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS), 1000u);
    EXPECT_EQ(setting(server.client_settings, NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE),
              s.max_header_bytes);
    // The connection window opened from the RFC's 65535 in one WINDOW_UPDATE.
    EXPECT_EQ(server.connection_window_updates, s.connection_window - 65535u);
    EXPECT_EQ(nghttp2_session_get_remote_window_size(server.ng()),
              static_cast<std::int32_t>(s.connection_window));
    EXPECT_EQ(nghttp2_session_get_stream_remote_window_size(server.ng(), 1),
              static_cast<std::int32_t>(s.stream_window));
  }
}

TEST(H2Flow, OutOfRangeWindowsAreClamped) {
  Session client(Settings{1, 0xffffffffu, 65536});
  Peer server;
  client.submit(post("{}"));
  exchange(client, server);
  EXPECT_EQ(setting(server.client_settings, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE), kMinWindow);
  EXPECT_EQ(nghttp2_session_get_remote_window_size(server.ng()),
            static_cast<std::int32_t>(kMaxWindow));
}

// 200 KiB through a 65535-byte stream and connection window: the server
// gets past 65535 bytes only because take_data() consumed and a
// WINDOW_UPDATE went out.
TEST(H2Flow, WindowReopensOnlyAsTheCallerTakesData) {
  Session client(Settings{65535, 65535, 65536});
  Peer server;
  client.submit(post("{}"));
  exchange(client, server);
  const std::string body(200 * std::size_t{1024}, 'x');
  server.respond(1, 200, {}, body, true);
  exchange(client, server);
  EXPECT_TRUE(client.has_data());
  EXPECT_FALSE(client.ended());
  std::string got;
  client.take_data(got);
  EXPECT_EQ(got.size(), 65535u);  // the whole window, and not a byte more
  exchange(client, server);       // nothing was consumed before: stalled until now
  int rounds = 0;
  while (!client.ended() && rounds++ < 100) {
    client.take_data(got);
    exchange(client, server);
  }
  client.take_data(got);
  EXPECT_EQ(got, body);
  EXPECT_TRUE(client.ended());
  EXPECT_GE(server.connection_window_updates, body.size() - 65535u);
}

TEST(H2Flow, WithoutTakeDataTheServerStallsAtTheWindow) {
  Session client(Settings{65535, 15u << 20, 65536});
  Peer server;
  client.submit(post("{}"));
  exchange(client, server);
  server.respond(1, 200, {}, std::string(200 * std::size_t{1024}, 'y'), true);
  for (int i = 0; i < 10; ++i) exchange(client, server);
  EXPECT_FALSE(client.ended());
  EXPECT_EQ(nghttp2_session_get_stream_remote_window_size(server.ng(), 1), 0);
  std::string got;
  client.take_data(got);
  EXPECT_EQ(got.size(), 65535u);
}

// The server announces INITIAL_WINDOW_SIZE 0: the body waits, then one
// WINDOW_UPDATE lets it finish.
// Bytes of a finished stream that nobody took are given back to the
// connection window: the next stream on the connection is not starved.
TEST(H2Flow, UntakenDataOfAFinishedStreamFreesTheConnectionWindow) {
  Session client(Settings{65535, 65535, 65536});
  Peer server;
  client.submit(post("{}"));
  exchange(client, server);
  server.respond(1, 200, {}, std::string(100 * std::size_t{1024}, 'a'), true);
  exchange(client, server);
  ASSERT_TRUE(client.has_data());
  ASSERT_FALSE(client.ended());
  client.finish_stream();  // 65535 bytes never taken, the rest never sent
  exchange(client, server);
  client.submit(post("{}"));
  exchange(client, server);
  ASSERT_EQ(client.stream_id(), 3);
  const std::string second(50000, 'b');
  server.respond(3, 200, {}, second, true);
  std::string got;
  for (int i = 0; i < 50 && !client.ended(); ++i) {
    exchange(client, server);
    client.take_data(got);
  }
  EXPECT_EQ(got, second);
  EXPECT_TRUE(client.ended());
  EXPECT_EQ(client.trouble().kind, Break::none);
}

TEST(H2Flow, ZeroServerWindowHoldsTheBodyBack) {
  Peer server({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}}, true);
  Session client;
  client.submit(post("hello, window"));
  client.feed(server.drain());  // the server's SETTINGS arrive first
  exchange(client, server);
  EXPECT_TRUE(client.window_blocked());
  EXPECT_FALSE(client.request_sent());
  EXPECT_TRUE(server.streams[1].body.empty());
  EXPECT_FALSE(server.streams[1].request_ended);
  nghttp2_submit_window_update(server.ng(), NGHTTP2_FLAG_NONE, 1, 5);
  exchange(client, server);
  EXPECT_EQ(server.streams[1].body, "hello");
  EXPECT_TRUE(client.window_blocked());
  nghttp2_submit_window_update(server.ng(), NGHTTP2_FLAG_NONE, 1, 1000);
  exchange(client, server);
  EXPECT_FALSE(client.window_blocked());
  EXPECT_TRUE(client.request_sent());
  EXPECT_EQ(server.streams[1].body, "hello, window");
  EXPECT_TRUE(server.streams[1].request_ended);
}

// An early answer while the body waits for the window (a 413, say), then
// the server's RST_STREAM NO_ERROR (RFC 9113 §8.1): a complete answer, no
// trouble, and the connection stays usable.
TEST(H2Flow, AnEarlyAnswerWhileTheBodyWaitsIsComplete) {
  Peer server({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}}, true);
  Session client;
  client.submit(post("a body the server will not take"));
  client.feed(server.drain());
  exchange(client, server);
  ASSERT_TRUE(client.window_blocked());
  server.respond(1, 413, {}, "too large", true);
  client.feed(server.drain());  // the answer, then (nghttp2 would send it first) the reset
  nghttp2_submit_rst_stream(server.ng(), NGHTTP2_FLAG_NONE, 1, NGHTTP2_NO_ERROR);
  exchange(client, server);
  ASSERT_NE(client.head(), nullptr);
  EXPECT_EQ(client.head()->status, 413);
  std::string got;
  client.take_data(got);
  EXPECT_EQ(got, "too large");
  EXPECT_TRUE(client.ended());
  EXPECT_EQ(client.trouble().kind, Break::none);
  EXPECT_FALSE(client.request_sent());
  EXPECT_FALSE(client.window_blocked());  // the stream is closed: nothing waits any more
  EXPECT_TRUE(client.reusable());
}

// The server's MAX_FRAME_SIZE (16384, the smallest allowed) splits a large
// request body into frames; it arrives intact.
TEST(H2Flow, RequestBodyRespectsTheServersFrameSize) {
  Peer server({{NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 16384}});
  Session client;
  std::string body;
  for (int i = 0; body.size() < 60000; ++i) body += std::to_string(i) + ",";
  client.submit(post(body));
  client.feed(server.drain());
  exchange(client, server);
  EXPECT_EQ(server.streams[1].body, body);
  EXPECT_GE(server.data_frames_in, 4);
  EXPECT_TRUE(client.request_sent());
}

// A server that announces a SETTINGS_MAX_FRAME_SIZE below the RFC's
// minimum (16384) breaks the connection (RFC 9113 §6.5.2: PROTOCOL_ERROR):
// a clear fault, no frames cut to its size.
TEST(H2Flow, AMaxFrameSizeBelowTheMinimumIsAConnectionError) {
  Session client;
  client.submit(post("{}"));
  client.wrote(client.output().size());
  // SETTINGS: length 6, type 0x4, no flags, stream 0; MAX_FRAME_SIZE (0x5) = 1024.
  const std::string settings(
      "\x00\x00\x06\x04\x00\x00\x00\x00\x00"
      "\x00\x05\x00\x00\x04\x00",
      15);
  client.feed(settings);
  const Trouble& t = client.trouble();
  EXPECT_EQ(t.kind, Break::connection_error);
  EXPECT_FALSE(t.by_peer);
  EXPECT_EQ(t.error_code, 1u);  // PROTOCOL_ERROR in our GOAWAY
  // "HTTP/2 connection error: GOAWAY PROTOCOL_ERROR (0x1) sent: SETTINGS: invalid
  // SETTINGS_MAX_FRAME_SIZE"
  EXPECT_NE(t.detail.find("MAX_FRAME_SIZE"), std::string::npos) << t.detail;
  EXPECT_FALSE(client.reusable());
  EXPECT_FALSE(client.ended());
}

TEST(H2Flow, PingAndSettingsAreAcknowledged) {
  Session client;
  Peer server;
  client.submit(post("{}"));
  exchange(client, server);
  EXPECT_EQ(server.settings_acks, 1);
  const nghttp2_settings_entry more{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 50};
  nghttp2_submit_settings(server.ng(), NGHTTP2_FLAG_NONE, &more, 1);
  nghttp2_submit_ping(server.ng(), NGHTTP2_FLAG_NONE, nullptr);
  client.feed(server.drain());
  const std::string_view out = client.output();
  EXPECT_FALSE(out.empty());
  server.feed(std::string(out));
  client.wrote(out.size());
  EXPECT_EQ(server.ping_acks, 1);
  EXPECT_EQ(server.settings_acks, 2);
  EXPECT_EQ(client.trouble().kind, Break::none);
}

TEST(H2Flow, AnHttp1AnswerIsAConnectionError) {
  Session client;
  client.submit(post("{}"));
  client.wrote(client.output().size());
  client.feed("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
  const Trouble& t = client.trouble();
  EXPECT_EQ(t.kind, Break::connection_error);
  EXPECT_FALSE(t.by_peer);
  EXPECT_EQ(t.error_code, 1u);  // PROTOCOL_ERROR in our GOAWAY
  EXPECT_NE(t.detail.find("SETTINGS expected"), std::string::npos) << t.detail;
  EXPECT_FALSE(client.reusable());
  EXPECT_FALSE(client.output().empty());  // the GOAWAY
  client.wrote(client.output().size());
  client.feed("more bytes after the error");  // ignored
  EXPECT_EQ(client.trouble().kind, Break::connection_error);
  EXPECT_TRUE(client.output().empty());
}

TEST(H2Flow, GarbageAfterAValidPrefaceIsAConnectionError) {
  Session client;
  Peer server;
  client.submit(post("{}"));
  exchange(client, server);
  // A DATA frame on stream 0 (connection error PROTOCOL_ERROR).
  client.feed(std::string("\x00\x00\x02\x00\x00\x00\x00\x00\x00zz", 11));
  EXPECT_EQ(client.trouble().kind, Break::connection_error);
  EXPECT_EQ(client.trouble().error_code, 1u);
  EXPECT_FALSE(client.reusable());
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk.push_back(static_cast<char>((i * 131 + 7) % 256));
  client.feed(junk);
  EXPECT_EQ(client.trouble().kind, Break::connection_error);
  // A request on the failed connection fails at once instead of waiting.
  client.finish_stream();
  client.submit(post("{}"));
  EXPECT_EQ(client.stream_id(), -1);
  EXPECT_EQ(client.trouble().kind, Break::connection_error);
  EXPECT_FALSE(client.reusable());
}

}  // namespace
}  // namespace lse::h2
