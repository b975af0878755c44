// The resolver against a scripted DNS server on 127.0.0.1: answers, failures
// that name the name, a slow lookup that delays no other on the same
// io_context, and an aborted lookup that leaves the io_context nothing to wait for.
#include "dns/resolver.hpp"

#include <ares.h>
#include <gtest/gtest.h>

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <optional>

#include "scripted_dns.hpp"

namespace lse::dns {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::Script;
using testing::ScriptedDns;

double ms_since(Clock::time_point t0, Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(t - t0).count();
}

struct Seen {
  std::optional<Answer> answer;
  Clock::time_point at{};
};

std::shared_ptr<Lookup> start(asio::io_context& io, const std::string& host, Seen& seen) {
  return asio::use_service<Resolver>(io).lookup(host, 443, [&seen](Answer a) {
    seen.answer = std::move(a);
    seen.at = Clock::now();
  });
}

TEST(IpLiteral, V4V6AndBracketedNeedNoLookup) {
  EXPECT_EQ(ip_literal("127.0.0.1", 80), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 80));
  EXPECT_EQ(ip_literal("::1", 443), tcp::endpoint(asio::ip::make_address("::1"), 443));
  EXPECT_EQ(ip_literal("[::1]", 443), tcp::endpoint(asio::ip::make_address("::1"), 443));
  EXPECT_FALSE(ip_literal("api.example.com", 443));
  EXPECT_FALSE(ip_literal("localhost", 443));
  EXPECT_FALSE(ip_literal("1.2.3", 443));
}

TEST(Failed, NamesTheName) {
  EXPECT_EQ(failed(ARES_ENOTFOUND, "api.example.invalid").error,
            "no such host api.example.invalid");
}

class ResolverTest : public ::testing::Test {
 protected:
  ScriptedDns dns_{{{"fast.test", Script{"10.1.2.3"}},
                    {"other.test", Script{"10.4.5.6"}},
                    {"slow.test", Script{"10.9.9.9", milliseconds(1500)}},
                    {"never.test", Script{std::nullopt, milliseconds(0), true}},
                    {"missing.test", Script{}}}};
  asio::io_context io_;
  void SetUp() override { asio::use_service<Resolver>(io_).set_servers(dns_.server()); }
};

// The slow name's answer is 1.5 s away; the fast one, asked after it on the
// same io_context, is answered at once.
TEST_F(ResolverTest, SlowLookupDoesNotDelayAnother) {
  Seen slow, fast;
  const Clock::time_point t0 = Clock::now();
  auto a = start(io_, "slow.test", slow);
  auto b = start(io_, "fast.test", fast);
  io_.run();
  ASSERT_TRUE(fast.answer && slow.answer);
  ASSERT_EQ(fast.answer->failure, Failure::none) << fast.answer->error;
  ASSERT_EQ(fast.answer->endpoints.size(), 1U);
  EXPECT_EQ(fast.answer->endpoints[0], tcp::endpoint(asio::ip::make_address("10.1.2.3"), 443));
  EXPECT_LT(ms_since(t0, fast.at), 500.0);  // not the slow one's 1,500
  ASSERT_EQ(slow.answer->failure, Failure::none) << slow.answer->error;
  EXPECT_EQ(slow.answer->endpoints[0].address().to_string(), "10.9.9.9");
  EXPECT_GE(ms_since(t0, slow.at), 1450.0);
  EXPECT_LT(ms_since(t0, slow.at), 2500.0);
}

TEST_F(ResolverTest, NoSuchHostNamesTheName) {
  Seen seen;
  auto l = start(io_, "missing.test", seen);
  io_.run();
  ASSERT_TRUE(seen.answer);
  EXPECT_EQ(seen.answer->failure, Failure::no_such_host);
  EXPECT_EQ(seen.answer->error, "no such host missing.test");
  EXPECT_TRUE(seen.answer->endpoints.empty());
}

// A lookup never answered, aborted after 100 ms: its callback runs at once
// with `canceled`, and the io_context has nothing left to wait for (c-ares'
// query is canceled with it), so run() returns.
TEST_F(ResolverTest, AbortEndsAtOnceAndLeavesNothingRunning) {
  Seen seen;
  auto l = start(io_, "never.test", seen);
  asio::steady_timer t(io_, milliseconds(100));
  Clock::time_point aborted{};
  t.async_wait([&](boost::system::error_code) {
    aborted = Clock::now();
    l->abort();
  });
  const Clock::time_point t0 = Clock::now();
  io_.run();
  const double run_ms = ms_since(t0, Clock::now());
  ASSERT_TRUE(seen.answer);
  EXPECT_EQ(seen.answer->failure, Failure::canceled);
  EXPECT_LT(ms_since(aborted, seen.at), 20.0);
  EXPECT_LT(run_ms, 500.0);
  EXPECT_EQ(asio::use_service<Resolver>(io_).queries(), 0U);
  EXPECT_GE(dns_.questions(), 1);
}

// An aborted lookup does not cancel another caller's: the fast one still
// gets its answer although the never-answered one was given up first.
TEST_F(ResolverTest, AbortLeavesOtherLookupsAlone) {
  Seen never, slow;
  auto a = start(io_, "never.test", never);
  auto b = start(io_, "slow.test", slow);
  a->abort();
  io_.run();
  ASSERT_TRUE(never.answer && slow.answer);
  EXPECT_EQ(never.answer->failure, Failure::canceled);
  ASSERT_EQ(slow.answer->failure, Failure::none) << slow.answer->error;
  EXPECT_EQ(slow.answer->endpoints[0].address().to_string(), "10.9.9.9");
}

// Lookups one after the other on one channel (its sockets idle between
// them): each is answered as soon as the server answers.
TEST_F(ResolverTest, LookupsOneAfterAnother) {
  Seen first, second;
  std::shared_ptr<Lookup> l1, l2;
  l1 = asio::use_service<Resolver>(io_).lookup("fast.test", 443, [&](Answer a) {
    first.answer = std::move(a);
    l2 = start(io_, "other.test", second);  // not cached: a question of its own
  });
  const Clock::time_point t0 = Clock::now();
  io_.run();
  ASSERT_TRUE(first.answer && second.answer);
  EXPECT_EQ(first.answer->failure, Failure::none) << first.answer->error;
  ASSERT_EQ(second.answer->failure, Failure::none) << second.answer->error;
  EXPECT_EQ(second.answer->endpoints[0].address().to_string(), "10.4.5.6");
  EXPECT_LT(ms_since(t0, second.at), 500.0);
}

// An answer with a TTL (the scripted server's: 60 s) is reused: the second
// lookup asks the name server nothing, and gets its own port.
TEST_F(ResolverTest, AnAnswerIsReusedForItsTtl) {
  Seen first, second;
  auto l1 = start(io_, "fast.test", first);
  io_.run();
  const int asked = dns_.questions();
  io_.restart();
  std::shared_ptr<Lookup> l2 = asio::use_service<Resolver>(io_).lookup(
      "fast.test", 8080, [&](Answer a) { second.answer = std::move(a); });
  io_.run();
  ASSERT_TRUE(first.answer && second.answer);
  ASSERT_EQ(second.answer->failure, Failure::none);
  EXPECT_EQ(second.answer->endpoints,
            std::vector<tcp::endpoint>{tcp::endpoint(asio::ip::make_address("10.1.2.3"), 8080)});
  EXPECT_EQ(dns_.questions(), asked);
  EXPECT_GE(asked, 1);
}

// /etc/hosts is read as glibc reads it: `localhost` needs no name server
// (none answers on the scripted server's port for it: it is NXDOMAIN there).
TEST_F(ResolverTest, EtcHostsComesFirst) {
  Seen seen;
  auto l = start(io_, "localhost", seen);
  io_.run();
  ASSERT_TRUE(seen.answer);
  ASSERT_EQ(seen.answer->failure, Failure::none) << seen.answer->error;
  bool v4 = false;
  for (const auto& e : seen.answer->endpoints)
    v4 = v4 || e.address() == asio::ip::make_address("127.0.0.1");
  EXPECT_TRUE(v4);
  EXPECT_EQ(dns_.questions(), 0);
}

// Destroying the io_context with a lookup in flight neither runs its
// callback nor leaks (the sanitizer builds check the latter).
TEST(ResolverShutdown, DestroyedWithALookupInFlight) {
  ScriptedDns dns({{"never.test", Script{std::nullopt, milliseconds(0), true}}});
  Seen seen;
  std::shared_ptr<Lookup> l;
  {
    asio::io_context io;
    asio::use_service<Resolver>(io).set_servers(dns.server());
    l = start(io, "never.test", seen);
    io.run_for(milliseconds(50));
  }
  EXPECT_FALSE(seen.answer);
  l->abort();  // after the resolver is gone: nothing
  EXPECT_FALSE(seen.answer);
}

}  // namespace
}  // namespace lse::dns
