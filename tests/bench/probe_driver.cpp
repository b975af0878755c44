// Drives lse::probe::Prober directly (no scheduler, metrics or server) for the
// fidelity benchmark (issue 5). Two modes:
//
//   streams: N targets on one io_context thread, like `serve` with N targets,
//     each probing back to back until --seconds have passed; writes one DESIGN
//     §6-like JSON row per probe (target, ok, start_mono_ns, chunks, stalls,
//     gaps_ms). The harness uses it only when the exporter binary is not there
//     (run_bench.py --driver probe) and to see what the probe path alone costs.
//
//   alloc: heap allocations of the probe hot path. Runs probes of a short and a
//     long stream (same target, pooled connection) and counts operator new calls
//     per probe; the difference divided by the extra chunks is the number of
//     allocations each additional chunk costs (target: 0). Prints one JSON object.
//
// Usage:
//   bench_probe_driver streams (--url-template URL | --url-list FILE) --streams N --seconds S
//                              --out rows.jsonl [--ca-file CA] [--stall-threshold-ms 250]
//   bench_probe_driver alloc --url-short URL --chunks-short 50 --url-long URL --chunks-long 250
//                            [--ca-file CA] [--probes 5]
//     LSE_BENCH_ALLOC_TRACE=1 also prints the call chains of the allocations made
//     during the last long probe (symbols via -rdynamic; pipe through c++filt).
// URL may contain {i}: the target index. FILE: one base URL per line, line i for target i.
#include <execinfo.h>
#include <sys/resource.h>
#include <time.h>

#include <utility>
#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "probe/prober.hpp"

namespace {
std::atomic<std::uint64_t> g_allocs{0};

// Allocation sites (alloc mode with LSE_BENCH_ALLOC_TRACE=1): raw return
// addresses of the allocations made during the measured long probes, kept in
// a fixed table (recording must not allocate), symbolised at the end.
constexpr int kTraceDepth = 10;
constexpr int kTraceMax = 4096;
struct TraceEntry {
  void* frames[kTraceDepth];
  int depth;
  std::size_t size;
};
TraceEntry g_trace[kTraceMax];
std::atomic<int> g_trace_n{0};
bool g_tracing = false;
thread_local bool t_in_trace = false;

void trace_alloc(std::size_t n) {
  if (!g_tracing || t_in_trace) return;
  const int i = g_trace_n.fetch_add(1, std::memory_order_relaxed);
  if (i >= kTraceMax) return;
  t_in_trace = true;
  g_trace[i].depth = backtrace(g_trace[i].frames, kTraceDepth);
  g_trace[i].size = n;
  t_in_trace = false;
}
}  // namespace

// Counting allocator: every operator new in the process goes through here.
void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  trace_alloc(n);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::aligned_alloc(static_cast<std::size_t>(a),
                                   (n + static_cast<std::size_t>(a) - 1) /
                                       static_cast<std::size_t>(a) * static_cast<std::size_t>(a)))
    return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

std::int64_t mono_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

lse::config::Target make_target(const std::string& name, const std::string& url,
                                const std::string& ca, double stall_ms) {
  lse::config::Target t;
  t.name = name;
  t.url = url;
  t.model = "bench-model";
  t.prompts = {"short"};
  t.warmup = 0;
  t.jitter = 0;
  t.max_tokens = 256;
  t.stall_threshold = std::chrono::microseconds(static_cast<std::int64_t>(stall_ms * 1000));
  t.timeout.first_token = std::chrono::seconds(10);
  t.timeout.idle = std::chrono::seconds(10);
  t.timeout.total = std::chrono::seconds(60);
  t.tls.ca_file = ca;
  return t;
}

struct Args {
  std::map<std::string, std::string> kv;
  std::string get(const std::string& k, const std::string& def = "") const {
    auto it = kv.find(k);
    return it == kv.end() ? def : it->second;
  }
};

int run_streams(const Args& a) {
  const std::string tmpl = a.get("url-template");
  const int n = std::stoi(a.get("streams", "1"));
  std::vector<std::string> urls;
  if (!a.get("url-list").empty()) {
    std::ifstream in(a.get("url-list"));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) urls.push_back(line);
  } else {
    for (int i = 0; i < n; ++i) urls.push_back(replace_all(tmpl, "{i}", std::to_string(i)));
  }
  const double seconds = std::stod(a.get("seconds", "10"));
  const std::string out_path = a.get("out");
  const double stall_ms = std::stod(a.get("stall-threshold-ms", "250"));
  if (static_cast<int>(urls.size()) < n || out_path.empty()) {
    std::cerr
        << "streams: --url-template or --url-list (one URL per stream) and --out are required\n";
    return 2;
  }
  asio::io_context io;
  lse::config::Prompt prompt{"short", "What is the capital of France?", "inline"};
  std::vector<std::unique_ptr<lse::probe::Prober>> probers;
  std::vector<lse::config::Target> targets;
  for (int i = 0; i < n; ++i) {
    targets.push_back(make_target("t" + std::to_string(i), urls[static_cast<std::size_t>(i)],
                                  a.get("ca-file"), stall_ms));
    probers.push_back(
        std::make_unique<lse::probe::Prober>(io, targets.back(), "bench", "bench-driver"));
  }
  std::ofstream out(out_path);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds));
  for (int i = 0; i < n; ++i) {
    asio::co_spawn(
        io,
        [&, i]() -> asio::awaitable<void> {
          Clock::duration longest{};
          for (;;) {
            const auto start = Clock::now();
            if (start + longest > deadline) break;
            auto r = co_await probers[static_cast<std::size_t>(i)]->run(prompt);
            longest = std::max(longest, Clock::now() - start);
            std::string row = "{\"i\":" + std::to_string(i) + ",\"target\":\"" + r.target +
                              "\",\"ok\":" + (r.ok ? "true" : "false") + ",\"reason\":\"" +
                              std::string(lse::probe::to_string(r.reason)) +
                              "\",\"start_mono_ns\":" + std::to_string(mono_ns(start)) +
                              ",\"chunks\":" + std::to_string(r.chunks) +
                              ",\"stalls\":" + std::to_string(r.stalls) + ",\"gaps_ms\":[";
            char buf[32];
            for (std::size_t k = 0; k < r.gaps.size(); ++k) {
              std::snprintf(buf, sizeof buf, "%s%.6f", k ? "," : "", r.gaps[k] * 1e3);
              row += buf;
            }
            row += "]}\n";
            out << row;
            if (!r.ok) {
              asio::steady_timer t(io, std::chrono::milliseconds(100));
              co_await t.async_wait(asio::use_awaitable);
            }
          }
        },
        asio::detached);
  }
  io.run();
  return 0;
}

int run_alloc(const Args& a) {
  const std::string ca = a.get("ca-file");
  const int probes = std::stoi(a.get("probes", "5"));
  const int cs = std::stoi(a.get("chunks-short", "50")),
            cl = std::stoi(a.get("chunks-long", "250"));
  asio::io_context io;
  const bool trace = std::getenv("LSE_BENCH_ALLOC_TRACE") != nullptr;
  if (trace) {  // backtrace() allocates when first used: prime it
    void* f[2];
    backtrace(f, 2);
  }
  lse::config::Prompt prompt{"short", "What is the capital of France?", "inline"};
  auto ts = make_target("short", a.get("url-short"), ca, 250);
  auto tl = make_target("long", a.get("url-long"), ca, 250);
  lse::probe::Prober ps(io, ts, "bench", "bench-driver");
  lse::probe::Prober pl(io, tl, "bench", "bench-driver");
  struct Measure {
    std::uint64_t allocs = 0;
    double cpu = 0;
    std::size_t chunks = 0;
    int ok = 0;
  };
  Measure ms, ml;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (int w = 0; w < 2; ++w) {  // warm: connection, buffers, simdjson parser
          co_await ps.run(prompt);
          co_await pl.run(prompt);
        }
        for (int k = 0; k < probes; ++k) {
          for (auto* pair : {&ps, &pl}) {
            Measure& m = pair == &ps ? ms : ml;
            const auto a0 = g_allocs.load();
            const double c0 = cpu_seconds();
            g_tracing = trace && pair == &pl && k == probes - 1;
            auto r = co_await pair->run(prompt);
            g_tracing = false;
            m.cpu += cpu_seconds() - c0;
            m.allocs += g_allocs.load() - a0;
            m.chunks += r.chunks;
            m.ok += r.ok;
          }
        }
      },
      asio::detached);
  io.run();
  const double per_short = static_cast<double>(ms.allocs) / probes;
  const double per_long = static_cast<double>(ml.allocs) / probes;
  std::printf(
      "{\"probes\":%d,\"ok_short\":%d,\"ok_long\":%d,\"chunks_short\":%.1f,\"chunks_long\":%.1f,"
      "\"allocs_per_probe_short\":%.1f,\"allocs_per_probe_long\":%.1f,\"allocs_per_extra_chunk\":%."
      "3f,"
      "\"cpu_us_per_chunk_long\":%.2f}\n",
      probes, ms.ok, ml.ok, static_cast<double>(ms.chunks) / probes,
      static_cast<double>(ml.chunks) / probes, per_short, per_long,
      (per_long - per_short) / std::max(1, cl - cs),
      ml.chunks ? ml.cpu * 1e6 / static_cast<double>(ml.chunks) : 0.0);
  if (trace) {
    // Group by call chain (frames 1..depth) and print the most frequent chains.
    const int n = std::min(g_trace_n.load(), kTraceMax);
    std::map<std::vector<void*>, std::pair<int, std::size_t>> sites;
    for (int i = 0; i < n; ++i) {
      std::vector<void*> key(g_trace[i].frames + 1, g_trace[i].frames + g_trace[i].depth);
      auto& v = sites[key];
      ++v.first;
      v.second = g_trace[i].size;
    }
    std::vector<std::pair<int, std::vector<void*>>> order;
    for (auto& [k, v] : sites) order.emplace_back(v.first, k);
    std::sort(order.rbegin(), order.rend());
    std::fprintf(stderr, "%d allocations during one %d-chunk probe, %zu call chains:\n", n, cl,
                 order.size());
    for (std::size_t i = 0; i < order.size() && i < 12; ++i) {
      std::fprintf(stderr, "--- %d allocations (last size %zu):\n", order[i].first,
                   sites[order[i].second].second);
      backtrace_symbols_fd(order[i].second.data(), static_cast<int>(order[i].second.size()), 2);
    }
  }
  return ms.ok == probes && ml.ok == probes ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench_probe_driver streams|alloc --key value ...\n";
    return 2;
  }
  const std::string mode = argv[1];
  Args a;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) == 0) k = k.substr(2);
    a.kv[k] = argv[i + 1];
  }
  if (mode == "streams") return run_streams(a);
  if (mode == "alloc") return run_alloc(a);
  std::cerr << "unknown mode " << mode << "\n";
  return 2;
}
