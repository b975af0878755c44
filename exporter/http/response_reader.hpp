// The bytes of one HTTP/1.1 response in, its final head and its decoded body
// out: Beast's parser plus the client's own rules (RFC 9110/9112), each a
// fault whose error code triage names `protocol` unless said otherwise:
// - Interim responses (1xx except 101) before the final one are skipped, each
//   with its own header fields, and counted, at most kMaxInterimResponses of
//   them. 101 Switching Protocols is a final answer (no stream can follow on
//   this connection): returned as status 101, never kept alive.
// - Framing (RFC 9112 §6): Content-Length together with Transfer-Encoding is
//   refused (a request smuggling sign), as is Transfer-Encoding in an HTTP/1.0
//   response. Transfer codings: `chunked` (last, once) and up to two of gzip,
//   x-gzip, deflate before it, decoded before the content coding; a body with
//   codings but no chunked runs to the close. identity or anything else is
//   refused by name.
// - Obsolete line folding (RFC 9112 §5.2): unfolded to SP by Beast's parser.
// - No cap on a body's size (a stream is as long as the answer; the caller's
//   deadline ends it), but one read's bytes decode to at most
//   max_decoded_bytes_per_read: past it is a compression bomb.
// HTTP/2 (start(h2::Session&)): the same surface over the current stream of
// the connection's session (h2/session.hpp), which feed() hands each read's
// bytes: the head is the stream's final HEADERS (:status, content-type,
// content-encoding, retry-after; http_version "2"), the body its DATA
// payload through the same content decoders and the same cap, its end
// END_STREAM. What broke the stream is the body's (or the headers') fault:
// the server's RST_STREAM or GOAWAY is Errc::stream_reset, ours or a
// connection error Errc::h2_protocol, each with the RFC 9113 code in
// Fault::h2_error. So the client's read paths, and everything above them,
// do not know which protocol brought the bytes.
// Pure: no sockets, no clocks. The client feeds it each socket read's bytes
// and stamps what comes out; the fuzz target drives it the same way.
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/content_decoder.hpp"
#include "http/fault.hpp"

namespace lse::h2 {
class Session;
}

namespace lse::http {

// Interim (1xx) responses skipped before a final one; one more is a fault.
inline constexpr std::size_t kMaxInterimResponses = 32;

struct Response {
  int status = 0;
  std::string content_type;
  std::string content_encoding;
  std::string http_version;  // "1.1", "1.0" or "2"
  std::string retry_after;   // the Retry-After header as sent ("" when absent)
  bool keep_alive = false;
};

struct ResponseLimits {
  std::size_t max_header_bytes = 64 * std::size_t{1024};
  // The most plain bytes one socket read may decode to. A 64 KiB read of an
  // LLM stream decodes to a few MiB at most (gzip ~10:1 on SSE); past this it
  // is a compression bomb (gzip in gzip, brotli reach 10^6:1) and the body
  // fails `protocol` instead of growing memory.
  std::size_t max_decoded_bytes_per_read = 16 * std::size_t{1024} * 1024;
};

class ResponseReader {
 public:
  using Step = std::optional<Fault>;  // nullopt: the step succeeded

  explicit ResponseReader(ResponseLimits limits = {});
  ~ResponseReader();
  ResponseReader(const ResponseReader&) = delete;
  ResponseReader& operator=(const ResponseReader&) = delete;

  // A new exchange: no response yet, nothing buffered.
  void start();
  // A new exchange on the current stream of `session` (HTTP/2), which must
  // outlive it (until clear() or the next start()).
  void start(h2::Session& session);
  bool http2() const { return h2_ != nullptr; }
  // The connection is done with: drops the response and every buffered byte.
  void clear();

  // One socket read's bytes.
  void feed(std::string_view bytes);

  // Parses heads from the bytes fed until the final one (interim ones are
  // counted and skipped). True: the final head is in (response()); false:
  // more bytes are needed; or the headers' fault.
  Result<bool> read_heads();
  std::size_t interim_responses() const { return interim_; }
  // The current head came whole (also a final one that failed its checks).
  bool head_done() const;
  // A bad first chunk right behind a good head: the head stands, the body
  // fails at the first read. Taken once.
  std::optional<Fault> take_body_fault();

  // Parses and decodes the body bytes fed so far into decoded(); a fault
  // keeps what decoded before it.
  Step decode_body();
  // Bytes fed that the parser has not yet seen: decode_body() has work.
  bool has_unparsed() const { return h2_ ? h2_has_news() : !in_.empty() && !in_seen_; }
  bool holds_bytes() const;
  // The server said something of this exchange: bytes (HTTP/1.1), or a head
  // or DATA of our stream (HTTP/2).
  bool answered() const { return h2_ ? h2_answered() : holds_bytes(); }
  // HTTP/2: the server refused our stream before answering it (GOAWAY past
  // it, RST_STREAM REFUSED_STREAM): nothing was processed, another
  // connection may carry it.
  bool refused_unprocessed() const;
  // The peer closed the connection (`fault` says how): the normal end of a
  // close-delimited body, else `fault` stands.
  Step end_of_stream(const Fault& fault);

  // The decoded bytes since the last clear_decoded().
  std::string_view decoded() const { return decoded_; }
  void clear_decoded() { decoded_.clear(); }

  bool in_response() const { return h2_ != nullptr || ex_ != nullptr; }
  const Response* response() const;
  bool body_done() const;
  // The connection may carry another exchange once the body is done.
  bool keep_alive() const;

 private:
  struct Exchange;
  void next_response();
  Result<bool> parse_head();
  Result<Response> final_response();
  Decoded decode(std::string_view coded);
  Step decode_fault(Decoded d) const;
  Step add_content_decoder(const std::string& encoding);
  // The HTTP/2 side (response_reader_h2.cpp).
  Result<bool> h2_read_heads();
  Step h2_decode_body();
  bool h2_has_news() const;
  bool h2_answered() const;
  Fault h2_fault(Stage stage) const;

  ResponseLimits limits_;
  std::unique_ptr<Exchange> ex_;  // the current response's parser state
  std::string in_;                // bytes fed, not yet parsed
  // The parser has seen every byte of in_ and asked for more (a partial
  // chunk-size line or trailer): in_ goes back to it only with new bytes
  // (Beast asserts when handed back a last chunk it already saw).
  bool in_seen_ = false;
  std::size_t interim_ = 0;
  std::optional<Fault> body_fault_;
  std::string decoded_;
  // Transfer codings (outermost first), then the content coding; empty: identity.
  std::vector<std::unique_ptr<ContentDecoder>> decoders_;
  std::array<std::string, 2> staged_;  // between two decoders
  // HTTP/2: the session of the current stream, its response and end.
  h2::Session* h2_ = nullptr;
  std::optional<Response> h2_response_;
  bool h2_body_done_ = false;
  std::string h2_coded_;  // DATA payload before its decoders (kept: no allocation per read)
};

}  // namespace lse::http
