// Incremental Content-Encoding decoding (gzip, deflate, br) of a response
// body. Pure: compressed bytes in, plain bytes out, no I/O.
#pragma once
#include <memory>
#include <string>
#include <string_view>

namespace lse::http {

class ContentDecoder {
 public:
  virtual ~ContentDecoder() = default;
  // Appends the plain bytes decodable from `in` to `out`. Returns false on a
  // corrupt stream (the probe reports `protocol`).
  virtual bool decode(std::string_view in, std::string& out) = 0;
};

// nullptr for identity; throws std::invalid_argument for unknown encodings.
std::unique_ptr<ContentDecoder> make_content_decoder(std::string_view enc);

}  // namespace lse::http
