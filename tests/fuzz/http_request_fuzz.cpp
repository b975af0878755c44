// libFuzzer target for the exporter's own HTTP request handling: the bytes a
// client sends on one connection go through Beast's
// http::request_parser<string_body> with the limits exporter/server/server.cpp
// sets (Limits::header_limit, Limits::body_limit), pipelined requests one
// after the other as the server's session reads them, and every complete
// request through server::handle_request, with stub Hooks and a RowStore.
// No sockets, no clocks (now_unix is fixed). See tests/fuzz/README.md for
// the input layout and the invariants. Built and run by tests/fuzz/fuzz_all.sh.
#include <simdjson.h>
#include <zlib.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/write.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "report/row_json.hpp"
#include "report/row_store.hpp"
#include "server/routes.hpp"
#include "server/server.hpp"

namespace {

namespace http = boost::beast::http;
using lse::server::Hooks;
using lse::server::Request;
using lse::server::Response;
using lse::server::RouteContext;
using lse::server::Routing;

std::string sv(boost::beast::string_view s) { return std::string(s.data(), s.size()); }

// ---------------------------------------------------------------------------
// The server's limits and what the routes read.

const lse::server::Limits kLimits{};      // header_limit 8 KiB, body_limit 64 KiB, as served
constexpr std::size_t kMaxRequests = 16;  // pipelined requests answered per input
constexpr double kNowUnix = 1796215900.0;
// "user:pass": the Authorization a control bit makes the only accepted one.
constexpr const char* kGoodAuthorization = "Basic dXNlcjpwYXNz";

// Rows kept in the populated store: found by /probe?id= and /api/v1/probes?id=.
constexpr const char* kRows[] = {
    R"({"ts":1796215801.105,"id":"p-ok-1","target":"svc","model":"test-model","prompt":"long","ok":true,"reason":"","http_status":200,"ttft_ms":120.983,"duration_ms":416.294,"tail_ms":0.050,"chunks":16,"stalls":1,"gap_p50_ms":19.862,"gap_p95_ms":22.740,"gap_max_ms":322.740,"phases_ms":{"request":0.047,"headers":0.945,"first_token":119.992},"usage":{"prompt_tokens":149,"completion_tokens":16},"server_ms":{"load":1.5,"prompt_eval":2.25,"eval":300.125},"finish_reason":"stop","gaps_ms":[20.668,17.770,19.862,321.729,18.159,19.664],"host":"host-a","content_encoding":"gzip","http_version":"1.1","interim_responses":1,"via_proxy":false,"coalesced_chunks":2,"stalls_detail":[{"at_chunk":4,"gap_ms":321.729,"released_chunks":3}]})",
    R"({"ts":1796215802.5,"id":"p-fail-2","target":"svc","model":"test-model","prompt":"short","ok":false,"reason":"upstream_error","http_status":500,"ttft_ms":null,"duration_ms":12.5,"chunks":0,"stalls":0,"finish_reason":null,"error":"<script>alert(1)</script> \"quoted\" & more","host":"host-a"})",
    R"({"ts":1796215803.0,"id":"p3","target":"other <b>","model":"m","prompt":"short","ok":true,"reason":"","http_status":200,"ttft_ms":5,"duration_ms":50,"chunks":3,"stalls":0,"gaps_ms":[1,2]})",
};

struct World {
  lse::report::RowStore empty{10, {}};
  lse::report::RowStore populated{10, {}};
  World() {
    for (const char* line : kRows) {
      std::string error;
      auto row = lse::report::parse_row_json(line, &error);
      if (!row) lse::fuzz::fail("seed row does not parse", error);
      populated.add(*row);
    }
  }
};

World& world() {
  static World w;
  return w;
}

// ---------------------------------------------------------------------------
// Controls: the first input byte.
//   bits 0-1  routing: 0 defaults; 1 --web.route-prefix=/lse; 2
//             --web.telemetry-path=/ (replaces the landing page); 3 prefix
//             /a/b with telemetry path /m
//   bit 2     --web.enable-lifecycle
//   bit 3     basic auth required: authorized only with kGoodAuthorization
//   bit 4     populated RowStore (3 rows) instead of an empty one
//   bit 5     hooks: 0 stubs that answer, 1 stubs that throw
//   bit 6     empty Hooks{} (every hook unset), overrides bit 5
//   bit 7     ready() and reload() answer true (else false)
struct Controls {
  Routing routing;
  bool auth_required = false;
  bool populated = false;
  bool throwing = false;
  bool empty_hooks = false;
  bool ok = false;
};

Controls read_controls(unsigned byte) {
  Controls c;
  switch (byte & 3) {
    case 0: break;
    case 1: c.routing.route_prefix = "/lse"; break;
    case 2: c.routing.telemetry_path = "/"; break;
    case 3:
      c.routing.route_prefix = "/a/b";
      c.routing.telemetry_path = "/m";
      break;
  }
  c.routing.enable_lifecycle = byte & 4;
  c.auth_required = byte & 8;
  c.populated = byte & 16;
  c.throwing = byte & 32;
  c.empty_hooks = byte & 64;
  c.ok = byte & 128;
  return c;
}

Hooks make_hooks(const Controls& c) {
  Hooks h;
  if (c.empty_hooks) return h;
  if (c.throwing) {
    auto boom = [](const char* what) { throw std::runtime_error(what); };
    h.metrics = lse::server::whole_exposition([boom](lse::metrics::Exposition) -> std::string {
      boom("metrics <failed>");
      return {};
    });
    h.ready = [boom]() -> bool {
      boom("ready failed");
      return false;
    };
    h.reload = [boom]() -> std::pair<bool, std::string> {
      boom("reload failed\r\nX-Injected: 1");
      return {};
    };
    h.config_dump = [boom]() -> std::string {
      boom("dump failed");
      return {};
    };
    h.targets = [boom]() -> std::vector<lse::server::TargetStatus> {
      boom("targets failed");
      return {};
    };
    return h;
  }
  const bool ok = c.ok;
  h.metrics = lse::server::whole_exposition([](lse::metrics::Exposition e) {
    std::string body =
        "# HELP llm_probe_ttft_seconds Time to first token.\n"
        "# TYPE llm_probe_ttft_seconds histogram\n";
    for (int i = 0; i < 40; ++i)
      body += "llm_probe_ttft_seconds_bucket{target=\"svc\",prompt=\"short\",le=\"" +
              std::to_string(i * 0.25) + "\"} " + std::to_string(i * 3) + "\n";
    if (e == lse::metrics::Exposition::openmetrics) body += "# EOF\n";
    return body;
  });
  h.ready = [ok] { return ok; };
  h.reload = [ok] { return std::pair<bool, std::string>(ok, ok ? "" : "config.yaml:3:1: bad"); };
  h.config_dump = [] { return std::string("listen: \":9687\"\ntargets:\n  - name: svc\n"); };
  h.targets = [] {
    lse::server::TargetStatus t;
    t.name = "svc";
    t.model = "test-model";
    t.url_redacted = "https://api.example.com/v1?key=<secret>";
    t.prompts = {"short", "long"};
    t.interval_seconds = 60;
    t.diagnosis = {"short: transport", "long: no verdict yet"};
    lse::server::TargetStatus u = t;
    u.name = "other <b>";
    return std::vector<lse::server::TargetStatus>{t, u};
  };
  return h;
}

// ---------------------------------------------------------------------------
// Checks on one answer.

std::string gunzip(const std::string& z) {
  z_stream s{};
  if (inflateInit2(&s, 15 + 16) != Z_OK) lse::fuzz::fail("inflateInit2");
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(z.data()));
  s.avail_in = static_cast<uInt>(z.size());
  std::string out;
  int rc = Z_OK;
  while (rc == Z_OK) {
    char buf[16384];
    s.next_out = reinterpret_cast<Bytef*>(buf);
    s.avail_out = sizeof buf;
    rc = inflate(&s, Z_NO_FLUSH);
    out.append(buf, sizeof buf - s.avail_out);
    if (rc == Z_BUF_ERROR) break;
  }
  inflateEnd(&s);
  if (rc != Z_STREAM_END) lse::fuzz::fail("gzip'd body does not inflate", std::to_string(rc));
  return out;
}

bool has_crlf(std::string_view s) {
  return s.find('\r') != std::string_view::npos || s.find('\n') != std::string_view::npos;
}

std::string describe(const Request& req, const Response& res) {
  std::ostringstream os;
  os << "request: " << req.method_string() << " " << req.target() << " HTTP/" << req.version() / 10
     << "." << req.version() % 10 << "\nresponse: " << res.result_int() << "\n";
  for (const auto& f : res) os << "  " << f.name_string() << ": " << f.value() << "\n";
  os << "  body (" << res.body().size() << " bytes)\n";
  return os.str();
}

// The response goes out through Beast's serializer and must come back
// through its parser as the same message.
void check_wire_form(const Request& req, const Response& res) {
  std::ostringstream os;
  os << res;
  const std::string wire = os.str();
  http::response_parser<http::string_body> p;
  p.eager(true);
  if (req.method() == http::verb::head) p.skip(true);
  boost::beast::error_code ec;
  const std::size_t used = p.put(boost::asio::buffer(wire), ec);
  if (!ec && !p.is_done()) p.put_eof(ec);
  FUZZ_CHECK(!ec, describe(req, res) + ec.message());
  FUZZ_CHECK(p.is_done(), describe(req, res));
  FUZZ_CHECK(used == wire.size(), describe(req, res));
  const auto& back = p.get();
  FUZZ_CHECK(back.result_int() == res.result_int(), describe(req, res));
  FUZZ_CHECK(back.body() == res.body(), describe(req, res));
}

void check_response(const Request& req, const Response& res, const RouteContext& ctx,
                    int depth = 0) {
  const std::string what = describe(req, res);
  const unsigned code = res.result_int();
  FUZZ_CHECK(http::int_to_status(code) != http::status::unknown, what);
  FUZZ_CHECK(code >= 200 && code <= 599, what);
  FUZZ_CHECK(res.version() == req.version(), what);
  FUZZ_CHECK(res.keep_alive() == req.keep_alive(), what);
  FUZZ_CHECK(res.count(http::field::content_length) == 1, what);
  FUZZ_CHECK(res.count(http::field::transfer_encoding) == 0, what);
  FUZZ_CHECK(res[http::field::server] == "llm-stream-exporter", what);
  FUZZ_CHECK(res["X-Content-Type-Options"] == "nosniff", what);
  FUZZ_CHECK(!res[http::field::content_type].empty(), what);
  // No header of the answer carries a line break (response splitting).
  for (const auto& f : res) {
    FUZZ_CHECK(!has_crlf(sv(f.name_string())), what);
    FUZZ_CHECK(!has_crlf(sv(f.value())), what);
  }
  if (!ctx.authorized) {
    FUZZ_CHECK(code == 401, what);
    FUZZ_CHECK(res.count(http::field::www_authenticate) == 1, what);
  }
  if (code == 405) FUZZ_CHECK(!res[http::field::allow].empty(), what);
  if (code == 302) {
    const std::string location = sv(res[http::field::location]);
    FUZZ_CHECK(location == ctx.routing.route_prefix + "/", what + location);
  }
  if (code == 403) FUZZ_CHECK(!ctx.routing.enable_lifecycle, what);  // only /-/reload says 403

  const std::string length = sv(res[http::field::content_length]);
  if (req.method() == http::verb::head) {
    // No body; the Content-Length of the body GET would get.
    FUZZ_CHECK(res.body().empty(), what);
    if (depth == 0) {
      Request get = req;
      get.method(http::verb::get);
      const Response full = lse::server::handle_request(get, ctx);
      FUZZ_CHECK(full.result_int() == code, what + describe(get, full));
      FUZZ_CHECK(length == std::to_string(full.body().size()), what + describe(get, full));
    }
  } else {
    FUZZ_CHECK(length == std::to_string(res.body().size()), what);
  }

  const std::string encoding = sv(res[http::field::content_encoding]);
  std::string plain_body = res.body();
  if (!encoding.empty()) {
    FUZZ_CHECK(encoding == "gzip", what);
    FUZZ_CHECK(code == 200, what);
    FUZZ_CHECK(!res[http::field::vary].empty(), what);
    if (req.method() != http::verb::head) {
      plain_body = gunzip(res.body());
      if (depth == 0) {
        // Without Accept-Encoding: the same answer, uncompressed.
        Request plain = req;
        plain.erase(http::field::accept_encoding);
        const Response identity = lse::server::handle_request(plain, ctx);
        FUZZ_CHECK(identity.count(http::field::content_encoding) == 0, describe(plain, identity));
        FUZZ_CHECK(identity.result_int() == code, describe(plain, identity));
        FUZZ_CHECK(identity.body() == plain_body, what + describe(plain, identity));
      }
    }
  }
  // JSON answers are JSON (the quoted ids and messages: valid UTF-8 too).
  if (res[http::field::content_type] == "application/json" && req.method() != http::verb::head) {
    thread_local simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const auto err = parser.parse(plain_body).get(doc);
    FUZZ_CHECK(err == simdjson::SUCCESS, what + plain_body);
  }
  check_wire_form(req, res);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Controls c = read_controls(data[0]);
  const Hooks hooks = make_hooks(c);
  const lse::report::RowStore& rows = c.populated ? world().populated : world().empty;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);

  for (std::size_t n = 0; n < kMaxRequests && !in.empty(); ++n) {
    // As Session::read_request() sets it up, for every request.
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(kLimits.header_limit));
    parser.body_limit(kLimits.body_limit);
    boost::beast::error_code ec;
    // What http::read does with the bytes already buffered. Every byte of
    // the input is there: need_more without progress is the end of it.
    while (!parser.is_done()) {
      if (in.empty()) {
        ec = http::error::need_more;
        break;
      }
      const std::size_t used = parser.put(boost::asio::buffer(in.data(), in.size()), ec);
      in.remove_prefix(used);
      if (ec == http::error::need_more && used > 0) {
        ec = {};
        continue;
      }
      if (ec) break;
      if (used == 0) {
        ec = http::error::need_more;
        break;
      }
    }
    if (ec == http::error::need_more) {
      // The client stopped sending: end of stream (partial_message when a
      // request had begun). Nothing is answered.
      parser.put_eof(ec);
      return 0;
    }
    // header_limit -> 431, body_limit -> 413, anything else -> 400; then the
    // connection closes.
    if (ec) return 0;

    Request req = parser.release();
    const bool authorized =
        !c.auth_required || sv(req[http::field::authorization]) == kGoodAuthorization;
    const RouteContext ctx{hooks, rows, kNowUnix, c.routing, authorized};
    const Response res = lse::server::handle_request(req, ctx);
    check_response(req, res, ctx);
    if (res.need_eof()) return 0;  // Connection: close, HTTP/1.0 without keep-alive
  }
  return 0;
}
