// Allocation test for the client's body reads: once a connection is warm,
// reading a streamed body performs no heap allocation per read (the clock
// must not wait on the allocator; issue 11 §1). The same exchange with 40
// and with 200 events, one socket read each, allocates (nearly) the same.
// Counts this thread's allocations only (the scripted peer's thread
// allocates as it likes). The same over HTTP/2 (h2c): DATA frames through
// the session and the same read paths (libnghttp2's own malloc() calls are
// not operator new and go uncounted).
#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "../../support/counting_new.hpp"
#include "h2_peer.hpp"
#include "http/client.hpp"
#include "scripted_peer.hpp"

namespace {

namespace asio = boost::asio;
using lse::http::Clock;
using lse::test::PeerConn;
using lse::test::ScriptedPeer;
using lse::test::t_allocations;
using namespace std::chrono_literals;

// Exchanges on one kept-alive connection: the n-th streams events[n] events,
// 2 ms apart (each its own socket read), then ends the body.
const int kEvents[] = {40, 40, 200, 40, 200};
constexpr int kExchanges = sizeof kEvents / sizeof kEvents[0];

struct Measured {
  long allocations = 0;
  int reads = 0;
  std::size_t bytes = 0;
  bool ok = false;
};

// Counts what read_body() hands it, until the body ends.
class CountingSink final : public lse::http::ChunkSink {
 public:
  CountingSink(Measured& m, lse::http::TimePoint deadline) : m_(m), deadline_(deadline) {}
  std::optional<lse::http::TimePoint> take(const lse::http::Chunk& chunk) override {
    ++m_.reads;
    m_.bytes += chunk.bytes.size();
    return deadline_;
  }

 private:
  Measured& m_;
  lse::http::TimePoint deadline_;
};

enum class Reads { one_at_a_time, into_a_sink };

asio::awaitable<Measured> one_exchange(lse::http::Client& client, Reads how) {
  Measured m;
  const lse::http::Request request{"/chat", "{}", {}};
  const auto deadline = Clock::now() + 10s;
  lse::http::Started started = co_await client.start(request, deadline);
  if (!started.response) co_return m;
  // From the first body read to the last: what the reads cost.
  const long before = t_allocations;
  if (how == Reads::into_a_sink) {
    CountingSink sink(m, deadline);
    if (co_await client.read_body(sink, deadline)) co_return m;
  } else {
    for (;;) {
      auto chunk = co_await client.read(deadline);
      if (!chunk) co_return m;
      ++m.reads;
      m.bytes += chunk->bytes.size();
      if (chunk->body_done) break;
    }
  }
  m.allocations = t_allocations - before;
  client.finish(true);
  m.ok = true;
  co_return m;
}

void run_exchanges(lse::http::ClientOptions options, Reads how, Measured (&out)[kExchanges]) {
  asio::io_context io;
  lse::http::Client client(io, std::move(options));
  bool done = false;
  // One run() as in the exporter: asio's recycled blocks live in the state
  // of the thread's run() (a loop of run_one_for() would free them each time).
  asio::steady_timer guard(io, 20s);
  guard.async_wait([&](boost::system::error_code ec) {
    if (!ec) io.stop();
  });
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (auto& m : out) m = co_await one_exchange(client, how);
        done = true;
        guard.cancel();
      },
      asio::detached);
  io.run();
  ASSERT_TRUE(done) << "the exchanges did not finish";
}

void expect_no_allocation_per_read(Reads how) {
  ScriptedPeer peer([](PeerConn& c) {
    for (const int events : kEvents) {
      c.read_request();
      c.send_stream_head();
      for (int i = 0; i < events; ++i) {
        PeerConn::pause(2ms);
        c.send_content(i % 10);
      }
      c.send("0\r\n\r\n");
    }
    c.hang();
  });
  lse::http::ClientOptions options;
  options.url = *lse::net::parse_url(peer.url());
  Measured m[kExchanges];
  run_exchanges(options, how, m);
  for (int i = 0; i < kExchanges; ++i) ASSERT_TRUE(m[i].ok) << "exchange " << i;
  // The warm exchanges: 3 (40 events) and 4 (200 events), after the first
  // of each size grew what grows once.
  // 150 and more reads more must not cost more allocations. A few may still
  // come from buffers growing once to a larger read than any before (on a
  // busy machine the peer's writes coalesce); each growth doubles, so they
  // stay a handful, where one allocation per read would add 150.
  const int more_reads = m[4].reads - m[3].reads;
  EXPECT_GE(more_reads, 100) << "the events did not come in reads of their own";
  EXPECT_LE(m[4].allocations - m[3].allocations, 4)
      << m[3].reads << " reads: " << m[3].allocations << " allocations; " << m[4].reads
      << " reads: " << m[4].allocations;
}

void expect_no_allocation_per_read_h2(Reads how) {
  lse::test::H2Peer peer(
      [](lse::test::H2PeerConn& c) {
        c.start_h2();
        for (const int events : kEvents) {
          const auto id = c.read_h2_request();
          c.send_headers(id, 200, {{"content-type", "text/event-stream"}});
          for (int i = 0; i < events; ++i) {
            PeerConn::pause(2ms);
            c.send_data(id, "data: {\"choices\":[{\"delta\":{\"content\":\"w" +
                                std::to_string(i % 10) + "\"}}]}\n\n");
          }
          c.send_data(id, "", true);
        }
        c.hang();
      },
      {.tls = false});
  lse::http::ClientOptions options;
  options.url = *lse::net::parse_url(peer.url());
  options.http_version = lse::http::HttpVersion::http2;
  Measured m[kExchanges];
  run_exchanges(options, how, m);
  for (int i = 0; i < kExchanges; ++i) ASSERT_TRUE(m[i].ok) << "exchange " << i;
  const int more_reads = m[4].reads - m[3].reads;
  EXPECT_GE(more_reads, 100) << "the events did not come in reads of their own";
  EXPECT_LE(m[4].allocations - m[3].allocations, 4)
      << m[3].reads << " reads: " << m[3].allocations << " allocations; " << m[4].reads
      << " reads: " << m[4].allocations;
}

TEST(ClientAlloc, H2BodyReadsAllocateNothingPerRead) {
  expect_no_allocation_per_read_h2(Reads::one_at_a_time);
}

TEST(ClientAlloc, AnH2BodyReadIntoASinkAllocatesNothingPerChunk) {
  expect_no_allocation_per_read_h2(Reads::into_a_sink);
}

TEST(ClientAlloc, BodyReadsAllocateNothingPerRead) {
  expect_no_allocation_per_read(Reads::one_at_a_time);
}

TEST(ClientAlloc, ABodyReadIntoASinkAllocatesNothingPerChunk) {
  expect_no_allocation_per_read(Reads::into_a_sink);
}

}  // namespace
