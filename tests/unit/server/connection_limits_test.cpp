// The server's protection against clients that hold connections (issue 13),
// over real sockets on 127.0.0.1:0: the header deadline cuts off a client
// that trickles header lines, apart from the keep-alive idle timeout; at
// the caps (total, per peer address) a newcomer displaces the oldest
// connection that is not being answered; limits change while serving; the
// listener moves (rebind) without dropping open connections.
#include <utility>  // before Asio with GCC 12 / C++20

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "report/row_store.hpp"
#include "server/server.hpp"
#include "test_client.hpp"

namespace lse::server {
namespace {

using test::Client;
using test::http::status;
using test::http::verb;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kHalfOpen = "GET /-/healthy HTTP/1.1\r\nHost: x\r\n";

class ConnectionLimits : public ::testing::Test {
 protected:
  report::RowStore rows{10, {}};
  std::unique_ptr<Server> server;

  static Hooks hooks() {
    Hooks h;
    h.metrics = whole_exposition([](metrics::Exposition) { return std::string("x 1\n"); });
    h.ready = [] { return true; };
    return h;
  }

  // A server whose connection caps are `total` and `per_address`.
  void start_capped(std::size_t total, std::size_t per_address) {
    Limits limits;
    limits.max_connections = total;
    limits.max_connections_per_address = per_address;
    start(limits);
  }

  void start(Limits limits, const std::string& listen = "127.0.0.1:0") {
    server = std::make_unique<Server>(listen, hooks(), rows, ServerOptions{{}, "", limits});
    server->start();
    ASSERT_NE(server->port(), 0);
  }

  // A connection that has sent a request line and one header, and no more.
  std::unique_ptr<Client> half_open(const char* from = nullptr) {
    auto c = std::make_unique<Client>(server->port(), from);
    c->send_raw(kHalfOpen);
    return c;
  }

  // Served on a fresh connection from `from`.
  bool served(const char* from = nullptr) {
    Client c(server->port(), from);
    return c.request(verb::get, "/-/healthy", {}, {}, false).result() == status::ok;
  }

  void TearDown() override {
    if (server) server->stop();
  }
};

// Every few bytes is still one request that has to arrive within
// header_timeout: a client sending a header line every 100 ms is cut off
// although it never falls silent for long.
TEST_F(ConnectionLimits, HeaderDeadlineCutsOffATricklingClient) {
  Limits limits;
  limits.header_timeout = milliseconds(400);
  limits.idle_timeout = std::chrono::seconds(30);
  start(limits);
  Client slow(server->port());
  slow.send_raw("GET /-/healthy HTTP/1.1\r\n");
  const auto t0 = Clock::now();
  int lines = 0;
  bool closed = false;
  while (!closed && Clock::now() - t0 < std::chrono::seconds(10)) {
    try {
      slow.send_raw("X-Slow: 1\r\n");
      ++lines;
    } catch (const std::exception&) {
      closed = true;  // reset by the server
    }
    if (!closed && !slow.still_open(milliseconds(100))) closed = slow.closed_by_server();
  }
  EXPECT_TRUE(closed);
  EXPECT_GE(lines, 2);  // it kept sending while the deadline ran
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(served());
}

// The header deadline starts with a request's first byte: a keep-alive
// connection may sit idle longer than it between requests.
TEST_F(ConnectionLimits, KeepAliveIdleIsNotCutByTheHeaderDeadline) {
  Limits limits;
  limits.header_timeout = milliseconds(200);
  limits.idle_timeout = std::chrono::seconds(30);
  start(limits);
  Client kept(server->port());
  EXPECT_EQ(kept.request(verb::get, "/-/healthy").result(), status::ok);
  EXPECT_TRUE(kept.still_open(milliseconds(800)));  // four header deadlines
  EXPECT_EQ(kept.request(verb::get, "/-/healthy").result(), status::ok);
}

// At the cap, the newcomer is served and the oldest half-open connection is
// what closes; the younger half-open ones stay.
TEST_F(ConnectionLimits, AtTheCapANewcomerDisplacesTheOldestIncompleteConnection) {
  start_capped(3, 3);
  auto a = half_open();
  auto b = half_open();
  auto c = half_open();
  EXPECT_TRUE(served());
  EXPECT_TRUE(a->closed_by_server());
  EXPECT_TRUE(b->still_open());
  EXPECT_TRUE(c->still_open());
  // The served one is gone: d fits. A half-open newcomer is a newcomer
  // too: e displaces the next oldest.
  auto d = half_open();
  EXPECT_TRUE(b->still_open());
  auto e = half_open();
  EXPECT_TRUE(b->closed_by_server());
  EXPECT_TRUE(c->still_open());
  EXPECT_TRUE(d->still_open());
  EXPECT_TRUE(e->still_open());
}

// Beyond its own cap an address displaces its own oldest connection, even
// when another address holds an older one.
TEST_F(ConnectionLimits, PerAddressCapDisplacesThatAddressesOwnOldest) {
  start_capped(10, 2);
  auto other = half_open("127.0.0.2");
  auto a = half_open();
  auto b = half_open();
  EXPECT_TRUE(served());
  EXPECT_TRUE(a->closed_by_server());
  EXPECT_TRUE(b->still_open());
  EXPECT_TRUE(other->still_open());
  // The other address has its own slots.
  auto other2 = half_open("127.0.0.2");
  EXPECT_TRUE(other2->still_open());
  EXPECT_TRUE(other->still_open());
}

// At the total cap the oldest connection of any address makes room.
TEST_F(ConnectionLimits, TotalCapDisplacesTheOldestOfAnyAddress) {
  start_capped(3, 3);
  auto other = half_open("127.0.0.2");
  auto a = half_open();
  auto b = half_open();
  EXPECT_TRUE(served("127.0.0.3"));
  EXPECT_TRUE(other->closed_by_server());
  EXPECT_TRUE(a->still_open());
  EXPECT_TRUE(b->still_open());
}

// Many more half-open connections than slots, from the scraper's own
// address: the scrapes in between are all served.
TEST_F(ConnectionLimits, ScrapesGetThroughAHalfOpenCrowd) {
  start_capped(8, 4);
  std::vector<std::unique_ptr<Client>> crowd;
  int ok = 0;
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 10; ++i) crowd.push_back(half_open());
    ok += served() ? 1 : 0;
  }
  EXPECT_EQ(ok, 10);
}

TEST_F(ConnectionLimits, LimitsChangeWhileServing) {
  Limits limits;
  limits.header_timeout = std::chrono::seconds(30);
  start(limits);
  limits.header_timeout = milliseconds(200);
  server->set_limits(limits);
  // The change is applied on the server thread; a new connection after a
  // served request sees it.
  EXPECT_TRUE(served());
  Client silent(server->port());
  const auto t0 = Clock::now();
  EXPECT_TRUE(silent.closed_by_server());
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
}

bool connect_refused(unsigned short port) {
  try {
    Client c(port);
    return false;
  } catch (const std::exception&) {
    return true;
  }
}

// The new listener answers, the old one stops accepting, and a connection
// made on the old one before the move is still served.
TEST_F(ConnectionLimits, RebindMovesTheListenerAndKeepsOpenConnections) {
  start({});
  const unsigned short old_port = server->port();
  Client kept(old_port);
  EXPECT_EQ(kept.request(verb::get, "/-/healthy").result(), status::ok);
  server->rebind("127.0.0.1:0");
  const unsigned short new_port = server->port();
  EXPECT_NE(new_port, old_port);
  EXPECT_TRUE(Client(new_port).request(verb::get, "/-/healthy").result() == status::ok);
  bool refused = false;
  for (int i = 0; i < 100 && !refused; ++i) {
    refused = connect_refused(old_port);
    if (!refused) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(refused);
  EXPECT_EQ(kept.request(verb::get, "/-/healthy").result(), status::ok);
}

TEST_F(ConnectionLimits, RebindToATakenAddressThrowsAndKeepsListening) {
  start({});
  Server other("127.0.0.1:0", hooks(), rows);
  other.start();
  const unsigned short port = server->port();
  const std::string taken = "127.0.0.1:" + std::to_string(other.port());
  try {
    server->rebind(taken);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on " + taken), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(server->port(), port);
  EXPECT_TRUE(served());
}

TEST_F(ConnectionLimits, RebindBeforeStartOnlyChangesWhereItListens) {
  Server s("127.0.0.1:1", hooks(), rows);  // never bound
  s.rebind("127.0.0.1:0");
  s.start();
  EXPECT_NE(s.port(), 0);
  EXPECT_EQ(Client(s.port()).request(verb::get, "/-/healthy").result(), status::ok);
}

}  // namespace
}  // namespace lse::server
