// Text helpers shared by every module: header names, schemes, codings
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

// Spaces and tabs (HTTP's optional whitespace) off both ends.
constexpr std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of one hex digit, or -1.
constexpr int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoded (a '%' without two hex digits stays as it is); '+' becomes a
// space only when `plus_is_space` (form encoding), else stays '+'.
inline std::string percent_decoded(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += plus_is_space && s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

// Text a peer wrote, made fit for one line of a terminal, a log or a row:
// each control character (C0, DEL, and the C1 range U+0080-U+009F, which
// some terminals also obey) written as a visible escape (\n, \r, \t, \xNN,
// \u00NN), other bytes kept, and at most `max_bytes` of the text kept (cut
// at a UTF-8 character boundary) with " [truncated]" after it.
inline std::string one_line(std::string_view in, std::size_t max_bytes = 512) {
  static constexpr char kHex[] = "0123456789abcdef";
  bool cut = false;
  if (in.size() > max_bytes) {
    std::size_t end = max_bytes;
    while (end > 0 && (static_cast<unsigned char>(in[end]) & 0xC0) == 0x80) --end;
    in = in.substr(0, end);
    cut = true;
  }
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    } else if (c == 0xC2 && i + 1 < in.size() && static_cast<unsigned char>(in[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(in[i + 1]) <= 0x9F) {
      const auto c1 = static_cast<unsigned char>(in[++i]);
      out += {'\\', 'u', '0', '0', kHex[c1 >> 4], kHex[c1 & 15]};
    } else {
      out += static_cast<char>(c);
    }
  }
  if (cut) out += " [truncated]";
  return out;
}

}  // namespace lse::text
