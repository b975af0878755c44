// Tests for net/listen_address: the grammar of `listen:` and
// --web.listen-address, with the messages the config shows.
#include "net/listen_address.hpp"

#include <gtest/gtest.h>

#include <string>

namespace lse::net {
namespace {

ListenAddress must_parse(const std::string& text) {
  std::string error;
  auto a = parse_listen_address(text, &error);
  EXPECT_TRUE(a.has_value()) << text << ": " << error;
  EXPECT_EQ(error, "") << text;
  return a.value_or(ListenAddress{});
}

std::string error_of(const std::string& text) {
  std::string error;
  EXPECT_FALSE(parse_listen_address(text, &error).has_value()) << text;
  return error;
}

TEST(ListenAddress, Accepted) {
  ListenAddress a = must_parse(":9687");
  EXPECT_EQ(a.host, "");
  EXPECT_EQ(a.port, "9687");
  a = must_parse("127.0.0.1:9687");
  EXPECT_EQ(a.host, "127.0.0.1");
  a = must_parse("[::1]:9687");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, "9687");
  a = must_parse("[fe80::1%eth0]:80");
  EXPECT_EQ(a.host, "fe80::1%eth0");
  a = must_parse("localhost:0");  // any free port
  EXPECT_EQ(a.host, "localhost");
  EXPECT_EQ(a.port, "0");
  EXPECT_EQ(must_parse(":65535").port, "65535");
}

TEST(ListenAddress, ShapeErrorsNameTheAcceptedForms) {
  for (const char* bad : {"localhost", "", "[::1]", "[::1]9687", "[zz]:1", "ho st:1", "h!:1"}) {
    EXPECT_EQ(error_of(bad),
              "listen must be host:port, :port or [ipv6]:port, got '" + std::string(bad) + "'")
        << bad;
  }
}

TEST(ListenAddress, BareIpv6SaysBracketsAreNeeded) {
  const std::string e = error_of("::1:9687");
  EXPECT_EQ(e.rfind("listen must be host:port, :port or [ipv6]:port, got '::1:9687'", 0), 0u) << e;
  EXPECT_NE(e.find("[::1]:9687"), std::string::npos) << e;
}

TEST(ListenAddress, PortErrors) {
  for (const char* port : {"70000", "", "x", "-1", "123456"})
    EXPECT_EQ(error_of(std::string("h:") + port),
              "listen port must be 0..65535, got '" + std::string(port) + "'")
        << port;
  EXPECT_EQ(error_of("[::1]:99999"), "listen port must be 0..65535, got '99999'");
}

TEST(ListenAddress, ErrorPointerMayBeNull) {
  EXPECT_FALSE(parse_listen_address("nope", nullptr).has_value());
  EXPECT_TRUE(parse_listen_address(":1", nullptr).has_value());
}

}  // namespace
}  // namespace lse::net
