// Probes for report tests, built the way the probe builds them: planted
// instants through probe::summarize, so every derived field (gap p50/p95,
// stalls, tail) is the probe module's, not the test's.
#pragma once
#include <string>
#include <vector>

#include "probe/timeline.hpp"

namespace lse::report::testing {

inline probe::ProbeResult planted(double ttft_s, const std::vector<double>& gaps_s,
                                  double tail_s = 0.0, const std::string& target = "t",
                                  const std::string& prompt = "p",
                                  double stall_threshold_s = 0.25) {
  using probe::TimePoint;
  auto at = [](double s) {
    return TimePoint{} + std::chrono::seconds(1000) +
           std::chrono::duration_cast<TimePoint::duration>(std::chrono::duration<double>(s));
  };
  probe::Timeline t;
  t.start = at(0);
  t.request_sent = at(0.001);
  t.headers = at(0.002);
  double now = ttft_s;
  t.content_arrivals.push_back(at(now));
  for (double g : gaps_s) t.content_arrivals.push_back(at(now += g));
  t.end = at(now + tail_s);
  probe::ProbeResult r;
  r.target = target;
  r.model = "m";
  r.prompt = prompt;
  r.ok = true;
  probe::summarize(t, stall_threshold_s, r);
  return r;
}

inline std::vector<double> repeat(double gap, std::size_t n) { return std::vector<double>(n, gap); }

inline probe::ProbeResult failed(probe::FailureReason reason, const std::string& target = "t",
                                 const std::string& prompt = "p") {
  probe::ProbeResult r;
  r.target = target;
  r.model = "m";
  r.prompt = prompt;
  r.ok = false;
  r.reason = reason;
  r.duration = 0.003;
  r.error_detail = "connect 127.0.0.1: Connection refused";
  return r;
}

}  // namespace lse::report::testing
