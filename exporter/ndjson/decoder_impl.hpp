// Template part of the NDJSON decoder (ndjson/decoder.hpp): the byte scanner
// behind feed (FramingDecoder) and Decoder::finish. Line ends are found with memchr,
// and a line that lies wholly in the fed bytes is handed out in place; only a
// line split across feeds is copied into line_. Included at the bottom of
// decoder.hpp; do not include directly.
#pragma once
#include <cstring>
#include <string_view>

namespace lse::ndjson {

namespace detail {

// JSON whitespace other than LF (which never reaches here). A line of only
// these carries no JSON value; the first byte of a real line ('{') ends the
// loop at once, so this costs one compare per line in practice.
inline bool is_blank(std::string_view line) {
  for (char c : line) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

}  // namespace detail

template <class Sink>
void Decoder::finish(Sink&& sink) {
  if (status_ != Status::ok) return;
  const std::string_view line = final_line();
  if (!line.empty()) sink(line);
  line_.clear();
}

template <class Sink>
void Decoder::scan(std::string_view bytes, Sink& sink) {
  // Sticky: after an oversize line we stopped buffering part-way, so the
  // framing of whatever follows is unknown and nothing more is decoded.
  if (status_ != Status::ok) return;
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  while (p < end) {
    const auto left = static_cast<std::size_t>(end - p);
    const void* found = std::memchr(p, '\n', left);
    if (found == nullptr) {
      buffer_tail(std::string_view(p, left));  // sets status_ when too large
      return;
    }
    const char* const lf = static_cast<const char*>(found);
    const std::string_view piece(p, static_cast<std::size_t>(lf - p));
    p = lf + 1;

    std::string_view line = piece;  // zero-copy: the common case
    if (!line_.empty()) {
      if (!complete_buffered(piece)) return;
      line = line_;
    }
    if (!accept(line)) return;
    if (!detail::is_blank(line)) sink(line);
    line_.clear();  // keeps capacity: a warm decoder does not allocate
  }
}

}  // namespace lse::ndjson
