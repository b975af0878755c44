// A thin stream layer over a connected TCP socket that reads with recvmsg()
// and keeps the kernel's receive timestamp (SO_TIMESTAMPNS) of the latest read
// that returned data. Used for plain reads and under TLS (http/tls_stream.hpp
// reads its records through receive()), so that under TLS the arrival instant
// of decrypted bytes is the kernel stamp of the last TCP segment that fed them
// (tests/bench/PERFORMANCE.md, SO_TIMESTAMPNS experiment). Writes forward to
// the socket.
#pragma once
#include <utility>  // before asio awaitable with GCC 12
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/version.hpp>

// No epoll_ctl() per read (issue 11): with Boost 1.74's epoll reactor the read
// is the reactor's own operation (see ReactorRead below). Elsewhere the
// portable composed operation (a recvmsg, then async_wait on EAGAIN).
#if BOOST_VERSION == 107400 && defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING)
#define LSE_REACTOR_READ 1
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/non_const_lvalue.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#else
#define LSE_REACTOR_READ 0
#endif
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <memory>
#include <type_traits>

namespace lse::http {

// A TCP socket whose reactor state the timestamping layer may reach (the
// descriptor and its per-descriptor reactor data), to start its own read.
// Its executor is the io_context's own, not the type-erased any_io_executor
// of tcp::socket: every read tracks its work through it, and the erased one
// builds and destroys an executor object per read (with Client::read_some()
// binding its handler to the same executor, perf at 1,000 TLS streams:
// any_executor_base 0.9 % of the probe thread's samples before, 0.08 % after).
class ProbeSocket
    : public boost::asio::basic_stream_socket<boost::asio::ip::tcp,
                                              boost::asio::io_context::executor_type> {
 public:
  using basic_stream_socket::basic_stream_socket;
  auto& reactor_implementation() { return impl_.get_implementation(); }
};

class TimestampingSocket {
 public:
  using socket_type = ProbeSocket;
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

  // Asks the kernel to say, with every read, how many bytes it still holds
  // (TCP_INQ; 1 when only the peer's FIN is left). A read that leaves none
  // lets the next one wait for the reactor's edge without a read that would
  // only return EAGAIN: one recvmsg() per chunk instead of two. False when
  // the kernel refuses (every read then tries right away, as before).
  bool enable_queue_hints() {
#ifdef TCP_INQ
    const int on = 1;
    return ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_INQ, &on, sizeof on) == 0;
#else
    return false;
#endif
  }

  // The latest read left nothing in the kernel: no bytes, no FIN. (A reset
  // that came with those bytes does not count: see rearm().)
  bool drained() const { return drained_; }

  // Re-arms the descriptor's edge in the reactor (one epoll_ctl), which then
  // reports at once anything already pending. A drained read waits for a new
  // edge, and a reset that arrived together with the last bytes was announced
  // by the same edge as they: callers re-arm after a silence, so that such a
  // reset is still read as one.
  void rearm() {
    socket_.async_wait(socket_type::wait_write, [](boost::system::error_code) {});
  }

  // CLOCK_REALTIME nanoseconds of the kernel receive stamp of the latest
  // recvmsg() that returned data; 0 when that read carried none. Kernel stamps
  // grow with every segment, so this is the newest stamp seen so far, which is
  // also the arrival of bytes still buffered above this layer (TLS records).
  std::int64_t last_kernel_ns() const { return last_kernel_ns_; }

  // recvmsg() calls made so far, EAGAIN ones included (tests bound it).
  std::uint64_t receive_calls() const { return receive_calls_; }

  // Initiates a read. Never completes inside the initiating call.
  //
  // With the epoll reactor: a recvmsg() right away, and on EAGAIN the
  // operation waits in the reactor (the descriptor is registered once,
  // edge-triggered) and reads when the next event comes: no epoll_ctl() per
  // read, where async_wait re-arms the descriptor with EPOLL_CTL_MOD every
  // time. When the previous read left the kernel's queue empty (drained())
  // and no event came since, the recvmsg() right away is skipped: it could
  // only return EAGAIN. A FIN queued behind the bytes keeps it (TCP_INQ
  // counts it); a reset that came with them needs rearm(), as no new edge
  // would announce it.
  template <class MutableBufferSequence, class CompletionToken>
  auto async_read_some(const MutableBufferSequence& buffers, CompletionToken&& token) {
    return async_read_from(*this, buffers, std::forward<CompletionToken>(token));
  }

  // The same read for a layer above this socket whose own receive() reads
  // through this one's (TLS records): `source` has
  //   std::size_t receive(const MutableBufferSequence&, error_code&)
  // (bytes, or 0 with would_block, eof or an error) and bool drained() (its
  // latest receive() left nothing, in it or in the kernel, to read without a
  // new event). The source lives until the read completes.
  template <class Source, class MutableBufferSequence, class CompletionToken>
  auto async_read_from(Source& source, const MutableBufferSequence& buffers,
                       CompletionToken&& token) {
#if LSE_REACTOR_READ
    return boost::asio::async_initiate<CompletionToken,
                                       void(boost::system::error_code, std::size_t)>(
        InitiateReactorRead<Source>{this, &source}, token, buffers);
#else
    return boost::asio::async_compose<CompletionToken,
                                      void(boost::system::error_code, std::size_t)>(
        ReadOp<Source, MutableBufferSequence>{this, &source, buffers}, token, socket_);
#endif
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
      ++receive_calls_;
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<decltype(msg.msg_iovlen)>(count);
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      const ssize_t r = ::recvmsg(socket_.native_handle(), &msg, MSG_DONTWAIT);
      if (r <= 0) drained_ = false;
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
      bool drained = false;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS &&
            c->cmsg_len >= CMSG_LEN(sizeof(timespec))) {
          timespec ts;
          std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
          stamp = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
        }
#ifdef TCP_CM_INQ
        if (c->cmsg_level == IPPROTO_TCP && c->cmsg_type == TCP_CM_INQ &&
            c->cmsg_len >= CMSG_LEN(sizeof(int))) {
          int left = 1;
          std::memcpy(&left, CMSG_DATA(c), sizeof left);
          drained = left == 0;  // present only once enable_queue_hints() took
        }
#endif
      }
      last_kernel_ns_ = stamp;
      drained_ = drained;
      ec = {};
      return static_cast<std::size_t>(r);
    }
  }

 private:
#if LSE_REACTOR_READ
  // The read as an operation of asio's epoll reactor, like asio's own
  // reactive_socket_recv_op but with recvmsg() and its control message.
  template <class Source, class MutableBufferSequence, class Handler, class IoExecutor>
  class ReactorRead : public boost::asio::detail::reactor_op {
   public:
    BOOST_ASIO_DEFINE_HANDLER_PTR(ReactorRead);

    ReactorRead(Source* source, const MutableBufferSequence& buffers, Handler& handler,
                const IoExecutor& io_ex)
        : reactor_op(boost::system::error_code(), &ReactorRead::do_perform,
                     &ReactorRead::do_complete),
          source_(source),
          buffers_(buffers),
          handler_(std::move(handler)),
          work_(handler_, io_ex) {}

    // One recvmsg(); EAGAIN leaves the operation waiting for the next event.
    // A read that left the kernel's queue empty says so (done_and_exhausted,
    // as asio's own reads say at EOF): the reactor then starts the next read
    // without trying it right away, unless an event came in between.
    static status do_perform(reactor_op* base) {
      auto* o = static_cast<ReactorRead*>(base);
      o->bytes_transferred_ = o->source_->receive(o->buffers_, o->ec_);
      if (o->ec_ == boost::asio::error::would_block) return not_done;
      return o->source_->drained() ? done_and_exhausted : done;
    }

    // As asio's own operations complete: the handler moves out, the memory
    // goes back before the upcall, no upcall when the reactor is destroyed.
    static void do_complete(void* owner, boost::asio::detail::operation* base,
                            const boost::system::error_code& /*ec*/, std::size_t /*n*/) {
      namespace detail = boost::asio::detail;
      auto* o = static_cast<ReactorRead*>(base);
      ptr p = {std::addressof(o->handler_), o, o};
      detail::handler_work<Handler, IoExecutor> w(std::move(o->work_));
      detail::binder2<Handler, boost::system::error_code, std::size_t> handler(
          o->handler_, o->ec_, o->bytes_transferred_);
      p.h = std::addressof(handler.handler_);
      p.reset();
      if (owner) {
        detail::fenced_block b(detail::fenced_block::half);
        w.complete(handler, handler.handler_);
      }
    }

   private:
    Source* source_;
    MutableBufferSequence buffers_;
    Handler handler_;
    boost::asio::detail::handler_work<Handler, IoExecutor> work_;
  };

  template <class Source>
  struct InitiateReactorRead {
    TimestampingSocket* self;
    Source* source;

    template <class Handler, class MutableBufferSequence>
    void operator()(Handler&& handler, const MutableBufferSequence& buffers) const {
      namespace detail = boost::asio::detail;
      detail::non_const_lvalue<Handler> h(handler);
      using Op = ReactorRead<Source, MutableBufferSequence, std::decay_t<Handler>, executor_type>;
      const bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(h.value);
      typename Op::ptr p = {std::addressof(h.value), Op::ptr::allocate(h.value), nullptr};
      p.p = new (p.v) Op(source, buffers, h.value, self->get_executor());
      // An empty read completes at once, as asio's own do (asio's ssl::stream
      // issues one to run its handler as if posted); it must not wait for an
      // event.
      if (boost::asio::buffer_size(buffers) == 0) {
        self->reactor().post_immediate_completion(p.p, is_continuation);
        p.v = p.p = nullptr;
        return;
      }
      auto& impl = self->socket_.reactor_implementation();
      self->reactor().start_op(detail::reactor::read_op, impl.socket_, impl.reactor_data_, p.p,
                               is_continuation, /*allow_speculative=*/true);
      p.v = p.p = nullptr;
    }
  };

  boost::asio::detail::reactor& reactor() {
    if (!reactor_)
      reactor_ = &boost::asio::use_service<boost::asio::detail::reactor>(
          boost::asio::query(socket_.get_executor(), boost::asio::execution::context));
    return *reactor_;
  }
  boost::asio::detail::reactor* reactor_ = nullptr;
#endif

  // The portable read: recvmsg() first; on EAGAIN, async_wait and again.
  template <class Source, class MutableBufferSequence>
  struct ReadOp {
    TimestampingSocket* self_;
    Source* source_;
    MutableBufferSequence buffers_;
    enum { initiate, waited, posted } state_ = initiate;
    boost::system::error_code ec_{};
    std::size_t n_ = 0;

    template <class Self>
    void operator()(Self& self, boost::system::error_code wait_ec = {}) {
      switch (state_) {
        case initiate:
          n_ = source_->receive(buffers_, ec_);
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
          n_ = source_->receive(buffers_, ec_);
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
  std::uint64_t receive_calls_ = 0;
  bool drained_ = false;
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
