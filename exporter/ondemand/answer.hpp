// What GET /probe?target= answers about the one probe it ran, laid out from
// the ProbeResult (compute once, render many): the Prometheus text of
// blackbox_exporter's shape (probe_success, probe_duration_seconds, ...);
// with debug=true the probe's log, every event of its stream and those
// metrics as text. The row (format=json) is report::to_row_json's. Pure.
#pragma once
#include <string>

#include "probe/result.hpp"
#include "probe/trace.hpp"

namespace lse::ondemand {

// The text exposition (version 0.0.4) of one probe: probe_success,
// probe_duration_seconds, probe_ttft_seconds, probe_max_gap_seconds,
// probe_gap_p95_seconds (each only when the stream got there),
// probe_stalls, probe_chunks, probe_http_duration_seconds{phase} (every
// phase, 0 where it did not happen), probe_http_status_code (0 without an
// answer), probe_failure_reason{reason} 1 ("none" on success),
// probe_tokens_per_chunk when usage is known, and probe_info{target,
// prompt, model, probe_id} 1.
std::string render_probe_metrics(const probe::ProbeResult& r);

// What the debug answer says about where the probe went (the URL with its
// secrets redacted, the dialect).
struct DebugContext {
  std::string url_redacted;
  std::string api;
};

// "Logs for the probe:" (logfmt lines stamped at the probe's own instants),
// "Events of the stream:" (one line per event: its number, offset from the
// request's start, the gap since the previous content chunk for content
// chunks, bytes, kind) and "Metrics that would have been returned:".
std::string render_probe_debug(const probe::ProbeResult& r, const probe::Trace& trace,
                               const DebugContext& context);

}  // namespace lse::ondemand
