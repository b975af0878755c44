// On-demand probes of `serve` (on_demand.hpp).
#include "service/on_demand.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <exception>

#include "log/log.hpp"
#include "net/url.hpp"
#include "ondemand/answer.hpp"
#include "ondemand/selection.hpp"
#include "probe/prober.hpp"
#include "report/row_json.hpp"
#include "schedule/probe_runner.hpp"
#include "util/redact.hpp"

namespace lse::service {

namespace asio = boost::asio;

struct OnDemandProbes::Job {
  Job(const config::Target& t, const config::Prompt& p, server::ProbeRequest r, server::ProbeDone d,
      asio::io_context& lane)
      : target(t), prompt(p), request(std::move(r)), done(std::move(d)), io(lane) {}

  config::Target target;
  config::Prompt prompt;
  server::ProbeRequest request;
  server::ProbeDone done;
  asio::io_context& io;
  // On the lane's thread only:
  std::unique_ptr<probe::Prober> prober;
  probe::Trace trace;
  bool canceled = false;
};

namespace {

server::ProbeAnswer refusal(int status, std::string message) {
  server::ProbeAnswer a;
  a.status = status;
  a.content_type = "text/plain; charset=utf-8";
  a.body = std::move(message) + "\n";
  return a;
}

// The URL as the debug answer shows it: its credentials redacted, and any
// secret of the target masked wherever it sits (a key in a path).
std::string url_redacted(const config::Target& t) {
  const auto url = net::parse_url(t.url);
  return url ? util::Redactor(config::secret_values(t)).mask(url->redacted()) : "";
}

server::ProbeAnswer answer(const OnDemandProbes::Job& job, const probe::ProbeResult& r) {
  server::ProbeAnswer a;
  if (job.request.json) {
    a.content_type = "application/json";
    a.body = report::to_row_json(r) + "\n";
  } else if (job.request.debug) {
    a.content_type = "text/plain; charset=utf-8";
    a.body = ondemand::render_probe_debug(
        r, job.trace, {url_redacted(job.target), std::string(api::dialect_name(job.target.api))});
  } else {
    a.body = ondemand::render_probe_metrics(r);
  }
  return a;
}

// The guard's verdict as the answer to a refused request; nullopt: go.
std::optional<server::ProbeAnswer> refused(const ondemand::Admission& admission,
                                           const config::Config& config,
                                           const std::string& target) {
  using V = ondemand::Admission::Verdict;
  switch (admission.verdict) {
    case V::go: return std::nullopt;
    case V::off: return refusal(403, "on-demand probes are off (probe_endpoint.max_concurrent: 0)");
    case V::too_soon: {
      auto a = refusal(429, "target \"" + target + "\" was probed on demand less than " +
                                config::format_duration(config.min_interval) +
                                " (min_interval) ago; retry in " +
                                std::to_string(admission.retry_after_seconds) + "s");
      a.retry_after_seconds = admission.retry_after_seconds;
      return a;
    }
    case V::busy: {
      auto a = refusal(503, std::to_string(config.probe_endpoint.max_concurrent) +
                                " on-demand probes are running already "
                                "(probe_endpoint.max_concurrent); retry when one is done");
      a.retry_after_seconds = 1;
      return a;
    }
  }
  return std::nullopt;
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

OnDemandProbes::OnDemandProbes(LaneOf lane_of, std::string host_label, std::string user_agent)
    : lane_of_(std::move(lane_of)),
      host_label_(std::move(host_label)),
      user_agent_(std::move(user_agent)) {}

OnDemandProbes::~OnDemandProbes() = default;

std::function<void()> OnDemandProbes::start(const config::Config& config,
                                            const server::ProbeRequest& request,
                                            server::ProbeDone done) {
  if (config.probe_endpoint.max_concurrent == 0) {
    done(*refused({ondemand::Admission::Verdict::off, 0}, config, request.target));
    return {};
  }
  const ondemand::Selection selection = ondemand::select(config, request.target, request.prompt);
  if (!selection.error.empty()) {
    done(refusal(400, selection.error));
    return {};
  }
  const auto admission = guard_.admit(
      request.target, steady_seconds(), std::chrono::duration<double>(config.min_interval).count(),
      static_cast<std::size_t>(config.probe_endpoint.max_concurrent));
  if (auto no = refused(admission, config, request.target)) {
    done(std::move(*no));
    return {};
  }
  auto job = std::make_shared<Job>(*selection.target, *selection.prompt, request, std::move(done),
                                   lane_of_(request.target));
  {
    std::lock_guard lock(mutex_);
    jobs_.insert(job);
  }
  asio::post(job->io, [this, job] { run(job); });
  return [weak = std::weak_ptr<Job>(job)] {
    auto j = weak.lock();
    if (!j) return;
    asio::post(j->io, [j] {
      j->canceled = true;
      if (j->prober) j->prober->cancel();
    });
  };
}

namespace {

asio::awaitable<void> probe_once(std::shared_ptr<OnDemandProbes::Job> job,
                                 std::function<void(const probe::ProbeResult&)> then) {
  probe::ProbeResult r = co_await job->prober->run(job->prompt);
  schedule::clean_upstream_text(r, util::Redactor(config::secret_values(job->target)));
  then(r);
}

}  // namespace

// On the target's lane: a prober of its own (a connection of its own too:
// the scheduled prober's warm connection stays the schedule's).
void OnDemandProbes::run(const std::shared_ptr<Job>& job) {
  if (job->canceled) {
    job->done(refusal(503, "probe canceled"));
    return finish(job);
  }
  try {
    job->prober = std::make_unique<probe::Prober>(job->io, job->target, host_label_, user_agent_);
  } catch (const std::exception& e) {
    job->done(refusal(500, std::string("cannot probe this target: ") + e.what()));
    return finish(job);
  }
  if (job->request.debug) job->prober->set_trace(&job->trace);
  auto then = [this, job](const probe::ProbeResult& r) {
    log::info("on-demand probe", {{"target", r.target},
                                  {"prompt", r.prompt},
                                  {"probe_id", r.id},
                                  {"ok", r.ok},
                                  {"reason", probe::to_string(r.reason)},
                                  {"ttft_ms", r.ttft.value_or(0) * 1e3},
                                  {"chunks", r.chunks},
                                  {"stalls", r.stalls}});
    job->done(answer(*job, r));
    finish(job);
  };
  asio::co_spawn(job->io, probe_once(job, std::move(then)), asio::detached);
}

void OnDemandProbes::finish(const std::shared_ptr<Job>& job) {
  guard_.finish();
  std::lock_guard lock(mutex_);
  jobs_.erase(job);
}

void OnDemandProbes::cancel_all() {
  std::lock_guard lock(mutex_);
  for (const auto& job : jobs_)
    asio::post(job->io, [job] {
      job->canceled = true;
      if (job->prober) job->prober->cancel();
    });
}

}  // namespace lse::service
