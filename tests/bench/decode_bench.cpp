// SSE + JSON decode throughput (issue 5): bytes → sse::Decoder → openai-chat
// adapter, on recorded provider streams (tests/fixtures/sse) and on the truth
// upstream's own chunk shape. Reports MB/s (bytes_per_second), events/s
// (items_per_second) and heap allocations per event (operator new is counted
// in this binary; the hot-path target is 0).
//
// Feeds:
//   per_event  one socket read per event, as a streaming server delivers them
//   whole      the whole body in one read (upper bound)
// Baseline in the same run: BM_NaiveBaseline, the way a quick C++ client is
// usually written: std::getline over the body, a copied substring per line, a
// fresh simdjson parser per event, find the delta.content string.
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "api/adapter.hpp"
#include "sse/decoder.hpp"

namespace {
std::atomic<std::uint64_t> g_allocs{0};
}
void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The truth upstream's stream: role event, 200 one-word content events, finish, usage, [DONE].
std::string synthetic_stream() {
  const std::string head =
      "data: {\"id\":\"chatcmpl-bench0123456789abcdefABCD\",\"object\":\"chat.completion.chunk\","
      "\"created\":1700000000,\"model\":\"bench-model\",\"system_fingerprint\":\"fp_bench\","
      "\"choices\":[{\"index\":0,\"delta\":";
  const char* words[] = {" Streaming", " answers", " arrive", " chunk",
                         " by",        ",",        " and",    " users"};
  std::string s =
      head +
      "{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  for (int i = 0; i < 200; ++i)
    s += head + "{\"content\":\"" + words[i % 8] +
         "\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  s += head + "{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n";
  s += "data: "
       "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
       "\"model\":\"bench-model\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_"
       "tokens\":200,"
       "\"total_tokens\":212}}\n\n";
  s += "data: [DONE]\n\n";
  return s;
}

std::string fixture(const std::string& name) {
  if (name == "synthetic") return synthetic_stream();
  return read_file(std::string(LSE_FIXTURES) + "/sse/" + name);
}

// Splits a body into the pieces one read per event would deliver.
std::vector<std::string> per_event_pieces(const std::string& body) {
  std::vector<std::string> out;
  std::size_t p = 0;
  while (p < body.size()) {
    std::size_t e = body.find("\n\n", p);
    std::size_t crlf = body.find("\r\n\r\n", p);
    std::size_t end;
    if (crlf != std::string::npos && (e == std::string::npos || crlf < e))
      end = crlf + 4;
    else if (e != std::string::npos)
      end = e + 2;
    else
      end = body.size();
    out.push_back(body.substr(p, end - p));
    p = end;
  }
  return out;
}

const char* kFixtures[] = {"synthetic", "openai-chat-usage.sse", "vllm-chat-usage.sse",
                           "deepseek-reasoner-reasoning-content.sse",
                           "openrouter-claude-reasoning.sse"};

void run_decode(benchmark::State& state, bool with_json, bool per_event) {
  const std::string body = fixture(kFixtures[state.range(0)]);
  state.SetLabel(kFixtures[state.range(0)]);
  const std::vector<std::string> pieces =
      per_event ? per_event_pieces(body) : std::vector<std::string>{body};
  auto adapter = lse::api::make_adapter(lse::api::Dialect::openai_chat, {true, true, true});
  std::size_t events = 0, content = 0;
  // Warm up buffers once so the steady state is what is measured.
  {
    lse::sse::Decoder d;
    for (const auto& p : pieces)
      d.feed(p, [&](const lse::sse::Event& ev) { adapter->interpret(ev); });
  }
  std::uint64_t allocs = 0;
  lse::sse::Decoder d;
  for (auto _ : state) {
    d.reset();
    const auto a0 = g_allocs.load(std::memory_order_relaxed);
    for (const auto& p : pieces) {
      d.feed(p, [&](const lse::sse::Event& ev) {
        ++events;
        if (with_json) {
          const auto m = adapter->interpret(ev);
          content += m.content;
          benchmark::DoNotOptimize(m);
        } else {
          benchmark::DoNotOptimize(ev.data.data());
        }
      });
    }
    allocs += g_allocs.load(std::memory_order_relaxed) - a0;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
  state.counters["allocs_per_event"] =
      events ? static_cast<double>(allocs) / static_cast<double>(events) : 0;
  state.counters["events_per_body"] =
      static_cast<double>(events) / static_cast<double>(state.iterations());
}

void BM_SseOnly_PerEvent(benchmark::State& s) { run_decode(s, false, true); }
void BM_SseJson_PerEvent(benchmark::State& s) { run_decode(s, true, true); }
void BM_SseJson_Whole(benchmark::State& s) { run_decode(s, true, false); }

void BM_NaiveBaseline(benchmark::State& state) {
  const std::string body = fixture(kFixtures[state.range(0)]);
  state.SetLabel(kFixtures[state.range(0)]);
  std::size_t events = 0;
  std::uint64_t allocs = 0;
  for (auto _ : state) {
    const auto a0 = g_allocs.load(std::memory_order_relaxed);
    std::istringstream in(body);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("data:", 0) != 0) continue;
      std::string data = line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
      if (data == "[DONE]") break;
      ++events;
      simdjson::dom::parser parser;  // fresh per event, as naive code does
      simdjson::dom::element doc;
      if (parser.parse(data).get(doc) != simdjson::SUCCESS) continue;
      std::string_view text;
      auto err = doc["choices"].at(0)["delta"]["content"].get(text);
      benchmark::DoNotOptimize(err);
      benchmark::DoNotOptimize(text);
    }
    allocs += g_allocs.load(std::memory_order_relaxed) - a0;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
  state.counters["allocs_per_event"] =
      events ? static_cast<double>(allocs) / static_cast<double>(events) : 0;
}

constexpr int kNumFixtures = static_cast<int>(sizeof kFixtures / sizeof kFixtures[0]);

}  // namespace

BENCHMARK(BM_SseOnly_PerEvent)->DenseRange(0, kNumFixtures - 1);
BENCHMARK(BM_SseJson_PerEvent)->DenseRange(0, kNumFixtures - 1);
BENCHMARK(BM_SseJson_Whole)->DenseRange(0, kNumFixtures - 1);
BENCHMARK(BM_NaiveBaseline)->DenseRange(0, kNumFixtures - 1);

BENCHMARK_MAIN();
