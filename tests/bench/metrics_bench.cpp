// /metrics render time with 10,000 series (issue 5 target: <= 20 ms), via
// lse::metrics::Metrics::render() on a config with as many targets as it takes
// to reach 10,000 series, every series having observations.
//
// Baselines in the same run, on a plain prometheus-cpp registry with the same
// number of series of the same shape (histograms of 20 buckets + counters):
//   BM_PromCollect         registry->Collect() only
//   BM_PromTextSerializer  prometheus-cpp TextSerializer over collected families
//                          (what Metrics::render() uses: an ostringstream)
//   BM_FmtSerializerFloor  the same text written with fmt into one reserved
//                          string: what a hand-written serializer could reach
// and BM_RenderWhileRecording: render() while another thread records probes,
// as a scrape does while probes finish.
//
// Issue 9, the exposition serializer (metrics/serializer.hpp) against
// TextSerializer on the same collected families:
//   BM_WriteText10k          write_text on the plain registry's families
//   BM_TenByThree_*          the families of Metrics with 10 targets x 3
//                            prompts (every series observed): TextSerializer,
//                            write_text, write_openmetrics (no notes), and
//                            render() end to end in both formats (collection,
//                            /proc reading, `_created` and exemplars included).
//
// Issue 31, native histograms and the protobuf exposition:
//   BM_TenByThree_RenderProtobuf  render() end to end in the protobuf format
//   --scrape-table                every format at ~1k and ~10k series and at
//                                 1,000 targets x 3 prompts, metrics.classic
//                                 true and false: time, bytes and the RSS a
//                                 scrape adds, one fresh process per case
//                                 (scrape_table.cpp)
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

#include "config/config.hpp"
#include "metrics/metrics.hpp"
#include "metrics/serializer.hpp"
#include "scrape_table.hpp"

namespace {

constexpr std::size_t kWantedSeries = 10'000;

std::size_t count_series(const std::string& text) {
  std::size_t n = 0, p = 0;
  while (p < text.size()) {
    auto e = text.find('\n', p);
    if (e == std::string::npos) e = text.size();
    if (e > p && text[p] != '#') ++n;
    p = e + 1;
  }
  return n;
}

lse::config::Config make_config(int targets, const std::vector<std::string>& prompts = {"short"}) {
  lse::config::Config c;
  for (const auto& p : prompts) c.prompts[p] = {p, "What is the capital of France?", "inline"};
  for (int i = 0; i < targets; ++i) {
    lse::config::Target t;
    t.name = "target-" + std::to_string(i);
    t.url = "http://127.0.0.1:1/v1";
    t.model = "model-" + std::to_string(i % 7);
    t.prompts = prompts;
    c.targets.push_back(t);
  }
  return c;
}

lse::probe::ProbeResult result_for(const std::string& target, int k,
                                   const std::string& prompt = "short") {
  lse::probe::ProbeResult r;
  r.id = fmt::format("{:016x}", 0x9e3779b97f4a7c15ULL * static_cast<unsigned>(k + 1));
  r.target = target;
  r.model = "m";
  r.prompt = prompt;
  r.ok = true;
  r.ts = 1.7e9 + k;
  r.ttft = 0.3 + 0.01 * (k % 5);
  r.tail = 0.01;
  r.duration = 4.5;
  for (auto& p : r.phases) p = 0.001;
  r.gaps.assign(200, 0.02);
  r.gaps[k % 200] = 0.4;
  r.chunks = 201;
  r.stalls = 1;
  r.stall_seconds = 0.4;
  r.gap_p95 = 0.021;
  r.gap_max = 0.4;
  r.prompt_tokens = 12;
  r.completion_tokens = 201;
  r.output_tokens_per_second = 48;
  r.finish_reason = "stop";
  return r;
}

// A Metrics with >= 10,000 series, every target having recorded probes.
struct Fixture {
  lse::metrics::Metrics metrics{{"bench", "bench"}};
  int targets = 0;
  std::size_t series = 0;
  Fixture() {
    metrics.apply_config(make_config(1));
    const std::size_t base1 = count_series(metrics.render());
    metrics.apply_config(make_config(2));
    const std::size_t per = count_series(metrics.render()) - base1;
    targets = 2;
    while (base1 + per * static_cast<std::size_t>(targets - 1) < kWantedSeries) ++targets;
    const auto cfg = make_config(targets);
    metrics.apply_config(cfg);
    for (const auto& t : cfg.targets)
      for (int k = 0; k < 3; ++k) metrics.record(result_for(t.name, k));
    series = count_series(metrics.render());
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_MetricsRender(benchmark::State& state) {
  auto& f = fixture();
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto text = f.metrics.render();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["series"] = static_cast<double>(f.series);
  state.counters["targets"] = f.targets;
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_RenderWhileRecording(benchmark::State& state) {
  auto& f = fixture();
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> recorded{0};
  std::thread writer([&] {
    int k = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      f.metrics.record(result_for("target-" + std::to_string(k % f.targets), k));
      ++k;
      recorded.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(
          std::chrono::microseconds(200));  // ~5,000 probes/s: far above real rates
    }
  });
  for (auto _ : state) {
    auto text = f.metrics.render();
    benchmark::DoNotOptimize(text);
  }
  stop = true;
  writer.join();
  state.counters["series"] = static_cast<double>(f.series);
  state.counters["records_during"] = static_cast<double>(recorded.load());
}

// Plain prometheus-cpp registry with the same series count and shape.
struct PlainRegistry {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::size_t series = 0;
  PlainRegistry() {
    auto& hist =
        prometheus::BuildHistogram().Name("bench_gap_seconds").Help("h").Register(*registry);
    auto& ctr = prometheus::BuildCounter().Name("bench_chunks_total").Help("c").Register(*registry);
    const prometheus::Histogram::BucketBoundaries b{
        .005, .01, .02, .03, .05, .075, .1, .15, .2, .25, .3, .4, .5, .75, 1, 1.5, 2, 3, 5, 10};
    for (int i = 0; series < kWantedSeries; ++i) {
      auto& h = hist.Add(
          {{"target", "target-" + std::to_string(i)}, {"model", "m"}, {"prompt", "short"}}, b);
      for (int k = 0; k < 200; ++k) h.Observe(0.02 + 0.001 * (k % 7));
      series += b.size() + 3;
      for (int c = 0; c < 10; ++c)
        ctr.Add({{"target", "target-" + std::to_string(i)}, {"kind", std::to_string(c)}})
            .Increment(k_inc);
      series += 10;
    }
  }
  static constexpr double k_inc = 3;
};

PlainRegistry& plain() {
  static PlainRegistry p;
  return p;
}

void BM_PromCollect(benchmark::State& state) {
  auto& p = plain();
  for (auto _ : state) {
    auto fams = p.registry->Collect();
    benchmark::DoNotOptimize(fams);
  }
  state.counters["series"] = static_cast<double>(p.series);
}

void BM_PromTextSerializer(benchmark::State& state) {
  auto& p = plain();
  for (auto _ : state) {
    auto fams = p.registry->Collect();
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, fams);
    auto s = out.str();
    benchmark::DoNotOptimize(s);
  }
  state.counters["series"] = static_cast<double>(p.series);
}

void write_labels(std::string& out, const prometheus::ClientMetric& m,
                  const char* extra_name = nullptr, double extra = 0) {
  out.push_back('{');
  bool first = true;
  for (const auto& l : m.label) {
    if (!first) out.push_back(',');
    first = false;
    fmt::format_to(std::back_inserter(out), "{}=\"{}\"", l.name, l.value);
  }
  if (extra_name) {
    if (!first) out.push_back(',');
    if (std::isinf(extra))
      fmt::format_to(std::back_inserter(out), "{}=\"+Inf\"", extra_name);
    else
      fmt::format_to(std::back_inserter(out), "{}=\"{}\"", extra_name, extra);
  }
  out.push_back('}');
}

void BM_FmtSerializerFloor(benchmark::State& state) {
  auto& p = plain();
  std::size_t bytes = 1 << 20;
  for (auto _ : state) {
    auto fams = p.registry->Collect();
    std::string out;
    out.reserve(bytes + bytes / 8);
    for (const auto& f : fams) {
      fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", f.name, f.help,
                     f.name, f.type == prometheus::MetricType::Histogram ? "histogram" : "counter");
      for (const auto& m : f.metric) {
        if (f.type == prometheus::MetricType::Histogram) {
          for (const auto& b : m.histogram.bucket) {
            out += f.name;
            out += "_bucket";
            write_labels(out, m, "le", b.upper_bound);
            fmt::format_to(std::back_inserter(out), " {}\n", b.cumulative_count);
          }
          out += f.name;
          out += "_sum";
          write_labels(out, m);
          fmt::format_to(std::back_inserter(out), " {}\n", m.histogram.sample_sum);
          out += f.name;
          out += "_count";
          write_labels(out, m);
          fmt::format_to(std::back_inserter(out), " {}\n", m.histogram.sample_count);
        } else {
          out += f.name;
          write_labels(out, m);
          fmt::format_to(std::back_inserter(out), " {}\n", m.counter.value);
        }
      }
    }
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["series"] = static_cast<double>(p.series);
}

void BM_WriteText10k(benchmark::State& state) {
  auto& p = plain();
  for (auto _ : state) {
    auto fams = p.registry->Collect();
    std::string s;
    lse::metrics::write_text(s, fams);
    benchmark::DoNotOptimize(s);
  }
  state.counters["series"] = static_cast<double>(p.series);
}

// Metrics with 10 targets x 3 prompts, each series observed three times.
struct TenByThree {
  lse::metrics::Metrics metrics{{"bench", "bench"}};
  std::vector<prometheus::MetricFamily> families;
  TenByThree() {
    const auto cfg = make_config(10, {"short", "medium", "long"});
    metrics.apply_config(cfg);
    int k = 0;
    for (const auto& t : cfg.targets)
      for (const auto& prompt : t.prompts)
        for (int i = 0; i < 3; ++i) metrics.record(result_for(t.name, k++, prompt));
    families = metrics.collect();
  }
};

TenByThree& ten_by_three() {
  static TenByThree f;
  return f;
}

template <class Write>
void serialize_ten_by_three(benchmark::State& state, Write write) {
  auto& f = ten_by_three();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string s = write(f);
    bytes = s.size();
    benchmark::DoNotOptimize(s);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["series"] = static_cast<double>(count_series(f.metrics.render()));
}

void BM_TenByThree_TextSerializer(benchmark::State& state) {
  serialize_ten_by_three(state, [](TenByThree& f) {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, f.families);
    return out.str();
  });
}

void BM_TenByThree_WriteText(benchmark::State& state) {
  serialize_ten_by_three(state, [](TenByThree& f) {
    std::string s;
    lse::metrics::write_text(s, f.families);
    return s;
  });
}

void BM_TenByThree_WriteOpenMetrics(benchmark::State& state) {
  serialize_ten_by_three(state, [](TenByThree& f) {
    std::string s;
    lse::metrics::write_openmetrics(s, f.families, {});
    return s;
  });
}

void BM_TenByThree_RenderText(benchmark::State& state) {
  serialize_ten_by_three(
      state, [](TenByThree& f) { return f.metrics.render(lse::metrics::Exposition::text); });
}

void BM_TenByThree_RenderOpenMetrics(benchmark::State& state) {
  serialize_ten_by_three(
      state, [](TenByThree& f) { return f.metrics.render(lse::metrics::Exposition::openmetrics); });
}

void BM_TenByThree_RenderProtobuf(benchmark::State& state) {
  serialize_ten_by_three(
      state, [](TenByThree& f) { return f.metrics.render(lse::metrics::Exposition::protobuf); });
}

}  // namespace

BENCHMARK(BM_MetricsRender)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RenderWhileRecording)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PromCollect)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PromTextSerializer)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FmtSerializerFloor)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_WriteText10k)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TenByThree_TextSerializer)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TenByThree_WriteText)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TenByThree_WriteOpenMetrics)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TenByThree_RenderText)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TenByThree_RenderOpenMetrics)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TenByThree_RenderProtobuf)->Unit(benchmark::kMicrosecond)->UseRealTime();

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode == "--scrape-table") {
    // The children are this binary: its path, not /proc/self/exe (the shell's in popen).
    std::array<char, 4096> self{};
    const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
    return lse::bench::run_scrape_table(n > 0 ? self.data() : argv[0]);
  }
  if (mode == "--scrape-case") return lse::bench::run_scrape_case(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
