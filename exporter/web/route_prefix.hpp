// Where the endpoints live when the exporter runs behind a path prefix
// (a reverse proxy or an ingress serving it at https://host/llm-stream/):
// `--web.route-prefix` and `--web.external-url` as Prometheus reads them.
// Pure.
#pragma once
#include <string>
#include <string_view>

namespace lse::web {

// The route prefix every endpoint answers under: "" for none, else "/a/b"
// (leading '/', no trailing one). As in Prometheus, an empty
// `route_prefix_flag` takes the path of `external_url` (which must then be
// an absolute http(s) URL, or empty). Throws std::invalid_argument with a
// message naming the flag.
std::string route_prefix(std::string_view route_prefix_flag, std::string_view external_url);

}  // namespace lse::web
