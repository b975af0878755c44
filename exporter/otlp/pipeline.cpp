#include "otlp/pipeline.hpp"

#include <algorithm>

#include "log/log.hpp"
#include "net/url.hpp"
#include "otlp/encode.hpp"
#include "otlp/response.hpp"
#include "util/wall_clock.hpp"

namespace lse::otlp {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kMaxBackoff{30000};
constexpr milliseconds kMaxRetryAfter{300000};

std::uint64_t unix_nanos() { return static_cast<std::uint64_t>(wall_clock::unix_now() * 1e9); }

bool retryable(const PostResult& r) {
  return r.status == 0 || r.status == 429 || r.status == 502 || r.status == 503 || r.status == 504;
}

// The endpoint as logs show it: no userinfo, no query.
std::string shown_endpoint(const std::string& endpoint) {
  const auto url = net::parse_url(endpoint);
  return url ? url->redacted() : std::string("<invalid>");
}

}  // namespace

RetryDecision retry_decision(const PostResult& result, int attempt, milliseconds initial_backoff,
                             double jitter) {
  if (!retryable(result) || attempt >= kMaxAttempts) return {};
  if (result.retry_after) {
    const auto wait = milliseconds(static_cast<std::int64_t>(*result.retry_after * 1000));
    return {true, std::clamp(wait, milliseconds(0), kMaxRetryAfter)};
  }
  const double factor = static_cast<double>(1ull << std::min(attempt - 1, 20));
  const double spread = 0.8 + 0.4 * jitter;
  const auto wait =
      milliseconds(static_cast<std::int64_t>(initial_backoff.count() * factor * spread));
  return {true, std::min(wait, kMaxBackoff)};
}

Attributes resource_attributes(const config::OtlpOptions& options, const std::string& version,
                               const std::string& instance_id) {
  std::map<std::string, std::string> a = {{"service.name", "llm-stream-exporter"},
                                          {"service.version", version},
                                          {"service.instance.id", instance_id}};
  for (const auto& [k, v] : options.resource) a[k] = v;
  Attributes out;
  for (auto& [k, v] : a) out.push_back({k, v});
  return out;
}

namespace {

std::vector<std::string> header_values(const config::OtlpOptions& options) {
  std::vector<std::string> values;
  for (const auto& h : options.headers) values.push_back(h.second);
  return values;
}

std::shared_ptr<Aggregator> aggregation_for(const config::OtlpOptions& options,
                                            std::shared_ptr<Aggregator> carried) {
  const Temporality t = options.temporality == config::OtlpOptions::Temporality::delta
                            ? Temporality::delta
                            : Temporality::cumulative;
  if (carried && carried->temporality() == t) return carried;
  return std::make_shared<Aggregator>(t);
}

}  // namespace

Pipeline::Pipeline(const config::OtlpOptions& options, Attributes resource, std::string version,
                   DropCounter count_drops, std::shared_ptr<Aggregator> carried)
    : options_(options),
      aggregator_(aggregation_for(options, std::move(carried))),
      sender_(options),
      resource_(std::move(resource)),
      version_(std::move(version)),
      count_drops_(std::move(count_drops)),
      secrets_(header_values(options)) {}

Pipeline::~Pipeline() { stop(); }

void Pipeline::set_targets(const config::Config& config) {
  std::map<std::string, TargetAttributes> targets;
  for (const auto& t : config.targets) targets.emplace(t.name, target_attributes(t));
  aggregator_->set_targets(std::move(targets));
}

void Pipeline::record(const probe::ProbeResult& r) { aggregator_->record(r, unix_nanos()); }

void Pipeline::start() {
  if (thread_.joinable()) return;
  log::info(
      "otlp push",
      {{"endpoint", shown_endpoint(options_.endpoint)},
       {"interval_s", std::chrono::duration<double>(options_.interval).count()},
       {"protocol", options_.protocol == config::OtlpOptions::Protocol::http_json
                        ? "http/json"
                        : "http/protobuf"},
       {"temporality",
        options_.temporality == config::OtlpOptions::Temporality::delta ? "delta" : "cumulative"}});
  thread_ = std::thread([this] { run(); });
}

void Pipeline::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Pipeline::enqueue_collection() {
  Batch batch = aggregator_->collect(unix_nanos());
  if (batch.metrics.empty()) return;
  batch.resource = resource_;
  batch.scope_name = "llm-stream-exporter";
  batch.scope_version = version_;
  const bool json = options_.protocol == config::OtlpOptions::Protocol::http_json;
  queue_.push_back({json ? encode_json(batch) : encode_protobuf(batch), batch.data_points(), 0});
  while (queue_.size() > options_.max_queue) {
    drop(queue_.front(), "queue full");
    queue_.pop_front();
  }
}

void Pipeline::drop(const Pending& p, const std::string& why) {
  if (count_drops_) count_drops_(p.data_points);
  log_error_once("batch dropped: " + why);
}

// Points a receiver accepted the request of but rejected (partial_success):
// dropped, counted, the reason logged once; never retried.
void Pipeline::count_rejected(const PostResult& accepted) {
  const auto partial = partial_success(accepted.body, accepted.content_type);
  if (!partial) return;
  if (partial->rejected_data_points > 0 && count_drops_)
    count_drops_(static_cast<std::uint64_t>(partial->rejected_data_points));
  log_error_once("receiver rejected " + std::to_string(partial->rejected_data_points) +
                 " data points: " + partial->error_message);
}

void Pipeline::log_error_once(const std::string& raw) {
  const std::string error = secrets_.mask(raw);
  if (!logged_errors_.insert(error).second) return;
  log::error("otlp export error",
             {{"endpoint", shown_endpoint(options_.endpoint)},
              {"error", error},
              {"note",
               "logged once per distinct error, llm_stream_otlp_dropped_total counts "
               "dropped data points"}});
}

bool Pipeline::send_head(Clock::time_point& next_try) {
  Pending& head = queue_.front();
  const bool json = options_.protocol == config::OtlpOptions::Protocol::http_json;
  const PostResult r = sender_.post(head.body, json ? kJsonContentType : kProtobufContentType);
  if (r.error.empty() && r.status >= 200 && r.status < 300) {
    count_rejected(r);
    queue_.pop_front();
    return true;
  }
  const std::string what = r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error;
  log_error_once(what);
  ++head.attempts;
  const auto initial =
      std::min(milliseconds(1000), std::chrono::duration_cast<milliseconds>(options_.interval));
  const double jitter = std::uniform_real_distribution<double>(0, 1)(random_);
  const RetryDecision d = retry_decision(r, head.attempts, initial, jitter);
  if (!d.retry) {
    drop(head, what + (retryable(r) ? " (retries exhausted)" : " (not retryable)"));
    queue_.pop_front();
    return true;
  }
  next_try = Clock::now() + d.wait;
  return false;
}

void Pipeline::run() {
  auto next_collect = Clock::now() + options_.interval;
  auto next_try = Clock::now();
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      const auto until = queue_.empty() ? next_collect : std::min(next_collect, next_try);
      wake_.wait_until(lock, until, [&] { return stopping_; });
      if (stopping_) break;
    }
    if (Clock::now() >= next_collect) {
      enqueue_collection();
      next_collect += options_.interval;
      if (next_collect < Clock::now()) next_collect = Clock::now() + options_.interval;
    }
    while (!queue_.empty() && Clock::now() >= next_try && send_head(next_try)) {
    }
  }
  flush_on_stop();
}

// One last collection and one attempt per queued batch, within otlp.timeout
// in all; what is left is dropped (and counted).
void Pipeline::flush_on_stop() {
  enqueue_collection();
  const auto deadline = Clock::now() + options_.timeout;
  while (!queue_.empty() && Clock::now() < deadline) {
    const bool json = options_.protocol == config::OtlpOptions::Protocol::http_json;
    const PostResult r =
        sender_.post(queue_.front().body, json ? kJsonContentType : kProtobufContentType);
    if (r.error.empty() && r.status >= 200 && r.status < 300) count_rejected(r);
    if (!(r.error.empty() && r.status >= 200 && r.status < 300))
      drop(queue_.front(),
           "at shutdown: " + (r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error));
    queue_.pop_front();
  }
  for (const auto& p : queue_) drop(p, "at shutdown: no time left");
  queue_.clear();
}

}  // namespace lse::otlp
