// The scrape table of issue 31 §1: for the text, OpenMetrics and protobuf
// expositions, at ~1k and ~10k series and at 1,000 targets x 3 prompts, with
// metrics.classic true and false: render time (wall and CPU), bytes, and the
// RSS one scrape adds to the process.
//
// Each case runs in a fresh process (the bench re-executes itself with
// --scrape-case), so one case's heap cannot hide another's peak. In the
// child: build the series (every target x prompt recorded 3 probes), render
// once to warm up, give freed memory back (malloc_trim), reset the peak
// (`5` > /proc/self/clear_refs), render once more, and read VmHWM: the peak
// the scrape added over the RSS before it. Then the render is timed a few
// times (median). Renders go to a sink that only counts bytes: the server
// sends each piece as it comes (render as you send), so a piece is all a
// scrape holds besides the collected family.
//
// Series: "text lines" are the samples of the text exposition (what a
// classic scrape stores); "metrics" are the Metric messages of the protobuf
// exposition (what a native-histogram scrape stores: one per histogram).
#include "scrape_table.hpp"

#include <fmt/format.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>

#include "config/config.hpp"
#include "metrics/metrics.hpp"
#include "prometheus/metrics.pb.h"

namespace lse::bench {
namespace {

using metrics::Exposition;

struct Case {
  Exposition format = Exposition::text;
  bool classic = true;
  int targets = 1;
  int prompts = 1;
  std::string size;  // "1k", "10k", "1000x3"
};

struct Figures {
  double wall_ms = 0, cpu_ms = 0;
  std::size_t bytes = 0, largest_piece = 0;
  std::size_t text_lines = 0, metrics = 0;
  double rss_before_mib = 0, added_mib = 0;
};

const char* format_name(Exposition e) {
  switch (e) {
    case Exposition::text: return "text";
    case Exposition::openmetrics: return "openmetrics";
    case Exposition::protobuf: return "protobuf";
  }
  return "?";
}

std::optional<Exposition> parse_format(std::string_view name) {
  for (Exposition e : {Exposition::text, Exposition::openmetrics, Exposition::protobuf})
    if (name == format_name(e)) return e;
  return std::nullopt;
}

config::Config make_config(int targets, int prompts, bool classic) {
  config::Config c;
  std::vector<std::string> names;
  for (int p = 0; p < prompts; ++p) {
    names.push_back(p == 0 ? "short" : p == 1 ? "medium" : "prompt-" + std::to_string(p));
    c.prompts[names.back()] = {names.back(), "What is the capital of France?", "inline"};
  }
  c.metrics.classic = classic;
  c.metrics.max_series = 1ULL << 40;
  c.metrics.max_scrape_bytes = 1ULL << 40;
  for (int i = 0; i < targets; ++i) {
    config::Target t;
    t.name = "target-" + std::to_string(i);
    t.url = "http://127.0.0.1:1/v1";
    t.model = "model-" + std::to_string(i % 7);
    t.prompts = names;
    c.targets.push_back(t);
  }
  return c;
}

// A probe with gaps spread over 2..50 ms (as a real stream's are), so the
// native histograms have the buckets a real one has, not one.
probe::ProbeResult probe_for(const std::string& target, const std::string& prompt, int k) {
  probe::ProbeResult r;
  r.id = fmt::format("{:016x}", 0x9e3779b97f4a7c15ULL * static_cast<unsigned>(k + 1));
  r.target = target;
  r.model = "m";
  r.prompt = prompt;
  r.ok = true;
  r.ts = 1.7e9 + k;
  r.ttft = 0.3 + 0.01 * (k % 5);
  r.tail = 0.01;
  r.duration = 4.5;
  for (auto& p : r.phases) p = 0.001 * (1 + k % 3);
  for (int i = 0; i < 200; ++i) r.gaps.push_back(0.002 * std::pow(1.03, (k * 37 + i * 11) % 110));
  r.chunks = r.gaps.size() + 1;
  r.gap_p50 = 0.01;
  r.gap_p95 = 0.04;
  r.gap_max = 0.05;
  r.prompt_tokens = 12;
  r.completion_tokens = 402;
  r.output_tokens_per_second = 90;
  r.tokens_per_chunk = 2;
  r.finish_reason = "stop";
  return r;
}

void populate(metrics::Metrics& m, const config::Config& c) {
  m.apply_config(c);
  int k = 0;
  for (const auto& t : c.targets)
    for (const auto& p : t.prompts)
      for (int i = 0; i < 3; ++i) m.record(probe_for(t.name, p, k++));
}

double status_mib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::strlen(key))) / 1024.0;
  return 0;
}

bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  return static_cast<bool>(out.flush());
}

double cpu_now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Renders to a sink that only counts: the bytes, and the largest piece.
std::size_t count_bytes(const metrics::Metrics& m, Exposition f, std::size_t* largest = nullptr) {
  std::size_t n = 0;
  m.render(f, [&](std::string_view piece) {
    n += piece.size();
    if (largest) *largest = std::max(*largest, piece.size());
    return true;
  });
  return n;
}

std::size_t text_lines(const metrics::Metrics& m) {
  std::size_t n = 0;
  m.render(Exposition::text, [&](std::string_view piece) {
    std::size_t p = 0;
    while (p < piece.size()) {
      auto e = piece.find('\n', p);
      if (e == std::string_view::npos) e = piece.size();
      if (e > p && piece[p] != '#') ++n;
      p = e + 1;
    }
    return true;
  });
  return n;
}

// Metric messages of the protobuf exposition (length-delimited MetricFamily).
std::size_t protobuf_metrics(const metrics::Metrics& m) {
  std::string all;
  m.render(Exposition::protobuf, [&](std::string_view piece) {
    all.append(piece);
    return true;
  });
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(all.data()),
                                            static_cast<int>(all.size()));
  std::size_t n = 0;
  std::uint32_t length = 0;
  while (in.ReadVarint32(&length)) {
    const auto limit = in.PushLimit(static_cast<int>(length));
    io::prometheus::client::MetricFamily family;
    if (!family.ParseFromCodedStream(&in)) break;
    in.PopLimit(limit);
    n += static_cast<std::size_t>(family.metric_size());
  }
  return n;
}

// `peak_only`: the warm-up and the measured render, nothing else (for a
// heap profiler, whose peak then is the scrape's).
Figures measure(const Case& c, bool peak_only) {
  metrics::Metrics m{{"bench", "bench"}};
  populate(m, make_config(c.targets, c.prompts, c.classic));
  Figures f;
  // The warm-up render, in this case's format only: the render sizes its
  // piece buffer from the largest piece it has made, so a render in another
  // format first would inflate this one's peak.
  f.bytes = count_bytes(m, c.format, &f.largest_piece);
  malloc_trim(0);
  f.rss_before_mib = status_mib("VmRSS:");
  const bool reset = reset_peak();
  count_bytes(m, c.format);
  f.added_mib = reset ? status_mib("VmHWM:") - f.rss_before_mib : -1;
  if (peak_only) return f;
  std::vector<double> wall, cpu;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (wall.size() < 3 || (wall.size() < 15 && std::chrono::steady_clock::now() < until)) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now_ms();
    count_bytes(m, c.format);
    cpu.push_back(cpu_now_ms() - c0);
    wall.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  f.wall_ms = wall[wall.size() / 2];
  f.cpu_ms = cpu[cpu.size() / 2];
  f.text_lines = text_lines(m);  // after the measurements: see above
  f.metrics = protobuf_metrics(m);
  return f;
}

std::string to_json(const Case& c, const Figures& f) {
  return fmt::format(
      R"({{"format":"{}","classic":{},"size":"{}","targets":{},"prompts":{},"wall_ms":{:.3f},)"
      R"("cpu_ms":{:.3f},"bytes":{},"text_lines":{},"metrics":{},"rss_before_mib":{:.2f},)"
      R"("added_mib":{:.2f},"largest_piece":{}}})",
      format_name(c.format), c.classic, c.size, c.targets, c.prompts, f.wall_ms, f.cpu_ms, f.bytes,
      f.text_lines, f.metrics, f.rss_before_mib, f.added_mib, f.largest_piece);
}

// The series a scrape of this mode stores: text lines with classic buckets,
// Metric messages (one per native histogram) without.
std::size_t stored_series(const metrics::Metrics& m, bool classic) {
  return classic ? text_lines(m) : protobuf_metrics(m);
}

// Targets (one prompt each) whose mode stores at least `series` series.
int targets_for(std::size_t series, bool classic) {
  auto count = [classic](int targets) {
    metrics::Metrics m{{"bench", "bench"}};
    populate(m, make_config(targets, 1, classic));
    return stored_series(m, classic);
  };
  const std::size_t one = count(1), per = count(2) - one;
  return 1 + static_cast<int>((series > one ? series - one + per - 1 : 0) / per);
}

double number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  return at == std::string::npos ? -1 : std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

std::optional<std::string> run_child(const char* self, const Case& c) {
  const std::string cmd =
      fmt::format("'{}' --scrape-case {} {} {} {} {}", self, format_name(c.format),
                  c.classic ? 1 : 0, c.targets, c.prompts, c.size);
  FILE* out = popen(cmd.c_str(), "r");
  if (out == nullptr) return std::nullopt;
  std::string line;
  char buf[1024];
  while (std::fgets(buf, sizeof buf, out) != nullptr) line += buf;
  if (pclose(out) != 0 || line.empty()) return std::nullopt;
  return line;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (bool classic : {true, false}) {
    const int k1 = targets_for(1'000, classic), k10 = targets_for(10'000, classic);
    for (Exposition f : {Exposition::text, Exposition::openmetrics, Exposition::protobuf}) {
      cases.push_back({f, classic, k1, 1, "1k"});
      cases.push_back({f, classic, k10, 1, "10k"});
      cases.push_back({f, classic, 1000, 3, "1000x3"});
    }
  }
  return cases;
}

struct Row {
  Case c;
  std::string json;
  double get(const char* key) const { return number(json, key); }
};

const Row* find(const std::vector<Row>& rows, Exposition f, bool classic, std::string_view size) {
  for (const auto& r : rows)
    if (r.c.format == f && r.c.classic == classic && r.c.size == size) return &r;
  return nullptr;
}

void print_goals(const std::vector<Row>& rows) {
  double worst_10k = 0, worst_rss = 0;
  for (const auto& r : rows) {
    if (r.c.size == "10k") worst_10k = std::max(worst_10k, r.get("wall_ms"));
    worst_rss = std::max(worst_rss, r.get("added_mib"));
  }
  std::printf("\ngoal: render <= 20 ms at 10k series, every format: worst %.1f ms wall -> %s\n",
              worst_10k, worst_10k <= 20 ? "met" : "MISSED");
  std::printf("goal: a scrape adds <= 32 MiB RSS at any size: worst %.1f MiB -> %s\n", worst_rss,
              worst_rss <= 32 ? "met" : "MISSED");
  const Row* today = find(rows, Exposition::text, true, "1000x3");
  const Row* native = find(rows, Exposition::protobuf, false, "1000x3");
  if (today && native) {
    const double ratio = native->get("bytes") / today->get("bytes");
    std::printf(
        "goal: protobuf classic:false 1000x3 <= 1/5 of today's text bytes: %.0f / %.0f = %.3f "
        "-> %s\n",
        native->get("bytes"), today->get("bytes"), ratio, ratio <= 0.2 ? "met" : "MISSED");
    std::printf(
        "goal: classic:false <= 40 series per target x prompt: %.1f (%.0f metrics / 3000)\n",
        native->get("metrics") / 3000.0, native->get("metrics"));
  }
}

}  // namespace

int run_scrape_table(const char* self) {
  std::vector<Row> rows;
  std::printf("%-11s %-7s %-6s %7s %10s %8s %12s %9s %9s %9s %9s %9s\n", "format", "classic",
              "size", "targets", "text lines", "metrics", "bytes", "wall ms", "cpu ms", "RSS MiB",
              "+scrape", "piece MiB");
  for (const Case& c : all_cases()) {
    const auto json = run_child(self, c);
    if (!json) {
      std::printf("%s classic=%d %s: the case failed\n", format_name(c.format), c.classic,
                  c.size.c_str());
      return 1;
    }
    const Row r{c, *json};
    std::printf("%-11s %-7s %-6s %7d %10.0f %8.0f %12.0f %9.2f %9.2f %9.1f %9.1f %9.1f\n",
                format_name(c.format), c.classic ? "true" : "false", c.size.c_str(),
                c.targets * c.prompts, r.get("text_lines"), r.get("metrics"), r.get("bytes"),
                r.get("wall_ms"), r.get("cpu_ms"), r.get("rss_before_mib"), r.get("added_mib"),
                r.get("largest_piece") / (1024.0 * 1024.0));
    std::fflush(stdout);
    rows.push_back(r);
  }
  print_goals(rows);
  for (const auto& r : rows) std::printf("json %s", r.json.c_str());
  return 0;
}

int run_scrape_case(int argc, char** argv) {
  // --scrape-case FORMAT CLASSIC(0|1) TARGETS PROMPTS SIZE [peak-only]
  if (argc < 7) return 2;
  Case c;
  const auto format = parse_format(argv[2]);
  if (!format) return 2;
  c.format = *format;
  c.classic = std::string_view(argv[3]) == "1";
  c.targets = std::atoi(argv[4]);
  c.prompts = std::atoi(argv[5]);
  c.size = argv[6];
  const bool peak_only = argc > 7 && std::string_view(argv[7]) == "peak-only";
  std::puts(to_json(c, measure(c, peak_only)).c_str());
  return 0;
}

}  // namespace lse::bench
