// libFuzzer target for the pure stream path: sse::Decoder on arbitrary bytes
// (differentially: one piece vs. split at a position taken from the input vs.
// byte by byte must decode identically), every decoded event through both
// OpenAI adapters (invariants on EventMeaning), and build_body with the input
// as prompt (the body must be valid JSON that round-trips the prompt).
// Built and run by tests/fuzz/build_and_run.sh.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "api/adapter.hpp"
#include "sse/decoder.hpp"

namespace {

using lse::sse::Decoder;
using lse::sse::Event;
using lse::sse::Status;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "invariant violated: %s\n", what);
  std::abort();
}

#define FUZZ_CHECK(cond)      \
  do {                        \
    if (!(cond)) fail(#cond); \
  } while (0)

struct Decoded {
  std::vector<Event> events;
  Status status = Status::ok;
  std::uint64_t comments = 0;
  bool partial = false;

  bool operator==(const Decoded& o) const {
    if (events.size() != o.events.size() || status != o.status || comments != o.comments ||
        partial != o.partial) {
      return false;
    }
    for (std::size_t i = 0; i < events.size(); ++i) {
      const Event& a = events[i];
      const Event& b = o.events[i];
      if (a.type != b.type || a.data != b.data || a.id != b.id || a.retry != b.retry) return false;
    }
    return true;
  }
};

Decoded decode(const std::vector<std::string_view>& pieces, std::size_t max_event_bytes) {
  Decoder dec(max_event_bytes);
  Decoded out;
  for (std::string_view p : pieces) {
    const Status s = dec.feed(p, [&](const Event& e) {
      FUZZ_CHECK(e.data.size() <= max_event_bytes);
      out.events.push_back(e);
    });
    FUZZ_CHECK(s == dec.status());
  }
  out.status = dec.status();
  out.comments = dec.comments();
  out.partial = dec.has_partial_event();
  return out;
}

void check_meaning(const lse::api::EventMeaning& m, const Event& e) {
  FUZZ_CHECK(m.content == (m.text_bytes > 0));
  FUZZ_CHECK(m.text_bytes <= e.data.size());
  FUZZ_CHECK(m.error_message.size() <= 200);
  FUZZ_CHECK(!(m.done && (m.protocol_error || m.upstream_error || m.content)));
  FUZZ_CHECK(!(m.protocol_error && m.content));
  if (e.data.empty() && e.type != "error") {
    FUZZ_CHECK(!m.content && !m.done && !m.protocol_error && !m.upstream_error);
  }
}

void check_body(lse::api::Adapter& adapter, std::string_view prompt,
                simdjson::dom::parser& parser) {
  lse::api::RequestSpec spec;
  spec.model = "fuzz-model";
  spec.prompt_text = std::string(prompt);
  spec.max_tokens = 16;
  spec.temperature = 0.25;
  const std::string body = adapter.build_body(spec);
  simdjson::dom::element root;
  FUZZ_CHECK(parser.parse(body).get(root) == simdjson::SUCCESS);
  std::string_view got;
  if (adapter.dialect() == lse::api::Dialect::openai_chat) {
    FUZZ_CHECK(root["messages"].at(0)["content"].get_string().get(got) == simdjson::SUCCESS);
  } else {
    FUZZ_CHECK(root["prompt"].get_string().get(got) == simdjson::SUCCESS);
  }
  FUZZ_CHECK(got == prompt);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);

  // Controls come from the input itself so recorded SSE files stay useful
  // seeds: the last byte picks the split point, the first the event limit.
  std::size_t split = 0;
  std::size_t max_event_bytes = 1 << 20;
  if (size > 0) {
    const unsigned last = data[size - 1];
    const unsigned first = data[0];
    split = (last * 257u + first) % (size + 1);
    static constexpr std::size_t kLimits[] = {1 << 20, 16, 200, 4096};
    max_event_bytes = kLimits[(first ^ last) & 3u];
  }

  const Decoded whole = decode({in}, max_event_bytes);
  const Decoded two = decode({in.substr(0, split), in.substr(split)}, max_event_bytes);
  if (!(two == whole)) fail("two-piece decode differs from one-piece decode");
  if (size <= 8192) {
    std::vector<std::string_view> bytes;
    bytes.reserve(size);
    for (std::size_t i = 0; i < size; ++i) bytes.push_back(in.substr(i, 1));
    if (!(decode(bytes, max_event_bytes) == whole)) fail("byte-wise decode differs");
  }

  // Adapters are long-lived in the prober: reuse them across inputs so state
  // carried between events (padded buffer, parser) is exercised too.
  static auto chat = lse::api::make_adapter(lse::api::Dialect::openai_chat, {true, true, true});
  static auto chat_default = lse::api::make_adapter(lse::api::Dialect::openai_chat, {});
  static auto completions =
      lse::api::make_adapter(lse::api::Dialect::openai_completions, {true, false, false});
  for (const Event& e : whole.events) {
    const auto all = chat->interpret(e);
    check_meaning(all, e);
    const auto def = chat_default->interpret(e);
    check_meaning(def, e);
    // Counting more kinds never counts fewer bytes.
    FUZZ_CHECK(def.text_bytes <= all.text_bytes);
    FUZZ_CHECK(def.protocol_error == all.protocol_error);
    check_meaning(completions->interpret(e), e);
  }

  // Request bodies: JSON must stay valid for any (UTF-8) prompt.
  if (simdjson::validate_utf8(in.data(), in.size())) {
    static simdjson::dom::parser parser;
    check_body(*chat, in, parser);
    check_body(*completions, in, parser);
  }
  return 0;
}
