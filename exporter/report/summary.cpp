// summarize(): group the probes into series, derive every figure and verdict,
// and make the strings a reader sees, once. The renderers live in
// summary_text.cpp, summary_json.cpp and html.cpp.
#include "report/summary.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <tuple>

#include "report/format.hpp"

namespace lse::report {
namespace {

using SeriesIndex = std::map<std::pair<std::string, std::string>, std::size_t>;

SeriesSummary& series_for(Summary& s, SeriesIndex& index, const std::string& target,
                          const std::string& prompt) {
  auto [it, fresh] = index.emplace(std::make_pair(target, prompt), s.series.size());
  if (fresh) {
    s.series.emplace_back();
    s.series.back().target = target;
    s.series.back().prompt = prompt;
  }
  return s.series[it->second];
}

// One measured probe into its series and the totals.
void count_probe(Summary& s, SeriesSummary& ss, const probe::ProbeResult& r) {
  if (!r.model.empty()) ss.model = r.model;
  ss.stall_threshold = r.stall_threshold;
  ++ss.runs;
  ++s.runs;
  if (r.ok) {
    ++ss.ok;
    ++s.ok;
  } else {
    ++ss.failures[r.reason];
    ++s.failures[r.reason];
    if (ss.failure_example.empty()) ss.failure_example = r.error_detail;
  }
  ss.probes.push_back(r);
}

std::vector<ReasonCount> by_reason_name(const FailureCounts& failures) {
  std::vector<ReasonCount> list;
  for (const auto& [reason, n] : failures) list.push_back({probe::to_string(reason), n});
  std::sort(list.begin(), list.end(),
            [](const ReasonCount& a, const ReasonCount& b) { return a.reason < b.reason; });
  return list;
}

FieldCells cells_of(Field f, const Spread& sp) {
  if (sp.n == 0) return {};
  auto cell = [f](double v) { return is_time(f) ? format_seconds(v) : format_number(v); };
  return {sp.n, cell(sp.p50), cell(sp.p95), cell(sp.max)};
}

// The figures of one series from its probes, then the strings made of them.
void finish_series(SeriesSummary& ss, const config::DiagnosisThresholds& thresholds) {
  for (std::size_t i = 0; i < std::size(kAllFields); ++i) {
    ss.fields[i] = spread_of(field_values(ss.probes, kAllFields[i]));
    ss.cells[i] = cells_of(kAllFields[i], ss.fields[i]);
  }
  ss.window = window_stats(ss.probes, thresholds);
  ss.diagnosis = diagnose(ss.window, thresholds);
  ss.notes = notes(ss.window, thresholds);
  ss.model_label = ss.model.empty() ? "-" : ss.model;
  ss.failure_list = by_reason_name(ss.failures);
  ss.failures_text = join_failures(ss.failure_list);
  ss.shapes = shapes_held(ss.diagnosis);
  ss.verdict = verdict_words(ss.diagnosis);
  ss.stall_threshold_text = format_seconds(ss.stall_threshold);
}

}  // namespace

std::string shapes_held(const std::vector<Verdict>& verdicts) {
  std::string out;
  for (const auto& v : verdicts) {
    if (!v.enough_probes) return "no verdict";
    if (v.holds()) out += (out.empty() ? "" : ", ") + std::string(title(v.shape));
  }
  return out.empty() ? "none" : out;
}

std::string verdict_words(const std::vector<Verdict>& verdicts) {
  std::string out = shapes_held(verdicts);
  if (out == "no verdict") return out;
  std::string unknown;
  for (const auto& v : verdicts)
    if (v.cannot_tell())
      unknown += (unknown.empty() ? "" : ", ") + std::string(title(v.shape)) + "?";
  if (unknown.empty()) return out;
  return out == "none" ? unknown : out + ", " + unknown;
}

std::string join_failures(const std::vector<ReasonCount>& list, std::string_view separator) {
  std::string out;
  for (const auto& [reason, n] : list)
    out += fmt::format("{}{}{}{}", out.empty() ? "" : ", ", reason, separator, n);
  return out;
}

Summary summarize(const std::vector<probe::ProbeResult>& results,
                  const config::DiagnosisThresholds& thresholds, const SeriesOrder& order) {
  Summary s;
  SeriesIndex index;
  for (const auto& [target, prompt] : order) series_for(s, index, target, prompt);
  const auto ordered = static_cast<std::ptrdiff_t>(s.series.size());
  for (const auto& r : results) {
    if (r.warmup)
      ++s.warmup_discarded;
    else if (!probe::was_canceled(r))  // no failure: it measured nothing
      count_probe(s, series_for(s, index, r.target, r.prompt), r);
  }
  std::sort(s.series.begin() + ordered, s.series.end(),
            [](const SeriesSummary& a, const SeriesSummary& b) {
              return std::tie(a.target, a.prompt) < std::tie(b.target, b.prompt);
            });
  for (auto& ss : s.series) finish_series(ss, thresholds);
  s.failure_list = by_reason_name(s.failures);
  s.failures_text = join_failures(s.failure_list);
  return s;
}

}  // namespace lse::report
