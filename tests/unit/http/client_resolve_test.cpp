// The client's resolve step against a scripted DNS server on 127.0.0.1: a
// lookup never answered ends at the exchange's deadline, or at cancel(), at
// once; a name that does not exist fails at the resolve stage naming it; an
// IP literal asks no name server.
#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <optional>
#include <regex>
#include <string>

#include "../dns/scripted_dns.hpp"
#include "dns/resolver.hpp"
#include "http/client.hpp"

namespace {

namespace asio = boost::asio;
using lse::dns::testing::Script;
using lse::dns::testing::ScriptedDns;
using lse::http::Clock;
using lse::http::Fault;
using lse::http::Interrupt;
using lse::http::Stage;
using namespace std::chrono_literals;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

class ClientResolve : public ::testing::Test {
 protected:
  ScriptedDns dns_{{{"never.test", Script{std::nullopt, 0ms, true}}, {"missing.test", Script{}}}};
  asio::io_context io_;

  // start() against `url`, canceled after `cancel_after` if given: its
  // fault and how long it took.
  std::pair<std::optional<Fault>, double> start(
      const std::string& url, std::chrono::milliseconds deadline,
      std::optional<std::chrono::milliseconds> cancel_after = {}) {
    asio::use_service<lse::dns::Resolver>(io_).set_servers(dns_.server());
    lse::http::ClientOptions options;
    options.url = *lse::net::parse_url(url);
    lse::http::Client client(io_, options);
    std::optional<Fault> fault;
    double took = 0;
    asio::steady_timer canceler(io_);
    if (cancel_after) {
      canceler.expires_after(*cancel_after);
      canceler.async_wait([&](boost::system::error_code ec) {
        if (!ec) client.cancel();
      });
    }
    asio::co_spawn(
        io_,
        [&]() -> asio::awaitable<void> {
          const lse::http::Request request{"/chat", "{}", {}};
          const auto t0 = Clock::now();
          lse::http::Started s = co_await client.start(request, t0 + deadline);
          took = ms(Clock::now() - t0);
          if (!s.response) fault = s.response.fault();
          canceler.cancel();
          client.finish(false);
        },
        asio::detached);
    io_.run_for(5s);
    return {fault, took};
  }
};

TEST_F(ClientResolve, ANameNeverAnsweredEndsAtTheDeadline) {
  const auto [fault, took] = start("http://never.test:9/v1", 300ms);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->stage, Stage::resolve);
  EXPECT_EQ(fault->interrupt, Interrupt::deadline);
  // The detail says how long the lookup waited, in ms rounded: the deadline's
  // 0.3 s, give or take the timer's lateness (larger under sanitizers).
  std::smatch m;
  const std::regex detail(R"(dns: timed out after (0\.\d+)s resolving never\.test)");
  ASSERT_TRUE(std::regex_match(fault->detail, m, detail)) << fault->detail;
  const double waited_ms = std::stod(m[1].str()) * 1000.0;
  EXPECT_GE(waited_ms, 280.0);
  EXPECT_LE(waited_ms, took + 1.0);
  EXPECT_GE(took, 295.0);
  EXPECT_LT(took, 400.0);
  EXPECT_GE(dns_.questions(), 1);
}

TEST_F(ClientResolve, CancelEndsALookupAtOnce) {
  const auto [fault, took] = start("http://never.test:9/v1", 3s, 100ms);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->stage, Stage::resolve);
  EXPECT_EQ(fault->interrupt, Interrupt::canceled);
  EXPECT_LT(took, 200.0);
}

TEST_F(ClientResolve, ANameThatDoesNotExistIsNamed) {
  const auto [fault, took] = start("http://missing.test:9/v1", 3s);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->stage, Stage::resolve);
  EXPECT_EQ(fault->interrupt, Interrupt::none);
  EXPECT_EQ(fault->ec, lse::http::make_error_code(lse::http::Errc::name_not_resolved));
  EXPECT_FALSE(lse::http::is_malformed(fault->ec));
  EXPECT_EQ(fault->detail, "dns: no such host missing.test");
}

TEST_F(ClientResolve, AProxyNameIsTheProxys) {
  asio::use_service<lse::dns::Resolver>(io_).set_servers(dns_.server());
  lse::http::ClientOptions options;
  options.url = *lse::net::parse_url("http://127.0.0.1:9/v1");
  options.proxy = *lse::net::parse_url("http://missing.test:3128");
  lse::http::Client client(io_, options);
  std::optional<Fault> fault;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        // A named request: GCC 12 destroys a temporary in a co_await expression twice.
        const lse::http::Request request{"/chat", "{}", {}};
        lse::http::Started s = co_await client.start(request, Clock::now() + 3s);
        if (!s.response) fault = s.response.fault();
        client.finish(false);
      },
      asio::detached);
  io_.run_for(5s);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->stage, Stage::resolve);
  EXPECT_EQ(fault->detail, "proxy missing.test: dns: no such host missing.test");
}

// An IP literal goes straight to connect: no question to the name server
// (the closed port refuses the connection).
TEST_F(ClientResolve, AnIpLiteralAsksNoNameServer) {
  const auto [fault, took] = start("http://[::1]:9/v1", 3s);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->stage, Stage::connect);
  EXPECT_EQ(dns_.questions(), 0);
}

}  // namespace
