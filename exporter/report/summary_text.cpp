// The summary as the text `run` prints on stdout: lays out the strings
// summarize() made, computes nothing. By default one line per series and one
// of evidence per verdict; with --explain a block per series with every field
// and every rule.
#include <fmt/format.h>
#include <algorithm>

#include "report/format.hpp"
#include "report/summary.hpp"

namespace lse::report {
namespace {

// --- the short table ----------------------------------------------------------

constexpr std::size_t kMaxColumns = 120;
constexpr std::size_t kMaxTarget = 24, kMaxPrompt = 16;

// Cut to `width` columns (by bytes: names are ASCII in practice), "~" marking the cut.
std::string fit(const std::string& s, std::size_t width) {
  if (s.size() <= width) return s;
  return s.substr(0, width - 1) + "~";
}

struct Widths {
  std::size_t target = 6, prompt = 6;
};

Widths widths_of(const Summary& s) {
  Widths w;
  for (const auto& ss : s.series) {
    w.target = std::max(w.target, std::min(ss.target.size(), kMaxTarget));
    w.prompt = std::max(w.prompt, std::min(ss.prompt.size(), kMaxPrompt));
  }
  return w;
}

std::string seconds_or_dash(const std::optional<double>& v) {
  return v ? format_seconds(*v) : std::string("-");
}

std::string series_line(const SeriesSummary& ss, const Widths& w) {
  const WindowStats& x = ss.window;
  const bool measured = ss.ok > 0;
  return fmt::format(
      "{:<{}}  {:<{}}  {:>7}  {:>9}  {:>9}  {:>9}  {:>9}  {:>6}  {}\n", fit(ss.target, kMaxTarget),
      w.target, fit(ss.prompt, kMaxPrompt), w.prompt, fmt::format("{}/{}", ss.ok, ss.runs),
      measured ? seconds_or_dash(x.ttft_p50) : "-", measured ? seconds_or_dash(x.ttft_p95) : "-",
      measured ? seconds_or_dash(x.gap_p95) : "-", measured ? seconds_or_dash(x.gap_max) : "-",
      measured ? std::to_string(x.stalls) : "-", ss.ok == 0 ? "failing" : ss.verdict);
}

// One line per verdict that holds or cannot be told, then one per note; one
// for failures first.
void evidence_lines(std::string& out, const SeriesSummary& ss) {
  if (!ss.failure_list.empty()) {
    const std::string line =
        fmt::format("    failures: {}{}", ss.failures_text,
                    ss.failure_example.empty() ? "" : " (first: " + ss.failure_example + ")");
    out += fit(line, kMaxColumns) + "\n";
  }
  for (const auto& v : ss.diagnosis) {
    if (!v.enough_probes) {
      if (ss.ok > 0) out += fit("    " + v.why, kMaxColumns) + "\n";
      break;
    }
    if (v.answer == Answer::not_holds) continue;
    const std::string line = fmt::format("    {}{}: {}", title(v.shape),
                                         v.cannot_tell() ? " (cannot tell)" : "", v.evidence);
    out += fit(line, kMaxColumns) + "\n";
  }
  for (const auto& n : ss.notes) out += fit("    note: " + n.text, kMaxColumns) + "\n";
}

std::string header_line(const Widths& w) {
  return fmt::format("{:<{}}  {:<{}}  {:>7}  {:>9}  {:>9}  {:>9}  {:>9}  {:>6}  {}\n", "target",
                     w.target, "prompt", w.prompt, "runs ok", "TTFT p50", "TTFT p95", "gap p95",
                     "worst gap", "stalls", "verdict");
}

// --- the explained blocks (--explain) ------------------------------------------

void block_header(std::string& out, const SeriesSummary& ss) {
  out += fmt::format("target {}  model {}  prompt {}  ({} run{}, {} ok)\n", ss.target,
                     ss.model_label, ss.prompt, ss.runs, ss.runs == 1 ? "" : "s", ss.ok);
}

void field_rows(std::string& out, const SeriesSummary& ss) {
  if (ss.ok == 0) {
    out += "  no successful run: nothing measured\n";
    return;
  }
  out += fmt::format("  {:<12} {:>11} {:>11} {:>11}\n", "field", "p50", "p95", "max");
  for (std::size_t i = 0; i < std::size(kAllFields); ++i) {
    const FieldCells& c = ss.cells[i];
    if (c.n == 0)
      out +=
          fmt::format("  {:<12} {:>11} {:>11} {:>11}\n", to_string(kAllFields[i]), "-", "-", "-");
    else
      out += fmt::format("  {:<12} {:>11} {:>11} {:>11}\n", to_string(kAllFields[i]), c.p50, c.p95,
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
  out += fmt::format("  diagnosis: {}\n", ss.verdict);
  for (const auto& v : ss.diagnosis) {
    if (!v.enough_probes) {
      out += fmt::format("    {}\n", v.why);
      break;
    }
    out += fmt::format("    {} {:<15} {}\n", mark(v.answer), title(v.shape), v.why);
  }
  for (const auto& v : ss.diagnosis)
    if (v.holds()) out += fmt::format("    -> {}: {}\n", title(v.shape), advice(v.shape));
  for (const auto& n : ss.notes) out += fmt::format("  note: {}\n", n.text);
}

void total_line(std::string& out, const Summary& s, bool explain) {
  out += fmt::format("total: {} run{}, {} ok, {} failed{}; {} warmup run{} discarded{}\n", s.runs,
                     s.runs == 1 ? "" : "s", s.ok, s.runs - s.ok,
                     s.failures_text.empty() ? "" : " (" + s.failures_text + ")",
                     s.warmup_discarded, s.warmup_discarded == 1 ? "" : "s",
                     explain ? "" : "; --explain shows every rule");
}

}  // namespace

std::string render_table(const Summary& s, const TableOptions& options) {
  std::string out;
  if (options.explain) {
    for (const auto& ss : s.series) {
      block_header(out, ss);
      field_rows(out, ss);
      failures_line(out, ss);
      diagnosis_lines(out, ss);
      out += "\n";
    }
  } else {
    const Widths w = widths_of(s);
    out += header_line(w);
    for (const auto& ss : s.series) {
      out += series_line(ss, w);
      evidence_lines(out, ss);
    }
  }
  total_line(out, s, options.explain);
  return out;
}

}  // namespace lse::report
