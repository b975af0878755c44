// HTTP semantics the probe must get right (issue 13): the clock of a read
// that brings good content and then a framing error, interim 1xx responses
// before the final one, transfer codings and message framing (RFC 9112 §6),
// obsolete line folding, an endless body and the content chunk ceiling.
// Every test plants its times and bytes in a scripted peer and asserts on the
// values the probe reports.
#include <gtest/gtest.h>
#include <zlib.h>

#include <utility>  // before asio awaitable with GCC 12
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "../http/scripted_peer.hpp"
#include "probe/prober.hpp"
#include "probe_harness.hpp"

namespace {

namespace asio = boost::asio;
using lse::probe::FailureReason;
using lse::probe::Phase;
using lse::probe::ProbeResult;
using lse::test::expect_failure;
using lse::test::expect_gap_between_writes;
using lse::test::expect_wait_until_write;
using lse::test::PeerConn;
using lse::test::probe;
using lse::test::Probed;
using lse::test::ScriptedPeer;
using lse::test::target_for;
using namespace std::chrono_literals;

constexpr auto kDelayMs = 200ms;      // the planted wait before the answer
constexpr double kTolerance = 0.050;  // how late a read may follow its write

using lse::test::chunked;
std::string event(const std::string& data) { return "data: " + data + "\n\n"; }
std::string content_event(int i) {
  return event(R"({"choices":[{"delta":{"content":"w)" + std::to_string(i) + R"("}}]})");
}
std::string end_events() {
  return event(R"({"choices":[{"delta":{},"finish_reason":"stop"}]})") + event("[DONE]");
}
const std::string kChunkedHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

// `plain` compressed (gzip: window bits 15 + 16, zlib-wrapped deflate: 15);
// Z_SYNC_FLUSH leaves the stream open with every byte so far decodable.
std::string compress(const std::string& plain, int window_bits, int flush = Z_FINISH) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, plain.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, flush);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}
std::string gzip(const std::string& plain, int flush = Z_FINISH) {
  return compress(plain, 15 + 16, flush);
}
std::string deflate_coded(const std::string& plain) { return compress(plain, 15); }

double phase(const Probed& p, Phase ph) {
  const auto& v = p.result.phases[static_cast<std::size_t>(ph)];
  EXPECT_TRUE(v) << lse::probe::to_string(ph);
  return v.value_or(-1);
}

// --- one read: headers, good content, then a framing error -----------------------

// The answer comes kDelayMs after the request, in ONE write (one read here):
// the head, a valid content event, then a chunk whose size line is not hex.
// The content arrived with that read: TTFT is the planted delay, and the
// probe fails for the bad chunk.
TEST(ProberHttp, ContentBeforeABadChunkInOneReadKeepsThatReadsArrival) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    PeerConn::pause(kDelayMs);
    c.send(kChunkedHead + chunked(content_event(0)) + "zz\r\nnot a chunk\r\n");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::protocol);
  EXPECT_NE(p.result.error_detail.find("bad chunk"), std::string::npos) << p.result.error_detail;
  EXPECT_EQ(p.result.chunks, 1u);
  ASSERT_TRUE(p.result.ttft);
  EXPECT_GE(*p.result.ttft, 0.0);
  expect_wait_until_write(*p.result.ttft, p, peer, 0, kTolerance);
  EXPECT_GE(p.result.duration, *p.result.ttft);
}

// The same with a compressed body: the bytes that decode before the corrupt
// ones carry the read's arrival; the probe fails for the corruption.
TEST(ProberHttp, ContentBeforeCorruptGzipInOneReadKeepsThatReadsArrival) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    PeerConn::pause(kDelayMs);
    const std::string body = gzip(content_event(0), Z_SYNC_FLUSH) + std::string(64, 'x');
    c.send(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
        "Transfer-Encoding: chunked\r\n\r\n" +
        chunked(body));
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::protocol);
  EXPECT_EQ(p.result.error_detail, "corrupt compressed body");
  EXPECT_EQ(p.result.chunks, 1u);
  ASSERT_TRUE(p.result.ttft);
  expect_wait_until_write(*p.result.ttft, p, peer, 0, kTolerance);
}

// A bad event (not a bad chunk) in the same read: the stream's own verdict.
TEST(ProberHttp, ContentBeforeABadEventInOneReadKeepsThatReadsArrival) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    PeerConn::pause(kDelayMs);
    c.send(kChunkedHead + chunked(content_event(0) + event("{not json")));
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::protocol);
  EXPECT_EQ(p.result.error_detail, "malformed event");
  ASSERT_TRUE(p.result.ttft);
  expect_wait_until_write(*p.result.ttft, p, peer, 0, kTolerance);
}

// A confused gateway sends the next answer before the next request, on the
// pooled connection: its bytes wait in the kernel, whose receive stamp is
// from before the second probe started. The probe's clock starts no later
// than its request, so nothing of it is negative.
TEST(ProberHttp, AnAnswerSentBeforeTheRequestGivesNoNegativeTime) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead + chunked(content_event(0) + end_events()) + "0\r\n\r\n");
    PeerConn::pause(50ms);
    c.send(kChunkedHead + chunked(content_event(1) + end_events()) + "0\r\n\r\n");
    c.read_request();
    c.hang();
  });
  asio::io_context io;
  lse::probe::Prober prober(io, target_for(peer.url()), "host", "probe-test/1");
  const lse::config::Prompt prompt{"short", "hi", "inline"};
  std::vector<ProbeResult> results;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        results.push_back(co_await prober.run(prompt));
        asio::steady_timer wait(io, 200ms);
        co_await wait.async_wait(asio::use_awaitable);
        results.push_back(co_await prober.run(prompt));
      },
      asio::detached);
  io.run_for(5s);
  ASSERT_EQ(results.size(), 2u);
  const ProbeResult& second = results[1];
  ASSERT_TRUE(second.ok) << second.error_detail;
  EXPECT_FALSE(second.new_connection);
  ASSERT_TRUE(second.ttft);
  EXPECT_GE(*second.ttft, 0.0);
  EXPECT_LT(*second.ttft, 0.050);
  EXPECT_GE(second.duration, *second.ttft);
  for (const auto& v : second.phases) {
    if (v) {
      EXPECT_GE(*v, 0.0);
    }
  }
}

// --- interim (1xx) responses --------------------------------------------------------

// 103 Early Hints (with its own Link header), then 100 Continue, then the
// final 200: the probe succeeds, counts two interim responses, and the
// headers phase ends at the final response's headers.
TEST(ProberHttp, InterimResponsesAreSkippedCountedAndInsideTheHeadersPhase) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    PeerConn::pause(50ms);
    c.send("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n");
    PeerConn::pause(50ms);
    c.send("HTTP/1.1 100 Continue\r\n\r\n");
    PeerConn::pause(100ms);  // 200 ms after the request: the final head and content
    c.send(kChunkedHead + chunked(content_event(0)));
    PeerConn::pause(20ms);
    c.send(chunked(content_event(1) + end_events()) + "0\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  ASSERT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(p.result.interim_responses, 2u);
  EXPECT_EQ(p.result.http_status, 200);
  EXPECT_EQ(p.result.chunks, 2u);
  ASSERT_TRUE(p.result.ttft);
  // Write 2 is the final head with the first content: the wait is all in
  // `headers`, none in `first_token`; the gap is the pause before write 3.
  expect_wait_until_write(*p.result.ttft, p, peer, 2, kTolerance);
  expect_wait_until_write(phase(p, Phase::headers), p, peer, 2, kTolerance);
  EXPECT_LT(phase(p, Phase::first_token), 0.010);
  ASSERT_EQ(p.result.gaps.size(), 1u);
  EXPECT_GE(p.result.gaps[0], 0.019);
  expect_gap_between_writes(p.result.gaps[0], peer, 2, 3, kTolerance);
}

// Interim responses, the final head and content all in one read.
TEST(ProberHttp, InterimResponsesInTheSameReadAsTheFinalOne) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    PeerConn::pause(kDelayMs);
    c.send(
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.js>; rel=preload\r\n"
        "\r\nHTTP/1.1 102 Processing\r\n\r\n" +
        kChunkedHead + chunked(content_event(0) + end_events()) + "0\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  ASSERT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(p.result.interim_responses, 3u);
  ASSERT_TRUE(p.result.ttft);
  expect_wait_until_write(*p.result.ttft, p, peer, 0, kTolerance);
}

// 101 Switching Protocols ends HTTP on the connection: not interim for us.
TEST(ProberHttp, SwitchingProtocolsIsAProtocolFailure) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::protocol);
  EXPECT_EQ(p.result.http_status, 101);
  EXPECT_EQ(p.result.interim_responses, 0u);
  EXPECT_NE(p.result.error_detail.find("101 Switching Protocols"), std::string::npos)
      << p.result.error_detail;
  EXPECT_LT(p.wall, 1.0);
}

TEST(ProberHttp, EndlessInterimResponsesAreAProtocolFailure) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    for (int i = 0; i < 1000; ++i) c.send("HTTP/1.1 100 Continue\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::protocol);
  EXPECT_NE(p.result.error_detail.find("interim"), std::string::npos) << p.result.error_detail;
  EXPECT_EQ(p.result.interim_responses, lse::http::kMaxInterimResponses);
}

// --- message framing (RFC 9112 §6) ---------------------------------------------------

struct FramingCase {
  const char* name;
  std::string head_fields;  // between the status line and the blank line
  const char* detail;       // a substring of the failure message
};

TEST(ProberHttp, FramingThatCannotBeTrustedIsAProtocolFailure) {
  const std::string body = chunked(content_event(0) + end_events()) + "0\r\n\r\n";
  const FramingCase cases[] = {
      {"identity", "Transfer-Encoding: identity\r\nContent-Length: 10\r\n",
       "Content-Length and Transfer-Encoding"},
      {"identity alone", "Transfer-Encoding: identity\r\n", "Transfer-Encoding 'identity'"},
      {"unknown coding", "Transfer-Encoding: foo, chunked\r\n", "Transfer-Encoding 'foo'"},
      {"chunked twice", "Transfer-Encoding: chunked, chunked\r\n", "chunked"},
      {"chunked not last", "Transfer-Encoding: chunked, gzip\r\n", "chunked"},
      {"three codings", "Transfer-Encoding: gzip, gzip, deflate, chunked\r\n",
       "more than 2 transfer codings"},
      {"chunked then length", "Transfer-Encoding: chunked\r\nContent-Length: 20\r\n",
       "Content-Length and Transfer-Encoding"},
      {"length then chunked", "Content-Length: 20\r\nTransfer-Encoding: chunked\r\n",
       "Content-Length and Transfer-Encoding"},
  };
  for (const FramingCase& fc : cases) {
    ScriptedPeer peer([&](PeerConn& c) {
      c.read_request();
      c.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + fc.head_fields + "\r\n" +
             body);
      c.hang();
    });
    const Probed p = probe(target_for(peer.url()));
    SCOPED_TRACE(fc.name);
    expect_failure(p, FailureReason::protocol);
    EXPECT_NE(p.result.error_detail.find(fc.detail), std::string::npos) << p.result.error_detail;
    EXPECT_EQ(p.result.chunks, 0u);
    EXPECT_LT(p.wall, 1.0);
  }
}

// RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message is faulty framing.
TEST(ProberHttp, TransferEncodingInAnHttp10ResponseIsAProtocolFailure) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(
        "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
        chunked(content_event(0) + end_events()) + "0\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::protocol);
  EXPECT_NE(p.result.error_detail.find("HTTP/1.0"), std::string::npos) << p.result.error_detail;
}

// gzip as a transfer coding under chunked: decoded like a content coding,
// and each event still carries the arrival of its read.
TEST(ProberHttp, GzipTransferCodingUnderChunkedIsDecoded) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        "Transfer-Encoding: gzip, chunked\r\n\r\n");
    std::string plain;
    for (int i = 0; i < 3; ++i) plain += content_event(i);
    const std::string all = gzip(plain + end_events());
    c.send(chunked(all.substr(0, all.size() / 2)));
    PeerConn::pause(kDelayMs);
    c.send(chunked(all.substr(all.size() / 2)) + "0\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  ASSERT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(p.result.chunks, 3u);
  EXPECT_EQ(p.result.finish_reason, "stop");
  EXPECT_EQ(p.result.content_encoding, "");  // the content itself was not encoded
}

// Transfer-Encoding without chunked: the body runs to the close (RFC 9112
// §6.3), here gzip-coded; a gzip transfer coding over a gzip content coding
// decodes twice; two transfer codings are undone last first.
TEST(ProberHttp, GzipTransferCodingToTheCloseAndOverAContentCoding) {
  const std::string plain = content_event(0) + content_event(1) + end_events();
  ScriptedPeer close_delimited([&](PeerConn& c) {
    c.read_request();
    c.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: gzip\r\n\r\n" +
           gzip(plain));
    c.close();
  });
  const Probed a = probe(target_for(close_delimited.url()));
  ASSERT_TRUE(a.result.ok) << a.result.error_detail;
  EXPECT_EQ(a.result.chunks, 2u);

  ScriptedPeer twice([&](PeerConn& c) {
    c.read_request();
    c.send(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
        "Transfer-Encoding: gzip, chunked\r\n\r\n" +
        chunked(gzip(gzip(plain))) + "0\r\n\r\n");
    c.hang();
  });
  const Probed b = probe(target_for(twice.url()));
  ASSERT_TRUE(b.result.ok) << b.result.error_detail;
  EXPECT_EQ(b.result.chunks, 2u);
  EXPECT_EQ(b.result.content_encoding, "gzip");

  // Two transfer codings: deflate applied first, gzip over it; undone in
  // the reverse order.
  ScriptedPeer two([&](PeerConn& c) {
    c.read_request();
    c.send(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        "Transfer-Encoding: deflate, gzip, chunked\r\n\r\n" +
        chunked(gzip(deflate_coded(plain))) + "0\r\n\r\n");
    c.hang();
  });
  const Probed d = probe(target_for(two.url()));
  ASSERT_TRUE(d.result.ok) << d.result.error_detail;
  EXPECT_EQ(d.result.chunks, 2u);
}

// Obsolete line folding (RFC 9112 §5.2): a user agent replaces each obs-fold
// with SP before interpreting the value; Beast does, so a folded
// Content-Type still names the event stream.
TEST(ProberHttp, FoldedHeaderIsUnfolded) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream;\r\n charset=utf-8\r\n"
        "X-Folded: a\r\n\tb\r\nTransfer-Encoding: chunked\r\n\r\n" +
        chunked(content_event(0) + end_events()) + "0\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  ASSERT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(p.result.chunks, 1u);
}

// --- bodies that do not end ------------------------------------------------------------

// Peak resident memory since the last reset, in KiB (0 when unknown).
long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    long kib = 0;
    if (key == "VmHWM:" && status >> kib) return kib;
    status.ignore(256, '\n');
  }
  return 0;
}
bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

// There is no cap on the size of a body (a stream is as long as it is): a
// body that never ends ends at the total timeout, and reading it keeps
// nothing but the bytes of the current read. The peer writes keep-alive
// comments as fast as the probe reads them.
TEST(ProberHttp, EndlessBodyEndsAtTheTotalTimeoutInBoundedMemory) {
  std::atomic<std::size_t> sent{0};
  ScriptedPeer peer([&](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead);
    std::string block;
    while (block.size() < 60000) block += ": keep-alive\n\n";
    const std::string piece = chunked(block);
    for (;;) {
      c.send(piece);
      sent += piece.size();
    }
  });
  auto target = target_for(peer.url());
  target.timeout.total = 1500ms;
  const bool measured = reset_peak_rss();
  const long before = peak_rss_kib();
  const Probed p = probe(target);
  const long after = peak_rss_kib();
  expect_failure(p, FailureReason::timeout_total);
  EXPECT_GE(p.result.duration, 1.499);
  EXPECT_LT(p.result.duration, 3.0);  // the timeout set here, not the 5 s default
  EXPECT_EQ(p.result.chunks, 0u);
  EXPECT_GT(sent.load(), std::size_t{16} << 20) << "the peer sent too little to tell";
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan's quarantine and shadow memory make resident size meaningless";
#endif
  if (!measured || before == 0) GTEST_SKIP() << "no /proc/self peak RSS reset";
  // Had the body been kept, the peak would have grown by what was sent.
  EXPECT_LT(after - before, 8 * 1024) << "peak RSS grew by " << (after - before) << " KiB while "
                                      << (sent.load() >> 20) << " MiB streamed";
}

// A stream of more content chunks than any answer has is cut off: the
// probe's clock keeps one instant per chunk.
TEST(ProberHttp, ContentChunksBeyondTheCeilingAreAProtocolFailure) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead);
    std::string batch;
    for (int i = 0; i < 4096; ++i) batch += content_event(i % 10);
    const std::string piece = chunked(batch);
    for (std::size_t sent = 0; sent <= lse::probe::kMaxContentChunks; sent += 4096) c.send(piece);
    c.hang();
  });
  auto target = target_for(peer.url());
  target.timeout.total = 9s;
  target.timeout.idle = 9s;
  const Probed p = probe(target);
  expect_failure(p, FailureReason::protocol);
  EXPECT_EQ(p.result.chunks, lse::probe::kMaxContentChunks);
  EXPECT_NE(p.result.error_detail.find("content chunks"), std::string::npos)
      << p.result.error_detail;
}

}  // namespace
