// What every framing decoder of a response body shares (sse::Decoder,
// ndjson::Decoder): a UTF-8 BOM at the very start of the stream is skipped,
// the other bytes go to the decoder's own scanner, and a broken size limit is
// sticky (the status stays until reset). Pure: no I/O, no clocks.
#pragma once
#include <string_view>

#include "util/leading_bom.hpp"

namespace lse {

// Derived provides `template <class Sink> void scan(std::string_view, Sink&)`
// (it may be private if Derived befriends this class). Status is an enum
// whose `ok` value means "still decoding".
template <class Derived, class Status>
class FramingDecoder {
 public:
  // Feeds bytes; Derived::scan hands what they complete to `sink`. Returns the
  // status after them.
  template <class Sink>
  Status feed(std::string_view bytes, Sink&& sink) {
    bom_.feed(bytes, [&](std::string_view b) { static_cast<Derived&>(*this).scan(b, sink); });
    return status_;
  }
  Status status() const { return status_; }

 protected:
  void reset_framing() {
    bom_.reset();
    status_ = Status::ok;
  }

  LeadingBom bom_;
  Status status_ = Status::ok;
};

}  // namespace lse
