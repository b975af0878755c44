// One HTTP/2 client connection's frames (RFC 9113) with libnghttp2: bytes in
// from the socket reads, frames out to be written, and what they did to the
// one stream in flight (one probe = one stream; a pooled connection carries
// the next probe's stream). Pure: no sockets, no clocks. The HTTP client
// (http/) feeds it each stamped read's bytes, so DATA bytes keep the arrival
// of the read that completed them (DESIGN §2), and writes what output() holds.
//
// Flow control is a browser's: we announce `stream_window` as
// SETTINGS_INITIAL_WINDOW_SIZE and open the connection window to
// `connection_window` (Chromium: 6 MiB and 15 MiB); DATA taken by the caller
// is consumed and WINDOW_UPDATE follows in output(). SETTINGS and PING are
// acknowledged; RST_STREAM and GOAWAY end the stream they concern.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lse::h2 {

inline constexpr std::uint32_t kBrowserStreamWindow = 6u * 1024 * 1024;
inline constexpr std::uint32_t kBrowserConnectionWindow = 15u * 1024 * 1024;
inline constexpr std::uint32_t kMinWindow = 65535;        // RFC 9113 initial value
inline constexpr std::uint32_t kMaxWindow = 0x7fffffffu;  // 2^31 - 1

struct Settings {
  std::uint32_t stream_window = kBrowserStreamWindow;
  std::uint32_t connection_window = kBrowserConnectionWindow;
  std::size_t max_header_bytes = 64 * std::size_t{1024};  // one response's header list
  bool operator==(const Settings&) const = default;
};

struct Field {
  std::string name;  // lower case
  std::string value;
};

struct Request {
  std::string method = "POST";
  std::string scheme;     // "https" or "http"
  std::string authority;  // host[:port], as the Host header would be
  std::string path;       // origin form with the query
  // Beyond the pseudo-headers; names are lower-cased and the fields HTTP/2
  // forbids (connection, keep-alive, proxy-connection, transfer-encoding,
  // upgrade, host, te other than "trailers") are dropped by submit().
  std::vector<Field> fields;
  std::string body;  // submit() adds content-length
};

// The final response head (interim 1xx heads are only counted).
struct Head {
  int status = 0;
  std::vector<Field> fields;  // as received, without pseudo-headers
};

// What broke the current stream, beside a clean END_STREAM.
enum class Break {
  none,
  stream_reset,      // RST_STREAM on the stream (by_peer: the server's; else ours, for a malformed
                     // answer)
  goaway,            // the server's GOAWAY left the stream unprocessed or cut it
  connection_error,  // bad frames, HPACK, flow-control violation, or the session failed
};

struct Trouble {
  Break kind = Break::none;
  bool by_peer = false;          // the server sent it (RST_STREAM, GOAWAY)
  std::uint32_t error_code = 0;  // RFC 9113 §7 code (sent or received)
  std::string detail;  // short, secret-free: "RST_STREAM INTERNAL_ERROR (0x2) from the server"
  // The server said it did not process the request (RFC 9113 §8.7: a GOAWAY
  // whose last_stream_id is below the stream, or RST_STREAM REFUSED_STREAM),
  // so sending it again on a new connection is safe.
  bool unprocessed = false;
};

// "NO_ERROR" .. "HTTP_1_1_REQUIRED"; "0x1f" style for codes RFC 9113 does not name.
std::string error_code_name(std::uint32_t code);

class Session {
 public:
  explicit Session(Settings settings = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Opens the next stream (the previous one must be finished): HEADERS and
  // the body's DATA with END_STREAM (as far as the server's windows allow)
  // go to output(), after the connection preface, SETTINGS and the
  // connection WINDOW_UPDATE on the first one.
  void submit(const Request& request);
  // 1, 3, 5, ...; 0 before the first submit(); -1 when submit() could not
  // open a stream (the connection failed, or no stream ids are left): then
  // trouble() is a connection_error that says why.
  std::int32_t stream_id() const;

  // Bytes to write now; empty when there is nothing. Valid until wrote(),
  // which is told how many of them were written.
  std::string_view output();
  void wrote(std::size_t n);

  // Every byte of the request (END_STREAM included) went through output()
  // and wrote().
  bool request_sent() const;
  // Request body bytes wait for the server's window (flow control).
  bool window_blocked() const;

  // One socket read's bytes, frames processed in order. After a connection
  // error further bytes are ignored.
  void feed(std::string_view bytes);

  // The current stream's final head, or null before it.
  const Head* head() const;
  std::size_t interim() const;  // 1xx heads before it
  // Appends the DATA payload received on the current stream since the last
  // call (content-coded as sent) to `into` and consumes it for flow control.
  void take_data(std::string& into);
  bool has_data() const;
  bool ended() const;  // END_STREAM came (after any trailers)
  const Trouble& trouble() const;

  // Another stream may follow on this connection: no GOAWAY either way, no
  // connection error, stream ids left, the current stream ended cleanly.
  bool reusable() const;
  // Done with the current stream; one still open is reset (RST_STREAM CANCEL
  // goes to output()).
  void finish_stream();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lse::h2
