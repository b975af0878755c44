// One probe of one target with one prompt: request → stream → timeline →
// ProbeResult (DESIGN §2). The I/O shell around the pure pieces (SSE decoder,
// API adapter, timeline maths); shared by `serve` and `run`.
#pragma once
#include <utility>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "api/adapter.hpp"
#include "config/config.hpp"
#include "http/client.hpp"
#include "ndjson/decoder.hpp"
#include "probe/result.hpp"
#include "probe/timeline.hpp"
#include "probe/trace.hpp"
#include "sse/decoder.hpp"

namespace lse::probe {

// Content chunks one probe records at most; one more fails it `protocol`.
// The clock keeps an instant per chunk (and the row a gap), so a server that
// streams without end at full speed must not grow them without bound; no
// answer of a probe (max_tokens) comes near it.
inline constexpr std::size_t kMaxContentChunks = std::size_t{1} << 18;

// An error body is read up to this many bytes (enough to find what it
// says about stream_options); the row's `error` keeps its first 512 after
// the status, secrets masked (schedule::clean_upstream_text).
inline constexpr std::size_t kMaxErrorBodyBytes = 65536;
// The response's Content-Type as the row keeps it (`content_type`).
inline constexpr std::size_t kMaxContentTypeBytes = 128;

// "HTTP 500: <body>" (just "HTTP 500" for an empty body), trailing white
// space of the body dropped. Exposed for tests.
std::string error_status_detail(int status, std::string_view body);

// Builds the HTTP request headers a target sends (auth in the dialect's key
// header, Accept for the dialect's framing, Accept-Encoding, browser profile,
// extra headers). Exposed for tests.
std::vector<std::pair<std::string, std::string>> request_headers(const config::Target& target,
                                                                 const std::string& user_agent,
                                                                 api::Framing framing);

// The HTTP client's options for a target: URL, TLS, proxy (proxy_url, or
// the environment when proxy_from_environment), the HTTP version in effect
// (config::effective_http_version) and the HTTP/2 windows. Throws
// std::runtime_error for a bad URL. Exposed for tests.
http::ClientOptions client_options(const config::Target& target);

class Prober {
 public:
  // Throws std::runtime_error for unusable TLS material or URLs.
  Prober(boost::asio::io_context& io, const config::Target& target, std::string host_label,
         std::string user_agent);
  ~Prober();

  boost::asio::awaitable<ProbeResult> run(const config::Prompt& prompt);

  // Aborts the probe in flight; it ends with reason `canceled`.
  void cancel();

  // False once a 400 showed that the server rejects stream_options.
  bool include_usage() const { return include_usage_; }
  // What another prober of the same target learned (`run` shares it).
  void set_include_usage(bool on) { include_usage_ = on; }

  // Records every event of the next probes into `trace` (nullptr: none, the
  // default); it must outlive them. GET /probe?debug=true shows it.
  void set_trace(Trace* trace) { trace_ = trace; }

 private:
  struct Attempt;
  class StreamSink;
  // The steps of one attempt, in clock order. True from attempt() and
  // read_error_body(): try once more (the server rejected stream_options).
  boost::asio::awaitable<bool> attempt(const config::Prompt& prompt, ProbeResult& result,
                                       Timeline& timeline);
  void label(const config::Prompt& prompt, ProbeResult& result) const;
  http::Request build_request(const config::Prompt& prompt) const;
  boost::asio::awaitable<bool> exchange(const http::Request& request, Attempt& a);
  boost::asio::awaitable<bool> start(const http::Request& request, Attempt& a);
  boost::asio::awaitable<bool> read_error_body(Attempt& a);
  boost::asio::awaitable<void> stream(Attempt& a);
  void feed(std::string_view bytes, Attempt& a);
  void end_of_body(Attempt& a);
  void take_line(std::string_view line, Attempt& a);
  void take(const sse::Event& event, Attempt& a);
  boost::asio::awaitable<void> finish_stream(Attempt& a);
  static void conclude(Attempt& a);
  static std::string failure_detail(Attempt& a);

  config::Target target_;
  std::string host_label_;
  std::string user_agent_;
  std::unique_ptr<api::Adapter> adapter_;
  http::Client client_;
  bool include_usage_;
  Trace* trace_ = nullptr;
};

}  // namespace lse::probe
