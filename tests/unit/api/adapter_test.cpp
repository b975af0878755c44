// Tests for api/adapter: dialect names, request bodies and the meaning of
// single hand-written events (edge cases the recorded fixtures lack).
#include "api/adapter.hpp"

#include <gtest/gtest.h>

#include <string>

namespace lse::api {
namespace {

sse::Event data_event(std::string data, std::string type = "") {
  sse::Event e;
  e.data = std::move(data);
  e.type = std::move(type);
  return e;
}

EventMeaning chat(const std::string& data, CountSet count = {}, const std::string& type = "") {
  return make_adapter(Dialect::openai_chat, count)->interpret(data_event(data, type));
}

TEST(Dialect, ParseAndName) {
  EXPECT_EQ(parse_dialect("openai-chat"), Dialect::openai_chat);
  EXPECT_EQ(parse_dialect("openai-completions"), Dialect::openai_completions);
  EXPECT_EQ(parse_dialect("openai"), std::nullopt);
  EXPECT_EQ(parse_dialect("OpenAI-Chat"), std::nullopt);
  EXPECT_EQ(parse_dialect(""), std::nullopt);
  for (Dialect d : {Dialect::openai_chat, Dialect::openai_completions}) {
    EXPECT_EQ(parse_dialect(dialect_name(d)), d);
  }
}

TEST(Adapter, PathsAndDialect) {
  auto c = make_adapter(Dialect::openai_chat, {});
  auto p = make_adapter(Dialect::openai_completions, {});
  EXPECT_EQ(c->dialect(), Dialect::openai_chat);
  EXPECT_EQ(p->dialect(), Dialect::openai_completions);
  EXPECT_EQ(c->path(), "/chat/completions");
  EXPECT_EQ(p->path(), "/completions");
}

TEST(BuildBody, ChatDefaults) {
  RequestSpec spec;
  spec.model = "gpt-4o-mini";
  spec.prompt_text = "What is the capital of France?";
  EXPECT_EQ(
      make_adapter(Dialect::openai_chat, {})->build_body(spec),
      R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"What is the capital of France?"}],)"
      R"("stream":true,"max_tokens":256,"temperature":0.0,"stream_options":{"include_usage":true}})");
}

TEST(BuildBody, CompletionsUsesPrompt) {
  RequestSpec spec;
  spec.model = "facebook/opt-125m";
  spec.prompt_text = "Say \"hi\"\n";
  spec.max_tokens = 20;
  spec.temperature = 0.7;
  spec.include_usage = false;
  EXPECT_EQ(make_adapter(Dialect::openai_completions, {})->build_body(spec),
            R"({"model":"facebook/opt-125m","prompt":"Say \"hi\"\n","stream":true,)"
            R"("max_tokens":20,"temperature":0.7})");
}

TEST(BuildBody, NonPositiveMaxTokensIsOmitted) {
  RequestSpec spec;
  spec.model = "m";
  spec.prompt_text = "p";
  spec.max_tokens = 0;
  spec.include_usage = false;
  EXPECT_EQ(
      make_adapter(Dialect::openai_chat, {})->build_body(spec),
      R"({"model":"m","messages":[{"role":"user","content":"p"}],"stream":true,"temperature":0.0})");
}

TEST(BuildBody, ExtraBodyDeepMergedLast) {
  RequestSpec spec;
  spec.model = "m";
  spec.prompt_text = "p";
  spec.extra_body = json::Value{json::Object{
      {"stream_options", json::Object{{"continuous_usage_stats", true}}},
      {"max_tokens", 8},
      {"reasoning", json::Object{{"enabled", true}}},
  }};
  EXPECT_EQ(
      make_adapter(Dialect::openai_chat, {})->build_body(spec),
      R"({"model":"m","messages":[{"role":"user","content":"p"}],"stream":true,"max_tokens":8,)"
      R"("temperature":0.0,"stream_options":{"include_usage":true,"continuous_usage_stats":true},)"
      R"("reasoning":{"enabled":true}})");
}

TEST(BuildBody, ExtraBodyCanOverrideModelAndNullOutOptions) {
  RequestSpec spec;
  spec.model = "m";
  spec.prompt_text = "p";
  spec.extra_body = json::Value{json::Object{{"model", "other"}, {"stream_options", nullptr}}};
  EXPECT_EQ(make_adapter(Dialect::openai_completions, {})->build_body(spec),
            R"({"model":"other","prompt":"p","stream":true,"max_tokens":256,"temperature":0.0,)"
            R"("stream_options":null})");
}

TEST(Interpret, DoneAndEmpty) {
  EXPECT_TRUE(chat("[DONE]").done);
  const EventMeaning empty = chat("");
  EXPECT_FALSE(empty.done);
  EXPECT_FALSE(empty.content);
  EXPECT_FALSE(empty.protocol_error);
  EXPECT_FALSE(empty.upstream_error);
  // "[DONE]" is exact: anything else must be JSON.
  EXPECT_TRUE(chat("[DONE] ").protocol_error);
}

TEST(Interpret, ProtocolErrors) {
  EXPECT_TRUE(chat("not json").protocol_error);
  EXPECT_TRUE(chat("{\"choices\":[").protocol_error);
  EXPECT_TRUE(chat("[1,2]").protocol_error);
  EXPECT_TRUE(chat("\"str\"").protocol_error);
  EXPECT_TRUE(chat("42").protocol_error);
  EXPECT_TRUE(chat("{\"choices\":{}}").protocol_error);
  EXPECT_TRUE(chat("{\"a\":1} trailing").protocol_error);
  // A JSON object without choices is not a protocol error (other chunk kinds).
  EXPECT_FALSE(chat("{}").protocol_error);
  EXPECT_FALSE(chat("{\"choices\":null}").protocol_error);
}

TEST(Interpret, ContentDelta) {
  const EventMeaning m =
      chat(R"({"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]})");
  EXPECT_TRUE(m.content);
  EXPECT_FALSE(m.reasoning);
  EXPECT_EQ(m.text_bytes, 5u);
  EXPECT_TRUE(m.finish_reason.empty());
  EXPECT_FALSE(m.usage.has_value());
}

TEST(Interpret, RoleOnlyAndEmptyDeltasAreNotContent) {
  EXPECT_FALSE(chat(R"({"choices":[{"delta":{"role":"assistant","content":""}}]})").content);
  EXPECT_FALSE(chat(R"({"choices":[{"delta":{"role":"assistant","content":null}}]})").content);
  EXPECT_FALSE(chat(R"({"choices":[{"delta":{}}]})").content);
  EXPECT_FALSE(chat(R"({"choices":[]})").content);
  EXPECT_FALSE(chat(R"({"choices":[{"delta":{"content":5}}]})").content);
}

TEST(Interpret, ReasoningCountedOnlyWhenAsked) {
  for (const char* data : {R"({"choices":[{"delta":{"content":null,"reasoning_content":"Hmm"}}]})",
                           R"({"choices":[{"delta":{"content":"","reasoning":"Hmm"}}]})"}) {
    const EventMeaning plain = chat(data);
    EXPECT_FALSE(plain.content) << data;
    EXPECT_TRUE(plain.reasoning) << data;
    EXPECT_EQ(plain.text_bytes, 0u);
    const EventMeaning counted = chat(data, {true, true, false});
    EXPECT_TRUE(counted.content) << data;
    EXPECT_TRUE(counted.reasoning);
    EXPECT_EQ(counted.text_bytes, 3u);
  }
  EXPECT_FALSE(chat(R"({"choices":[{"delta":{"reasoning_content":""}}]})").reasoning);
}

TEST(Interpret, ToolCallArgumentsCountedOnlyWhenAsked) {
  const std::string data =
      R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a"}},)"
      R"({"index":1,"function":{"arguments":"b"}}]}}]})";
  EXPECT_FALSE(chat(data).content);
  const EventMeaning m = chat(data, {true, false, true});
  EXPECT_TRUE(m.content);
  EXPECT_EQ(m.text_bytes, 4u);  // {"a + b
  // Name-only first chunk (arguments "") is not content.
  EXPECT_FALSE(
      chat(
          R"({"choices":[{"delta":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":""}}]}}]})",
          {true, true, true})
          .content);
}

TEST(Interpret, ContentFlagFalseCountsOnlyOtherKinds) {
  const std::string data = R"({"choices":[{"delta":{"content":"x"}}]})";
  EXPECT_FALSE(chat(data, {false, true, true}).content);
}

TEST(Interpret, MistralContentArray) {
  const EventMeaning thinking = chat(
      R"({"choices":[{"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"Okay"}]}]}}]})");
  EXPECT_FALSE(thinking.content);
  EXPECT_TRUE(thinking.reasoning);
  const EventMeaning counted = chat(
      R"({"choices":[{"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"Okay"}]}]}}]})",
      {true, true, false});
  EXPECT_TRUE(counted.content);
  EXPECT_EQ(counted.text_bytes, 4u);
  EXPECT_FALSE(
      chat(R"({"choices":[{"delta":{"content":[{"type":"thinking","thinking":[]}]}}]})").reasoning);

  const EventMeaning text = chat(
      R"({"choices":[{"delta":{"content":[{"type":"text","text":"Hi"},{"type":"text","text":" there"}]}}]})");
  EXPECT_TRUE(text.content);
  EXPECT_FALSE(text.reasoning);
  EXPECT_EQ(text.text_bytes, 8u);

  const EventMeaning mixed = chat(
      R"({"choices":[{"delta":{"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"A"},)"
      R"({"type":"image_url","image_url":"x"},7,null]}}]})");
  EXPECT_TRUE(mixed.content);
  EXPECT_TRUE(mixed.reasoning);
  EXPECT_EQ(mixed.text_bytes, 1u);
}

TEST(Interpret, UsageAndFinishReason) {
  const EventMeaning m = chat(
      R"({"choices":[{"index":0,"delta":{},"finish_reason":null},{"index":1,"delta":{},"finish_reason":"length"},)"
      R"({"index":2,"delta":{},"finish_reason":"stop"}],)"
      R"("usage":{"prompt_tokens":12,"completion_tokens":34,"completion_tokens_details":{"reasoning_tokens":5}}})");
  EXPECT_EQ(m.finish_reason, "length");  // first non-null
  ASSERT_TRUE(m.usage.has_value());
  EXPECT_EQ(m.usage->prompt_tokens, 12);
  EXPECT_EQ(m.usage->completion_tokens, 34);
  EXPECT_EQ(m.usage->reasoning_tokens, 5);
  EXPECT_FALSE(m.content);

  EXPECT_FALSE(chat(R"({"choices":[],"usage":null})").usage.has_value());
  const EventMeaning partial = chat(R"({"choices":[],"usage":{"completion_tokens":3}})");
  ASSERT_TRUE(partial.usage.has_value());
  EXPECT_EQ(partial.usage->prompt_tokens, -1);
  EXPECT_EQ(partial.usage->completion_tokens, 3);
  EXPECT_EQ(partial.usage->reasoning_tokens, -1);
}

TEST(Interpret, UpstreamErrorObject) {
  const EventMeaning m = chat(R"({"error":{"code":400,"message":"Token limit reached"}})");
  EXPECT_TRUE(m.upstream_error);
  EXPECT_FALSE(m.protocol_error);
  EXPECT_EQ(m.error_message, "Token limit reached");

  const EventMeaning bare = chat(R"({"error":"overloaded"})");
  EXPECT_TRUE(bare.upstream_error);
  EXPECT_EQ(bare.error_message, "overloaded");

  const EventMeaning nomsg = chat(R"({"error":{"code":500}})");
  EXPECT_TRUE(nomsg.upstream_error);
  EXPECT_FALSE(nomsg.error_message.empty());

  EXPECT_FALSE(chat(R"({"error":null,"choices":[]})").upstream_error);
}

TEST(Interpret, ErrorMessageTruncatedOnCharacterBoundary) {
  std::string msg(199, 'a');
  msg += "\xC3\xA9";  // é straddles byte 200
  msg += std::string(300, 'b');
  const EventMeaning m = chat(R"({"error":{"message":")" + msg + R"("}})");
  EXPECT_TRUE(m.upstream_error);
  EXPECT_EQ(m.error_message, std::string(199, 'a'));

  const EventMeaning ascii = chat(R"({"error":{"message":")" + std::string(500, 'x') + R"("}})");
  EXPECT_EQ(ascii.error_message.size(), 200u);
}

TEST(Interpret, ErrorEventType) {
  const EventMeaning json_err = chat(R"({"error":{"message":"boom","type":"x"}})", {}, "error");
  EXPECT_TRUE(json_err.upstream_error);
  EXPECT_EQ(json_err.error_message, "boom");

  const EventMeaning text_err = chat("upstream timed out", {}, "error");
  EXPECT_TRUE(text_err.upstream_error);
  EXPECT_FALSE(text_err.protocol_error);
  EXPECT_EQ(text_err.error_message, "upstream timed out");

  const EventMeaning flat = chat(R"({"message":"flat"})", {}, "error");
  EXPECT_TRUE(flat.upstream_error);
  EXPECT_EQ(flat.error_message, "flat");

  EXPECT_TRUE(chat("", {}, "error").upstream_error);
}

TEST(Interpret, ErrorNextToUsageKeepsUsage) {
  const EventMeaning m = chat(
      R"({"error":{"message":"x"},"choices":[{"delta":{"content":""}}],"usage":{"prompt_tokens":1,"completion_tokens":2}})");
  EXPECT_TRUE(m.upstream_error);
  ASSERT_TRUE(m.usage.has_value());
  EXPECT_EQ(m.usage->completion_tokens, 2);
}

TEST(Interpret, AzurePromptFilterResults) {
  const EventMeaning m = chat(
      R"({"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,)"
      R"("content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]})");
  EXPECT_FALSE(m.content);
  EXPECT_FALSE(m.upstream_error);
  EXPECT_FALSE(m.protocol_error);
}

TEST(Interpret, CompletionsText) {
  auto a = make_adapter(Dialect::openai_completions, {});
  const EventMeaning m =
      a->interpret(data_event(R"({"choices":[{"index":0,"text":"\n","finish_reason":null}]})"));
  EXPECT_TRUE(m.content);
  EXPECT_EQ(m.text_bytes, 1u);
  EXPECT_FALSE(a->interpret(data_event(R"({"choices":[{"index":0,"text":""}]})")).content);
  // Chat deltas mean nothing to the completions dialect.
  EXPECT_FALSE(a->interpret(data_event(R"({"choices":[{"delta":{"content":"x"}}]})")).content);
  EXPECT_EQ(a->interpret(data_event(R"({"choices":[{"text":"x","finish_reason":"length"}]})"))
                .finish_reason,
            "length");
}

TEST(Interpret, AdapterIsReusableAcrossSizes) {
  // The padded buffer is reused; a short event after a long one must not see
  // the long one's tail.
  auto a = make_adapter(Dialect::openai_chat, {});
  const std::string longer =
      R"({"choices":[{"delta":{"content":")" + std::string(50000, 'z') + R"("}}]})";
  EXPECT_EQ(a->interpret(data_event(longer)).text_bytes, 50000u);
  EXPECT_EQ(a->interpret(data_event(R"({"choices":[{"delta":{"content":"ab"}}]})")).text_bytes, 2u);
  const std::string cut = std::string(R"({"choices":[{"delta":{"content":"ab"}}]})").substr(0, 20);
  EXPECT_TRUE(a->interpret(data_event(cut)).protocol_error);
  EXPECT_EQ(a->interpret(data_event(R"({"choices":[{"delta":{"content":"c"}}]})")).text_bytes, 1u);
}

}  // namespace
}  // namespace lse::api
