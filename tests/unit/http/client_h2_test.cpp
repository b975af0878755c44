// The client over HTTP/2 against an in-process h2 server (h2_peer.hpp) on
// 127.0.0.1: the protocol chosen by ALPN (or prior knowledge on http://),
// body bytes intact and stamped with the arrival of the read that brought
// them (a gap the server planted is measured as the server made it), gzip
// decoded as on HTTP/1.1, RST_STREAM mid-body as the bytes before it and
// then stream_reset with the server's code, one connection carrying two
// probes' streams (1 and 3) with no connect/TLS stamps the second time, and
// a request body the server's window holds back failing at the send stage
// at its deadline. Bounded: every exchange has a deadline and the loop a limit.
#include <gtest/gtest.h>
#include <zlib.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "h2_peer.hpp"
#include "http/client.hpp"

namespace {

namespace asio = boost::asio;
using lse::http::Clock;
using lse::http::Errc;
using lse::http::HttpVersion;
using lse::http::Stage;
using lse::http::TimePoint;
using lse::test::H2Peer;
using lse::test::H2PeerConn;
using namespace std::chrono_literals;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Piece {
  std::string bytes;
  TimePoint arrival;
};

// One exchange as the probe sees it: what start() said, the body's pieces
// with their arrivals, and the fault that ended it, if any.
struct Exchange {
  lse::http::Started started{{}, lse::http::Fault{}};
  std::vector<Piece> pieces;
  std::optional<lse::http::Fault> fault;
  bool body_done = false;
  std::string body() const {
    std::string all;
    for (const Piece& p : pieces) all += p.bytes;
    return all;
  }
};

struct Plan {
  std::string url;
  HttpVersion version = HttpVersion::automatic;
  std::string body = "{}";
  Clock::duration deadline = 3s;
  int exchanges = 1;
  std::optional<std::string> proxy = std::nullopt;
  std::uint32_t stream_window = lse::h2::kBrowserStreamWindow;
  bool into_a_sink = false;    // read_body() rather than read() in a loop
  Clock::duration pause = 0s;  // between two exchanges
};

// Keeps what read_body() hands it.
class KeepingSink final : public lse::http::ChunkSink {
 public:
  KeepingSink(std::vector<Piece>& pieces, TimePoint deadline, bool& body_done)
      : pieces_(pieces), deadline_(deadline), body_done_(body_done) {}
  std::optional<TimePoint> take(const lse::http::Chunk& chunk) override {
    if (!chunk.bytes.empty()) pieces_.push_back({std::string(chunk.bytes), chunk.arrival});
    body_done_ = chunk.body_done;
    return deadline_;
  }

 private:
  std::vector<Piece>& pieces_;
  TimePoint deadline_;
  bool& body_done_;
};

// The body of a started exchange, read as `run` says.
asio::awaitable<void> read_answer(lse::http::Client& client, const Plan& run, Exchange& e,
                                  TimePoint deadline) {
  if (run.into_a_sink) {
    KeepingSink sink(e.pieces, deadline, e.body_done);
    e.fault = co_await client.read_body(sink, deadline);
    co_return;
  }
  while (!e.fault && !e.body_done) {
    auto chunk = co_await client.read(deadline);
    if (!chunk) {
      e.fault = chunk.fault();
      break;
    }
    if (!chunk->bytes.empty()) e.pieces.push_back({std::string(chunk->bytes), chunk->arrival});
    e.body_done = chunk->body_done;
  }
}

// `run.exchanges` exchanges, one after another, on one client; each read to
// its end and finished with reuse.
std::vector<Exchange> exchange(const Plan& run) {
  asio::io_context io;
  lse::http::ClientOptions options;
  options.url = *lse::net::parse_url(run.url);
  options.tls.ca_file = lse::test::h2_pki().ca;
  options.http_version = run.version;
  options.http2.stream_window = run.stream_window;
  if (run.proxy) options.proxy = *lse::net::parse_url(*run.proxy);
  lse::http::Client client(io, options);
  std::vector<Exchange> out(static_cast<std::size_t>(run.exchanges));
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const lse::http::Request request{"/chat", run.body, {{"authorization", "Bearer x"}}};
        for (Exchange& e : out) {
          const TimePoint deadline = Clock::now() + run.deadline;
          e.started = co_await client.start(request, deadline);
          if (e.started.response) co_await read_answer(client, run, e, deadline);
          client.finish(true);
          if (run.pause > 0s) {
            asio::steady_timer timer(io, run.pause);
            co_await timer.async_wait(asio::use_awaitable);
          }
        }
        done = true;
      },
      asio::detached);
  const auto limit = Clock::now() + 10s;
  while (!done && Clock::now() < limit) io.run_one_for(10ms);
  return out;
}

// An instant the server's thread marks; get() waits until it is marked (the
// client may be done with the bytes before the server's thread runs on).
class Mark {
 public:
  void set() {
    const std::lock_guard<std::mutex> lock(m_);
    at_ = Clock::now();
    cv_.notify_all();
  }
  TimePoint get() {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait_for(lock, 5s, [this] { return at_.has_value(); });
    return at_.value_or(TimePoint{});
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::optional<TimePoint> at_;
};

const H2PeerConn::Fields kStreamHead = {{"content-type", "text/event-stream"}};

// The plainest h2 answer: 200, one event, the end of the stream.
void answer_one_event(H2PeerConn& c) {
  c.start_h2();
  const auto id = c.read_h2_request();
  c.send_headers(id, 200, kStreamHead);
  c.send_data(id, "data: a\n\n", true);
  c.hang();
}

TEST(ClientH2, AutoSpeaksH2AndStampsEachDataFrameWithItsRead) {
  // Each write between two instants of the server's: the arrival of its
  // bytes lies between them, however late the server's thread ran.
  Mark first_before, first_after, second_before, second_after;
  H2Peer peer(
      [&](H2PeerConn& c) {
        c.start_h2();
        const auto id = c.read_h2_request();
        c.send_headers(id, 200, kStreamHead);
        first_before.set();
        c.send_data(id, "data: a\n\n");
        first_after.set();
        std::this_thread::sleep_for(100ms);
        second_before.set();
        c.send_data(id, "data: b\n\n", true);
        second_after.set();
        c.hang();
      },
      {});
  const auto e = exchange({peer.url()}).at(0);
  ASSERT_TRUE(e.started.response) << e.started.response.fault().detail;
  EXPECT_EQ(e.started.response->http_version, "2");
  EXPECT_EQ(e.started.response->status, 200);
  EXPECT_EQ(e.started.response->content_type, "text/event-stream");
  EXPECT_TRUE(e.started.stamps.tls_done.has_value());
  EXPECT_TRUE(e.started.stamps.headers.has_value());
  ASSERT_FALSE(e.fault) << e.fault->detail;
  EXPECT_TRUE(e.body_done);
  ASSERT_EQ(e.pieces.size(), 2U);
  EXPECT_EQ(e.body(), "data: a\n\ndata: b\n\n");
  const auto conns = peer.conns();
  ASSERT_EQ(conns.size(), 1U);
  EXPECT_EQ(conns[0].body, "{}");
  // The server's own gap (>= 100 ms; more if its thread woke late), measured
  // by the arrival stamps: within the span of the two writes, 1 ms of
  // clock conversion either side.
  EXPECT_GE(ms(second_before.get() - first_after.get()), 100.0);
  const double gap = ms(e.pieces[1].arrival - e.pieces[0].arrival);
  EXPECT_GE(gap, ms(second_before.get() - first_after.get()) - 1.0);
  EXPECT_LE(gap, ms(second_after.get() - first_before.get()) + 1.0);
}

TEST(ClientH2, Http2OverPlainHttpIsPriorKnowledgeH2c) {
  H2Peer peer(answer_one_event, {.tls = false});
  const auto e = exchange({peer.url(), HttpVersion::http2}).at(0);
  ASSERT_TRUE(e.started.response) << e.started.response.fault().detail;
  EXPECT_EQ(e.started.response->http_version, "2");
  EXPECT_FALSE(e.started.stamps.tls_done.has_value());
  EXPECT_EQ(e.body(), "data: a\n\n");
  EXPECT_TRUE(e.body_done);
}

// A DATA frame written in three pieces (its header cut, its payload cut):
// the bytes come whole, the last of them with the last piece's arrival.
TEST(ClientH2, ADataFrameSplitAcrossReadsArrivesWithTheReadThatCompletesIt) {
  Mark last_write, last_written;
  H2Peer peer(
      [&](H2PeerConn& c) {
        c.start_h2();
        const auto id = c.read_h2_request();
        c.send_headers(id, 200, kStreamHead);
        const std::string frame = lse::test::h2frame::frame(lse::test::h2frame::kData, 1, id,
                                                            "data: one\n\ndata: two\n\n");
        c.write(frame.substr(0, 4));
        std::this_thread::sleep_for(30ms);
        c.write(frame.substr(4, 12));
        std::this_thread::sleep_for(60ms);
        last_write.set();
        c.write(frame.substr(16));
        last_written.set();
        c.hang();
      },
      {});
  const auto e = exchange({peer.url()}).at(0);
  ASSERT_TRUE(e.started.response) << e.started.response.fault().detail;
  EXPECT_EQ(e.body(), "data: one\n\ndata: two\n\n");
  EXPECT_TRUE(e.body_done);
  ASSERT_FALSE(e.pieces.empty());
  // The last piece's arrival: while its write ran (1 ms of clock conversion).
  EXPECT_GE(ms(e.pieces.back().arrival - last_write.get()), -1.0);
  EXPECT_LE(ms(e.pieces.back().arrival - last_written.get()), 1.0);
  EXPECT_GE(ms(e.pieces.back().arrival - *e.started.stamps.headers), 85.0);
}

std::string gzip(const std::string& plain) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  std::string out(plain.size() + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(ClientH2, GzipContentEncodingIsDecoded) {
  const std::string plain = "data: {\"choices\":[{\"delta\":{\"content\":\"hello\"}}]}\n\n";
  const std::string coded = gzip(plain);
  H2Peer peer(
      [&](H2PeerConn& c) {
        c.start_h2();
        const auto id = c.read_h2_request();
        c.send_headers(id, 200,
                       {{"content-type", "text/event-stream"}, {"content-encoding", "gzip"}});
        c.send_data(id, coded.substr(0, 10));
        c.send_data(id, coded.substr(10), true);
        c.hang();
      },
      {});
  const auto e = exchange({peer.url()}).at(0);
  ASSERT_TRUE(e.started.response) << e.started.response.fault().detail;
  EXPECT_EQ(e.started.response->content_encoding, "gzip");
  ASSERT_FALSE(e.fault) << e.fault->detail;
  EXPECT_EQ(e.body(), plain);
}

TEST(ClientH2, RstStreamMidBodyIsStreamResetWithTheServersCodeAfterTheBytes) {
  H2Peer peer(
      [](H2PeerConn& c) {
        c.start_h2();
        const auto id = c.read_h2_request();
        c.send_headers(id, 200, kStreamHead);
        c.send_data(id, "data: a\n\n");
        std::this_thread::sleep_for(20ms);
        c.send_rst(id, 2);  // INTERNAL_ERROR
        c.hang();
      },
      {});
  const auto e = exchange({peer.url()}).at(0);
  ASSERT_TRUE(e.started.response) << e.started.response.fault().detail;
  EXPECT_EQ(e.body(), "data: a\n\n");
  ASSERT_TRUE(e.fault);
  EXPECT_EQ(e.fault->stage, Stage::body);
  EXPECT_EQ(e.fault->ec, make_error_code(Errc::stream_reset));
  ASSERT_TRUE(e.fault->h2_error.has_value());
  EXPECT_EQ(*e.fault->h2_error, 2U);
  EXPECT_FALSE(lse::http::is_malformed(e.fault->ec));
  EXPECT_FALSE(lse::http::is_connection_lost(*e.fault));
}

TEST(ClientH2, TwoExchangesShareOneConnectionOnStreamsOneAndThree) {
  H2Peer peer(
      [](H2PeerConn& c) {
        c.start_h2();
        for (int i = 0; i < 2; ++i) {
          const auto id = c.read_h2_request();
          c.send_headers(id, 200, kStreamHead);
          c.send_data(id, "data: " + std::to_string(i) + "\n\n", true);
        }
        c.hang();
      },
      {.connections = 2});
  const auto e = exchange({peer.url(), HttpVersion::automatic, "{}", 3s, 2});
  ASSERT_TRUE(e[0].started.response) << e[0].started.response.fault().detail;
  ASSERT_TRUE(e[1].started.response) << e[1].started.response.fault().detail;
  EXPECT_EQ(e[0].body(), "data: 0\n\n");
  EXPECT_EQ(e[1].body(), "data: 1\n\n");
  EXPECT_TRUE(e[0].started.stamps.connected.has_value());
  EXPECT_TRUE(e[0].started.stamps.tls_done.has_value());
  EXPECT_FALSE(e[1].started.stamps.resolved.has_value());
  EXPECT_FALSE(e[1].started.stamps.connected.has_value());
  EXPECT_FALSE(e[1].started.stamps.tls_done.has_value());
  EXPECT_TRUE(e[1].started.stamps.request_sent.has_value());
  EXPECT_EQ(e[1].started.response->http_version, "2");
  const auto conns = peer.conns();
  EXPECT_EQ(peer.accepted(), 1);
  ASSERT_EQ(conns.size(), 1U);
  EXPECT_EQ(conns[0].streams, (std::vector<std::uint32_t>{1, 3}));
}

// The server said GOAWAY (last stream 1) while the connection sat in the
// pool: the next probe's stream 3 was never processed, and goes again on a
// new connection, as a request a closed keep-alive connection never answered.
TEST(ClientH2, AStreamRefusedByGoawayOnAPooledConnectionGoesOnANewOne) {
  H2Peer peer(
      [](H2PeerConn& c) {
        c.start_h2();
        const auto id = c.read_h2_request();
        c.send_headers(id, 200, kStreamHead);
        c.send_data(id, "data: " + std::to_string(c.streams.size()) + "\n\n", true);
        if (id == 1) {
          std::this_thread::sleep_for(50ms);  // the client pooled the connection meanwhile
          c.send_goaway(1, 0);
        }
        c.hang();
      },
      {.connections = 2});
  Plan run{peer.url()};
  run.exchanges = 2;
  run.pause = 100ms;
  const auto e = exchange(run);
  ASSERT_TRUE(e[1].started.response) << e[1].started.response.fault().detail;
  EXPECT_EQ(e[1].body(), "data: 1\n\n");
  EXPECT_TRUE(e[1].started.stamps.connected.has_value());
  EXPECT_EQ(peer.accepted(), 2);
}

// A GOAWAY with an error code that names our stream as the last one the
// server took may follow work done for it: the request is not sent again,
// the probe fails with the server's code.
TEST(ClientH2, AGoawayThatMayHaveProcessedThePooledStreamIsNotSentAgain) {
  H2Peer peer(
      [](H2PeerConn& c) {
        c.start_h2();
        const auto id = c.read_h2_request();
        c.send_headers(id, 200, kStreamHead);
        c.send_data(id, "data: a\n\n", true);
        const auto next = c.read_h2_request();
        c.send_goaway(next, 2);  // INTERNAL_ERROR, last stream = ours
        c.hang();
      },
      {.connections = 2});
  Plan run{peer.url()};
  run.exchanges = 2;
  const auto e = exchange(run);
  ASSERT_FALSE(e[1].started.response);
  const lse::http::Fault& f = e[1].started.response.fault();
  EXPECT_EQ(f.ec, make_error_code(Errc::stream_reset)) << f.detail;
  EXPECT_EQ(f.h2_error, 2u);
  EXPECT_EQ(peer.accepted(), 1);
}

// ALPN is end to end: h2 through an HTTP proxy's CONNECT tunnel.
TEST(ClientH2, H2GoesThroughAConnectTunnel) {
  H2Peer peer(answer_one_event, {});
  lse::test::TunnelProxy proxy(peer.port());
  Plan run{peer.url(), HttpVersion::http2};
  run.proxy = proxy.url();
  const auto e = exchange(run).at(0);
  ASSERT_TRUE(e.started.response) << e.started.response.fault().detail;
  EXPECT_EQ(e.started.response->http_version, "2");
  EXPECT_EQ(e.body(), "data: a\n\n");
  const std::string line = "CONNECT 127.0.0.1:" + std::to_string(peer.port()) + " HTTP/1.1\r\n";
  EXPECT_EQ(proxy.head().substr(0, line.size()), line);
}

// A 65535-byte stream window: 60000 bytes come, and the rest only after the
// WINDOW_UPDATE the client writes between its reads (read_body's loop).
TEST(ClientH2, TheWindowOpensAsTheBodyIsReadIntoASink) {
  std::uint32_t increment = 0;
  H2Peer peer(
      [&](H2PeerConn& c) {
        c.start_h2();
        const auto id = c.read_h2_request();
        c.send_headers(id, 200, kStreamHead);
        for (int i = 0; i < 4; ++i) c.send_data(id, std::string(15000, 'a'));
        increment = c.read_window_update(id);
        for (int i = 0; i < 3; ++i) c.send_data(id, std::string(13000, 'b'), i == 2);
        c.hang();
      },
      {});
  Plan run{peer.url()};
  run.stream_window = lse::h2::kMinWindow;
  run.into_a_sink = true;
  const auto e = exchange(run).at(0);
  ASSERT_TRUE(e.started.response) << e.started.response.fault().detail;
  ASSERT_FALSE(e.fault) << e.fault->detail;
  EXPECT_TRUE(e.body_done);
  EXPECT_EQ(e.body(), std::string(60000, 'a') + std::string(39000, 'b'));
  peer.stop();
  EXPECT_GE(increment, 32768U);
}

// The connection window (65535 until the server opens it) holds a 100 KB
// body back; the server never opens it.
TEST(ClientH2, ABodyTheServersWindowHoldsBackFailsAtSendAtTheDeadline) {
  H2Peer peer(
      [](H2PeerConn& c) {
        c.start_h2();
        c.hang();
      },
      {});
  const TimePoint began = Clock::now();
  const auto e = exchange({peer.url(), HttpVersion::http2, std::string(100000, 'x'), 400ms}).at(0);
  ASSERT_FALSE(e.started.response);
  const auto& f = e.started.response.fault();
  EXPECT_EQ(f.stage, Stage::send);
  EXPECT_EQ(f.interrupt, lse::http::Interrupt::deadline);
  EXPECT_EQ(f.detail, "HTTP/2 flow control: the server's window held the request body back");
  EXPECT_FALSE(e.started.stamps.request_sent.has_value());
  EXPECT_NEAR(ms(Clock::now() - began), 400.0, 300.0);
}

TEST(ClientH2, AnErrorAnswersFieldsAreReadFromItsHeaders) {
  H2Peer peer(
      [](H2PeerConn& c) {
        c.start_h2();
        const auto id = c.read_h2_request();
        c.send_headers(id, 429, {{"content-type", "application/json"}, {"retry-after", "7"}});
        c.send_data(id, "{\"error\":\"slow down\"}", true);
        c.hang();
      },
      {});
  const auto e = exchange({peer.url()}).at(0);
  ASSERT_TRUE(e.started.response) << e.started.response.fault().detail;
  EXPECT_EQ(e.started.response->status, 429);
  EXPECT_EQ(e.started.response->retry_after, "7");
  EXPECT_EQ(e.started.response->content_type, "application/json");
  EXPECT_EQ(e.body(), "{\"error\":\"slow down\"}");
}

// A body in one-byte DATA frames, all in one write: one read's bytes, intact.
TEST(ClientH2, OneByteDataFramesInOneWriteAreOneReadsBytes) {
  const std::string events = "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n";
  Mark writing, wrote;
  H2Peer peer(
      [&](H2PeerConn& c) {
        c.start_h2();
        const auto id = c.read_h2_request();
        c.send_headers(id, 200, kStreamHead);
        std::string frames;
        for (std::size_t i = 0; i < events.size(); ++i)
          frames += lse::test::h2frame::frame(
              lse::test::h2frame::kData, i + 1 == events.size() ? 1 : 0, id, events.substr(i, 1));
        std::this_thread::sleep_for(20ms);
        writing.set();
        c.write(frames);
        wrote.set();
        c.hang();
      },
      {});
  const auto e = exchange({peer.url()}).at(0);
  ASSERT_TRUE(e.started.response) << e.started.response.fault().detail;
  EXPECT_EQ(e.body(), events);
  EXPECT_TRUE(e.body_done);
  ASSERT_EQ(e.pieces.size(), 1U);
  // Its arrival: while the one write ran (1 ms of clock conversion).
  EXPECT_GE(ms(e.pieces[0].arrival - writing.get()), -1.0);
  EXPECT_LE(ms(e.pieces[0].arrival - wrote.get()), 1.0);
}

// GOAWAY INTERNAL_ERROR before any answer, then the close: the server's
// reset of the exchange (stream_reset, its code), not a lost connection.
TEST(ClientH2, GoawayWithAnErrorBeforeTheHeadIsStreamResetAtTheHeaders) {
  H2Peer peer(
      [](H2PeerConn& c) {
        c.start_h2();
        c.read_h2_request();
        c.write(lse::test::h2frame::frame(lse::test::h2frame::kSettings, 0, 0, ""));
        c.send_goaway(0, 2);
      },
      {});
  const auto e = exchange({peer.url()}).at(0);
  ASSERT_FALSE(e.started.response);
  const auto& f = e.started.response.fault();
  EXPECT_EQ(f.stage, Stage::headers);
  EXPECT_EQ(f.ec, make_error_code(Errc::stream_reset));
  ASSERT_TRUE(f.h2_error.has_value());
  EXPECT_EQ(*f.h2_error, 2U);
  EXPECT_FALSE(lse::http::is_connection_lost(f));
}

// An HTTP/1.1 answer on a prior-knowledge h2c connection: a connection
// error, malformed (triage: protocol), with the code the client sent.
TEST(ClientH2, AnHttp11AnswerToH2cIsAnH2ProtocolFault) {
  H2Peer peer(
      [](H2PeerConn& c) {
        c.fill();
        c.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        c.hang();
      },
      {.tls = false});
  const auto e = exchange({peer.url(), HttpVersion::http2}).at(0);
  ASSERT_FALSE(e.started.response);
  const auto& f = e.started.response.fault();
  EXPECT_EQ(f.stage, Stage::headers);
  EXPECT_EQ(f.ec, make_error_code(Errc::h2_protocol));
  EXPECT_TRUE(lse::http::is_malformed(f.ec));
  ASSERT_TRUE(f.h2_error.has_value());
  EXPECT_EQ(*f.h2_error, 1U);  // PROTOCOL_ERROR
}

// The server answers (413, END_STREAM) while the body still waits for its
// window: that answer is the exchange's, at once, not a send deadline.
TEST(ClientH2, AnAnswerWhileTheBodyIsHeldBackIsTheResponse) {
  H2Peer peer(
      [](H2PeerConn& c) {
        c.start_h2();
        const auto id = c.read_h2_headers();
        c.send_headers(id, 413, {{"content-type", "application/json"}}, true);
        c.hang();
      },
      {});
  const TimePoint began = Clock::now();
  const auto e = exchange({peer.url(), HttpVersion::http2, std::string(100000, 'x'), 2s}).at(0);
  ASSERT_TRUE(e.started.response) << e.started.response.fault().detail;
  EXPECT_EQ(e.started.response->status, 413);
  EXPECT_TRUE(e.body_done);
  EXPECT_LT(ms(Clock::now() - began), 1000.0);
}

}  // namespace
