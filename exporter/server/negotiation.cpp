// Accept negotiation of the exposition format (see negotiation.hpp).
#include "server/negotiation.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

#include "util/text.hpp"

namespace lse::server {
namespace {

using metrics::Exposition;

// One media range of the header: "type/subtype;version=1.0.0;q=0.5".
struct MediaRange {
  std::string_view type;
  std::string_view version;   // "" when absent
  std::string_view proto;     // protobuf: the message type
  std::string_view encoding;  // protobuf: delimited, text, compact-text
  double q = 1;
};

double parse_q(std::string_view value) {
  const std::string text(value);
  char* end = nullptr;
  const double q = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return 1;  // unreadable: as if absent
  return q < 0 ? 0 : (q > 1 ? 1 : q);
}

MediaRange parse_range(std::string_view item) {
  MediaRange range;
  const auto semi = item.find(';');
  range.type = text::trim_blanks(item.substr(0, semi));
  std::string_view params = semi == std::string_view::npos ? "" : item.substr(semi + 1);
  while (!params.empty()) {
    const auto next = params.find(';');
    const std::string_view param = text::trim_blanks(params.substr(0, next));
    params = next == std::string_view::npos ? "" : params.substr(next + 1);
    const auto eq = param.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = text::trim_blanks(param.substr(0, eq));
    const std::string_view value = text::trim_blanks(param.substr(eq + 1));
    if (text::iequals(key, "q")) range.q = parse_q(value);
    if (text::iequals(key, "version")) range.version = value;
    if (text::iequals(key, "proto")) range.proto = value;
    if (text::iequals(key, "encoding")) range.encoding = value;
  }
  return range;
}

// How specifically `range` names `format`: 3 its exact type (in a version
// we serve), 2 its type with any subtype, 1 "*/*", 0 not at all.
int specificity(const MediaRange& range, Exposition format) {
  // Binary: only for a scraper that names it exactly (never for */*), in the
  // one message type and encoding we write.
  if (format == Exposition::protobuf) {
    return text::iequals(range.type, "application/vnd.google.protobuf") &&
                   range.proto == "io.prometheus.client.MetricFamily" &&
                   text::iequals(range.encoding, "delimited")
               ? 3
               : 0;
  }
  const bool om = format == Exposition::openmetrics;
  const std::string_view exact = om ? "application/openmetrics-text" : "text/plain";
  if (text::iequals(range.type, exact)) {
    // OpenMetrics 0.0.1 is another format; any text/plain version is
    // served as 0.0.4, which every Prometheus reads.
    if (om && !range.version.empty() && range.version.substr(0, 2) != "1.") return 0;
    return 3;
  }
  if (text::iequals(range.type, om ? "application/*" : "text/*")) return 2;
  if (range.type == "*/*") return 1;
  return 0;
}

// The weight the header gives `format`, and the position of the range
// that gave it (for ties).
struct Weight {
  double q = 0;
  std::size_t position = SIZE_MAX;
  int specificity = 0;
};

Weight weigh(std::string_view accept, Exposition format) {
  Weight best;
  for (std::size_t position = 0; !accept.empty(); ++position) {
    const auto comma = accept.find(',');
    const MediaRange range = parse_range(accept.substr(0, comma));
    accept = comma == std::string_view::npos ? "" : accept.substr(comma + 1);
    const int s = specificity(range, format);
    if (s == 0 || s < best.specificity) continue;
    // A more specific range overrides; an equally specific one (the same
    // type listed twice) counts when it weighs more.
    if (s > best.specificity || range.q > best.q) best = {range.q, position, s};
  }
  return best;
}

}  // namespace

Exposition choose_exposition(std::string_view accept) {
  Exposition chosen = Exposition::text;
  Weight best = weigh(accept, Exposition::text);
  for (const Exposition other : {Exposition::openmetrics, Exposition::protobuf}) {
    const Weight w = weigh(accept, other);
    if (w.q <= 0) continue;
    // Equal weights: the range listed first; one range for several ("*/*"):
    // the one chosen before (text first).
    if (w.q > best.q || (w.q == best.q && w.position < best.position)) {
      chosen = other;
      best = w;
    }
  }
  return chosen;
}

}  // namespace lse::server
