// ASCII text helpers shared by every module: header names, schemes, codings
// and config words are compared case-insensitively in exactly one way.
// Header-only so that the lowest modules (net/) can use them without a link
// dependency.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace lse::text {

// ASCII lower case of one character (locale-independent).
constexpr char to_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// ASCII case-insensitive equality (locale-independent).
constexpr bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (to_lower(a[i]) != to_lower(b[i])) return false;
  return true;
}

// ASCII case-insensitive prefix test: istarts_with("Text/Event-Stream; x", "text/event-stream").
constexpr bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

// ASCII lower-case copy.
inline std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = to_lower(c);
  return out;
}

}  // namespace lse::text
