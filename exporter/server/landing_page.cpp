// Landing page and probe page rendering. Target names, models, URLs and
// failure details come from config and upstream servers, so nothing reaches
// a page unescaped; the pages also ship a CSP that forbids scripts outright.
#include "server/landing_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <iterator>

#include "report/diagnosis.hpp"
#include "report/format.hpp"
#include "util/wall_clock.hpp"

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
  std::string diagnosis;
  for (const auto& d : t.diagnosis) {
    if (!diagnosis.empty()) diagnosis += "<br>";
    diagnosis += html_escape(d);
  }
  fmt::format_to(std::back_inserter(out), "<td>{}</td>", diagnosis.empty() ? "-" : diagnosis);
}

// Chunks that came in their predecessor's socket read: "0 of 29", or
// "29 of 29 (all at once)" for an answer a hop held and released.
std::string together(const probe::ProbeResult& r) {
  if (r.chunks < 2) return "-";
  std::string s = fmt::format("{} of {}", r.coalesced_chunks, r.chunks - 1);
  if (report::is_all_at_once(r)) s += " (all at once)";
  return s;
}

// How the last probe went: outcome (failure detail on hover), the clock, its age.
void append_last_probe_cells(std::string& out, const probe::ProbeResult& r, double now_unix) {
  std::string what = "ok";
  if (!r.ok) {
    what = probe::to_string(r.reason);
    if (r.http_status > 0) what += fmt::format(" ({})", r.http_status);
  }
  what = html_escape(what);
  // The outcome links to the probe's own page when the probe has an id.
  if (!r.id.empty())
    what = fmt::format("<a href=\"probe?id={}\">{}</a>", html_escape(query_encode(r.id)), what);
  if (r.ok)
    fmt::format_to(std::back_inserter(out), "<td class=\"ok\">{}</td>", what);
  else
    fmt::format_to(std::back_inserter(out), "<td class=\"fail\" title=\"{}\">{}</td>",
                   html_escape(r.error_detail), what);
  fmt::format_to(std::back_inserter(out),
                 "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                 html_escape(or_dash(r.ttft)), html_escape(or_dash(r.gap_p95)),
                 html_escape(or_dash(r.gap_max)), r.stalls, html_escape(together(r)),
                 html_escape(format_age(now_unix - (r.ts + r.duration))));
}

// --- the page of one probe ----------------------------------------------------

constexpr const char* kProbeStyle =
    ".gap{fill:#4a7fb5}.stall{fill:#c0392b}.threshold{stroke:#c0392b;stroke-dasharray:4 3}"
    "svg text{font-size:11px;fill:#555}";

void append_probe_header(std::string& out, const probe::ProbeResult& r) {
  const std::string title = "probe " + (r.id.empty() ? std::string("(no id)") : r.id);
  fmt::format_to(std::back_inserter(out),
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<title>{0} - llm-stream-exporter</title><style>{1}{2}</style></head>\n<body>\n"
                 "<p><a href=\"./\">llm-stream-exporter</a> &middot; "
                 "<a href=\"api/v1/probes?id={3}\">raw row (JSON)</a></p>\n<h1>{0}</h1>\n",
                 html_escape(title), kStyle, kProbeStyle, html_escape(query_encode(r.id)));
}

// One `<tr><th>name</th><td>value</td></tr>`; `value` is escaped here.
void append_row(std::string& out, std::string_view name, std::string_view value,
                std::string_view td_class = {}) {
  fmt::format_to(std::back_inserter(out), "<tr><th>{}</th><td{}>{}</td></tr>\n", html_escape(name),
                 td_class.empty() ? std::string() : fmt::format(" class=\"{}\"", td_class),
                 html_escape(value));
}

// Who was probed, when, and how it ended.
void append_identity_and_outcome(std::string& out, const probe::ProbeResult& r) {
  out += "<h2>Probe</h2>\n<table>\n";
  append_row(out, "target", r.target);
  append_row(out, "model", r.model);
  append_row(out, "prompt", r.prompt);
  append_row(out, "host", r.host.empty() ? "-" : r.host);
  append_row(out, "started", wall_clock::format_utc(r.ts, "%Y-%m-%d %H:%M:%S UTC"));
  append_row(out, "outcome", r.ok ? "ok" : std::string(probe::to_string(r.reason)),
             r.ok ? "ok" : "fail");
  if (!r.error_detail.empty()) append_row(out, "detail", r.error_detail);
  append_row(out, "HTTP status", r.http_status > 0 ? std::to_string(r.http_status) : "-");
  append_row(out, "finish reason", r.finish_reason.empty() ? "-" : r.finish_reason);
  auto tokens = [](std::int64_t n) { return n >= 0 ? std::to_string(n) : std::string("-"); };
  append_row(out, "tokens (prompt / completion)",
             tokens(r.prompt_tokens) + " / " + tokens(r.completion_tokens));
  out += "</table>\n";
}

// DESIGN §2: TTFT, the gaps' summaries, tail and duration.
void append_clock(std::string& out, const probe::ProbeResult& r) {
  out += "<h2>Clock</h2>\n<table>\n";
  append_row(out, "time to first token", or_dash(r.ttft));
  if (r.first_reasoning) append_row(out, "first reasoning", or_dash(r.first_reasoning));
  append_row(out, "content chunks", std::to_string(r.chunks));
  append_row(out, "gap p50 / p95 / max",
             or_dash(r.gap_p50) + " / " + or_dash(r.gap_p95) + " / " + or_dash(r.gap_max));
  append_row(out, "stalls",
             fmt::format("{} (gaps of at least {}; {} in all)", r.stalls,
                         report::format_seconds(r.stall_threshold),
                         report::format_seconds(r.stall_seconds)));
  append_row(out, "tail", or_dash(r.tail));
  append_row(out, "duration", report::format_seconds(r.duration));
  if (r.output_tokens_per_second)
    append_row(out, "output tokens per second", fmt::format("{:.1f}", *r.output_tokens_per_second));
  out += "</table>\n";
}

// The phases of TTFT in order, each with its share of TTFT.
void append_phases(std::string& out, const probe::ProbeResult& r) {
  out += "<h2>Phases</h2>\n<table>\n<tr><th>phase</th><th>time</th><th>share of TTFT</th></tr>\n";
  for (std::size_t i = 0; i < probe::kAllPhases.size(); ++i) {
    const auto& p = r.phases[i];
    const std::string share =
        p && r.ttft && *r.ttft > 0 ? report::format_percent(*p / *r.ttft) : "-";
    fmt::format_to(std::back_inserter(out), "<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                   probe::to_string(probe::kAllPhases[i]), html_escape(or_dash(p)),
                   html_escape(share));
  }
  out += "</table>\n";
}

// Every gap in arrival order as one bar; bars at or above the stall
// threshold are stalls. The scale always shows the threshold line.
void append_gap_timeline(std::string& out, const probe::ProbeResult& r) {
  out += "<h2>Gap timeline</h2>\n";
  if (r.gaps.empty()) {
    out += "<p class=\"muted\">No gaps: fewer than two content chunks.</p>\n";
    return;
  }
  constexpr double kLeft = 60, kTop = 10, kWidth = 720, kHeight = 180;
  double top_value = r.stall_threshold;
  for (double g : r.gaps) top_value = std::max(top_value, g);
  top_value = std::max(top_value * 1.1, 1e-6);
  const double bar = kWidth / static_cast<double>(r.gaps.size());
  auto y_of = [&](double v) { return kTop + kHeight - v / top_value * kHeight; };
  fmt::format_to(std::back_inserter(out),
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                 "role=\"img\" aria-label=\"{2} gaps, {3} stalls\">\n"
                 "<text x=\"0\" y=\"{4:.1f}\">{5}</text><text x=\"0\" y=\"{6:.1f}\">0</text>\n",
                 kLeft + kWidth + 10, kTop + kHeight + 30, r.gaps.size(), r.stalls, kTop + 10,
                 html_escape(report::format_seconds(top_value)), kTop + kHeight);
  for (std::size_t i = 0; i < r.gaps.size(); ++i) {
    const double g = r.gaps[i];
    const bool stall = g >= r.stall_threshold;
    fmt::format_to(std::back_inserter(out),
                   "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" "
                   "height=\"{:.2f}\"><title>gap {}: {}{}</title></rect>\n",
                   stall ? "stall" : "gap", kLeft + bar * static_cast<double>(i), y_of(g),
                   std::max(bar * 0.8, 0.5), kTop + kHeight - y_of(g), i + 1,
                   html_escape(report::format_seconds(g)), stall ? " (stall)" : "");
  }
  const double yt = y_of(r.stall_threshold);
  fmt::format_to(std::back_inserter(out),
                 "<line class=\"threshold\" x1=\"{0}\" x2=\"{1}\" y1=\"{2:.2f}\" y2=\"{2:.2f}\"/>"
                 "<text x=\"{0}\" y=\"{3:.1f}\">stall threshold {4}</text>\n</svg>\n",
                 kLeft, kLeft + kWidth, yt, kTop + kHeight + 20,
                 html_escape(report::format_seconds(r.stall_threshold)));
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
      "<th>interval</th><th>diagnosis</th><th>last probe</th><th>TTFT</th><th>gap p95</th>"
      "<th>max gap</th><th>stalls</th><th>together</th><th>age</th></tr>\n";
  for (const auto& t : targets) {
    append_target_cells(out, t);
    auto it = last.find(t.name);
    if (it == last.end())
      out += "<td class=\"muted\" colspan=\"7\">no probe yet</td></tr>\n";
    else
      append_last_probe_cells(out, it->second, now_unix);
  }
  out += "</table>\n</body></html>\n";
  return out;
}

std::string render_probe_page(const probe::ProbeResult& probe) {
  std::string out;
  append_probe_header(out, probe);
  append_identity_and_outcome(out, probe);
  append_clock(out, probe);
  append_phases(out, probe);
  append_gap_timeline(out, probe);
  out += "</body></html>\n";
  return out;
}

}  // namespace lse::server
