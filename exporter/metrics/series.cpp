#include "metrics/series.hpp"

#include <utility>
#include <stdexcept>
#include <string>

#include "util/text.hpp"

namespace lse::metrics {

// Dialects name the same outcome differently (Anthropic "end_turn"/"max_tokens",
// Responses "max_output_tokens", Gemini "MAX_TOKENS"/"SAFETY"); the label uses
// the OpenAI names so one dashboard panel covers every target. Rows keep the
// server's own word.
std::size_t finish_reason_index(std::string_view reason) {
  const std::string r = text::to_lower(reason);
  static constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"end_turn", "stop"},          {"stop_sequence", "stop"},       {"completed", "stop"},
      {"max_tokens", "length"},      {"max_output_tokens", "length"}, {"safety", "content_filter"},
      {"refusal", "content_filter"}, {"tool_use", "tool_calls"},
  };
  std::string_view name = r;
  for (const auto& [alias, canonical] : kAliases)
    if (alias == name) name = canonical;
  for (std::size_t i = 0; i < kFinishReasons.size(); ++i)
    if (kFinishReasons[i] == name) return i;
  return kFinishOther;
}

// DESIGN §7 shapes; the label value is report::to_string(shape).
static_assert(kShapeCount == report::kAllShapes.size());

std::size_t shape_index(report::Shape shape) {
  for (std::size_t i = 0; i < kShapeCount; ++i)
    if (report::kAllShapes[i] == shape) return i;
  throw std::logic_error("unknown diagnosis shape");
}

}  // namespace lse::metrics
