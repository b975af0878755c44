#include "otlp/sender.hpp"

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <stdexcept>

#include <zlib.h>

#include "http/client.hpp"
#include "http/tls_context.hpp"
#include "net/url.hpp"
#include "util/wall_clock.hpp"

namespace lse::otlp {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

// A receiver's answer is read up to this (OTLP responses are small).
constexpr std::size_t kMaxResponseBytes = 64u << 10;

}  // namespace

struct Sender::Impl {
  net::Url url;
  std::string target_path;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds timeout;
  bool gzip;
  http::TlsOptions tls;
  std::shared_ptr<asio::ssl::context> tls_context;

  bhttp::request<bhttp::string_body> request(std::string_view body,
                                             std::string_view content_type) const {
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, target_path, 11};
    req.set(bhttp::field::host, url.authority());
    req.set(bhttp::field::user_agent, "llm-stream-exporter-otlp");
    req.set(bhttp::field::content_type, std::string(content_type));
    for (const auto& [name, value] : headers) req.set(name, value);
    if (gzip) {
      req.set(bhttp::field::content_encoding, "gzip");
      req.body() = gzip_compress(body);
    } else {
      req.body() = std::string(body);
    }
    req.prepare_payload();
    return req;
  }

  template <class Stream>
  asio::awaitable<PostResult> exchange(Stream& stream, bhttp::request<bhttp::string_body>& req) {
    co_await bhttp::async_write(stream, req, asio::use_awaitable);
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    co_await bhttp::async_read(stream, buffer, parser, asio::use_awaitable);
    PostResult result;
    result.status = static_cast<int>(parser.get().result_int());
    result.body = std::move(parser.get().body());
    const auto type = parser.get()[bhttp::field::content_type];
    result.content_type.assign(type.data(), type.size());
    const auto retry = parser.get()[bhttp::field::retry_after];
    if (!retry.empty())
      result.retry_after = http::retry_after_seconds(std::string_view(retry.data(), retry.size()),
                                                     wall_clock::unix_now());
    co_return result;
  }

  asio::awaitable<PostResult> session(bhttp::request<bhttp::string_body> req) {
    auto executor = co_await asio::this_coro::executor;
    tcp::resolver resolver(executor);
    const auto endpoints = co_await resolver.async_resolve(url.host, url.port, asio::use_awaitable);
    if (!url.tls) {
      beast::tcp_stream stream(executor);
      stream.expires_after(timeout);
      co_await stream.async_connect(endpoints, asio::use_awaitable);
      co_return co_await exchange(stream, req);
    }
    beast::ssl_stream<beast::tcp_stream> stream(executor, *tls_context);
    beast::get_lowest_layer(stream).expires_after(timeout);
    http::configure_peer_check(stream.native_handle(), tls, url.host);
    co_await beast::get_lowest_layer(stream).async_connect(endpoints, asio::use_awaitable);
    co_await stream.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
    co_return co_await exchange(stream, req);
  }
};

Sender::Sender(const config::OtlpOptions& options) : impl_(std::make_unique<Impl>()) {
  const auto url = net::parse_url(options.endpoint);
  if (!url) throw std::runtime_error("otlp: the endpoint is not an http(s) URL");
  impl_->url = *url;
  impl_->target_path = url->path.empty() ? "/" : url->path;
  if (!url->query.empty()) impl_->target_path += "?" + url->query;
  impl_->headers = options.headers;
  impl_->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout);
  impl_->gzip = options.gzip;
  impl_->tls.ca_file = options.ca_file;
  if (url->tls) impl_->tls_context = http::shared_tls_context(impl_->tls);
}

Sender::~Sender() = default;

PostResult Sender::post(std::string_view body, std::string_view content_type) {
  asio::io_context io;
  std::optional<PostResult> done;
  std::string error;
  asio::co_spawn(io, impl_->session(impl_->request(body, content_type)),
                 [&](const std::exception_ptr& e, PostResult r) {
                   if (!e) {
                     done = std::move(r);
                     return;
                   }
                   try {
                     std::rethrow_exception(e);
                   } catch (const std::exception& ex) {
                     error = ex.what();
                   }
                 });
  // The stream's deadline bounds connect, write and read; this bounds the
  // name resolution too.
  io.run_for(impl_->timeout + std::chrono::milliseconds(100));
  if (done) return *done;
  PostResult failed;
  failed.error = error.empty() ? "timeout" : error;
  return failed;
}

std::string gzip_compress(std::string_view data) {
  z_stream z{};
  // 15 window bits + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip: deflateInit2 failed");
  std::string out(deflateBound(&z, static_cast<uLong>(data.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("gzip: deflate failed");
  return out;
}

}  // namespace lse::otlp
