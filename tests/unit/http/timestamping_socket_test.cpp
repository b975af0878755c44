// The probe's socket layer: reads never re-arm the descriptor (no epoll_ctl()
// per read), a read that filled its buffer reads again at once (the rest is
// already there: no edge would come), an end (FIN or RST) queued behind the
// last bytes is seen at once, every read carries the kernel's receive stamp,
// and a waiting read can be canceled. Bounded: a read that never completes
// fails the test at a deadline instead of hanging it.
#include "http/timestamping_socket.hpp"

#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

// Every epoll_ctl() of this test binary (asio's reactor included) is counted
// here and then made as the system call.
namespace {
std::atomic<int> g_epoll_ctl_calls{0};
}
extern "C" int epoll_ctl(int epfd, int op, int fd, struct epoll_event* event) {
  g_epoll_ctl_calls.fetch_add(1, std::memory_order_relaxed);
  return static_cast<int>(::syscall(SYS_epoll_ctl, epfd, op, fd, event));
}

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using lse::http::ProbeSocket;
using lse::http::TimestampingSocket;
using namespace std::chrono_literals;

// A connected pair on 127.0.0.1: the writing end is a plain blocking socket
// another thread drives; the reading end is the probe's layer on `io`.
struct Pair {
  asio::io_context io;
  asio::io_context peer_io;
  ProbeSocket reading{io};
  tcp::socket writing{peer_io};
  TimestampingSocket layer{reading};

  Pair() {
    tcp::acceptor acceptor(peer_io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    reading.connect(acceptor.local_endpoint());
    acceptor.accept(writing);
    writing.set_option(tcp::no_delay(true));
    EXPECT_TRUE(layer.enable_timestamps());
    EXPECT_TRUE(layer.enable_queue_hints());
  }
};

struct Reads {
  std::string bytes;
  int with_data = 0;
  int without_stamp = 0;
  boost::system::error_code end;  // eof, or the error that ended the reads
};

// Reads with `buffer_size` until the end; the whole run is bounded by
// `limit` (the io_context stops and the test fails). `after_read` runs after
// each read that brought bytes.
Reads read_all(Pair& p, std::size_t buffer_size, std::chrono::milliseconds limit,
               const std::function<void()>& after_read = nullptr) {
  Reads r;
  bool done = false;
  asio::steady_timer guard(p.io, limit);
  guard.async_wait([&](boost::system::error_code ec) {
    if (!ec) p.io.stop();  // the reads did not end in time
  });
  asio::co_spawn(
      p.io,
      [&]() -> asio::awaitable<void> {
        std::vector<char> buf(buffer_size);
        for (;;) {
          boost::system::error_code ec;
          const std::size_t n = co_await p.layer.async_read_some(
              asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
          if (ec) {
            r.end = ec;
            break;
          }
          r.bytes.append(buf.data(), n);
          ++r.with_data;
          if (p.layer.last_kernel_ns() == 0) ++r.without_stamp;
          if (after_read) after_read();
        }
        done = true;
        guard.cancel();
      },
      asio::detached);
  p.io.run();
  EXPECT_TRUE(done) << "the reads did not end within " << limit.count() << " ms";
  return r;
}

}  // namespace

// 20 chunks 5 ms apart, each read waiting for the next: the descriptor was
// registered with the reactor when the socket opened, and reading never
// touches the registration again. The portable read (recvmsg(), EAGAIN,
// async_wait) made one EPOLL_CTL_MOD per chunk.
TEST(TimestampingSocket, ReadsDoNotReArmTheDescriptor) {
  Pair p;
  constexpr int kChunks = 20;
  std::thread writer([&] {
    for (int i = 0; i < kChunks; ++i) {
      std::this_thread::sleep_for(5ms);
      asio::write(p.writing, asio::buffer("chunk " + std::to_string(i) + ";"));
    }
    p.writing.shutdown(tcp::socket::shutdown_send);
  });
  const int before = g_epoll_ctl_calls.load();
  const Reads r = read_all(p, 64 * 1024, 10s);
  const int during = g_epoll_ctl_calls.load() - before;
  writer.join();
  std::string expected;
  for (int i = 0; i < kChunks; ++i) expected += "chunk " + std::to_string(i) + ";";
  EXPECT_EQ(r.bytes, expected);
  EXPECT_EQ(r.end, asio::error::eof);
  EXPECT_EQ(r.without_stamp, 0);
#if LSE_REACTOR_READ
  // One recvmsg() per read: a read that drained the queue is followed by a
  // wait for the next event, not by a read that answers EAGAIN. (A chunk that
  // lands between a read and the reactor's look may cost one more.)
  EXPECT_LE(p.layer.receive_calls(), static_cast<std::uint64_t>(r.with_data) + 1u + kChunks / 4);
  EXPECT_EQ(during, 0) << r.with_data << " reads with data";
#else
  // Other Boost versions: the portable read, which re-arms once per wait
  // and reads right away each time (one may answer EAGAIN).
  EXPECT_LE(p.layer.receive_calls(), 2u * (static_cast<std::uint64_t>(r.with_data) + 1u));
  EXPECT_GE(during, 1) << r.with_data << " reads with data";
#endif
}

// The last bytes and the end arrive together (the peer writes and closes at
// once, before the reader looks): the read that takes the bytes leaves the
// FIN queued, and no new edge will come. The next read must still see it
// now, not at a timeout. The same for a reset (SO_LINGER 0) behind the bytes.
TEST(TimestampingSocket, AnEndQueuedBehindTheLastBytesIsSeenAtOnce) {
  for (const bool reset : {false, true}) {
    Pair p;
    asio::write(p.writing, asio::buffer(std::string("last words")));
    if (reset) {
      p.writing.set_option(asio::socket_base::linger(true, 0));
      p.writing.close();
    } else {
      p.writing.shutdown(tcp::socket::shutdown_send);
    }
    std::this_thread::sleep_for(20ms);  // both are queued before the first read
    const auto start = std::chrono::steady_clock::now();
    const Reads r = read_all(p, 64 * 1024, 5s);
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(r.bytes, "last words") << (reset ? "reset" : "fin");
    const boost::system::error_code expected_end =
        reset ? boost::system::error_code(asio::error::connection_reset)
              : boost::system::error_code(asio::error::eof);
    EXPECT_EQ(r.end, expected_end);
    EXPECT_LT(took, 2s) << (reset ? "reset" : "fin") << ": seen only at the guard's deadline";
  }
}

// 256 KiB written at once, read 1 KiB at a time: a read that filled its
// buffer must read again right away, since the rest is already in the socket
// and no new edge will announce it. Every byte arrives, in order.
TEST(TimestampingSocket, AFullBufferReadsAgainWithoutWaitingForAnEdge) {
  Pair p;
  std::string sent(256 * 1024, '\0');
  for (std::size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>('a' + i % 26);
  std::thread writer([&] {
    asio::write(p.writing, asio::buffer(sent));
    p.writing.shutdown(tcp::socket::shutdown_send);
  });
  const Reads r = read_all(p, 1024, 10s);
  writer.join();
  EXPECT_EQ(r.bytes.size(), sent.size());
  EXPECT_TRUE(r.bytes == sent);
  EXPECT_EQ(r.end, asio::error::eof);
  EXPECT_GE(r.with_data, 256);
}

// A read that waits for data ends with operation_aborted when the socket is
// canceled (how the client's deadlines and shutdown stop a probe).
TEST(TimestampingSocket, CancelEndsAWaitingRead) {
  Pair p;
  asio::steady_timer later(p.io, 50ms);
  later.async_wait([&](boost::system::error_code) { p.reading.cancel(); });
  const Reads r = read_all(p, 1024, 10s);
  EXPECT_EQ(r.end, asio::error::operation_aborted);
  EXPECT_EQ(r.with_data, 0);
}

// After a drained read the next one waits in the reactor; bytes that arrive
// while no read is pending (the reader was busy) are read by the next one at
// once, from the event seen meanwhile: nothing waits for an edge that came.
TEST(TimestampingSocket, BytesThatArriveBetweenReadsAreNotMissed) {
  Pair p;
  std::string got;
  bool done = false;
  asio::co_spawn(
      p.io,
      [&]() -> asio::awaitable<void> {
        char buf[1024];
        boost::system::error_code ec;
        asio::write(p.writing, asio::buffer(std::string("first")));
        std::size_t n = co_await p.layer.async_read_some(
            asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
        got.append(buf, n);
        // Busy: the second piece arrives while no read is pending, and the
        // io_context runs its reactor meanwhile (the timer below).
        asio::write(p.writing, asio::buffer(std::string("second")));
        asio::steady_timer pause(p.io, 20ms);
        co_await pause.async_wait(asio::use_awaitable);
        n = co_await p.layer.async_read_some(asio::buffer(buf),
                                             asio::redirect_error(asio::use_awaitable, ec));
        got.append(buf, n);
        done = true;
      },
      asio::detached);
  p.io.run_for(5s);
  EXPECT_TRUE(done);
  EXPECT_EQ(got, "firstsecond");
}

#if LSE_REACTOR_READ
// The case the try right away used to cover: the reader waits after a
// drained read, and the last bytes and a reset arrive while its thread is
// busy, so the reactor sees one edge for both. The read it wakes takes the
// bytes and drains the queue; the next waits for an edge that will not come.
// rearm() (the client calls it after a second of silence) makes the reactor
// report the pending reset, read as one.
TEST(TimestampingSocket, AResetThatCameWithTheLastBytesIsReadOnceRearmed) {
  Pair p;
  std::atomic<bool> first_read{false};
  std::thread writer([&] {
    while (!first_read.load()) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(10ms);  // the reader's thread is busy now
    asio::write(p.writing, asio::buffer(std::string("last words")));
    p.writing.set_option(asio::socket_base::linger(true, 0));
    p.writing.close();
  });
  asio::write(p.writing, asio::buffer(std::string("first;")));
  asio::steady_timer rearm(p.io, 300ms);
  rearm.async_wait([&](boost::system::error_code ec) {
    if (!ec) p.layer.rearm();
  });
  const Reads r = read_all(p, 1024, 5s, [&] {
    if (first_read.exchange(true)) return;
    EXPECT_TRUE(p.layer.drained());
    // Busy while both arrive: the reactor looks only afterwards.
    asio::post(p.io, [] { std::this_thread::sleep_for(60ms); });
  });
  writer.join();
  EXPECT_EQ(r.bytes, "first;last words");
  EXPECT_EQ(r.end, asio::error::connection_reset);
}
#endif

// An empty read completes at once, whatever the socket's state: ssl::stream
// issues one to run its handler as if posted, and after a drained read
// (nothing left in the kernel) it must not wait for bytes that may never come.
TEST(TimestampingSocket, AnEmptyReadCompletesAtOnceAfterADrainedRead) {
  Pair p;
  asio::write(p.writing, asio::buffer(std::string("only")));
  bool empty_done = false;
  boost::system::error_code empty_ec = asio::error::would_block;
  std::size_t empty_n = 99;
  asio::co_spawn(
      p.io,
      [&]() -> asio::awaitable<void> {
        char buf[64];
        boost::system::error_code ec;
        co_await p.layer.async_read_some(asio::buffer(buf),
                                         asio::redirect_error(asio::use_awaitable, ec));
        EXPECT_TRUE(p.layer.drained());
        empty_n = co_await p.layer.async_read_some(asio::buffer(buf, 0),
                                                   asio::redirect_error(asio::use_awaitable, ec));
        empty_ec = ec;
        empty_done = true;
      },
      asio::detached);
  p.io.run_for(2s);
  EXPECT_TRUE(empty_done) << "the empty read waited for bytes";
  EXPECT_EQ(empty_ec, boost::system::error_code());
  EXPECT_EQ(empty_n, 0u);
}
