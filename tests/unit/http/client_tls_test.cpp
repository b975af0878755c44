// The client's TLS step: a server that closes during the handshake without
// an alert is said to have done so, not "stream truncated".
#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "http/client.hpp"

namespace {

namespace asio = boost::asio;
using lse::http::Clock;
using lse::http::Fault;
using namespace std::chrono_literals;

TEST(ClientTls, AServerThatClosesDuringTheHandshakeIsSaidToHaveClosed) {
  asio::io_context peer_io;
  asio::ip::tcp::acceptor acceptor(peer_io, {asio::ip::make_address("127.0.0.1"), 0});
  std::thread peer([&] {
    asio::ip::tcp::socket s(peer_io);
    acceptor.accept(s);
    char hello[16384];
    s.read_some(asio::buffer(hello));  // the ClientHello, then a bare FIN
  });
  asio::io_context io;
  lse::http::ClientOptions options;
  options.url =
      *lse::net::parse_url("https://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()));
  lse::http::Client client(io, options);
  std::optional<Fault> fault;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const lse::http::Request request{"/chat", "{}", {}};
        lse::http::Started s = co_await client.start(request, Clock::now() + 3s);
        if (!s.response) fault = s.response.fault();
        client.finish(false);
      },
      asio::detached);
  io.run_for(5s);
  peer.join();
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->stage, lse::http::Stage::tls);
  EXPECT_EQ(fault->detail,
            "tls: connection closed by the server during the handshake, without a TLS alert");
}

}  // namespace
