// Streaming HTTP/1.1 client: connection phases, deadlines, pooled keep-alive
// connection, Beast's parser fed incrementally from our own socket reads so
// that every byte keeps the instant of the read that delivered it.
#include "http/client.hpp"

#include "http/timestamping_socket.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <map>
#include <mutex>
#include <stdexcept>

#include <sys/stat.h>

namespace lse::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;

namespace {

constexpr std::size_t kReadChunk = 64 * 1024;

bool is_ip_literal(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

std::string ssl_error_detail(const error_code& ec, SSL* ssl) {
  if (ssl) {
    const long vr = SSL_get_verify_result(ssl);
    if (vr != X509_V_OK)
      return std::string("certificate verify failed: ") + X509_verify_cert_error_string(vr);
  }
  return ec.message();
}

}  // namespace

struct Client::Conn {
  explicit Conn(asio::io_context& io) : socket(io), reader(socket) {}
  tcp::socket socket;         // the connection (timeouts cancel/close it)
  TimestampingSocket reader;  // reads with kernel receive stamps; plain, or the layer under tls
  std::unique_ptr<ssl::stream<TimestampingSocket&>> tls;  // set for https targets
  std::size_t exchanges = 0;
};

struct Client::Exchange {
  bhttp::response_parser<bhttp::buffer_body> parser;
  bool body_done = false;
};

namespace {

// A file's identity for the context cache: a rotated CA or certificate (new
// mtime or size) gets a fresh context.
std::string file_stamp(const std::string& path) {
  if (path.empty()) return {};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path + "@missing";
  return path + "@" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) +
         ":" + std::to_string(st.st_size);
}

std::shared_ptr<ssl::context> build_tls_context(const TlsOptions& tls) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  error_code ec;
  if (!tls.ca_file.empty()) {
    ctx->load_verify_file(tls.ca_file, ec);
    if (ec) throw std::runtime_error("cannot load ca_file " + tls.ca_file + ": " + ec.message());
  } else {
    ctx->set_default_verify_paths(ec);
  }
  if (!tls.cert_file.empty()) {
    ctx->use_certificate_chain_file(tls.cert_file, ec);
    if (!ec) ctx->use_private_key_file(tls.key_file, ssl::context::pem, ec);
    if (ec) throw std::runtime_error("cannot load client certificate: " + ec.message());
  }
  ctx->set_verify_mode(tls.insecure_skip_verify ? ssl::verify_none : ssl::verify_peer);
  // An idle pooled TLS connection need not keep its 34 KiB read/write buffers.
  SSL_CTX_set_mode(ctx->native_handle(), SSL_MODE_RELEASE_BUFFERS);
  return ctx;
}

// Targets with the same TLS material share one SSL_CTX (its parsed CA store is
// most of a TLS target's memory). Hostname checks are per connection, so
// sharing is safe; OpenSSL contexts are thread-safe once configured.
std::shared_ptr<ssl::context> shared_tls_context(const TlsOptions& tls) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<ssl::context>> cache;
  const std::string key = file_stamp(tls.ca_file) + "|" + file_stamp(tls.cert_file) + "|" +
                          file_stamp(tls.key_file) + "|" + (tls.insecure_skip_verify ? "1" : "0");
  std::lock_guard lock(mu);
  for (auto it = cache.begin(); it != cache.end();)
    it = it->second.expired() ? cache.erase(it) : ++it;
  if (auto found = cache.find(key); found != cache.end())
    if (auto ctx = found->second.lock()) return ctx;
  auto ctx = build_tls_context(tls);
  cache[key] = ctx;
  return ctx;
}

}  // namespace

Client::Client(asio::io_context& io, ClientOptions options)
    : io_(io), options_(std::move(options)), timer_(io) {
  if (options_.url.tls) ssl_ = shared_tls_context(options_.tls);
}

Client::~Client() = default;

void Client::arm(TimePoint deadline, std::function<void()> on_expiry) {
  timed_out_ = false;
  abort_ = std::move(on_expiry);
  const auto generation = ++timer_generation_;
  timer_.expires_at(deadline);
  timer_.async_wait([this, generation](error_code ec) {
    // A stale expiry (the operation already finished) must not touch the next one.
    if (ec || generation != timer_generation_) return;
    timed_out_ = true;
    if (abort_) abort_();
  });
}

void Client::disarm() {
  ++timer_generation_;
  timer_.cancel();
  abort_ = nullptr;
}

void Client::cancel() {
  canceled_ = true;
  if (abort_) abort_();
  if (conn_) {
    error_code ignored;
    conn_->socket.cancel(ignored);
  }
}

std::string Client::wire_request(const Request& request) const {
  const Url& u = options_.url;
  std::string target = u.path + request.path;
  if (target.empty()) target = "/";
  // Plain http through a proxy uses the absolute form; https tunnels via CONNECT.
  if (options_.proxy && !u.tls) target = "http://" + u.authority() + target;
  std::string w;
  w.reserve(512 + request.body.size());
  w += "POST " + target + " HTTP/1.1\r\nHost: " + u.authority() + "\r\n";
  for (const auto& [k, v] : request.headers) w += k + ": " + v + "\r\n";
  w += "Content-Type: application/json\r\nContent-Length: " + std::to_string(request.body.size()) +
       "\r\nConnection: keep-alive\r\n\r\n";
  w += request.body;
  return w;
}

awaitable<Error> Client::connect(TimePoint deadline, Stamps& stamps) {
  const Url& u = options_.url;
  const Url& hop = options_.proxy ? *options_.proxy : u;
  error_code ec;

  tcp::resolver resolver(io_);
  arm(deadline, [&resolver] { resolver.cancel(); });
  auto endpoints =
      co_await resolver.async_resolve(hop.host, hop.port, asio::redirect_error(use_awaitable, ec));
  disarm();
  if (canceled_) co_return Error{ErrorKind::canceled, "canceled"};
  if (timed_out_) co_return Error{ErrorKind::timeout, "timeout resolving " + hop.host};
  if (ec) co_return Error{ErrorKind::resolve, "resolve " + hop.host + ": " + ec.message()};
  stamps.resolved = Clock::now();

  conn_ = std::make_unique<Conn>(io_);
  conn_pooled_ = false;
  Conn* c = conn_.get();
  arm(deadline, [c] {
    error_code ignored;
    c->socket.close(ignored);
  });
  co_await asio::async_connect(c->socket, endpoints, asio::redirect_error(use_awaitable, ec));
  disarm();
  if (canceled_) co_return Error{ErrorKind::canceled, "canceled"};
  if (timed_out_) co_return Error{ErrorKind::timeout, "timeout connecting to " + hop.authority()};
  if (ec) co_return Error{ErrorKind::connect, "connect " + hop.authority() + ": " + ec.message()};
  c->socket.set_option(tcp::no_delay(true), ec);
  // Kernel receive timestamps for the arrival instants; without them reads
  // fall back to Clock::now() at completion.
  c->reader.enable_timestamps();

  if (options_.proxy && u.tls) {
    // HTTP CONNECT tunnel; the proxy's answer is read here, not by the parser.
    std::string req = "CONNECT " + u.host + ":" + u.port + " HTTP/1.1\r\nHost: " + u.host + ":" +
                      u.port + "\r\n\r\n";
    arm(deadline, [c] {
      error_code ignored;
      c->socket.close(ignored);
    });
    co_await asio::async_write(c->socket, asio::buffer(req),
                               asio::redirect_error(use_awaitable, ec));
    std::string answer;
    while (!ec && answer.find("\r\n\r\n") == std::string::npos && answer.size() < 16384) {
      char buf[1024];
      auto n = co_await c->socket.async_read_some(asio::buffer(buf),
                                                  asio::redirect_error(use_awaitable, ec));
      answer.append(buf, n);
    }
    disarm();
    if (timed_out_) co_return Error{ErrorKind::timeout, "timeout in proxy CONNECT"};
    if (ec) co_return Error{ErrorKind::connect, "proxy CONNECT: " + ec.message()};
    if (answer.size() < 12 || answer.compare(9, 3, "200") != 0)
      co_return Error{ErrorKind::connect,
                      "proxy CONNECT refused: " + answer.substr(0, answer.find("\r\n"))};
  }
  stamps.connected = Clock::now();

  if (u.tls) {
    c->tls = std::make_unique<ssl::stream<TimestampingSocket&>>(c->reader, *ssl_);
    SSL* s = c->tls->native_handle();
    const std::string& name = options_.tls.server_name.empty() ? u.host : options_.tls.server_name;
    if (!is_ip_literal(name)) SSL_set_tlsext_host_name(s, name.c_str());
    if (!options_.tls.insecure_skip_verify) {
      X509_VERIFY_PARAM* param = SSL_get0_param(s);
      if (is_ip_literal(name)) {
        X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
      } else {
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
      }
    }
    arm(deadline, [c] {
      error_code ignored;
      c->socket.close(ignored);
    });
    co_await c->tls->async_handshake(ssl::stream_base::client,
                                     asio::redirect_error(use_awaitable, ec));
    disarm();
    if (canceled_) co_return Error{ErrorKind::canceled, "canceled"};
    if (timed_out_) co_return Error{ErrorKind::timeout, "timeout in TLS handshake"};
    if (ec) co_return Error{ErrorKind::tls, "tls: " + ssl_error_detail(ec, s)};
    stamps.tls_done = Clock::now();
  }
  co_return Error{};
}

awaitable<std::size_t> Client::read_some(TimePoint deadline, Error& error) {
  Conn* c = conn_.get();
  // One buffer per client, allocated once and never cleared: growing in_ by
  // kReadChunk before every read zero-filled 64 KiB per chunk (the largest CPU
  // cost per chunk) and kept 64 KiB of every target resident.
  if (!read_buf_) read_buf_ = std::make_unique_for_overwrite<char[]>(kReadChunk);
  error_code ec;
  arm(deadline, [c] {
    error_code ignored;
    c->socket.cancel(ignored);
  });
  std::size_t n = 0;
  auto buf = asio::buffer(read_buf_.get(), kReadChunk);
  if (c->tls)
    n = co_await c->tls->async_read_some(buf, asio::redirect_error(use_awaitable, ec));
  else
    n = co_await c->reader.async_read_some(buf, asio::redirect_error(use_awaitable, ec));
  // The arrival instant, before any parsing: the kernel's receive stamp of the
  // latest segment read (under TLS, the last one that fed these bytes), never
  // later than now nor earlier than the previous arrival; now without a stamp.
  const TimePoint now = Clock::now();
  const std::int64_t kernel_ns = c->reader.last_kernel_ns();
  if (n > 0 && kernel_ns != 0)
    last_read_at_ = std::max(last_read_at_, kernel_stamp_to_steady(kernel_ns, now));
  else
    last_read_at_ = now;
  disarm();
  in_.append(read_buf_.get(), n);
  if (canceled_) {
    error = Error{ErrorKind::canceled, "canceled"};
  } else if (timed_out_) {
    error = Error{ErrorKind::timeout, "timeout"};
  } else if (ec == asio::error::eof || ec == ssl::error::stream_truncated ||
             ec == asio::error::connection_reset) {
    error = Error{ErrorKind::closed, "connection closed by peer"};
  } else if (ec) {
    error = Error{c->tls && ec.category() == asio::error::get_ssl_category() ? ErrorKind::tls
                                                                             : ErrorKind::closed,
                  ec.message()};
  }
  co_return n;
}

awaitable<Error> Client::write_and_read_headers(const std::string& wire, TimePoint deadline,
                                                Stamps& stamps, Response& response,
                                                bool& nothing_received) {
  Conn* c = conn_.get();
  error_code ec;
  arm(deadline, [c] {
    error_code ignored;
    c->socket.close(ignored);
  });
  if (c->tls)
    co_await asio::async_write(*c->tls, asio::buffer(wire),
                               asio::redirect_error(use_awaitable, ec));
  else
    co_await asio::async_write(c->socket, asio::buffer(wire),
                               asio::redirect_error(use_awaitable, ec));
  disarm();
  if (canceled_) co_return Error{ErrorKind::canceled, "canceled"};
  if (timed_out_) co_return Error{ErrorKind::timeout, "timeout writing request"};
  if (ec) co_return Error{ErrorKind::closed, "write: " + ec.message()};
  stamps.request_sent = Clock::now();

  ex_ = std::make_unique<Exchange>();
  ex_->parser.body_limit(boost::none);
  ex_->parser.header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
  ex_->parser.eager(true);
  in_.clear();
  nothing_received = true;
  for (;;) {
    Error err;
    co_await read_some(deadline, err);
    if (!in_.empty()) nothing_received = false;
    if (err) co_return err;
    // Feed only the header here; body bytes stay in in_ with this read's instant.
    ec = {};
    auto& p = ex_->parser;
    char scratch[1];
    p.get().body().data = scratch;
    p.get().body().size = 0;
    std::size_t used = p.put(asio::buffer(in_), ec);
    in_.erase(0, used);
    if (ec == bhttp::error::need_more) {
      if (in_.size() > options_.max_header_bytes)
        co_return Error{ErrorKind::protocol, "response header too large"};
      continue;
    }
    if (ec && ec != bhttp::error::need_buffer)
      co_return Error{ErrorKind::protocol, "bad HTTP response: " + ec.message()};
    if (!p.is_header_done()) continue;
    stamps.headers = last_read_at_;
    const auto& h = p.get();
    response.status = static_cast<int>(h.result_int());
    response.content_type = std::string(h[bhttp::field::content_type]);
    response.content_encoding = std::string(h[bhttp::field::content_encoding]);
    response.retry_after = std::string(h[bhttp::field::retry_after]);
    response.keep_alive = h.keep_alive();
    try {
      decoder_ = make_content_decoder(response.content_encoding);
    } catch (const std::exception&) {
      co_return Error{ErrorKind::protocol,
                      "unsupported content-encoding " + response.content_encoding};
    }
    ex_->body_done = p.is_done();
    co_return Error{};
  }
}

awaitable<Error> Client::start(const Request& request, TimePoint deadline, Stamps& stamps,
                               Response& response) {
  canceled_ = false;
  const std::string wire = wire_request(request);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!conn_) {
      stamps = Stamps{};
      if (Error e = co_await connect(deadline, stamps)) {
        conn_.reset();
        co_return e;
      }
    }
    const bool reused = conn_pooled_;
    bool nothing = false;
    Error e = co_await write_and_read_headers(wire, deadline, stamps, response, nothing);
    if (!e) {
      ++conn_->exchanges;
      co_return e;
    }
    conn_.reset();
    conn_pooled_ = false;
    // A pooled connection the server had already closed: try once on a fresh one.
    if (reused && nothing && e.kind == ErrorKind::closed) {
      stamps = Stamps{};
      continue;
    }
    co_return e;
  }
  co_return Error{ErrorKind::closed, "connection closed"};
}

Error Client::parse_body(std::string& out, bool& body_done) {
  auto& p = ex_->parser;
  char buf[kReadChunk];
  while (!in_.empty() && !p.is_done()) {
    p.get().body().data = buf;
    p.get().body().size = sizeof buf;
    error_code ec;
    const std::size_t used = p.put(asio::buffer(in_), ec);
    in_.erase(0, used);
    const std::size_t got = sizeof buf - p.get().body().size;
    if (got > 0) {
      if (decoder_) {
        if (!decoder_->decode(std::string_view(buf, got), out))
          return Error{ErrorKind::protocol, "corrupt " + std::string("compressed body")};
      } else {
        out.append(buf, got);
      }
    }
    if (ec == bhttp::error::need_buffer) continue;
    if (ec == bhttp::error::need_more) break;
    if (ec) return Error{ErrorKind::protocol, "bad HTTP body: " + ec.message()};
    if (used == 0 && got == 0) break;
  }
  body_done = ex_->body_done = p.is_done();
  return Error{};
}

awaitable<Error> Client::read(TimePoint deadline, std::string& out, TimePoint& arrival,
                              bool& body_done) {
  body_done = ex_ && ex_->body_done;
  if (!ex_ || body_done) co_return Error{};
  const std::size_t before = out.size();
  // Bytes buffered by an earlier read belong to that read's instant.
  if (!in_.empty()) {
    if (Error e = parse_body(out, body_done)) co_return e;
    arrival = last_read_at_;
    if (out.size() > before || body_done) co_return Error{};
  }
  for (;;) {
    Error err;
    co_await read_some(deadline, err);
    arrival = last_read_at_;
    if (!in_.empty()) {
      if (Error e = parse_body(out, body_done)) co_return e;
    }
    if (err) {
      if (err.kind == ErrorKind::closed) {
        // End of a close-delimited body is a normal end.
        error_code ec;
        ex_->parser.put_eof(ec);
        if (!ec && ex_->parser.is_done()) {
          body_done = ex_->body_done = true;
          ex_->parser.get().keep_alive(false);
          co_return Error{};
        }
      }
      co_return err;
    }
    if (out.size() > before || body_done) co_return Error{};
  }
}

void Client::finish(bool reuse) {
  disarm();
  const bool keep = reuse && conn_ && ex_ && ex_->body_done && in_.empty() &&
                    ex_->parser.get().keep_alive() && !canceled_;
  ex_.reset();
  decoder_.reset();
  in_.clear();
  if (keep) {
    conn_pooled_ = true;
  } else {
    conn_.reset();
    conn_pooled_ = false;
  }
}

}  // namespace lse::http
