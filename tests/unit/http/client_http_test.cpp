// The client's HTTP semantics against a scripted peer, and what Beast's
// parser itself does with the same bytes (so the client's own checks are
// there for a reason, not on assumption): a read that brings good bytes and
// then a fault, interim responses and the headers stamp, 101, obs-fold,
// Content-Length with Transfer-Encoding, deadlines against a peer that never
// stops sending, and arrival stamps that never precede the request.
#include "http/client.hpp"

#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <zlib.h>

#include "scripted_peer.hpp"

namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using lse::http::Clock;
using lse::http::TimePoint;
using lse::test::PeerConn;
using lse::test::PeerTimes;
using lse::test::ScriptedPeer;
using namespace std::chrono_literals;

using lse::test::chunked;
const std::string kEvent = "data: {\"choices\":[{\"delta\":{\"content\":\"w\"}}]}\n\n";
const std::string kChunkedHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// What one exchange showed: start()'s answer, then each read()'s.
struct Read {
  std::string bytes;
  TimePoint arrival{};
  bool body_done = false;
  std::optional<lse::http::Fault> fault;
};
struct Exchange {
  TimePoint began{};  // just before start()
  lse::http::Stamps stamps;
  std::optional<lse::http::Response> response;
  std::optional<lse::http::Fault> fault;
  std::size_t interim = 0;
  std::vector<Read> reads;
};

// One exchange on `client`: start, then reads until the body ends, a read
// fails or `max_reads`; finish(reuse). `after_read` runs after each read that
// brought bytes (on the client's thread).
asio::awaitable<Exchange> exchange(lse::http::Client& client, TimePoint deadline, int max_reads,
                                   bool reuse, const std::function<void()>& after_read = nullptr) {
  Exchange x;
  // A named request: GCC 12 mishandles temporaries inside co_await.
  const lse::http::Request request{"/chat", "{}", {}};
  x.began = Clock::now();
  lse::http::Started started = co_await client.start(request, deadline);
  x.stamps = started.stamps;
  x.interim = started.interim_responses;
  if (!started.response) {
    x.fault = started.response.fault();
    client.finish(false);
    co_return x;
  }
  x.response = started.response.value();
  for (int i = 0; i < max_reads; ++i) {
    auto chunk = co_await client.read(deadline);
    Read r;
    if (!chunk) {
      r.fault = chunk.fault();
      x.reads.push_back(std::move(r));
      break;
    }
    r.bytes = std::string(chunk->bytes);
    r.arrival = chunk->arrival;
    r.body_done = chunk->body_done;
    const bool body_done = r.body_done;
    x.reads.push_back(std::move(r));
    if (body_done) break;
    if (after_read) after_read();
  }
  client.finish(reuse);
  co_return x;
}

lse::http::ClientOptions options_for(const ScriptedPeer& peer) {
  lse::http::ClientOptions o;
  o.url = *lse::net::parse_url("http://127.0.0.1:" + std::to_string(peer.port()));
  return o;
}

// Runs `body` on a fresh io_context with a client of `peer`, up to 10 s.
void with_client(const ScriptedPeer& peer,
                 const std::function<asio::awaitable<void>(lse::http::Client&)>& body) {
  asio::io_context io;
  lse::http::Client client(io, options_for(peer));
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await body(client);
        done = true;
      },
      asio::detached);
  const auto limit = Clock::now() + 10s;
  while (!done && Clock::now() < limit) io.run_one_for(10ms);
  EXPECT_TRUE(done) << "the exchange did not finish";
}

Exchange one_exchange(const ScriptedPeer& peer, int max_reads = 100, Clock::duration timeout = 5s) {
  Exchange out;
  with_client(peer, [&](lse::http::Client& client) -> asio::awaitable<void> {
    out = co_await exchange(client, Clock::now() + timeout, max_reads, false);
  });
  return out;
}

// --- a read that brings good bytes, then a fault ---------------------------------------

TEST(ClientHttp, BytesBeforeABadChunkComeFirstWithTheirArrivalThenTheFault) {
  ScriptedPeer peer([&](PeerConn& c) {
    c.read_request();
    PeerConn::pause(100ms);
    c.send(kChunkedHead + chunked(kEvent) + "zz\r\n");
    c.hang();
  });
  const Exchange x = one_exchange(peer);
  ASSERT_TRUE(x.response) << x.fault->detail;
  ASSERT_EQ(x.reads.size(), 2u);
  EXPECT_EQ(x.reads[0].bytes, kEvent);
  EXPECT_FALSE(x.reads[0].body_done);
  // The one read's arrival (the headers' too): the peer's one write.
  ASSERT_TRUE(x.stamps.headers);
  EXPECT_EQ(x.reads[0].arrival, *x.stamps.headers);
  const PeerTimes times = peer.times(1);
  EXPECT_GE(ms(x.reads[0].arrival - times.sends[0].begin), -1.0);
  EXPECT_LT(ms(x.reads[0].arrival - times.sends[0].end), 50.0);
  ASSERT_TRUE(x.reads[1].fault);
  EXPECT_EQ(x.reads[1].fault->stage, lse::http::Stage::body);
  EXPECT_EQ(x.reads[1].fault->interrupt, lse::http::Interrupt::none);
  EXPECT_TRUE(lse::http::is_malformed(x.reads[1].fault->ec));
  EXPECT_EQ(x.reads[1].fault->detail, "bad HTTP body: bad chunk");
}

// A bad first chunk right behind the head: the head stands (its status is
// known), the body fails at the first read.
TEST(ClientHttp, ABadFirstChunkBehindTheHeadFailsTheBodyNotTheHead) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead + "zz\r\n");
    c.hang();
  });
  const Exchange x = one_exchange(peer);
  ASSERT_TRUE(x.response) << x.fault->detail;
  EXPECT_EQ(x.response->status, 200);
  ASSERT_EQ(x.reads.size(), 1u);
  ASSERT_TRUE(x.reads[0].fault);
  EXPECT_EQ(x.reads[0].fault->stage, lse::http::Stage::body);
  EXPECT_EQ(x.reads[0].fault->detail, "bad HTTP body: bad chunk");
}

// --- interim responses ---------------------------------------------------------------------

TEST(ClientHttp, InterimResponsesAreCountedAndTheHeadersStampIsTheFinalOnes) {
  ScriptedPeer peer([&](PeerConn& c) {
    c.read_request();
    c.send("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n");
    PeerConn::pause(50ms);
    c.send("HTTP/1.1 100 Continue\r\n\r\n");
    PeerConn::pause(100ms);
    c.send(kChunkedHead + chunked(kEvent) + "0\r\n\r\n");
    c.hang();
  });
  const Exchange x = one_exchange(peer);
  ASSERT_TRUE(x.response) << x.fault->detail;
  EXPECT_EQ(x.response->status, 200);
  EXPECT_EQ(x.interim, 2u);
  // The final head's arrival, not the 103's (150 ms earlier).
  ASSERT_TRUE(x.stamps.headers);
  const PeerTimes times = peer.times(3);
  EXPECT_GE(ms(*x.stamps.headers - times.sends[2].begin), -1.0);
  EXPECT_LT(ms(*x.stamps.headers - times.sends[2].end), 50.0);
  ASSERT_FALSE(x.reads.empty());
  EXPECT_EQ(x.reads[0].bytes, kEvent);
}

// 101 is final: reported as such, and the connection (now speaking another
// protocol) is never pooled: the next exchange opens a new one.
TEST(ClientHttp, SwitchingProtocolsIsFinalAndItsConnectionIsNotPooled) {
  int connection = 0;
  ScriptedPeer peer(
      [&](PeerConn& c) {
        c.read_request();
        if (connection++ == 0) {
          c.send(
              "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: "
              "Upgrade\r\n\r\n");
        } else {
          c.send(kChunkedHead + chunked(kEvent) + "0\r\n\r\n");
        }
        c.hang();
      },
      2);
  Exchange first, second;
  with_client(peer, [&](lse::http::Client& client) -> asio::awaitable<void> {
    first = co_await exchange(client, Clock::now() + 5s, 10, true);
    second = co_await exchange(client, Clock::now() + 5s, 10, true);
  });
  ASSERT_TRUE(first.response);
  EXPECT_EQ(first.response->status, 101);
  EXPECT_FALSE(first.response->keep_alive);
  EXPECT_EQ(first.interim, 0u);
  ASSERT_TRUE(second.response) << second.fault->detail;
  EXPECT_EQ(second.response->status, 200);
  EXPECT_TRUE(second.stamps.connected) << "the 101 connection was reused";
}

// --- what Beast's parser does, and what the client adds ---------------------------------

struct Parsed {
  boost::system::error_code ec;
  bool header_done = false;
  bool chunked = false;
  std::string content_type;
};
Parsed beast_parse(const std::string& head) {
  bhttp::response_parser<bhttp::string_body> p;
  p.eager(true);
  Parsed out;
  p.put(asio::buffer(head), out.ec);
  out.header_done = p.is_header_done();
  if (out.header_done) {
    out.chunked = p.chunked();
    out.content_type = std::string(p.get()[bhttp::field::content_type]);
  }
  return out;
}

TEST(ClientHttp, WhatBeastsParserDoesWithFramingAndFolding) {
  // Content-Length with chunked: refused, by whichever field came second.
  EXPECT_EQ(
      beast_parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n").ec,
      bhttp::error::bad_transfer_encoding);
  EXPECT_EQ(
      beast_parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n").ec,
      bhttp::error::bad_content_length);
  // ...but a Transfer-Encoding without chunked next to Content-Length passes:
  // the client refuses it itself.
  const Parsed identity =
      beast_parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\n");
  EXPECT_TRUE(identity.header_done);
  EXPECT_NE(identity.ec, bhttp::error::bad_transfer_encoding);
  // "chunked, chunked" is not chunked to Beast (a body to the close): the
  // client refuses it.
  const Parsed twice =
      beast_parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n");
  EXPECT_TRUE(twice.header_done);
  EXPECT_FALSE(twice.chunked);
  // obs-fold: unfolded with one SP, as RFC 9112 §5.2 asks of a user agent.
  const Parsed folded = beast_parse(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream;\r\n \t charset=utf-8\r\n"
      "Content-Length: 0\r\n\r\n");
  EXPECT_FALSE(folded.ec) << folded.ec.message();
  EXPECT_EQ(folded.content_type, "text/event-stream; charset=utf-8");
}

TEST(ClientHttp, FoldedContentTypeReachesTheResponseUnfolded) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream;\r\n charset=utf-8\r\n"
        "Transfer-Encoding: chunked\r\n\r\n" +
        chunked(kEvent) + "0\r\n\r\n");
    c.hang();
  });
  const Exchange x = one_exchange(peer);
  ASSERT_TRUE(x.response) << x.fault->detail;
  EXPECT_EQ(x.response->content_type, "text/event-stream; charset=utf-8");
}

TEST(ClientHttp, LengthWithTransferEncodingIsRefusedAtTheHeadersWhateverTheOrder) {
  for (const std::string fields : {"Content-Length: 20\r\nTransfer-Encoding: chunked\r\n",
                                   "Transfer-Encoding: chunked\r\nContent-Length: 20\r\n",
                                   "Transfer-Encoding: gzip\r\nContent-Length: 20\r\n"}) {
    ScriptedPeer peer([&](PeerConn& c) {
      c.read_request();
      c.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + fields + "\r\n" +
             chunked(kEvent) + "0\r\n\r\n");
      c.hang();
    });
    const Exchange x = one_exchange(peer);
    SCOPED_TRACE(fields);
    ASSERT_TRUE(x.fault);
    EXPECT_EQ(x.fault->stage, lse::http::Stage::headers);
    EXPECT_TRUE(lse::http::is_malformed(x.fault->ec));
    EXPECT_EQ(x.fault->detail,
              "response has both Content-Length and Transfer-Encoding (RFC 9112 §6.3: refused as "
              "a request smuggling sign)");
  }
}

// --- deadlines and the floor of arrival stamps ------------------------------------------

// A peer that never stops sending: each read completes at once, yet the read
// after the deadline is not issued.
TEST(ClientHttp, APeerThatNeverStopsSendingStillMeetsTheDeadline) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead);
    const std::string piece = chunked(std::string(16384, ':') + "\n\n");
    for (;;) c.send(piece);
  });
  Exchange x;
  with_client(peer, [&](lse::http::Client& client) -> asio::awaitable<void> {
    x = co_await exchange(client, Clock::now() + 300ms, 1 << 30, false);
  });
  ASSERT_TRUE(x.response);
  ASSERT_FALSE(x.reads.empty());
  ASSERT_TRUE(x.reads.back().fault);
  EXPECT_EQ(x.reads.back().fault->interrupt, lse::http::Interrupt::deadline);
  EXPECT_EQ(x.reads.back().fault->stage, lse::http::Stage::body);
  EXPECT_GT(x.reads.size(), 10u);
  // Not before the deadline; later only by how late a loaded machine wakes.
  EXPECT_GE(ms(Clock::now() - x.began), 299.0);
  EXPECT_LT(ms(Clock::now() - x.began), 1000.0);
}

// A confused peer answers before it is asked, on a pooled connection: those
// bytes waited in the kernel before the second exchange began. Their arrival
// is the instant the request began, never earlier (the kernel's stamp would
// put them before the probe started: a negative TTFT).
TEST(ClientHttp, AnAnswerSentBeforeTheRequestIsStampedNoEarlierThanTheRequest) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead + chunked(kEvent) + "0\r\n\r\n");
    PeerConn::pause(50ms);
    c.send(kChunkedHead + chunked(kEvent) + "0\r\n\r\n");
    c.read_request();
    c.hang();
  });
  Exchange first, second;
  with_client(peer, [&](lse::http::Client& client) -> asio::awaitable<void> {
    first = co_await exchange(client, Clock::now() + 5s, 10, true);
    asio::steady_timer wait(co_await asio::this_coro::executor, 200ms);
    co_await wait.async_wait(asio::use_awaitable);
    second = co_await exchange(client, Clock::now() + 5s, 10, true);
  });
  ASSERT_TRUE(first.response);
  ASSERT_TRUE(second.response) << second.fault->detail;
  EXPECT_FALSE(second.stamps.connected) << "the connection was not pooled";
  ASSERT_TRUE(second.stamps.headers);
  EXPECT_GE(*second.stamps.headers, second.began);
  ASSERT_FALSE(second.reads.empty());
  EXPECT_EQ(second.reads[0].bytes, kEvent);
  EXPECT_GE(second.reads[0].arrival, second.began);
}

// --- found by http_response_fuzz (tests/fuzz/findings/) ------------------------------------

// The body of an exchange whose every read succeeded and whose body ended.
std::string whole_body(const Exchange& x) {
  std::string body;
  for (const Read& r : x.reads) {
    EXPECT_FALSE(r.fault) << r.fault->detail;
    body += r.bytes;
  }
  EXPECT_FALSE(x.reads.empty());
  if (!x.reads.empty()) {
    EXPECT_TRUE(x.reads.back().body_done);
  }
  return body;
}

// A Content-Length head that arrives in a read of its own is a good head:
// Boost 1.74 with body_limit(none) took the length for over the limit.
TEST(ClientHttp, AContentLengthHeadInAReadOfItsOwnIsGood) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
           std::to_string(kEvent.size()) + "\r\n\r\n");
    PeerConn::pause(100ms);
    c.send(kEvent);
    c.hang();
  });
  const Exchange x = one_exchange(peer);
  ASSERT_TRUE(x.response) << x.fault->detail;
  EXPECT_EQ(whole_body(x), kEvent);
}

// The head and the start of a chunk-size line in one read: the head is
// stamped with that read, not with the later one that completes the line
// (300 ms later), and the chunk is read whole from both halves.
TEST(ClientHttp, AHeadFollowedByPartOfAChunkLineIsStampedOnArrival) {
  const std::string chunk = chunked(kEvent);
  ScriptedPeer peer([&](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead + chunk.substr(0, 1));
    PeerConn::pause(300ms);
    c.send(chunk.substr(1) + "0\r\n\r\n");
    c.hang();
  });
  const Exchange x = one_exchange(peer);
  ASSERT_TRUE(x.response) << x.fault->detail;
  ASSERT_TRUE(x.stamps.headers);
  const PeerTimes times = peer.times(2);
  EXPECT_GE(ms(*x.stamps.headers - times.sends[0].begin), -1.0);
  EXPECT_LT(*x.stamps.headers, times.sends[1].begin) << "stamped by the later read";
  EXPECT_EQ(whole_body(x), kEvent);
  EXPECT_GE(ms(x.reads.front().arrival - times.sends[1].begin), -1.0);  // the later write
}

// A head and the last chunk without its final CRLF, then the peer closes:
// the head came whole (start() succeeds), the body is what failed; and the
// bytes the parser already saw are never handed back to it (Beast asserts).
TEST(ClientHttp, ALastChunkCutByACloseFailsTheBodyNotTheHead) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead + "0\r\n");
    PeerConn::pause(50ms);
    c.close();
  });
  const Exchange x = one_exchange(peer);
  ASSERT_TRUE(x.response) << x.fault->detail;
  EXPECT_EQ(x.response->status, 200);
  ASSERT_FALSE(x.reads.empty());
  ASSERT_TRUE(x.reads.back().fault);
  EXPECT_EQ(x.reads.back().fault->stage, lse::http::Stage::body);
}

// The last chunk and a reset arrive while the client's thread is busy, so the
// reactor sees one edge for both: the read that takes the chunk drains the
// socket, and the next one waits for an edge that will not come. The read
// watch re-arms the edge after a second of silence: the body ends with the
// reset, not at the 8 s deadline as a timeout.
TEST(ClientHttp, AResetThatCameWithTheLastChunkEndsTheBodyAsAReset) {
  std::atomic<bool> busy{false};
  ScriptedPeer peer([&](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead + chunked(kEvent));
    while (!busy.load()) PeerConn::pause(1ms);
    PeerConn::pause(10ms);
    c.send(chunked(kEvent));
    c.reset();
  });
  Exchange x;
  with_client(peer, [&](lse::http::Client& client) -> asio::awaitable<void> {
    // After the first chunk the thread is busy while both arrive.
    const std::function<void()> busy_once = [&] {
      if (!busy.exchange(true)) std::this_thread::sleep_for(60ms);
    };
    x = co_await exchange(client, Clock::now() + 8s, 10, false, busy_once);
  });
  ASSERT_TRUE(x.response);
  ASSERT_EQ(x.reads.size(), 3u);
  EXPECT_EQ(x.reads[0].bytes, kEvent);
  EXPECT_EQ(x.reads[1].bytes, kEvent);
  ASSERT_TRUE(x.reads[2].fault);
  EXPECT_EQ(x.reads[2].fault->interrupt, lse::http::Interrupt::none) << x.reads[2].fault->detail;
  EXPECT_EQ(x.reads[2].fault->ec, asio::error::connection_reset) << x.reads[2].fault->detail;
}

// The same last chunk completed by a later read ends the body cleanly.
TEST(ClientHttp, ALastChunkCompletedByALaterReadEndsTheBody) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead + chunked(kEvent) + "0\r\n");
    PeerConn::pause(100ms);
    c.send("\r\n");
    c.hang();
  });
  const Exchange x = one_exchange(peer);
  ASSERT_TRUE(x.response) << x.fault->detail;
  EXPECT_EQ(whole_body(x), kEvent);
}

std::string gzip(const std::string& plain) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, plain.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A gzip body of 64 MiB of zeros (~64 KiB on the wire): the read that
// decodes past max_decoded_bytes_per_read fails the body as a protocol
// fault instead of holding 64 MiB (or, gzip in gzip, gigabytes).
TEST(ClientHttp, ACompressionBombFailsTheBodyAtTheCap) {
  const std::string bomb = gzip(std::string(64u << 20, '\0'));
  ScriptedPeer peer([&](PeerConn& c) {
    c.read_request();
    c.send(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
        "Content-Length: " +
        std::to_string(bomb.size()) + "\r\n\r\n" + bomb);
    c.hang();
  });
  const Exchange x = one_exchange(peer);
  ASSERT_TRUE(x.response) << x.fault->detail;
  ASSERT_FALSE(x.reads.empty());
  const Read& last = x.reads.back();
  ASSERT_TRUE(last.fault) << "the bomb decoded whole";
  EXPECT_EQ(last.fault->stage, lse::http::Stage::body);
  EXPECT_EQ(last.fault->ec, lse::http::make_error_code(lse::http::Errc::decoded_too_large));
  EXPECT_TRUE(lse::http::is_malformed(last.fault->ec));
  for (const Read& r : x.reads)
    EXPECT_LE(r.bytes.size(), lse::http::ResponseLimits{}.max_decoded_bytes_per_read + 64 * 1024);
}

// --- deadlines that move: each read() carries its own ---------------------------------

// Reads until the body ends or a read fails; read i's deadline is
// deadline_of(i, now). Returns the reads.
asio::awaitable<std::vector<Read>> reads_with(
    lse::http::Client& client, const std::function<TimePoint(int, TimePoint)>& deadline_of) {
  std::vector<Read> out;
  const lse::http::Request request{"/chat", "{}", {}};
  lse::http::Started started = co_await client.start(request, Clock::now() + 5s);
  if (!started.response) {
    Read r;
    r.fault = started.response.fault();
    out.push_back(std::move(r));
    client.finish(false);
    co_return out;
  }
  for (int i = 0; i < 1000; ++i) {
    auto chunk = co_await client.read(deadline_of(i, Clock::now()));
    Read r;
    r.arrival = Clock::now();  // when read() answered (a fault has no arrival)
    if (!chunk) {
      r.fault = chunk.fault();
      out.push_back(std::move(r));
      break;
    }
    r.bytes = std::string(chunk->bytes);
    r.body_done = chunk->body_done;
    out.push_back(std::move(r));
    if (out.back().body_done) break;
  }
  client.finish(false);
  co_return out;
}

// An idle deadline: every read may wait 150 ms. Eight events 60 ms apart
// take 480 ms in all, far past the first read's deadline, and all arrive;
// then the peer stalls and the read after the last event fails at its own
// deadline, 150 ms after that event (not at any earlier read's).
TEST(ClientHttp, AnIdleDeadlineMovesWithEveryReadAndOnlyTheLastOneCounts) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead);
    for (int i = 0; i < 8; ++i) {
      PeerConn::pause(60ms);
      c.send(chunked(kEvent));
    }
    c.hang();
  });
  std::vector<Read> reads;
  with_client(peer, [&](lse::http::Client& client) -> asio::awaitable<void> {
    reads = co_await reads_with(client, [](int, TimePoint now) { return now + 150ms; });
  });
  ASSERT_EQ(reads.size(), 9u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_FALSE(reads[i].fault) << "read " << i << ": " << reads[i].fault->detail;
    EXPECT_EQ(reads[i].bytes, kEvent);
  }
  ASSERT_TRUE(reads[8].fault);
  EXPECT_EQ(reads[8].fault->interrupt, lse::http::Interrupt::deadline);
  EXPECT_EQ(reads[8].fault->stage, lse::http::Stage::body);
  EXPECT_GE(ms(reads[8].arrival - reads[7].arrival), 149.0);
  EXPECT_LT(ms(reads[8].arrival - reads[7].arrival), 1000.0);
}

// A later read with an earlier deadline than the one before: the earlier
// one holds (the first read may wait 5 s, the second only 100 ms).
TEST(ClientHttp, ALaterReadWithAnEarlierDeadlineFailsAtThatDeadline) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead);
    PeerConn::pause(50ms);
    c.send(chunked(kEvent));
    c.hang();
  });
  std::vector<Read> reads;
  TimePoint second_asked{};
  with_client(peer, [&](lse::http::Client& client) -> asio::awaitable<void> {
    reads = co_await reads_with(client, [&](int i, TimePoint now) {
      if (i == 0) return now + 5s;
      second_asked = now;
      return now + 100ms;
    });
  });
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].bytes, kEvent);
  ASSERT_TRUE(reads[1].fault);
  EXPECT_EQ(reads[1].fault->interrupt, lse::http::Interrupt::deadline);
  EXPECT_GE(ms(reads[1].arrival - second_asked), 99.0);
  EXPECT_LT(ms(reads[1].arrival - second_asked), 1000.0);  // not the first read's 5 s
}

// A deadline met by a read of one exchange does not reach the next exchange
// on the pooled connection: the second answer comes 250 ms after the first
// exchange's (long passed) read deadline and is read whole.
TEST(ClientHttp, AReadDeadlineEndsWithItsExchange) {
  ScriptedPeer peer([](PeerConn& c) {
    for (int n = 0; n < 2; ++n) {
      c.read_request();
      if (n == 1) PeerConn::pause(250ms);
      c.send(kChunkedHead + chunked(kEvent) + "0\r\n\r\n");
    }
    c.hang();
  });
  Exchange first, second;
  with_client(peer, [&](lse::http::Client& client) -> asio::awaitable<void> {
    first = co_await exchange(client, Clock::now() + 100ms, 100, true);
    second = co_await exchange(client, Clock::now() + 2s, 100, true);
  });
  ASSERT_TRUE(first.response);
  EXPECT_EQ(whole_body(first), kEvent);
  ASSERT_TRUE(second.response) << second.fault->detail;
  EXPECT_FALSE(second.stamps.connected) << "the connection was not reused";
  EXPECT_EQ(whole_body(second), kEvent);
  ASSERT_FALSE(second.reads.empty());
  EXPECT_FALSE(second.reads.back().fault);
}

}  // namespace
