// The OTLP push (docs/otlp.md): probe threads hand every result to record(),
// which only aggregates (a mutex and a few map look-ups: probing never waits
// on export); an export thread of its own collects a batch every interval,
// encodes it and queues it (at most otlp.max_queue batches: beyond, the
// oldest is dropped), then sends the queue in order. 429, 502, 503, 504 and
// transport errors are retried with exponential backoff and jitter, or after
// the receiver's Retry-After; other answers, and a batch still failing after
// kMaxAttempts, drop it. Drops are counted in data points (the callback feeds
// llm_stream_otlp_dropped_total); each distinct export error is logged once.
// stop() collects and sends a last batch, bounded by otlp.timeout.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "config/config.hpp"
#include "otlp/aggregation.hpp"
#include "otlp/batch.hpp"
#include "otlp/sender.hpp"
#include "probe/result.hpp"
#include "util/redact.hpp"

namespace lse::otlp {

inline constexpr int kMaxAttempts = 5;

// Where a failed export goes next: retried after `wait`, or dropped.
struct RetryDecision {
  bool retry = false;
  std::chrono::milliseconds wait{0};
};
// Pure: the answer (or transport error) of attempt `attempt` (1-based);
// `jitter` in [0, 1) spreads the backoff by +-20%.
RetryDecision retry_decision(const PostResult& result, int attempt,
                             std::chrono::milliseconds initial_backoff, double jitter);

// service.name, service.version and service.instance.id, then the
// configured attributes (OTEL_RESOURCE_ATTRIBUTES, `resource:`) over them.
Attributes resource_attributes(const config::OtlpOptions& options, const std::string& version,
                               const std::string& instance_id);

class Pipeline {
 public:
  using DropCounter = std::function<void(std::uint64_t data_points)>;

  // Throws std::runtime_error when the endpoint's TLS material cannot be loaded.
  // `carried`: the aggregation of the pipeline this one replaces (on a
  // reload), taken over when its temporality is the same, so a moved
  // endpoint goes on with the same series; else a new one.
  Pipeline(const config::OtlpOptions& options, Attributes resource, std::string version,
           DropCounter count_drops, std::shared_ptr<Aggregator> carried = nullptr);
  ~Pipeline();  // stop()s
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  const config::OtlpOptions& options() const { return options_; }
  std::shared_ptr<Aggregator> aggregation() const { return aggregator_; }

  // The running config's targets (their attributes; others are ignored).
  void set_targets(const config::Config& config);
  // Any thread; returns at once.
  void record(const probe::ProbeResult& r);

  void start();
  void stop();

 private:
  struct Pending {
    std::string body;
    std::size_t data_points = 0;
    int attempts = 0;
  };
  using Clock = std::chrono::steady_clock;

  void run();
  void enqueue_collection();
  // Sends the head of the queue once; false when it is to wait (retry later).
  bool send_head(Clock::time_point& next_try);
  void drop(const Pending& p, const std::string& why);
  void log_error_once(const std::string& raw);  // header values masked
  void count_rejected(const PostResult& accepted);
  void flush_on_stop();

  const config::OtlpOptions options_;
  std::shared_ptr<Aggregator> aggregator_;
  Sender sender_;
  const Attributes resource_;
  const std::string version_;
  DropCounter count_drops_;
  util::Redactor secrets_;  // the header values: never in a log line

  std::mutex mutex_;  // stopping_ and the wake-up
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;

  // export thread only
  std::deque<Pending> queue_;
  std::set<std::string> logged_errors_;
  std::mt19937_64 random_{std::random_device{}()};
};

}  // namespace lse::otlp
