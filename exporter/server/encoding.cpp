// gzip negotiation and one-shot compression with zlib.
#include "server/encoding.hpp"

#include <zlib.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "util/text.hpp"

namespace lse::server {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// q of one coding's parameters ("q=0.5"); 1 when absent or unreadable.
double quality(std::string_view params) {
  while (!params.empty()) {
    auto semi = params.find(';');
    auto param = trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
      std::string value(trim(param.substr(2)));
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
    auto item = trim(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    auto semi = item.find(';');
    auto coding = trim(item.substr(0, semi));
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
  z_stream zs{};
  // 15 + 16: largest window, gzip wrapper instead of zlib's.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: deflateInit2 failed");
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(data.size())));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  // deflateBound guarantees one Z_FINISH call completes.
  const int rc = deflate(&zs, Z_FINISH);
  const auto written = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib: deflate failed");
  out.resize(written);
  return out;
}

}  // namespace lse::server
