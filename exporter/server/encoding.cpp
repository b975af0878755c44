// gzip negotiation and compression with zlib, whole or a piece at a time.
#include "server/encoding.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "util/text.hpp"

namespace lse::server {
namespace {

// q of one coding's parameters ("q=0.5"); 1 when absent or unreadable.
double quality(std::string_view params) {
  while (!params.empty()) {
    auto semi = params.find(';');
    auto param = text::trim_blanks(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
      std::string value(text::trim_blanks(param.substr(2)));
      char* end = nullptr;
      double q = std::strtod(value.c_str(), &end);
      if (end != value.c_str()) return q;
    }
  }
  return 1;
}

}  // namespace

bool accepts_gzip(std::string_view header) {
  std::optional<double> gzip_q, any_q;
  while (!header.empty()) {
    auto comma = header.find(',');
    auto item = text::trim_blanks(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    auto semi = item.find(';');
    auto coding = text::trim_blanks(item.substr(0, semi));
    double q = semi == std::string_view::npos ? 1 : quality(item.substr(semi + 1));
    if (text::iequals(coding, "gzip") || text::iequals(coding, "x-gzip"))
      gzip_q = q;
    else if (coding == "*")
      any_q = q;
  }
  // An explicit "gzip;q=0" wins over "*".
  if (gzip_q) return *gzip_q > 0;
  return any_q && *any_q > 0;
}

std::string gzip(std::string_view data) {
  GzipWriter w;
  w.write(data);
  return w.finish();
}

struct GzipWriter::State {
  z_stream zs{};
};

GzipWriter::GzipWriter() : state_(std::make_unique<State>()) {
  // 15 + 16: largest window, gzip wrapper instead of zlib's.
  // Level 1: a 30 MB exposition compresses 18-fold in 0.1 s where the
  // default level takes three times the CPU for 23-fold; the CPU is shared
  // with the probes, the bytes mostly cross loopback or a pod network.
  if (deflateInit2(&state_->zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    state_.reset();
    throw std::runtime_error("zlib: deflateInit2 failed");
  }
}

GzipWriter::~GzipWriter() {
  if (state_) deflateEnd(&state_->zs);
}

void GzipWriter::deflate_all(std::string_view piece, int flush) {
  if (!state_) throw std::runtime_error("zlib: the gzip stream is already finished");
  z_stream& zs = state_->zs;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(piece.data()));
  zs.avail_in = static_cast<uInt>(piece.size());
  for (;;) {
    // out_ is sized to its room (zero-filled once, when it grows); used_
    // bytes of it are the stream so far.
    if (out_.size() - used_ < 4096) out_.resize(out_.size() * 2 + 65536);
    zs.next_out = reinterpret_cast<Bytef*>(out_.data() + used_);
    zs.avail_out = static_cast<uInt>(std::min<std::size_t>(out_.size() - used_, 1U << 30));
    const uInt room = zs.avail_out;
    const int rc = deflate(&zs, flush);
    used_ += room - zs.avail_out;
    if (rc == Z_STREAM_END) return;
    if (rc != Z_OK && rc != Z_BUF_ERROR) throw std::runtime_error("zlib: deflate failed");
    // Done when zlib took all input and, for Z_NO_FLUSH, left room unused.
    if (flush == Z_NO_FLUSH && zs.avail_in == 0 && zs.avail_out > 0) return;
  }
}

void GzipWriter::write(std::string_view piece) {
  // uInt is 32 bits: hand zlib at most 1 GiB at a time.
  constexpr std::size_t kStep = std::size_t{1} << 30;
  while (!piece.empty()) {
    const std::string_view step = piece.substr(0, kStep);
    deflate_all(step, Z_NO_FLUSH);
    bytes_in_ += step.size();
    piece.remove_prefix(step.size());
  }
}

std::string GzipWriter::finish() {
  deflate_all({}, Z_FINISH);
  deflateEnd(&state_->zs);
  state_.reset();
  out_.resize(used_);
  out_.shrink_to_fit();
  return std::move(out_);
}

}  // namespace lse::server
