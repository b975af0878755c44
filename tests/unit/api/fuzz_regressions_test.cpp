// Regressions found while writing the stream-path fuzz target (tests/fuzz/:
// its UBSan build and its usage invariant): token counts in a dialect's usage
// are never negative other than -1 ("not reported"), and Gemini's completion
// count (candidates + thoughts) does not overflow on huge counts.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "api/adapter.hpp"

namespace lse::api {
namespace {

EventMeaning interpret(Dialect d, std::string data, std::string type = "") {
  sse::Event e;
  e.data = std::move(data);
  e.type = std::move(type);
  return make_adapter(d, CountSet{})->interpret(e);
}

TEST(FuzzRegressions, NegativeOpenAiCountsAreNotReported) {
  const EventMeaning m =
      interpret(Dialect::openai_chat,
                R"({"choices":[],"usage":{"prompt_tokens":-7,"completion_tokens":-1,)"
                R"("completion_tokens_details":{"reasoning_tokens":-9223372036854775807}}})");
  ASSERT_TRUE(m.usage);
  EXPECT_EQ(m.usage->prompt_tokens, -1);
  EXPECT_EQ(m.usage->completion_tokens, -1);
  EXPECT_EQ(m.usage->reasoning_tokens, -1);
}

TEST(FuzzRegressions, NegativeAnthropicCountsAreNotReported) {
  const EventMeaning m =
      interpret(Dialect::anthropic_messages,
                R"({"type":"message_delta","usage":{"input_tokens":-2,"output_tokens":-3}})");
  ASSERT_TRUE(m.usage);
  EXPECT_EQ(m.usage->prompt_tokens, -1);
  EXPECT_EQ(m.usage->completion_tokens, -1);
}

TEST(FuzzRegressions, NegativeOllamaCountsAreNotReported) {
  const EventMeaning m =
      interpret(Dialect::ollama_generate, R"({"done":true,"prompt_eval_count":-5,"eval_count":3})");
  ASSERT_TRUE(m.usage);
  EXPECT_EQ(m.usage->prompt_tokens, -1);
  EXPECT_EQ(m.usage->completion_tokens, 3);
}

TEST(FuzzRegressions, NegativeGeminiThoughtsAreNotAdded) {
  const EventMeaning m = interpret(
      Dialect::gemini, R"({"usageMetadata":{"promptTokenCount":-4,"candidatesTokenCount":10,)"
                       R"("thoughtsTokenCount":-3}})");
  ASSERT_TRUE(m.usage);
  EXPECT_EQ(m.usage->prompt_tokens, -1);
  EXPECT_EQ(m.usage->completion_tokens, 10);
  EXPECT_EQ(m.usage->reasoning_tokens, -1);
}

// Found by UBSan: candidatesTokenCount + thoughtsTokenCount overflowed int64.
TEST(FuzzRegressions, GeminiHugeCountsSaturate) {
  const EventMeaning m =
      interpret(Dialect::gemini, R"({"usageMetadata":{"candidatesTokenCount":9223372036854775807,)"
                                 R"("thoughtsTokenCount":5}})");
  ASSERT_TRUE(m.usage);
  EXPECT_EQ(m.usage->completion_tokens, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(m.usage->reasoning_tokens, 5);
}

TEST(FuzzRegressions, GeminiCountsStillAdd) {
  const EventMeaning m = interpret(
      Dialect::gemini, R"({"usageMetadata":{"candidatesTokenCount":10,"thoughtsTokenCount":5}})");
  ASSERT_TRUE(m.usage);
  EXPECT_EQ(m.usage->completion_tokens, 15);
}

}  // namespace
}  // namespace lse::api
