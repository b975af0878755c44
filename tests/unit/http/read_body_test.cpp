// Client::read_body(): the body's chunks go to a sink as their reads
// complete, each with its own read's arrival; the sink names every next
// read's deadline and can stop the reads; a fault ends them after the bytes
// that came with it. Times are checked against what the scripted peer did.
#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "http/client.hpp"
#include "scripted_peer.hpp"

namespace {

namespace asio = boost::asio;
using lse::http::Chunk;
using lse::http::Clock;
using lse::http::Fault;
using lse::http::TimePoint;
using lse::test::PeerConn;
using lse::test::PeerTimes;
using lse::test::ScriptedPeer;
using namespace std::chrono_literals;

using lse::test::chunked;
std::string event(int i) {
  return "data: {\"choices\":[{\"delta\":{\"content\":\"w" + std::to_string(i) + "\"}}]}\n\n";
}
const std::string kChunkedHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

struct Taken {
  std::string bytes;
  TimePoint arrival{};
  bool body_done = false;
};

// Keeps every chunk; asks for the next read with `next(chunks so far)`.
class RecordingSink final : public lse::http::ChunkSink {
 public:
  explicit RecordingSink(std::function<std::optional<TimePoint>(std::size_t)> next)
      : next_(std::move(next)) {}
  std::optional<TimePoint> take(const Chunk& chunk) override {
    taken.push_back({std::string(chunk.bytes), chunk.arrival, chunk.body_done});
    return next_(taken.size());
  }
  std::vector<Taken> taken;

 private:
  std::function<std::optional<TimePoint>(std::size_t)> next_;
};

struct BodyRead {
  bool started = false;
  std::optional<Fault> fault;
  bool done = false;
};

// start(), then read_body() into `sink` with `first_deadline`, then finish().
BodyRead read_body(const ScriptedPeer& peer, RecordingSink& sink, Clock::duration first_deadline) {
  asio::io_context io;
  lse::http::ClientOptions options;
  options.url = *lse::net::parse_url(peer.url());
  lse::http::Client client(io, options);
  BodyRead out;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const lse::http::Request request{"/chat", "{}", {}};
        lse::http::Started started = co_await client.start(request, Clock::now() + 5s);
        out.started = static_cast<bool>(started.response);
        if (out.started) out.fault = co_await client.read_body(sink, Clock::now() + first_deadline);
        client.finish(false);
        out.done = true;
      },
      asio::detached);
  const auto limit = Clock::now() + 10s;
  while (!out.done && Clock::now() < limit) io.run_one_for(10ms);
  EXPECT_TRUE(out.done) << "read_body did not finish";
  return out;
}

std::string all_bytes(const RecordingSink& sink) {
  std::string s;
  for (const auto& t : sink.taken) s += t.bytes;
  return s;
}

// Five events 30 ms apart, then the last chunk: each event is its own chunk,
// stamped with the arrival of its own write; the body's end goes to the
// sink and ends the read.
TEST(ReadBody, EveryChunkGoesToTheSinkWithItsOwnArrival) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead);
    for (int i = 0; i < 5; ++i) {
      PeerConn::pause(30ms);
      c.send(chunked(event(i)));
    }
    PeerConn::pause(30ms);
    c.send("0\r\n\r\n");
    c.hang();
  });
  RecordingSink sink([](std::size_t) { return Clock::now() + 2s; });
  const BodyRead r = read_body(peer, sink, 2s);
  ASSERT_TRUE(r.started);
  EXPECT_FALSE(r.fault) << r.fault->detail;
  ASSERT_EQ(sink.taken.size(), 6u);
  const PeerTimes times = peer.times(7);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(sink.taken[i].bytes, event(static_cast<int>(i))) << i;
    EXPECT_FALSE(sink.taken[i].body_done) << i;
    // Write 0 is the head; event i is write 1 + i.
    EXPECT_GE(sink.taken[i].arrival, times.sends[1 + i].begin - 1ms) << i;
    EXPECT_LE(sink.taken[i].arrival, times.sends[1 + i].end + 50ms) << i;
  }
  EXPECT_TRUE(sink.taken[5].bytes.empty());
  EXPECT_TRUE(sink.taken[5].body_done);
}

// The sink wants no more after the second chunk: the read ends there, with
// no fault, and takes nothing else though the peer goes on.
TEST(ReadBody, TheSinkStopsTheReads) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead);
    for (int i = 0; i < 5; ++i) {
      PeerConn::pause(20ms);
      c.send(chunked(event(i)));
    }
    c.hang();
  });
  RecordingSink sink([](std::size_t n) -> std::optional<TimePoint> {
    if (n == 2) return std::nullopt;
    return Clock::now() + 2s;
  });
  const BodyRead r = read_body(peer, sink, 2s);
  ASSERT_TRUE(r.started);
  EXPECT_FALSE(r.fault) << r.fault->detail;
  ASSERT_EQ(sink.taken.size(), 2u);
  EXPECT_EQ(all_bytes(sink), event(0) + event(1));
}

// The deadline the sink names is the next read's: 2 s for the first read,
// then 150 ms; the peer stops after one event, and the read fails at the
// short deadline, not the long one.
TEST(ReadBody, TheDeadlineTheSinkNamesIsTheNextReads) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead);
    PeerConn::pause(20ms);
    c.send(chunked(event(0)));
    c.hang();
  });
  TimePoint asked{};
  RecordingSink sink([&](std::size_t) {
    asked = Clock::now();
    return asked + 150ms;
  });
  const BodyRead r = read_body(peer, sink, 2s);
  const TimePoint ended = Clock::now();
  ASSERT_TRUE(r.started);
  ASSERT_EQ(sink.taken.size(), 1u);
  ASSERT_TRUE(r.fault);
  EXPECT_EQ(r.fault->interrupt, lse::http::Interrupt::deadline);
  EXPECT_EQ(r.fault->stage, lse::http::Stage::body);
  EXPECT_GE(ended - asked, 149ms);
  EXPECT_LT(ended - asked, 1500ms);  // not the first read's 2 s
}

// The content before a bad chunk line, in one write: the sink takes it with
// that write's arrival, then the read ends with the framing fault.
TEST(ReadBody, BytesBeforeABadChunkGoToTheSinkThenTheFaultEndsTheRead) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    PeerConn::pause(50ms);
    c.send(kChunkedHead + chunked(event(0)) + "zz\r\nnot a chunk\r\n");
    c.hang();
  });
  RecordingSink sink([](std::size_t) { return Clock::now() + 2s; });
  const BodyRead r = read_body(peer, sink, 2s);
  ASSERT_TRUE(r.started);
  ASSERT_EQ(sink.taken.size(), 1u);
  EXPECT_EQ(sink.taken[0].bytes, event(0));
  const PeerTimes times = peer.times(1);
  EXPECT_GE(sink.taken[0].arrival, times.sends[0].begin - 1ms);
  EXPECT_LE(sink.taken[0].arrival, times.sends[0].end + 50ms);
  ASSERT_TRUE(r.fault);
  EXPECT_EQ(r.fault->stage, lse::http::Stage::body);
  EXPECT_EQ(r.fault->detail, "bad HTTP body: bad chunk");
}

// A whole body already buffered with the head (one write): read_body takes
// it without a socket read and completes (through post(), not inside the
// call), the body's end included.
TEST(ReadBody, ABodyThatCameWithTheHeadIsTakenWithoutAnotherRead) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send(kChunkedHead + chunked(event(0) + event(1)) + "0\r\n\r\n");
    c.hang();
  });
  RecordingSink sink([](std::size_t) { return Clock::now() + 2s; });
  const BodyRead r = read_body(peer, sink, 2s);
  ASSERT_TRUE(r.started);
  EXPECT_FALSE(r.fault) << r.fault->detail;
  EXPECT_EQ(all_bytes(sink), event(0) + event(1));
  ASSERT_FALSE(sink.taken.empty());
  EXPECT_TRUE(sink.taken.back().body_done);
}

}  // namespace
