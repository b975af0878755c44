// The summary as JSON (`run --format json`): the figures of summarize() in
// row units (milliseconds, `_ms` keys), computes nothing.
#include "report/summary.hpp"

namespace lse::report {
namespace {

std::string json_key(Field f) {
  if (f == Field::tokens_per_second) return "tokens_per_second";
  if (f == Field::tokens_per_chunk) return "tokens_per_chunk";
  std::string k(to_string(f));
  return is_time(f) ? k + "_ms" : k;
}

json::Object failures_json(const std::vector<ReasonCount>& list) {
  json::Object o;
  for (const auto& [reason, n] : list)
    o.emplace_back(std::string(reason), static_cast<std::int64_t>(n));
  return o;
}

json::Object fields_json(const SeriesSummary& ss) {
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
  return fields;
}

json::Value series_json(const SeriesSummary& ss) {
  return json::Object{{"target", ss.target},
                      {"model", ss.model},
                      {"prompt", ss.prompt},
                      {"runs", static_cast<std::int64_t>(ss.runs)},
                      {"ok", static_cast<std::int64_t>(ss.ok)},
                      {"failures", failures_json(ss.failure_list)},
                      {"stall_threshold_ms", ss.stall_threshold * 1e3},
                      {"fields", fields_json(ss)},
                      {"shapes", ss.shapes},
                      {"verdict", ss.verdict},
                      {"diagnosis", to_json(ss.diagnosis)},
                      {"notes", to_json(ss.notes)}};
}

// true / false / null (cannot tell).
json::Value holds_json(Answer a) {
  if (a == Answer::cannot_tell) return nullptr;
  return a == Answer::holds;
}

}  // namespace

json::Value to_json(const std::vector<Verdict>& verdicts) {
  json::Array arr;
  for (const auto& v : verdicts) {
    json::Object numbers;
    for (const auto& [k, x] : v.numbers) numbers.emplace_back(k, x);
    arr.push_back(json::Object{{"shape", std::string(to_string(v.shape))},
                               {"holds", holds_json(v.answer)},
                               {"enough_probes", v.enough_probes},
                               {"why", v.why},
                               {"evidence", v.evidence},
                               {"numbers", std::move(numbers)}});
  }
  return arr;
}

json::Value to_json(const std::vector<Note>& notes) {
  json::Array arr;
  for (const auto& n : notes) {
    json::Object numbers;
    for (const auto& [k, x] : n.numbers) numbers.emplace_back(k, x);
    arr.push_back(json::Object{
        {"note", std::string(n.id)}, {"text", n.text}, {"numbers", std::move(numbers)}});
  }
  return arr;
}

json::Value to_json(const Summary& s) {
  json::Array series;
  for (const auto& ss : s.series) series.push_back(series_json(ss));
  return json::Object{{"runs", static_cast<std::int64_t>(s.runs)},
                      {"ok", static_cast<std::int64_t>(s.ok)},
                      {"warmup_discarded", static_cast<std::int64_t>(s.warmup_discarded)},
                      {"failures", failures_json(s.failure_list)},
                      {"series", std::move(series)}};
}

}  // namespace lse::report
