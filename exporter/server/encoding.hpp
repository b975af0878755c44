// Response compression for scrapes: Prometheus asks for gzip, and /metrics of
// a few dozen targets compresses about tenfold.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace lse::server {

// Whether an Accept-Encoding header value allows gzip ("gzip", "x-gzip" or
// "*" with a non-zero q).
bool accepts_gzip(std::string_view header);

// gzip (RFC 1952) of `data`; throws std::runtime_error if zlib fails.
std::string gzip(std::string_view data);

// gzip written a piece at a time: only the compressed bytes are kept, so a
// large exposition is never held whole (a tenth of it is). Throws
// std::runtime_error if zlib fails.
class GzipWriter {
 public:
  GzipWriter();
  ~GzipWriter();
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;

  void write(std::string_view piece);
  // The whole gzip member; the writer is spent afterwards.
  std::string finish();
  // Uncompressed bytes written so far.
  std::size_t bytes_in() const { return bytes_in_; }

 private:
  void deflate_all(std::string_view piece, int flush);

  struct State;
  std::unique_ptr<State> state_;
  std::string out_;
  std::size_t used_ = 0;
  std::size_t bytes_in_ = 0;
};

}  // namespace lse::server
