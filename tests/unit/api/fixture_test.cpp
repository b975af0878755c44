// Recorded-stream tests: every OpenAI-style body in tests/fixtures/sse is fed
// through sse::Decoder + api::Adapter in one piece, split in two at every
// byte boundary, and one byte at a time, and must give the hand-counted
// values below. The expectations were counted by reading each file (see
// tests/fixtures/sse/SOURCES.md for what each one is), not by running this
// code. Non-OpenAI bodies (Anthropic, Responses, Replicate) only check that
// the decoder splits them into the right events.
#include <gtest/gtest.h>

#include <algorithm>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "api/adapter.hpp"
#include "sse/decoder.hpp"

namespace lse::api {
namespace {

std::string read_fixture(const std::string& name) {
  const std::string path = std::string(LSE_FIXTURES) + "/sse/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr std::int64_t kNone = -2;  // "no usage object in the stream"

struct Expect {
  const char* file;
  Dialect dialect;
  int events;                      // data events the decoder dispatches
  int comments;                    // ": ..." lines
  int content_default;             // content chunks with count: [content]
  int content_all;                 // content chunks with count: [content, reasoning, tool_calls]
  int reasoning_events;            // events carrying non-empty reasoning text
  std::int64_t prompt_tokens;      // kNone when no usage object was sent
  std::int64_t completion_tokens;  // -1: usage sent without this field
  std::int64_t reasoning_tokens;
  const char* first_finish;  // "" when none
  int finish_events;
  bool upstream_error;
  const char* error_message;  // expected error text (when upstream_error)
  bool done;                  // [DONE] seen
};

// clang-format off
const Expect kOpenAiFixtures[] = {
  // file                                          dialect                        ev  cm  dflt  all  rsn  prompt compl rsn_tok finish      fin  err   msg                                                       done
  {"openai-chat-finish-length.sse",                Dialect::openai_chat,           5,  0,   1,   1,   0,   79,    1,    0,   "length",     1, false, "",                                                        true},
  {"openai-chat-usage.sse",                        Dialect::openai_chat,          34,  0,  30,  30,   0,   14,   30,    0,   "stop",       1, false, "",                                                        true},
  {"openai-chat-n3-choices.sse",                   Dialect::openai_chat,          50,  0,  42,  42,   0,   79,   42,    0,   "stop",       3, false, "",                                                        true},
  {"openai-chat-gpt5-obfuscation-moderation.sse",  Dialect::openai_chat,           7,  0,   2,   2,   0,   13,   11,    0,   "stop",       1, false, "",                                                        true},
  {"openai-chat-tool-call.sse",                    Dialect::openai_chat,          11,  0,   0,   7,   0,   44,   16,    0,   "tool_calls", 1, false, "",                                                        true},
  {"openai-chat-parallel-tool-calls.sse",          Dialect::openai_chat,          26,  0,   0,  20,   0,  149,   60,    0,   "tool_calls", 1, false, "",                                                        true},
  {"vllm-chat-usage.sse",                          Dialect::openai_chat,          17,  0,  13,  13,   0,   46,   14,   -1,   "stop",       1, false, "",                                                        true},
  {"vllm-completions-legacy.sse",                  Dialect::openai_completions,   21,  0,  20,  20,   0, kNone, kNone, kNone,  "length",     1, false, "",                                                        true},
  {"llamacpp-gptoss-reasoning-usage-timings.sse",  Dialect::openai_chat,          51,  0,   2,  47,  45,   84,   57,   -1,   "stop",       1, false, "",                                                        true},
  {"llamacpp-gptoss-tool-call.sse",                Dialect::openai_chat,          27,  0,   0,  23,  15,  139,   41,   -1,   "tool_calls", 1, false, "",                                                        true},
  {"deepseek-reasoner-reasoning-content.sse",      Dialect::openai_chat,         212,  0,  11, 209, 198,    6,  212,  198,   "stop",       1, false, "",                                                        true},
  {"openrouter-claude-reasoning.sse",              Dialect::openai_chat,          15,  4,   2,   5,   3,   43,   36,   13,   "stop",       1, false, "",                                                        true},
  {"openrouter-error-in-stream.sse",               Dialect::openai_chat,           5, 17,   0,   2,   2,   43,   10,   11,   "length",     2, true,  "Token limit reached",                                     true},
  {"openrouter-processing-comment.sse",            Dialect::openai_chat,           6,  1,   1,   1,   0,  586,    3,    0,   "stop",       1, false, "",                                                        true},
  {"azure-openai-content-filter.sse",              Dialect::openai_chat,           7,  0,   2,   2,   0,   19,   76,   64,   "stop",       1, false, "",                                                        true},
  {"azure-openai-content-filter-2024.sse",         Dialect::openai_chat,          28,  0,  24,  24,   0, kNone, kNone, kNone,  "stop",       1, false, "",                                                        true},
  {"groq-error-event-midstream.sse",               Dialect::openai_chat,          86,  0,   1,  84,  83, kNone, kNone, kNone,  "",           0, true,  "Tool choice is required, but model did not call a tool", false},
  {"mistral-content-array-thinking.sse",           Dialect::openai_chat,         159,  0,  97, 154,  57,   10,  232,   -1,   "stop",       1, false, "",                                                        true},
  {"avian-kimi-extra-blank-line.sse",              Dialect::openai_chat,          26,  0,   3,  21,  17,   76,   47,   34,   "tool_calls", 2, false, "",                                                        true},
  // Gemini's native schema through the chat adapter: decodes (CRLF) without
  // protocol errors but has no OpenAI-shaped content, usage or [DONE].
  {"gemini-crlf.sse",                              Dialect::openai_chat,           3,  0,   0,   0,   0, kNone, kNone, kNone,  "",           0, false, "",                                                        false},
};
// clang-format on

struct Tally {
  int events = 0;
  int content = 0;
  int reasoning_events = 0;
  int usage_events = 0;
  Usage usage{kNone, kNone, kNone};
  std::string first_finish;
  int finish_events = 0;
  int upstream_errors = 0;
  std::string error_message;
  bool done = false;
  int protocol_errors = 0;
  std::size_t text_bytes = 0;
  std::uint64_t comments = 0;
  sse::Status status = sse::Status::ok;
  bool partial = false;
  std::string model;  // the first non-empty one, copied as the prober does
};

bool operator==(const Tally& a, const Tally& b) {
  return a.events == b.events && a.content == b.content &&
         a.reasoning_events == b.reasoning_events && a.usage_events == b.usage_events &&
         a.usage.prompt_tokens == b.usage.prompt_tokens &&
         a.usage.completion_tokens == b.usage.completion_tokens &&
         a.usage.reasoning_tokens == b.usage.reasoning_tokens && a.first_finish == b.first_finish &&
         a.finish_events == b.finish_events && a.upstream_errors == b.upstream_errors &&
         a.error_message == b.error_message && a.done == b.done &&
         a.protocol_errors == b.protocol_errors && a.text_bytes == b.text_bytes &&
         a.comments == b.comments && a.status == b.status && a.partial == b.partial &&
         a.model == b.model;
}

std::ostream& operator<<(std::ostream& os, const Tally& t) {
  return os << "{events=" << t.events << " content=" << t.content
            << " reasoning=" << t.reasoning_events << " usage_events=" << t.usage_events
            << " usage=" << t.usage.prompt_tokens << "/" << t.usage.completion_tokens << "/"
            << t.usage.reasoning_tokens << " finish='" << t.first_finish << "'x" << t.finish_events
            << " errors=" << t.upstream_errors << " msg='" << t.error_message << "' done=" << t.done
            << " protocol=" << t.protocol_errors << " bytes=" << t.text_bytes
            << " comments=" << t.comments << " status=" << static_cast<int>(t.status)
            << " partial=" << t.partial << " model='" << t.model << "'}";
}

// Runs one stream through a fresh decoder and the given (reused) adapter.
class Runner {
 public:
  Runner(Dialect dialect, CountSet count) : adapter_(make_adapter(dialect, count)) {}

  Tally run(const std::vector<std::string_view>& pieces) {
    sse::Decoder dec;
    Tally t;
    auto sink = [&](const sse::Event& e) {
      ++t.events;
      const EventMeaning m = adapter_->interpret(e);
      if (t.model.empty()) t.model.assign(m.model);
      t.content += m.content;
      t.reasoning_events += m.reasoning;
      t.text_bytes += m.text_bytes;
      if (m.usage) {
        ++t.usage_events;
        t.usage = *m.usage;
      }
      if (!m.finish_reason.empty()) {
        ++t.finish_events;
        if (t.first_finish.empty()) t.first_finish = m.finish_reason;
      }
      if (m.upstream_error) {
        ++t.upstream_errors;
        t.error_message = m.error_message;
      }
      t.done |= m.done;
      t.protocol_errors += m.protocol_error;
    };
    for (std::string_view p : pieces) dec.feed(p, sink);
    t.comments = dec.comments();
    t.status = dec.status();
    t.partial = dec.has_partial_event();
    return t;
  }

 private:
  std::unique_ptr<Adapter> adapter_;
};

void check_against_table(const Tally& t, const Expect& x, int expected_content) {
  EXPECT_EQ(t.events, x.events);
  EXPECT_EQ(t.comments, static_cast<std::uint64_t>(x.comments));
  EXPECT_EQ(t.content, expected_content);
  EXPECT_EQ(t.reasoning_events, x.reasoning_events);
  EXPECT_EQ(t.usage_events, x.prompt_tokens == kNone ? 0 : 1);
  EXPECT_EQ(t.usage.prompt_tokens, x.prompt_tokens);
  EXPECT_EQ(t.usage.completion_tokens, x.completion_tokens);
  EXPECT_EQ(t.usage.reasoning_tokens, x.reasoning_tokens);
  EXPECT_EQ(t.first_finish, x.first_finish);
  EXPECT_EQ(t.finish_events, x.finish_events);
  EXPECT_EQ(t.upstream_errors, x.upstream_error ? 1 : 0);
  EXPECT_EQ(t.error_message, x.error_message);
  EXPECT_EQ(t.done, x.done);
  EXPECT_EQ(t.protocol_errors, 0);
  EXPECT_EQ(t.status, sse::Status::ok);
  EXPECT_FALSE(t.partial);  // every recorded body ends on an event boundary
}

class OpenAiFixture : public ::testing::TestWithParam<Expect> {};

#ifdef LSE_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

bool near_line_end(std::string_view b, std::size_t i) {
  const std::size_t from = i < 3 ? 0 : i - 3;
  const std::size_t to = std::min(b.size(), i + 3);
  return b.substr(from, to - from).find_first_of("\r\n") != std::string_view::npos;
}

void run_all_splits(const Expect& x, CountSet count, int expected_content) {
  const std::string body = read_fixture(x.file);
  ASSERT_FALSE(body.empty());
  const std::string_view b = body;
  Runner runner(x.dialect, count);

  // (a) one piece
  const Tally whole = runner.run({b});
  SCOPED_TRACE(::testing::Message() << x.file << " one piece: " << whole);
  check_against_table(whole, x, expected_content);

  // (b) two pieces, split at every byte boundary (quadratic in the body: in
  // a sanitizer build, every boundary within 3 bytes of a line end, where
  // framing happens, and every 13th elsewhere)
  for (std::size_t i = 0; i <= b.size(); ++i) {
    if (kSanitized && i % 13 != 0 && !near_line_end(b, i)) continue;
    const Tally t = runner.run({b.substr(0, i), b.substr(i)});
    if (!(t == whole)) {
      ADD_FAILURE() << x.file << " split at " << i << ": " << t;
      return;
    }
  }

  // (c) one byte per feed
  std::vector<std::string_view> bytes;
  bytes.reserve(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) bytes.push_back(b.substr(i, 1));
  EXPECT_EQ(runner.run(bytes), whole) << x.file << " byte by byte";
}

TEST_P(OpenAiFixture, DefaultCountSet) {
  const Expect& x = GetParam();
  run_all_splits(x, CountSet{}, x.content_default);
}

TEST_P(OpenAiFixture, CountEverything) {
  const Expect& x = GetParam();
  run_all_splits(x, CountSet{true, true, true}, x.content_all);
}

std::string fixture_test_name(const ::testing::TestParamInfo<Expect>& info) {
  std::string name = info.param.file;
  name = name.substr(0, name.find('.'));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Recorded, OpenAiFixture, ::testing::ValuesIn(kOpenAiFixtures),
                         fixture_test_name);

// Count subsets between the two table columns, for the files where they
// differ: reasoning only, tool calls only.
TEST(OpenAiFixtureSubsets, ReasoningOrToolCallsOnly) {
  struct Row {
    const char* file;
    int content_and_reasoning;
    int content_and_tools;
  };
  // Hand-derived from the table: default + reasoning events / + tool events.
  const Row rows[] = {
      {"llamacpp-gptoss-tool-call.sse", 15, 8},
      {"avian-kimi-extra-blank-line.sse", 20, 4},
      {"deepseek-reasoner-reasoning-content.sse", 209, 11},
      {"openai-chat-parallel-tool-calls.sse", 0, 20},
      {"mistral-content-array-thinking.sse", 154, 97},
  };
  for (const Row& r : rows) {
    const std::string body = read_fixture(r.file);
    EXPECT_EQ(Runner(Dialect::openai_chat, {true, true, false}).run({body}).content,
              r.content_and_reasoning)
        << r.file;
    EXPECT_EQ(Runner(Dialect::openai_chat, {true, false, true}).run({body}).content,
              r.content_and_tools)
        << r.file;
  }
}

// Error and Azure details that the table does not show.
TEST(OpenAiFixtureDetails, GroqErrorEventIsTheLastEvent) {
  const std::string body = read_fixture("groq-error-event-midstream.sse");
  auto adapter = make_adapter(Dialect::openai_chat, {});
  sse::Decoder dec;
  std::vector<EventMeaning> meanings;
  std::vector<std::string> types;
  dec.feed(body, [&](const sse::Event& e) {
    types.push_back(e.type);
    meanings.push_back(adapter->interpret(e));
  });
  ASSERT_EQ(meanings.size(), 86u);
  EXPECT_EQ(types.back(), "error");
  EXPECT_TRUE(meanings.back().upstream_error);
  EXPECT_FALSE(meanings.back().protocol_error);
  for (std::size_t i = 0; i + 1 < meanings.size(); ++i) EXPECT_FALSE(meanings[i].upstream_error);
}

TEST(OpenAiFixtureDetails, AzurePromptFilterChunkIsNeutral) {
  for (const char* file :
       {"azure-openai-content-filter.sse", "azure-openai-content-filter-2024.sse"}) {
    const std::string body = read_fixture(file);
    auto adapter = make_adapter(Dialect::openai_chat, {true, true, true});
    sse::Decoder dec;
    std::vector<EventMeaning> meanings;
    dec.feed(body, [&](const sse::Event& e) { meanings.push_back(adapter->interpret(e)); });
    ASSERT_FALSE(meanings.empty());
    const EventMeaning& first = meanings.front();  // choices: [], prompt_filter_results
    EXPECT_FALSE(first.content);
    EXPECT_FALSE(first.upstream_error);
    EXPECT_FALSE(first.protocol_error);
    EXPECT_FALSE(first.usage.has_value());
    EXPECT_TRUE(first.finish_reason.empty());
  }
}

TEST(OpenAiFixtureDetails, TextBytesOfASmallStream) {
  // openai-chat-finish-length.sse: one content delta, the two bytes {"
  const std::string body = read_fixture("openai-chat-finish-length.sse");
  EXPECT_EQ(Runner(Dialect::openai_chat, {}).run({body}).text_bytes, 2u);
  // vllm-chat-usage.sse: "1" "," " " "2" ... "5" = 13 one-byte deltas
  EXPECT_EQ(Runner(Dialect::openai_chat, {}).run({read_fixture("vllm-chat-usage.sse")}).text_bytes,
            13u);
}

TEST(OpenAiFixtureDetails, ModelIsTheOneTheChunksName) {
  struct Case {
    const char* file;
    Dialect dialect;
    const char* model;  // as the recorded body spells it
  };
  const Case cases[] = {
      {"openai-chat-usage.sse", Dialect::openai_chat, "gpt-4o-2024-08-06"},
      {"vllm-chat-usage.sse", Dialect::openai_chat, "meta-llama/Llama-3.3-70B-Instruct"},
      {"vllm-completions-legacy.sse", Dialect::openai_completions, "facebook/opt-125m"},
      {"llamacpp-gptoss-tool-call.sse", Dialect::openai_chat, "openai/gpt-oss-20b"},
      {"deepseek-reasoner-reasoning-content.sse", Dialect::openai_chat, "deepseek-reasoner"},
      {"openrouter-claude-reasoning.sse", Dialect::openai_chat, "anthropic/claude-sonnet-4.5"},
  };
  for (const Case& c : cases) {
    const std::string body = read_fixture(c.file);
    const std::string_view b = body;
    Runner runner(c.dialect, {});
    EXPECT_EQ(runner.run({b}).model, c.model) << c.file;
    // Split mid-stream: the name survives the parser moving on to later events.
    EXPECT_EQ(runner.run({b.substr(0, b.size() / 2), b.substr(b.size() / 2)}).model, c.model)
        << c.file;
  }
}

TEST(OpenAiFixtureDetails, ChatFixtureThroughCompletionsAdapterHasNoContent) {
  // The completions adapter reads choices[].text, which chat chunks lack.
  const Tally t = Runner(Dialect::openai_completions, {true, true, true})
                      .run({read_fixture("openai-chat-usage.sse")});
  EXPECT_EQ(t.content, 0);
  EXPECT_EQ(t.usage.completion_tokens, 30);
  EXPECT_TRUE(t.done);
}

// ---- Non-OpenAI dialects: decoder only ----

struct DecodeExpect {
  const char* file;
  std::vector<std::string> types;  // event types in order
  int comments;
};

std::vector<std::string> repeat(const char* type, int n) {
  return std::vector<std::string>(static_cast<std::size_t>(n), type);
}

std::vector<std::string> concat(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<DecodeExpect> decode_table() {
  return {
      {"anthropic-messages.sse",
       {"message_start", "content_block_start", "content_block_delta", "content_block_delta",
        "ping", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
       0},
      {"anthropic-messages-ping-first.sse",
       {"message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop"},
       0},
      {"anthropic-messages-tool-use.sse",
       concat({{"message_start", "content_block_start", "ping"},
               repeat("content_block_delta", 2),
               {"content_block_stop", "content_block_start"},
               repeat("content_block_delta", 6),
               {"content_block_stop", "message_delta", "message_stop"}}),
       0},
      {"anthropic-messages-thinking.sse",
       concat({{"message_start", "content_block_start", "ping"},
               repeat("content_block_delta", 23),  // 22 thinking + 1 signature
               {"content_block_stop", "content_block_start"},
               repeat("content_block_delta", 7),
               {"content_block_stop", "message_delta", "message_stop"}}),
       0},
      {"openai-responses-text.sse",
       concat({{"response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added"},
               repeat("response.output_text.delta", 7),
               {"response.output_text.done", "response.content_part.done",
                "response.output_item.done", "response.completed"}}),
       0},
      {"openai-responses-reasoning-item.sse",
       concat({{"response.created", "response.in_progress", "response.output_item.added",
                "response.output_item.done", "response.output_item.added",
                "response.content_part.added"},
               repeat("response.output_text.delta", 2),
               {"response.output_text.done", "response.content_part.done",
                "response.output_item.done", "response.completed"}}),
       0},
      {"openai-responses-function-call.sse",
       concat({{"response.created", "response.in_progress", "response.output_item.added",
                "response.output_item.done", "response.output_item.added"},
               repeat("response.function_call_arguments.delta", 6),
               {"response.function_call_arguments.done", "response.output_item.done",
                "response.completed"}}),
       0},
      {"replicate-comments-multiline-data.sse", concat({repeat("output", 24), {"done"}}), 2},
  };
}

TEST(NonOpenAiFixtures, DecoderSplitsIntoTheRightEvents) {
  for (const DecodeExpect& x : decode_table()) {
    const std::string body = read_fixture(x.file);
    const std::string_view b = body;
    auto decode = [&](const std::vector<std::string_view>& pieces) {
      sse::Decoder dec;
      std::vector<std::string> types;
      for (auto p : pieces) {
        EXPECT_EQ(dec.feed(p, [&](const sse::Event& e) { types.push_back(e.type); }),
                  sse::Status::ok);
      }
      EXPECT_EQ(dec.comments(), static_cast<std::uint64_t>(x.comments)) << x.file;
      EXPECT_FALSE(dec.has_partial_event()) << x.file;
      return types;
    };
    EXPECT_EQ(decode({b}), x.types) << x.file;
    for (std::size_t i = 0; i <= b.size(); i += 1) {
      const auto got = decode({b.substr(0, i), b.substr(i)});
      if (got != x.types) {
        ADD_FAILURE() << x.file << " split at " << i;
        break;
      }
    }
  }
}

TEST(NonOpenAiFixtures, ReplicateMultilineDataAndIds) {
  const std::string body = read_fixture("replicate-comments-multiline-data.sse");
  sse::Decoder dec;
  std::vector<sse::Event> events;
  dec.feed(body, [&](const sse::Event& e) { events.push_back(e); });
  ASSERT_EQ(events.size(), 25u);
  EXPECT_EQ(events[0].data, "");  // "data: " with an empty value
  EXPECT_EQ(events[0].id, "1707756341:0");
  EXPECT_EQ(events[1].data, "Sure");
  EXPECT_EQ(events[6].data, ":\n\nWhy");
  EXPECT_EQ(events[7].data, " did the Open");  // one of two leading spaces stripped
  EXPECT_EQ(events[11].data, "\n\nB");
  EXPECT_EQ(events[15].data, "\" from its");
  EXPECT_EQ(events[16].data, " trace!\n\nI");
  EXPECT_EQ(events[24].type, "done");
  EXPECT_EQ(events[24].data, "{}");
  EXPECT_EQ(events[24].id, "1707756343:7");
}

}  // namespace
}  // namespace lse::api
