// The summary of an experiment (DESIGN §5, issue 3 point 3): per target and
// prompt, per field, p50 / p95 / max across the measured runs, failures by
// reason, and the diagnosis of each series.
//
// Computed once, rendered many (issue 14 §2): summarize() derives every
// figure, verdict and reader-facing string once; the text table
// (summary_text.cpp), the JSON (summary_json.cpp) and the HTML report
// (html.cpp) only lay that view out, so every output shows the same numbers.
#pragma once
#include <utility>
#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "probe/result.hpp"
#include "report/diagnosis.hpp"
#include "report/stats.hpp"
#include "util/json.hpp"

namespace lse::report {

// Failures by reason: the enum of DESIGN §3 (names only when rendering).
using FailureCounts = std::map<probe::FailureReason, std::size_t>;

// One reason of a failure list as a reader sees it; lists are in
// alphabetical order of the reason names.
struct ReasonCount {
  std::string_view reason;
  std::size_t count = 0;
};

// One field as a reader sees it: p50 / p95 / max formatted for people
// ("20.3 ms", "12"); empty strings when n == 0.
struct FieldCells {
  std::size_t n = 0;
  std::string p50, p95, max;
};

// One target+prompt.
struct SeriesSummary {
  // The figures.
  std::string target, model, prompt;
  std::size_t runs = 0;  // measured (non-warmup) probes, successful or not
  std::size_t ok = 0;
  FailureCounts failures;
  std::string failure_example;                         // detail of the first failure, secret-free
  std::array<Spread, std::size(kAllFields)> fields{};  // indexed like kAllFields
  std::vector<Verdict> diagnosis;
  std::vector<Note> notes;                 // beside the verdicts (report::notes)
  WindowStats window;                      // pooled over the successful probes
  double stall_threshold = 0.25;           // seconds
  std::vector<probe::ProbeResult> probes;  // the measured probes, in the order they ran

  // The strings a reader sees, made from the figures by summarize().
  std::string model_label = "-";                          // the model, or "-" when unknown
  std::array<FieldCells, std::size(kAllFields)> cells{};  // indexed like kAllFields
  std::vector<ReasonCount> failure_list;                  // `failures`, by reason name
  std::string failures_text;                              // "connect 1, timeout_idle 2" or ""
  std::string shapes;                                     // shapes_held(diagnosis)
  std::string verdict;                                    // verdict_words(diagnosis)
  std::string stall_threshold_text;                       // "250.0 ms"

  const Spread& field(Field f) const { return fields[static_cast<std::size_t>(f)]; }
  const FieldCells& cell(Field f) const { return cells[static_cast<std::size_t>(f)]; }
};

struct Summary {
  std::vector<SeriesSummary> series;
  std::size_t runs = 0, ok = 0;
  std::size_t warmup_discarded = 0;
  FailureCounts failures;                 // all series
  std::vector<ReasonCount> failure_list;  // `failures`, by reason name
  std::string failures_text;              // "connect 1, timeout_idle 2" or ""
};

using SeriesOrder = std::vector<std::pair<std::string, std::string>>;  // (target, prompt)

// Groups `results` by target+prompt: series named in `order` first, in that
// order, then any others sorted by name. Warmup probes are only counted.
Summary summarize(const std::vector<probe::ProbeResult>& results,
                  const config::DiagnosisThresholds& thresholds, const SeriesOrder& order = {});

struct TableOptions {
  // false: one line per series (target, prompt, runs ok, TTFT p50/p95, gap
  // p95, worst gap, stalls, verdict), then one line of evidence per verdict
  // that holds or cannot be told, and one per series with failures.
  // true: a block per series, every field's p50/p95/max and every rule with
  // its numbers, its [x] / [ ] / [?] and what to do.
  bool explain = false;
};

// The text table for stdout.
std::string render_table(const Summary& summary, const TableOptions& options = {});

// Machine-readable: {"runs","ok","warmup_discarded","failures":{},"series":[{...}]}.
// Times in milliseconds with a _ms suffix, like the raw rows.
json::Value to_json(const Summary& summary);

// The diagnosis of one series as JSON: [{"shape","holds","enough_probes","why","evidence",
// "numbers":{}}]; holds is true, false or null (cannot tell).
json::Value to_json(const std::vector<Verdict>& verdicts);

// The notes of one series as JSON: [{"note","text","numbers":{}}].
json::Value to_json(const std::vector<Note>& notes);

// "transport, shared capacity" or "none" (or "no verdict" when too few probes).
std::string shapes_held(const std::vector<Verdict>& verdicts);

// shapes_held, then each shape that cannot be told with a "?":
// "transport, queue?"; "none", "no verdict".
std::string verdict_words(const std::vector<Verdict>& verdicts);

// "connect 1, timeout_idle 2": `separator` goes between a reason and its count.
std::string join_failures(const std::vector<ReasonCount>& list, std::string_view separator = " ");

}  // namespace lse::report
