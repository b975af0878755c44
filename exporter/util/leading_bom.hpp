// The UTF-8 byte order mark at the very start of a stream, which both
// framings (SSE, NDJSON) skip. Fed in pieces, so a BOM split across socket
// reads is still recognised; bytes that turn out not to be one are handed
// back to be decoded as ordinary stream bytes.
#pragma once
#include <cstdint>
#include <string_view>

namespace lse {

class LeadingBom {
 public:
  static constexpr std::string_view kBytes{"\xEF\xBB\xBF", 3};

  // Whether the start of the stream has been decided (BOM or not).
  bool checked() const { return checked_; }

  // Bytes held back because they may still be a BOM (0 once checked).
  std::string_view pending() const {
    return checked_ ? std::string_view() : kBytes.substr(0, matched_);
  }

  // Consumes the BOM prefix of `bytes` and returns what follows it. When the
  // held bytes turn out not to be a BOM, `replay` is set to them: the caller
  // decodes `replay` first, then the returned bytes. Returns nothing while
  // every byte so far could still be a BOM.
  std::string_view skip(std::string_view bytes, std::string_view& replay) {
    replay = {};
    std::size_t i = 0;
    while (matched_ < kBytes.size() && i < bytes.size() && bytes[i] == kBytes[matched_]) {
      ++matched_;
      ++i;
    }
    if (matched_ == kBytes.size()) {
      checked_ = true;
      return bytes.substr(i);
    }
    if (i == bytes.size()) return {};  // still a possible BOM: wait for more
    replay = kBytes.substr(0, matched_);
    decide();
    return bytes.substr(i);
  }

  // Hands `bytes` past the stream's leading BOM to `scan(std::string_view)`:
  // first any held bytes that turned out not to be a BOM, then the rest.
  template <class Scan>
  void feed(std::string_view bytes, Scan&& scan) {
    if (!checked_) {
      std::string_view replay;
      bytes = skip(bytes, replay);
      if (!replay.empty()) scan(replay);
    }
    if (!bytes.empty()) scan(bytes);
  }

  // The stream start is decided without a BOM (e.g. the stream ended).
  void decide() {
    checked_ = true;
    matched_ = 0;
  }

  void reset() {
    checked_ = false;
    matched_ = 0;
  }

 private:
  bool checked_ = false;
  std::uint8_t matched_ = 0;  // BOM bytes seen so far while !checked_
};

}  // namespace lse
