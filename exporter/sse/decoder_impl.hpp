// Template part of the SSE decoder (sse/decoder.hpp): the byte scanner behind
// Decoder::feed. Lines are found with memchr, and a line that lies wholly in
// the fed bytes is parsed in place; only a line split across feeds is copied
// into line_. Included at the bottom of decoder.hpp; do not include directly.
#pragma once
#include <cstring>
#include <string_view>

namespace lse::sse {

template <class Sink>
Status Decoder::feed(std::string_view bytes, Sink&& sink) {
  // Sticky: after an oversize event the stream is unusable (we stopped
  // buffering part-way), so nothing more is decoded.
  if (status_ != Status::ok || bytes.empty()) return status_;
  if (!bom_checked_) {
    bytes = strip_bom(bytes, sink);
    if (bytes.empty() || status_ != Status::ok) return status_;
  }
  scan(bytes, sink);
  return status_;
}

template <class Sink>
std::string_view Decoder::strip_bom(std::string_view bytes, Sink& sink) {
  static constexpr char kBom[] = "\xEF\xBB\xBF";
  std::size_t i = 0;
  while (bom_matched_ < 3 && i < bytes.size() && bytes[i] == kBom[bom_matched_]) {
    ++bom_matched_;
    ++i;
  }
  if (bom_matched_ == 3) {
    bom_checked_ = true;
    return bytes.substr(i);
  }
  if (i == bytes.size()) return {};  // still a possible BOM: wait for more
  // Not a BOM after all: the bytes matched so far are ordinary stream bytes.
  bom_checked_ = true;
  const std::size_t matched = bom_matched_;
  bom_matched_ = 0;
  if (matched > 0) scan(std::string_view(kBom, matched), sink);
  return bytes.substr(i);
}

template <class Sink>
void Decoder::scan(std::string_view bytes, Sink& sink) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();

  // A CR at the end of the previous feed already ended its line; an LF that
  // starts this feed is the second half of that CRLF, not an empty line.
  if (last_was_cr_) {
    last_was_cr_ = false;
    if (*p == '\n') ++p;
  }

  // Next LF / CR at or after p (end when none). Each is searched for again
  // only once p has passed it, so every byte is scanned at most once per
  // terminator kind even for CR-only or LF-only streams.
  const char* next_lf = p;
  const char* next_cr = p;
  bool lf_known = false;
  bool cr_known = false;

  while (p < end) {
    if (!lf_known || next_lf < p) {
      const void* f = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
      next_lf = f ? static_cast<const char*>(f) : end;
      lf_known = true;
    }
    if (!cr_known || next_cr < p) {
      const void* f = std::memchr(p, '\r', static_cast<std::size_t>(end - p));
      next_cr = f ? static_cast<const char*>(f) : end;
      cr_known = true;
    }
    const char* term = next_lf < next_cr ? next_lf : next_cr;
    const auto piece_len = static_cast<std::size_t>(term - p);

    if (term == end) {
      // Unterminated tail: keep it for the next feed, within the limit.
      if (over_limit(line_.size() + piece_len)) {
        status_ = Status::event_too_large;
        return;
      }
      line_.append(p, piece_len);
      return;
    }

    std::string_view line;
    if (line_.empty()) {
      line = std::string_view(p, piece_len);  // zero-copy: the common case
    } else {
      line_.append(p, piece_len);
      line = line_;
    }
    if (over_limit(line.size())) {
      status_ = Status::event_too_large;
      return;
    }

    p = term + 1;
    if (*term == '\r') {
      if (p < end) {
        if (*p == '\n') ++p;
      } else {
        last_was_cr_ = true;
      }
    }

    const bool dispatch = process_line(line);
    line_.clear();
    if (dispatch) {
      sink(static_cast<const Event&>(event_));
      finish_dispatch();
    }
  }
}

}  // namespace lse::sse
