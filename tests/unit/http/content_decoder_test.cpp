// Incremental gzip/deflate/brotli decoding, fed in pieces of every size.
#include "http/content_decoder.hpp"

#include <brotli/encode.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <sstream>
#include <string>

using lse::http::Decoded;
using lse::http::make_content_decoder;
constexpr std::size_t kNoCap = static_cast<std::size_t>(-1);

namespace {

std::string sample() {
  std::string s;
  for (int i = 0; i < 200; ++i)
    s += "data: {\"choices\":[{\"delta\":{\"content\":\"word" + std::to_string(i) + "\"}}]}\n\n";
  return s;
}

// Compresses `in` whole; Z_SYNC_FLUSH instead of Z_FINISH leaves the stream
// unfinished (no end block, no trailer), as a stream cut mid-way is.
std::string zlib_compress(const std::string& in, int window_bits, int level = 6,
                          int strategy = Z_DEFAULT_STRATEGY, int flush = Z_FINISH) {
  z_stream z{};
  deflateInit2(&z, level, Z_DEFLATED, window_bits, 8, strategy);
  std::string out(deflateBound(&z, in.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = in.size();
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = out.size();
  EXPECT_EQ(deflate(&z, flush), flush == Z_FINISH ? Z_STREAM_END : Z_OK);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// What `coded` decodes to, fed in pieces of `piece` bytes.
std::size_t decoded_size(const char* encoding, std::string_view coded, std::size_t piece) {
  auto dec = make_content_decoder(encoding);
  std::string out;
  for (std::size_t i = 0; i < coded.size(); i += piece)
    EXPECT_EQ(dec->decode(coded.substr(i, piece), out, kNoCap), Decoded::ok);
  return out.size();
}

std::string brotli_compress(const std::string& in) {
  std::size_t size = BrotliEncoderMaxCompressedSize(in.size());
  std::string out(size, '\0');
  EXPECT_TRUE(BrotliEncoderCompress(5, 22, BROTLI_MODE_TEXT, in.size(),
                                    reinterpret_cast<const uint8_t*>(in.data()), &size,
                                    reinterpret_cast<uint8_t*>(out.data())));
  out.resize(size);
  return out;
}

void expect_roundtrip(const char* encoding, const std::string& compressed,
                      const std::string& plain) {
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, compressed.size()}) {
    auto dec = make_content_decoder(encoding);
    ASSERT_TRUE(dec);
    std::string out;
    for (std::size_t i = 0; i < compressed.size(); i += piece)
      ASSERT_EQ(dec->decode(std::string_view(compressed).substr(i, piece), out, kNoCap),
                Decoded::ok);
    EXPECT_EQ(out, plain) << encoding << " piece " << piece;
  }
}

}  // namespace

TEST(ContentDecoder, Gzip) { expect_roundtrip("gzip", zlib_compress(sample(), 15 + 16), sample()); }
TEST(ContentDecoder, DeflateZlibWrapped) {
  expect_roundtrip("deflate", zlib_compress(sample(), 15), sample());
}
TEST(ContentDecoder, DeflateRaw) {
  expect_roundtrip("deflate", zlib_compress(sample(), -15), sample());
}
TEST(ContentDecoder, Brotli) { expect_roundtrip("br", brotli_compress(sample()), sample()); }

TEST(ContentDecoder, IdentityIsNoDecoder) {
  EXPECT_EQ(make_content_decoder(""), nullptr);
  EXPECT_EQ(make_content_decoder("identity"), nullptr);
  EXPECT_THROW(make_content_decoder("zstd"), std::invalid_argument);
}

TEST(ContentDecoder, CorruptGzipIsAnError) {
  auto dec = make_content_decoder("gzip");
  std::string out;
  std::string junk(100, 'x');
  EXPECT_EQ(dec->decode(junk, out, kNoCap), Decoded::corrupt);
  EXPECT_EQ(dec->decode(junk, out, kNoCap), Decoded::corrupt) << "stays failed";
}

TEST(ContentDecoder, PartialInputProducesWhatIsDecodable) {
  // A sync-flushed gzip stream: every flushed part decodes on its own.
  const std::string a = "data: first\n\n", b = "data: second\n\n";
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  auto flush_part = [&](const std::string& in) {
    std::string out(256, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = in.size();
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = out.size();
    deflate(&z, Z_SYNC_FLUSH);
    out.resize(out.size() - z.avail_out);
    return out;
  };
  const std::string pa = flush_part(a), pb = flush_part(b);
  deflateEnd(&z);
  auto dec = make_content_decoder("gzip");
  std::string out;
  ASSERT_EQ(dec->decode(pa, out, kNoCap), Decoded::ok);
  EXPECT_EQ(out, a);
  ASSERT_EQ(dec->decode(pb, out, kNoCap), Decoded::ok);
  EXPECT_EQ(out, a + b);
}

// A few input bytes can stand for kilobytes: the decoder must drain what
// zlib still holds once the input is used up. The one-hour fuzz run found a
// gzip body of 8 KiB that decoded to 741 bytes less in one read than a byte at
// a time (tests/fuzz/corpus/http_response_fuzz/finding-gzip-pending-output).
// Here: 1 MiB of zeros as run-length matches (258 bytes per 2-bit code),
// sync-flushed, cut at each of its last 64 bytes (a stream that stops right
// after some matches): one piece decodes to exactly what 1-byte pieces do.
// Before the fix, cuts 21, 37 and 53 lost output in one piece.
TEST(ContentDecoder, OutputPendingAfterTheLastInputByteIsNotLost) {
  const std::string plain(1u << 20, '\0');
  const std::string flushed = zlib_compress(plain, 15 + 16, 9, Z_RLE, Z_SYNC_FLUSH);
  expect_roundtrip("gzip", flushed, plain);
  for (std::size_t cut = 1; cut <= 64; ++cut) {
    const std::string_view part = std::string_view(flushed).substr(0, flushed.size() - cut);
    EXPECT_EQ(decoded_size("gzip", part, part.size()), decoded_size("gzip", part, 1))
        << "cut " << cut;
  }
}

// The same for brotli: a 211-byte stream from the one-hour fuzz run
// (tests/fuzz/corpus/http_response_fuzz/finding-brotli-pending-output)
// decoded to 16,777,216 bytes in one piece and 16,777,409 in 1-byte pieces:
// the decoder still held output when it asked for more input.
TEST(ContentDecoder, BrotliOutputHeldByTheDecoderIsNotLost) {
  std::ifstream f(LSE_TEST_DATA "/../fuzz/corpus/http_response_fuzz/finding-brotli-pending-output",
                  std::ios::binary);
  ASSERT_TRUE(f) << "the finding's file";
  std::stringstream all;
  all << f.rdbuf();
  const std::string wire = all.str();
  const std::string head_end = "Content-Length: 211\r\n\r\n";
  const std::size_t at = wire.find(head_end);
  ASSERT_NE(at, std::string::npos);
  const std::string body = wire.substr(at + head_end.size(), 211);
  EXPECT_EQ(decoded_size("br", body, body.size()), decoded_size("br", body, 1));
  EXPECT_EQ(decoded_size("br", body, body.size()), 16'777'409u);
}

// A compression bomb stops at the cap, a few 16 KiB pieces past it at most,
// instead of decoding the whole of it into memory: 64 MiB of zeros (gzip
// ~1000:1, brotli far more) with a 1 MiB cap.
TEST(ContentDecoder, ABombStopsAtTheCapAndStaysStopped) {
  const std::string plain(64u << 20, '\0');
  const std::size_t cap = 1u << 20;
  for (const char* encoding : {"gzip", "br"}) {
    const std::string bomb =
        std::string(encoding) == "gzip" ? zlib_compress(plain, 15 + 16) : brotli_compress(plain);
    ASSERT_LT(bomb.size(), 128u << 10) << encoding;
    auto dec = make_content_decoder(encoding);
    std::string out;
    EXPECT_EQ(dec->decode(bomb, out, cap), Decoded::too_large) << encoding;
    EXPECT_GT(out.size(), cap) << encoding;
    EXPECT_LE(out.size(), cap + 64 * 1024) << encoding;
    EXPECT_EQ(dec->decode("x", out, cap), Decoded::too_large) << encoding << ": stays stopped";
  }
}

// Under the cap the same stream decodes whole: the cap counts what `out`
// already holds, so a caller can cap one read's output across calls.
TEST(ContentDecoder, TheCapCountsWhatOutAlreadyHolds) {
  const std::string plain(256u << 10, 'a');
  const std::string gz = zlib_compress(plain, 15 + 16);
  auto dec = make_content_decoder("gzip");
  std::string out(100u << 10, 'x');
  EXPECT_EQ(dec->decode(gz, out, 300u << 10), Decoded::too_large);
  auto again = make_content_decoder("gzip");
  std::string fresh;
  EXPECT_EQ(again->decode(gz, fresh, 300u << 10), Decoded::ok);
  EXPECT_EQ(fresh, plain);
}
