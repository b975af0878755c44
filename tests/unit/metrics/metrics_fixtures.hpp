// What the metrics tests share: configs, a fully observed successful probe,
// the label sets of its series, and a fixed process_* reading.
#pragma once
#include <algorithm>
#include <cstddef>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "metrics/process.hpp"
#include "probe/result.hpp"

namespace lse::testing {

using Labels = std::map<std::string, std::string>;

inline config::Target make_target(std::string name, std::string model,
                                  std::vector<std::string> prompts) {
  config::Target t;
  t.name = std::move(name);
  t.url = "http://127.0.0.1:1/v1";
  t.model = std::move(model);
  t.prompts = std::move(prompts);
  return t;
}

inline config::Config make_config(std::vector<config::Target> targets) {
  config::Config c;
  for (const auto& t : targets)
    for (const auto& p : t.prompts) c.prompts[p] = config::Prompt{p, "text of " + p, "inline"};
  c.targets = std::move(targets);
  return c;
}

inline Labels series(const std::string& target, const std::string& model,
                     const std::string& prompt) {
  return {{"target", target}, {"model", model}, {"prompt", prompt}};
}
inline Labels plus(Labels l, const std::string& k, const std::string& v) {
  l[k] = v;
  return l;
}

inline probe::ProbeResult success(const std::string& target, const std::string& model,
                                  const std::string& prompt) {
  probe::ProbeResult r;
  r.ts = 1700000000;
  r.target = target;
  r.model = model;
  r.prompt = prompt;
  r.host = "probe-host";
  r.ok = true;
  r.http_status = 200;
  r.phases[static_cast<int>(probe::Phase::resolve)] = 0.002;
  r.phases[static_cast<int>(probe::Phase::connect)] = 0.004;
  r.phases[static_cast<int>(probe::Phase::request)] = 0.0005;
  r.phases[static_cast<int>(probe::Phase::headers)] = 0.2;
  r.phases[static_cast<int>(probe::Phase::first_token)] = 0.1;
  r.ttft = 0.3065;
  r.gaps = {0.01, 0.3, 0.05, 0.3, 0.6};
  r.chunks = 6;
  r.stalls = 3;
  r.stall_seconds = 1.2;
  r.gap_p50 = 0.3;
  r.gap_p95 = 0.6;
  r.gap_max = 0.6;
  r.tail = 0.02;
  r.duration = 1.6;
  r.prompt_tokens = 12;
  r.completion_tokens = 40;
  r.output_tokens_per_second = 31.25;
  r.finish_reason = "stop";
  return r;
}

// The lines of a text exposition with each family's series sorted and the
// families (their HELP/TYPE/UNIT lines) in their order: two renders that
// hold the same series with the same values compare equal whatever the
// order of the series within a family.
inline std::vector<std::string> series_sorted(const std::string& text) {
  std::vector<std::string> out;
  std::size_t block = 0;  // where the current family's series start
  auto sort_block = [&] { std::sort(out.begin() + static_cast<std::ptrdiff_t>(block), out.end()); };
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind('#', 0) == 0) sort_block();
    out.push_back(line);
    if (line.rfind('#', 0) == 0) block = out.size();
  }
  sort_block();
  return out;
}

inline metrics::ProcessStats fixed_process_stats() {
  metrics::ProcessStats s;
  s.cpu_seconds = 1.5;
  s.resident_bytes = 10 << 20;
  s.virtual_bytes = 100 << 20;
  s.start_time_seconds = 1700000000;
  s.open_fds = 12;
  s.max_fds = 1024;
  return s;
}

}  // namespace lse::testing
