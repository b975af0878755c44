// The summary as the text table `run` prints on stdout: lays out the strings
// summarize() made, computes nothing.
#include <fmt/format.h>

#include "report/summary.hpp"

namespace lse::report {
namespace {

void block_header(std::string& out, const SeriesSummary& ss) {
  out += fmt::format("target {}  model {}  prompt {}  ({} run{}, {} ok)\n", ss.target,
                     ss.model_label, ss.prompt, ss.runs, ss.runs == 1 ? "" : "s", ss.ok);
}

void field_rows(std::string& out, const SeriesSummary& ss) {
  if (ss.ok == 0) {
    out += "  no successful run: nothing measured\n";
    return;
  }
  out += fmt::format("  {:<10} {:>11} {:>11} {:>11}\n", "field", "p50", "p95", "max");
  for (std::size_t i = 0; i < std::size(kAllFields); ++i) {
    const FieldCells& c = ss.cells[i];
    if (c.n == 0)
      out +=
          fmt::format("  {:<10} {:>11} {:>11} {:>11}\n", to_string(kAllFields[i]), "-", "-", "-");
    else
      out += fmt::format("  {:<10} {:>11} {:>11} {:>11}\n", to_string(kAllFields[i]), c.p50, c.p95,
                         c.max);
  }
}

void failures_line(std::string& out, const SeriesSummary& ss) {
  if (ss.failure_list.empty()) {
    out += "  failures: none\n";
    return;
  }
  out += fmt::format("  failures: {}{}\n", ss.failures_text,
                     ss.failure_example.empty() ? "" : " (first: " + ss.failure_example + ")");
}

void diagnosis_lines(std::string& out, const SeriesSummary& ss) {
  out += fmt::format("  diagnosis: {}\n", ss.shapes);
  for (const auto& v : ss.diagnosis) {
    if (!v.enough_probes) {
      out += fmt::format("    {}\n", v.why);
      break;
    }
    out += fmt::format("    {} {:<15} {}\n", mark(v.answer), title(v.shape), v.why);
  }
  for (const auto& v : ss.diagnosis)
    if (v.holds()) out += fmt::format("    -> {}: {}\n", title(v.shape), advice(v.shape));
}

void total_line(std::string& out, const Summary& s) {
  out += fmt::format("total: {} run{}, {} ok, {} failed{}; {} warmup run{} discarded\n", s.runs,
                     s.runs == 1 ? "" : "s", s.ok, s.runs - s.ok,
                     s.failures_text.empty() ? "" : " (" + s.failures_text + ")",
                     s.warmup_discarded, s.warmup_discarded == 1 ? "" : "s");
}

}  // namespace

std::string render_table(const Summary& s) {
  std::string out;
  for (const auto& ss : s.series) {
    block_header(out, ss);
    field_rows(out, ss);
    failures_line(out, ss);
    diagnosis_lines(out, ss);
    out += "\n";
  }
  total_line(out, s);
  return out;
}

}  // namespace lse::report
