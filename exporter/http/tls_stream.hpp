// A TLS client connection over a TimestampingSocket: OpenSSL reads its records
// straight from the socket's stamped recvmsg() and writes them with send(),
// through a BIO of our own (issue 11 §1). asio's ssl::stream instead put every
// record through a 17 KiB buffer of its own and a BIO pair (two copies, each
// into memory of its own per connection), and tried an SSL_read that could
// only ask for input before every socket read. Here one body read is one
// SSL_read, which does the recvmsg() itself: the bytes go from the kernel into
// OpenSSL's record buffer and come out decrypted into the caller's buffer.
//
// Reads run as the socket's reactor operation (TimestampingSocket::
// async_read_from), so a TLS read costs what a plain one does around it: no
// epoll_ctl() per read, and no recvmsg() that could only return EAGAIN when
// the previous one left the kernel and OpenSSL with nothing (drained()).
//
// Errors are asio's (ssl::error::stream_truncated for a connection closed
// without close_notify, asio::error::eof after one, the socket's own error
// otherwise, the SSL category for OpenSSL's): callers and their tests see the
// same codes as with ssl::stream.
#pragma once
#include <utility>  // before asio awaitable with GCC 12

#include <openssl/ssl.h>

#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/detail/buffer_sequence_adapter.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>

#include "http/timestamping_socket.hpp"

namespace lse::http {

class TlsStream {
 public:
  using executor_type = TimestampingSocket::executor_type;

  // A client connection in `context` over `socket` (connected). Record
  // buffers stay allocated for the connection's life (no malloc per record)
  // and OpenSSL reads ahead: one recvmsg() brings every record the kernel
  // holds. Renegotiation is refused. Throws std::runtime_error when OpenSSL
  // cannot build it.
  TlsStream(TimestampingSocket& socket, boost::asio::ssl::context& context);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  SSL* native_handle() { return ssl_; }
  executor_type get_executor() noexcept { return socket_.get_executor(); }

  // The client handshake; completes with its error, none when it succeeded.
  template <class CompletionToken>
  auto async_handshake(CompletionToken&& token) {
    return boost::asio::async_compose<CompletionToken, void(boost::system::error_code)>(
        StepOp<HandshakeStep>{this, HandshakeStep{}}, token, socket_.socket());
  }

  // Encrypts and sends bytes of `buffers` (up to 8 KiB of them, linearised
  // into one record as asio's ssl::stream does); completes with how many.
  template <class ConstBufferSequence, class CompletionToken>
  auto async_write_some(const ConstBufferSequence& buffers, CompletionToken&& token) {
    return boost::asio::async_compose<CompletionToken,
                                      void(boost::system::error_code, std::size_t)>(
        StepOp<WriteStep<ConstBufferSequence>>{this, WriteStep<ConstBufferSequence>{buffers}},
        token, socket_.socket());
  }

  // Reads decrypted bytes into the first non-empty buffer of `buffers`.
  // Never completes inside the initiating call.
  template <class MutableBufferSequence, class CompletionToken>
  auto async_read_some(const MutableBufferSequence& buffers, CompletionToken&& token) {
    return socket_.async_read_from(*this, buffers, std::forward<CompletionToken>(token));
  }

  // --- the source of async_read_from() ----------------------------------

  // One SSL_read into the first non-empty buffer: bytes, or 0 with
  // would_block (OpenSSL needs more of the socket), eof, or the error.
  template <class MutableBufferSequence>
  std::size_t receive(const MutableBufferSequence& buffers, boost::system::error_code& ec) {
    const boost::asio::mutable_buffer b =
        boost::asio::detail::buffer_sequence_adapter<boost::asio::mutable_buffer,
                                                     MutableBufferSequence>::first(buffers);
    return read(b.data(), b.size(), ec);
  }

  // The latest read left nothing to read without a new event: it read the
  // socket, and left no byte in OpenSSL and no byte or FIN in the kernel.
  bool drained() const;

 private:
  // What an operation waits for before its next attempt.
  enum class Want { nothing, readable, writable };

  std::size_t read(void* data, std::size_t size, boost::system::error_code& ec);
  Want handshake(boost::system::error_code& ec);
  Want write(const void* data, std::size_t size, std::size_t& written,
             boost::system::error_code& ec);
  // What SSL_get_error() says of a call that returned `result` (<= 0), as
  // the operation's next want or its error.
  Want failed(int result, boost::system::error_code& ec);

  static BIO_METHOD* socket_bio_method();
  static int bio_read(BIO* bio, char* out, int size);
  static int bio_write(BIO* bio, const char* in, int size);
  static long bio_ctrl(BIO* bio, int cmd, long num, void* ptr);

  struct HandshakeStep {
    Want operator()(TlsStream& s, boost::system::error_code& ec) { return s.handshake(ec); }
    void complete(auto& self, boost::system::error_code ec) { self.complete(ec); }
  };

  template <class ConstBufferSequence>
  struct WriteStep {
    ConstBufferSequence buffers;
    std::size_t written = 0;
    Want operator()(TlsStream& s, boost::system::error_code& ec) {
      using Adapter = boost::asio::detail::buffer_sequence_adapter<boost::asio::const_buffer,
                                                                   ConstBufferSequence>;
      unsigned char storage[Adapter::linearisation_storage_size];
      const boost::asio::const_buffer b = Adapter::linearise(buffers, boost::asio::buffer(storage));
      return s.write(b.data(), b.size(), written, ec);
    }
    void complete(auto& self, boost::system::error_code ec) { self.complete(ec, written); }
  };

  // Runs `step` until it wants nothing, waiting on the socket between
  // attempts; an answer on the first attempt is posted, not given inside
  // the initiating call.
  template <class Step>
  struct StepOp {
    TlsStream* stream;
    Step step;
    enum { initiate, waiting, posted } state = initiate;
    boost::system::error_code ec{};

    template <class Self>
    void operator()(Self& self, boost::system::error_code wait_ec = {}) {
      if (state == posted) {
        step.complete(self, ec);
        return;
      }
      if (state == waiting && wait_ec) {
        step.complete(self, wait_ec);
        return;
      }
      const Want want = step(*stream, ec);
      if (want == Want::nothing) {
        if (state == initiate) {
          state = posted;
          boost::asio::post(std::move(self));
          return;
        }
        step.complete(self, ec);
        return;
      }
      state = waiting;
      stream->socket_.socket().async_wait(want == Want::readable
                                              ? TimestampingSocket::socket_type::wait_read
                                              : TimestampingSocket::socket_type::wait_write,
                                          std::move(self));
    }
  };

  TimestampingSocket& socket_;
  SSL* ssl_ = nullptr;
  // What the socket said when OpenSSL last read or wrote it: eof, a reset,
  // another error; none while it only had nothing to give (EAGAIN).
  boost::system::error_code transport_;
  bool socket_read_ = false;  // the latest read() made a recvmsg()
};

}  // namespace lse::http
