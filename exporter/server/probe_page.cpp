// Probe page rendering (see probe_page.hpp). Target names, models and failure
// details come from config and upstream servers, so everything is escaped.
#include "server/probe_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <vector>

#include "probe/timeline.hpp"
#include "report/diagnosis.hpp"
#include "report/format.hpp"
#include "report/html.hpp"
#include "server/page_parts.hpp"
#include "server/page_verdict.hpp"
#include "util/wall_clock.hpp"

namespace lse::server {
namespace {

using report::html_escape;
using Out = std::back_insert_iterator<std::string>;

// Chart geometry (SVG user units; the charts scale to the page width).
constexpr double kWidth = 960, kLeft = 64, kRight = 16, kPlot = kWidth - kLeft - kRight;
// Bins of a summarised chart.
constexpr std::size_t kGapBins = 500, kTimeBins = 600;
// Stall bands drawn on the arrivals chart at most; the count says the rest.
constexpr std::size_t kMaxStallBands = 300;
// A gap this short is a chunk that came in its predecessor's read (DESIGN §2: 0 ms).
constexpr double kTogetherGap = 1e-6;

constexpr const char* kProbeStyle =
    ".gap{fill:#4a7fb5}.stall{fill:#c0392b}.together{fill:#e67e22}.wait{fill:#c9d6f5}"
    ".band{fill:#c0392b;opacity:.3}.ticks{stroke:#4a7fb5;stroke-width:1}"
    ".ticks.together{stroke:#e67e22;stroke-width:1.5;fill:none}.grid{stroke:#ddd}"
    ".threshold{stroke:#c0392b;stroke-dasharray:4 3}svg{width:100%;max-width:960px;height:auto;"
    "display:block;background:#fafafa}svg text{font-size:11px;fill:#555}"
    ".legend i{display:inline-block;width:12px;height:9px;margin:0 4px 0 10px}";

bool together(double gap) { return gap < kTogetherGap; }

// A "nice" tick step (1, 2 or 5 x 10^k) giving about `target` ticks over `range`.
double nice_step(double range, int target) {
  if (range <= 0) return 1;
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

std::string tick_label(double seconds, double range) {
  if (range < 2.0) return fmt::format("{:g} ms", std::round(seconds * 1e4) / 10);
  return fmt::format("{:g} s", std::round(seconds * 1e3) / 1e3);
}

void append_head(std::string& out, const probe::ProbeResult& r) {
  const std::string title = "probe " + (r.id.empty() ? std::string("(no id)") : r.id);
  fmt::format_to(std::back_inserter(out),
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                 "<title>{0} - llm-stream-exporter</title><style>{1}{2}</style></head>\n<body>\n"
                 "<p><a href=\"./\">llm-stream-exporter</a> &middot; "
                 "<a href=\"api/v1/probes?id={3}\">the full row (JSON)</a></p>\n<h1>{0}</h1>\n",
                 html_escape(title), page_style(), kProbeStyle, html_escape(query_encode(r.id)));
}

// The verdict and its evidence, before anything else.
void append_banner(std::string& out, const probe::ProbeResult& r) {
  const PageVerdict v = probe_verdict(r);
  fmt::format_to(std::back_inserter(out),
                 "<p class=\"banner\" data-verdict=\"{}\">{} {} &middot; {} &middot; {}</p>\n",
                 to_string(v.kind), verdict_badge(v), html_escape(v.evidence),
                 html_escape(r.target), html_escape(r.prompt));
}

struct TimeScale {
  double tmax = 0.001;
  double x(double t) const { return kLeft + t / tmax * kPlot; }
};

void time_axis(Out out, const TimeScale& sc, double y_top, double y_bottom) {
  const double step = nice_step(sc.tmax, 8);
  for (double t = 0; t <= sc.tmax * 1.0001; t += step)
    fmt::format_to(out,
                   "<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.0f}\" "
                   "y2=\"{2:.0f}\"/><text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.0f}\" "
                   "text-anchor=\"middle\">{4}</text>",
                   sc.x(t), y_top, y_bottom, y_bottom + 13, tick_label(t, sc.tmax));
}

// Stall bands: the span of each stall on the time axis, at most kMaxStallBands.
void stall_bands(Out out, const probe::ProbeResult& r, const std::vector<double>& at,
                 const TimeScale& sc) {
  std::size_t drawn = 0;
  for (std::size_t k = 1; k < at.size() && drawn < kMaxStallBands; ++k) {
    if (r.gaps[k - 1] < r.stall_threshold) continue;
    ++drawn;
    fmt::format_to(out,
                   "<rect class=\"band\" x=\"{:.1f}\" y=\"14\" width=\"{:.1f}\" height=\"40\">"
                   "<title>stall before chunk {}: {}</title></rect>",
                   sc.x(at[k - 1]), std::max(1.0, sc.x(at[k]) - sc.x(at[k - 1])), k + 1,
                   html_escape(report::format_seconds(r.gaps[k - 1])));
  }
}

// One tick per chunk (or per occupied time bin when summarised); a chunk that
// came in its predecessor's read is a taller orange tick.
void chunk_ticks(Out out, const probe::ProbeResult& r, const std::vector<double>& at,
                 const TimeScale& sc, bool binned) {
  std::string plain, held;
  std::vector<std::uint8_t> bins(binned ? kTimeBins : 0, 0);  // 1 plain, 2 together
  for (std::size_t k = 0; k < at.size(); ++k) {
    const bool is_held = k > 0 && together(r.gaps[k - 1]);
    if (binned) {
      auto b = static_cast<std::size_t>(at[k] / sc.tmax * static_cast<double>(kTimeBins));
      auto& bin = bins[std::min(b, kTimeBins - 1)];
      bin = std::max<std::uint8_t>(bin, is_held ? 2 : 1);
      continue;
    }
    fmt::format_to(std::back_inserter(is_held ? held : plain), "M{:.1f} {}v{}", sc.x(at[k]),
                   is_held ? 18 : 24, is_held ? 32 : 26);
  }
  for (std::size_t b = 0; b < bins.size(); ++b) {
    if (bins[b] == 0) continue;
    const double x = kLeft + (static_cast<double>(b) + 0.5) * kPlot / kTimeBins;
    fmt::format_to(std::back_inserter(bins[b] == 2 ? held : plain), "M{:.1f} {}v{}", x,
                   bins[b] == 2 ? 18 : 24, bins[b] == 2 ? 32 : 26);
  }
  fmt::format_to(out, "<path class=\"ticks\" d=\"{}\"/><path class=\"ticks together\" d=\"{}\"/>",
                 plain, held);
}

void append_arrivals(std::string& out, const probe::ProbeResult& r, bool binned) {
  const auto at = probe::arrival_offsets(r);
  if (at.empty()) return;
  TimeScale sc;
  sc.tmax = std::max({r.duration, at.back(), 0.001}) * 1.02;
  Out o = std::back_inserter(out);
  out += "<h2>Chunk arrivals</h2>\n";
  fmt::format_to(o,
                 "<div class=\"legend sub\"><i style=\"background:#c9d6f5\"></i>waiting for the "
                 "first token<i style=\"background:#4a7fb5\"></i>chunk<i style=\"background:"
                 "#e67e22\"></i>came with the one before (0 ms)<i style=\"background:#c0392b;"
                 "opacity:.4\"></i>stall{}</div>\n",
                 binned ? fmt::format(" &middot; summarised in {} time bins", kTimeBins) : "");
  fmt::format_to(o,
                 "<svg class=\"arrivals\" viewBox=\"0 0 {:.0f} 80\" role=\"img\" "
                 "aria-label=\"{} chunks on a time axis\">",
                 kWidth, at.size());
  time_axis(o, sc, 10, 60);
  fmt::format_to(o, "<rect class=\"wait\" x=\"{:.1f}\" y=\"28\" width=\"{:.1f}\" height=\"12\"/>",
                 sc.x(0), std::max(0.5, sc.x(at.front()) - sc.x(0)));
  stall_bands(o, r, at, sc);
  chunk_ticks(o, r, at, sc, binned);
  fmt::format_to(o, "<text x=\"4\" y=\"38\">time</text></svg>\n");
}

// The gaps in chunk order, as bars: one per gap, or one per bin of
// consecutive gaps (its largest gap) when summarised.
struct GapBar {
  std::size_t first = 0, last = 0;  // 1-based gap numbers
  double top = 0;                   // the largest gap of the bar
  std::size_t stalls = 0, held = 0;
};

std::vector<GapBar> gap_bars(const probe::ProbeResult& r, bool binned) {
  const std::size_t n = r.gaps.size();
  const std::size_t per_bar = binned ? (n + kGapBins - 1) / kGapBins : 1;
  std::vector<GapBar> bars;
  bars.reserve(n / per_bar + 1);
  for (std::size_t i = 0; i < n; i += per_bar) {
    GapBar b{i + 1, std::min(n, i + per_bar), 0, 0, 0};
    for (std::size_t k = i; k < b.last; ++k) {
      b.top = std::max(b.top, r.gaps[k]);
      b.stalls += r.gaps[k] >= r.stall_threshold ? 1 : 0;
      b.held += together(r.gaps[k]) ? 1 : 0;
    }
    bars.push_back(b);
  }
  return bars;
}

std::string bar_title(const GapBar& b) {
  if (b.first == b.last)
    return fmt::format("gap {}: {}{}", b.first, report::format_seconds(b.top),
                       b.stalls ? " (stall)"
                       : b.held ? " (came together)"
                                : "");
  return fmt::format("gaps {}-{}: max {}, {} stalls, {} came together", b.first, b.last,
                     report::format_seconds(b.top), b.stalls, b.held);
}

// Bars at or above the stall threshold are stalls; 0-ms gaps are drawn as a
// short orange bar so they show (and can be counted) beside the others.
void gap_bar_rects(Out out, const std::vector<GapBar>& bars, double top_value) {
  constexpr double kTop = 10, kHeight = 180, kHeldHeight = 4;
  const double w = kPlot / static_cast<double>(bars.size());
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const GapBar& b = bars[i];
    const bool held_only = b.held == b.last - b.first + 1;
    const char* cls = b.stalls ? "stall" : held_only ? "together" : "gap";
    const double h = held_only ? kHeldHeight : std::max(1.0, b.top / top_value * kHeight);
    fmt::format_to(out,
                   "<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.2f}\" "
                   "height=\"{:.1f}\"><title>{}</title></rect>\n",
                   cls, kLeft + w * static_cast<double>(i), kTop + kHeight - h,
                   std::max(w * 0.8, 0.5), h, html_escape(bar_title(b)));
  }
}

void append_gap_chart(std::string& out, const probe::ProbeResult& r, bool binned) {
  constexpr double kTop = 10, kHeight = 180;
  const std::size_t held = static_cast<std::size_t>(
      std::count_if(r.gaps.begin(), r.gaps.end(), [](double g) { return together(g); }));
  const std::size_t stalls = static_cast<std::size_t>(std::count_if(
      r.gaps.begin(), r.gaps.end(), [&](double g) { return g >= r.stall_threshold; }));
  fmt::format_to(std::back_inserter(out),
                 "<h2>Gaps in chunk order</h2>\n<p class=\"sub\" data-gaps=\"{0}\" "
                 "data-together=\"{1}\" data-stalls=\"{2}\">{0} gaps: <b>{1}</b> of 0 ms (the "
                 "chunk came in the same read as the one before; orange), <b>{2}</b> at or above "
                 "the stall threshold {3} (red){4}.</p>\n",
                 r.gaps.size(), held, stalls,
                 html_escape(report::format_seconds(r.stall_threshold)),
                 binned ? fmt::format("; summarised: each bar is the largest gap of {} in a row",
                                      (r.gaps.size() + kGapBins - 1) / kGapBins)
                        : "");
  double top_value = r.stall_threshold;
  for (double g : r.gaps) top_value = std::max(top_value, g);
  top_value = std::max(top_value * 1.1, 1e-6);
  Out o = std::back_inserter(out);
  fmt::format_to(o,
                 "<svg class=\"gaps\" viewBox=\"0 0 {0:.0f} {1:.0f}\" role=\"img\" "
                 "aria-label=\"{2} gaps, {3} stalls, {4} of 0 ms\">\n<text x=\"{5:.0f}\" "
                 "y=\"{6:.0f}\" text-anchor=\"end\">{7}</text><text x=\"{5:.0f}\" y=\"{8:.0f}\" "
                 "text-anchor=\"end\">0</text>\n",
                 kWidth, kTop + kHeight + 30, r.gaps.size(), stalls, held, kLeft - 6, kTop + 10,
                 html_escape(report::format_seconds(top_value)), kTop + kHeight);
  gap_bar_rects(o, gap_bars(r, binned), top_value);
  const double yt = kTop + kHeight - r.stall_threshold / top_value * kHeight;
  fmt::format_to(o,
                 "<line class=\"threshold\" x1=\"{0:.0f}\" x2=\"{1:.0f}\" y1=\"{2:.2f}\" "
                 "y2=\"{2:.2f}\"/><text x=\"{0:.0f}\" y=\"{3:.0f}\">stall threshold {4} "
                 "&middot; chunk 2 to {5} &rarr;</text>\n</svg>\n",
                 kLeft, kLeft + kPlot, yt, kTop + kHeight + 20,
                 html_escape(report::format_seconds(r.stall_threshold)), r.gaps.size() + 1);
}

void append_timelines(std::string& out, const probe::ProbeResult& r, std::size_t detailed_gaps) {
  if (r.gaps.empty()) {
    out += "<h2>Gaps</h2>\n<p class=\"muted\">No gaps: fewer than two content chunks.</p>\n";
    return;
  }
  const bool binned = r.gaps.size() > detailed_gaps;
  if (binned)
    fmt::format_to(std::back_inserter(out),
                   "<p class=\"sub\" data-summarised=\"1\">{} gaps: the charts are summarised "
                   "past {}; every gap is in <a href=\"api/v1/probes?id={}\">the full row "
                   "(JSON)</a>.</p>\n",
                   r.gaps.size(), detailed_gaps, html_escape(query_encode(r.id)));
  append_arrivals(out, r, binned);
  append_gap_chart(out, r, binned);
}

// The diagnosis of the probe's target+prompt over its recent probes, every
// shape in three states, when the target is still configured.
void append_diagnosis(std::string& out, const probe::ProbeResult& r,
                      const std::vector<TargetStatus>& targets) {
  const TargetStatus::PromptDiagnosis* d = nullptr;
  for (const auto& t : targets)
    if (t.name == r.target)
      for (const auto& p : t.prompt_diagnosis)
        if (p.prompt == r.prompt) d = &p;
  if (d == nullptr || d->verdicts.empty()) return;
  fmt::format_to(std::back_inserter(out),
                 "<h2>Diagnosis of {} &middot; {} <span class=\"sub\">(its {} recent successful "
                 "probes)</span></h2>\n<table class=\"diagnosis\">\n",
                 html_escape(r.target), html_escape(r.prompt), d->window.probes);
  for (const auto& v : d->verdicts)
    fmt::format_to(std::back_inserter(out),
                   "<tr data-shape=\"{}\" data-answer=\"{}\"><td class=\"mark{}\">{}</td>"
                   "<th>{}</th><td>{}</td></tr>\n",
                   report::to_string(v.shape), report::to_string(v.answer),
                   v.holds()         ? " a-holds"
                   : v.cannot_tell() ? " a-unknown"
                                     : "",
                   report::mark(v.answer), html_escape(report::title(v.shape)), html_escape(v.why));
  out += "</table>\n";
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
  append_row(out, "came with the one before",
             fmt::format("{} of {}", r.coalesced_chunks, r.chunks > 0 ? r.chunks - 1 : 0));
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
    fmt::format_to(std::back_inserter(out),
                   "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                   probe::to_string(probe::kAllPhases[i]), html_escape(or_dash(p)),
                   html_escape(share));
  }
  out += "</table>\n";
}

}  // namespace

std::string render_probe_page(const probe::ProbeResult& probe,
                              const std::vector<TargetStatus>& targets, std::size_t detailed_gaps) {
  std::string out;
  append_head(out, probe);
  append_banner(out, probe);
  append_timelines(out, probe, detailed_gaps);
  append_diagnosis(out, probe, targets);
  append_identity_and_outcome(out, probe);
  append_clock(out, probe);
  append_phases(out, probe);
  out += "</body></html>\n";
  return out;
}

}  // namespace lse::server
