// Bootstrap comparison of two row sets, part by part of the clock.
#include "report/compare.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "probe/timeline.hpp"
#include "report/format.hpp"

namespace lse::report {
namespace {

std::optional<double> part_value(const probe::ProbeResult& r, ClockPart p) {
  switch (p) {
    case ClockPart::ttft: return r.ttft;
    case ClockPart::gap_p50: return r.gap_p50;
    case ClockPart::gap_p95: return r.gap_p95;
    case ClockPart::gap_max: return r.gap_max;
    case ClockPart::tail: return r.tail;
    case ClockPart::duration: return r.duration;
    case ClockPart::stalls: return static_cast<double>(r.stalls);
  }
  return std::nullopt;
}

bool is_count(ClockPart p) { return p == ClockPart::stalls; }

double quantile_of(Statistic s) { return s == Statistic::median ? 0.50 : 0.95; }

// The statistic of an unsorted sample, in place (nth_element; same rank as nearest_rank).
double statistic_in_place(std::vector<double>& v, Statistic s) {
  const auto n = v.size();
  auto rank = static_cast<std::size_t>(std::ceil(quantile_of(s) * static_cast<double>(n)));
  rank = std::clamp<std::size_t>(rank, 1, n);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank - 1), v.end());
  return v[rank - 1];
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string fmt_value(ClockPart p, double v) {
  return is_count(p) ? format_number(v) : format_seconds(v);
}
std::string fmt_change(ClockPart p, double v) {
  if (is_count(p)) return (v > 0 ? "+" : "") + format_number(v);
  return format_signed_seconds(v);
}

struct Series {
  std::string target, prompt, model;
  std::vector<const probe::ProbeResult*> rows;
};

// Series by (matching key, prompt): the key is the target, "" (match by
// prompt alone) or the pair's index.
using SeriesMap = std::map<std::pair<std::string, std::string>, Series>;

void add_row(SeriesMap& out, const std::string& key, const probe::ProbeResult& r) {
  if (r.warmup || probe::was_canceled(r)) return;  // measured nothing
  auto& s = out[std::make_pair(key, r.prompt)];
  s.target = r.target;
  s.prompt = r.prompt;
  s.rows.push_back(&r);
}

SeriesMap group(const std::vector<probe::ProbeResult>& rows, bool by_prompt_only) {
  SeriesMap out;
  for (const auto& r : rows) add_row(out, by_prompt_only ? std::string() : r.target, r);
  return out;
}

std::string pair_key(std::size_t i) { return fmt::format("#{:08}", i); }

// One side of explicit pairs: each pair's target (side A's or B's), keyed by the pair.
SeriesMap group_pairs(const std::vector<probe::ProbeResult>& rows,
                      const std::vector<std::pair<std::string, std::string>>& pairs, bool side_a) {
  SeriesMap out;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const std::string& name = side_a ? pairs[i].first : pairs[i].second;
    for (const auto& r : rows)
      if (r.target == name) add_row(out, pair_key(i), r);
  }
  return out;
}

std::set<std::string> targets_of(const std::vector<probe::ProbeResult>& rows) {
  std::set<std::string> t;
  for (const auto& r : rows) t.insert(r.target);
  return t;
}

bool in_parts(ClockPart p, std::initializer_list<ClockPart> parts) {
  return std::find(parts.begin(), parts.end(), p) != parts.end();
}

// Whether `c` is a larger move than `best`: a time beats a count (they have
// no common unit), else the larger |change| (the first of equals, within
// rounding, stays: medians before p95s, p50 before p95 before max).
bool larger_move(const PartChange& c, const PartChange* best) {
  if (!best) return true;
  if (is_count(best->part) != is_count(c.part)) return is_count(best->part);
  constexpr double kRounding = 1e-9;
  return std::fabs(c.change) > std::fabs(best->change) + kRounding;
}

// The largest moved change among `parts` (both statistics); with `against`,
// only changes in the opposite direction of it.
const PartChange* largest_moved(const SeriesComparison& s, std::initializer_list<ClockPart> parts,
                                const PartChange* against = nullptr) {
  const PartChange* best = nullptr;
  for (const auto& c : s.changes) {
    if (!c.moved || !in_parts(c.part, parts)) continue;
    if (against && (is_count(c.part) || (c.change > 0) == (against->change > 0))) continue;
    if (larger_move(c, best)) best = &c;
  }
  return best;
}

std::string describe(const PartChange* c) {
  if (!c) return "";
  return fmt::format("{} {} {}", to_string(c->part), to_string(c->statistic),
                     fmt_change(c->part, c->change));
}

constexpr std::initializer_list<ClockPart> kGapParts = {ClockPart::gap_p50, ClockPart::gap_p95,
                                                        ClockPart::gap_max, ClockPart::stalls};

// The gaps' largest move, and the largest one the other way when there is one.
struct GapMoves {
  const PartChange* main = nullptr;
  const PartChange* opposite = nullptr;
  std::string text() const {
    if (!opposite) return describe(main);
    return fmt::format("{}; {} the other way", describe(main), describe(opposite));
  }
  // The typical gap shrank while the gaps' own tail (gap_p95 or gap_max)
  // grew: chunks held, then released together.
  bool batching() const {
    return opposite && main->change > 0 && main->part != ClockPart::gap_p50 &&
           opposite->part == ClockPart::gap_p50;
  }
  // Names the parts by their defined names: "tail" is the end of the
  // stream (last chunk to close), never the gaps' p95.
  std::string batching_hint() const {
    if (!batching()) return "";
    return fmt::format(
        "; gap_p50 shrank while {} grew: chunks are held and released in batches (e.g. "
        "haproxy's default batching, fixed by `option http-no-delay`)",
        to_string(main->part));
  }
};

GapMoves gap_moves(const SeriesComparison& s) {
  GapMoves g;
  g.main = largest_moved(s, kGapParts);
  if (g.main && !is_count(g.main->part))
    g.opposite =
        largest_moved(s, {ClockPart::gap_p50, ClockPart::gap_p95, ClockPart::gap_max}, g.main);
  return g;
}

// The burst rule: TTFT grew while B's gaps collapsed to ~0 and its stalls are
// gone: something between the hosts holds the whole stream and releases it at once.
bool gaps_collapsed_while_ttft_grew(const SeriesComparison& s, const CompareOptions& o) {
  const PartChange* ttft = s.find(ClockPart::ttft, Statistic::median);
  const PartChange* p50 = s.find(ClockPart::gap_p50, Statistic::median);
  const PartChange* p95 = s.find(ClockPart::gap_p95, Statistic::median);
  const PartChange* stalls = s.find(ClockPart::stalls, Statistic::p95);
  if (!ttft || !ttft->moved || ttft->change <= 0) return false;
  if (!p50 || !p95 || !p50->comparable || !p95->comparable) return false;
  if (p95->a < o.min_effect_seconds) return false;  // no gaps in A to collapse from
  const double collapsed = std::max(o.collapsed_gap_seconds, o.min_effect_share * p50->a);
  if (p50->b > collapsed || p95->b > collapsed) return false;
  return !stalls || !stalls->comparable || stalls->b == 0;
}

std::pair<std::string, std::string> buffer_verdict(const SeriesComparison& s) {
  const PartChange* p95 = s.find(ClockPart::gap_p95, Statistic::median);
  const PartChange* stalls = s.find(ClockPart::stalls, Statistic::median);
  const std::string stall_text =
      stalls && stalls->comparable
          ? fmt::format(", stalls {} → {}", format_number(stalls->a), format_number(stalls->b))
          : "";
  return {"buffer",
          fmt::format("TTFT grew ({}) while the gaps collapsed to ~0 (gap_p95 median {} → {}{}): "
                      "a buffer between the hosts holds the stream and releases it at once (a "
                      "buffering proxy or compression on B's path, e.g. nginx proxy_buffering or "
                      "gzip); B's TTFT is the buffer's wait, not the model's",
                      describe(largest_moved(s, {ClockPart::ttft})), format_seconds(p95->a),
                      format_seconds(p95->b), stall_text)};
}

// The verdict's class (for grouping prompts) and its sentence.
std::pair<std::string, std::string> verdict_for(const SeriesComparison& s,
                                                const CompareOptions& o) {
  if (s.ok_a == 0 || s.ok_b == 0)
    return {"none",
            fmt::format("cannot compare: no successful runs in {}", s.ok_a == 0 ? "A" : "B")};
  if (gaps_collapsed_while_ttft_grew(s, o)) return buffer_verdict(s);
  const GapMoves gm = gap_moves(s);
  const std::string gaps = gm.text();
  const std::string batching = gm.batching_hint();
  const auto ttft = describe(largest_moved(s, {ClockPart::ttft}));
  if (s.gaps_moved && !s.ttft_moved)
    return {"transport",
            fmt::format(
                "gaps moved ({}), TTFT did not: transport between the hosts (the network path or a "
                "buffering proxy), not the model{}",
                gaps, batching)};
  if (s.ttft_moved && !s.gaps_moved)
    return {
        "before-stream",
        fmt::format("TTFT moved ({}), gaps did not: the difference is before the stream (queueing, "
                    "connection setup, or distance to the server)",
                    ttft)};
  if (s.ttft_moved && s.gaps_moved)
    return {"both",
            fmt::format("TTFT and gaps both moved ({}; {}): the serving side itself differs (load, "
                        "model, region), or both the wait and the path do{}",
                        ttft, gaps, batching)};
  if (s.duration_moved)
    return {"length",
            fmt::format("TTFT and gaps did not move, duration did ({}): the answers differ in "
                        "length (compare chunks)",
                        describe(largest_moved(s, {ClockPart::duration})))};
  if (s.tail_moved)
    return {"tail",
            fmt::format("TTFT and gaps did not move, the tail did ({}): the end of the stream is "
                        "held back (a proxy, or a slow close)",
                        describe(largest_moved(s, {ClockPart::tail})))};
  return {"same",
          "nothing moved beyond the minimum effect: TTFT and gaps are the same from both hosts"};
}

}  // namespace

std::string_view to_string(ClockPart p) {
  switch (p) {
    case ClockPart::ttft: return "ttft";
    case ClockPart::gap_p50: return "gap_p50";
    case ClockPart::gap_p95: return "gap_p95";
    case ClockPart::gap_max: return "gap_max";
    case ClockPart::tail: return "tail";
    case ClockPart::duration: return "duration";
    case ClockPart::stalls: return "stalls";
  }
  return "";
}

std::string_view to_string(Statistic s) { return s == Statistic::median ? "median" : "p95"; }

const PartChange* SeriesComparison::find(ClockPart p, Statistic s) const {
  for (const auto& c : changes)
    if (c.part == p && c.statistic == s) return &c;
  return nullptr;
}

Interval bootstrap_interval(const std::vector<double>& a, const std::vector<double>& b, Statistic s,
                            const CompareOptions& o, std::uint64_t stream) {
  Interval out;
  if (a.empty() || b.empty()) return out;
  std::mt19937_64 rng(o.seed ^ (stream * 0x9E3779B97F4A7C15ull));
  const int n = std::max(o.resamples, 1);
  std::vector<double> diffs;
  diffs.reserve(static_cast<std::size_t>(n));
  std::vector<double> ra(a.size()), rb(b.size());
  for (int i = 0; i < n; ++i) {
    // rng() % size: the same draws with every standard library (a
    // distribution object's algorithm is implementation-defined).
    for (auto& x : ra) x = a[rng() % a.size()];
    for (auto& x : rb) x = b[rng() % b.size()];
    diffs.push_back(statistic_in_place(rb, s) - statistic_in_place(ra, s));
  }
  std::sort(diffs.begin(), diffs.end());
  const double alpha = 1.0 - o.confidence;
  out.low = probe::nearest_rank(diffs, std::max(alpha / 2, 1e-9));
  out.high = probe::nearest_rank(diffs, 1.0 - alpha / 2);
  return out;
}

namespace {

// The values of one clock part over a series' successful rows.
std::vector<double> part_values(const Series& s, ClockPart p) {
  std::vector<double> out;
  for (auto* r : s.rows)
    if (r->ok)
      if (auto v = part_value(*r, p)) out.push_back(*v);
  return out;
}

// One part, one statistic: A, B, the change and its widened bootstrap CI.
PartChange part_change(const Series& sa, ClockPart p, Statistic st, const std::vector<double>& va,
                       const std::vector<double>& vb, const CompareOptions& o) {
  PartChange c;
  c.part = p;
  c.statistic = st;
  c.n_a = va.size();
  c.n_b = vb.size();
  c.comparable = !va.empty() && !vb.empty();
  if (!c.comparable) return c;
  auto sa_sorted = va, sb_sorted = vb;
  c.a = statistic_in_place(sa_sorted, st);
  c.b = statistic_in_place(sb_sorted, st);
  c.change = c.b - c.a;
  const auto stream =
      fnv1a(fmt::format("{}/{}/{}/{}", sa.target, sa.prompt, to_string(p), to_string(st)));
  const Interval ci = bootstrap_interval(va, vb, st, o, stream);
  c.bootstrap_low = ci.low;
  c.bootstrap_high = ci.high;
  const double widen = is_count(p) ? 0.0 : o.resolution_seconds;
  c.ci_low = ci.low - widen;
  c.ci_high = ci.high + widen;
  c.excludes_zero = c.ci_low > 0 || c.ci_high < 0;
  c.min_effect = std::max(is_count(p) ? o.min_effect_count : o.min_effect_seconds,
                          o.min_effect_share * std::fabs(c.a));
  c.moved = c.excludes_zero && std::fabs(c.change) >= c.min_effect;
  return c;
}

void note_moved(SeriesComparison& sc, const PartChange& c) {
  switch (c.part) {
    case ClockPart::ttft: sc.ttft_moved |= c.moved; break;
    case ClockPart::gap_p50:
    case ClockPart::gap_p95:
    case ClockPart::gap_max:
    case ClockPart::stalls: sc.gaps_moved |= c.moved; break;
    case ClockPart::tail: sc.tail_moved |= c.moved; break;
    case ClockPart::duration: sc.duration_moved |= c.moved; break;
  }
}

SeriesComparison compare_series(const Series& sa, const Series& sb, const CompareOptions& o) {
  SeriesComparison sc;
  sc.target = sa.target == sb.target ? sa.target : sa.target + " → " + sb.target;
  sc.prompt = sa.prompt;
  sc.rows_a = sa.rows.size();
  sc.rows_b = sb.rows.size();
  for (auto* r : sa.rows) sc.ok_a += r->ok;
  for (auto* r : sb.rows) sc.ok_b += r->ok;
  sc.http_version_a = http_versions(sa.rows);
  sc.http_version_b = http_versions(sb.rows);
  for (ClockPart p : kAllClockParts) {
    const std::vector<double> va = part_values(sa, p), vb = part_values(sb, p);
    for (Statistic st : {Statistic::median, Statistic::p95}) {
      sc.changes.push_back(part_change(sa, p, st, va, vb, o));
      note_moved(sc, sc.changes.back());
    }
  }
  return sc;
}

// One line over all series: the single verdict, the shared one, or each in turn.
std::string overall_verdict(const std::vector<SeriesComparison>& series, std::size_t classes) {
  if (series.empty()) return "nothing to compare: A and B have no target/prompt in common";
  if (series.size() == 1) return series[0].verdict;
  // Same class everywhere: the first series' sentence stands for all.
  if (classes == 1) return series[0].verdict + fmt::format(" (all {} prompts)", series.size());
  std::string out = "mixed: ";
  for (std::size_t i = 0; i < series.size(); ++i)
    out += fmt::format("{}{}: {}", i ? "; " : "", series[i].prompt, series[i].verdict);
  return out;
}

}  // namespace

namespace {

// The targets of `rows` that are in no pair, as "A: name" (or "B: name").
void note_unpaired(const std::vector<probe::ProbeResult>& rows,
                   const std::vector<std::pair<std::string, std::string>>& pairs, bool side_a,
                   std::vector<std::string>& out) {
  for (const auto& t : targets_of(rows)) {
    const bool paired = std::any_of(pairs.begin(), pairs.end(), [&](const auto& p) {
      return (side_a ? p.first : p.second) == t;
    });
    if (!paired) out.push_back(fmt::format("{}: {}", side_a ? "A" : "B", t));
  }
}

}  // namespace

HttpVersions http_versions(const std::vector<const probe::ProbeResult*>& rows) {
  std::map<std::string, std::size_t> n;
  for (const auto* r : rows)
    if (!r->http_version.empty()) ++n[r->http_version];
  HttpVersions out;
  out.counts.assign(n.begin(), n.end());
  std::stable_sort(out.counts.begin(), out.counts.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  return out;
}

std::string HttpVersions::summary() const {
  if (counts.empty()) return "";
  return counts.size() == 1 ? counts.front().first : "mixed";
}

std::string HttpVersions::most_common() const {
  return counts.empty() ? std::string() : counts.front().first;
}

std::string HttpVersions::text() const {
  if (counts.size() <= 1) return counts.empty() ? "-" : counts.front().first;
  std::string each;
  for (const auto& [version, rows] : counts)
    each += fmt::format("{}{}: {}", each.empty() ? "" : ", ", version, rows);
  return fmt::format("mixed ({})", each);
}

Comparison compare(const std::vector<probe::ProbeResult>& a,
                   const std::vector<probe::ProbeResult>& b, const CompareOptions& o) {
  Comparison out;
  out.options = o;
  SeriesMap ga, gb;
  if (o.pairs.empty()) {
    const auto ta = targets_of(a), tb = targets_of(b);
    const bool by_prompt = ta.size() == 1 && tb.size() == 1 && ta != tb;
    ga = group(a, by_prompt);
    gb = group(b, by_prompt);
  } else {
    ga = group_pairs(a, o.pairs, true);
    gb = group_pairs(b, o.pairs, false);
    note_unpaired(a, o.pairs, true, out.not_paired);
    note_unpaired(b, o.pairs, false, out.not_paired);
  }
  for (const auto& [key, sa] : ga)
    if (!gb.count(key)) out.only_in_a.push_back(sa.target + "/" + sa.prompt);
  for (const auto& [key, sb] : gb)
    if (!ga.count(key)) out.only_in_b.push_back(sb.target + "/" + sb.prompt);

  std::set<std::string> classes;
  for (const auto& [key, sa] : ga) {
    auto it = gb.find(key);
    if (it == gb.end()) continue;
    SeriesComparison sc = compare_series(sa, it->second, o);
    auto [cls, sentence] = verdict_for(sc, o);
    sc.shape = cls;
    sc.verdict = sentence;
    classes.insert(cls);
    out.series.push_back(std::move(sc));
  }
  out.verdict = overall_verdict(out.series, classes.size());
  return out;
}

std::string render_text(const Comparison& c, const std::string& label_a,
                        const std::string& label_b) {
  std::string out = fmt::format("compare A = {}  →  B = {}\n", label_a, label_b);
  if (c.options.pairs.empty()) {
    out += "targets matched by name (by prompt alone when A and B each hold one target)\n";
  } else {
    std::string pairs;
    for (const auto& [ta, tb] : c.options.pairs)
      pairs += fmt::format("{}{} → {}", pairs.empty() ? "" : ", ", ta, tb);
    out += fmt::format("targets matched by --pair: {}\n", pairs);
  }
  for (const auto& s : c.series) {
    out += fmt::format("\ntarget {}  prompt {}  (A: {} rows, {} ok; B: {} rows, {} ok)\n", s.target,
                       s.prompt, s.rows_a, s.ok_a, s.rows_b, s.ok_b);
    out += fmt::format("  http_version  A: {}  B: {}{}\n", s.http_version_a.text(),
                       s.http_version_b.text(),
                       s.http_version_a.summary() != s.http_version_b.summary()
                           ? "  (the sides spoke different HTTP: part of what differs)"
                           : "");
    out += fmt::format("  {:<9} {:<6} {:>10} {:>10} {:>11}   {:<27} {}\n", "part", "stat", "A", "B",
                       "change", "95% CI of change", "");
    for (const auto& ch : s.changes) {
      if (!ch.comparable) {
        out += fmt::format("  {:<9} {:<6} {:>10} {:>10} {:>11}   {:<27} {}\n", to_string(ch.part),
                           to_string(ch.statistic), ch.n_a ? fmt_value(ch.part, ch.a) : "-",
                           ch.n_b ? fmt_value(ch.part, ch.b) : "-", "-", "-", "no data");
        continue;
      }
      const std::string ci =
          fmt::format("[{}, {}]", fmt_change(ch.part, ch.ci_low), fmt_change(ch.part, ch.ci_high));
      const char* mark = ch.moved ? "moved" : ch.excludes_zero ? "< min effect" : "~";
      out += fmt::format("  {:<9} {:<6} {:>10} {:>10} {:>11}   {:<27} {}\n", to_string(ch.part),
                         to_string(ch.statistic), fmt_value(ch.part, ch.a),
                         fmt_value(ch.part, ch.b), fmt_change(ch.part, ch.change), ci, mark);
    }
    out += fmt::format("  verdict: {}\n", s.verdict);
  }
  if (!c.only_in_a.empty() || !c.only_in_b.empty()) {
    out += "\n";
    for (const auto& s : c.only_in_a) out += fmt::format("only in A (not compared): {}\n", s);
    for (const auto& s : c.only_in_b) out += fmt::format("only in B (not compared): {}\n", s);
  }
  for (const auto& s : c.not_paired) out += fmt::format("in no --pair (not compared): {}\n", s);
  out += fmt::format(
      "\n95% CI: bootstrap ({} resamples, seed {}) of the change in the statistic, widened by the "
      "clock resolution ±{}; \"moved\" = the CI excludes 0 and |change| >= max({}, {} of A) "
      "(stalls: max({}, {} of A)); \"< min effect\" = the CI excludes 0 but the change is "
      "smaller.\n",
      c.options.resamples, c.options.seed, format_seconds(c.options.resolution_seconds),
      format_seconds(c.options.min_effect_seconds), format_percent(c.options.min_effect_share),
      format_number(c.options.min_effect_count), format_percent(c.options.min_effect_share));
  out += fmt::format("verdict: {}\n", c.verdict);
  return out;
}

namespace {

json::Value change_json(const PartChange& ch) {
  const double scale = is_count(ch.part) ? 1.0 : 1e3;
  json::Object o{{"part", std::string(to_string(ch.part))},
                 {"statistic", std::string(to_string(ch.statistic))},
                 {"unit", is_count(ch.part) ? "count" : "ms"},
                 {"n_a", static_cast<std::int64_t>(ch.n_a)},
                 {"n_b", static_cast<std::int64_t>(ch.n_b)}};
  if (!ch.comparable) {
    o.emplace_back("moved", nullptr);
    return o;
  }
  o.emplace_back("a", ch.a * scale);
  o.emplace_back("b", ch.b * scale);
  o.emplace_back("change", ch.change * scale);
  o.emplace_back("ci_low", ch.ci_low * scale);
  o.emplace_back("ci_high", ch.ci_high * scale);
  o.emplace_back("bootstrap_low", ch.bootstrap_low * scale);
  o.emplace_back("bootstrap_high", ch.bootstrap_high * scale);
  o.emplace_back("min_effect", ch.min_effect * scale);
  o.emplace_back("excludes_zero", ch.excludes_zero);
  o.emplace_back("moved", ch.moved);
  return o;
}

// "2", "1.1", "mixed" or null (no answer on that side).
json::Value version_json(const HttpVersions& v) {
  if (v.counts.empty()) return nullptr;
  return v.summary();
}

// Rows by version: {"2": 12, "1.1": 3}.
json::Value version_counts_json(const HttpVersions& v) {
  json::Object o;
  for (const auto& [version, rows] : v.counts)
    o.emplace_back(version, static_cast<std::int64_t>(rows));
  return o;
}

json::Value series_json(const SeriesComparison& s) {
  json::Array changes;
  for (const auto& ch : s.changes) changes.push_back(change_json(ch));
  return json::Object{{"target", s.target},
                      {"prompt", s.prompt},
                      {"rows_a", static_cast<std::int64_t>(s.rows_a)},
                      {"rows_b", static_cast<std::int64_t>(s.rows_b)},
                      {"ok_a", static_cast<std::int64_t>(s.ok_a)},
                      {"ok_b", static_cast<std::int64_t>(s.ok_b)},
                      {"http_version_a", version_json(s.http_version_a)},
                      {"http_version_b", version_json(s.http_version_b)},
                      {"http_versions_a", version_counts_json(s.http_version_a)},
                      {"http_versions_b", version_counts_json(s.http_version_b)},
                      {"ttft_moved", s.ttft_moved},
                      {"gaps_moved", s.gaps_moved},
                      {"tail_moved", s.tail_moved},
                      {"duration_moved", s.duration_moved},
                      {"shape", s.shape},
                      {"verdict", s.verdict},
                      {"changes", std::move(changes)}};
}

}  // namespace

json::Value to_json(const Comparison& c, const std::string& label_a, const std::string& label_b) {
  json::Array series;
  for (const auto& s : c.series) series.push_back(series_json(s));
  json::Array only_a, only_b;
  for (const auto& s : c.only_in_a) only_a.push_back(s);
  for (const auto& s : c.only_in_b) only_b.push_back(s);
  json::Array pairs, not_paired;
  for (const auto& [ta, tb] : c.options.pairs) pairs.push_back(json::Object{{"a", ta}, {"b", tb}});
  for (const auto& s : c.not_paired) not_paired.push_back(s);
  return json::Object{{"a", label_a},
                      {"b", label_b},
                      {"confidence", c.options.confidence},
                      {"resamples", c.options.resamples},
                      {"resolution_ms", c.options.resolution_seconds * 1e3},
                      {"seed", static_cast<std::int64_t>(c.options.seed)},
                      {"min_effect_ms", c.options.min_effect_seconds * 1e3},
                      {"min_effect_share", c.options.min_effect_share},
                      {"matched_by", c.options.pairs.empty() ? "name" : "pair"},
                      {"pairs", std::move(pairs)},
                      {"not_paired", std::move(not_paired)},
                      {"series", std::move(series)},
                      {"only_in_a", std::move(only_a)},
                      {"only_in_b", std::move(only_b)},
                      {"verdict", c.verdict}};
}

}  // namespace lse::report
