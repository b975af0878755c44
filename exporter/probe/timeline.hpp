// The clock of one probe (DESIGN §2): the instants a probe saw, and the pure
// maths that turns them into a ProbeResult's clock fields. No sockets, no
// clock reads here: callers stamp instants, tests build timelines by hand.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe/result.hpp"

namespace lse::probe {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

struct Timeline {
  TimePoint start{};
  // Connection phases; empty when a pooled connection was reused.
  std::optional<TimePoint> resolved, connected, tls_done;
  std::optional<TimePoint> request_sent, headers;
  std::optional<TimePoint> first_reasoning;
  std::vector<TimePoint> content_arrivals;  // one per content chunk, in order
  // Events with reasoning text that the target's `count:` does not count as
  // content chunks: they carry output tokens all the same (tokens_per_chunk).
  std::size_t reasoning_chunks = 0;
  std::optional<TimePoint> end;  // end of stream, or the failure instant

  void reserve(std::size_t chunks) { content_arrivals.reserve(chunks); }
};

// Nearest-rank percentile (q in (0,1]) of an ascending-sorted, non-empty list.
double nearest_rank(const std::vector<double>& sorted, double q);

// A resumed stream's release window: chunks within this much of the chunk
// that ended a stall were released with it. A tenth of the stream's gap p50,
// so a resume at the stream's own cadence is not a burst; chunks of the same
// socket read (0 apart) always are.
inline constexpr double kReleaseWindowOfGapP50 = 0.1;

// What the usage and the stream say about the tokens an answer's chunks carry.
struct ChunkTokens {
  std::int64_t completion_tokens = -1;  // -1 = unknown; includes reasoning tokens
  std::int64_t reasoning_tokens = -1;   // -1 = unknown
  std::size_t content_chunks = 0;
  std::size_t reasoning_chunks = 0;  // reasoning events not counted as content chunks
  bool reasoning_streamed = false;   // any reasoning text came in the stream
};

// Output tokens per chunk that carried output text: the completion tokens
// over the content chunks plus the uncounted reasoning chunks (every
// dialect's completion count includes the thinking). Thinking the server
// counted but never streamed (OpenAI's o-series: reasoning_tokens without a
// reasoning chunk) is left out of the tokens. nullopt when the usage is
// unknown, no chunk came, or the usage leaves no output token for them.
// The final usage-only event is no chunk: it carries no text.
std::optional<double> tokens_per_chunk(const ChunkTokens& c);

// Fills the clock fields of `out` (ttft, first_reasoning, tail, duration,
// phases, gaps, chunks, stalls, stall_seconds, gap_p50/p95/max, tokens/s,
// coalesced_chunks, stall_details, tokens_per_chunk).
// Leaves identity, outcome and usage fields untouched, except that
// output_tokens_per_second and tokens_per_chunk use out.completion_tokens
// (and out.reasoning_tokens) when it is known.
void summarize(const Timeline& timeline, double stall_threshold_seconds, ProbeResult& out);

// Why `timeline` is not one probe's causal clock, or nullopt when it is: an
// instant never stamped or earlier than start, content chunks out of order,
// an end before the last content chunk. Every instant a probe records comes
// from a stamp of its own reads (the client floors them at the instant the
// request began), so a violation is a bug, never the server's doing.
std::optional<std::string> clock_violation(const Timeline& timeline);

// summarize() for the timeline a probe built. A timeline with a clock
// violation is a bug: debug builds stop at an assertion; release builds
// record the probe as failed `protocol` with an "internal clock error"
// message and keep no clock value but the duration from start to `now`, so
// that no negative time reaches a row or a histogram.
void summarize_probe(const Timeline& timeline, double stall_threshold_seconds, TimePoint now,
                     ProbeResult& out);

// A row's content chunks as offsets from the probe's start, in seconds: TTFT,
// then TTFT + each gap in turn (empty without a first chunk). What the pages
// and the report draw on a time axis.
std::vector<double> arrival_offsets(const ProbeResult& r);

}  // namespace lse::probe
