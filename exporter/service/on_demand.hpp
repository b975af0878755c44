// GET /probe?target= in `serve`: one probe now, of a configured target, with
// the prober the scheduled probes use (the target's client style, secrets,
// proxy and deadlines, its secrets masked in what comes back), on the probe
// thread the target is bound to, so the server thread never waits. Its
// result goes to the asker only: no series, row or diagnosis of the
// schedule is touched. Guarded (ondemand/guard.hpp) and canceled when the
// asker leaves or the service stops.
#pragma once
#include <utility>  // before Asio with GCC 12 / C++20 (STYLE.md)

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "config/config.hpp"
#include "ondemand/guard.hpp"
#include "server/server.hpp"

namespace lse::service {

class OnDemandProbes {
 public:
  // Where a target's probes run: the io_context of its probe thread.
  using LaneOf = std::function<boost::asio::io_context&(const std::string& target)>;

  OnDemandProbes(LaneOf lane_of, std::string host_label, std::string user_agent);
  ~OnDemandProbes();
  OnDemandProbes(const OnDemandProbes&) = delete;
  OnDemandProbes& operator=(const OnDemandProbes&) = delete;

  // The probe hook: looks the request up in `config` (400 for what is not
  // there, 403 when probe_endpoint.max_concurrent is 0), applies the guard
  // (429 with Retry-After, 503), then starts the probe on the target's lane
  // and answers through `done` when it ends. Thread-safe.
  std::function<void()> start(const config::Config& config, const server::ProbeRequest& request,
                              server::ProbeDone done);

  // Cancels every on-demand probe in flight. Thread-safe.
  void cancel_all();

  struct Job;

 private:
  void run(const std::shared_ptr<Job>& job);
  void finish(const std::shared_ptr<Job>& job);

  LaneOf lane_of_;
  std::string host_label_;
  std::string user_agent_;
  ondemand::Guard guard_;
  std::mutex mutex_;  // guards jobs_
  std::set<std::shared_ptr<Job>> jobs_;
};

}  // namespace lse::service
