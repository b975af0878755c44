// What went wrong in one HTTP exchange, as facts: the stage the client was
// in, whether a deadline or cancel() interrupted it, and the error code of the
// operation. The client records these facts and never names the probe's
// outcome; probe/triage.hpp turns them into a FailureReason (DESIGN §3).
#pragma once
#include <utility>
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace lse::http {

using boost::system::error_code;

// Where in the life of one exchange the client was (DESIGN §2 phases).
enum class Stage {
  resolve,        // DNS of the target (or of the proxy)
  connect,        // TCP connect to the target (or to the proxy)
  proxy_connect,  // HTTP CONNECT through the proxy
  tls,            // TLS handshake
  send,           // writing the request
  headers,        // reading the response headers
  body,           // reading the response body
};

// What stopped an operation from outside.
enum class Interrupt { none, deadline, canceled };

struct Fault {
  Stage stage = Stage::connect;
  Interrupt interrupt = Interrupt::none;
  error_code ec;       // the operation's own error; may be empty when interrupted
  std::string detail;  // short, secret-free
  // The RFC 9113 §7 error code of an HTTP/2 fault (stream_reset: the
  // server's; h2_protocol: ours); empty otherwise.
  std::optional<std::uint32_t> h2_error{};
};

// The client's own error codes, for faults no Boost or OpenSSL code names.
enum class Errc {
  proxy_refused = 1,     // CONNECT answered with something other than 200
  unsupported_encoding,  // Content-Encoding we cannot decode
  corrupt_encoding,      // compressed body that does not decode
  decoded_too_large,     // one read decodes to more than the cap (a compression bomb)
  name_not_resolved,     // the lookup of the host (or proxy) failed: the fault's detail says why
  // HTTP/2: the server's RST_STREAM on our stream, or its GOAWAY that left or
  // cut it (Fault::h2_error: its code). Not malformed bytes, not a close.
  stream_reset,
  // HTTP/2: a connection error, or a stream we reset for a malformed answer
  // (Fault::h2_error: the code we sent). Malformed.
  h2_protocol,
  // http_version "2" but the server did not pick h2 by ALPN (Stage::tls), or
  // h2 asked of an http:// target through an HTTP proxy. Malformed (the
  // answer is not the protocol asked for).
  h2_not_negotiated,
};
const boost::system::error_category& error_category();
error_code make_error_code(Errc e);

// The peer sent bytes that break HTTP/1.1, HTTP/2 or its content coding
// (Beast parser errors, our decoding errors, h2_protocol), or did not speak
// the protocol asked for (h2_not_negotiated).
bool is_malformed(const error_code& ec);

// The peer closed or broke the connection, with no bytes at fault: end of
// stream, reset, a TLS close without close_notify, a failed write. A
// close-delimited body ends this way, and a stale pooled connection shows it.
// None of the client's own codes is one (an HTTP/2 stream_reset is a frame,
// not a close).
bool is_connection_lost(const Fault& fault);

// A value or the fault that prevented it.
template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Fault fault) : v_(std::move(fault)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Fault& fault() const { return std::get<1>(v_); }

 private:
  std::variant<T, Fault> v_;
};

}  // namespace lse::http

namespace boost::system {
template <>
struct is_error_code_enum<lse::http::Errc> : std::true_type {};
}  // namespace boost::system
