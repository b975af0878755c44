// The summary of an experiment (DESIGN §5, issue 3 point 3): per target and
// prompt, per field, p50 / p95 / max across the measured runs, failures by
// reason, and the diagnosis of each series. Rendered as a text table or JSON.
#pragma once
#include <utility>
#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "probe/result.hpp"
#include "report/diagnosis.hpp"
#include "report/stats.hpp"
#include "util/json.hpp"

namespace lse::report {

// One target+prompt.
struct SeriesSummary {
  std::string target, model, prompt;
  std::size_t runs = 0;  // measured (non-warmup) probes, successful or not
  std::size_t ok = 0;
  std::map<std::string, std::size_t> failures;         // reason -> count
  std::string failure_example;                         // detail of the first failure, secret-free
  std::array<Spread, std::size(kAllFields)> fields{};  // indexed like kAllFields
  std::vector<Verdict> diagnosis;
  double stall_threshold = 0.25;           // seconds
  std::vector<probe::ProbeResult> probes;  // the measured probes, in the order they ran

  const Spread& field(Field f) const { return fields[static_cast<std::size_t>(f)]; }
};

struct Summary {
  std::vector<SeriesSummary> series;
  std::size_t runs = 0, ok = 0;
  std::size_t warmup_discarded = 0;
  std::map<std::string, std::size_t> failures;  // reason -> count, all series
};

using SeriesOrder = std::vector<std::pair<std::string, std::string>>;  // (target, prompt)

// Groups `results` by target+prompt: series named in `order` first, in that
// order, then any others sorted by name. Warmup probes are only counted.
Summary summarize(const std::vector<probe::ProbeResult>& results,
                  const config::DiagnosisThresholds& thresholds, const SeriesOrder& order = {});

// The text table for stdout (fixed-width columns, one block per series,
// diagnosis lines under each block).
std::string render_table(const Summary& summary);

// Machine-readable: {"runs","ok","warmup_discarded","failures":{},"series":[{...}]}.
// Times in milliseconds with a _ms suffix, like the raw rows.
json::Value to_json(const Summary& summary);

// The diagnosis of one series as JSON: [{"shape","holds","enough_probes","why","numbers":{}}].
json::Value to_json(const std::vector<Verdict>& verdicts);

// "transport, shared capacity" or "none" (or "no verdict" when too few probes).
std::string shapes_held(const std::vector<Verdict>& verdicts);

}  // namespace lse::report
