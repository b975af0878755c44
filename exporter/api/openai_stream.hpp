// The OpenAI streaming shape both OpenAI dialects share: one JSON chunk per
// event with `choices[]`, `usage`, `finish_reason`, an optional `error`, and
// a final "[DONE]". A dialect says only where its text sits in a choice and
// how its prompt goes into the request. Internal to the api module.
#pragma once
#include <string_view>

#include "api/adapter.hpp"
#include "api/event_json.hpp"

namespace lse::api::detail {

// Byte counts of the text kinds found in one chunk.
struct TextSeen {
  std::size_t content = 0;
  std::size_t reasoning = 0;
  std::size_t tool_args = 0;
};

class OpenAiStream : public Adapter {
 public:
  explicit OpenAiStream(CountSet count) : count_(count) {}

  std::string build_body(const RequestSpec& spec) const final;
  EventMeaning interpret(const sse::Event& event) final;

 protected:
  // Sets the prompt member(s) of the request ("messages" or "prompt").
  virtual void add_prompt(json::Value& body, const RequestSpec& spec) const = 0;
  // Adds the text of one element of `choices` to `seen`.
  virtual void scan_choice(dom::object choice, TextSeen& seen) const = 0;

 private:
  // Steps of interpret, in the order a chunk is read.
  bool read_json(const sse::Event& event, dom::object& obj, EventMeaning& m);
  static void read_error(dom::object obj, bool error_event, EventMeaning& m);
  bool read_choices(dom::object obj, TextSeen& seen, EventMeaning& m) const;
  void count_text(const TextSeen& seen, EventMeaning& m) const;

  CountSet count_;
  EventParser parser_;
};

}  // namespace lse::api::detail
