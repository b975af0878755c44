// A thin stream layer over a connected TCP socket that reads with recvmsg()
// and keeps the kernel's receive timestamp (SO_TIMESTAMPNS) of the latest read
// that returned data. Used for plain reads and as the next layer under
// ssl::stream, so that under TLS the arrival instant of decrypted bytes is the
// kernel stamp of the last TCP segment that fed them (tests/bench/PERFORMANCE.md,
// SO_TIMESTAMPNS experiment). Writes forward to the socket.
#pragma once
#include <utility>  // before asio awaitable with GCC 12
#include <sys/socket.h>
#include <sys/uio.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>

namespace lse::http {

class TimestampingSocket {
 public:
  using socket_type = boost::asio::ip::tcp::socket;
  using executor_type = socket_type::executor_type;
  using lowest_layer_type = socket_type::lowest_layer_type;

  explicit TimestampingSocket(socket_type& socket) : socket_(socket) {}
  TimestampingSocket(const TimestampingSocket&) = delete;
  TimestampingSocket& operator=(const TimestampingSocket&) = delete;

  executor_type get_executor() noexcept { return socket_.get_executor(); }
  lowest_layer_type& lowest_layer() { return socket_.lowest_layer(); }
  const lowest_layer_type& lowest_layer() const { return socket_.lowest_layer(); }
  socket_type& socket() { return socket_; }

  // Asks the kernel to stamp received segments; false when it refuses (reads
  // then carry no stamp and callers fall back to their own clock).
  bool enable_timestamps() {
    const int on = 1;
    return ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0;
  }

  // CLOCK_REALTIME nanoseconds of the kernel receive stamp of the latest
  // recvmsg() that returned data; 0 when that read carried none. Kernel stamps
  // grow with every segment, so this is the newest stamp seen so far, which is
  // also the arrival of bytes still buffered above this layer (TLS records).
  std::int64_t last_kernel_ns() const { return last_kernel_ns_; }

  // Initiates a read: a non-blocking recvmsg() first; on EAGAIN, waits for
  // readability and tries again. Never completes inside the initiating call.
  template <class MutableBufferSequence, class CompletionToken>
  auto async_read_some(const MutableBufferSequence& buffers, CompletionToken&& token) {
    return boost::asio::async_compose<CompletionToken,
                                      void(boost::system::error_code, std::size_t)>(
        ReadOp<MutableBufferSequence>{this, buffers}, token, socket_);
  }

  template <class ConstBufferSequence, class CompletionToken>
  auto async_write_some(const ConstBufferSequence& buffers, CompletionToken&& token) {
    return socket_.async_write_some(buffers, std::forward<CompletionToken>(token));
  }

  // One non-blocking recvmsg() into `buffers`: bytes read, or 0 with `ec` set
  // (would_block, eof, or the socket error).
  template <class MutableBufferSequence>
  std::size_t receive(const MutableBufferSequence& buffers, boost::system::error_code& ec) {
    constexpr int kMaxIov = 16;
    iovec iov[kMaxIov];
    int count = 0;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && count < kMaxIov; ++it) {
      boost::asio::mutable_buffer b(*it);
      if (b.size() == 0) continue;
      iov[count].iov_base = b.data();
      iov[count].iov_len = b.size();
      ++count;
    }
    if (count == 0) {
      ec = {};
      return 0;
    }
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec)) + CMSG_SPACE(64)];
    for (;;) {
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<decltype(msg.msg_iovlen)>(count);
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      const ssize_t r = ::recvmsg(socket_.native_handle(), &msg, MSG_DONTWAIT);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
          ec = boost::asio::error::would_block;
        else
          ec = boost::system::error_code(errno, boost::asio::error::get_system_category());
        return 0;
      }
      if (r == 0) {
        ec = boost::asio::error::eof;
        return 0;
      }
      std::int64_t stamp = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS &&
            c->cmsg_len >= CMSG_LEN(sizeof(timespec))) {
          timespec ts;
          std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
          stamp = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
        }
      }
      last_kernel_ns_ = stamp;
      ec = {};
      return static_cast<std::size_t>(r);
    }
  }

 private:
  template <class MutableBufferSequence>
  struct ReadOp {
    TimestampingSocket* self_;
    MutableBufferSequence buffers_;
    enum { initiate, waited, posted } state_ = initiate;
    boost::system::error_code ec_{};
    std::size_t n_ = 0;

    template <class Self>
    void operator()(Self& self, boost::system::error_code wait_ec = {}) {
      switch (state_) {
        case initiate:
          n_ = self_->receive(buffers_, ec_);
          if (ec_ != boost::asio::error::would_block) {
            // Data, end or error (or an empty buffer): complete as if posted.
            state_ = posted;
            boost::asio::post(std::move(self));
            return;
          }
          state_ = waited;
          self_->socket_.async_wait(socket_type::wait_read, std::move(self));
          return;
        case waited:
          if (wait_ec) {
            self.complete(wait_ec, 0);
            return;
          }
          n_ = self_->receive(buffers_, ec_);
          if (ec_ == boost::asio::error::would_block) {
            self_->socket_.async_wait(socket_type::wait_read, std::move(self));
            return;
          }
          self.complete(ec_, n_);
          return;
        case posted: self.complete(ec_, n_); return;
      }
    }
  };

  socket_type& socket_;
  std::int64_t last_kernel_ns_ = 0;
};

// The steady_clock instant of a CLOCK_REALTIME kernel stamp, given the
// steady_clock instant `now` just taken: now minus the age of the stamp
// (realtime now − stamp). Never later than `now`.
inline std::chrono::steady_clock::time_point kernel_stamp_to_steady(
    std::int64_t realtime_ns, std::chrono::steady_clock::time_point now) {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  const std::int64_t real_now = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  const std::int64_t age = real_now - realtime_ns;
  if (age <= 0) return now;
  return now - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::nanoseconds(age));
}

}  // namespace lse::http
