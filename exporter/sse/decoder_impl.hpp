// Template part of the SSE decoder (sse/decoder.hpp): the byte scanner behind
// feed (FramingDecoder). Lines are found with memchr, and a line that lies wholly in
// the fed bytes is parsed in place; only a line split across feeds is copied
// into line_. Included at the bottom of decoder.hpp; do not include directly.
#pragma once
#include <cstring>
#include <string_view>

namespace lse::sse {

namespace detail {

// The next LF / CR at or after a position of one fed buffer (end when none).
// Each is searched for again only once the position has passed it, so every
// byte is scanned at most once per terminator kind even for CR-only or
// LF-only streams.
class TerminatorFinder {
 public:
  explicit TerminatorFinder(const char* end) : end_(end) {}

  const char* next(const char* p) {
    if (!lf_known_ || next_lf_ < p) {
      next_lf_ = find(p, '\n');
      lf_known_ = true;
    }
    if (!cr_known_ || next_cr_ < p) {
      next_cr_ = find(p, '\r');
      cr_known_ = true;
    }
    return next_lf_ < next_cr_ ? next_lf_ : next_cr_;
  }

 private:
  const char* find(const char* p, char c) const {
    const void* f = std::memchr(p, c, static_cast<std::size_t>(end_ - p));
    return f ? static_cast<const char*>(f) : end_;
  }

  const char* const end_;
  const char* next_lf_ = nullptr;
  const char* next_cr_ = nullptr;
  bool lf_known_ = false;
  bool cr_known_ = false;
};

}  // namespace detail

inline std::string_view Decoder::take_line(const char* p, const char* term) {
  const auto piece_len = static_cast<std::size_t>(term - p);
  if (line_.empty()) return std::string_view(p, piece_len);  // zero-copy: the common case
  line_.append(p, piece_len);
  return line_;
}

inline const char* Decoder::skip_terminator(const char* term, const char* end) {
  const char* p = term + 1;
  if (*term == '\r') {
    if (p < end) {
      if (*p == '\n') ++p;
    } else {
      last_was_cr_ = true;  // the LF, if any, comes with the next feed
    }
  }
  return p;
}

template <class Sink>
void Decoder::scan(std::string_view bytes, Sink& sink) {
  // Sticky: after an oversize event the stream is unusable (we stopped
  // buffering part-way), so nothing more is decoded.
  if (status_ != Status::ok) return;
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  // A CR at the end of the previous feed already ended its line; an LF that
  // starts this feed is the second half of that CRLF, not an empty line.
  if (last_was_cr_) {
    last_was_cr_ = false;
    if (*p == '\n') ++p;
  }
  detail::TerminatorFinder terminators(end);
  while (p < end) {
    const char* term = terminators.next(p);
    if (term == end) return keep_tail(std::string_view(p, static_cast<std::size_t>(end - p)));
    const std::string_view line = take_line(p, term);
    if (over_limit(line.size())) {
      status_ = Status::event_too_large;
      return;
    }
    p = skip_terminator(term, end);
    const bool dispatch = process_line(line);
    line_.clear();
    if (dispatch) {
      sink(static_cast<const Event&>(event_));
      finish_dispatch();
    }
  }
}

}  // namespace lse::sse
