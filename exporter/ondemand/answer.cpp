// The answers of GET /probe?target= (answer.hpp).
#include "ondemand/answer.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "log/log.hpp"

namespace lse::ondemand {
namespace {

// A label value of the text format: backslash, quote and line feed escaped.
std::string label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void gauge(std::string& out, std::string_view name, std::string_view help, double value) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help,
                 name, name, value);
}

void optional_gauge(std::string& out, std::string_view name, std::string_view help,
                    const std::optional<double>& value) {
  if (value) gauge(out, name, help, *value);
}

void phases(std::string& out, const probe::ProbeResult& r) {
  out +=
      "# HELP probe_http_duration_seconds Duration of each phase of the request, 0 where it did "
      "not happen (a reused connection has no resolve, connect, tls).\n"
      "# TYPE probe_http_duration_seconds gauge\n";
  for (const auto phase : probe::kAllPhases) {
    const auto& v = r.phases[static_cast<std::size_t>(phase)];
    fmt::format_to(std::back_inserter(out), "probe_http_duration_seconds{{phase=\"{}\"}} {}\n",
                   probe::to_string(phase), v.value_or(0.0));
  }
}

void labels_info(std::string& out, const probe::ProbeResult& r) {
  const std::string_view reason = r.ok ? "none" : probe::to_string(r.reason);
  fmt::format_to(std::back_inserter(out),
                 "# HELP probe_failure_reason Why the probe failed (\"none\" when it did not).\n"
                 "# TYPE probe_failure_reason gauge\n"
                 "probe_failure_reason{{reason=\"{}\"}} 1\n",
                 reason);
  fmt::format_to(std::back_inserter(out),
                 "# HELP probe_info The probe: its target, prompt, model and id (the row's).\n"
                 "# TYPE probe_info gauge\n"
                 "probe_info{{target=\"{}\",prompt=\"{}\",model=\"{}\",probe_id=\"{}\"}} 1\n",
                 label_value(r.target), label_value(r.prompt), label_value(r.model),
                 label_value(r.id));
}

}  // namespace

std::string render_probe_metrics(const probe::ProbeResult& r) {
  std::string out;
  gauge(out, "probe_success", "Whether the probe succeeded (1) or failed (0).", r.ok ? 1 : 0);
  gauge(out, "probe_duration_seconds", "From the request's start to the end of the stream.",
        r.duration);
  optional_gauge(out, "probe_ttft_seconds", "Time to the first content chunk.", r.ttft);
  optional_gauge(out, "probe_max_gap_seconds", "Longest gap between content chunks.", r.gap_max);
  optional_gauge(out, "probe_gap_p95_seconds",
                 "95th percentile of the gaps between content chunks.", r.gap_p95);
  gauge(out, "probe_stalls", "Gaps longer than the target's stall threshold.",
        static_cast<double>(r.stalls));
  gauge(out, "probe_chunks", "Content chunks received.", static_cast<double>(r.chunks));
  phases(out, r);
  gauge(out, "probe_http_status_code", "The final HTTP status (0 without an answer).",
        r.http_status);
  optional_gauge(out, "probe_tokens_per_chunk", "Completion tokens per content chunk.",
                 r.tokens_per_chunk);
  labels_info(out, r);
  return out;
}

namespace {

using Stamp = std::chrono::system_clock::time_point;

class LogBook {
 public:
  explicit LogBook(double start_unix) : start_unix_(start_unix) {}
  void add(double offset, log::Level level, std::string_view message, log::Fields fields) {
    const auto at = Stamp(std::chrono::duration_cast<Stamp::duration>(
        std::chrono::duration<double>(start_unix_ + offset)));
    text += log::render_line(log::Format::logfmt, level, at,
                             log::render_event(log::Format::logfmt, message, fields));
    if (text.empty() || text.back() != '\n') text += '\n';
  }
  std::string text;

 private:
  double start_unix_;
};

// The offset (seconds from start) at which each phase ended: phases are
// consecutive durations in kAllPhases order.
void log_phases(LogBook& book, const probe::ProbeResult& r) {
  double at = 0;
  for (const auto phase : probe::kAllPhases) {
    const auto& v = r.phases[static_cast<std::size_t>(phase)];
    if (!v) continue;
    at += *v;
    if (phase == probe::Phase::headers)
      book.add(at, log::Level::info, "response headers",
               {{"status", r.http_status},
                {"http_version", r.http_version},
                {"content_type", r.content_type},
                {"content_encoding", r.content_encoding}});
    else if (phase != probe::Phase::first_token)
      book.add(at, log::Level::info, "phase done",
               {{"phase", probe::to_string(phase)}, {"seconds", *v}});
  }
}

std::string probe_log(const probe::ProbeResult& r, const DebugContext& c) {
  LogBook book(r.ts);
  book.add(0, log::Level::info, "beginning probe",
           {{"target", r.target},
            {"prompt", r.prompt},
            {"model", r.model},
            {"api", c.api},
            {"url", c.url_redacted},
            {"probe_id", r.id},
            {"new_connection", r.new_connection}});
  log_phases(book, r);
  if (r.ttft)
    book.add(*r.ttft, log::Level::info, "first content chunk", {{"ttft_seconds", *r.ttft}});
  const auto offsets = probe::arrival_offsets(r);
  for (const auto& s : r.stall_details) {
    const double at = s.at_chunk >= 1 && s.at_chunk <= offsets.size() ? offsets[s.at_chunk - 1] : 0;
    book.add(at, log::Level::warn, "stall",
             {{"at_chunk", s.at_chunk},
              {"gap_seconds", s.gap},
              {"released_chunks", s.released_chunks},
              {"threshold_seconds", r.stall_threshold}});
  }
  if (r.ok)
    book.add(r.duration, log::Level::info, "probe succeeded",
             {{"duration_seconds", r.duration},
              {"chunks", r.chunks},
              {"stalls", r.stalls},
              {"finish_reason", r.finish_reason}});
  else if (!r.h2_error.empty())  // the HTTP/2 code of a reset stream or a broken session
    book.add(r.duration, log::Level::error, "probe failed",
             {{"reason", probe::to_string(r.reason)},
              {"detail", r.error_detail},
              {"h2_error", r.h2_error},
              {"duration_seconds", r.duration}});
  else
    book.add(r.duration, log::Level::error, "probe failed",
             {{"reason", probe::to_string(r.reason)},
              {"detail", r.error_detail},
              {"duration_seconds", r.duration}});
  return book.text;
}

std::string event_lines(const probe::Trace& trace) {
  std::string out = fmt::format("{:>6}  {:>10}  {:>10}  {:>7}  {}\n", "event", "offset_s", "gap_s",
                                "bytes", "kind");
  std::optional<double> last_content;
  std::size_t content = 0;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const auto& e = trace.events[i];
    const double offset = std::chrono::duration<double>(e.arrival - trace.start).count();
    std::string gap = "-";
    if ((e.kinds & probe::kEventContent) != 0) {
      ++content;
      if (last_content) gap = fmt::format("{:.6f}", offset - *last_content);
      last_content = offset;
    }
    fmt::format_to(std::back_inserter(out), "{:>6}  {:>10.6f}  {:>10}  {:>7}  {}\n", i + 1, offset,
                   gap, e.bytes, probe::event_kind_names(e.kinds));
  }
  fmt::format_to(std::back_inserter(out), "{} events, {} content chunks", trace.events.size(),
                 content);
  if (trace.dropped > 0)
    fmt::format_to(std::back_inserter(out), ", {} more not kept", trace.dropped);
  out += '\n';
  return out;
}

}  // namespace

std::string render_probe_debug(const probe::ProbeResult& r, const probe::Trace& trace,
                               const DebugContext& context) {
  std::string out = "Logs for the probe:\n";
  out += probe_log(r, context);
  out +=
      "\nEvents of the stream (offset from the request's start; gap since the previous content "
      "chunk, for content chunks; seconds):\n";
  out += event_lines(trace);
  out += "\nMetrics that would have been returned:\n";
  out += render_probe_metrics(r);
  return out;
}

}  // namespace lse::ondemand
