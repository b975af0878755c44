// Grouping, spreads, and the two renderings of a Summary.
#include "report/summary.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <set>
#include <tuple>

#include "report/format.hpp"

namespace lse::report {
namespace {

std::string json_key(Field f) {
  switch (f) {
    case Field::tokens_per_second: return "tokens_per_second";
    default: break;
  }
  std::string k(to_string(f));
  return is_time(f) ? k + "_ms" : k;
}

std::string cell(Field f, double v) {
  if (is_time(f)) return format_seconds(v);
  return format_number(v);
}

}  // namespace

std::string shapes_held(const std::vector<Verdict>& verdicts) {
  std::string out;
  for (const auto& v : verdicts) {
    if (!v.enough_probes) return "no verdict";
    if (v.holds) out += (out.empty() ? "" : ", ") + std::string(title(v.shape));
  }
  return out.empty() ? "none" : out;
}

Summary summarize(const std::vector<probe::ProbeResult>& results,
                  const config::DiagnosisThresholds& thresholds, const SeriesOrder& order) {
  Summary s;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  auto series_for = [&](const std::string& target, const std::string& prompt) -> SeriesSummary& {
    auto [it, fresh] = index.emplace(std::make_pair(target, prompt), s.series.size());
    if (fresh) {
      s.series.emplace_back();
      s.series.back().target = target;
      s.series.back().prompt = prompt;
    }
    return s.series[it->second];
  };
  for (const auto& [target, prompt] : order) series_for(target, prompt);
  const std::size_t ordered = s.series.size();

  for (const auto& r : results) {
    if (r.warmup) {
      ++s.warmup_discarded;
      continue;
    }
    SeriesSummary& ss = series_for(r.target, r.prompt);
    if (!r.model.empty()) ss.model = r.model;
    ss.stall_threshold = r.stall_threshold;
    ++ss.runs;
    ++s.runs;
    if (r.ok) {
      ++ss.ok;
      ++s.ok;
    } else {
      const std::string reason(probe::to_string(r.reason));
      ++ss.failures[reason];
      ++s.failures[reason];
      if (ss.failure_example.empty()) ss.failure_example = r.error_detail;
    }
    ss.probes.push_back(r);
  }
  std::sort(s.series.begin() + static_cast<std::ptrdiff_t>(ordered), s.series.end(),
            [](const SeriesSummary& a, const SeriesSummary& b) {
              return std::tie(a.target, a.prompt) < std::tie(b.target, b.prompt);
            });
  for (auto& ss : s.series) {
    for (std::size_t i = 0; i < std::size(kAllFields); ++i)
      ss.fields[i] = spread_of(field_values(ss.probes, kAllFields[i]));
    ss.diagnosis = diagnose(ss.probes, thresholds);
  }
  return s;
}

std::string render_table(const Summary& s) {
  std::string out;
  for (const auto& ss : s.series) {
    out += fmt::format("target {}  model {}  prompt {}  ({} run{}, {} ok)\n", ss.target,
                       ss.model.empty() ? "-" : ss.model, ss.prompt, ss.runs,
                       ss.runs == 1 ? "" : "s", ss.ok);
    if (ss.ok == 0) {
      out += "  no successful run: nothing measured\n";
    } else {
      out += fmt::format("  {:<10} {:>11} {:>11} {:>11}\n", "field", "p50", "p95", "max");
    }
    for (std::size_t i = 0; i < std::size(kAllFields); ++i) {
      const Field f = kAllFields[i];
      const Spread& sp = ss.fields[i];
      if (ss.ok == 0) break;
      if (sp.n == 0) {
        out += fmt::format("  {:<10} {:>11} {:>11} {:>11}\n", to_string(f), "-", "-", "-");
        continue;
      }
      out += fmt::format("  {:<10} {:>11} {:>11} {:>11}\n", to_string(f), cell(f, sp.p50),
                         cell(f, sp.p95), cell(f, sp.max));
    }
    if (ss.failures.empty()) {
      out += "  failures: none\n";
    } else {
      std::string list;
      for (const auto& [reason, n] : ss.failures)
        list += fmt::format("{}{} {}", list.empty() ? "" : ", ", reason, n);
      out += fmt::format("  failures: {}{}\n", list,
                         ss.failure_example.empty() ? "" : " (first: " + ss.failure_example + ")");
    }
    const std::string held = shapes_held(ss.diagnosis);
    out += fmt::format("  diagnosis: {}\n", held);
    for (const auto& v : ss.diagnosis) {
      if (!v.enough_probes) {
        out += fmt::format("    {}\n", v.why);
        break;
      }
      out += fmt::format("    {} {:<15} {}\n", v.holds ? "[x]" : "[ ]", title(v.shape), v.why);
    }
    for (const auto& v : ss.diagnosis)
      if (v.holds) out += fmt::format("    -> {}: {}\n", title(v.shape), advice(v.shape));
    out += "\n";
  }
  std::string failures;
  for (const auto& [reason, n] : s.failures)
    failures += fmt::format("{}{} {}", failures.empty() ? "" : ", ", reason, n);
  out += fmt::format("total: {} run{}, {} ok, {} failed{}; {} warmup run{} discarded\n", s.runs,
                     s.runs == 1 ? "" : "s", s.ok, s.runs - s.ok,
                     failures.empty() ? "" : " (" + failures + ")", s.warmup_discarded,
                     s.warmup_discarded == 1 ? "" : "s");
  return out;
}

json::Value to_json(const std::vector<Verdict>& verdicts) {
  json::Array arr;
  for (const auto& v : verdicts) {
    json::Object numbers;
    for (const auto& [k, x] : v.numbers) numbers.emplace_back(k, x);
    arr.push_back(json::Object{{"shape", std::string(to_string(v.shape))},
                               {"holds", v.holds},
                               {"enough_probes", v.enough_probes},
                               {"why", v.why},
                               {"numbers", std::move(numbers)}});
  }
  return arr;
}

json::Value to_json(const Summary& s) {
  auto failures_json = [](const std::map<std::string, std::size_t>& m) {
    json::Object o;
    for (const auto& [k, n] : m) o.emplace_back(k, static_cast<std::int64_t>(n));
    return o;
  };
  json::Array series;
  for (const auto& ss : s.series) {
    json::Object fields;
    for (std::size_t i = 0; i < std::size(kAllFields); ++i) {
      const Field f = kAllFields[i];
      const Spread& sp = ss.fields[i];
      const double scale = is_time(f) ? 1e3 : 1.0;
      if (sp.n == 0) {
        fields.emplace_back(json_key(f), nullptr);
        continue;
      }
      fields.emplace_back(json_key(f), json::Object{{"n", static_cast<std::int64_t>(sp.n)},
                                                    {"p50", sp.p50 * scale},
                                                    {"p95", sp.p95 * scale},
                                                    {"max", sp.max * scale}});
    }
    series.push_back(json::Object{{"target", ss.target},
                                  {"model", ss.model},
                                  {"prompt", ss.prompt},
                                  {"runs", static_cast<std::int64_t>(ss.runs)},
                                  {"ok", static_cast<std::int64_t>(ss.ok)},
                                  {"failures", failures_json(ss.failures)},
                                  {"stall_threshold_ms", ss.stall_threshold * 1e3},
                                  {"fields", std::move(fields)},
                                  {"shapes", shapes_held(ss.diagnosis)},
                                  {"diagnosis", to_json(ss.diagnosis)}});
  }
  return json::Object{{"runs", static_cast<std::int64_t>(s.runs)},
                      {"ok", static_cast<std::int64_t>(s.ok)},
                      {"warmup_discarded", static_cast<std::int64_t>(s.warmup_discarded)},
                      {"failures", failures_json(s.failures)},
                      {"series", std::move(series)}};
}

}  // namespace lse::report
