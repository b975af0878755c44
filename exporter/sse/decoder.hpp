// Incremental Server-Sent Events decoder (WHATWG HTML "event stream
// interpretation"): bytes in, events out. No I/O, no clocks, no allocation per
// event once the internal buffers have grown to the stream's event size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/framing_decoder.hpp"

namespace lse::sse {

struct Event {
  std::string type;  // "event:" field; empty means "message"
  std::string data;  // data lines joined with '\n' (no trailing '\n')
  std::string id;    // "id:" field (last event id, sticky per stream as WHATWG says)
  std::optional<std::uint64_t> retry;  // "retry:" when present in this event
};

enum class Status { ok, event_too_large };

class Decoder : public FramingDecoder<Decoder, Status> {
 public:
  // max_event_bytes bounds the bytes buffered for one event (data + pending line).
  explicit Decoder(std::size_t max_event_bytes = 1 << 20);

  // feed(bytes, sink) (FramingDecoder) calls sink(const Event&) for every
  // event completed by the bytes, in order; the Event reference is valid only
  // during the call. Once an event exceeds the limit, it returns
  // Status::event_too_large and stays in that state.

  // End of stream: WHATWG discards an unterminated event; we do the same and
  // report whether bytes of an incomplete event were pending (truncation hint).
  // True after Status::event_too_large (the stream stopped inside an event).
  bool has_partial_event() const;

  // Counts comment lines seen (": keep-alive" etc.), for diagnostics.
  std::uint64_t comments() const { return comments_; }
  void reset();

 private:
  friend FramingDecoder<Decoder, Status>;
  // Feeds bytes that are past the BOM check (the scanner proper).
  template <class Sink>
  void scan(std::string_view bytes, Sink& sink);

  // The line ending at `term`: in place, or joined to the pending line_.
  std::string_view take_line(const char* p, const char* term);
  // Steps over the CR, LF or CRLF at `term`; returns where the next line starts.
  const char* skip_terminator(const char* term, const char* end);
  // Keeps an unterminated tail for the next feed, within the limit.
  void keep_tail(std::string_view tail);
  // Processes one complete line (without its terminator). Returns true when it
  // completed an event in event_ that must be handed to the sink.
  bool process_line(std::string_view line);
  // Resets the per-event buffers after a dispatch (keeps their capacity).
  void finish_dispatch();
  // Whether a line of `line_bytes` on top of the buffered data breaks the limit.
  bool over_limit(std::size_t line_bytes) const {
    return line_bytes + event_.data.size() > max_event_bytes_;
  }

  std::size_t max_event_bytes_;
  std::string line_;             // bytes of the current, unterminated line
  bool last_was_cr_ = false;     // a CR ended the previous feed: skip a leading LF
  Event event_;                  // event_.id doubles as the sticky last-id buffer
  bool fields_pending_ = false;  // a field line was seen since the last blank line
  std::uint64_t comments_ = 0;
};

}  // namespace lse::sse

#include "sse/decoder_impl.hpp"
