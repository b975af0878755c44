// Non-template part of the NDJSON decoder (ndjson/decoder.hpp): the line limit,
// the buffer for a line split across feeds, the end-of-stream line and the
// decoder's lifecycle.
#include "ndjson/decoder.hpp"

namespace lse::ndjson {

Decoder::Decoder(std::size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

bool Decoder::buffer_tail(std::string_view tail) {
  // A CR at the very end may be the first half of a CRLF that the next feed
  // completes; it does not count yet, so the limit does not depend on where
  // the feeds were cut. Written without max_line_bytes_ + 1, which overflows
  // for an "unlimited" SIZE_MAX.
  const std::size_t pending = line_.size() + tail.size();
  const std::size_t content = tail.back() == '\r' ? pending - 1 : pending;
  if (content > max_line_bytes_) {
    status_ = Status::line_too_large;
    return false;
  }
  line_.append(tail);
  return true;
}

bool Decoder::complete_buffered(std::string_view rest) {
  // Checked before appending so the buffer never grows past the limit (+ CR).
  // line_ is not empty here, so full >= 1 and full - 1 cannot wrap.
  const std::size_t full = line_.size() + rest.size();
  if (full - 1 > max_line_bytes_) {
    status_ = Status::line_too_large;
    return false;
  }
  line_.append(rest);
  return true;
}

bool Decoder::accept(std::string_view& line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > max_line_bytes_) {
    status_ = Status::line_too_large;
    return false;
  }
  return true;
}

std::string_view Decoder::final_line() {
  if (!bom_.checked()) {
    // The stream ended inside what could have been a BOM: those bytes were
    // line bytes after all.
    line_.assign(bom_.pending());
    bom_.decide();
  }
  std::string_view line = line_;
  if (!accept(line)) return {};  // only partial BOM bytes can be over here
  return detail::is_blank(line) ? std::string_view() : line;
}

bool Decoder::has_partial_line() const {
  if (status_ != Status::ok) return true;
  if (!bom_.pending().empty()) return true;  // finish() delivers them
  return !detail::is_blank(line_);
}

void Decoder::reset() {
  line_.clear();
  reset_framing();
}

}  // namespace lse::ndjson
