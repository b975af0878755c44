// The probe loop (DESIGN §1): per target, a round of all its prompts in a
// shuffled order every `interval` (± jitter), probes of one target never
// overlapping, all targets concurrently on one io_context. Warmup probes are
// marked and still delivered (metrics count them, rows drop them).
#pragma once
#include <utility>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "config/config.hpp"
#include "probe/result.hpp"

namespace lse::schedule {

using ResultSink = std::function<void(const probe::ProbeResult&)>;
using ProbeStartHook = std::function<void(const std::string& target)>;

// A stable fingerprint of everything that changes how a target is probed;
// reload restarts exactly the targets whose fingerprint changed.
std::string fingerprint(const config::Target& target, const config::Config& config);

class Scheduler {
 public:
  Scheduler(boost::asio::io_context& io, ResultSink sink, std::string host_label,
            std::string user_agent, std::uint64_t seed);
  ~Scheduler();

  // Starts, keeps or restarts target loops to match `config`. Call on the io
  // thread. Throws std::runtime_error when a target cannot be set up (TLS
  // material); in that case nothing changes.
  void apply(const config::Config& config);

  // Cancels every loop and probe in flight. Call on the io thread.
  void stop();

  std::size_t running() const { return loops_.size(); }

  struct Loop;  // one target's loop (defined in scheduler.cpp)

 private:
  boost::asio::io_context& io_;
  ResultSink sink_;
  std::string host_label_;
  std::string user_agent_;
  std::mt19937_64 rng_;
  std::map<std::string, std::shared_ptr<Loop>> loops_;
};

}  // namespace lse::schedule
