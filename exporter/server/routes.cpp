// The endpoints of DESIGN §4 `listen:` and their HTTP semantics: the route
// prefix and telemetry path of the --web.* flags, basic auth's 401, methods
// per path (405 with Allow), the lifecycle switch (403), content types and
// the exposition format from Accept, gzip for the large bodies, HEAD.
#include "server/routes.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <cctype>
#include <charconv>
#include <exception>
#include <optional>
#include <variant>

#include "metrics/exposition.hpp"
#include "report/row_json.hpp"
#include "server/encoding.hpp"
#include "server/landing_page.hpp"
#include "server/negotiation.hpp"
#include "server/probe_page.hpp"
#include "util/json.hpp"

namespace lse::server {
namespace {

namespace http = boost::beast::http;

constexpr std::size_t kDefaultProbeLimit = 100;
// The most /api/v1/probes builds in one answer (see probes()).
constexpr std::size_t kProbesBodyBytes = std::size_t{4} << 20;
constexpr const char* kText = "text/plain; charset=utf-8";
constexpr const char* kJson = "application/json";

std::string_view sv(boost::beast::string_view s) { return {s.data(), s.size()}; }

struct Parts {
  std::string_view path, query;
};

Parts split_target(std::string_view target) {
  // Absolute form ("http://host/metrics") is what some proxies send.
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.substr(0, scheme.size()) == scheme) {
      target.remove_prefix(scheme.size());
      auto slash = target.find('/');
      target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
      break;
    }
  }
  auto q = target.find('?');
  if (q == std::string_view::npos) return {target, {}};
  return {target.substr(0, q), target.substr(q + 1)};
}

// First value of `name` in a query string, decoded; nullopt when absent.
std::optional<std::string> query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = pair.find('=');
    if (query_decode(pair.substr(0, eq)) != name) continue;
    return eq == std::string_view::npos ? std::string() : query_decode(pair.substr(eq + 1));
  }
  return std::nullopt;
}

struct Outcome {
  http::status status = http::status::ok;
  std::string content_type = kText;
  std::string body;
  const char* allow = nullptr;  // for 405
  std::string location;         // for redirects
  bool compressible = false;    // worth gzip when the client asks
  bool gzipped = false;         // body already gzip (compressed as it was made)
  bool varies_by_accept = false;
  bool html = false;
  bool challenge = false;               // 401: ask for basic auth
  std::optional<unsigned> retry_after;  // 429: come back in that many seconds
};

Outcome text(http::status status, std::string body) {
  Outcome o;
  o.status = status;
  o.body = std::move(body);
  return o;
}

Outcome method_not_allowed(const char* allow) {
  Outcome o = text(http::status::method_not_allowed, "Method Not Allowed\n");
  o.allow = allow;
  return o;
}

Outcome json_error(http::status status, std::string_view message) {
  Outcome o;
  o.status = status;
  o.content_type = kJson;
  o.body = "{\"error\":";
  json::append_quoted(o.body, message);
  o.body += '}';
  return o;
}

// ?id=: the one kept probe with that id (an exemplar's probe_id), 404 when
// it has left the ring.
Outcome probe_by_id(const std::string& id, const report::RowStore& rows) {
  auto row = rows.find(id);
  if (!row)
    return json_error(http::status::not_found, "no kept probe has id \"" + id +
                                                   "\" (the ring keeps the newest " +
                                                   std::to_string(rows.capacity()) + " rows)");
  Outcome o;
  o.content_type = kJson;
  o.compressible = true;
  o.body = "{\"probes\":[" + *row + "]}";
  return o;
}

// ?limit= as given (at most the ring's capacity), or the error to answer.
std::variant<std::size_t, Outcome> probe_limit(std::string_view query, std::size_t capacity) {
  std::size_t limit = std::min(kDefaultProbeLimit, capacity);
  if (auto l = query_param(query, "limit")) {
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(l->data(), l->data() + l->size(), n);
    const bool digits_only = !l->empty() && end == l->data() + l->size();
    if (ec == std::errc::result_out_of_range && digits_only) {
      n = capacity;  // absurdly large: as many as there are
    } else if (ec != std::errc() || !digits_only || n == 0) {
      return json_error(http::status::bad_request, "limit must be a positive integer (at most " +
                                                       std::to_string(capacity) + ")");
    }
    limit = static_cast<std::size_t>(std::min<std::uint64_t>(n, capacity));
  }
  return limit;
}

// Everything but RFC 3986 unreserved characters percent-encoded.
std::string query_encode(std::string_view value) {
  std::string out;
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      constexpr const char* kHex = "0123456789ABCDEF";
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

// Newest first, `limit` rows at most, in a body of at most kProbesBodyBytes
// (and always the first row): past it the list ends with "truncated": true
// and "next", the URL of the rest, so `?limit=1000` of rows with 100,000
// gaps each never builds a body of hundreds of MB. `older_than` (an id)
// continues such a list.
Outcome probes(std::string_view query, const report::RowStore& rows, std::string_view prefix) {
  if (auto id = query_param(query, "id")) return probe_by_id(*id, rows);
  auto limit_or_error = probe_limit(query, rows.capacity());
  if (auto* error = std::get_if<Outcome>(&limit_or_error)) return std::move(*error);
  const std::size_t limit = std::get<std::size_t>(limit_or_error);
  const std::string target = query_param(query, "target").value_or("");
  const std::string older_than = query_param(query, "older_than").value_or("");
  Outcome o;
  o.content_type = kJson;
  o.compressible = true;
  o.body = "{\"probes\":[";
  std::size_t listed = 0;
  std::string last_id;
  bool truncated = false;
  const bool found = rows.visit_latest(target, limit, older_than, [&](const probe::ProbeResult& r) {
    std::string row = report::to_row_json(r);
    if (listed > 0 && o.body.size() + row.size() + 1 > kProbesBodyBytes) {
      truncated = true;
      return false;
    }
    if (listed++ > 0) o.body += ',';
    o.body += row;
    last_id = r.id;
    return true;
  });
  if (!found)
    return json_error(http::status::not_found,
                      "no kept probe has id \"" + older_than + "\" (older_than)");
  o.body += ']';
  if (truncated) {
    std::string next = std::string(prefix) +
                       "/api/v1/probes?limit=" + std::to_string(limit - listed) +
                       "&older_than=" + query_encode(last_id);
    if (!target.empty()) next += "&target=" + query_encode(target);
    o.body += ",\"truncated\":true,\"next\":";
    json::append_quoted(o.body, next);
  }
  o.body += '}';
  return o;
}

// The exposition compressed as it is rendered when the scraper takes gzip
// (Prometheus does): only the compressed tenth is ever held whole.
Outcome metrics(const Request& req, const RouteContext& ctx) {
  const metrics::Exposition format = choose_exposition(sv(req[http::field::accept]));
  Outcome o;
  o.content_type = metrics::content_type(format);
  o.compressible = true;
  o.varies_by_accept = true;
  if (!ctx.hooks.metrics) return o;
  std::string refused;
  if (accepts_gzip(sv(req[http::field::accept_encoding]))) {
    GzipWriter gz;
    refused = ctx.hooks.metrics(format, [&gz](std::string_view piece) {
      gz.write(piece);
      return true;
    });
    if (refused.empty()) {
      o.body = gz.finish();
      o.gzipped = true;
    }
  } else {
    refused = ctx.hooks.metrics(format, [&o](std::string_view piece) {
      o.body.append(piece);
      return true;
    });
  }
  if (!refused.empty()) return text(http::status::internal_server_error, refused + "\n");
  return o;
}

Outcome healthy(Parts, const RouteContext&) { return text(http::status::ok, "OK"); }

Outcome ready(Parts, const RouteContext& ctx) {
  if (ctx.hooks.ready && ctx.hooks.ready()) return text(http::status::ok, "OK");
  return text(http::status::service_unavailable, "Not ready");
}

Outcome reload(Parts, const RouteContext& ctx) {
  if (!ctx.routing.enable_lifecycle)
    return text(http::status::forbidden,
                "Lifecycle API is not enabled: start the exporter with --web.enable-lifecycle "
                "to reload with POST /-/reload (SIGHUP reloads without it)\n");
  if (!ctx.hooks.reload) return text(http::status::internal_server_error, "reload not available\n");
  auto [ok, message] = ctx.hooks.reload();
  if (message.empty()) message = ok ? "OK" : "reload failed";
  if (message.back() != '\n') message += '\n';
  return text(ok ? http::status::ok : http::status::internal_server_error, std::move(message));
}

Outcome config_dump(Parts, const RouteContext& ctx) {
  if (!ctx.hooks.config_dump) return text(http::status::service_unavailable, "no configuration\n");
  return text(http::status::ok, ctx.hooks.config_dump());
}

Outcome probes_page(Parts parts, const RouteContext& ctx) {
  return probes(parts.query, ctx.rows, ctx.routing.route_prefix);
}

// GET probe?target= that on_demand_probe() did not take: a bad query, or a
// server without the hook.
Outcome on_demand_refused(std::string_view query) {
  auto parsed = parse_probe_query(query);
  if (auto* error = std::get_if<std::string>(&parsed))
    return text(http::status::bad_request, *error + "\n");
  return text(http::status::service_unavailable, "on-demand probes are not available here\n");
}

// GET probe?id=: one probe's page (its gap timeline), linked from the
// landing page. GET probe?target=: one probe now (on_demand_probe()).
Outcome probe_page(Parts parts, const RouteContext& ctx) {
  if (query_param(parts.query, "target")) return on_demand_refused(parts.query);
  const std::string id = query_param(parts.query, "id").value_or("");
  auto probe = ctx.rows.find_result(id);
  if (!probe) return text(http::status::not_found, "no kept probe has id \"" + id + "\"\n");
  Outcome o;
  o.content_type = "text/html; charset=utf-8";
  o.html = true;
  o.compressible = true;
  o.body = render_probe_page(*probe,
                             ctx.hooks.targets ? ctx.hooks.targets() : std::vector<TargetStatus>{});
  return o;
}

Outcome landing(Parts, const RouteContext& ctx) {
  Outcome o;
  o.content_type = "text/html; charset=utf-8";
  o.html = true;
  o.compressible = true;
  o.body =
      render_landing_page(ctx.hooks.targets ? ctx.hooks.targets() : std::vector<TargetStatus>{},
                          ctx.rows.last_by_target(), ctx.now_unix);
  return o;
}

// Every endpoint: its path, the methods it answers (the Allow of a 405) and
// what it does. GET always comes with HEAD.
enum class Methods { get_head, post };

struct Endpoint {
  std::string_view path;
  Methods methods;
  Outcome (*handle)(Parts, const RouteContext&);
};

bool allows(Methods methods, http::verb method) {
  if (methods == Methods::post) return method == http::verb::post;
  return method == http::verb::get || method == http::verb::head;
}

// The metrics endpoint is not in this table: its path is the telemetry
// path, matched before these.
constexpr Endpoint kEndpoints[] = {
    {"/-/healthy", Methods::get_head, healthy},
    {"/-/ready", Methods::get_head, ready},
    {"/-/reload", Methods::post, reload},
    {"/config", Methods::get_head, config_dump},
    {"/api/v1/probes", Methods::get_head, probes_page},
    {"/probe", Methods::get_head, probe_page},
    {"/", Methods::get_head, landing},
};

Outcome not_allowed(Methods methods) {
  return method_not_allowed(methods == Methods::post ? "POST" : "GET, HEAD");
}

Outcome redirect(http::verb method, std::string location) {
  if (!allows(Methods::get_head, method)) return not_allowed(Methods::get_head);
  Outcome o = text(http::status::found, "Found\n");
  o.location = std::move(location);
  return o;
}

Outcome unauthorized() {
  Outcome o = text(http::status::unauthorized, "Unauthorized\n");
  o.challenge = true;
  return o;
}

// The path below the route prefix; nullopt when the path is not under it.
std::optional<std::string_view> below_prefix(std::string_view path, const Routing& r) {
  if (r.route_prefix.empty()) return path;
  if (path.substr(0, r.route_prefix.size() + 1) != r.route_prefix + "/") return std::nullopt;
  return path.substr(r.route_prefix.size());
}

// Below the route prefix: the telemetry path, then the fixed endpoints.
Outcome route(const Request& req, Parts parts, const RouteContext& ctx) {
  const Routing& r = ctx.routing;
  const http::verb method = req.method();
  if (!r.route_prefix.empty()) {
    // Relative links of the landing page need the trailing '/'.
    if (parts.path == "/" || parts.path == r.route_prefix)
      return redirect(method, r.route_prefix + "/");
  }
  const auto below = below_prefix(parts.path, r);
  if (!below) return text(http::status::not_found, "Not Found\n");
  parts.path = *below;
  if (parts.path == r.telemetry_path) {
    if (!allows(Methods::get_head, method)) return not_allowed(Methods::get_head);
    return metrics(req, ctx);
  }
  for (const auto& e : kEndpoints) {
    if (parts.path != e.path) continue;
    if (!allows(e.methods, method)) return not_allowed(e.methods);
    return e.handle(parts, ctx);
  }
  return text(http::status::not_found, "Not Found\n");
}

bool is_plain_path(std::string_view p) {
  if (p.empty() || p.front() != '/') return false;
  for (char c : p)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '?' || c == '#') return false;
  return true;
}

}  // namespace

std::string routing_problem(const Routing& r) {
  if (!r.route_prefix.empty() && (!is_plain_path(r.route_prefix) || r.route_prefix.back() == '/'))
    return "--web.route-prefix: expected a path such as /llm-stream, got \"" + r.route_prefix +
           "\"";
  if (!is_plain_path(r.telemetry_path))
    return "--web.telemetry-path: expected a path such as /metrics, got \"" + r.telemetry_path +
           "\"";
  for (const auto& e : kEndpoints)
    if (e.path != "/" && e.path == r.telemetry_path)
      return "--web.telemetry-path: " + r.telemetry_path + " is already another endpoint";
  return "";
}

std::string query_decode(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 &&
               hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

MetricsHook whole_exposition(std::function<std::string(metrics::Exposition)> render) {
  return [render = std::move(render)](metrics::Exposition format,
                                      const metrics::ExpositionSink& sink) {
    sink(render(format));
    return std::string();
  };
}

namespace {

// Status, headers (Retry-After too), gzip when asked, keep-alive, HEAD.
Response shaped(const Request& req, Outcome o) {
  Response res{o.status, req.version()};
  res.set(http::field::server, "llm-stream-exporter");
  res.set(http::field::content_type, o.content_type);
  res.set("X-Content-Type-Options", "nosniff");
  if (o.allow) res.set(http::field::allow, o.allow);
  if (!o.location.empty()) res.set(http::field::location, o.location);
  if (o.challenge) res.set(http::field::www_authenticate, "Basic realm=\"llm-stream-exporter\"");
  if (o.retry_after) res.set(http::field::retry_after, std::to_string(*o.retry_after));
  if (o.html)
    res.set("Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
  if (o.compressible) {
    res.set(http::field::vary, o.varies_by_accept ? "Accept-Encoding, Accept" : "Accept-Encoding");
    if (o.gzipped) {
      res.set(http::field::content_encoding, "gzip");
    } else if (o.status == http::status::ok &&
               accepts_gzip(sv(req[http::field::accept_encoding]))) {
      try {
        o.body = gzip(o.body);
        res.set(http::field::content_encoding, "gzip");
      } catch (const std::exception&) {
        // Uncompressed is always acceptable.
      }
    }
  }
  res.body() = std::move(o.body);
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  // HEAD: same headers (Content-Length of the would-be body), no body.
  if (req.method() == http::verb::head) res.body().clear();
  return res;
}

}  // namespace

Response handle_request(const Request& req, const RouteContext& ctx) {
  Outcome o;
  try {
    o = ctx.authorized ? route(req, split_target(sv(req.target())), ctx) : unauthorized();
  } catch (const std::exception& e) {
    o = text(http::status::internal_server_error,
             std::string("internal error: ") + e.what() + "\n");
  } catch (...) {
    o = text(http::status::internal_server_error, "internal error\n");
  }
  return shaped(req, std::move(o));
}

std::variant<ProbeRequest, std::string> parse_probe_query(std::string_view query) {
  ProbeRequest p;
  auto target = query_param(query, "target");
  if (!target || target->empty())
    return std::string("target= names the configured target to probe");
  p.target = std::move(*target);
  if (auto prompt = query_param(query, "prompt"); prompt && !prompt->empty())
    p.prompt = std::move(*prompt);
  if (auto debug = query_param(query, "debug")) {
    if (*debug == "true" || *debug == "1") {
      p.debug = true;
    } else if (!debug->empty() && *debug != "false" && *debug != "0") {
      return "debug must be true or false, got \"" + *debug + "\"";
    }
  }
  if (auto format = query_param(query, "format")) {
    if (*format == "json") {
      p.json = true;
    } else if (!format->empty() && *format != "text") {
      return "format must be text or json, got \"" + *format + "\"";
    }
  }
  return p;
}

std::optional<ProbeRequest> on_demand_probe(const Request& req, const RouteContext& ctx) {
  if (!ctx.authorized || !ctx.hooks.probe) return std::nullopt;
  if (req.method() != http::verb::get && req.method() != http::verb::head) return std::nullopt;
  const Parts parts = split_target(sv(req.target()));
  const auto path = below_prefix(parts.path, ctx.routing);
  if (!path || *path != "/probe" || *path == ctx.routing.telemetry_path) return std::nullopt;
  auto parsed = parse_probe_query(parts.query);
  if (auto* p = std::get_if<ProbeRequest>(&parsed)) return std::move(*p);
  return std::nullopt;
}

Response probe_response(const Request& req, const ProbeAnswer& answer) {
  Outcome o;
  o.status = static_cast<http::status>(answer.status);
  o.content_type = answer.content_type;
  o.body = answer.body;
  o.compressible = true;
  o.retry_after = answer.retry_after_seconds;
  return shaped(req, std::move(o));
}

}  // namespace lse::server
