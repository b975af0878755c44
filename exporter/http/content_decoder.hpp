// Incremental Content-Encoding decoding (gzip, deflate, br) of a response
// body. Pure: compressed bytes in, plain bytes out, no I/O.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace lse::http {

// What one decode() call came to.
enum class Decoded {
  ok,         // every decodable byte of `in` is in `out`
  corrupt,    // the stream does not decode (the probe reports `protocol`)
  too_large,  // `out` would pass its cap: a compression bomb; the stream stops here
};

class ContentDecoder {
 public:
  virtual ~ContentDecoder() = default;
  // Appends the plain bytes decodable from `in` to `out`, letting `out` grow
  // to at most `max_out` bytes (a few KiB past it at most: the decoders work
  // in 16 KiB pieces). After corrupt or too_large every call fails the same.
  virtual Decoded decode(std::string_view in, std::string& out, std::size_t max_out) = 0;
};

// nullptr for identity; throws std::invalid_argument for unknown encodings.
std::unique_ptr<ContentDecoder> make_content_decoder(std::string_view enc);

}  // namespace lse::http
