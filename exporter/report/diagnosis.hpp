// The diagnosis of DESIGN §7 over a window of probes of one target+prompt:
// queue, transport, long answer, shared capacity, generation. Pure
// functions of ProbeResults and thresholds, shared by `run` (printed, HTML)
// and `serve` (llm_stream_diagnosis gauges). Rules and defaults are
// documented in docs/diagnosis.md.
#pragma once
#include <utility>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "probe/result.hpp"

namespace lse::report {

enum class Shape { queue, transport, long_answer, shared_capacity, generation };
inline constexpr std::array<Shape, 5> kAllShapes = {
    Shape::queue, Shape::transport, Shape::long_answer, Shape::shared_capacity, Shape::generation};

// Stable identifiers (metric label values, JSON): queue, transport, long_answer,
// shared_capacity, generation.
std::string_view to_string(Shape s);
// For people: "queue", "transport", "long answer", "shared capacity", "generation".
std::string_view title(Shape s);
// What to do about it, one short sentence.
std::string_view advice(Shape s);

// A window's numbers, from its successful non-warmup probes. Gap statistics
// pool every gap of every probe (like the gap histogram does).
struct WindowStats {
  std::size_t probes = 0;                    // successful, non-warmup
  std::optional<double> ttft_p50, ttft_p95;  // seconds
  std::optional<double> duration_p50, duration_p95;
  std::optional<double> gap_p50, gap_p95, gap_max;  // pooled over all gaps
  std::optional<double> typical_max_gap;            // median of the per-probe largest gaps
  std::size_t stalled_probes = 0;                   // probes with >= 1 stall
  double stalled_share = 0;                         // stalled_probes / probes
  double chunks_p50 = 0;
  double stall_threshold = 0.25;  // of the newest probe (seconds)
  // Release evidence (how held data shows itself, ProbeResult::stall_details):
  std::size_t stalls = 0;           // every stall of the window
  std::size_t burst_stalls = 0;     // stalls that ended with >= burst_chunks released
  std::size_t buffered_probes = 0;  // answers that arrived all at once (is_all_at_once)
  double coalesced_share = 0;       // chunks in their predecessor's read / chunk pairs
  std::size_t together_chunks = 0;  // chunks held together (held_together), all probes
  std::size_t chunk_pairs = 0;      // chunks after the first, all probes
  // Completion tokens per content chunk: the median over the probes that
  // know it (usage reported), and how many did.
  std::optional<double> tokens_per_chunk_p50;
  std::size_t tokens_per_chunk_probes = 0;
};
WindowStats window_stats(const std::vector<probe::ProbeResult>& probes,
                         const config::DiagnosisThresholds& thresholds = {});

// What a rule says of its shape: it holds, it does not, or the probes cannot
// tell (the evidence is hidden, e.g. a queue behind a buffer that delivers
// the whole answer at once; or there are too few probes). JSON true / false /
// null, table [x] / [ ] / [?].
enum class Answer { not_holds, holds, cannot_tell };  // zero (value-initialised) is not_holds

// "holds", "does not hold", "cannot tell".
std::string_view to_string(Answer a);
// "[x]", "[ ]", "[?]".
std::string_view mark(Answer a);

struct Verdict {
  Shape shape = Shape::queue;
  Answer answer = Answer::not_holds;
  bool enough_probes = true;  // false: fewer than min_probes successful probes (cannot_tell)
  std::string why;            // plain words with the numbers and the thresholds they met or missed
  // One short line (under 100 columns) with the evidence that decided it, for
  // the terminal summary and the pages: "48 of 59 chunks arrived together".
  std::string evidence;
  // The numbers behind the verdict (name -> value, seconds or ratios), for JSON and dashboards.
  std::vector<std::pair<std::string, double>> numbers;

  bool holds() const { return answer == Answer::holds; }
  bool cannot_tell() const { return answer == Answer::cannot_tell; }
};

// One verdict per shape, in kAllShapes order. `probes` is one target+prompt
// window; failed and warmup probes are ignored.
std::vector<Verdict> diagnose(const std::vector<probe::ProbeResult>& probes,
                              const config::DiagnosisThresholds& thresholds);

// The same, from precomputed window statistics.
std::vector<Verdict> diagnose(const WindowStats& w, const config::DiagnosisThresholds& t);

// A remark beside the verdicts: a fact about the window that changes how
// its figures read, not a shape (the diagnosis gauge's shapes stay five).
struct Note {
  std::string_view id;  // stable: "tokens_per_chunk"
  std::string text;     // one line for people, under 100 columns
  // The numbers behind it (name -> value), for JSON.
  std::vector<std::pair<std::string, double>> numbers;
};

// The notes of a window, in a fixed order; empty when nothing is worth saying.
// tokens_per_chunk: the median tokens per chunk is >= tokens_per_chunk_ratio
// or <= its inverse: "the server sends 4 tokens per chunk: gaps are per
// chunk, not per token (tokens/s stays right)". Read from the probes that
// know their usage, however few: a fact, not a verdict.
std::vector<Note> notes(const WindowStats& w, const config::DiagnosisThresholds& t);

// Below this a gap counts as "no pause" when forming ratios: several events
// delivered by one read have a 0 gap (DESIGN §2), and p95/0 says nothing more.
inline constexpr double kGapFloorSeconds = 0.001;

// An answer that arrived all at once: enough chunks to tell and nearly all
// of them held together, i.e. in their predecessor's read or under 1 ms
// behind it. A long wait before the first chunk is not evidence of holding:
// a model that thinks for 6 s and then streams at its cadence is not held.
bool is_all_at_once(const probe::ProbeResult& r);

// Chunks of `r` that arrived together with the one before: in its read, or
// under kGapFloorSeconds behind it.
std::size_t held_together(const probe::ProbeResult& r);

}  // namespace lse::report
