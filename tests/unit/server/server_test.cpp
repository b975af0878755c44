// The HTTP server over real sockets on 127.0.0.1:0 with fake hooks: every
// endpoint's status, content type and body, and robustness against bad
// clients (garbage, oversized headers, idle and surplus connections, stop()
// with connections open). Deadlines, caps and rebinding in detail:
// connection_limits_test.cpp.
#include <utility>  // before Asio with GCC 12 / C++20

#include "server/server.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <simdjson.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <mutex>
#include <thread>

#include "inflate.hpp"
#include "report/row_json.hpp"
#include "test_client.hpp"

namespace lse::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using ClientResponse = http::response<http::string_body>;
using test::Client;

using test::inflate_gzip;

probe::ProbeResult row(const std::string& target, int n, bool ok = true) {
  probe::ProbeResult r;
  r.ts = 1700000000 + n;
  r.target = target;
  r.model = "m";
  r.prompt = "p";
  r.ok = ok;
  if (!ok) {
    r.reason = probe::FailureReason::http_5xx;
    r.http_status = 503;
  } else {
    r.http_status = 200;
    r.ttft = 0.25;
    r.gap_p95 = 0.04;
    r.gap_max = 0.4;
    r.stalls = 2;
  }
  r.duration = 1.5;
  r.chunks = static_cast<std::size_t>(n);
  return r;
}

class ServerTest : public ::testing::Test {
 protected:
  report::RowStore rows{50, {}};
  std::atomic<bool> ready{true};
  std::atomic<int> reloads{0};
  std::atomic<bool> reload_ok{true};
  std::atomic<bool> metrics_throws{false};
  std::thread::id metrics_thread;
  std::atomic<int> metrics_policy{-1};  // the rendering thread's scheduling policy
  std::atomic<int> metrics_nice{-100};
  std::mutex name_mutex;
  std::string metrics_thread_name;  // guarded by name_mutex
  std::atomic<metrics::Exposition> last_format{metrics::Exposition::text};
  ServerOptions options;  // what start() uses, besides its limits
  std::vector<TargetStatus> targets{
      {"openai-mini", "gpt-4o-mini", "https://api.openai.com/v1", {"short", "long"}, 60, {}},
  };
  std::string metrics_text = "# HELP x An x.\n# TYPE x gauge\nx 1\n";
  std::unique_ptr<Server> server;

  Hooks hooks() {
    Hooks h;
    h.metrics = whole_exposition([this](metrics::Exposition format) {
      metrics_thread = std::this_thread::get_id();
      metrics_policy = sched_getscheduler(0);
      metrics_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)));
      char name[16] = {};
      pthread_getname_np(pthread_self(), name, sizeof name);
      const std::lock_guard lock(name_mutex);
      metrics_thread_name = name;
      last_format = format;
      if (metrics_throws) throw std::runtime_error("registry exploded");
      return metrics_text;
    });
    h.ready = [this] { return ready.load(); };
    h.reload = [this]() -> std::pair<bool, std::string> {
      ++reloads;
      if (reload_ok) return {true, "reloaded"};
      return {false, "config.yaml:3:5: unknown key \"bogus\""};
    };
    h.config_dump = [] { return std::string("listen: \":9687\"\ntargets: []\n"); };
    h.targets = [this] { return targets; };
    return h;
  }

  void start(Limits limits = {}) {
    options.limits = limits;
    server = std::make_unique<Server>("127.0.0.1:0", hooks(), rows, options);
    server->start();
    ASSERT_NE(server->port(), 0);
  }

  ClientResponse get(const std::string& target,
                     std::vector<std::pair<std::string, std::string>> headers = {}) {
    Client c(server->port());
    return c.request(http::verb::get, target, std::move(headers), {}, false);
  }

  void TearDown() override {
    if (server) server->stop();
  }
};

TEST_F(ServerTest, Healthy) {
  start();
  auto res = get("/-/healthy");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res.body(), "OK");
  EXPECT_EQ(res[http::field::content_type], "text/plain; charset=utf-8");
}

TEST_F(ServerTest, MetricsPlainAndOnTheServerThread) {
  start();
  auto res = get("/metrics");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(res.body(), metrics_text);
  EXPECT_TRUE(res[http::field::content_encoding].empty());
  EXPECT_NE(metrics_thread, std::this_thread::get_id());
}

// The render runs below the probe thread whatever the process's policy: a
// process started real-time (chrt -f) gives its threads SCHED_FIFO, where
// nice means nothing; the server thread leaves it for SCHED_OTHER at nice 10.
TEST_F(ServerTest, MetricsRenderBelowTheProbesEvenInARealTimeProcess) {
  sched_param fifo{};
  fifo.sched_priority = 1;
  int old_policy = 0;
  sched_param old_param{};
  pthread_getschedparam(pthread_self(), &old_policy, &old_param);
  if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) != 0)
    GTEST_SKIP() << "SCHED_FIFO not permitted here (needs CAP_SYS_NICE or RLIMIT_RTPRIO)";
  start();  // the server thread is created by a SCHED_FIFO thread: it inherits the policy
  pthread_setschedparam(pthread_self(), old_policy, &old_param);
  ASSERT_EQ(sched_getscheduler(0), old_policy);
  auto res = get("/metrics");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(metrics_policy.load(), SCHED_OTHER);
  EXPECT_EQ(metrics_nice.load(), 10);
  const std::lock_guard lock(name_mutex);
  EXPECT_EQ(metrics_thread_name, "lse-server");
}

TEST_F(ServerTest, MetricsRenderAtNiceTenInANormalProcess) {
  start();
  auto res = get("/metrics");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(metrics_policy.load(), SCHED_OTHER);
  EXPECT_EQ(metrics_nice.load(), 10);
}

TEST_F(ServerTest, MetricsGzipWhenAsked) {
  metrics_text.clear();
  for (int i = 0; i < 2000; ++i)
    metrics_text += "llm_stream_chunks_total{target=\"t" + std::to_string(i % 7) + "\"} 12\n";
  start();
  auto res = get("/metrics", {{"Accept-Encoding", "gzip"}});
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_encoding], "gzip");
  EXPECT_EQ(res[http::field::vary], "Accept-Encoding, Accept");
  EXPECT_LT(res.body().size(), metrics_text.size() / 5);
  EXPECT_TRUE(inflate_gzip(res.body()) == metrics_text);

  auto refused = get("/metrics", {{"Accept-Encoding", "gzip;q=0, identity"}});
  EXPECT_TRUE(refused[http::field::content_encoding].empty());
  EXPECT_TRUE(refused.body() == metrics_text);
}

TEST_F(ServerTest, HookFailureIsA500NotACrash) {
  start();
  metrics_throws = true;
  auto res = get("/metrics");
  EXPECT_EQ(res.result(), http::status::internal_server_error);
  EXPECT_NE(res.body().find("registry exploded"), std::string::npos);
  metrics_throws = false;
  EXPECT_EQ(get("/metrics").result(), http::status::ok);
}

TEST_F(ServerTest, Ready) {
  start();
  EXPECT_EQ(get("/-/ready").result(), http::status::ok);
  ready = false;
  auto res = get("/-/ready");
  EXPECT_EQ(res.result(), http::status::service_unavailable);
  EXPECT_EQ(res.body(), "Not ready");
}

TEST_F(ServerTest, Reload) {
  options.routing.enable_lifecycle = true;
  start();
  Client c(server->port());
  auto ok = c.request(http::verb::post, "/-/reload");
  EXPECT_EQ(ok.result(), http::status::ok);
  EXPECT_EQ(ok.body(), "reloaded\n");
  reload_ok = false;
  auto failed = c.request(http::verb::post, "/-/reload");
  EXPECT_EQ(failed.result(), http::status::internal_server_error);
  EXPECT_NE(failed.body().find("config.yaml:3:5: unknown key"), std::string::npos);
  auto wrong = c.request(http::verb::get, "/-/reload");
  EXPECT_EQ(wrong.result(), http::status::method_not_allowed);
  EXPECT_EQ(wrong[http::field::allow], "POST");
  EXPECT_EQ(reloads, 2);
}

TEST_F(ServerTest, ReloadIsForbiddenWithoutLifecycle) {
  start();  // enable_lifecycle is off by default, as in Prometheus
  Client c(server->port());
  auto res = c.request(http::verb::post, "/-/reload");
  EXPECT_EQ(res.result(), http::status::forbidden);
  EXPECT_NE(res.body().find("--web.enable-lifecycle"), std::string::npos) << res.body();
  EXPECT_EQ(c.request(http::verb::get, "/-/reload").result(), http::status::method_not_allowed);
  EXPECT_EQ(reloads, 0);
}

TEST_F(ServerTest, MetricsFormatFollowsAccept) {
  start();
  auto om = get("/metrics", {{"Accept", "application/openmetrics-text; version=1.0.0"}});
  EXPECT_EQ(om.result(), http::status::ok);
  EXPECT_EQ(om[http::field::content_type], metrics::kOpenMetricsContentType);
  EXPECT_EQ(last_format.load(), metrics::Exposition::openmetrics);
  EXPECT_NE(om[http::field::vary].find("Accept"), beast::string_view::npos);
  auto text = get("/metrics", {{"Accept", "text/plain"}});
  EXPECT_EQ(text[http::field::content_type], metrics::kTextContentType);
  EXPECT_EQ(last_format.load(), metrics::Exposition::text);
}

TEST_F(ServerTest, RoutePrefixAndTelemetryPath) {
  options.routing.route_prefix = "/lse";
  options.routing.telemetry_path = "/m";
  start();
  auto m = get("/lse/m");
  EXPECT_EQ(m.result(), http::status::ok);
  EXPECT_EQ(m.body(), metrics_text);
  EXPECT_EQ(get("/lse/metrics").result(), http::status::not_found);
  EXPECT_EQ(get("/metrics").result(), http::status::not_found);
  EXPECT_EQ(get("/m").result(), http::status::not_found);
  EXPECT_EQ(get("/lse/-/healthy").body(), "OK");
  auto root = get("/");
  EXPECT_EQ(root.result(), http::status::found);
  EXPECT_EQ(root[http::field::location], "/lse/");
  EXPECT_EQ(get("/lse/").result(), http::status::ok);
}

TEST_F(ServerTest, BadRoutingIsRefusedAtConstruction) {
  ServerOptions bad;
  bad.routing.telemetry_path = "metrics";
  EXPECT_THROW(Server("127.0.0.1:0", hooks(), rows, bad), std::invalid_argument);
  bad.routing.telemetry_path = "/-/healthy";
  EXPECT_THROW(Server("127.0.0.1:0", hooks(), rows, bad), std::invalid_argument);
}

TEST_F(ServerTest, ConfigDump) {
  start();
  auto res = get("/config");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "text/plain; charset=utf-8");
  EXPECT_EQ(res.body(), "listen: \":9687\"\ntargets: []\n");
}

TEST_F(ServerTest, UnknownPathAndWrongMethods) {
  start();
  Client c(server->port());
  EXPECT_EQ(c.request(http::verb::get, "/nope").result(), http::status::not_found);
  EXPECT_EQ(c.request(http::verb::get, "/metrics/extra").result(), http::status::not_found);
  EXPECT_EQ(c.request(http::verb::post, "/nope").result(), http::status::not_found);
  auto del = c.request(http::verb::delete_, "/metrics");
  EXPECT_EQ(del.result(), http::status::method_not_allowed);
  EXPECT_EQ(del[http::field::allow], "GET, HEAD");
  for (const char* path : {"/", "/-/healthy", "/-/ready", "/config", "/api/v1/probes"})
    EXPECT_EQ(c.request(http::verb::put, path, {}, "x").result(), http::status::method_not_allowed)
        << path;
}

TEST_F(ServerTest, HeadHasHeadersButNoBody) {
  start();
  Client c(server->port());
  auto res = c.request(http::verb::head, "/metrics");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_length], std::to_string(metrics_text.size()));
  EXPECT_TRUE(res.body().empty());
  // The connection is still in step: the next response is read correctly.
  EXPECT_EQ(c.request(http::verb::get, "/-/healthy").body(), "OK");
}

TEST_F(ServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  start();
  Client c(server->port());
  for (int i = 0; i < 5; ++i) {
    auto res = c.request(http::verb::get, "/-/healthy");
    EXPECT_EQ(res.result(), http::status::ok);
    EXPECT_TRUE(res.keep_alive());
  }
  auto last = c.request(http::verb::get, "/-/healthy", {}, {}, /*keep_alive=*/false);
  EXPECT_FALSE(last.keep_alive());
  EXPECT_TRUE(c.closed_by_server());
}

TEST_F(ServerTest, Http10WithoutKeepAliveIsClosed) {
  start();
  Client c(server->port());
  c.send_raw("GET /-/healthy HTTP/1.0\r\n\r\n");
  auto all = c.read_all();
  EXPECT_EQ(all.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << all;
  EXPECT_NE(all.find("\r\n\r\nOK"), std::string::npos);
}

std::vector<simdjson::dom::element> probes_of(simdjson::dom::parser& parser,
                                              const std::string& body) {
  std::vector<simdjson::dom::element> out;
  auto doc = parser.parse(body);
  EXPECT_FALSE(doc.error()) << body;
  for (auto e : doc["probes"].get_array()) out.push_back(e);
  return out;
}

TEST_F(ServerTest, ProbesApiNewestFirstWithFilterAndLimit) {
  for (int i = 1; i <= 6; ++i) rows.add(row(i % 2 ? "a" : "b", i));
  start();
  simdjson::dom::parser parser;

  auto all = get("/api/v1/probes");
  EXPECT_EQ(all.result(), http::status::ok);
  EXPECT_EQ(all[http::field::content_type], "application/json");
  auto items = probes_of(parser, all.body());
  ASSERT_EQ(items.size(), 6u);
  EXPECT_EQ(int64_t(items[0]["chunks"]), 6);
  EXPECT_EQ(int64_t(items[5]["chunks"]), 1);

  auto a = get("/api/v1/probes?target=a&limit=2");
  items = probes_of(parser, a.body());
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(std::string_view(items[0]["target"]), "a");
  EXPECT_EQ(int64_t(items[0]["chunks"]), 5);
  EXPECT_EQ(int64_t(items[1]["chunks"]), 3);

  // Rows are DESIGN §6 rows: the row reader takes them back.
  std::string one = simdjson::minify(items[0]);
  std::string error;
  EXPECT_TRUE(report::parse_row_json(one, &error)) << error;

  EXPECT_EQ(probes_of(parser, get("/api/v1/probes?target=nobody").body()).size(), 0u);
  EXPECT_EQ(probes_of(parser, get("/api/v1/probes?limit=100000").body()).size(), 6u);
  EXPECT_EQ(probes_of(parser, get("/api/v1/probes?target=&limit=1").body()).size(), 1u);

  for (const char* bad : {"abc", "0", "-1", "1.5", "", "10x"}) {
    auto res = get(std::string("/api/v1/probes?limit=") + bad);
    EXPECT_EQ(res.result(), http::status::bad_request) << bad;
    EXPECT_EQ(res[http::field::content_type], "application/json");
    auto doc = parser.parse(res.body());
    ASSERT_FALSE(doc.error()) << res.body();
    EXPECT_NE(std::string_view(doc["error"]).find("limit"), std::string_view::npos);
  }
}

TEST_F(ServerTest, ProbesLimitDefaultsTo100AndCapsAtTheRing) {
  report::RowStore big(500, {});
  for (int i = 0; i < 150; ++i) big.add(row("t", i));
  server = std::make_unique<Server>("127.0.0.1:0", hooks(), big);
  server->start();
  simdjson::dom::parser parser;
  EXPECT_EQ(probes_of(parser, get("/api/v1/probes").body()).size(), 100u);
  EXPECT_EQ(probes_of(parser, get("/api/v1/probes?limit=120").body()).size(), 120u);
  EXPECT_EQ(probes_of(parser, get("/api/v1/probes?limit=9999").body()).size(), 150u);
  server->stop();
}

TEST_F(ServerTest, LandingPageShowsTargetsAndLastProbeEscaped) {
  targets.push_back({"<script>alert(1)</script>", "m\"&'", "https://x/<b>", {"p<1>"}, 1.5, {}});
  rows.add(row("openai-mini", 1, /*ok=*/false));
  auto evil = row("<script>alert(1)</script>", 2);
  evil.error_detail = "<img src=x onerror=alert(2)>";
  rows.add(evil);
  start();
  auto res = get("/");
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "text/html; charset=utf-8");
  const std::string& html = res.body();
  EXPECT_NE(html.find("llm-stream-exporter"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("m&quot;&amp;&#39;"), std::string::npos);
  EXPECT_NE(html.find("p&lt;1&gt;"), std::string::npos);
  // Target, model, prompts, interval, last result and links.
  EXPECT_NE(html.find("openai-mini"), std::string::npos);
  EXPECT_NE(html.find("gpt-4o-mini"), std::string::npos);
  EXPECT_NE(html.find("short, long"), std::string::npos);
  EXPECT_NE(html.find("1m"), std::string::npos);
  EXPECT_NE(html.find("1.5s"), std::string::npos);
  EXPECT_NE(html.find("http_5xx (503)"), std::string::npos);
  EXPECT_NE(html.find("250.0 ms"), std::string::npos);  // TTFT of the ok row
  EXPECT_NE(html.find("400.0 ms"), std::string::npos);  // its max gap
  EXPECT_NE(html.find("ago"), std::string::npos);
  EXPECT_NE(html.find("href=\"metrics\""), std::string::npos);
  EXPECT_NE(html.find("href=\"api/v1/probes\""), std::string::npos);
  EXPECT_NE(html.find("href=\"config\""), std::string::npos);
  EXPECT_NE(html.find("api/v1/probes?target=%3Cscript%3Ealert%281%29%3C%2Fscript%3E"),
            std::string::npos);
  EXPECT_NE(res["Content-Security-Policy"].find("default-src 'none'"), std::string::npos);
}

TEST_F(ServerTest, GarbageGets400AndTheServerKeepsServing) {
  start();
  {
    Client c(server->port());
    // A TLS ClientHello start, as from a scraper configured for https.
    static const char garbage[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 garbage\r\n\r\n";
    c.send_raw(std::string(garbage, sizeof garbage - 1));
    auto reply = c.read_all();
    EXPECT_EQ(reply.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << reply;
  }
  {
    Client c(server->port());
    c.send_raw("GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n");
    EXPECT_EQ(c.read_all().rfind("HTTP/1.1 400", 0), 0u);
  }
  {
    Client c(server->port());
    c.send_raw("GET /metrics HTTP/1.1\r\nContent-Length: banana\r\n\r\n");
    EXPECT_EQ(c.read_all().rfind("HTTP/1.1 400", 0), 0u);
  }
  EXPECT_EQ(get("/-/healthy").result(), http::status::ok);
}

TEST_F(ServerTest, OversizedHeaderIs431) {
  start();
  Client c(server->port());
  c.send_raw("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " +
             std::string(std::size_t{10} * 1024, 'a') + "\r\n\r\n");
  auto reply = c.read_all();
  EXPECT_EQ(reply.rfind("HTTP/1.1 431 ", 0), 0u) << reply.substr(0, 100);
  EXPECT_EQ(get("/-/healthy").result(), http::status::ok);
}

TEST_F(ServerTest, OversizedBodyIs413) {
  start();
  Client c(server->port());
  c.send_raw("POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n" +
             std::string(std::size_t{100} * 1024, 'b'));
  auto reply = c.read_all();
  EXPECT_EQ(reply.rfind("HTTP/1.1 413 ", 0), 0u) << reply.substr(0, 100);
  EXPECT_EQ(reloads, 0);
}

TEST_F(ServerTest, ClientsThatVanishDoNotHurt) {
  start();
  for (int i = 0; i < 20; ++i) {
    Client c(server->port());
    c.send_raw(i % 2 ? "GET /metr" : "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    // Reset instead of a clean close: SO_LINGER 0.
    linger l{1, 0};
    ::setsockopt(c.socket().native_handle(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  EXPECT_EQ(get("/-/healthy").result(), http::status::ok);
}

TEST_F(ServerTest, SilentAndIdleConnectionsAreClosed) {
  Limits limits;
  limits.header_timeout = std::chrono::milliseconds(200);  // a new connection's first request
  limits.idle_timeout = std::chrono::milliseconds(200);    // between keep-alive requests
  start(limits);
  Client silent(server->port());
  auto t0 = Clock::now();
  EXPECT_TRUE(silent.closed_by_server());
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));

  // After a request, too (keep-alive idle).
  Client kept(server->port());
  EXPECT_EQ(kept.request(http::verb::get, "/-/healthy").result(), http::status::ok);
  EXPECT_TRUE(kept.closed_by_server());
}

// Keep-alive connections count against the cap too; at the cap the oldest
// of them makes room for a newcomer instead of the newcomer being refused.
TEST_F(ServerTest, AtTheCapTheOldestIdleConnectionMakesRoom) {
  Limits limits;
  limits.max_connections = 2;
  start(limits);
  Client first(server->port());
  Client second(server->port());
  EXPECT_EQ(first.request(http::verb::get, "/-/healthy").result(), http::status::ok);
  EXPECT_EQ(second.request(http::verb::get, "/-/healthy").result(), http::status::ok);
  Client third(server->port());
  EXPECT_EQ(third.request(http::verb::get, "/-/healthy").result(), http::status::ok);
  EXPECT_TRUE(first.closed_by_server());
  EXPECT_TRUE(second.still_open());
  EXPECT_EQ(second.request(http::verb::get, "/-/healthy").result(), http::status::ok);
}

TEST_F(ServerTest, StopIsPromptWithAnIdleKeepAliveConnectionOpen) {
  start();
  Client c(server->port());
  EXPECT_EQ(c.request(http::verb::get, "/-/healthy").result(), http::status::ok);
  Client silent(server->port());  // never sends a byte
  auto t0 = Clock::now();
  server->stop();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1));
  EXPECT_TRUE(c.closed_by_server());
  server->stop();  // idempotent
}

TEST_F(ServerTest, StopIsPromptWhileAHookIsSlow) {
  std::atomic<bool> entered{false};
  auto h = hooks();
  h.reload = [&]() -> std::pair<bool, std::string> {
    entered = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return {true, "slow"};
  };
  ServerOptions lifecycle;
  lifecycle.routing.enable_lifecycle = true;
  server = std::make_unique<Server>("127.0.0.1:0", h, rows, lifecycle);
  server->start();
  std::thread client([&] {
    try {
      Client c(server->port());
      c.request(http::verb::post, "/-/reload");
    } catch (const std::exception&) {
    }
  });
  while (!entered) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto t0 = Clock::now();
  server->stop();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1));
  client.join();
}

TEST_F(ServerTest, PortInUseIsAClearError) {
  start();
  Server second("127.0.0.1:" + std::to_string(server->port()), hooks(), rows);
  try {
    second.start();
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot listen on 127.0.0.1:" + std::to_string(server->port())),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("in use"), std::string::npos) << what;
  }
}

TEST_F(ServerTest, ListenAddressForms) {
  for (const char* bad :
       {"9687", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000", "[::1:0", "::1:9687"}) {
    Server s(bad, hooks(), rows);
    EXPECT_THROW(s.start(), std::runtime_error) << bad;
  }
  {
    Server any(":0", hooks(), rows);
    any.start();
    Client c(any.port());  // reachable over IPv4 loopback
    EXPECT_EQ(c.request(http::verb::get, "/-/healthy").result(), http::status::ok);
  }
  {
    Server local("localhost:0", hooks(), rows);
    local.start();
    EXPECT_NE(local.port(), 0);
  }
  // IPv6 loopback only where the host has it.
  asio::io_context ioc;
  tcp::socket probe6(ioc);
  boost::system::error_code ec;
  probe6.open(tcp::v6(), ec);
  if (!ec) probe6.bind(tcp::endpoint(asio::ip::make_address("::1"), 0), ec);
  if (ec) GTEST_SKIP() << "no IPv6 loopback here";
  Server v6("[::1]:0", hooks(), rows);
  v6.start();
  tcp::socket s(ioc);
  s.connect(tcp::endpoint(asio::ip::make_address("::1"), v6.port()));
  http::request<http::string_body> req{http::verb::get, "/-/healthy", 11};
  req.keep_alive(false);
  http::write(s, req);
  beast::flat_buffer buf;
  ClientResponse res;
  http::read(s, buf, res);
  EXPECT_EQ(res.body(), "OK");
}

}  // namespace
}  // namespace lse::server
