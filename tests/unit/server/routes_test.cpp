// Routes, encoding negotiation and the landing page as plain function calls.
#include "server/routes.hpp"

#include <gtest/gtest.h>

#include "server/encoding.hpp"
#include "server/landing_page.hpp"

namespace lse::server {
namespace {

namespace http = boost::beast::http;

TEST(Encoding, AcceptsGzip) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("GZIP"));
  EXPECT_TRUE(accepts_gzip("deflate, gzip;q=0.5"));
  EXPECT_TRUE(accepts_gzip("br, *"));
  EXPECT_TRUE(accepts_gzip("x-gzip"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip; q=0.0, *"));
  EXPECT_FALSE(accepts_gzip("*;q=0"));
  EXPECT_FALSE(accepts_gzip("gzipped"));
}

TEST(Encoding, GzipOfEmptyAndLarge) {
  EXPECT_GT(gzip("").size(), 10u);  // header + trailer
  std::string big(1 << 20, 'x');
  auto z = gzip(big);
  EXPECT_LT(z.size(), 10000u);
  EXPECT_EQ(static_cast<unsigned char>(z[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(z[1]), 0x8b);
}

TEST(Routes, QueryDecode) {
  EXPECT_EQ(query_decode("a%20b+c"), "a b c");
  EXPECT_EQ(query_decode("%3Cscript%3e"), "<script>");
  EXPECT_EQ(query_decode("100%"), "100%");
  EXPECT_EQ(query_decode("%zz%4"), "%zz%4");
}

struct RoutesTest : ::testing::Test {
  report::RowStore rows{10, {}};
  Hooks hooks;
  Response call(http::verb verb, const std::string& target) {
    Request req{verb, target, 11};
    return handle_request(req, RouteContext{hooks, rows, 1700000100});
  }
};

TEST_F(RoutesTest, EmptyHooksDegradeGracefully) {
  EXPECT_EQ(call(http::verb::get, "/metrics").result(), http::status::ok);
  EXPECT_EQ(call(http::verb::get, "/-/ready").result(), http::status::service_unavailable);
  EXPECT_EQ(call(http::verb::post, "/-/reload").result(), http::status::internal_server_error);
  EXPECT_EQ(call(http::verb::get, "/config").result(), http::status::service_unavailable);
  auto landing = call(http::verb::get, "/");
  EXPECT_EQ(landing.result(), http::status::ok);
  EXPECT_NE(landing.body().find("No targets configured"), std::string::npos);
}

TEST_F(RoutesTest, AbsoluteFormTargetAndQueryAreUnderstood) {
  hooks.ready = [] { return true; };
  EXPECT_EQ(call(http::verb::get, "http://exporter:9687/-/ready").result(), http::status::ok);
  EXPECT_EQ(call(http::verb::get, "/-/ready?verbose=1").result(), http::status::ok);
}

TEST_F(RoutesTest, ResponsesCarryLengthAndKeepAlive) {
  hooks.metrics = [] { return std::string("x 1\n"); };
  auto res = call(http::verb::get, "/metrics");
  EXPECT_EQ(res[http::field::content_length], "4");
  EXPECT_TRUE(res.keep_alive());
  EXPECT_EQ(res["X-Content-Type-Options"], "nosniff");
}

TEST(LandingPage, NoProbeYetAndAges) {
  std::vector<TargetStatus> targets{{"a", "m", "http://a", {"p"}, 30},
                                    {"b", "m", "http://b", {"p"}, 90}};
  probe::ProbeResult r;
  r.target = "b";
  r.ok = true;
  r.ts = 1000;
  r.duration = 2;
  std::map<std::string, probe::ProbeResult> last{{"b", r}};
  auto html = render_landing_page(targets, last, 1000 + 2 + 600);
  EXPECT_NE(html.find("no probe yet"), std::string::npos);
  EXPECT_NE(html.find("10m ago"), std::string::npos);
  EXPECT_NE(html.find("30s"), std::string::npos);
  EXPECT_NE(html.find("90s"), std::string::npos);
  EXPECT_EQ(html_escape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
}

}  // namespace
}  // namespace lse::server
