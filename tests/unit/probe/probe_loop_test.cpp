// The probe thread's loop (probe/probe_loop.hpp): the policy that decides
// when a turn sleeps a window first (pure), and the loop itself on real
// loopback streams: while busy, one epoll_wait serves several reads, and
// every read still carries the kernel's stamp of its own write.
#include "probe/probe_loop.hpp"

#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "http/opening.hpp"
#include "http/timestamping_socket.hpp"

// Every epoll_wait() of this test binary (asio's reactor's) is counted here
// and then made as the system call.
namespace {
std::atomic<long> g_epoll_waits{0};
}
extern "C" int epoll_wait(int epfd, struct epoll_event* events, int maxevents, int timeout) {
  g_epoll_waits.fetch_add(1, std::memory_order_relaxed);
  return static_cast<int>(::syscall(SYS_epoll_pwait, epfd, events, maxevents, timeout, nullptr, 0));
}

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using lse::probe::WakeupPolicy;
using lse::probe::WakeupSettings;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

WakeupSettings settings_2ms() {
  WakeupSettings s;
  s.window = 2ms;
  s.min_per_window = 4;
  s.period = 10ms;
  return s;
}

// --- the policy ---------------------------------------------------------------

TEST(WakeupPolicy, ARateBelowTheMinimumKeepsEveryTurnWaitingForItsEvent) {
  const Clock::time_point t0{};
  WakeupPolicy policy(settings_2ms(), t0);
  // 15 handlers in 10 ms: 3 per 2 ms window, under 4.
  for (int i = 1; i <= 15; ++i) EXPECT_FALSE(policy.after(t0 + i * 10ms / 15, 1, 0)) << i;
  EXPECT_FALSE(policy.after(t0 + 11ms, 1, 0));
}

TEST(WakeupPolicy, ABusyPeriodMakesTheNextTurnsSleepFirst) {
  const Clock::time_point t0{};
  WakeupPolicy policy(settings_2ms(), t0);
  // Nothing is decided before a period has passed.
  EXPECT_FALSE(policy.after(t0 + 1ms, 10, 0));
  // 25 handlers in 10 ms: 5 per window.
  EXPECT_TRUE(policy.after(t0 + 10ms, 15, 0));
  EXPECT_TRUE(policy.after(t0 + 12ms, 1, 0));  // held until the next period ends
  // The next period brings 2 handlers: back to waiting for events.
  EXPECT_FALSE(policy.after(t0 + 20ms, 1, 0));
}

TEST(WakeupPolicy, AnOpeningExchangeKeepsTurnsImmediateWhileItLasts) {
  const Clock::time_point t0{};
  WakeupPolicy policy(settings_2ms(), t0);
  EXPECT_FALSE(policy.after(t0 + 10ms, 50, 1));  // busy, but an exchange is opening
  EXPECT_FALSE(policy.after(t0 + 11ms, 1, 2));
  EXPECT_TRUE(policy.after(t0 + 12ms, 1, 0));  // its request is out: busy again
}

TEST(WakeupPolicy, AZeroWindowNeverSleeps) {
  WakeupSettings s = settings_2ms();
  s.window = 0ms;
  const Clock::time_point t0{};
  WakeupPolicy policy(s, t0);
  EXPECT_FALSE(policy.after(t0 + 10ms, 100000, 0));
}

// --- the loop on loopback streams -------------------------------------------------

constexpr int kStreams = 40;
constexpr int kRounds = 40;        // one byte per stream per round
constexpr auto kRoundGap = 10ms;   // each stream's writes this far apart
constexpr auto kStampSlack = 1ms;  // a stamp after its write's end, at most

struct Stream {
  explicit Stream(asio::io_context& io) : reading(io), layer(reading) {}
  lse::http::ProbeSocket reading;
  lse::http::TimestampingSocket layer;
  int fd_writing = -1;
  std::array<char, 64> buf{};
};

// What the writer did: the steady instants around each write, by stream and round.
struct Writes {
  std::array<std::array<Clock::time_point, kRounds>, kStreams> before{}, after{};
};

struct ReadSeen {
  int stream;
  int last_round;  // the byte of the read's last write
  int bytes;
  bool stamped;  // the kernel stamped it (not yet, for the first segments after stamps are enabled)
  Clock::time_point stamp, completed;
};

TEST(ProbeLoop, WhileBusyOneWakeUpServesSeveralReadsAndEachKeepsItsStamp) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < kStreams; ++i) {
    auto s = std::make_unique<Stream>(io);
    s->reading.connect(acceptor.local_endpoint());
    tcp::socket writing(io);
    acceptor.accept(writing);
    writing.set_option(tcp::no_delay(true));
    s->fd_writing = writing.release();
    ASSERT_TRUE(s->layer.enable_timestamps());
    streams.push_back(std::move(s));
  }
  acceptor.close();

  std::vector<ReadSeen> seen;
  std::function<void(int)> read_next = [&](int i) {
    Stream& s = *streams[static_cast<std::size_t>(i)];
    s.layer.async_read_some(
        asio::buffer(s.buf), [&, i](boost::system::error_code ec, std::size_t n) {
          if (ec) return;  // the end: the writer closed
          Stream& st = *streams[static_cast<std::size_t>(i)];
          const Clock::time_point now = Clock::now();
          const std::int64_t kernel_ns = st.layer.last_kernel_ns();
          seen.push_back(ReadSeen{i, st.buf[n - 1], static_cast<int>(n), kernel_ns != 0,
                                  lse::http::kernel_stamp_to_steady(kernel_ns, now), now});
          read_next(i);
        });
  };
  for (int i = 0; i < kStreams; ++i) read_next(i);

  Writes writes;
  std::thread writer([&] {
    auto next = Clock::now();
    for (int r = 0; r < kRounds; ++r) {
      std::this_thread::sleep_until(next);
      next += kRoundGap;
      for (int i = 0; i < kStreams; ++i) {
        const char byte = static_cast<char>(r);
        writes.before[i][r] = Clock::now();
        EXPECT_EQ(::write(streams[static_cast<std::size_t>(i)]->fd_writing, &byte, 1), 1);
        writes.after[i][r] = Clock::now();
      }
    }
    for (auto& s : streams) ::close(s->fd_writing);
  });

  const long waits_before = g_epoll_waits.load();
  const lse::probe::LoopStats stats = lse::probe::run_probe_loop(io, settings_2ms());
  const long waits = g_epoll_waits.load() - waits_before;
  writer.join();

  // Every byte was read, each read of one stream in order.
  int bytes = 0;
  for (const ReadSeen& r : seen) bytes += r.bytes;
  ASSERT_EQ(bytes, kStreams * kRounds);

  // Each read's instant is the kernel's stamp of its last write: between that
  // write's start and its end (plus a slack for the conversion), however late
  // the read itself ran.
  // The kernel turns receive stamps on a moment after the first socket asks
  // (a deferred switch): the first segments may come without one, and the
  // client then takes its own clock. All later ones carry one.
  int read_late = 0;
  int unstamped = 0;
  for (const ReadSeen& r : seen) {
    ASSERT_GE(r.last_round, 0);
    ASSERT_LT(r.last_round, kRounds);
    if (!r.stamped) {
      ++unstamped;
      continue;
    }
    const auto& before = writes.before[r.stream][r.last_round];
    const auto& after = writes.after[r.stream][r.last_round];
    EXPECT_GE(r.stamp, before - 50us) << "stream " << r.stream << " round " << r.last_round;
    EXPECT_LE(r.stamp, after + kStampSlack) << "stream " << r.stream << " round " << r.last_round;
    if (r.completed - r.stamp >= 500us) ++read_late;
  }
  // The loop did coalesce: it slept, and the reactor was asked far less than
  // once per read (an idle loop asks once per read at this rate: 4 reads per
  // millisecond, each done in microseconds).
  EXPECT_LE(unstamped, static_cast<int>(seen.size()) / 10) << "reads without a kernel stamp";
  EXPECT_GT(stats.sleeps, 0u);
  EXPECT_GT(read_late, 0) << "no read waited: the loop never coalesced";
  EXPECT_LT(static_cast<double>(waits), 0.6 * static_cast<double>(seen.size()))
      << waits << " epoll_wait for " << seen.size() << " reads; " << stats.sleeps << " sleeps, "
      << stats.turns << " turns";
}

TEST(ProbeLoop, AnIdleLoopWaitsForEventsAndEndsWithItsWork) {
  asio::io_context io;
  asio::steady_timer t1(io, 5ms), t2(io, 30ms);
  int fired = 0;
  t1.async_wait([&](boost::system::error_code) { ++fired; });
  t2.async_wait([&](boost::system::error_code) { ++fired; });
  const lse::probe::LoopStats stats = lse::probe::run_probe_loop(io, settings_2ms());
  EXPECT_EQ(fired, 2);
  EXPECT_EQ(stats.sleeps, 0u);  // two handlers in 30 ms: never busy
  EXPECT_EQ(stats.handlers, 2u);
}

TEST(ProbeLoop, AStopEndsTheLoopWhileItCoalesces) {
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  // A busy thread: a handler that posts itself, for 50 ms, then stops the io.
  const auto until = Clock::now() + 50ms;
  std::function<void()> spin = [&] {
    if (Clock::now() >= until) {
      io.stop();
      return;
    }
    asio::post(io, spin);
  };
  asio::post(io, spin);
  const lse::probe::LoopStats stats = lse::probe::run_probe_loop(io, settings_2ms());
  EXPECT_TRUE(io.stopped());
  EXPECT_GT(stats.handlers, 100u);
}

TEST(OpeningCount, CountsAGuardUntilItsReleaseOrItsEnd) {
  asio::io_context io;
  EXPECT_EQ(lse::http::opening_exchanges(io), 0u);
  {
    lse::http::OpeningCount::Guard a(io);
    lse::http::OpeningCount::Guard b(io);
    EXPECT_EQ(lse::http::opening_exchanges(io), 2u);
    a.release();
    a.release();  // once only
    EXPECT_EQ(lse::http::opening_exchanges(io), 1u);
  }
  EXPECT_EQ(lse::http::opening_exchanges(io), 0u);
}

}  // namespace
