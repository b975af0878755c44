// The measurements of every probe aggregated into OTLP metrics (pure: the
// time is passed in, no socket, no clock). Probe threads record(); the export
// thread collect()s a Batch every interval. Histograms are exponential
// (histogram::Exponential, the layout Prometheus native histograms share);
// cumulative points keep their start time for the life of the series; a
// delta point starts where the series' previous point ended (a collection
// that found nothing new for a series sends nothing for it) and resets it.
// Thread-safe (one mutex; a record is a few map look-ups).
#pragma once
#include <utility>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "histogram/exponential.hpp"
#include "otlp/attributes.hpp"
#include "otlp/batch.hpp"
#include "probe/result.hpp"

namespace lse::otlp {

// The metrics this exporter sends, by row of kMetrics.
enum class M : std::size_t {
  duration,
  ttft,
  time_per_chunk,
  token_usage,
  stalls,
  stall_duration,
  chunks,
  tail,
  max_gap,
  gap_p95,
  phase,
  tokens_per_chunk,
};

struct MetricSpec {
  M id;
  const char* name;
  const char* unit;
  const char* description;
  bool histogram;  // exponential histogram; else a monotonic sum
};

inline constexpr MetricSpec kMetrics[] = {
    {M::duration, "gen_ai.client.operation.duration", "s", "GenAI operation duration.", true},
    {M::ttft, "gen_ai.client.operation.time_to_first_chunk", "s",
     "Time to receive the first chunk, from the request to the first chunk of the stream.", true},
    {M::time_per_chunk, "gen_ai.client.operation.time_per_output_chunk", "s",
     "Time per output chunk: for each chunk after the first, the time since the previous one.",
     true},
    {M::token_usage, "gen_ai.client.token.usage", "{token}",
     "Number of input and output tokens used.", true},
    {M::stalls, "llm_stream.stalls", "{stall}",
     "Inter-chunk gaps at or above the target's stall threshold.", false},
    {M::stall_duration, "llm_stream.stall.duration", "s", "Sum of stalled gaps.", false},
    {M::chunks, "llm_stream.chunks", "{chunk}", "Content chunks received.", false},
    {M::tail, "llm_stream.tail", "s",
     "Time from the last content chunk to the end of the stream (successful probes).", true},
    {M::max_gap, "llm_stream.max_gap", "s",
     "Largest inter-chunk gap of each stream (successful probes).", true},
    {M::gap_p95, "llm_stream.gap.p95", "s",
     "95th percentile of the inter-chunk gaps of each stream (successful probes).", true},
    {M::phase, "llm_stream.phase.duration", "s",
     "Connection phases of each probe (llm_stream.phase: resolve, connect, tls, request, "
     "headers, first_token).",
     true},
    {M::tokens_per_chunk, "llm_stream.tokens_per_chunk", "{token}",
     "Completion tokens per content chunk of each stream, where the server reports usage.", true},
};

constexpr const MetricSpec& spec_of(M m) { return kMetrics[static_cast<std::size_t>(m)]; }

class Aggregator {
 public:
  Aggregator(Temporality temporality, histogram::ExponentialSettings settings = {});

  // The targets whose probes are recorded, by name (at start and on reload;
  // probes of other targets are ignored, series of gone targets dropped).
  void set_targets(std::map<std::string, TargetAttributes> targets);

  // One finished probe at `now_ns` (unix nanoseconds). Warm-up and
  // canceled probes are not measurements and are ignored.
  void record(const probe::ProbeResult& r, std::uint64_t now_ns);

  // The metrics at `now_ns`: every series (cumulative), or those recorded
  // since the last collect(), which it resets (delta).
  Batch collect(std::uint64_t now_ns);

  Temporality temporality() const { return temporality_; }

 private:
  struct Histogram {
    histogram::Exponential h;
    double min = 0, max = 0;
    std::uint64_t start_ns = 0;
    bool touched = false;
  };
  struct Sum {
    double value = 0;
    std::uint64_t start_ns = 0;
    bool touched = false;
  };
  using Key = std::pair<M, Attributes>;

  void observe(M m, const Attributes& a, double v, std::uint64_t now_ns);
  void add(M m, const Attributes& a, double v, std::uint64_t now_ns);
  void record_locked(const probe::ProbeResult& r, const Attributes& base, std::uint64_t now_ns);

  const Temporality temporality_;
  const histogram::ExponentialSettings settings_;
  std::mutex mutex_;
  std::map<std::string, TargetAttributes> targets_;
  std::map<Key, Histogram> histograms_;
  std::map<Key, Sum> sums_;
};

// Prometheus bucket numbering (histogram/exponential.hpp) to OTLP's: the
// dense run from the lowest to the highest populated bucket, index - 1.
void to_otlp_buckets(const histogram::Exponential::Buckets& buckets, std::int32_t& offset,
                     std::vector<std::uint64_t>& counts);

}  // namespace lse::otlp
