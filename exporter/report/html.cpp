// HTML report rendering: the summary view in, one HTML string out. It lays
// out the figures and strings summarize() made; what it derives itself is
// chart geometry only. Charts are plain SVG drawn here (no chart library,
// nothing fetched), so the file opens the same offline, in a mail attachment
// or in a CI artifact.
#include "report/html.hpp"

#include <utility>
#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include "probe/timeline.hpp"
#include "report/format.hpp"
#include "util/wall_clock.hpp"

namespace lse::report {
namespace {

constexpr double kWidth = 960;
constexpr double kLabelWidth = 190;
constexpr double kRightPad = 24;
constexpr double kPlotWidth = kWidth - kLabelWidth - kRightPad;

using Out = std::back_insert_iterator<std::string>;

// A "nice" tick step (1, 2 or 5 × 10^k) giving about `target` ticks over `range`.
double nice_step(double range, int target) {
  if (range <= 0) return 1;
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10;
  return step * mag;
}

std::string axis_label(double seconds, double axis_max) {
  if (axis_max < 2.0) return fmt::format("{:g} ms", std::round(seconds * 1e4) / 10);
  return fmt::format("{:g} s", std::round(seconds * 1e3) / 1e3);
}

// Vertical grid lines and labels of a time axis from 0 to tmax at plot
// coordinates [x0, x0 + w], labels at y_label, lines from y0 to y1.
void time_axis(Out out, double tmax, double x0, double w, double y_label, double y0, double y1) {
  const double step = nice_step(tmax, 8);
  for (double t = 0; t <= tmax * 1.0001; t += step) {
    const double x = x0 + t / tmax * w;
    fmt::format_to(out,
                   R"~(<line class="grid" x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}"/>)~",
                   x, y0, y1);
    fmt::format_to(out,
                   R"~(<text class="tick" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)~",
                   x, y_label, axis_label(t, tmax));
  }
}

std::string run_tooltip(std::size_t i, const probe::ProbeResult& r) {
  std::string s = fmt::format("run {}: ", i);
  if (!r.ok)
    s += fmt::format("failed ({}{}) ", probe::to_string(r.reason),
                     r.error_detail.empty() ? "" : ": " + r.error_detail);
  if (r.ttft) s += fmt::format("TTFT {}, ", format_seconds(*r.ttft));
  s += fmt::format("{} chunks, {} stall{}", r.chunks, r.stalls, r.stalls == 1 ? "" : "s");
  if (r.gap_p95) s += fmt::format(", gap p95 {}", format_seconds(*r.gap_p95));
  if (r.gap_max) s += fmt::format(", max gap {}", format_seconds(*r.gap_max));
  if (r.tail) s += fmt::format(", tail {}", format_seconds(*r.tail));
  s += fmt::format(", duration {}", format_seconds(r.duration));
  return html_escape(s);
}

// The time axis of a timeline: run start (0) to the longest run, in plot x.
struct TimelineScale {
  double tmax = 0.001;
  double x(double t) const { return kLabelWidth + t / tmax * kPlotWidth; }
};

// The waiting bar, the stalls and the chunk ticks of one run.
void timeline_chunks(Out out, const probe::ProbeResult& r, const TimelineScale& sc,
                     double stall_threshold) {
  const auto at = probe::arrival_offsets(r);
  if (at.empty()) return;
  fmt::format_to(out, R"~(<rect class="wait" x="{:.1f}" y="4" width="{:.1f}" height="10"/>)~",
                 sc.x(0), std::max(0.5, sc.x(at.front()) - sc.x(0)));
  for (std::size_t k = 1; k < at.size(); ++k) {
    if (r.gaps[k - 1] < stall_threshold) continue;
    fmt::format_to(
        out,
        R"~(<rect class="stall" x="{:.1f}" y="2" width="{:.1f}" height="14"><title>stall {}</title></rect>)~",
        sc.x(at[k - 1]), std::max(1.0, sc.x(at[k]) - sc.x(at[k - 1])),
        format_seconds(r.gaps[k - 1]));
  }
  std::string d;
  d.reserve(at.size() * 14);
  for (double t : at) fmt::format_to(std::back_inserter(d), "M{:.1f} 3v12", sc.x(t));
  fmt::format_to(out, R"~(<path class="ticks" d="{}"/>)~", d);
}

// The end of a run: a bar when it finished, a cross when it failed.
void timeline_end(Out out, const probe::ProbeResult& r, const TimelineScale& sc) {
  if (r.ok) {
    fmt::format_to(out, R"~(<line class="end" x1="{0:.1f}" x2="{0:.1f}" y1="5" y2="13"/>)~",
                   sc.x(r.duration));
    return;
  }
  fmt::format_to(
      out,
      R"~(<path class="fail" d="M{0:.1f} 5l8 8M{0:.1f} 13l8 -8" transform="translate(-4 0)"/>)~",
      sc.x(r.duration));
}

// One row of the timeline: label, life line, chunks, end.
void timeline_run(Out out, const probe::ProbeResult& r, std::size_t i, std::size_t series_index,
                  double y, const TimelineScale& sc, double stall_threshold) {
  constexpr double kRow = 18;
  fmt::format_to(
      out,
      R"~(<g class="run {}" data-run="{}" data-series="{}" data-ok="{}" transform="translate(0 {:.1f})">)~",
      r.ok ? "ok" : "failed", i + 1, series_index, r.ok ? 1 : 0, y);
  fmt::format_to(out, "<title>{}</title>", run_tooltip(i + 1, r));
  fmt::format_to(out, R"~(<rect class="hit" x="0" y="0" width="{:.0f}" height="{:.0f}"/>)~", kWidth,
                 kRow);
  const std::string label =
      r.ok ? fmt::format("#{}  TTFT {}", i + 1, r.ttft ? format_seconds(*r.ttft) : "-")
           : fmt::format("#{}  {}", i + 1, probe::to_string(r.reason));
  fmt::format_to(out, R"~(<text class="lbl{}" x="{:.0f}" y="13" text-anchor="end">{}</text>)~",
                 r.ok ? "" : " bad", kLabelWidth - 8, html_escape(label));
  fmt::format_to(out, R"~(<line class="life" x1="{:.1f}" x2="{:.1f}" y1="9" y2="9"/>)~", sc.x(0),
                 sc.x(r.duration));
  timeline_chunks(out, r, sc, stall_threshold);
  timeline_end(out, r, sc);
  fmt::format_to(out, "</g>");
}

// What the sections of one comparison share, so A and B read on the same
// scales: the timeline's time axis, the histogram's bins and count axis, the
// strip plots' axes.
struct SharedScale {
  double timeline_tmax = 0.001;
  std::size_t hist_shown = 1, hist_max_count = 1;
  double ttft_max = 0.001, duration_max = 0.001;
};

void timeline(Out out, const SeriesSummary& s, std::size_t series_index,
              const SharedScale& shared) {
  constexpr double kRow = 18, kTop = 22, kBottom = 8;
  TimelineScale sc;
  sc.tmax = shared.timeline_tmax;
  const double height =
      kTop + kRow * static_cast<double>(std::max<std::size_t>(s.probes.size(), 1)) + kBottom;
  fmt::format_to(
      out,
      R"~(<svg class="chart timeline" viewBox="0 0 {:.0f} {:.0f}" role="img" aria-label="timeline of every run">)~",
      kWidth, height);
  time_axis(out, sc.tmax, kLabelWidth, kPlotWidth, 14, kTop - 4, height - kBottom);
  for (std::size_t i = 0; i < s.probes.size(); ++i)
    timeline_run(out, s.probes[i], i, series_index, kTop + kRow * static_cast<double>(i), sc,
                 s.stall_threshold);
  fmt::format_to(out, "</svg>");
}

// The gaps of the successful runs, binned like the gap histogram metric:
// bins (edge[i-1], edge[i]] with edge[-1] = 0 (inclusive), the last one +Inf.
struct GapBins {
  std::vector<double> edges;
  std::vector<std::size_t> counts;
  std::size_t gaps = 0;
  std::size_t threshold_bin = 0;  // the bin the stall threshold falls in
  std::size_t shown = 0;          // bins drawn: up to the last non-empty one or the threshold, +1
  std::size_t max_count = 1;
};

GapBins bin_gaps(const SeriesSummary& s, const std::vector<double>& bucket_edges) {
  GapBins b;
  b.edges = bucket_edges;
  b.counts.assign(b.edges.size() + 1, 0);
  for (const auto& r : s.probes) {
    if (!r.ok) continue;
    for (double g : r.gaps) {
      const auto it = std::lower_bound(b.edges.begin(), b.edges.end(), g);
      ++b.counts[static_cast<std::size_t>(it - b.edges.begin())];
      ++b.gaps;
    }
  }
  b.threshold_bin = static_cast<std::size_t>(
      std::lower_bound(b.edges.begin(), b.edges.end(), s.stall_threshold) - b.edges.begin());
  std::size_t last = 0;
  for (std::size_t i = 0; i < b.counts.size(); ++i)
    if (b.counts[i]) last = i;
  b.shown = std::min(b.counts.size(), std::max(last, b.threshold_bin) + 2);
  b.max_count = std::max<std::size_t>(1, *std::max_element(b.counts.begin(), b.counts.end()));
  return b;
}

// Histogram plot geometry.
struct HistFrame {
  static constexpr double kH = 170, kTop = 14, kBottom = 34, kLeft = 52;
  double w = kWidth - kLeft - kRightPad, ph = kH - kTop - kBottom, bw = 1;
};

// Counts on a log scale: a bar of n gaps is log(1 + n) / log(1 + max) of
// the plot's height, so 16 stalls beside 400 small gaps are half as tall,
// not a 4-px sliver.
double count_height(std::size_t n, std::size_t max_count, double plot_height) {
  if (n == 0) return 0;
  return plot_height * std::log1p(static_cast<double>(n)) /
         std::log1p(static_cast<double>(std::max<std::size_t>(max_count, 1)));
}

void hist_axes(Out out, const HistFrame& f, std::size_t max_count) {
  const double bottom = HistFrame::kTop + f.ph;
  auto label = [&](std::size_t n) {
    const double y = bottom - count_height(n, max_count, f.ph);
    fmt::format_to(out,
                   R"~(<line class="grid" x1="{0:.0f}" x2="{1:.0f}" y1="{2:.1f}" y2="{2:.1f}"/>)~",
                   HistFrame::kLeft, HistFrame::kLeft + f.w, y);
    fmt::format_to(
        out, R"~(<text class="tick count" x="{:.0f}" y="{:.1f}" text-anchor="end">{}</text>)~",
        HistFrame::kLeft - 6, y + 4, n);
  };
  label(0);
  // Powers of ten below the top, unless crowding the top label.
  for (std::size_t n = 1; n * 3 <= max_count; n *= 10) label(n);
  label(max_count);
  fmt::format_to(
      out,
      R"~(<text class="tick" x="10" y="{:.0f}" transform="rotate(-90 10 {:.0f})" text-anchor="middle">gaps (log scale)</text>)~",
      HistFrame::kTop + f.ph / 2, HistFrame::kTop + f.ph / 2);
}

void hist_bar(Out out, const HistFrame& f, const GapBins& b, std::size_t i, double thr) {
  const auto& edges = b.edges;
  const double lo = i == 0 ? 0 : edges[i - 1];
  const bool stall_bin = lo >= thr - 1e-12;
  const double hgt = count_height(b.counts[i], b.max_count, f.ph);
  const double bx = HistFrame::kLeft + f.bw * static_cast<double>(i);
  const std::string range =
      i < edges.size() ? fmt::format("{} – {}", format_seconds(lo), format_seconds(edges[i]))
                       : fmt::format("above {}", format_seconds(lo));
  fmt::format_to(
      out,
      R"~(<rect class="bar{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"><title>{}: {} gaps</title></rect>)~",
      stall_bin ? " stallbar" : "", bx + 1, HistFrame::kTop + f.ph - hgt, std::max(1.0, f.bw - 2),
      hgt, html_escape(range), b.counts[i]);
  const std::string edge = i < edges.size() ? axis_label(edges[i], 1.0) : "+Inf";
  if (b.shown <= 24 || i % 2 == 0)
    fmt::format_to(out,
                   R"~(<text class="tick" x="{:.1f}" y="{:.0f}" text-anchor="middle">≤{}</text>)~",
                   bx + f.bw / 2, HistFrame::kTop + f.ph + 14, html_escape(edge));
}

// The threshold sits on a bucket boundary by design; otherwise proportionally inside its bin.
void hist_threshold(Out out, const HistFrame& f, const GapBins& b, const SeriesSummary& s) {
  const double thr = s.stall_threshold;
  const std::size_t tb = b.threshold_bin;
  double tx = HistFrame::kLeft + f.bw * static_cast<double>(tb);
  if (tb < b.edges.size()) {
    const double lo = tb == 0 ? 0 : b.edges[tb - 1];
    const double frac = b.edges[tb] > lo ? (thr - lo) / (b.edges[tb] - lo) : 1;
    tx += f.bw * std::clamp(frac, 0.0, 1.0);
  }
  fmt::format_to(out,
                 R"~(<line class="thr" x1="{0:.1f}" x2="{0:.1f}" y1="{1:.0f}" y2="{2:.1f}"/>)~", tx,
                 HistFrame::kTop - 6, HistFrame::kTop + f.ph);
  const bool label_left = tx > HistFrame::kLeft + f.w * 0.75;
  fmt::format_to(
      out,
      R"~(<text class="thrlbl" x="{:.1f}" y="{:.0f}" text-anchor="{}">stall threshold {}</text>)~",
      label_left ? tx - 4 : tx + 4, HistFrame::kTop + 4, label_left ? "end" : "start",
      s.stall_threshold_text);
}

void gap_histogram(Out out, const SeriesSummary& s, const std::vector<double>& bucket_edges,
                   const SharedScale& shared) {
  GapBins b = bin_gaps(s, bucket_edges);
  b.shown = std::min(b.counts.size(), std::max(b.shown, shared.hist_shown));
  b.max_count = std::max(b.max_count, shared.hist_max_count);
  HistFrame f;
  f.bw = f.w / static_cast<double>(b.shown);
  fmt::format_to(
      out,
      R"~(<svg class="chart hist" viewBox="0 0 {:.0f} {:.0f}" role="img" aria-label="gap distribution">)~",
      kWidth, HistFrame::kH);
  hist_axes(out, f, b.max_count);
  for (std::size_t i = 0; i < b.shown; ++i) hist_bar(out, f, b, i, s.stall_threshold);
  hist_threshold(out, f, b, s);
  fmt::format_to(
      out,
      R"~(<text class="tick" x="{:.0f}" y="{:.0f}">{} gaps from {} successful runs (bins: gap histogram buckets)</text>)~",
      HistFrame::kLeft, HistFrame::kH - 4, b.gaps, s.ok);
  fmt::format_to(out, "</svg>");
}

// One dot per run on a time axis, p50 and p95 marked.
void strip_plot(Out out, const SeriesSummary& s, Field f, const char* name, double shared_max) {
  std::vector<double> v = field_values(s.probes, f);
  constexpr double kH = 92, kTop = 20, kLeft = 110;
  const double w = kWidth - kLeft - kRightPad;
  double vmax = shared_max;
  for (double x : v) vmax = std::max(vmax, x * 1.05);
  vmax = std::max(vmax, 0.001);
  fmt::format_to(
      out,
      R"~(<svg class="chart strip" viewBox="0 0 {:.0f} {:.0f}" role="img" aria-label="{} distribution">)~",
      kWidth, kH, name);
  fmt::format_to(out, R"~(<text class="name" x="{:.0f}" y="{:.0f}" text-anchor="end">{}</text>)~",
                 kLeft - 10, kTop + 26, name);
  time_axis(out, vmax, kLeft, w, kH - 6, kTop - 8, kH - 20);
  auto x = [&](double t) { return kLeft + t / vmax * w; };
  for (std::size_t i = 0; i < v.size(); ++i)
    fmt::format_to(
        out, R"~(<circle class="dot" cx="{:.1f}" cy="{:.1f}" r="4"><title>{}</title></circle>)~",
        x(v[i]), kTop + 10 + static_cast<double>(i % 6) * 6, format_seconds(v[i]));
  const Spread& sp = s.field(f);
  const FieldCells& cells = s.cell(f);
  if (sp.n > 0) {
    // Labels sit right of their line, or left of it near the right edge.
    auto marker = [&](double at, double y, const char* line_cls, const char* text_cls,
                      const std::string& text) {
      fmt::format_to(out,
                     R"~(<line class="{0}" x1="{1:.1f}" x2="{1:.1f}" y1="{2:.0f}" y2="{3:.0f}"/>)~",
                     line_cls, x(at), kTop - 8, kH - 20);
      const bool left = x(at) > kLeft + w * 0.8;
      fmt::format_to(out,
                     R"~(<text class="plbl{}" x="{:.1f}" y="{:.0f}" text-anchor="{}">{}</text>)~",
                     text_cls, left ? x(at) - 4 : x(at) + 4, y, left ? "end" : "start", text);
    };
    marker(sp.p50, kTop - 2, "p50", "", "p50 " + cells.p50);
    marker(sp.p95, kTop + 52, "p95", " p95t", "p95 " + cells.p95);
  }
  fmt::format_to(out, "</svg>");
}

void summary_table(Out out, const SeriesSummary& s) {
  fmt::format_to(
      out,
      R"~(<table class="summary"><thead><tr><th>field</th><th>p50</th><th>p95</th><th>max</th><th>n</th></tr></thead><tbody>)~");
  for (std::size_t i = 0; i < std::size(kAllFields); ++i) {
    const FieldCells& c = s.cells[i];
    const std::string name = html_escape(to_string(kAllFields[i]));
    if (c.n == 0)
      fmt::format_to(out, "<tr><td>{}</td><td>–</td><td>–</td><td>–</td><td>0</td></tr>", name);
    else
      fmt::format_to(out, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", name,
                     c.p50, c.p95, c.max, c.n);
  }
  fmt::format_to(out, "</tbody></table>");
}

void diagnosis_list(Out out, const SeriesSummary& s) {
  fmt::format_to(out, R"~(<ul class="diagnosis">)~");
  for (const auto& v : s.diagnosis) {
    const char* cls = v.cannot_tell() ? "na" : v.holds() ? "holds" : "no";
    fmt::format_to(
        out,
        R"~(<li class="{}" data-shape="{}" data-answer="{}"><span class="mark">{}</span> <b>{}</b> <span class="why">{}</span>{}</li>)~",
        cls, to_string(v.shape), to_string(v.answer), mark(v.answer), html_escape(title(v.shape)),
        html_escape(v.why),
        v.holds() ? fmt::format(R"~(<div class="advice">{}</div>)~", html_escape(advice(v.shape)))
                  : "");
  }
  fmt::format_to(out, "</ul>");
  for (const auto& n : s.notes)
    fmt::format_to(out, R"~(<p class="note" data-note="{}">note: {}</p>)~", n.id,
                   html_escape(n.text));
}

std::string shape_badges(const std::vector<Verdict>& verdicts) {
  std::string out;
  bool any = false, na = false;
  for (const auto& v : verdicts) {
    if (!v.enough_probes) na = true;
    if (v.holds()) {
      any = true;
      out += fmt::format(R"~(<span class="badge {}">{}</span>)~", to_string(v.shape),
                         html_escape(title(v.shape)));
    }
  }
  if (na) return R"~(<span class="badge na">no verdict</span>)~";
  if (!any) out = R"~(<span class="badge none">none: healthy</span>)~";
  return out;
}

constexpr std::string_view kStyle = R"css(
:root{--fg:#1d2430;--muted:#6a7385;--bg:#fff;--panel:#f6f7f9;--line:#d9dde5;--tick:#2d5bd7;--wait:#c9d6f5;
--stall:#e0452b;--ok:#1f8a4c;--warn:#c07a00;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ef;--muted:#9aa3b5;--bg:#14171c;--panel:#1d2128;--line:#343a45;--tick:#7ea2ff;--wait:#2c3b5e}}
body{max-width:1000px;margin:24px auto;padding:0 16px;background:var(--bg)}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 6px;border-top:1px solid var(--line);padding-top:18px}
h3{font-size:14px;margin:18px 0 6px;color:var(--muted);font-weight:600;text-transform:uppercase;letter-spacing:.04em}
.meta{color:var(--muted);font-size:13px;margin-bottom:14px}.sources{margin:2px 0 4px;padding-left:18px}.meta b{color:var(--fg);font-weight:600}
.banner{background:#fff4d6;color:#5a4300;border:1px solid #f0d48a;padding:8px 12px;border-radius:6px;margin:10px 0}
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}
th,td{padding:4px 10px;border-bottom:1px solid var(--line);text-align:right}th:first-child,td:first-child{text-align:left}
thead th{color:var(--muted);font-weight:600}
.overview td:nth-child(2),.overview th:nth-child(2){text-align:left}
.badge{display:inline-block;border-radius:10px;padding:1px 9px;margin:0 4px 2px 0;font-size:12px;color:#fff;background:var(--muted)}
.badge.queue{background:#7b4bd1}.badge.transport{background:var(--stall)}.badge.long_answer{background:var(--warn)}
.badge.shared_capacity{background:#0f7f8c}.badge.generation{background:#b5542a}.badge.none{background:var(--ok)}
.chart{width:100%;height:auto;display:block;background:var(--panel);border-radius:6px;margin:4px 0}
.grid{stroke:var(--line);stroke-width:1}.tick{fill:var(--muted);font-size:11px}.name{fill:var(--fg);font-size:13px;font-weight:600}
.lbl{fill:var(--fg);font-size:11px;font-variant-numeric:tabular-nums}.lbl.bad{fill:var(--stall)}
.run .hit{fill:transparent}.run:hover .hit{fill:rgba(45,91,215,.08)}
.life{stroke:var(--line);stroke-width:2}.wait{fill:var(--wait)}.ticks{stroke:var(--tick);stroke-width:1.2}
.stall{fill:var(--stall);opacity:.35}.end{stroke:var(--muted);stroke-width:2}.fail{stroke:var(--stall);stroke-width:2.2}
.bar{fill:var(--tick)}.bar.stallbar{fill:var(--stall)}.thr{stroke:var(--stall);stroke-width:2;stroke-dasharray:5 3}
.thrlbl{fill:var(--stall);font-size:11px}.dot{fill:var(--tick);opacity:.7}.p50{stroke:var(--fg);stroke-width:1.5}
.p95{stroke:var(--stall);stroke-width:1.5;stroke-dasharray:4 3}.plbl{font-size:11px;fill:var(--fg)}.p95t{fill:var(--stall)}
.diagnosis{list-style:none;padding:0;margin:6px 0;font-size:13px}.diagnosis li{padding:4px 0;border-bottom:1px dotted var(--line)}
.diagnosis .mark{display:inline-block;width:28px;font-family:ui-monospace,monospace;white-space:pre;color:var(--muted)}.diagnosis li.holds .mark{color:var(--stall);font-weight:700}
.note{font-size:13px;margin:6px 0;color:var(--warn)}.diagnosis .why{color:var(--muted)}.diagnosis li.holds .why{color:var(--fg)}.advice{margin-left:20px;color:var(--stall)}
.legend{font-size:12px;color:var(--muted);margin:2px 0 6px}.legend i{display:inline-block;width:14px;height:9px;margin:0 4px 0 10px;vertical-align:middle}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:18px}@media (max-width:760px){.cols{grid-template-columns:1fr}}
footer{margin:32px 0;color:var(--muted);font-size:12px}
)css";

// The page checks itself: the number of timeline rows and series it was
// rendered with, and that every chart drew something. The result goes to
// <html data-selfcheck>, for people (devtools) and for the browser test.
constexpr std::string_view kScript = R"js(
(function () {
  var root = document.documentElement;
  function fail(msg) {
    root.setAttribute('data-selfcheck', 'failed: ' + msg);
    console.error('report self-check failed: ' + msg);
  }
  try {
    var body = document.body;
    var wantRuns = parseInt(body.getAttribute('data-expected-runs'), 10);
    var wantSeries = parseInt(body.getAttribute('data-expected-series'), 10);
    var runs = document.querySelectorAll('svg.timeline g[data-run]').length;
    var series = document.querySelectorAll('section.series').length;
    if (runs !== wantRuns) return fail('expected ' + wantRuns + ' timeline rows, found ' + runs);
    if (series !== wantSeries) return fail('expected ' + wantSeries + ' series, found ' + series);
    var charts = document.querySelectorAll('svg.chart');
    for (var i = 0; i < charts.length; i++) {
      var box = charts[i].getBBox();
      if (!(box.width > 0 && box.height > 0)) return fail('chart ' + i + ' drew nothing');
    }
    root.setAttribute('data-selfcheck', 'ok');
  } catch (e) {
    fail(String(e && e.message || e));
  }
})();
)js";
void page_head(Out out, const Summary& summary, const ReportMeta& meta) {
  std::size_t runs = 0;
  for (const auto& s : summary.series) runs += s.probes.size();
  fmt::format_to(
      out,
      "<!DOCTYPE html>\n<html lang=\"en\" data-selfcheck=\"pending\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'; "
      "script-src 'unsafe-inline'; img-src data:\">"
      "<title>{}</title><style>{}</style></head>\n",
      html_escape(meta.title), kStyle);
  fmt::format_to(out, R"~(<body data-expected-runs="{}" data-expected-series="{}">)~", runs,
                 summary.series.size());
  fmt::format_to(out, "<h1>{}</h1>", html_escape(meta.title));
}

// A report made from rows files: each file with its hosts, time range and
// rows, since separate runs have no one start or "took"; warmups are only
// counted where the rows hold them.
void source_lines(Out out, const Summary& summary, const ReportMeta& meta) {
  fmt::format_to(out,
                 R"~(<div class="meta made-from">made from {} rows file{}:<ul class="sources">)~",
                 meta.sources.size(), meta.sources.size() == 1 ? "" : "s");
  std::size_t warmups = 0;
  for (const auto& src : meta.sources) {
    std::string hosts;
    for (const auto& h : src.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
    warmups += src.warmups;
    fmt::format_to(
        out,
        R"~(<li data-source="{}"><b>{}</b>{} · host <b>{}</b> · <b>{}</b> – <b>{}</b> ({}) · {} row{} ({} ok)</li>)~",
        html_escape(src.label), html_escape(src.label),
        src.path == src.label ? "" : " (" + html_escape(src.path) + ")",
        html_escape(hosts.empty() ? "-" : hosts),
        wall_clock::format_utc(src.first_unix, "%Y-%m-%d %H:%M:%S"),
        wall_clock::format_utc(src.last_unix, "%Y-%m-%d %H:%M:%S UTC"),
        format_seconds(std::max(0.0, src.last_unix - src.first_unix)), src.rows,
        src.rows == 1 ? "" : "s", src.ok);
  }
  fmt::format_to(out, R"~(</ul>{} measured run{} ({} ok) · {}</div>)~", summary.runs,
                 summary.runs == 1 ? "" : "s", summary.ok,
                 warmups > 0
                     ? fmt::format("{} warmup row{} left out", warmups, warmups == 1 ? "" : "s")
                     : std::string("warmups: none in the rows (run writes measured probes only, so "
                                   "how many were discarded is not known here)"));
}

void meta_lines(Out out, const Summary& summary, const ReportMeta& meta) {
  if (!meta.sources.empty())
    source_lines(out, summary, meta);
  else
    fmt::format_to(
        out,
        R"~(<div class="meta">started <b>{}</b> · took <b>{}</b> · host <b>{}</b> · {} measured run{} ({} ok) · {} warmup run{} discarded{}{}</div>)~",
        wall_clock::format_utc(meta.started_unix, "%Y-%m-%d %H:%M:%S UTC"),
        format_seconds(meta.elapsed_seconds), html_escape(meta.host), summary.runs,
        summary.runs == 1 ? "" : "s", summary.ok, summary.warmup_discarded,
        summary.warmup_discarded == 1 ? "" : "s",
        meta.concurrency > 0 ? fmt::format(" · concurrency {}", meta.concurrency) : "",
        meta.seed.empty() ? "" : " · seed " + html_escape(meta.seed));
  if (!meta.command.empty())
    fmt::format_to(out, R"~(<div class="meta">command: <code>{}</code></div>)~",
                   html_escape(meta.command));
  if (meta.interrupted)
    fmt::format_to(
        out,
        R"~(<div class="banner">This run was interrupted: the report covers the runs that finished.</div>)~");
}

// One line per series.
void overview_table(Out out, const Summary& summary) {
  fmt::format_to(
      out,
      R"~(<table class="overview"><thead><tr><th>target</th><th>prompt</th><th>runs</th><th>ok</th><th>TTFT p50</th><th>TTFT p95</th><th>gap p95 (p50 of runs)</th><th>duration p95</th><th>diagnosis</th></tr></thead><tbody>)~");
  for (std::size_t k = 0; k < summary.series.size(); ++k) {
    const auto& s = summary.series[k];
    auto shown = [](const std::string& cell) { return cell.empty() ? std::string("–") : cell; };
    fmt::format_to(
        out,
        R"~(<tr><td><a href="#series-{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>)~",
        k, html_escape(s.target), html_escape(s.prompt), s.runs, s.ok,
        shown(s.cell(Field::ttft).p50), shown(s.cell(Field::ttft).p95),
        shown(s.cell(Field::gap_p95).p50), shown(s.cell(Field::duration).p95),
        shape_badges(s.diagnosis));
  }
  fmt::format_to(out, "</tbody></table>");
}

// The sections compared with each other: one target+prompt from several
// rows files ("svc @ before", "svc @ after": `report`'s labels).
std::pair<std::string, std::string> comparison_key(const SeriesSummary& s) {
  const auto at = s.target.rfind(" @ ");
  return {at == std::string::npos ? s.target : s.target.substr(0, at), s.prompt};
}

using SharedScales = std::map<std::pair<std::string, std::string>, SharedScale>;

// Every series' own extent, widened to the largest among the series it is compared with.
SharedScales shared_scales(const Summary& summary, const std::vector<double>& bucket_edges) {
  SharedScales by_key;
  for (const auto& s : summary.series) {
    SharedScale& sc = by_key[comparison_key(s)];
    for (const auto& r : s.probes) sc.timeline_tmax = std::max(sc.timeline_tmax, r.duration * 1.02);
    const GapBins b = bin_gaps(s, bucket_edges);
    sc.hist_shown = std::max(sc.hist_shown, b.shown);
    sc.hist_max_count = std::max(sc.hist_max_count, b.max_count);
    for (double v : field_values(s.probes, Field::ttft))
      sc.ttft_max = std::max(sc.ttft_max, v * 1.05);
    for (double v : field_values(s.probes, Field::duration))
      sc.duration_max = std::max(sc.duration_max, v * 1.05);
  }
  return by_key;
}

void series_charts(Out out, const SeriesSummary& s, std::size_t k, const ReportMeta& meta,
                   const SharedScale& shared) {
  fmt::format_to(out, "<h3>Timeline of every run</h3>");
  fmt::format_to(
      out,
      R"~(<div class="legend"><i style="background:var(--wait)"></i>waiting for the first token<i style="background:var(--tick)"></i>chunk arrival<i style="background:var(--stall);opacity:.5"></i>stall (gap ≥ {})<i style="background:var(--muted)"></i>end of stream</div>)~",
      s.stall_threshold_text);
  timeline(out, s, k, shared);
  fmt::format_to(out, "<h3>Gaps between chunks</h3>");
  gap_histogram(out, s, meta.gap_buckets, shared);
  fmt::format_to(out, "<h3>TTFT and duration across runs</h3>");
  strip_plot(out, s, Field::ttft, "TTFT", shared.ttft_max);
  strip_plot(out, s, Field::duration, "duration", shared.duration_max);
}

void series_section(Out out, const SeriesSummary& s, std::size_t k, const ReportMeta& meta,
                    const SharedScale& shared) {
  fmt::format_to(out,
                 R"~(<section class="series" id="series-{}" data-target="{}" data-prompt="{}">)~",
                 k, html_escape(s.target), html_escape(s.prompt));
  fmt::format_to(out, "<h2>{} · {} <small class=\"meta\">model {} · {} runs, {} ok</small></h2>",
                 html_escape(s.target), html_escape(s.prompt), html_escape(s.model_label), s.runs,
                 s.ok);
  fmt::format_to(out, "<div>{}</div>", shape_badges(s.diagnosis));
  series_charts(out, s, k, meta, shared);
  fmt::format_to(out, R"~(<div class="cols"><div><h3>Summary</h3>)~");
  summary_table(out, s);
  if (!s.failure_list.empty())
    fmt::format_to(out, R"~(<p class="meta">failures: {}{}</p>)~",
                   html_escape(join_failures(s.failure_list, " ×")),
                   s.failure_example.empty() ? "" : " — first: " + html_escape(s.failure_example));
  fmt::format_to(out, "</div><div><h3>Diagnosis</h3>");
  diagnosis_list(out, s);
  fmt::format_to(out, "</div></div></section>\n");
}

void page_footer(Out out, const config::DiagnosisThresholds& t) {
  fmt::format_to(
      out,
      "<footer>Diagnosis thresholds: queue TTFT p50 &gt; {} with gap p95 &lt; {}; transport gap "
      "tail/p50 ≥ {} "
      "or ≥ {} of runs stalled; long answer duration p50 &gt; {}; shared capacity p95/p50 &gt; {}; "
      "at least {} "
      "successful runs. Percentiles are nearest-rank. Generated by llm-stream-exporter.</footer>",
      format_seconds(t.queue_ttft_seconds), format_seconds(t.queue_gap_p95_seconds),
      format_ratio(t.transport_gap_ratio), format_percent(t.transport_min_stall_ratio),
      format_seconds(t.long_answer_duration_seconds), format_ratio(t.spread_ratio), t.min_probes);
  fmt::format_to(out, "<script>{}</script></body></html>\n", kScript);
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_html(const Summary& summary, const ReportMeta& meta) {
  std::string html;
  html.reserve(64 * std::size_t{1024});
  Out out = std::back_inserter(html);
  page_head(out, summary, meta);
  meta_lines(out, summary, meta);
  overview_table(out, summary);
  const auto shared = shared_scales(summary, meta.gap_buckets);
  for (std::size_t k = 0; k < summary.series.size(); ++k)
    series_section(out, summary.series[k], k, meta, shared.at(comparison_key(summary.series[k])));
  page_footer(out, meta.thresholds);
  return html;
}

}  // namespace lse::report
