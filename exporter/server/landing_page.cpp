// Landing page rendering. Target names, models, URLs and failure details
// come from config and upstream servers, so nothing reaches the page
// unescaped; the page also ships a CSP that forbids scripts outright.
#include "server/landing_page.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <iterator>

#include "report/diagnosis.hpp"
#include "server/page_parts.hpp"
#include "server/page_verdict.hpp"

namespace lse::server {
namespace {

// Longer endpoints are shortened in the middle, the full one on hover.
constexpr std::size_t kEndpointChars = 40;

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

// The head, the one-line description and the links to every endpoint.
void append_header(std::string& out) {
  fmt::format_to(std::back_inserter(out),
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                 "<title>llm-stream-exporter</title><style>{}</style></head>\n<body>\n"
                 "<h1>llm-stream-exporter</h1>\n",
                 page_style());
  out +=
      "<p>Streams fixed prompts to LLM APIs, times every chunk and exports the pauses "
      "users feel as Prometheus histograms.</p>\n"
      // Relative links keep working behind a path-prefixing proxy.
      "<p><a href=\"metrics\">/metrics</a> &middot; <a href=\"api/v1/probes\">/api/v1/probes</a>"
      " &middot; <a href=\"config\">/config</a> &middot; <a href=\"-/healthy\">/-/healthy</a>"
      " &middot; <a href=\"-/ready\">/-/ready</a></p>\n";
}

// The name opens the last probe's page; without one, the target's rows.
std::string target_link(const TargetStatus& t, const probe::ProbeResult* last) {
  if (last != nullptr && !last->id.empty())
    return fmt::format("<a class=\"name\" href=\"probe?id={}\" title=\"the last probe\">{}</a>",
                       html_escape(query_encode(last->id)), html_escape(t.name));
  return fmt::format(
      "<a class=\"name\" href=\"api/v1/probes?target={}\" title=\"its rows (JSON)\">{}</a>",
      html_escape(query_encode(t.name)), html_escape(t.name));
}

// "probe now: short · long": one probe of the target with that prompt now,
// its debug timeline (GET /probe?target=&prompt=&debug=true).
std::string probe_now_links(const TargetStatus& t) {
  if (t.prompts.empty()) return "";
  std::string links;
  for (const auto& p : t.prompts) {
    const std::string href =
        "probe?target=" + query_encode(t.name) + "&prompt=" + query_encode(p) + "&debug=true";
    links += fmt::format(
        "{}<a class=\"probe-now\" href=\"{}\" title=\"run one probe of {} "
        "with {} now and show its timeline\">{}</a>",
        links.empty() ? "" : " &middot; ", html_escape(href), html_escape(t.name), html_escape(p),
        html_escape(p));
  }
  return "<div class=\"sub\">probe now: " + links + "</div>";
}

// Name, then model, endpoint (shortened), prompts and interval in small print.
void append_target_cell(std::string& out, const TargetStatus& t, const probe::ProbeResult* last) {
  std::string prompts;
  for (const auto& p : t.prompts) prompts += (prompts.empty() ? "" : ", ") + html_escape(p);
  fmt::format_to(std::back_inserter(out),
                 "<td>{}<div class=\"sub\">{}<code class=\"endpoint\" title=\"{}\">{}"
                 "</code>{} &middot; every {}</div>{}</td>",
                 target_link(t, last), html_escape(t.model), html_escape(t.url_redacted),
                 html_escape(shorten_middle(t.url_redacted, kEndpointChars)), prompts,
                 html_escape(format_interval(t.interval_seconds)), probe_now_links(t));
}

// Escaped text whose figures never break from their unit: "150.3&nbsp;ms".
std::string with_whole_figures(std::string_view text) {
  std::string out = html_escape(text);
  for (std::size_t at = out.find(' '); at != std::string::npos; at = out.find(' ', at + 1)) {
    const bool after_digit = at > 0 && std::isdigit(static_cast<unsigned char>(out[at - 1])) != 0;
    auto unit_at = [&](std::size_t u, std::string_view unit) {
      return out.compare(u, unit.size(), unit) == 0 &&
             (u + unit.size() >= out.size() ||
              std::isalpha(static_cast<unsigned char>(out[u + unit.size()])) == 0);
    };
    const bool before_unit = unit_at(at + 1, "ms") || unit_at(at + 1, "s");
    if (after_digit && before_unit) out.replace(at, 1, "&nbsp;");
  }
  return out;
}

// One prompt's diagnosis in three states, as the report and `run` mark them:
// "short: [x] transport [?] queue", "short: [ ] none", "short: [?] too few probes",
// followed by its notes ("the server sends 4 tokens per chunk: ...").
std::string prompt_line(const TargetStatus::PromptDiagnosis& d) {
  std::string marks;
  bool enough = true;
  for (const auto& v : d.verdicts) {
    enough = enough && v.enough_probes;
    if (v.answer == report::Answer::not_holds) continue;
    marks += fmt::format(" <span class=\"mark a-{}\" title=\"{}\">{}</span>&nbsp;{}",
                         v.holds() ? "holds" : "unknown", html_escape(v.why),
                         report::mark(v.answer), html_escape(report::title(v.shape)));
  }
  if (!enough) marks = " <span class=\"mark a-unknown\">[?]</span>&nbsp;too few probes yet";
  if (marks.empty()) marks = " <span class=\"mark\">[ ]</span>&nbsp;none";
  for (const auto& n : d.notes) marks += " <span class=\"note\">" + html_escape(n.text) + "</span>";
  return html_escape(d.prompt) + ":" + marks;
}

// The diagnosis per prompt in small print under the evidence; the plain
// lines when the values are not there.
std::string diagnosis_lines(const TargetStatus& t) {
  std::string out;
  for (const auto& d : t.prompt_diagnosis) out += (out.empty() ? "" : "<br>") + prompt_line(d);
  if (!out.empty()) return out;
  for (const auto& d : t.diagnosis) out += (out.empty() ? "" : "<br>") + html_escape(d);
  return out;
}

// Chunks that came in their predecessor's socket read: "0 of 29".
std::string together(const probe::ProbeResult& r) {
  if (r.chunks < 2) return "-";
  return fmt::format("{} of {}", r.coalesced_chunks, r.chunks - 1);
}

// The last probe's numbers; "no probe yet" spans them.
void append_number_cells(std::string& out, const probe::ProbeResult* r, double now_unix) {
  if (r == nullptr) {
    out += "<td class=\"muted\" colspan=\"6\">no probe yet</td>";
    return;
  }
  fmt::format_to(std::back_inserter(out),
                 "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                 "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
                 html_escape(or_dash(r->ttft)), html_escape(or_dash(r->gap_max)), r->stalls,
                 html_escape(together(*r)), html_escape(or_dash(r->gap_p95)),
                 html_escape(format_age(now_unix - (r->ts + r->duration))));
}

void append_target_row(std::string& out, const TargetStatus& t, const probe::ProbeResult* last,
                       double now_unix) {
  const PageVerdict v = target_verdict(t, last);
  // id: the anchor the dashboards link a target to (`/#target-<name>`).
  fmt::format_to(std::back_inserter(out),
                 "<tr id=\"target-{0}\" data-target=\"{0}\" data-verdict=\"{1}\"><td>{2}</td>",
                 html_escape(t.name), to_string(v.kind), verdict_badge(v));
  append_target_cell(out, t, last);
  const std::string lines = diagnosis_lines(t);
  fmt::format_to(std::back_inserter(out), "<td class=\"evidence\">{}{}</td>",
                 with_whole_figures(v.evidence),
                 lines.empty() ? "" : "<div class=\"sub\">" + lines + "</div>");
  append_number_cells(out, last, now_unix);
  out += "</tr>\n";
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
      "<table>\n<tr><th>verdict</th><th>target</th><th>evidence</th>"
      "<th title=\"time to first token of the last probe\">TTFT</th><th>max gap</th>"
      "<th>stalls</th><th title=\"chunks that came in the same read as the one before\">"
      "together</th><th>gap p95</th><th>age</th></tr>\n";
  for (const auto& t : targets) {
    auto it = last.find(t.name);
    append_target_row(out, t, it == last.end() ? nullptr : &it->second, now_unix);
  }
  out +=
      "</table>\n<p class=\"sub\">The verdict reads the last probe and the diagnosis of the recent "
      "ones (hover it for the diagnosis' words); a target whose probes stall is never ok. The "
      "numbers are the last probe's; a target's name opens that probe's page.</p>\n"
      "</body></html>\n";
  return out;
}

}  // namespace lse::server
