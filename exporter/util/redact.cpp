// Secret masking of upstream text (see redact.hpp for the rules).
#include "util/redact.hpp"

#include <algorithm>
#include <cstring>

#include "util/text.hpp"

namespace lse::util {
namespace {

std::uint64_t eight_bytes(const char* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// Where a word ends besides whitespace: quoting and the punctuation that
// separates a key from its name in messages and headers.
bool is_delimiter(char c) {
  return is_space(c) || std::string_view("\"'`,;:=()[]{}<>").find(c) != std::string_view::npos;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

// How gateways blank out the middle of a key: "sk-...CRET", "****CRET", "…CRET".
bool ends_with_mask_run(std::string_view head) {
  for (std::string_view run : {"**", "..", "##", "\xE2\x80\xA6", "\xE2\x80\xA2"})
    if (ends_with(head, run)) return true;
  return false;
}

}  // namespace

Redactor::Redactor(const std::vector<std::string>& secrets) {
  for (const auto& s : secrets) {
    if (s.size() < kMinSecretBytes) continue;
    if (std::find(secrets_.begin(), secrets_.end(), s) != secrets_.end()) continue;
    secrets_.push_back(s);
    if (s.size() < kFragmentSecretBytes) continue;
    for (std::size_t i = 0; i + kFragmentBytes <= s.size(); ++i)
      fragments_.insert(eight_bytes(s.data() + i));
  }
}

std::string Redactor::mask(std::string_view text) const {
  if (secrets_.empty() || text.empty()) return std::string(text);
  std::vector<bool> masked(text.size(), false);
  mark_whole(text, masked);
  mark_fragments(text, masked);
  mark_hints(text, masked);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (!masked[i]) {
      out += text[i++];
      continue;
    }
    out += kMask;
    while (i < text.size() && masked[i]) ++i;
  }
  return out;
}

void Redactor::mark_whole(std::string_view text, std::vector<bool>& masked) const {
  for (const auto& s : secrets_) {
    for (auto at = text.find(s); at != std::string_view::npos; at = text.find(s, at + 1))
      std::fill(masked.begin() + static_cast<std::ptrdiff_t>(at),
                masked.begin() + static_cast<std::ptrdiff_t>(at + s.size()), true);
  }
}

void Redactor::mark_fragments(std::string_view text, std::vector<bool>& masked) const {
  if (fragments_.empty() || text.size() < kFragmentBytes) return;
  for (std::size_t i = 0; i + kFragmentBytes <= text.size(); ++i) {
    if (fragments_.count(eight_bytes(text.data() + i)) == 0) continue;
    std::fill(masked.begin() + static_cast<std::ptrdiff_t>(i),
              masked.begin() + static_cast<std::ptrdiff_t>(i + kFragmentBytes), true);
  }
}

void Redactor::mark_hints(std::string_view text, std::vector<bool>& masked) const {
  bool after_bearer = false;
  for (std::size_t i = 0; i < text.size();) {
    if (is_delimiter(text[i])) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < text.size() && !is_delimiter(text[i])) ++i;
    std::string_view word = text.substr(start, i - start);
    while (!word.empty() && std::string_view(".!?").find(word.back()) != std::string_view::npos)
      word.remove_suffix(1);
    if (is_hint(word, after_bearer)) {
      std::fill(masked.begin() + static_cast<std::ptrdiff_t>(start),
                masked.begin() + static_cast<std::ptrdiff_t>(start + word.size()), true);
    }
    after_bearer = text::iequals(word, "bearer");
  }
}

bool Redactor::is_hint(std::string_view word, bool after_bearer) const {
  for (const auto& s : secrets_) {
    if (s.size() < kFragmentSecretBytes || word.size() <= kTailBytes) continue;
    if (!ends_with(word, std::string_view(s).substr(s.size() - kTailBytes))) continue;
    const std::string_view head = word.substr(0, word.size() - kTailBytes);
    if (after_bearer || starts_with(head, "sk-") ||
        starts_with(head, std::string_view(s).substr(0, kTailBytes)) || ends_with_mask_run(head))
      return true;
  }
  return false;
}

}  // namespace lse::util
