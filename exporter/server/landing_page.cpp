// Landing page rendering. Target names, models, URLs and failure details come
// from config and upstream servers, so nothing reaches the page unescaped;
// the page also ships a CSP that forbids scripts outright.
#include "server/landing_page.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <iterator>

#include "report/format.hpp"

namespace lse::server {
namespace {

std::string format_age(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  if (seconds < 0) seconds = 0;
  if (seconds < 120) return fmt::format("{:.0f}s ago", seconds);
  if (seconds < 2 * 3600) return fmt::format("{:.0f}m ago", seconds / 60);
  if (seconds < 2 * 86400) return fmt::format("{:.0f}h ago", seconds / 3600);
  return fmt::format("{:.0f}d ago", seconds / 86400);
}

std::string format_interval(double seconds) {
  if (seconds >= 60 && std::fmod(seconds, 60) == 0) return fmt::format("{:.0f}m", seconds / 60);
  return fmt::format("{:g}s", seconds);
}

std::string or_dash(const std::optional<double>& seconds) {
  return seconds ? report::format_seconds(*seconds) : "-";
}

// A query value: everything but RFC 3986 unreserved characters percent-encoded.
std::string query_encode(std::string_view value) {
  std::string q;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      q += static_cast<char>(c);
    else
      q += fmt::format("%{:02X}", c);
  }
  return q;
}

constexpr const char* kStyle =
    "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.3em .6em;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}"
    ".ok{color:#070}.fail{color:#b00}.muted{color:#777}code{font-size:90%}";

// The head, the one-line description and the links to every endpoint.
void append_header(std::string& out) {
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>llm-stream-exporter</title><style>";
  out += kStyle;
  out +=
      "</style></head>\n<body>\n<h1>llm-stream-exporter</h1>\n"
      "<p>Streams fixed prompts to LLM APIs, times every chunk and exports the pauses "
      "users feel as Prometheus histograms.</p>\n"
      // Relative links keep working behind a path-prefixing proxy.
      "<p><a href=\"metrics\">/metrics</a> &middot; <a href=\"api/v1/probes\">/api/v1/probes</a>"
      " &middot; <a href=\"config\">/config</a> &middot; <a href=\"-/healthy\">/-/healthy</a>"
      " &middot; <a href=\"-/ready\">/-/ready</a></p>\n";
}

// What is configured: name (linking to its rows), model, endpoint, prompts, interval.
void append_target_cells(std::string& out, const TargetStatus& t) {
  std::string prompts;
  for (const auto& p : t.prompts) {
    if (!prompts.empty()) prompts += ", ";
    prompts += html_escape(p);
  }
  fmt::format_to(std::back_inserter(out),
                 "<tr><td><a href=\"api/v1/probes?target={}\">{}</a></td><td>{}</td>"
                 "<td><code>{}</code></td><td>{}</td><td>{}</td>",
                 html_escape(query_encode(t.name)), html_escape(t.name), html_escape(t.model),
                 html_escape(t.url_redacted), prompts,
                 html_escape(format_interval(t.interval_seconds)));
}

// How the last probe went: outcome (failure detail on hover), the clock, its age.
void append_last_probe_cells(std::string& out, const probe::ProbeResult& r, double now_unix) {
  if (r.ok) {
    out += "<td class=\"ok\">ok</td>";
  } else {
    std::string what(probe::to_string(r.reason));
    if (r.http_status > 0) what += fmt::format(" ({})", r.http_status);
    fmt::format_to(std::back_inserter(out), "<td class=\"fail\" title=\"{}\">{}</td>",
                   html_escape(r.error_detail), html_escape(what));
  }
  fmt::format_to(std::back_inserter(out),
                 "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                 html_escape(or_dash(r.ttft)), html_escape(or_dash(r.gap_p95)),
                 html_escape(or_dash(r.gap_max)), r.stalls,
                 html_escape(format_age(now_unix - (r.ts + r.duration))));
}

}  // namespace

std::string render_landing_page(const std::vector<TargetStatus>& targets,
                                const std::map<std::string, probe::ProbeResult>& last,
                                double now_unix) {
  std::string out;
  append_header(out);
  if (targets.empty()) {
    out += "<p class=\"muted\">No targets configured.</p>\n</body></html>\n";
    return out;
  }
  out +=
      "<table>\n<tr><th>target</th><th>model</th><th>endpoint</th><th>prompts</th>"
      "<th>interval</th><th>last probe</th><th>TTFT</th><th>gap p95</th><th>max gap</th>"
      "<th>stalls</th><th>age</th></tr>\n";
  for (const auto& t : targets) {
    append_target_cells(out, t);
    auto it = last.find(t.name);
    if (it == last.end())
      out += "<td class=\"muted\" colspan=\"6\">no probe yet</td></tr>\n";
    else
      append_last_probe_cells(out, it->second, now_unix);
  }
  out += "</table>\n</body></html>\n";
  return out;
}

}  // namespace lse::server
