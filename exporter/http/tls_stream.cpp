// TlsStream: OpenSSL over the timestamping socket through a BIO of our own.
#include "http/tls_stream.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace lse::http {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown error";
  char text[256];
  ERR_error_string_n(e, text, sizeof text);
  return text;
}

// SSL_get_error() needs an empty error queue before each call; it usually is
// one, and clearing costs more than looking.
void clear_errors() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

}  // namespace

TlsStream::TlsStream(TimestampingSocket& socket, asio::ssl::context& context) : socket_(socket) {
  ssl_ = SSL_new(context.native_handle());
  if (ssl_ == nullptr)
    throw std::runtime_error("tls: cannot create a connection: " + openssl_error());
  BIO* bio = BIO_new(socket_bio_method());
  if (bio == nullptr) {
    SSL_free(ssl_);
    throw std::runtime_error("tls: cannot create a connection: " + openssl_error());
  }
  BIO_set_data(bio, this);
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl_, bio, bio);  // one reference, for both directions
  // Partial writes and a write buffer that moves between retries, as asio's
  // streams have them (a retried write is linearised afresh).
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Record buffers kept: released after every record they cost a malloc and
  // a free per streamed chunk. Allocated by malloc, only the pages a record
  // touches are resident (small records touch the first).
  SSL_clear_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
  // Without read-ahead OpenSSL reads a record's 5-byte header, then its body:
  // two recvmsg() per chunk, where one brings all that is queued.
  SSL_set_read_ahead(ssl_, 1);
  // A renegotiation would write in the middle of a read; a probe has no use
  // for one.
  SSL_set_options(ssl_, SSL_OP_NO_RENEGOTIATION);
  SSL_set_connect_state(ssl_);
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

// The socket's hint describes its latest recvmsg(), which is this read's
// only if this read made one: a read served from OpenSSL's buffer alone
// says nothing of what reached the kernel since (an event that came while
// no read waited was already spent, and only a try finds those bytes).
bool TlsStream::drained() const {
  return socket_read_ && socket_.drained() && SSL_has_pending(ssl_) == 0;
}

// --- the operations' attempts -------------------------------------------------

std::size_t TlsStream::read(void* data, std::size_t size, error_code& ec) {
  ec = {};
  socket_read_ = false;
  if (size == 0) return 0;
  transport_ = {};
  clear_errors();
  std::size_t n = 0;
  const std::uint64_t calls = socket_.receive_calls();
  const int result = SSL_read_ex(ssl_, data, size, &n);
  socket_read_ = socket_.receive_calls() != calls;
  if (result == 1) return n;
  // Wanting the socket to be writable (a TLS 1.3 key update's answer, or
  // the refusal of a renegotiation, that did not fit in the send buffer)
  // also waits for the next bytes, and the next read writes it first. A
  // peer that then stays silent while OpenSSL holds records already read
  // leaves the read to its deadline. It takes a full send buffer while a
  // response is read, after a request that went out whole: a probe does not
  // make one.
  if (failed(result, ec) != Want::nothing) ec = asio::error::would_block;
  return 0;
}

TlsStream::Want TlsStream::handshake(error_code& ec) {
  ec = {};
  transport_ = {};
  clear_errors();
  const int result = SSL_do_handshake(ssl_);
  if (result == 1) return Want::nothing;
  return failed(result, ec);
}

TlsStream::Want TlsStream::write(const void* data, std::size_t size, std::size_t& written,
                                 error_code& ec) {
  ec = {};
  written = 0;
  if (size == 0) return Want::nothing;
  transport_ = {};
  clear_errors();
  const int result = SSL_write_ex(ssl_, data, size, &written);
  if (result == 1) return Want::nothing;
  written = 0;
  return failed(result, ec);
}

// The codes asio's ssl::stream gives for the same ends (its engine's
// perform() and map_error_code()).
TlsStream::Want TlsStream::failed(int result, error_code& ec) {
  const int code = SSL_get_error(ssl_, result);
  if (code == SSL_ERROR_WANT_READ) return Want::readable;
  if (code == SSL_ERROR_WANT_WRITE) return Want::writable;
  if (code == SSL_ERROR_ZERO_RETURN) {  // close_notify
    ec = asio::error::eof;
    return Want::nothing;
  }
  const unsigned long error = ERR_get_error();
  // A reason OpenSSL gave (an alert the peer sent before closing) says more
  // than the close that followed it; its own "unexpected eof" does not.
  const bool reason = error != 0 && ERR_GET_LIB(error) == ERR_LIB_SSL &&
                      ERR_GET_REASON(error) != SSL_R_UNEXPECTED_EOF_WHILE_READING;
  if (transport_ == asio::error::eof && !reason) {
    // The connection ended; without the peer's close_notify the stream may
    // have been cut short.
    ec = (SSL_get_shutdown(ssl_) & SSL_RECEIVED_SHUTDOWN) != 0
             ? error_code(asio::error::eof)
             : error_code(asio::ssl::error::stream_truncated);
  } else if (transport_ && !reason) {
    ec = transport_;
  } else if (error != 0) {
    ec = error_code(static_cast<int>(error), asio::error::get_ssl_category());
  } else {
    ec = asio::ssl::error::unspecified_system_error;
  }
  return Want::nothing;
}

// --- the BIO: OpenSSL's records from and to the socket --------------------------

BIO_METHOD* TlsStream::socket_bio_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m =
        BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "lse timestamping socket");
    if (m == nullptr) return m;
    BIO_meth_set_read(m, &TlsStream::bio_read);
    BIO_meth_set_write(m, &TlsStream::bio_write);
    BIO_meth_set_ctrl(m, &TlsStream::bio_ctrl);
    return m;
  }();
  return method;
}

// One stamped recvmsg(): the socket keeps its kernel stamp and its queue
// hint for the read that asked.
int TlsStream::bio_read(BIO* bio, char* out, int size) {
  auto* self = static_cast<TlsStream*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (size <= 0) return 0;
  error_code ec;
  const std::size_t n =
      self->socket_.receive(asio::buffer(out, static_cast<std::size_t>(size)), ec);
  if (n > 0) return static_cast<int>(n);
  if (ec == asio::error::would_block) {
    BIO_set_retry_read(bio);
    return -1;
  }
  if (!self->transport_) self->transport_ = ec;
  return ec == asio::error::eof ? 0 : -1;
}

int TlsStream::bio_write(BIO* bio, const char* in, int size) {
  auto* self = static_cast<TlsStream*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (size <= 0) return 0;
  const int fd = self->socket_.socket().native_handle();
  for (;;) {
    const ssize_t n = ::send(fd, in, static_cast<std::size_t>(size), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      BIO_set_retry_write(bio);
      return -1;
    }
    if (!self->transport_) self->transport_ = error_code(errno, asio::error::get_system_category());
    return -1;
  }
}

// Writes go straight to the socket: nothing to flush. Everything else
// (kTLS, end-of-file queries) is not supported, as OpenSSL expects of a
// minimal BIO; the end of the connection comes from the read itself.
long TlsStream::bio_ctrl(BIO* /*bio*/, int cmd, long /*num*/, void* /*ptr*/) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

}  // namespace lse::http
