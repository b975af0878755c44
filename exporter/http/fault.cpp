// The client's error category and the two facts about error codes that the
// client and the triage both need (malformed bytes, a lost connection).
#include "http/fault.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http/error.hpp>

namespace lse::http {
namespace {

class Category : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "lse.http"; }
  std::string message(int ev) const override {
    switch (static_cast<Errc>(ev)) {
      case Errc::proxy_refused: return "proxy CONNECT refused";
      case Errc::unsupported_encoding: return "unsupported content-encoding";
      case Errc::corrupt_encoding: return "corrupt compressed body";
      case Errc::decoded_too_large: return "compressed body decodes past the cap";
      case Errc::name_not_resolved: return "name not resolved";
      case Errc::stream_reset: return "HTTP/2 stream reset by the server";
      case Errc::h2_protocol: return "HTTP/2 protocol error";
      case Errc::h2_not_negotiated: return "HTTP/2 not negotiated";
    }
    return "unknown";
  }
};

}  // namespace

const boost::system::error_category& error_category() {
  static const Category category;
  return category;
}

error_code make_error_code(Errc e) { return {static_cast<int>(e), error_category()}; }

bool is_malformed(const error_code& ec) {
  if (ec.category() == error_category())
    return ec != make_error_code(Errc::proxy_refused) &&
           ec != make_error_code(Errc::name_not_resolved) &&
           ec != make_error_code(Errc::stream_reset);
  return ec.category() ==
             boost::beast::http::make_error_code(boost::beast::http::error::end_of_stream)
                 .category() &&
         ec != boost::beast::http::error::end_of_stream;
}

bool is_connection_lost(const Fault& f) {
  if (f.interrupt != Interrupt::none || is_malformed(f.ec)) return false;
  if (f.ec.category() == error_category()) return false;  // our own facts, never a close
  switch (f.stage) {
    case Stage::send: return true;  // a failed write: the peer is gone
    case Stage::headers:
    case Stage::body:
      // A TLS alert or bad record is the TLS layer failing, not a close.
      return f.ec.category() != boost::asio::error::get_ssl_category();
    default: return false;
  }
}

}  // namespace lse::http
