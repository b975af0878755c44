// Dialect openai-completions: POST /completions with `prompt`; the text of a
// chunk is choices[].text.
#include "api/dialects.hpp"
#include "api/openai_stream.hpp"

namespace lse::api {
namespace {

using namespace detail;

class OpenAiCompletions final : public OpenAiStream {
 public:
  using OpenAiStream::OpenAiStream;
  Dialect dialect() const override { return Dialect::openai_completions; }
  std::string_view path() const override { return "/completions"; }

 protected:
  void add_prompt(json::Value& body, const RequestSpec& spec) const override {
    body.set("prompt", spec.prompt_text);
  }
  void scan_choice(dom::object choice, TextSeen& seen) const override {
    seen.content += member_string_bytes(choice, "text");
  }
};

}  // namespace

std::unique_ptr<Adapter> make_openai_completions(CountSet count) {
  return std::make_unique<OpenAiCompletions>(count);
}

}  // namespace lse::api
