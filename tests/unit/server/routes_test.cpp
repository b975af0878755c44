// Routes, encoding negotiation and the landing page as plain function calls:
// the route prefix and telemetry path, the lifecycle switch, basic auth's
// 401 and the exposition format from Accept.
#include "server/routes.hpp"

#include <gtest/gtest.h>

#include <string>

#include "inflate.hpp"
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

TEST(Encoding, GzipWriterPieceByPieceIsTheWholeText) {
  // Pieces of every size, empty ones and one larger than the writer's first
  // room (64 KiB), so that its buffer grows mid-stream.
  std::string whole;
  GzipWriter w;
  for (int i = 0; i < 400; ++i) {
    std::string piece;
    const int lines = i == 200 ? 8000 : i % 13;
    for (int k = 0; k < lines; ++k)
      piece += "llm_stream_gap_seconds_bucket{target=\"t" + std::to_string(i) + "\",le=\"" +
               std::to_string(k) + "\"} " + std::to_string(i * k) + "\n";
    w.write(piece);
    whole += piece;
  }
  EXPECT_EQ(w.bytes_in(), whole.size());
  const std::string z = w.finish();
  EXPECT_GT(whole.size(), 300000u);
  EXPECT_LT(z.size(), whole.size() / 5);
  EXPECT_TRUE(test::inflate_gzip(z) == whole);
  EXPECT_EQ(test::inflate_gzip(GzipWriter().finish()), "");
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
  Routing routing;
  bool authorized = true;
  Response call(http::verb verb, const std::string& target,
                std::vector<std::pair<std::string, std::string>> headers = {}) {
    Request req{verb, target, 11};
    for (const auto& [k, v] : headers) req.set(k, v);
    return handle_request(req, RouteContext{hooks, rows, 1700000100, routing, authorized});
  }
  int metrics_calls = 0;
  void count_metrics() {
    hooks.metrics = whole_exposition([this](metrics::Exposition) {
      ++metrics_calls;
      return std::string("x 1\n");
    });
  }
};

TEST_F(RoutesTest, ScrapesThatTakeGzipAreCompressedAsTheExpositionIsRendered) {
  std::string whole;
  int pieces = 0;
  hooks.metrics = [&](metrics::Exposition, const metrics::ExpositionSink& sink) {
    for (int i = 0; i < 300; ++i) {
      const std::string piece = "llm_stream_chunks_total{target=\"t" + std::to_string(i) + "\"} " +
                                std::to_string(i * 7) + "\n";
      whole += piece;
      ++pieces;
      if (!sink(piece)) break;
    }
    return std::string();
  };
  auto res = call(http::verb::get, "/metrics", {{"Accept-Encoding", "gzip"}});
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(pieces, 300);
  EXPECT_EQ(res[http::field::content_encoding], "gzip");
  EXPECT_EQ(res[http::field::vary], "Accept-Encoding, Accept");
  EXPECT_EQ(res[http::field::content_length], std::to_string(res.body().size()));
  EXPECT_TRUE(test::inflate_gzip(res.body()) == whole);
  // Without gzip: the same pieces, joined.
  whole.clear();
  auto plain = call(http::verb::get, "/metrics");
  EXPECT_TRUE(plain[http::field::content_encoding].empty());
  EXPECT_TRUE(plain.body() == whole);
  // HEAD: the length of the compressed body, no body.
  auto head = call(http::verb::head, "/metrics", {{"Accept-Encoding", "gzip"}});
  EXPECT_EQ(head[http::field::content_encoding], "gzip");
  EXPECT_EQ(head[http::field::content_length], res[http::field::content_length]);
  EXPECT_TRUE(head.body().empty());
}

TEST_F(RoutesTest, ARefusedScrapeIsA500WithTheReasonAndNoPartialExposition) {
  for (const char* encoding : {"gzip", "identity"}) {
    hooks.metrics = [](metrics::Exposition, const metrics::ExpositionSink& sink) {
      sink("llm_stream_chunks_total{target=\"t\"} 1\n");
      return std::string("scrape refused: the exposition passed metrics.max_scrape_bytes");
    };
    auto res = call(http::verb::get, "/metrics", {{"Accept-Encoding", encoding}});
    EXPECT_EQ(res.result(), http::status::internal_server_error) << encoding;
    EXPECT_TRUE(res[http::field::content_encoding].empty()) << encoding;
    EXPECT_EQ(res.body(), "scrape refused: the exposition passed metrics.max_scrape_bytes\n")
        << encoding;
  }
}

TEST_F(RoutesTest, EmptyHooksDegradeGracefully) {
  routing.enable_lifecycle = true;
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
  hooks.metrics = whole_exposition([](metrics::Exposition) { return std::string("x 1\n"); });
  auto res = call(http::verb::get, "/metrics");
  EXPECT_EQ(res[http::field::content_length], "4");
  EXPECT_TRUE(res.keep_alive());
  EXPECT_EQ(res["X-Content-Type-Options"], "nosniff");
}

TEST_F(RoutesTest, LifecycleOffForbidsReloadAndSaysWhichFlag) {
  int reloads = 0;
  hooks.reload = [&]() -> std::pair<bool, std::string> {
    ++reloads;
    return {true, "reloaded"};
  };
  auto res = call(http::verb::post, "/-/reload");
  EXPECT_EQ(res.result(), http::status::forbidden);
  EXPECT_NE(res.body().find("--web.enable-lifecycle"), std::string::npos) << res.body();
  EXPECT_EQ(reloads, 0);
  EXPECT_EQ(call(http::verb::get, "/-/reload").result(), http::status::method_not_allowed);
  routing.enable_lifecycle = true;
  EXPECT_EQ(call(http::verb::post, "/-/reload").result(), http::status::ok);
  EXPECT_EQ(reloads, 1);
}

TEST_F(RoutesTest, TelemetryPathMovesMetrics) {
  count_metrics();
  routing.telemetry_path = "/m";
  EXPECT_EQ(call(http::verb::get, "/m").body(), "x 1\n");
  EXPECT_EQ(call(http::verb::head, "/m").result(), http::status::ok);
  EXPECT_EQ(call(http::verb::get, "/metrics").result(), http::status::not_found);
  EXPECT_EQ(call(http::verb::post, "/m").result(), http::status::method_not_allowed);
  EXPECT_EQ(metrics_calls, 2);
  // "/" as the telemetry path replaces the landing page.
  routing.telemetry_path = "/";
  EXPECT_EQ(call(http::verb::get, "/").body(), "x 1\n");
}

TEST_F(RoutesTest, RoutePrefixServesEverythingUnderIt) {
  count_metrics();
  hooks.ready = [] { return true; };
  routing.route_prefix = "/lse";
  EXPECT_EQ(call(http::verb::get, "/lse/metrics").body(), "x 1\n");
  EXPECT_EQ(call(http::verb::get, "/lse/-/ready").result(), http::status::ok);
  EXPECT_EQ(call(http::verb::get, "/lse/api/v1/probes").result(), http::status::ok);
  EXPECT_EQ(call(http::verb::get, "/lse/").result(), http::status::ok);  // landing page
  for (const char* outside : {"/metrics", "/-/ready", "/lsemetrics", "/lsex/metrics", "/ls"})
    EXPECT_EQ(call(http::verb::get, outside).result(), http::status::not_found) << outside;
  // The root and the bare prefix lead to the landing page, whose links are relative.
  for (const char* entry : {"/", "/lse"}) {
    auto res = call(http::verb::get, entry);
    EXPECT_EQ(res.result(), http::status::found) << entry;
    EXPECT_EQ(res[http::field::location], "/lse/") << entry;
  }
  EXPECT_EQ(call(http::verb::post, "/").result(), http::status::method_not_allowed);
  EXPECT_EQ(metrics_calls, 1);
}

TEST_F(RoutesTest, UnauthorizedIs401WithAChallengeOnEveryPath) {
  count_metrics();
  authorized = false;
  for (const char* path : {"/metrics", "/-/healthy", "/-/ready", "/config", "/", "/nope"}) {
    auto res = call(http::verb::get, path);
    EXPECT_EQ(res.result(), http::status::unauthorized) << path;
    EXPECT_EQ(res[http::field::www_authenticate], "Basic realm=\"llm-stream-exporter\"") << path;
  }
  EXPECT_EQ(call(http::verb::post, "/-/reload").result(), http::status::unauthorized);
  EXPECT_EQ(metrics_calls, 0);
}

TEST_F(RoutesTest, AcceptChoosesTheExposition) {
  std::vector<metrics::Exposition> asked;
  hooks.metrics = whole_exposition([&](metrics::Exposition format) {
    asked.push_back(format);
    return std::string("x 1\n");
  });
  auto om = call(http::verb::get, "/metrics",
                 {{"Accept", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"}});
  EXPECT_EQ(om[http::field::content_type], metrics::kOpenMetricsContentType);
  EXPECT_EQ(om[http::field::vary], "Accept-Encoding, Accept");
  auto text = call(http::verb::get, "/metrics");
  EXPECT_EQ(text[http::field::content_type], metrics::kTextContentType);
  // Listed second but weighed lower: q-values decide, not the order.
  auto weighed = call(http::verb::get, "/metrics",
                      {{"Accept", "text/plain;q=1, application/openmetrics-text;q=0.1"}});
  EXPECT_EQ(weighed[http::field::content_type], metrics::kTextContentType);
  EXPECT_EQ(asked, (std::vector{metrics::Exposition::openmetrics, metrics::Exposition::text,
                                metrics::Exposition::text}));
}

TEST(Routing, Problems) {
  EXPECT_EQ(routing_problem(Routing{}), "");
  EXPECT_EQ(routing_problem(Routing{"/a/b", "/m", true}), "");
  EXPECT_EQ(routing_problem(Routing{"", "/", false}), "");
  EXPECT_NE(routing_problem(Routing{"lse", "/metrics", false}).find("--web.route-prefix"),
            std::string::npos);
  EXPECT_NE(routing_problem(Routing{"/lse/", "/metrics", false}), "");
  EXPECT_NE(routing_problem(Routing{"", "metrics", false}).find("--web.telemetry-path"),
            std::string::npos);
  EXPECT_NE(routing_problem(Routing{"", "/metrics?x", false}), "");
  EXPECT_NE(routing_problem(Routing{"", "/me trics", false}), "");
  EXPECT_NE(routing_problem(Routing{"", "/-/healthy", false}).find("another endpoint"),
            std::string::npos);
  EXPECT_NE(routing_problem(Routing{"", "/api/v1/probes", false}), "");
}

probe::ProbeResult kept_probe(const std::string& id, const std::string& target) {
  probe::ProbeResult r;
  r.id = id;
  r.target = target;
  r.model = "m";
  r.prompt = "short";
  r.ok = true;
  r.ts = 1700000000;
  r.chunks = 3;
  r.gaps = {0.02, 0.4};
  return r;
}

TEST_F(RoutesTest, ProbesById) {
  rows.add(kept_probe("00000000000000aa", "a"));
  rows.add(kept_probe("00000000000000bb", "b"));
  auto hit = call(http::verb::get, "/api/v1/probes?id=00000000000000aa");
  EXPECT_EQ(hit.result(), http::status::ok);
  EXPECT_EQ(hit.body().rfind("{\"probes\":[{", 0), 0u);
  EXPECT_NE(hit.body().find("\"id\":\"00000000000000aa\""), std::string::npos);
  EXPECT_EQ(hit.body().find("00000000000000bb"), std::string::npos);

  auto miss = call(http::verb::get, "/api/v1/probes?id=ffffffffffffffff");
  EXPECT_EQ(miss.result(), http::status::not_found);
  EXPECT_EQ(miss[http::field::content_type], "application/json");
  EXPECT_NE(miss.body().find("ffffffffffffffff"), std::string::npos);
}

TEST_F(RoutesTest, ProbePageShowsOneProbeAndLinksItsRow) {
  rows.add(kept_probe("00000000000000aa", "alpha"));
  auto page = call(http::verb::get, "/probe?id=00000000000000aa");
  EXPECT_EQ(page.result(), http::status::ok);
  EXPECT_EQ(page[http::field::content_type], "text/html; charset=utf-8");
  EXPECT_NE(page.body().find("alpha"), std::string::npos);
  EXPECT_NE(page.body().find("api/v1/probes?id=00000000000000aa"), std::string::npos);
  EXPECT_NE(page.body().find("<svg"), std::string::npos);
  EXPECT_EQ(call(http::verb::get, "/probe?id=%3Cscript%3E").result(), http::status::not_found);
  EXPECT_EQ(call(http::verb::get, "/probe").result(), http::status::not_found);
  EXPECT_EQ(call(http::verb::post, "/probe?id=00000000000000aa").result(),
            http::status::method_not_allowed);
  routing.route_prefix = "/llm";
  EXPECT_EQ(call(http::verb::get, "/llm/probe?id=00000000000000aa").result(), http::status::ok);
}

TEST(LandingPage, NoProbeYetAndAges) {
  std::vector<TargetStatus> targets{{"a", "m", "http://a", {"p"}, 30, {}},
                                    {"b", "m", "http://b", {"p"}, 90, {}}};
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
