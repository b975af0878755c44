// The service of `serve` (see service.hpp): life cycle (set up, start, stop),
// the reload transaction, and the hooks the HTTP server calls.
#include "service/service.hpp"

#include <utility>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "log/log.hpp"
#include "metrics/scrape_budget.hpp"
#include "net/proxy_env.hpp"
#include "otlp/pipeline.hpp"
#include "probe/probe_loop.hpp"
#include "schedule/lanes.hpp"
#include "schedule/scheduler.hpp"
#include "server/server.hpp"
#include "service/on_demand.hpp"
#include "service/views.hpp"
#include "util/wall_clock.hpp"

namespace lse::service {
namespace {

namespace asio = boost::asio;

// After stop() cancels every probe, their handlers normally finish at once and
// the probe thread's run() returns by itself. A name resolution in flight does
// not: getaddrinfo runs on Asio's resolver thread and cannot be interrupted,
// so the wait for it is bounded and the io_context is stopped after it.
constexpr std::chrono::milliseconds kCanceledProbesGrace{300};

// Steps applied in order; when one throws, the ones already applied are
// undone newest first and the error goes on to the caller.
class Transaction {
 public:
  void step(const std::function<void()>& apply, std::function<void()> undo) {
    try {
      apply();
    } catch (...) {
      roll_back();
      throw;
    }
    undos_.push_back(std::move(undo));
  }

 private:
  void roll_back() {
    // Newest first: each undo expects the state its own step found.
    while (!undos_.empty()) {
      const auto undo = std::move(undos_.back());
      undos_.pop_back();
      try {
        undo();
      } catch (const std::exception& e) {
        log::error("reload rollback step failed", {{"error", e.what()}});
      }
    }
  }
  std::vector<std::function<void()>> undos_;
};

// One log line per distinct rows-file error; the counter counts every one.
class WriteErrorLog {
 public:
  explicit WriteErrorLog(metrics::Metrics& metrics) : metrics_(metrics) {}
  void operator()(const std::string& message) {
    metrics_.count_row_write_error();
    std::lock_guard lock(mutex_);
    if (seen_.insert(message).second)
      log::error(
          "rows file error, rows are being lost",
          {{"error", message},
           {"note",
            "logged once per distinct error, llm_stream_row_write_errors_total counts all"}});
  }

 private:
  metrics::Metrics& metrics_;
  std::mutex mutex_;
  std::set<std::string> seen_;
};

// One structured warning per config warning: at startup and after every
// successful reload (check-config prints the same on stderr).
void log_config_warnings(const config::Config& cfg) {
  for (const auto& w : cfg.findings.warnings)
    log::warn("config warning",
              {{"file", w.file}, {"line", w.line}, {"column", w.column}, {"warning", w.message}});
}

// Targets that go direct although the environment names a proxy for them
// (no proxy_url, proxy_from_environment off, NO_PROXY not matching), and
// those variables' names; logged once at start and again only when a reload
// changes them. Returns what was logged ("" when nothing applies).
std::string log_ignored_proxy_variables(const config::Config& cfg, const std::string& before) {
  std::string targets;
  std::set<std::string> variables;
  for (const auto& t : cfg.targets) {
    if (!t.proxy_url.empty() || t.proxy_from_environment) continue;
    const auto url = net::parse_url(t.url);
    if (!url) continue;
    const net::EnvProxy env = net::env_proxy_for(*url);
    if (!env.applies()) continue;
    targets += (targets.empty() ? "" : ",") + t.name;
    variables.insert(env.variable);
  }
  std::string names;
  for (const auto& v : variables) names += (names.empty() ? "" : ",") + v;
  std::string now = targets.empty() ? "" : targets + " " + names;
  if (now.empty() || now == before) return now;
  log::info("proxy variables set but not used",
            {{"targets", targets},
             {"variables", names},
             {"hint",
              "these targets connect directly; set proxy_from_environment: true (or proxy_url) "
              "on a target to go through the proxy"}});
  return now;
}

// The config's `web:` as the HTTP server takes it.
server::Limits limits_of(const config::Web& web) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  server::Limits limits;
  limits.max_connections = web.max_connections;
  limits.max_connections_per_address = web.max_connections_per_address;
  limits.header_timeout = duration_cast<milliseconds>(web.header_timeout);
  limits.idle_timeout = duration_cast<milliseconds>(web.idle_timeout);
  limits.write_timeout = duration_cast<milliseconds>(web.write_timeout);
  return limits;
}

// At start and on every reload the rows path must take rows (a FIFO or a
// read-only file is a config error at rows.path, never a hang or a lost row),
// and the running config holds only the shard's targets.
config::LoadOptions load_options(const shard::Shard& shard) {
  config::LoadOptions load;
  load.check_rows_path = true;
  load.keep_target = shard::target_filter(shard);
  return load;
}

// The build and shard the exporter's own series report.
metrics::BuildInfo exporter_info(const Identity& identity, const shard::Shard& shard) {
  metrics::BuildInfo info = identity.build;
  info.shard_index = shard.index;
  info.shard_count = shard.count;
  return info;
}

// A shard may hold no target of a config (fewer targets than shards, or a
// hash that leaves it none): it serves its own series and says so once,
// and again only after a reload that gave it targets.
void log_empty_share(const shard::Shard& shard, const config::Config& cfg, bool was_empty) {
  if (shard.count <= 1 || !cfg.targets.empty() || was_empty) return;
  log::info("no target of the config is in this shard; serving the exporter's own series",
            {{"shard_index", shard.index}, {"shard_count", shard.count}});
}

// The OTLP push of a config with an `otlp:` section (not started), fed the
// config's targets; null without one.
// `running`: the pipeline it replaces, whose series it goes on with.
std::shared_ptr<otlp::Pipeline> otlp_pipeline(const config::Config& cfg, const Identity& identity,
                                              metrics::Metrics& metrics,
                                              const otlp::Pipeline* running = nullptr) {
  if (!cfg.otlp) return nullptr;
  auto p = std::make_shared<otlp::Pipeline>(
      *cfg.otlp, otlp::resource_attributes(*cfg.otlp, identity.build.version, identity.host_label),
      identity.build.version, [&metrics](std::uint64_t n) { metrics.count_otlp_dropped(n); },
      running ? running->aggregation() : nullptr);
  // A carried aggregation learns the new targets when the reload commits.
  if (!running) p->set_targets(cfg);
  return p;
}

}  // namespace

struct Service::Impl {
  const std::string config_path;
  const shard::Shard shard;
  mutable std::mutex snapshot_mutex;  // guards `current` only
  std::shared_ptr<const config::Config> current;
  std::mutex reload_mutex;  // one transaction at a time

  metrics::Metrics metrics;
  report::RowStore rows;
  WriteErrorLog write_errors{metrics};

  // The probe threads (`--probe.threads`), each with its io_context and the
  // scheduler of the targets bound to it (schedule/lanes.hpp).
  struct Lane {
    asio::io_context io;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{
        asio::make_work_guard(io)};
    schedule::Scheduler scheduler;
    std::thread thread;
    std::future<void> done;
    Lane(schedule::ResultSink sink, const Identity& identity, std::uint64_t seed)
        : scheduler(io, std::move(sink), identity.host_label, identity.user_agent, seed) {}
  };
  std::vector<std::unique_ptr<Lane>> lanes;
  probe::WakeupSettings wakeup;  // each probe thread's loop (probe/probe_loop.hpp)
  // GET /probe?target=: on the lane of the target. Declared after the lanes
  // so that it goes first: a probe it still holds (its lane's thread did not
  // end it within the grace) closes its sockets while their io_context lives.
  std::unique_ptr<OnDemandProbes> on_demand;

  std::string ignored_proxy_variables;  // what log_ignored_proxy_variables last saw

  // The OTLP push (otlp/pipeline.hpp), null without `otlp:`. Probe threads
  // take a reference under the mutex; a reload swaps it.
  const Identity identity;
  mutable std::mutex otlp_mutex;
  std::shared_ptr<otlp::Pipeline> otlp;
  std::shared_ptr<otlp::Pipeline> otlp_next;  // built by a reload, swapped in once it commits

  std::atomic<bool> ready{false};
  bool stopped = false;
  // --web.listen-address was given: it wins over the config's `listen:`.
  const bool listen_from_flag;
  mutable std::mutex listen_mutex;  // guards listen_address only
  std::string listen_address;
  std::unique_ptr<server::Server> http;

  Impl(std::string path, std::shared_ptr<const config::Config> initial, const Identity& identity,
       std::uint64_t seed, HttpOptions http_options, ProbeOptions probe_options)
      : config_path(std::move(path)),
        shard(probe_options.shard),
        current(std::move(initial)),
        metrics(exporter_info(identity, shard)),
        rows(current->rows.ring, current->rows),
        identity(identity),
        listen_from_flag(!http_options.listen_address.empty()),
        listen_address(listen_from_flag ? http_options.listen_address : current->listen) {
    // First: a web config that does not load stops the set-up before
    // anything is scheduled.
    http = std::make_unique<server::Server>(
        listen_address, hooks(), rows,
        server::ServerOptions{std::move(http_options.routing),
                              std::move(http_options.web_config_file), limits_of(current->web)});
    log_config_warnings(*current);
    if (shard.count > 1)
      log::info("sharded", {{"shard_index", shard.index},
                            {"shard_count", shard.count},
                            {"targets", current->targets.size()}});
    log_empty_share(shard, *current, false);
    ignored_proxy_variables = log_ignored_proxy_variables(*current, {});
    rows.on_write_error([this](const std::string& message) { write_errors(message); });
    metrics.apply_config(*current);
    otlp = otlp_pipeline(*current, identity, metrics);
    metrics.set_reload_result(true, wall_clock::unix_now());
    const std::size_t n =
        probe_options.threads > 0
            ? probe_options.threads
            : schedule::auto_lanes(current->targets.size(), std::thread::hardware_concurrency());
    wakeup = probe_options.wakeup;
    log::info("probe threads",
              {{"threads", n},
               {"targets", current->targets.size()},
               {"wakeup_window_us",
                std::chrono::duration_cast<std::chrono::microseconds>(wakeup.window).count()}});
    for (std::size_t k = 0; k < n; ++k) {
      lanes.push_back(std::make_unique<Lane>([this](const probe::ProbeResult& r) { deliver(r); },
                                             identity, seed + k));
      lanes.back()->scheduler.on_backoff(
          [this](const std::string& target, double /*wait_s*/) { metrics.count_backoff(target); });
    }
    on_demand = std::make_unique<OnDemandProbes>(
        [this](const std::string& target) -> asio::io_context& {
          return lanes[lanes.size() == 1 ? 0 : schedule::lane_of(target, lanes.size())]->io;
        },
        identity.host_label, identity.user_agent);
    // No probe thread yet: this thread is every lane's io thread.
    for (std::size_t k = 0; k < n; ++k) lanes[k]->scheduler.apply(lane_config(*current, k));
  }

  ~Impl() { stop(); }

  // --- probe thread -----------------------------------------------------------

  void deliver(const probe::ProbeResult& r) {
    metrics.record(r);
    rows.add(r);
    if (auto p = otlp_now()) p->record(r);
  }

  std::shared_ptr<otlp::Pipeline> otlp_now() const {
    std::lock_guard lock(otlp_mutex);
    return otlp;
  }

  config::Config lane_config(const config::Config& all, std::size_t k) const {
    return lanes.size() == 1 ? all : schedule::lane_config(all, k, lanes.size());
  }

  // A lane's scheduler lives on its thread; before start() this thread is it.
  // An exception does not cross threads: its message does, and is thrown
  // again here (exception objects shared by two threads are freed by
  // whichever lets go last, through reference counts in the uninstrumented
  // libstdc++ that ThreadSanitizer cannot see).
  static void on_lane(Lane& lane, const std::function<void()>& fn) {
    if (!lane.thread.joinable()) return fn();
    std::promise<std::string> done;  // "" or what() of what fn threw
    asio::post(lane.io, [&] {
      std::string error;
      try {
        fn();
      } catch (const std::exception& e) {
        error = e.what();
        if (error.empty()) error = "unknown error on the probe thread";
      }
      done.set_value(std::move(error));
    });
    if (std::string error = done.get_future().get(); !error.empty())
      throw std::runtime_error(error);
  }

  void start_probe_threads() {
    for (auto& lane : lanes) {
      std::promise<void> done;
      lane->done = done.get_future();
      lane->thread = std::thread([l = lane.get(), w = wakeup, done = std::move(done)]() mutable {
        probe::run_probe_loop(l->io, w);
        done.set_value();
      });
    }
  }

  // Every lane's probes are canceled first, then each lane gets the grace
  // to end them.
  void stop_probe_threads() {
    on_demand->cancel_all();
    for (auto& lane : lanes) {
      Lane& l = *lane;
      on_lane(l, [&l] { l.scheduler.stop(); });
      l.work.reset();
    }
    for (auto& lane : lanes) {
      if (!lane->thread.joinable()) continue;
      if (lane->done.wait_for(kCanceledProbesGrace) == std::future_status::timeout) lane->io.stop();
      lane->thread.join();
    }
  }

  // --- life cycle -------------------------------------------------------------

  void start() {
    if (auto p = otlp_now()) p->start();
    start_probe_threads();
    try {
      http->start();
    } catch (...) {
      stop();
      throw;
    }
    ready = true;
  }

  void stop() {
    if (stopped) return;
    stopped = true;
    ready = false;
    if (http) http->stop();
    stop_probe_threads();
    // After the probes: their last results are in the final export.
    if (auto p = otlp_now()) p->stop();
  }

  std::shared_ptr<const config::Config> snapshot() const {
    std::lock_guard lock(snapshot_mutex);
    return current;
  }

  // --- reload -----------------------------------------------------------------

  ReloadResult reload(const std::string& path) {
    std::lock_guard one_at_a_time(reload_mutex);
    const bool was_empty = snapshot()->targets.empty();
    std::shared_ptr<const config::Config> next;
    try {
      next = std::make_shared<const config::Config>(config::load_file(path, load_options(shard)));
      switch_parts(*snapshot(), *next);
    } catch (const std::exception& e) {
      return refuse(e.what());
    }
    {
      std::lock_guard lock(snapshot_mutex);
      current = next;
    }
    switch_otlp(*next);
    metrics.set_reload_result(true, wall_clock::unix_now());
    metrics.count_reload(true);
    log::info("config reloaded", {{"targets", next->targets.size()}});
    log_empty_share(shard, *next, was_empty);
    log_config_warnings(*next);
    ignored_proxy_variables = log_ignored_proxy_variables(*next, ignored_proxy_variables);
    return {true, "config reloaded"};
  }

  // Rows first (the store opens a new file before it lets the old one go, so
  // its undo is exact), then metrics (so a new target's series exist before
  // its first probe), then the scheduler (which changes nothing when it
  // throws), then the HTTP server's limits, and last its listener: binding
  // the new address is the one step that may fail for reasons outside the
  // file (the port is taken), and nothing after it can fail, so a moved
  // listener never needs moving back.
  void switch_parts(const config::Config& prev, const config::Config& next) {
    Transaction tx;
    tx.step([&] { rows.reconfigure(next.rows.ring, next.rows); },
            [&] { rows.reconfigure(prev.rows.ring, prev.rows); });
    tx.step([&] { metrics.apply_config(next); }, [&] { metrics.apply_config(prev); });
    for (std::size_t k = 0; k < lanes.size(); ++k) {
      Lane* l = lanes[k].get();
      tx.step([&, l, k] { on_lane(*l, [&] { l->scheduler.apply(lane_config(next, k)); }); },
              [&, l, k] { on_lane(*l, [&] { l->scheduler.apply(lane_config(prev, k)); }); });
    }
    if (!(next.web == prev.web)) {
      tx.step([&] { http->set_limits(limits_of(next.web)); },
              [&] { http->set_limits(limits_of(prev.web)); });
    }
    // A changed `otlp:` gets a pipeline of its own, built here (its CA file
    // may not load) and swapped in by switch_otlp() once the reload commits.
    if (!(next.otlp == prev.otlp)) {
      tx.step([&] { otlp_next = otlp_pipeline(next, identity, metrics, otlp_now().get()); },
              [&] { otlp_next.reset(); });
    }
    tx.step([&] { move_listener(prev.listen, next.listen); }, [] {});
  }

  // The committed config's OTLP push: the pipeline switch_parts built for a
  // changed `otlp:` replaces the running one (which sends its last batch as
  // it stops; the new one goes on with its series when the temporality is
  // the same), and learns the new targets.
  void switch_otlp(const config::Config& next) {
    std::shared_ptr<otlp::Pipeline> old;
    const bool changed = otlp_next != nullptr || (!next.otlp && otlp_now());
    if (changed) {
      if (otlp_next && ready) otlp_next->start();
      std::lock_guard lock(otlp_mutex);
      old = std::exchange(otlp, std::exchange(otlp_next, nullptr));
    }
    if (auto p = otlp_now()) p->set_targets(next);
    if (old) old->stop();
  }

  // `listen:` changed: the server binds the new address, then closes the
  // old one. With --web.listen-address the flag keeps deciding.
  void move_listener(const std::string& from, const std::string& to) {
    if (from == to) return;
    if (listen_from_flag) {
      log::info("listen: changed in the config, --web.listen-address keeps the listener",
                {{"config", to}, {"listening", listen_address_now()}});
      return;
    }
    try {
      http->rebind(to);
    } catch (const std::exception& e) {
      throw std::runtime_error("listen: cannot move from " + from + " to " + to + " (" + e.what() +
                               "); still listening on " + from);
    }
    {
      std::lock_guard lock(listen_mutex);
      listen_address = to;
    }
    log::info("listening", {{"address", to}, {"port", http->port()}, {"previous", from}});
  }

  std::string listen_address_now() const {
    std::lock_guard lock(listen_mutex);
    return listen_address;
  }

  ReloadResult refuse(const std::string& error) {
    metrics.set_reload_result(false, 0);
    metrics.count_reload(false);
    log::error("reload failed, keeping the running config", {{"error", error}});
    return {false, error};
  }

  // --- what the HTTP server asks ------------------------------------------------

  // The exposition into `sink` within metrics.max_scrape_bytes; "" when
  // whole, else the refusal (warned about at most once a minute, with the
  // count of refusals in between).
  std::string scrape(metrics::Exposition format, const metrics::ExpositionSink& sink) {
    const auto config = snapshot();
    update_diagnosis(metrics, rows, *config);
    metrics::ScrapeBudget budget(config->metrics.max_scrape_bytes);
    metrics.render(format, budget.guard(sink));
    if (!budget.exceeded()) return {};
    const auto now = std::chrono::steady_clock::now();
    const std::lock_guard lock(refusal_mutex);
    if (refusal_warned && now - last_refusal_warning < std::chrono::minutes(1)) {
      ++refusals_unwarned;
      return budget.refusal();
    }
    log::warn("scrape refused: exposition larger than metrics.max_scrape_bytes",
              {{"max_scrape_bytes", budget.max_bytes()},
               {"rendered_bytes", budget.bytes()},
               {"refused_without_warning", refusals_unwarned}});
    refusal_warned = true;
    last_refusal_warning = now;
    refusals_unwarned = 0;
    return budget.refusal();
  }
  std::mutex refusal_mutex;
  bool refusal_warned = false;
  std::chrono::steady_clock::time_point last_refusal_warning;
  std::uint64_t refusals_unwarned = 0;  // refusals since the last warning

  server::Hooks hooks() {
    server::Hooks h;
    h.metrics = [this](metrics::Exposition format, const metrics::ExpositionSink& sink) {
      return scrape(format, sink);
    };
    h.ready = [this] { return ready.load(); };
    h.reload = [this] {
      auto r = reload(config_path);
      return std::pair{r.ok, r.message};
    };
    h.config_dump = [this] { return config::dump_redacted(*snapshot()); };
    h.targets = [this] { return target_statuses(*snapshot(), rows); };
    h.probe = [this](const server::ProbeRequest& request, server::ProbeDone done) {
      return on_demand->start(*snapshot(), request, std::move(done));
    };
    return h;
  }
};

Service::Service(std::string config_path, const Identity& identity, std::uint64_t seed,
                 HttpOptions http, ProbeOptions probe) {
  auto initial = std::make_shared<const config::Config>(
      config::load_file(config_path, load_options(probe.shard)));
  impl_ = std::make_unique<Impl>(std::move(config_path), std::move(initial), identity, seed,
                                 std::move(http), probe);
}

Service::~Service() = default;

void Service::start() { impl_->start(); }

unsigned short Service::port() const { return impl_->http ? impl_->http->port() : 0; }

std::string Service::listen_address() const { return impl_->listen_address_now(); }

ReloadResult Service::reload(const std::string& config_path) { return impl_->reload(config_path); }

ReloadResult Service::reload() { return impl_->reload(impl_->config_path); }

void Service::stop() { impl_->stop(); }

std::shared_ptr<const config::Config> Service::config() const { return impl_->snapshot(); }

std::string Service::scrape(metrics::Exposition format) {
  std::string out;
  const std::string refused = impl_->scrape(format, [&out](std::string_view piece) {
    out.append(piece);
    return true;
  });
  if (!refused.empty()) throw std::runtime_error(refused);
  return out;
}

const report::RowStore& Service::rows() const { return impl_->rows; }

}  // namespace lse::service
