// The answers of GET /probe?target=: the metrics read off a planted result
// (values, not presence), the failure reason, escaped labels; the debug text
// lists every event with offsets and gaps computed from the trace.
#include "ondemand/answer.hpp"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

namespace lse::ondemand {
namespace {

using namespace std::chrono_literals;

// "name{labels}" -> value, for every sample line.
std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

probe::ProbeResult planted() {
  probe::ProbeResult r;
  r.ts = 1'700'000'000.0;
  r.id = "00000000000000ab";
  r.target = "a\"b";
  r.prompt = "short";
  r.model = "m";
  r.ok = true;
  r.http_status = 200;
  r.duration = 1.25;
  r.ttft = 0.150;
  r.gaps = {0.010, 0.800, 0.010};
  r.chunks = 4;
  r.stalls = 1;
  r.gap_max = 0.800;
  r.gap_p95 = 0.800;
  r.stall_threshold = 0.25;
  r.stall_details = {{3, 0.800, 0}};
  r.phases[static_cast<std::size_t>(probe::Phase::connect)] = 0.002;
  r.phases[static_cast<std::size_t>(probe::Phase::headers)] = 0.100;
  return r;
}

TEST(OnDemandAnswer, MetricsCarryTheProbesValues) {
  const auto s = samples(render_probe_metrics(planted()));
  EXPECT_EQ(s.at("probe_success"), 1);
  EXPECT_DOUBLE_EQ(s.at("probe_duration_seconds"), 1.25);
  EXPECT_DOUBLE_EQ(s.at("probe_ttft_seconds"), 0.150);
  EXPECT_DOUBLE_EQ(s.at("probe_max_gap_seconds"), 0.800);
  EXPECT_DOUBLE_EQ(s.at("probe_gap_p95_seconds"), 0.800);
  EXPECT_EQ(s.at("probe_stalls"), 1);
  EXPECT_EQ(s.at("probe_chunks"), 4);
  EXPECT_EQ(s.at("probe_http_status_code"), 200);
  EXPECT_DOUBLE_EQ(s.at("probe_http_duration_seconds{phase=\"connect\"}"), 0.002);
  EXPECT_DOUBLE_EQ(s.at("probe_http_duration_seconds{phase=\"tls\"}"), 0);
  EXPECT_EQ(s.at("probe_failure_reason{reason=\"none\"}"), 1);
  EXPECT_EQ(s.count("probe_tokens_per_chunk"), 0u);
  EXPECT_EQ(s.at("probe_info{target=\"a\\\"b\",prompt=\"short\",model=\"m\",probe_id="
                 "\"00000000000000ab\"}"),
            1);
}

TEST(OnDemandAnswer, FailureSaysWhyAndLeavesOutWhatNeverHappened) {
  probe::ProbeResult r;
  r.ok = false;
  r.reason = probe::FailureReason::connect;
  r.duration = 0.003;
  const auto s = samples(render_probe_metrics(r));
  EXPECT_EQ(s.at("probe_success"), 0);
  EXPECT_EQ(s.at("probe_failure_reason{reason=\"connect\"}"), 1);
  EXPECT_EQ(s.at("probe_http_status_code"), 0);
  EXPECT_EQ(s.count("probe_ttft_seconds"), 0u);
  EXPECT_EQ(s.count("probe_max_gap_seconds"), 0u);
}

probe::Trace planted_trace() {
  probe::Trace t;
  t.start = probe::TimePoint{} + 1s;
  auto at = [&](double s) {
    return t.start +
           std::chrono::duration_cast<probe::Clock::duration>(std::chrono::duration<double>(s));
  };
  t.events = {{at(0.100), 40, 0, 0},  // role-only delta
              {at(0.150), 60, 5, probe::kEventContent},
              {at(0.160), 60, 5, probe::kEventContent},
              {at(0.960), 60, 5, probe::kEventContent},
              {at(0.970), 80, 5, probe::kEventContent | probe::kEventFinish},
              {at(0.971), 90, 0, probe::kEventUsage},
              {at(0.972), 6, 0, probe::kEventDone}};
  return t;
}

TEST(OnDemandAnswer, DebugListsEveryEventWithOffsetsAndContentGaps) {
  const std::string text =
      render_probe_debug(planted(), planted_trace(), {"http://h/v1", "openai_chat"});
  EXPECT_NE(text.find("     1    0.100000           -       40  other\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("     2    0.150000           -       60  content\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("     4    0.960000    0.800000       60  content\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("     5    0.970000    0.010000       80  content+finish\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("7 events, 4 content chunks\n"), std::string::npos) << text;
  // The log: the stall at the chunk that ended it, stamped at its arrival.
  EXPECT_NE(text.find("level=warn msg=stall at_chunk=3 gap_seconds=0.8"), std::string::npos)
      << text;
  EXPECT_NE(text.find("msg=\"beginning probe\""), std::string::npos) << text;
  // One line per event of the log: no blank line before the events.
  EXPECT_EQ(text.find("\n\n"), text.find("\n\nEvents of the stream")) << text;
  EXPECT_NE(text.find("url=http://h/v1"), std::string::npos) << text;
  EXPECT_NE(text.find("Metrics that would have been returned:\n# HELP probe_success"),
            std::string::npos)
      << text;
}

// A stream the server reset over HTTP/2: the failure's log line names the
// code; other failures carry no h2_error field.
TEST(OnDemandAnswer, DebugLogOfAResetNamesTheH2Code) {
  probe::ProbeResult r = planted();
  r.ok = false;
  r.reason = probe::FailureReason::reset;
  r.http_version = "2";
  r.h2_error = "INTERNAL_ERROR";
  r.error_detail = "RST_STREAM INTERNAL_ERROR (0x2) from the server";
  std::string text = render_probe_debug(r, planted_trace(), {"http://h/v1", "openai_chat"});
  EXPECT_NE(text.find("msg=\"probe failed\" reason=reset"), std::string::npos) << text;
  EXPECT_NE(text.find(" h2_error=INTERNAL_ERROR "), std::string::npos) << text;
  EXPECT_NE(text.find("http_version=2 "), std::string::npos) << text;
  r.reason = probe::FailureReason::truncated;
  r.h2_error.clear();
  text = render_probe_debug(r, planted_trace(), {"http://h/v1", "openai_chat"});
  EXPECT_NE(text.find("msg=\"probe failed\" reason=truncated"), std::string::npos) << text;
  EXPECT_EQ(text.find("h2_error"), std::string::npos) << text;
}

TEST(OnDemandAnswer, TraceKindNames) {
  EXPECT_EQ(probe::event_kind_names(0), "other");
  EXPECT_EQ(probe::event_kind_names(probe::kEventUsage | probe::kEventDone), "usage+done");
}

}  // namespace
}  // namespace lse::ondemand
