// The HTTP client's options of a target: the HTTP version in effect
// (http_version, else "auto" for client: browser and "1.1" for plain) and the
// HTTP/2 windows reach the client as configured.
#include <gtest/gtest.h>

#include "probe/prober.hpp"
#include "probe_harness.hpp"

namespace {

using lse::http::HttpVersion;
using lse::test::target_for;

TEST(ClientOptions, HttpVersionInEffect) {
  lse::config::Target t = target_for("https://api.example.test/v1");
  EXPECT_EQ(lse::probe::client_options(t).http_version, HttpVersion::http1_1);
  t.client = lse::config::ClientStyle::browser;
  EXPECT_EQ(lse::probe::client_options(t).http_version, HttpVersion::automatic);
  t.http_version = lse::config::HttpVersion::v1_1;  // explicit wins over the browser's default
  EXPECT_EQ(lse::probe::client_options(t).http_version, HttpVersion::http1_1);
  t.http_version = lse::config::HttpVersion::v2;
  EXPECT_EQ(lse::probe::client_options(t).http_version, HttpVersion::http2);
  t.client = lse::config::ClientStyle::plain;
  t.http_version = lse::config::HttpVersion::automatic;
  EXPECT_EQ(lse::probe::client_options(t).http_version, HttpVersion::automatic);
}

TEST(ClientOptions, Http2WindowsAsConfigured) {
  lse::config::Target t = target_for("http://127.0.0.1:8000/v1");
  const lse::h2::Settings browser = lse::probe::client_options(t).http2;
  EXPECT_EQ(browser.stream_window, 6u * 1024 * 1024);
  EXPECT_EQ(browser.connection_window, 15u * 1024 * 1024);
  t.http2.stream_window = 65535;
  t.http2.connection_window = 1u << 20;
  const lse::h2::Settings set = lse::probe::client_options(t).http2;
  EXPECT_EQ(set.stream_window, 65535u);
  EXPECT_EQ(set.connection_window, 1u << 20);
  EXPECT_EQ(set.max_header_bytes, lse::h2::Settings{}.max_header_bytes);
}

}  // namespace
