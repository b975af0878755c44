// One OTLP/HTTP export request: POST the body to the endpoint over http or
// https (system CAs, or otlp.ca_file), optionally gzip-compressed, bounded by
// otlp.timeout as a whole (but for a name resolution that hangs: getaddrinfo
// cannot be interrupted, and the request waits for it). Blocking: it runs on
// the export thread only, with an io_context of its own; never on a probe
// thread. One connection per request (an export is one request per interval).
#pragma once
#include <utility>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace lse::otlp {

struct PostResult {
  int status = 0;                     // 0: no answer (see error)
  std::optional<double> retry_after;  // seconds, from a 429/503's Retry-After
  std::string error;                  // transport failure ("" when answered)
  std::string body;                   // the answer's body (at most 64 KiB)
  std::string content_type;
};

class Sender {
 public:
  // Throws std::runtime_error when the endpoint is no http(s) URL or the CA
  // file cannot be loaded.
  explicit Sender(const config::OtlpOptions& options);
  ~Sender();
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  PostResult post(std::string_view body, std::string_view content_type);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// gzip (RFC 1952) of `data`, for Content-Encoding: gzip.
std::string gzip_compress(std::string_view data);

}  // namespace lse::otlp
