// `run`: plan → N coroutines on one io_context pulling from the plan, with
// probers shared per target → rows, progress, summary, report.
#include "cli/run_command.hpp"

#include <unistd.h>

#include <utility>
#include <fmt/format.h>
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cli/run_proxy.hpp"
#include "config/config.hpp"
#include "net/url.hpp"
#include "probe/probe_loop.hpp"
#include "probe/prober.hpp"
#include "probe/prober_pool.hpp"
#include "report/format.hpp"
#include "report/html.hpp"
#include "report/rows_file.hpp"
#include "report/summary.hpp"
#include "schedule/probe_runner.hpp"
#include "util/atomic_file.hpp"
#include "util/bounded_file.hpp"
#include "util/json.hpp"
#include "util/wall_clock.hpp"

namespace lse::cli {

namespace asio = boost::asio;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitNoData = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInterrupted = 130;

// Bad input the user can fix: printed as "run: <message>", exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string clock_text(double seconds) {
  const auto s = static_cast<long>(std::lround(std::max(0.0, seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

bool parse_positive_int(const std::string& s, int& out) {
  if (s.empty() || s.size() > 9 ||
      !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    return false;
  out = std::stoi(s);
  return out > 0;
}

// What one run probes: targets, their prompts, thresholds, series order.
struct Experiment {
  std::vector<config::Target> targets;
  std::vector<std::vector<config::Prompt>> prompts;  // per target
  config::DiagnosisThresholds thresholds;
  std::vector<double> gap_buckets = config::Buckets{}.gap;  // the report's gap histogram bins
  report::SeriesOrder order;
  int runs = 20;
  std::vector<ProxyRoute> routes;  // per target, decided before the first probe
};

// Bounded like the config's prompt files (util/bounded_file.hpp, the
// default limits.prompt_file_bytes): `run /dev/zero` ends at once.
std::string read_prompt_file(const std::string& path) {
  util::FileRead file =
      util::read_bounded_file(path, config::Limits{}.prompt_file_bytes, "prompt files");
  if (file.problem == util::FileProblem::directory)
    throw UsageError(fmt::format("prompt file '{}' is a directory", path));
  if (!file.ok()) {
    const bool by_errno =
        file.problem == util::FileProblem::missing || file.problem == util::FileProblem::unreadable;
    throw UsageError(fmt::format("cannot read prompt file '{}': {}", path,
                                 by_errno ? std::strerror(file.error_number) : file.error));
  }
  std::string s = std::move(file.content);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (s.find_first_not_of(" \t\r\n") == std::string::npos)
    throw UsageError(fmt::format("prompt file '{}' is empty", path));
  return s;
}

// A prompt's name from its file: the stem, made unique ("short", "short-2").
std::string prompt_name(const std::string& path, const std::vector<config::Prompt>& taken) {
  std::string stem = std::filesystem::path(path).stem().string();
  std::string clean;
  for (char c : stem)
    clean +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (clean.empty()) clean = "prompt";
  std::string name = clean;
  for (int n = 2;; ++n) {
    bool used = false;
    for (const auto& p : taken) used |= p.name == name;
    if (!used) return name;
    name = fmt::format("{}-{}", clean, n);
  }
}

Experiment from_config(const RunOptions& o, const Positionals& pos) {
  if (!pos.files.empty())
    throw UsageError(
        fmt::format("prompt files ('{}') and --config do not mix: the config names the prompts",
                    pos.files.front()));
  config::Config cfg;
  try {
    cfg = config::load_file(o.config_path);
  } catch (const config::ConfigError& e) {
    throw UsageError(e.what());
  }
  Experiment ex;
  ex.thresholds = cfg.diagnosis;
  ex.gap_buckets = cfg.buckets.gap;
  for (const auto& t : cfg.targets) {
    ex.targets.push_back(t);
    std::vector<config::Prompt> ps;
    for (const auto& name : t.prompts) {
      ps.push_back(cfg.prompts.at(name));
      ex.order.emplace_back(t.name, name);
    }
    ex.prompts.push_back(std::move(ps));
  }
  return ex;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The URL as an error may show it: a query can carry a key.
std::string url_shown(const std::string& url) { return url.substr(0, url.find_first_of("?#")); }

// --api, else MC_API, else openai-chat; the error lists the supported values.
api::Dialect dialect_of(const RunOptions& o) {
  const std::string name = !o.api.empty() ? o.api : env("MC_API");
  if (name.empty()) return api::Dialect::openai_chat;
  const auto dialect = api::parse_dialect(name);
  if (!dialect)
    throw UsageError(fmt::format("{}: unknown api '{}' (supported: {})",
                                 o.api.empty() ? "MC_API" : "--api", name, api::dialect_list()));
  return *dialect;
}

// MC_API_KEY, else the variable the provider's SDKs read (ANTHROPIC_API_KEY, ...).
config::Auth key_of(api::Dialect dialect) {
  config::Auth auth;
  std::string name = "MC_API_KEY";
  std::string key = env("MC_API_KEY");
  if (const auto convention = api::key_header(dialect).env; key.empty() && !convention.empty()) {
    name = std::string(convention);
    key = env(name.c_str());
  }
  if (key.empty()) return auth;
  auth.kind = config::Auth::Kind::bearer;  // in the dialect's key header
  auth.secret = {key, "env " + name};
  return auth;
}

Experiment from_environment(const RunOptions& o, const Positionals& pos) {
  const std::string base = env("MC_BASE_URL"), model = env("MC_MODEL");
  if (base.empty())
    throw UsageError(
        "no --config and MC_BASE_URL is not set: give --config FILE, or set MC_BASE_URL "
        "(and MC_MODEL, MC_API_KEY) and pass prompt files");
  if (model.empty())
    throw UsageError("MC_BASE_URL is set but MC_MODEL is not: set the model name to probe");
  const auto url = net::parse_url(base);
  if (!url)
    throw UsageError(fmt::format("MC_BASE_URL is not an http(s) URL: '{}'", url_shown(base)));
  if (pos.files.empty())
    throw UsageError(
        "no prompt files: run PROMPT_FILE... [RUNS] (e.g. `run prompt.txt 20`), or use --config");
  Experiment ex;
  config::Target t;  // the config defaults (config.hpp) are the defaults here too
  t.name = url->host;
  t.url = base;
  t.api = dialect_of(o);
  t.model = model;
  t.auth = key_of(t.api);
  t.proxy_from_environment = true;  // HTTP(S)_PROXY / NO_PROXY, as curl and every SDK
  std::vector<config::Prompt> ps;
  for (const auto& f : pos.files) {
    config::Prompt p{prompt_name(f, ps), read_prompt_file(f), f};
    t.prompts.push_back(p.name);
    ex.order.emplace_back(t.name, p.name);
    ps.push_back(std::move(p));
  }
  ex.targets.push_back(std::move(t));
  ex.prompts.push_back(std::move(ps));
  return ex;
}

// Progress on stderr: a redrawn line on a terminal, plain lines otherwise.
class Progress {
 public:
  Progress(std::size_t measured, std::size_t warmup, bool tty)
      : measured_total_(measured), warmup_total_(warmup), tty_(tty), start_(SteadyClock::now()) {}

  bool tty() const { return tty_; }

  void completed(const probe::ProbeResult& r, const PlanItem& item) {
    if (item.warmup)
      ++warmup_done_;
    else
      ++measured_done_;
    last_ = describe(r, item);
    if (tty_) {
      redraw();
    } else {
      std::fprintf(stderr, "%s elapsed=%s eta=%s\n", last_.c_str(), clock_text(elapsed()).c_str(),
                   clock_text(eta()).c_str());
      std::fflush(stderr);
    }
  }

  void redraw() {
    if (!tty_) return;
    const std::string line =
        fmt::format("{}  ·  elapsed {}  ·  ETA {}", last_.empty() ? "starting" : last_,
                    clock_text(elapsed()), clock_text(eta()));
    std::fprintf(stderr, "\r\x1b[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }

  // A line of its own (e.g. a write error) between progress lines.
  void note(const std::string& line) {
    if (tty_ && drawn_) std::fprintf(stderr, "\r\x1b[K");
    std::fprintf(stderr, "%s\n", line.c_str());
    drawn_ = false;
    redraw();
  }

  void finish() {
    if (tty_ && drawn_) std::fprintf(stderr, "\n");
    std::fflush(stderr);
    drawn_ = false;
  }

  double elapsed() const {
    return std::chrono::duration<double>(SteadyClock::now() - start_).count();
  }

 private:
  double eta() const {
    const std::size_t done = measured_done_ + warmup_done_;
    const std::size_t total = measured_total_ + warmup_total_;
    if (done == 0) return 0;
    return elapsed() / static_cast<double>(done) * static_cast<double>(total - done);
  }

  std::string describe(const probe::ProbeResult& r, const PlanItem& item) const {
    std::string head = item.warmup ? fmt::format("warmup {}/{}", warmup_done_, warmup_total_)
                                   : fmt::format("run {}/{}", measured_done_, measured_total_);
    std::string what;
    if (r.ok)
      what = fmt::format("ok ttft={} chunks={} stalls={}",
                         r.ttft ? report::format_seconds(*r.ttft) : "-", r.chunks, r.stalls);
    else
      what = fmt::format("FAILED {}{}", probe::to_string(r.reason),
                         r.error_detail.empty() ? "" : ": " + r.error_detail);
    return fmt::format("{} target={} prompt={} {}", head, r.target, r.prompt, what);
  }

  std::size_t measured_total_, warmup_total_;
  std::size_t measured_done_ = 0, warmup_done_ = 0;
  bool tty_;
  bool drawn_ = false;
  SteadyClock::time_point start_;
  std::string last_;
};

// Drives the plan on one io_context thread: `concurrency` coroutines share
// the plan index and a pool of probers per target (probe/prober_pool.hpp):
// a slot takes one for its item's target and gives it back, so probers and
// their keep-alive connections grow with the work (at most `concurrency`
// busy, one idle per target, `concurrency` idle spares), not with
// slots × targets.
class Runner {
 public:
  Runner(const Experiment& ex, std::vector<PlanItem> plan, int concurrency,
         const std::string& user_agent, const std::string& host, report::RowsWriter& rows,
         Progress& progress)
      : ex_(ex),
        plan_(std::move(plan)),
        rows_(rows),
        progress_(progress),
        signals_(io_, SIGINT, SIGTERM),
        ticker_(io_),
        workers_(static_cast<std::size_t>(std::max(1, concurrency))),
        usage_rejected_(ex_.targets.size(), false),
        pool_(workers_, [this, user_agent, host](std::size_t t) {
          auto p = std::make_unique<probe::Prober>(io_, ex_.targets[t], host, user_agent);
          if (usage_rejected_[t]) p->set_include_usage(false);
          return p;
        }) {
    // One prober per target up front: a bad URL or TLS file fails here,
    // before the first probe (each stays as its target's idle prober).
    for (std::size_t t = 0; t < ex_.targets.size(); ++t) {
      try {
        pool_.adopt(t, std::make_unique<probe::Prober>(io_, ex_.targets[t], host, user_agent));
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
    }
  }

  // Returns the signal that stopped the run, or 0.
  int run() {
    signals_.async_wait(
        [this](const boost::system::error_code& ec, int sig) { on_signal(ec, sig); });
    if (progress_.tty()) tick();
    active_ = workers_;
    for (std::size_t w = 0; w < workers_; ++w)
      asio::co_spawn(io_, worker(), [this](const std::exception_ptr& e) {
        if (e && !error_) error_ = e;
        if (--active_ == 0) {
          boost::system::error_code ignored;
          signals_.cancel(ignored);
          ticker_.cancel();
        }
      });
    probe::run_probe_loop(io_);  // the default wake-up window, as serve's
    progress_.finish();
    if (error_) std::rethrow_exception(error_);
    return stopped_by_;
  }

  std::vector<probe::ProbeResult>& results() { return results_; }
  std::size_t planned_measured() const {
    return static_cast<std::size_t>(
        std::count_if(plan_.begin(), plan_.end(), [](const PlanItem& p) { return !p.warmup; }));
  }
  std::size_t measured_done() const { return measured_done_; }
  std::size_t canceled() const { return canceled_; }  // in-flight probes a signal cut
  // Rows that could not be appended, and the distinct reasons (each was
  // printed once on stderr when it first happened).
  std::size_t rows_failed() const { return rows_failed_; }
  const std::set<std::string>& write_errors() const { return write_errors_; }

 private:
  // Gives a prober back to the pool however its probe ends, and remembers
  // what it learned about the target (a rejected stream_options).
  struct Lease {
    Runner& runner;
    std::size_t target;
    probe::Prober& prober;
    Lease(Runner& r, std::size_t t) : runner(r), target(t), prober(r.pool_.acquire(t)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (!prober.include_usage()) runner.usage_rejected_[target] = true;
      runner.pool_.release(prober);
    }
  };

  asio::awaitable<void> worker() {
    while (!stopping_ && next_ < plan_.size()) {
      const PlanItem item = plan_[next_++];
      probe::ProbeResult r;
      {
        const Lease lease(*this, item.target);
        r = co_await lease.prober.run(ex_.prompts[item.target][item.prompt]);
      }
      schedule::clean_upstream_text(
          r, util::Redactor(config::secret_values(ex_.targets[item.target])));
      if (stopping_ && !r.ok && r.reason == probe::FailureReason::canceled) {
        // Not a measurement, but the row says the run was cut here (never a
        // lost row): reason canceled, which every reader counts as a failure.
        if (!item.warmup) {
          ++canceled_;
          write_row(r);
        }
        break;
      }
      r.warmup = item.warmup;
      if (!item.warmup) {
        ++measured_done_;
        write_row(r);
      }
      results_.push_back(r);
      progress_.completed(r, item);
    }
  }

  // A row that cannot be written (disk full, permission) does not stop the
  // experiment: probing goes on, every later row is tried again (space may
  // come back), each distinct error is printed once, and the end of the run
  // says how many rows are missing (exit 1).
  void write_row(const probe::ProbeResult& r) {
    try {
      rows_.append(r);
    } catch (const std::exception& e) {
      ++rows_failed_;
      if (write_errors_.insert(e.what()).second) progress_.note(fmt::format("run: {}", e.what()));
    }
  }

  void on_signal(const boost::system::error_code& ec, int sig) {
    if (ec) return;
    if (stopping_) {
      // A second Ctrl-C: the user does not want to wait for cancellation.
      std::fprintf(stderr, "\nrun: second signal, exiting now; rows written so far are intact\n");
      std::_Exit(kExitInterrupted);
    }
    stopping_ = true;
    stopped_by_ = sig;
    pool_.cancel_busy();
    ticker_.cancel();
    signals_.async_wait([this](const boost::system::error_code& e, int s) { on_signal(e, s); });
  }

  void tick() {
    ticker_.expires_after(std::chrono::milliseconds(500));
    ticker_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping_ || active_ == 0) return;
      progress_.redraw();
      tick();
    });
  }

  const Experiment& ex_;
  std::vector<PlanItem> plan_;
  report::RowsWriter& rows_;
  Progress& progress_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::steady_timer ticker_;
  std::size_t workers_;
  std::vector<bool> usage_rejected_;  // per target: the server refused stream_options
  probe::ProberPool<probe::Prober> pool_;
  std::size_t next_ = 0;
  std::size_t active_ = 0;
  std::size_t measured_done_ = 0;
  std::size_t canceled_ = 0;
  bool stopping_ = false;
  int stopped_by_ = 0;
  std::exception_ptr error_;
  std::size_t rows_failed_ = 0;
  std::set<std::string> write_errors_;
  std::vector<probe::ProbeResult> results_;
};

std::string describe_command(const RunOptions& o, const Experiment& ex, std::uint64_t seed) {
  std::string s = "llm_stream_exporter run";
  if (!o.config_path.empty()) s += " --config " + o.config_path;
  for (const auto& p : o.positional) s += " " + p;
  s += fmt::format(" --runs {} --seed {} --concurrency {}", ex.runs, seed, o.concurrency);
  if (o.warmup_flag && o.warmup_flag->count()) s += fmt::format(" --warmup {}", o.warmup);
  if (!o.stall_threshold.empty()) s += " --stall-threshold " + o.stall_threshold;
  if (o.no_proxy) s += " --no-proxy";
  return s;
}

}  // namespace

Positionals split_positionals(const std::vector<std::string>& args) {
  Positionals p;
  p.files = args;
  int n = 0;
  if (!p.files.empty() && parse_positive_int(p.files.back(), n)) {
    p.runs = n;
    p.files.pop_back();
  }
  return p;
}

std::vector<PlanItem> build_plan(const std::vector<std::size_t>& prompts_per_target, int runs,
                                 const std::vector<int>& warmup, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  // rng() % n keeps plans identical across standard libraries.
  auto shuffle = [&](auto& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
  };
  std::vector<PlanItem> plan;
  const std::size_t targets = prompts_per_target.size();
  for (std::size_t t = 0; t < targets; ++t) {
    const std::size_t n = prompts_per_target[t];
    if (n == 0) continue;
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    shuffle(order);
    const int w = t < warmup.size() ? warmup[t] : 0;
    for (int i = 0; i < w; ++i)
      plan.push_back({t, order[static_cast<std::size_t>(i) % n], true, -1});
  }
  std::vector<std::size_t> target_order(targets);
  for (std::size_t t = 0; t < targets; ++t) target_order[t] = t;
  for (int round = 0; round < runs; ++round) {
    shuffle(target_order);
    for (std::size_t t : target_order) {
      std::vector<std::size_t> order(prompts_per_target[t]);
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      shuffle(order);
      for (std::size_t p : order) plan.push_back({t, p, false, round});
    }
  }
  return plan;
}

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  auto* cmd = app.add_subcommand("run",
                                 "one-shot experiment: N runs per prompt (order shuffled every "
                                 "round, warmup discarded), raw rows, "
                                 "a summary with p50/p95/max and the diagnosis.\n"
                                 "Without --config: PROMPT_FILE... [RUNS] against MC_BASE_URL "
                                 "(MC_MODEL, MC_API_KEY, MC_API), e.g. `run prompt.txt 20`, "
                                 "through HTTPS_PROXY/HTTP_PROXY unless NO_PROXY matches or "
                                 "--no-proxy.");
  cmd->add_option("--config.file,--config", o.config_path,
                  "config file: every target × its prompts")
      ->check(CLI::ExistingFile);
  cmd->add_option("args", o.positional, "PROMPT_FILE... [RUNS] (without --config)");
  o.runs_flag = cmd->add_option("--runs", o.runs, "runs per prompt per target (default 20)")
                    ->check(CLI::Range(1, 1000000));
  o.warmup_flag =
      cmd->add_option("--warmup", o.warmup,
                      "warmup probes per target, discarded (default: the config's warmup, else 2)")
          ->check(CLI::Range(0, 1000000));
  cmd->add_option("--stall-threshold", o.stall_threshold,
                  "gap that counts as a stall, e.g. 250ms (default: the target's)");
  cmd->add_option("--out", o.out,
                  "raw rows file, appended (default lse-rows-<UTC time>.jsonl); a row that "
                  "cannot be written is reported on stderr and the run exits 1");
  cmd->add_option("--report", o.report, "write a self-contained HTML report here");
  cmd->add_option("--seed", o.seed, "seed of the prompt-order shuffle (default: random, printed)");
  cmd->add_option("--concurrency", o.concurrency,
                  "streams in flight at once across the plan (default 1)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--api", o.api,
                  "without --config: the dialect MC_BASE_URL speaks (default: MC_API, else "
                  "openai-chat): " +
                      api::dialect_list());
  cmd->add_flag("--no-proxy", o.no_proxy,
                "connect directly: ignore HTTP_PROXY/HTTPS_PROXY (honoured like curl does "
                "without --config, and with a target's proxy_from_environment) and proxy_url");
  cmd->add_option("--format", o.format, "summary on stdout: table or json")
      ->check(CLI::IsMember({"table", "json"}));
  return cmd;
}

namespace {

// Everything decided before the first probe.
struct RunSetup {
  Experiment ex;
  std::uint64_t seed = 0;
  std::vector<PlanItem> plan;
  std::unique_ptr<report::RowsWriter> rows;
  std::size_t warmups = 0, measured = 0;
};

// --stall-threshold and --warmup over the targets; returns the warmup per target.
std::vector<int> apply_overrides(const RunOptions& o, Experiment& ex) {
  if (!o.stall_threshold.empty()) {
    const auto d = config::parse_duration(o.stall_threshold);
    if (!d || *d <= config::Duration::zero())
      throw UsageError(fmt::format("--stall-threshold '{}' is not a positive duration (e.g. 250ms)",
                                   o.stall_threshold));
    for (auto& t : ex.targets) t.stall_threshold = *d;
  }
  const bool warmup_given = (o.warmup_flag && o.warmup_flag->count()) || o.config_path.empty();
  std::vector<int> warmup;
  for (auto& t : ex.targets) {
    if (warmup_given) t.warmup = o.warmup;
    warmup.push_back(t.warmup);
  }
  return warmup;
}

std::uint64_t seed_of(const RunOptions& o) {
  if (o.seed.empty()) {
    std::uint64_t seed = std::random_device{}();
    return (seed << 32) ^ std::random_device{}();
  }
  try {
    std::size_t used = 0;
    const std::uint64_t seed = std::stoull(o.seed, &used, 0);
    if (used != o.seed.size()) throw std::invalid_argument("trailing");
    return seed;
  } catch (const std::exception&) {
    throw UsageError(fmt::format("--seed '{}' is not an unsigned integer", o.seed));
  }
}

std::unique_ptr<report::RowsWriter> open_rows(const RunOptions& o) {
  const std::string out =
      o.out.empty()
          ? "lse-rows-" + wall_clock::format_utc(wall_clock::unix_now(), "%Y%m%dT%H%M%SZ") +
                ".jsonl"
          : o.out;
  try {
    return std::make_unique<report::RowsWriter>(out);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
}

// Plan: the experiment from config or environment, the options over it, the
// shuffled plan and the rows file. Throws UsageError.
RunSetup plan_run(const RunOptions& o) {
  RunSetup s;
  const Positionals pos = split_positionals(o.positional);
  if (pos.runs && o.runs_flag && o.runs_flag->count() && pos.runs != o.runs)
    throw UsageError(
        fmt::format("the run count is given twice ({} and --runs {})", pos.runs, o.runs));
  if (!o.config_path.empty() && !o.api.empty())
    throw UsageError("--api applies without --config; a config names each target's api:");
  s.ex = o.config_path.empty() ? from_environment(o, pos) : from_config(o, pos);
  s.ex.runs = pos.runs ? pos.runs : o.runs;
  const std::vector<int> warmup = apply_overrides(o, s.ex);
  for (auto& t : s.ex.targets) {
    try {
      s.ex.routes.push_back(route_target(t, o.no_proxy));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  s.seed = seed_of(o);
  std::vector<std::size_t> prompt_counts;
  for (const auto& ps : s.ex.prompts) prompt_counts.push_back(ps.size());
  s.plan = build_plan(prompt_counts, s.ex.runs, warmup, s.seed);
  for (const auto& p : s.plan) s.warmups += p.warmup;
  s.measured = s.plan.size() - s.warmups;
  s.rows = open_rows(o);
  return s;
}

void announce(const RunSetup& s, const RunOptions& o) {
  std::size_t series = 0;
  for (const auto& ps : s.ex.prompts) series += ps.size();
  // Which proxy each target goes through and why (never its credentials).
  const std::string routes = describe_routes(s.ex.targets, s.ex.routes);
  std::fprintf(
      stderr,
      "run: %zu target%s, %zu target×prompt series, %d run%s each (%zu probes + %zu warmup), "
      "concurrency %d, seed %llu; rows -> %s%s%s\n",
      s.ex.targets.size(), s.ex.targets.size() == 1 ? "" : "s", series, s.ex.runs,
      s.ex.runs == 1 ? "" : "s", s.measured, s.warmups, o.concurrency,
      static_cast<unsigned long long>(s.seed), s.rows->path().c_str(), routes.empty() ? "" : "; ",
      routes.c_str());
  std::fflush(stderr);
}

// What the probing left: results, the stopping signal (or 0), and timing.
struct Probed {
  std::unique_ptr<Progress> progress;  // outlives the runner, which reports to it
  std::unique_ptr<Runner> runner;
  int signal = 0;
  double started_unix = 0, elapsed = 0;
};

// Probe: drive the plan. Throws UsageError (a target the prober rejects).
Probed probe_all(const RunSetup& s, const RunOptions& o, const std::string& user_agent,
                 const std::string& host) {
  Probed p;
  p.progress = std::make_unique<Progress>(s.measured, s.warmups, isatty(STDERR_FILENO) == 1);
  p.started_unix = wall_clock::unix_now();
  p.runner =
      std::make_unique<Runner>(s.ex, s.plan, o.concurrency, user_agent, host, *s.rows, *p.progress);
  p.signal = p.runner->run();
  p.elapsed = p.progress->elapsed();
  return p;
}

void print_summary(const report::Summary& summary, const RunSetup& s, const RunOptions& o,
                   const Probed& p) {
  if (o.format == "json") {
    json::Value doc = report::to_json(summary);
    doc.set("seed", std::to_string(s.seed));
    doc.set("rows_file", s.rows->path());
    doc.set("report_file", o.report);
    doc.set("interrupted", p.signal != 0);
    doc.set("elapsed_seconds", p.elapsed);
    std::cout << json::dump(doc) << "\n";
  } else {
    std::cout << report::render_table(summary);
  }
  std::cout.flush();
}

// The HTML report, when asked for. Returns false when it cannot be written.
bool write_report(const report::Summary& summary, const RunSetup& s, const RunOptions& o,
                  const Probed& p, const std::string& host) {
  if (o.report.empty()) return true;
  report::ReportMeta meta;
  meta.title = fmt::format("llm-stream-exporter run · {}", host);
  meta.command = describe_command(o, s.ex, s.seed);
  meta.host = host;
  meta.started_unix = p.started_unix;
  meta.elapsed_seconds = p.elapsed;
  meta.seed = std::to_string(s.seed);
  meta.concurrency = o.concurrency;
  meta.interrupted = p.signal != 0;
  meta.thresholds = s.ex.thresholds;
  meta.gap_buckets = s.ex.gap_buckets;
  try {
    util::write_file_atomically(o.report, report::render_html(summary, meta));
    std::fprintf(stderr, "run: report -> %s\n", o.report.c_str());
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run: %s\n", e.what());
    return false;
  }
}

// Rows that never reached the file: one closing line (each distinct error
// was printed when it first happened). Returns false when any is missing.
bool report_row_errors(const Runner& runner, const report::RowsWriter& rows) {
  if (runner.rows_failed() == 0) return true;
  const std::size_t distinct = runner.write_errors().size();
  std::fprintf(stderr,
               "run: error: %zu of %zu rows could not be written to %s (%zu distinct error%s, "
               "shown above)\n",
               runner.rows_failed(), runner.rows_failed() + rows.rows_written(),
               rows.path().c_str(), distinct, distinct == 1 ? "" : "s");
  return false;
}

// Series where nothing was measured. Returns false when there is one.
bool report_empty_series(const report::Summary& summary) {
  auto first_of = [](const std::string& example) {
    return example.empty() ? std::string() : "; first: " + example;
  };
  if (summary.runs > 0 && summary.ok == 0) {
    std::string first;
    for (const auto& s : summary.series)
      if (first.empty()) first = s.failure_example;
    std::fprintf(stderr,
                 "run: error: all %zu runs failed (%s%s): nothing was measured; is the endpoint "
                 "reachable?\n",
                 summary.runs, summary.failures_text.c_str(), first_of(first).c_str());
    return false;
  }
  bool all_measured = true;
  for (const auto& s : summary.series) {
    if (s.runs == 0 || s.ok > 0) continue;
    std::fprintf(
        stderr,
        "run: error: every run of target %s prompt %s failed (%s%s): nothing was measured\n",
        s.target.c_str(), s.prompt.c_str(), s.failures_text.c_str(),
        first_of(s.failure_example).c_str());
    all_measured = false;
  }
  return all_measured;
}

// Summarize and render; then the closing lines on stderr and the exit code.
int finish_run(const RunSetup& s, const RunOptions& o, const Probed& p, const std::string& host) {
  const Runner& runner = *p.runner;
  const report::Summary summary =
      report::summarize(p.runner->results(), s.ex.thresholds, s.ex.order);
  print_summary(summary, s, o, p);
  int code = kExitOk;
  if (!write_report(summary, s, o, p, host)) code = kExitNoData;
  if (!report_row_errors(runner, *s.rows)) code = kExitNoData;
  if (p.signal != 0) {
    std::fprintf(stderr,
                 "run: interrupted by %s after %zu of %zu runs: %zu in-flight probe%s canceled "
                 "(rows with reason canceled), %zu rows kept in %s\n",
                 p.signal == SIGINT ? "SIGINT" : "SIGTERM", runner.measured_done(),
                 runner.planned_measured(), runner.canceled(), runner.canceled() == 1 ? "" : "s",
                 s.rows->rows_written(), s.rows->path().c_str());
    return kExitInterrupted;
  }
  if (!report_empty_series(summary)) code = kExitNoData;
  std::fprintf(stderr, "run: %zu rows in %s\n", s.rows->rows_written(), s.rows->path().c_str());
  return code;
}

}  // namespace

int run_command(const RunOptions& o, const std::string& user_agent, const std::string& host) {
  RunSetup setup;
  Probed probed;
  try {
    setup = plan_run(o);
    announce(setup, o);
    probed = probe_all(setup, o, user_agent, host);
  } catch (const UsageError& e) {
    std::cerr << "run: " << e.what() << "\n";
    return kExitUsage;
  }
  return finish_run(setup, o, probed, host);
}

}  // namespace lse::cli
