// Recorded-stream tests for the native dialects (Anthropic Messages, OpenAI
// Responses, Gemini, Ollama chat/generate): every such body in
// tests/fixtures/sse goes through its framing decoder (sse::Decoder or
// ndjson::Decoder) and the dialect's adapter whole, split in two at every
// byte, and one byte at a time, and must give the hand-counted values of the
// table below every time. Plus request-body and error-event tests per dialect.
// These dialects are not in the registry yet, so the factories are called
// directly.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "api/adapter.hpp"
#include "api/dialects.hpp"
#include "ndjson/decoder.hpp"
#include "sse/decoder.hpp"

namespace lse::api {
namespace {

using Factory = std::unique_ptr<Adapter> (*)(CountSet);

std::string read_fixture(const std::string& name) {
  const std::string path = std::string(LSE_FIXTURES) + "/sse/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Expect {
  const char* file;
  Factory make;
  int content_default;  // content chunks with count: [content]
  int content_all;      // content chunks with count: [content, reasoning, tool_calls]
  int reasoning_events;
  std::int64_t prompt_tokens;  // merged field by field, as the prober does
  std::int64_t completion_tokens;
  std::int64_t reasoning_tokens;
  const char* finish;  // the last finish reason reported
  bool timings;        // server_timings reported (Ollama's done line)
  const char* model;   // the first model the stream names, exactly as the body spells it
};

// How each count was made, by reading the file:
// - anthropic-messages: 3 content_block_delta/text_delta ("1", "\n2\n3",
//   "\n4\n5"); usage input 15 (message_start), output 13 (message_delta).
// - -ping-first: 1 text_delta ("2"); 20 in, 5 out.
// - -tool-use: 2 text_delta; 6 input_json_delta, the first with "" → 5
//   counted with tool_calls; 2 + 5 = 7; 394 in, 67 out; stop tool_use.
// - -thinking: 22 thinking_delta, the last with "" → 21 reasoning events;
//   no text; 7 input_json_delta, the first "" → 6; 21 + 6 = 27; 424/119.
// - openai-responses-text: 7 response.output_text.delta; completed usage
//   20/8, reasoning_tokens 0.
// - -reasoning-item: 2 output_text.delta; the reasoning item has no summary
//   text, so no reasoning events; 19/118/64.
// - -function-call: no text; 6 function_call_arguments.delta; 53/469/448;
//   the completed output holds a function_call item → tool_calls.
// - ollama chat: 22 lines, 21 with non-empty message.content (" " counts),
//   the done line has ""; prompt_eval_count 16, eval_count 22.
// - ollama chat llama3 2024: 50 lines, 49 with content; 17/50.
// - ollama generate: 22 lines, 21 with non-empty response; 16/22.
// - gemini-crlf: 3 events, each with one non-empty part text; usage of the
//   last chunk 13/8 (the first two say 15 and no candidates count); STOP.
// clang-format off
const Expect kFixtures[] = {
  // file                                   factory                  dflt all rsn  prompt compl rsn_tok finish       timings model
  {"anthropic-messages.sse",                make_anthropic_messages,  3,   3,  0,   15,   13,   -1,   "stop",       false, "claude-3-opus-20240229"},
  {"anthropic-messages-ping-first.sse",     make_anthropic_messages,  1,   1,  0,   20,    5,   -1,   "stop",       false, "claude-sonnet-4-5-20250929"},
  {"anthropic-messages-tool-use.sse",       make_anthropic_messages,  2,   7,  0,  394,   67,   -1,   "tool_calls", false, "claude-sonnet-4-20250514"},
  {"anthropic-messages-thinking.sse",       make_anthropic_messages,  0,  27, 21,  424,  119,   -1,   "tool_calls", false, "claude-sonnet-4-20250514"},
  {"openai-responses-text.sse",             make_openai_responses,    7,   7,  0,   20,    8,    0,   "stop",       false, "gpt-4o-mini-2024-07-18"},
  {"openai-responses-reasoning-item.sse",   make_openai_responses,    2,   2,  0,   19,  118,   64,   "stop",       false, "gpt-5-2025-08-07"},
  {"openai-responses-function-call.sse",    make_openai_responses,    0,   6,  0,   53,  469,  448,   "tool_calls", false, "gpt-5-2025-08-07"},
  {"ollama-api-chat.ndjson",                make_ollama_chat,        21,  21,  0,   16,   22,   -1,   "stop",       true, "gemma3:1b"},
  {"ollama-api-chat-llama3-2024.ndjson",    make_ollama_chat,        49,  49,  0,   17,   50,   -1,   "stop",       true, "llama3"},
  {"ollama-api-generate.ndjson",            make_ollama_generate,    21,  21,  0,   16,   22,   -1,   "stop",       true, "gemma3:1b"},
  {"gemini-crlf.sse",                       make_gemini,              3,   3,  0,   13,    8,   -1,   "stop",       false, "gemini-2.0-flash-exp"},
};
// clang-format on

struct Tally {
  int events = 0;
  int content = 0;
  int reasoning_events = 0;
  Usage usage;
  std::string finish;
  bool done = false;
  int events_after_done = 0;  // a stream's end marker must be its last event
  int errors = 0;             // upstream or protocol
  int timings = 0;
  ServerTimings last_timings;
  std::size_t text_bytes = 0;
  std::string model;  // the first non-empty one, copied as the prober does

  void add(const EventMeaning& m) {
    ++events;
    if (model.empty()) model.assign(m.model);
    if (done) ++events_after_done;
    content += m.content;
    reasoning_events += m.reasoning;
    text_bytes += m.text_bytes;
    if (m.usage) {
      if (m.usage->prompt_tokens >= 0) usage.prompt_tokens = m.usage->prompt_tokens;
      if (m.usage->completion_tokens >= 0) usage.completion_tokens = m.usage->completion_tokens;
      if (m.usage->reasoning_tokens >= 0) usage.reasoning_tokens = m.usage->reasoning_tokens;
    }
    if (!m.finish_reason.empty()) finish = m.finish_reason;
    done |= m.done;
    errors += m.upstream_error + m.protocol_error;
    if (m.server_timings) {
      ++timings;
      last_timings = *m.server_timings;
    }
  }
  bool operator==(const Tally& o) const {
    return events == o.events && content == o.content && reasoning_events == o.reasoning_events &&
           usage.prompt_tokens == o.usage.prompt_tokens &&
           usage.completion_tokens == o.usage.completion_tokens &&
           usage.reasoning_tokens == o.usage.reasoning_tokens && finish == o.finish &&
           done == o.done && events_after_done == o.events_after_done && errors == o.errors &&
           timings == o.timings && text_bytes == o.text_bytes && model == o.model;
  }
};

std::ostream& operator<<(std::ostream& os, const Tally& t) {
  return os << "{events=" << t.events << " content=" << t.content
            << " reasoning=" << t.reasoning_events << " usage=" << t.usage.prompt_tokens << "/"
            << t.usage.completion_tokens << "/" << t.usage.reasoning_tokens << " finish='"
            << t.finish << "' done=" << t.done << " after_done=" << t.events_after_done
            << " errors=" << t.errors << " timings=" << t.timings << " bytes=" << t.text_bytes
            << " model='" << t.model << "'}";
}

// Feeds the pieces through the adapter's own framing, as the prober will.
Tally run(Adapter& adapter, const std::vector<std::string_view>& pieces) {
  Tally t;
  if (adapter.framing() == Framing::sse) {
    sse::Decoder dec;
    auto sink = [&](const sse::Event& e) { t.add(adapter.interpret(e)); };
    for (std::string_view p : pieces) EXPECT_EQ(dec.feed(p, sink), sse::Status::ok);
    EXPECT_FALSE(dec.has_partial_event());
    return t;
  }
  ndjson::Decoder dec;
  sse::Event ev;  // an NDJSON line reaches interpret() as data, type empty
  auto sink = [&](std::string_view line) {
    ev.data.assign(line);
    t.add(adapter.interpret(ev));
  };
  for (std::string_view p : pieces) EXPECT_EQ(dec.feed(p, sink), ndjson::Status::ok);
  EXPECT_FALSE(dec.has_partial_line());
  dec.finish(sink);
  return t;
}

void check(const Tally& t, const Expect& x, int expected_content) {
  EXPECT_EQ(t.content, expected_content);
  EXPECT_EQ(t.reasoning_events, x.reasoning_events);
  EXPECT_EQ(t.usage.prompt_tokens, x.prompt_tokens);
  EXPECT_EQ(t.usage.completion_tokens, x.completion_tokens);
  EXPECT_EQ(t.usage.reasoning_tokens, x.reasoning_tokens);
  EXPECT_EQ(t.finish, x.finish);
  EXPECT_TRUE(t.done);
  EXPECT_EQ(t.events_after_done, 0);
  EXPECT_EQ(t.errors, 0);
  EXPECT_EQ(t.timings, x.timings ? 1 : 0);
  EXPECT_EQ(t.model, x.model);
}

void run_all_splits(const Expect& x, CountSet count, int expected_content) {
  const std::string body = read_fixture(x.file);
  ASSERT_FALSE(body.empty());
  const std::string_view b = body;
  const std::unique_ptr<Adapter> adapter = x.make(count);  // reused, as per target
  const Tally whole = run(*adapter, {b});
  SCOPED_TRACE(::testing::Message() << x.file << " one piece: " << whole);
  check(whole, x, expected_content);
  for (std::size_t i = 0; i <= b.size(); ++i) {
    const Tally t = run(*adapter, {b.substr(0, i), b.substr(i)});
    if (!(t == whole)) {
      ADD_FAILURE() << x.file << " split at " << i << ": " << t;
      return;
    }
  }
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < b.size(); ++i) bytes.push_back(b.substr(i, 1));
  EXPECT_EQ(run(*adapter, bytes), whole) << "one byte at a time";
}

// Names the fixture in failure messages instead of dumping the struct's bytes.
void PrintTo(const Expect& x, std::ostream* os) { *os << x.file; }

class DialectFixture : public ::testing::TestWithParam<Expect> {};

TEST_P(DialectFixture, DefaultCountEverySplit) {
  run_all_splits(GetParam(), CountSet{}, GetParam().content_default);
}

TEST_P(DialectFixture, CountAllEverySplit) {
  run_all_splits(GetParam(), CountSet{true, true, true}, GetParam().content_all);
}

std::string fixture_name(const ::testing::TestParamInfo<Expect>& info) {
  std::string n = info.param.file;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Recorded, DialectFixture, ::testing::ValuesIn(kFixtures), fixture_name);

// The done line's nanoseconds, as seconds (ollama-api-chat.ndjson:
// load_duration 38473250, prompt_eval_duration 27608250, eval_duration
// 105611917).
TEST(DialectFixture, OllamaServerTimingsInSeconds) {
  const std::string body = read_fixture("ollama-api-chat.ndjson");
  const auto adapter = make_ollama_chat(CountSet{});
  const Tally t = run(*adapter, {body});
  EXPECT_DOUBLE_EQ(t.last_timings.load_seconds, 0.03847325);
  EXPECT_DOUBLE_EQ(t.last_timings.prompt_eval_seconds, 0.02760825);
  EXPECT_DOUBLE_EQ(t.last_timings.eval_seconds, 0.105611917);
}

}  // namespace
}  // namespace lse::api
