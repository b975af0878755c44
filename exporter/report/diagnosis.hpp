// The four-shape diagnosis of DESIGN §7 over a window of probes of one
// target+prompt: queue, transport, long answer, shared capacity. Pure
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

enum class Shape { queue, transport, long_answer, shared_capacity };
inline constexpr std::array<Shape, 4> kAllShapes = {Shape::queue, Shape::transport,
                                                    Shape::long_answer, Shape::shared_capacity};

// Stable identifiers (metric label values, JSON): queue, transport, long_answer, shared_capacity.
std::string_view to_string(Shape s);
// For people: "queue", "transport", "long answer", "shared capacity".
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
};
WindowStats window_stats(const std::vector<probe::ProbeResult>& probes);

struct Verdict {
  Shape shape = Shape::queue;
  bool holds = false;
  bool enough_probes = true;  // false: fewer than min_probes successful probes, no verdict
  std::string why;            // plain words with the numbers and the thresholds they met or missed
  // The numbers behind the verdict (name -> value, seconds or ratios), for JSON and dashboards.
  std::vector<std::pair<std::string, double>> numbers;
};

// One verdict per shape, in kAllShapes order. `probes` is one target+prompt
// window; failed and warmup probes are ignored.
std::vector<Verdict> diagnose(const std::vector<probe::ProbeResult>& probes,
                              const config::DiagnosisThresholds& thresholds);

// The same, from precomputed window statistics.
std::vector<Verdict> diagnose(const WindowStats& w, const config::DiagnosisThresholds& t);

// Below this a gap counts as "no pause" when forming ratios: several events
// delivered by one read have a 0 gap (DESIGN §2), and p95/0 says nothing more.
inline constexpr double kGapFloorSeconds = 0.001;

}  // namespace lse::report
