// Incremental Server-Sent Events decoder (WHATWG HTML "event stream
// interpretation"): bytes in, events out. No I/O, no clocks, no allocation per
// event once the internal buffers have grown to the stream's event size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lse::sse {

struct Event {
  std::string type;   // "event:" field; empty means "message"
  std::string data;   // data lines joined with '\n' (no trailing '\n')
  std::string id;     // "id:" field (last event id, sticky per stream as WHATWG says)
  std::optional<std::uint64_t> retry;  // "retry:" when present in this event
};

enum class Status { ok, event_too_large };

class Decoder {
 public:
  // max_event_bytes bounds the bytes buffered for one event (data + pending line).
  explicit Decoder(std::size_t max_event_bytes = 1 << 20);

  // Feeds bytes. Calls sink(const Event&) for every event completed by them, in
  // order; the Event reference is valid only during the call. Once an event
  // exceeds the limit, returns Status::event_too_large and stays in that state.
  template <class Sink>
  Status feed(std::string_view bytes, Sink&& sink);

  // End of stream: WHATWG discards an unterminated event; we do the same and
  // report whether bytes of an incomplete event were pending (truncation hint).
  bool has_partial_event() const;

  // Counts comment lines seen (": keep-alive" etc.), for diagnostics.
  std::uint64_t comments() const { return comments_; }
  Status status() const { return status_; }
  void reset();

 private:
  // Processes one complete line (without its terminator). Returns true when it
  // dispatched an event into event_.
  bool process_line(std::string_view line);
  bool dispatch_ready();

  std::size_t max_event_bytes_;
  std::string line_;        // bytes of the current, unterminated line
  bool last_was_cr_ = false;  // a CR ended the previous line: skip a following LF
  bool bom_checked_ = false;
  std::string bom_pending_;
  Event event_;
  bool data_seen_ = false;  // a data field was seen in the current event
  std::string last_id_;
  std::uint64_t comments_ = 0;
  Status status_ = Status::ok;
};

}  // namespace lse::sse

#include "sse/decoder_impl.hpp"
