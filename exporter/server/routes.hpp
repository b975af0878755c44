// Request -> response for every endpoint, without sockets: the connection
// handling in server.cpp stays about HTTP framing and limits, and the routes
// are testable as plain function calls.
#pragma once
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "report/row_store.hpp"
#include "server/server.hpp"

namespace lse::server {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

// Everything a route may read. `now_unix` is the wall clock for ages on the
// landing page (injected so tests are deterministic). `authorized` is the
// web config's basic-auth verdict on this request (true when none is
// required): false answers 401 whatever the path.
struct RouteContext {
  const Hooks& hooks;
  const report::RowStore& rows;
  double now_unix = 0;
  Routing routing{};
  bool authorized = true;
};

// Builds the complete response (status, headers, body, keep-alive, gzip,
// HEAD without body, Content-Length). Never throws: a failing hook is a 500.
Response handle_request(const Request& req, const RouteContext& ctx);

// GET /probe?target=...: the on-demand probe this request asks the server to
// start (authorized, under the route prefix, a valid query, a probe hook);
// nullopt for every other request, which handle_request answers (a bad
// query 400, no hook 503).
std::optional<ProbeRequest> on_demand_probe(const Request& req, const RouteContext& ctx);

// The query of an on-demand probe: target=NAME (required), prompt=P,
// debug=true|false|1|0, format=text|json; or what is wrong with it.
std::variant<ProbeRequest, std::string> parse_probe_query(std::string_view query);

// The response to an on-demand probe, with the headers, gzip, keep-alive
// and HEAD handling of every other response.
Response probe_response(const Request& req, const ProbeAnswer& answer);

// What is wrong with a Routing ("" when nothing): a prefix or telemetry path
// that is not an absolute path, or a telemetry path that would hide another
// endpoint. The message names the flag.
std::string routing_problem(const Routing& routing);

// Decodes %XX and '+' of a query component; nullopt-free: bad escapes are kept.
std::string query_decode(std::string_view text);

}  // namespace lse::server
