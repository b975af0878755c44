// Incremental NDJSON (newline-delimited JSON, as Ollama streams it) framing
// decoder: bytes in, lines out. It only frames; each line is handed on as
// bytes for a dialect to parse. No I/O, no clocks, and no allocation per line
// once the buffer for a line split across feeds has grown to the stream's line
// size. The SSE decoder (sse/decoder.hpp) is its sibling for SSE dialects.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/framing_decoder.hpp"

namespace lse::ndjson {

enum class Status { ok, line_too_large };

class Decoder : public FramingDecoder<Decoder, Status> {
 public:
  // max_line_bytes bounds one line, terminator (LF or CRLF) not counted. It is
  // also all the decoder ever buffers (plus one byte for a CR that may be the
  // first half of a CRLF), so a server that never sends LF cannot grow us.
  explicit Decoder(std::size_t max_line_bytes = 1 << 20);

  // feed(bytes, sink) (FramingDecoder) calls sink(std::string_view line) for every complete line
  // they finish, in order, with the terminator stripped; the view is valid only during the call.
  // Lines end at LF; a CR right before the LF is stripped. A lone CR is NOT a line end (unlike
  // SSE): NDJSON ends records with LF only, and inside a JSON text a raw CR can only be whitespace,
  // so it stays in the line. Blank lines (empty or only space/tab/CR) are skipped: JSON Lines
  // readers ignore them and they carry no event. A UTF-8 BOM at the very start
  // of the stream is skipped. Once a line exceeds the limit, returns
  // Status::line_too_large and stays in that state (the line was cut, so what
  // follows cannot be trusted); later feeds deliver nothing.

  // End of stream. Ollama terminates every line, but other servers may not
  // terminate the last one, so this delivers a pending unterminated non-blank
  // line (a trailing CR stripped, as the missing LF would have done). Whether
  // such a line means truncation is the caller's decision: ask
  // has_partial_line() before calling this. Delivers nothing after
  // line_too_large. Call reset() before decoding another stream.
  template <class Sink>
  void finish(Sink&& sink);

  // True when bytes of an unterminated, non-blank line are pending (what
  // finish() would deliver), or after Status::line_too_large (the stream
  // stopped inside a line).
  bool has_partial_line() const;

  // Back to the start of a new stream (buffer capacity is kept).
  void reset();

 private:
  friend FramingDecoder<Decoder, Status>;
  // Feeds bytes that are past the BOM check (the scanner proper).
  template <class Sink>
  void scan(std::string_view bytes, Sink& sink);

  // Keeps the unterminated tail of a feed in line_; false (and status_ set)
  // when that would break the limit.
  bool buffer_tail(std::string_view tail);
  // Completes the buffered line with `rest` (the bytes before its LF). Returns
  // false (and sets status_) when the line breaks the limit; on success the
  // line is in line_, its CR not yet stripped.
  bool complete_buffered(std::string_view rest);
  // Strips the CR of a CRLF and applies the limit; false (and status_ set)
  // when the line is too large.
  bool accept(std::string_view& line);
  // The pending line as finish() would deliver it (empty when blank). Turns
  // partial BOM bytes into line bytes first: at end of stream they are not a
  // BOM.
  std::string_view final_line();

  std::size_t max_line_bytes_;
  std::string line_;  // bytes of the current line when it spans feeds
};

}  // namespace lse::ndjson

#include "ndjson/decoder_impl.hpp"
