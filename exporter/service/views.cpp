// Scrape-time diagnosis and the landing page's target list (see views.hpp).
#include "service/views.hpp"

#include <utility>
#include <chrono>

#include "net/url.hpp"
#include "report/diagnosis.hpp"

namespace lse::service {

std::vector<probe::ProbeResult> diagnosis_window(const std::vector<probe::ProbeResult>& latest,
                                                 const config::Target& target,
                                                 const std::string& prompt) {
  std::vector<probe::ProbeResult> window;
  for (const auto& r : latest) {
    if (r.prompt != prompt || r.model != target.model) continue;
    window.push_back(r);
    if (window.size() == kDiagnosisWindow) break;
  }
  return window;
}

void update_diagnosis(metrics::Metrics& metrics, const report::RowStore& rows,
                      const config::Config& config) {
  for (const auto& t : config.targets) {
    const auto latest = rows.latest(t.name, rows.capacity());
    for (const auto& prompt : t.prompts)
      metrics.set_diagnosis({t.name, prompt}, report::diagnose(diagnosis_window(latest, t, prompt),
                                                               config.diagnosis));
  }
}

namespace {

// "short: transport, generation", "long: none", "short: no verdict yet",
// read off the values prompt_diagnosis() computed.
std::vector<std::string> diagnosis_lines(
    const std::vector<server::TargetStatus::PromptDiagnosis>& prompts) {
  std::vector<std::string> out;
  for (const auto& p : prompts) {
    std::string held;
    bool enough = true;
    for (const auto& v : p.verdicts) {
      enough = enough && v.enough_probes;
      if (!v.holds() || !v.enough_probes) continue;
      if (!held.empty()) held += ", ";
      held += report::title(v.shape);
    }
    out.push_back(p.prompt + ": " + (!enough ? "no verdict yet" : held.empty() ? "none" : held));
  }
  return out;
}

// The landing page's values: each prompt's window statistics, verdicts and notes.
std::vector<server::TargetStatus::PromptDiagnosis> prompt_diagnosis(const report::RowStore& rows,
                                                                    const config::Config& config,
                                                                    const config::Target& t) {
  std::vector<server::TargetStatus::PromptDiagnosis> out;
  const auto latest = rows.latest(t.name, rows.capacity());
  for (const auto& prompt : t.prompts) {
    const auto window = report::window_stats(diagnosis_window(latest, t, prompt), config.diagnosis);
    out.push_back({prompt, window, report::diagnose(window, config.diagnosis),
                   report::notes(window, config.diagnosis)});
  }
  return out;
}

}  // namespace

std::vector<server::TargetStatus> target_statuses(const config::Config& config,
                                                  const report::RowStore& rows) {
  std::vector<server::TargetStatus> out;
  for (const auto& t : config.targets) {
    server::TargetStatus s;
    s.name = t.name;
    s.model = t.model;
    auto u = net::parse_url(t.url);
    s.url_redacted = u ? u->redacted() : "";
    s.prompts = t.prompts;
    s.interval_seconds = std::chrono::duration<double>(t.interval).count();
    s.prompt_diagnosis = prompt_diagnosis(rows, config, t);
    s.diagnosis = diagnosis_lines(s.prompt_diagnosis);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace lse::service
