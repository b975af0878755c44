// Masks the secrets the exporter sends (API keys, auth header values) in text
// an upstream wrote: a gateway that echoes the key it refused, in full or as
// a hint ("Incorrect API key provided: sk-test-****CRET"), must not get it
// into a log line, a metric label, a row or a report. Pure: text in, text out.
//
// The rules, for each secret s (case-sensitive byte matching):
//  0. A secret shorter than kMinSecretBytes (6) is ignored: it is too short
//     to be a credential worth the name, and masking it would garble
//     ordinary words (a header `X-Auth-Mode: none`).
//  1. Every occurrence of s is masked.
//  2. Fragments, for s of at least kFragmentSecretBytes (12): every run of
//     text in which each byte lies inside some kFragmentBytes-long (8)
//     substring of s that appears there is masked (a truncated echo, or the
//     first or last 8 or more characters of the key).
//  3. Tail hints, for s of at least kFragmentSecretBytes (12): a word of the
//     text (a run of bytes that are not whitespace nor any of "'`,;:=()[]{}<>,
//     with trailing . ! ? left out) that ends with the last kTailBytes (4)
//     characters of s, has something before them (its head), and is
//     recognisably a key hint, is masked as a whole. It is a hint when its
//     head starts with "sk-" (sk-ant-, sk-proj-, ...) or with the first 4
//     characters of s, or ends with a run of masking characters ("**", "..",
//     "##", "…", "•"), or when the word before it is "Bearer" (any case).
//     A bare 4-character word is never masked: "CRET" alone is too likely to
//     be ordinary text.
// Masked runs that touch become one kMask. Cost: O(n·k) for n bytes of text
// and k secrets (fragments are looked up as 8-byte values in one set).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace lse::util {

class Redactor {
 public:
  static constexpr std::string_view kMask = "<redacted>";
  static constexpr std::size_t kMinSecretBytes = 6;
  static constexpr std::size_t kFragmentSecretBytes = 12;
  static constexpr std::size_t kFragmentBytes = 8;
  static constexpr std::size_t kTailBytes = 4;

  Redactor() = default;
  // Duplicates and secrets below kMinSecretBytes are dropped.
  explicit Redactor(const std::vector<std::string>& secrets);

  // The text with every secret, fragment and hint of the rules replaced by kMask.
  std::string mask(std::string_view text) const;
  // No secret to mask: mask() returns its input.
  bool empty() const { return secrets_.empty(); }

 private:
  void mark_whole(std::string_view text, std::vector<bool>& masked) const;
  void mark_fragments(std::string_view text, std::vector<bool>& masked) const;
  void mark_hints(std::string_view text, std::vector<bool>& masked) const;
  bool is_hint(std::string_view word, bool after_bearer) const;

  std::vector<std::string> secrets_;
  std::unordered_set<std::uint64_t> fragments_;  // every 8-byte substring of a long secret
};

}  // namespace lse::util
