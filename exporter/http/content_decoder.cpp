// zlib (gzip/deflate) and brotli stream decoders.
#include "http/content_decoder.hpp"

#include <brotli/decode.h>
#include <zlib.h>

#include <stdexcept>

namespace lse::http {
namespace {

class ZlibDecoder final : public ContentDecoder {
 public:
  explicit ZlibDecoder(bool gzip) {
    if (gzip) init(15 + 16);
  }
  ~ZlibDecoder() override {
    if (initialised_) inflateEnd(&z_);
  }

  Decoded decode(std::string_view in, std::string& out, std::size_t max_out) override {
    if (failed_ != Decoded::ok) return failed_;
    if (!initialised_) {
      // "deflate" is meant to be zlib-wrapped, yet some servers send raw
      // deflate: decide from the 2-byte zlib header once it is complete.
      head_.append(in);
      if (head_.size() < 2) return Decoded::ok;
      const auto b0 = static_cast<unsigned char>(head_[0]),
                 b1 = static_cast<unsigned char>(head_[1]);
      const bool zlib_header = (b0 & 0x0f) == 8 && ((b0 << 8) | b1) % 31 == 0;
      init(zlib_header ? 15 : -15);
      std::string head = std::move(head_);
      return inflate_some(head, out, max_out);
    }
    return inflate_some(in, out, max_out);
  }

 private:
  // Inflates until the input is used up and no output is pending: a full
  // output buffer means zlib may hold more (a few input bytes can stand for
  // megabytes), so the loop goes on even when avail_in is already 0.
  Decoded inflate_some(std::string_view in, std::string& out, std::size_t max_out) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    bool output_full = false;
    while ((z_.avail_in > 0 || output_full) && !ended_) {
      char buf[16384];
      z_.next_out = reinterpret_cast<Bytef*>(buf);
      z_.avail_out = sizeof buf;
      const int rc = inflate(&z_, Z_SYNC_FLUSH);
      const std::size_t produced = sizeof buf - z_.avail_out;
      out.append(buf, produced);
      if (out.size() > max_out) return failed_ = Decoded::too_large;
      output_full = z_.avail_out == 0;
      if (rc == Z_STREAM_END) {
        ended_ = true;
      } else if (rc == Z_BUF_ERROR) {
        break;  // no progress possible: needs more input
      } else if (rc != Z_OK) {
        return failed_ = Decoded::corrupt;
      }
    }
    return Decoded::ok;
  }
  void init(int window_bits) {
    z_ = {};
    if (inflateInit2(&z_, window_bits) != Z_OK) throw std::runtime_error("zlib init failed");
    initialised_ = true;
  }
  z_stream z_{};
  bool initialised_ = false;
  std::string head_;
  bool ended_ = false;
  Decoded failed_ = Decoded::ok;
};

class BrotliDecoder final : public ContentDecoder {
 public:
  BrotliDecoder() : state_(BrotliDecoderCreateInstance(nullptr, nullptr, nullptr)) {
    if (!state_) throw std::runtime_error("brotli init failed");
  }
  ~BrotliDecoder() override { BrotliDecoderDestroyInstance(state_); }

  Decoded decode(std::string_view in, std::string& out, std::size_t max_out) override {
    if (failed_ != Decoded::ok) return failed_;
    const uint8_t* next_in = reinterpret_cast<const uint8_t*>(in.data());
    size_t avail_in = in.size();
    for (;;) {
      uint8_t buf[16384];
      uint8_t* next_out = buf;
      size_t avail_out = sizeof buf;
      auto rc = BrotliDecoderDecompressStream(state_, &avail_in, &next_in, &avail_out, &next_out,
                                              nullptr);
      out.append(reinterpret_cast<char*>(buf), sizeof buf - avail_out);
      if (rc == BROTLI_DECODER_RESULT_ERROR) return failed_ = Decoded::corrupt;
      if (out.size() > max_out) return failed_ = Decoded::too_large;
      // Output the decoder still holds goes out now, not with the next read.
      if (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT || BrotliDecoderHasMoreOutput(state_))
        continue;
      return Decoded::ok;  // needs more input, or finished
    }
  }

 private:
  BrotliDecoderState* state_;
  Decoded failed_ = Decoded::ok;
};

}  // namespace

std::unique_ptr<ContentDecoder> make_content_decoder(std::string_view enc) {
  if (enc.empty() || enc == "identity") return nullptr;
  if (enc == "gzip" || enc == "x-gzip") return std::make_unique<ZlibDecoder>(true);
  if (enc == "deflate") return std::make_unique<ZlibDecoder>(false);
  if (enc == "br") return std::make_unique<BrotliDecoder>();
  throw std::invalid_argument("unsupported content-encoding");
}

}  // namespace lse::http
