// Non-template part of the SSE decoder (sse/decoder.hpp): interpretation of
// one complete line per the WHATWG "event stream interpretation" rules, and
// the per-event buffer lifecycle.
#include "sse/decoder.hpp"

#include <limits>

namespace lse::sse {

namespace {

// "retry" takes ASCII digits only; anything else (or an overflowing value)
// means the field is ignored, as WHATWG says for non-digit values.
std::optional<std::uint64_t> parse_retry(std::string_view value) {
  if (value.empty()) return std::nullopt;
  std::uint64_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (n > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    n = n * 10 + digit;
  }
  return n;
}

}  // namespace

Decoder::Decoder(std::size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

bool Decoder::process_line(std::string_view line) {
  if (line.empty()) {
    // Blank line: dispatch. WHATWG drops an event whose data buffer is empty
    // (no data field at all) but still resets the type.
    fields_pending_ = false;
    if (!event_.data.empty()) {
      event_.data.pop_back();  // the '\n' appended after the last data line
      return true;
    }
    event_.type.clear();
    event_.retry.reset();
    return false;
  }
  if (line.front() == ':') {
    ++comments_;
    return false;
  }

  std::string_view field = line;
  std::string_view value;
  if (const auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  fields_pending_ = true;

  if (field == "data") {
    event_.data.append(value);
    event_.data.push_back('\n');
  } else if (field == "event") {
    event_.type.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) event_.id.assign(value);
  } else if (field == "retry") {
    if (auto r = parse_retry(value)) event_.retry = r;
  }
  // Any other field name is ignored (WHATWG).
  return false;
}

void Decoder::finish_dispatch() {
  // clear() keeps capacity, so a warm decoder does not allocate per event.
  // The id is deliberately kept: the last event id is sticky per stream.
  event_.data.clear();
  event_.type.clear();
  event_.retry.reset();
}

void Decoder::keep_tail(std::string_view tail) {
  if (over_limit(line_.size() + tail.size())) {
    status_ = Status::event_too_large;
    return;
  }
  line_.append(tail);
}

bool Decoder::has_partial_event() const {
  // After an oversize event the stream ended inside that event, whatever was
  // buffered when we stopped.
  if (status_ != Status::ok) return true;
  return !line_.empty() || fields_pending_ || !bom_.pending().empty();
}

void Decoder::reset() {
  line_.clear();
  last_was_cr_ = false;
  event_.type.clear();
  event_.data.clear();
  event_.id.clear();
  event_.retry.reset();
  fields_pending_ = false;
  comments_ = 0;
  reset_framing();
}

}  // namespace lse::sse
