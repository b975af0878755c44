// The five shapes (DESIGN §7) as a table of rules (kRules below): each entry
// is one shape with its condition, the thresholds it is held against, the
// sentence that says why in plain words, and the numbers behind it.
// docs/diagnosis.md explains the rules and the defaults.
#include "report/diagnosis.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <iterator>

#include "probe/timeline.hpp"
#include "report/format.hpp"
#include "report/stats.hpp"

namespace lse::report {

std::string_view to_string(Shape s) {
  switch (s) {
    case Shape::queue: return "queue";
    case Shape::transport: return "transport";
    case Shape::long_answer: return "long_answer";
    case Shape::shared_capacity: return "shared_capacity";
    case Shape::generation: return "generation";
  }
  return "";
}

std::string_view title(Shape s) {
  switch (s) {
    case Shape::queue: return "queue";
    case Shape::transport: return "transport";
    case Shape::long_answer: return "long answer";
    case Shape::shared_capacity: return "shared capacity";
    case Shape::generation: return "generation";
  }
  return "";
}

std::string_view advice(Shape s) {
  switch (s) {
    case Shape::queue:
      return "the wait is before the first token: shorten the input or lower the concurrency";
    case Shape::transport:
      return "something between the server and you holds chunks back and releases them "
             "together: look on the path for compression of the stream (nginx gzip, caddy "
             "encode, apache mod_deflate, express compression), proxy buffering (nginx "
             "proxy_buffering) or haproxy's batching (option http-no-delay)";
    case Shape::long_answer:
      return "the stream is healthy, the answer is just long: cap max_tokens";
    case Shape::shared_capacity:
      return "identical runs differ widely: the capacity is shared; report p95, not the mean";
    case Shape::generation:
      return "the model or server pauses mid-answer: stalls end with chunks at normal cadence, "
             "so nothing on the path held them; look at the server (batching, preemption, "
             "KV-cache pressure, tool calls)";
  }
  return "";
}

std::string_view to_string(Answer a) {
  switch (a) {
    case Answer::holds: return "holds";
    case Answer::not_holds: return "does not hold";
    case Answer::cannot_tell: return "cannot tell";
  }
  return "";
}

std::string_view mark(Answer a) {
  switch (a) {
    case Answer::holds: return "[x]";
    case Answer::not_holds: return "[ ]";
    case Answer::cannot_tell: return "[?]";
  }
  return "";
}

std::size_t held_together(const probe::ProbeResult& r) {
  const auto under_floor =
      std::count_if(r.gaps.begin(), r.gaps.end(), [](double g) { return g < kGapFloorSeconds; });
  return std::max(r.coalesced_chunks, static_cast<std::size_t>(under_floor));
}

bool is_all_at_once(const probe::ProbeResult& r) {
  if (r.chunks < 8) return false;
  const auto pairs = static_cast<double>(r.chunks - 1);
  return static_cast<double>(held_together(r)) >= 0.9 * pairs;
}

namespace {

// The release evidence of one probe, added to the window's.
// A source that pauses resumes at its cadence (0 released); the default
// burst of two is robust against a server that happens to send a pair together.
void add_release(const probe::ProbeResult& r, std::size_t burst_chunks, WindowStats& w,
                 std::size_t& pairs, std::size_t& coalesced) {
  w.stalls += r.stall_details.size();
  for (const auto& d : r.stall_details)
    if (d.released_chunks >= burst_chunks) ++w.burst_stalls;
  if (is_all_at_once(r)) ++w.buffered_probes;
  if (r.chunks > 1) pairs += r.chunks - 1;
  coalesced += r.coalesced_chunks;
  w.together_chunks += held_together(r);
}

}  // namespace

WindowStats window_stats(const std::vector<probe::ProbeResult>& probes,
                         const config::DiagnosisThresholds& thresholds) {
  WindowStats w;
  std::vector<double> ttft, duration, gaps, max_gaps, chunks, tokens_per_chunk;
  std::size_t pairs = 0, coalesced = 0;
  for (const auto& r : probes) {
    if (!counts_as_measurement(r)) continue;
    ++w.probes;
    add_release(r, static_cast<std::size_t>(thresholds.burst_chunks), w, pairs, coalesced);
    if (r.ttft) ttft.push_back(*r.ttft);
    duration.push_back(r.duration);
    gaps.insert(gaps.end(), r.gaps.begin(), r.gaps.end());
    if (r.gap_max) max_gaps.push_back(*r.gap_max);
    chunks.push_back(static_cast<double>(r.chunks));
    if (r.stalls > 0) ++w.stalled_probes;
    if (r.tokens_per_chunk) tokens_per_chunk.push_back(*r.tokens_per_chunk);
    w.stall_threshold = r.stall_threshold;
  }
  if (w.probes == 0) return w;
  w.ttft_p50 = percentile(ttft, 0.50);
  w.ttft_p95 = percentile(ttft, 0.95);
  w.duration_p50 = percentile(duration, 0.50);
  w.duration_p95 = percentile(duration, 0.95);
  if (!gaps.empty()) {
    std::sort(gaps.begin(), gaps.end());
    w.gap_p50 = probe::nearest_rank(gaps, 0.50);
    w.gap_p95 = probe::nearest_rank(gaps, 0.95);
    w.gap_max = gaps.back();
  }
  w.typical_max_gap = percentile(max_gaps, 0.50);
  w.stalled_share = static_cast<double>(w.stalled_probes) / static_cast<double>(w.probes);
  w.chunks_p50 = percentile(chunks, 0.50).value_or(0);
  w.tokens_per_chunk_p50 = percentile(tokens_per_chunk, 0.50);
  w.tokens_per_chunk_probes = tokens_per_chunk.size();
  if (pairs > 0) w.coalesced_share = static_cast<double>(coalesced) / static_cast<double>(pairs);
  w.chunk_pairs = pairs;
  return w;
}

namespace {

// The gap tail against the gap median (see docs/diagnosis.md, transport).
struct GapShape {
  double ratio = 0;            // pooled gap p95 / max(gap p50, floor)
  double max_ratio = 0;        // typical (median per-probe) max gap / max(gap p50, floor)
  bool fat_tail = false;       // p95/p50 at least the ratio
  bool fat_max = false;        // most streams have one pause that is a stall and >= ratio x p50
  bool stall_rule = false;     // stalls are exceptions (p50 below the threshold) and common enough
  bool all_in_bursts = false;  // many chunks, yet 95% of gaps under the floor
  bool holds() const { return fat_tail || fat_max || stall_rule || all_in_bursts; }
};

GapShape gap_shape(const WindowStats& w, const config::DiagnosisThresholds& t) {
  GapShape g;
  if (!w.gap_p50 || !w.gap_p95) return g;
  const double p50 = std::max(*w.gap_p50, kGapFloorSeconds);
  g.ratio = *w.gap_p95 / p50;
  const double typical_max = w.typical_max_gap.value_or(0);
  g.max_ratio = typical_max / p50;
  // A tail under the floor is no tail, however small the median.
  g.fat_tail = *w.gap_p95 >= kGapFloorSeconds && g.ratio >= t.transport_gap_ratio;
  // The largest gap of a long stream is an extreme value: a scheduling hiccup
  // of a few tens of ms makes it large against p50 in any healthy stream, so
  // it only counts when it is a stall.
  g.fat_max = typical_max >= w.stall_threshold && g.max_ratio >= t.transport_gap_ratio;
  g.stall_rule = w.stalled_probes > 0 && *w.gap_p50 < w.stall_threshold &&
                 w.stalled_share >= t.transport_min_stall_ratio;
  g.all_in_bursts = w.chunks_p50 >= 8 && *w.gap_p95 < kGapFloorSeconds;
  return g;
}

// Whether held data shows itself: stalls that end in bursts, chunks that
// share a read, answers that arrive all at once (docs/diagnosis.md).
struct Release {
  double burst_share = 0;     // burst stalls / stalls
  double buffered_share = 0;  // all-at-once answers / probes
  double coalesced_share = 0;
  bool bursts = false, coalesced = false, buffered = false;
  bool holds() const { return bursts || coalesced || buffered; }
};

Release release_of(const WindowStats& w, double share) {
  Release r;
  if (w.stalls > 0)
    r.burst_share = static_cast<double>(w.burst_stalls) / static_cast<double>(w.stalls);
  if (w.probes > 0)
    r.buffered_share = static_cast<double>(w.buffered_probes) / static_cast<double>(w.probes);
  r.coalesced_share = w.coalesced_share;
  r.bursts = w.stalls > 0 && r.burst_share >= share;
  r.coalesced = r.coalesced_share >= share;
  r.buffered = r.buffered_share >= share;
  return r;
}

// What every rule reads: the window's numbers, missing values as 0.
struct Evidence {
  const WindowStats& w;
  double probes, ttft50, ttft95, dur50, dur95, gap50, gap95, typical_max;
  double ttft_spread, dur_spread;  // p95/p50 (0 when p50 is 0)
  GapShape gaps;
  Release release;
  // The gaps are not flat and nothing says a hop held them: the source paused.
  bool source_pauses() const { return gaps.holds() && !release.holds(); }
  // The gaps are not flat (or the answer came at once) and a hop released held data.
  bool held_in_transit() const { return (gaps.holds() && release.holds()) || release.buffered; }
  // The whole answer came in one burst: what the source did (queue before the
  // first token, pauses mid-answer) is hidden behind the hop that held it.
  bool source_hidden() const { return gaps.all_in_bursts || release.buffered; }
  bool no_gaps() const { return !w.gap_p50.has_value(); }
};

Answer answer_of(bool holds) { return holds ? Answer::holds : Answer::not_holds; }

Evidence evidence_of(const WindowStats& w, const config::DiagnosisThresholds& t) {
  const double ttft50 = w.ttft_p50.value_or(0), ttft95 = w.ttft_p95.value_or(0);
  const double dur50 = w.duration_p50.value_or(0), dur95 = w.duration_p95.value_or(0);
  return {w,
          static_cast<double>(w.probes),
          ttft50,
          ttft95,
          dur50,
          dur95,
          w.gap_p50.value_or(0),
          w.gap_p95.value_or(0),
          w.typical_max_gap.value_or(0),
          ttft50 > 0 ? ttft95 / ttft50 : 0,
          dur50 > 0 ? dur95 / dur50 : 0,
          gap_shape(w, t),
          release_of(w, t.release_share)};
}

// The release evidence in words, for the transport and generation whys.
std::string release_why(const Evidence& e, const config::DiagnosisThresholds& t) {
  const Release& r = e.release;
  return fmt::format(
      "{} of {} stall{} ended in a burst (>= {} chunks right behind), {} of chunks came in "
      "their predecessor's read, {} of answers arrived all at once",
      e.w.burst_stalls, e.w.stalls, e.w.stalls == 1 ? "" : "s", t.burst_chunks,
      format_percent(r.coalesced_share), format_percent(r.buffered_share));
}

const char* cmp(bool above, const char* yes, const char* no) { return above ? yes : no; }

// The transport rule's why: the gap numbers, then which of its four ways held.
std::string transport_why(const Evidence& e, const config::DiagnosisThresholds& t) {
  const GapShape& g = e.gaps;
  std::vector<std::string> because;
  if (g.fat_tail)
    because.push_back(fmt::format("gap p95/p50 {} >= {}", format_ratio(g.ratio),
                                  format_ratio(t.transport_gap_ratio)));
  if (g.fat_max)
    because.push_back(fmt::format("a typical stream's largest gap is a stall, {} x p50 >= {}",
                                  format_ratio(g.max_ratio), format_ratio(t.transport_gap_ratio)));
  if (g.stall_rule)
    because.push_back(fmt::format("{} of probes stalled >= {}", format_percent(e.w.stalled_share),
                                  format_percent(t.transport_min_stall_ratio)));
  if (g.all_in_bursts)
    because.push_back(
        fmt::format("{} chunks per answer yet 95% of gaps under {}: the answer arrives in bursts",
                    format_number(e.w.chunks_p50), format_seconds(kGapFloorSeconds)));
  std::string why =
      !e.w.gap_p50
          ? std::string("no gaps (single-chunk answers)")
          : fmt::format(
                "gap p50 {}{}, p95 {} (p95/p50 {}), typical max {} (max/p50 {}), {} of "
                "probes stalled",
                format_seconds(e.gap50),
                e.gap50 < kGapFloorSeconds ? " (most chunks arrive together; ratios use 1 ms)" : "",
                format_seconds(e.gap95), format_ratio(g.ratio), format_seconds(e.typical_max),
                format_ratio(g.max_ratio), format_percent(e.w.stalled_share));
  for (std::size_t i = 0; i < because.size(); ++i) why += (i ? "; " : ": ") + because[i];
  if (because.empty() && e.w.gap_p50)
    why += fmt::format(": p95/p50 below {}, no typical stall, stalled share below {}",
                       format_ratio(t.transport_gap_ratio),
                       format_percent(t.transport_min_stall_ratio));
  return why + fmt::format("; TTFT p50 {}", format_seconds(e.ttft50));
}

// transport: the gap shape and the release evidence that says a hop held it.
std::string held_why(const Evidence& e, const config::DiagnosisThresholds& t) {
  std::string why = transport_why(e, t) + "; " + release_why(e, t);
  if (e.gaps.holds() && !e.release.holds())
    why += fmt::format(" (under {}: nothing was released at once, see generation)",
                       format_percent(t.release_share));
  if (e.release.buffered)
    why +=
        "; buffered: whether the server also queued cannot be seen from here; probe with "
        "accept_encoding: [identity] or around the proxy";
  return why;
}

// generation: the gap shape without release evidence.
std::string source_why(const Evidence& e, const config::DiagnosisThresholds& t) {
  std::string why = transport_why(e, t) + "; " + release_why(e, t);
  if (e.gaps.holds() && e.release.holds()) why += ": the pauses were held on the path (transport)";
  if (e.gaps.all_in_bursts)
    why += "; the answer arrived at once, so whether the source paused cannot be seen from here";
  return why;
}

using Thresholds = config::DiagnosisThresholds;
using Numbers = std::vector<std::pair<std::string, double>>;

// One shape: when it holds, why (in words, with the thresholds), and the numbers behind it.
struct Rule {
  Shape shape;
  Answer (*answer)(const Evidence&, const Thresholds&);
  std::string (*why)(const Evidence&, const Thresholds&);
  Numbers (*numbers)(const Evidence&, const Thresholds&);
};

// The numbers behind transport and generation: the gap shape and the
// release evidence that tells the two apart.
Numbers gap_numbers(const Evidence& e, const Thresholds& t) {
  return Numbers{{"probes", e.probes},
                 {"gap_p50_seconds", e.gap50},
                 {"gap_p95_seconds", e.gap95},
                 {"typical_max_gap_seconds", e.typical_max},
                 {"gap_p95_ratio", e.gaps.ratio},
                 {"max_gap_ratio", e.gaps.max_ratio},
                 {"stalled_share", e.w.stalled_share},
                 {"burst_stall_share", e.release.burst_share},
                 {"coalesced_share", e.release.coalesced_share},
                 {"all_at_once_share", e.release.buffered_share},
                 {"transport_gap_ratio", t.transport_gap_ratio},
                 {"transport_min_stall_ratio", t.transport_min_stall_ratio},
                 {"release_share", t.release_share}};
}

// The rules, in kAllShapes order. Thresholds are config values
// (`diagnosis:`, defaults in config.hpp and docs/diagnosis.md).
constexpr Rule kRules[] = {
    {// queue: TTFT high, gaps tight. An answer delivered in one burst has
     // "tight" gaps and a TTFT that contains the whole generation: that is
     // buffering (transport), not a queue.
     // A slow first token of an answer that came at once: cannot tell.
     Shape::queue,
     [](const Evidence& e, const Thresholds& t) {
       if (e.ttft50 <= t.queue_ttft_seconds) return Answer::not_holds;
       if (e.source_hidden()) return Answer::cannot_tell;
       return answer_of(e.gap95 < t.queue_gap_p95_seconds);
     },
     [](const Evidence& e, const Thresholds& t) {
       const bool slow = e.ttft50 > t.queue_ttft_seconds;
       const bool tight = e.gap95 < t.queue_gap_p95_seconds;
       return fmt::format("TTFT p50 {} {} {}; gap p95 {} {} {}{}", format_seconds(e.ttft50),
                          cmp(slow, ">", "<="), format_seconds(t.queue_ttft_seconds),
                          format_seconds(e.gap95), cmp(tight, "<", ">="),
                          format_seconds(t.queue_gap_p95_seconds),
                          slow && e.source_hidden()
                              ? " but the answer arrives in one burst, so the wait includes the "
                                "generation: buffered, whether the server also queued cannot "
                                "be seen from here; probe with accept_encoding: [identity] or "
                                "around the proxy"
                              : "");
     },
     [](const Evidence& e, const Thresholds& t) {
       return Numbers{{"probes", e.probes},
                      {"ttft_p50_seconds", e.ttft50},
                      {"gap_p95_seconds", e.gap95},
                      {"queue_ttft_seconds", t.queue_ttft_seconds},
                      {"queue_gap_p95_seconds", t.queue_gap_p95_seconds}};
     }},
    {// transport: the gap tail is fat against the gap median, in any of
     // four ways (GapShape: fat tail, a typical stall, common stalls, bursts).
     // Held in transit: it also needs release evidence (Release: stalls
     // that end in bursts, chunks sharing reads, answers all at once).
     // Single-chunk answers have no gaps to read: cannot tell.
     Shape::transport,
     [](const Evidence& e, const Thresholds&) {
       return e.no_gaps() ? Answer::cannot_tell : answer_of(e.held_in_transit());
     },
     held_why, gap_numbers},
    {// long answer: TTFT and gaps flat, duration still high.
     Shape::long_answer,
     [](const Evidence& e, const Thresholds& t) {
       return answer_of(e.dur50 > t.long_answer_duration_seconds && !e.gaps.holds() &&
                        e.ttft50 <= t.queue_ttft_seconds);
     },
     [](const Evidence& e, const Thresholds& t) {
       return fmt::format(
           "duration p50 {} {} {}; {} chunks per answer; gaps {}; TTFT p50 {} {} {}",
           format_seconds(e.dur50), cmp(e.dur50 > t.long_answer_duration_seconds, ">", "<="),
           format_seconds(t.long_answer_duration_seconds), format_number(e.w.chunks_p50),
           e.gaps.holds() ? "not flat (transport)" : "flat", format_seconds(e.ttft50),
           cmp(e.ttft50 <= t.queue_ttft_seconds, "<=", ">"), format_seconds(t.queue_ttft_seconds));
     },
     [](const Evidence& e, const Thresholds& t) {
       return Numbers{{"probes", e.probes},
                      {"duration_p50_seconds", e.dur50},
                      {"chunks_p50", e.w.chunks_p50},
                      {"ttft_p50_seconds", e.ttft50},
                      {"long_answer_duration_seconds", t.long_answer_duration_seconds}};
     }},
    {// shared capacity: identical runs spread widely (p95/p50 of TTFT or duration).
     Shape::shared_capacity,
     [](const Evidence& e, const Thresholds& t) {
       return answer_of(e.ttft_spread > t.spread_ratio || e.dur_spread > t.spread_ratio);
     },
     [](const Evidence& e, const Thresholds& t) {
       return fmt::format(
           "TTFT p95/p50 {} ({} / {}) {} {}; duration p95/p50 {} ({} / {}) {} {}",
           format_ratio(e.ttft_spread), format_seconds(e.ttft95), format_seconds(e.ttft50),
           cmp(e.ttft_spread > t.spread_ratio, ">", "<="), format_ratio(t.spread_ratio),
           format_ratio(e.dur_spread), format_seconds(e.dur95), format_seconds(e.dur50),
           cmp(e.dur_spread > t.spread_ratio, ">", "<="), format_ratio(t.spread_ratio));
     },
     [](const Evidence& e, const Thresholds& t) {
       return Numbers{{"probes", e.probes},
                      {"ttft_p50_seconds", e.ttft50},
                      {"ttft_p95_seconds", e.ttft95},
                      {"duration_p50_seconds", e.dur50},
                      {"duration_p95_seconds", e.dur95},
                      {"ttft_spread_ratio", e.ttft_spread},
                      {"duration_spread_ratio", e.dur_spread},
                      {"spread_ratio", t.spread_ratio}};
     }},
    {// generation: the gaps are not flat and nothing was released at once:
     // the source paused and resumed at its cadence.
     // Behind a hop that delivered the whole answer in one burst (95% of
     // gaps under 1 ms), or without gaps, whether the source paused cannot
     // be seen. Batches (haproxy's ~200 ms) still show longer pauses.
     Shape::generation,
     [](const Evidence& e, const Thresholds&) {
       if (e.no_gaps() || e.gaps.all_in_bursts) return Answer::cannot_tell;
       return answer_of(e.source_pauses());
     },
     source_why, gap_numbers},
};
static_assert(std::size(kRules) == kAllShapes.size());

// --- the one-line evidence of each verdict -----------------------------------

// "48 of 59 chunks arrived together" (all probes of the window).
std::string together_text(const WindowStats& w) {
  return fmt::format("{} of {} chunks arrived together", w.together_chunks, w.chunk_pairs);
}

std::string queue_evidence(const Evidence& e, const Thresholds& t, Answer a) {
  if (a == Answer::cannot_tell)
    return fmt::format(
        "TTFT p50 {}, but each answer came at once: a queue behind the hop that "
        "held it cannot be seen",
        format_seconds(e.ttft50));
  if (e.ttft50 <= t.queue_ttft_seconds)
    return fmt::format("TTFT p50 {} <= {}", format_seconds(e.ttft50),
                       format_seconds(t.queue_ttft_seconds));
  return fmt::format("TTFT p50 {} > {}, gap p95 {} {} {}", format_seconds(e.ttft50),
                     format_seconds(t.queue_ttft_seconds), format_seconds(e.gap95),
                     cmp(a == Answer::holds, "<", ">="), format_seconds(t.queue_gap_p95_seconds));
}

// What was held: answers all at once, stalls that ended in bursts, chunks together.
std::string transport_evidence(const Evidence& e, const Thresholds&, Answer a) {
  if (e.no_gaps()) return "single-chunk answers: no gaps to read";
  const WindowStats& w = e.w;
  std::string held = together_text(w);
  if (e.release.buffered)
    held =
        fmt::format("{} of {} answers arrived all at once ({})", w.buffered_probes, w.probes, held);
  std::string bursts =
      w.stalls == 0 ? std::string("no stall")
                    : fmt::format("{} of {} stalls ended in a burst", w.burst_stalls, w.stalls);
  if (a == Answer::holds) return held + "; " + bursts;
  return fmt::format("nothing held: {}; {}", held, bursts);
}

std::string generation_evidence(const Evidence& e, const Thresholds&, Answer a) {
  if (e.no_gaps()) return "single-chunk answers: no gaps to read";
  if (a == Answer::cannot_tell)
    return "each answer came at once: whether the source paused cannot be seen";
  const WindowStats& w = e.w;
  const std::string stalled =
      fmt::format("{} of {} probes stalled (typical worst gap {})", w.stalled_probes, w.probes,
                  format_seconds(e.typical_max));
  if (a == Answer::holds) return stalled + "; streams resumed at their cadence, none held";
  if (e.gaps.holds()) return stalled + "; the pauses were held on the path (transport)";
  return fmt::format("gaps flat: p95 {} against p50 {}; {}", format_seconds(e.gap95),
                     format_seconds(e.gap50), stalled);
}

std::string long_answer_evidence(const Evidence& e, const Thresholds& t, Answer) {
  return fmt::format("duration p50 {} {} {}, {} chunks per answer, gaps {}",
                     format_seconds(e.dur50),
                     cmp(e.dur50 > t.long_answer_duration_seconds, ">", "<="),
                     format_seconds(t.long_answer_duration_seconds), format_number(e.w.chunks_p50),
                     e.gaps.holds() ? "not flat" : "flat");
}

std::string spread_evidence(const Evidence& e, const Thresholds& t, Answer) {
  const bool by_ttft = e.ttft_spread >= e.dur_spread;
  return fmt::format("{} p95/p50 {} ({} / {}) {} {}", by_ttft ? "TTFT" : "duration",
                     format_ratio(by_ttft ? e.ttft_spread : e.dur_spread),
                     format_seconds(by_ttft ? e.ttft95 : e.dur95),
                     format_seconds(by_ttft ? e.ttft50 : e.dur50),
                     cmp((by_ttft ? e.ttft_spread : e.dur_spread) > t.spread_ratio, ">", "<="),
                     format_ratio(t.spread_ratio));
}

std::string evidence_line(Shape s, const Evidence& e, const Thresholds& t, Answer a) {
  switch (s) {
    case Shape::queue: return queue_evidence(e, t, a);
    case Shape::transport: return transport_evidence(e, t, a);
    case Shape::long_answer: return long_answer_evidence(e, t, a);
    case Shape::shared_capacity: return spread_evidence(e, t, a);
    case Shape::generation: return generation_evidence(e, t, a);
  }
  return "";
}

// Too few successful probes: every shape says so instead of guessing.
std::vector<Verdict> no_verdicts(const WindowStats& w, const Thresholds& t) {
  std::vector<Verdict> out;
  out.reserve(kAllShapes.size());
  const std::string why = fmt::format("no verdict: {} successful probe{}, {} needed", w.probes,
                                      w.probes == 1 ? "" : "s", t.min_probes);
  for (Shape s : kAllShapes)
    out.push_back(
        {s, Answer::cannot_tell, false, why, why, {{"probes", static_cast<double>(w.probes)}}});
  return out;
}

}  // namespace

std::vector<Verdict> diagnose(const WindowStats& w, const config::DiagnosisThresholds& t) {
  if (w.probes < static_cast<std::size_t>(std::max(t.min_probes, 1))) return no_verdicts(w, t);
  const Evidence e = evidence_of(w, t);
  std::vector<Verdict> out;
  for (const Rule& rule : kRules) {
    const Answer a = rule.answer(e, t);
    out.push_back({rule.shape, a, true, rule.why(e, t), evidence_line(rule.shape, e, t, a),
                   rule.numbers(e, t)});
  }
  return out;
}

std::vector<Verdict> diagnose(const std::vector<probe::ProbeResult>& probes,
                              const config::DiagnosisThresholds& thresholds) {
  return diagnose(window_stats(probes, thresholds), thresholds);
}

std::vector<Note> notes(const WindowStats& w, const config::DiagnosisThresholds& t) {
  std::vector<Note> out;
  if (w.tokens_per_chunk_p50) {
    const double n = *w.tokens_per_chunk_p50;
    // Batching (>= ratio) or tokens cut across chunks (<= 1/ratio); 0 tokens
    // a chunk is a server that reports no output tokens, not a batch.
    if (n >= t.tokens_per_chunk_ratio || (n > 0 && n <= 1 / t.tokens_per_chunk_ratio))
      out.push_back({"tokens_per_chunk",
                     fmt::format("the server sends {} tokens per chunk: gaps are per chunk, not "
                                 "per token (tokens/s stays right)",
                                 format_number(n)),
                     {{"tokens_per_chunk_p50", n},
                      {"probes", static_cast<double>(w.tokens_per_chunk_probes)},
                      {"tokens_per_chunk_ratio", t.tokens_per_chunk_ratio}}});
  }
  return out;
}

}  // namespace lse::report
