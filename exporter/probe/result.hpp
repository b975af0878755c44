// The summary of one probe (DESIGN §2 per-probe summaries, §6 raw row).
// Durations are in seconds (double) so metrics, rows and reports share them.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe/failure_reason.hpp"

namespace lse::probe {

enum class Phase { resolve, connect, tls, request, headers, first_token };
inline constexpr std::array<Phase, 6> kAllPhases = {
    Phase::resolve, Phase::connect, Phase::tls, Phase::request, Phase::headers, Phase::first_token};
constexpr const char* to_string(Phase p) {
  switch (p) {
    case Phase::resolve: return "resolve";
    case Phase::connect: return "connect";
    case Phase::tls: return "tls";
    case Phase::request: return "request";
    case Phase::headers: return "headers";
    case Phase::first_token: return "first_token";
  }
  return "";
}

// The server's own account of its time (Ollama's done line), seconds; each
// nullopt when not reported. Rows keep it as `server_ms`.
struct ServerTimings {
  std::optional<double> load, prompt_eval, eval;
};

// How one stall ended (DESIGN §6 `stalls_detail`): the content chunk that
// ended it (1-based), the gap before that chunk, and how many more chunks
// came right behind it (within the release window of summarize()): held data
// released in a burst, where a pause at the source resumes at its cadence.
struct StallDetail {
  std::size_t at_chunk = 0;
  double gap = 0;  // seconds
  std::size_t released_chunks = 0;
  bool operator==(const StallDetail&) const = default;
};

struct ProbeResult {
  // identity
  double ts = 0;   // unix seconds at probe start (wall clock, for rows only)
  std::string id;  // unique per probe: the row's "id", the exemplars' probe_id
  std::string target, model, prompt, host;
  // The model the stream named as answering (gen_ai.response.model): the
  // first non-empty name an event carried; "" when none did.
  std::string response_model;
  bool warmup = false;  // discarded: never reaches metrics histograms or rows

  // outcome
  bool ok = false;
  FailureReason reason = FailureReason::none;
  int http_status = 0;
  std::string error_detail;  // short, secret-free; the row's "error"
  // The RFC 9113 name of the HTTP/2 error code that ended a failed probe
  // (the server's RST_STREAM or GOAWAY code, or the one we sent:
  // "INTERNAL_ERROR", "0x1f" for an unnamed code); "" otherwise.
  std::string h2_error;
  // what the path said about itself
  std::string content_encoding;  // as the server answered ("" = identity)
  // The response's Content-Type as the server sent it ("" = none), and
  // whether it is other than the dialect's stream type: the body is
  // measured all the same; the row, a counter and the log (once per target) say so.
  std::string content_type;
  bool unexpected_content_type = false;
  std::string http_version;  // "1.1", "1.0", "2"; "" when no response came
  bool via_proxy = false;    // sent through an HTTP proxy (proxy_url or the environment)
  // Interim (1xx) responses the server sent before its final one (103 Early
  // Hints, 100 Continue); they end inside the `headers` phase.
  std::size_t interim_responses = 0;
  // A 429's Retry-After, in seconds from the answer: the scheduler waits at
  // least that long before the target's next probe.
  std::optional<double> retry_after_seconds;

  // the clock (seconds); nullopt where the stream never got there
  std::optional<double> ttft;                     // start -> first content chunk
  std::optional<double> first_reasoning;          // start -> first reasoning chunk
  std::optional<double> tail;                     // last content chunk -> end
  double duration = 0;                            // start -> end (or failure)
  std::array<std::optional<double>, 6> phases{};  // indexed by Phase; tls empty on reuse
  bool new_connection = false;

  // gaps between content chunks, in order (seconds)
  std::vector<double> gaps;
  std::size_t chunks = 0;
  std::size_t stalls = 0;
  double stall_seconds = 0;
  double stall_threshold = 0.25;
  std::optional<double> gap_p50, gap_p95, gap_max;
  // release evidence: chunks that came in the same socket read as the one
  // before them, and each stall's resume
  std::size_t coalesced_chunks = 0;
  std::vector<StallDetail> stall_details;

  // usage and finish
  std::int64_t prompt_tokens = -1;  // -1 = unknown
  std::int64_t completion_tokens = -1;
  // Of the completion tokens, the reasoning ones when the usage says so
  // (OpenAI's completion_tokens_details, Gemini's thoughtsTokenCount); not
  // in rows: only tokens_per_chunk needs it, to leave out unstreamed thinking.
  std::int64_t reasoning_tokens = -1;
  std::optional<double> output_tokens_per_second;
  // completion tokens per content chunk when usage is known: 1 when every
  // SSE event carries one token, more when the server or a proxy batches
  // (probe::tokens_per_chunk says how reasoning chunks count)
  std::optional<double> tokens_per_chunk;
  std::string finish_reason;
  std::optional<ServerTimings> server;  // only dialects whose server reports it
};

// A probe cut short by shutdown or reload: it measured nothing of the
// target, so it is no failure. `serve` writes no row for it; the rows `run`
// keeps of one interrupted by a signal say `canceled`, and every summary
// (report, run, compare) leaves them out.
inline bool was_canceled(const ProbeResult& r) {
  return !r.ok && r.reason == FailureReason::canceled;
}

}  // namespace lse::probe
