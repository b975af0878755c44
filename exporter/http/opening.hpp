// Exchanges of one io_context that are opening: from the start of an
// exchange to its request's last byte. Their instants (resolved, connected,
// tls_done, request_sent) are Clock::now() where a handler runs, unlike the
// answer's, which are the kernel's receive stamps; so a probe loop must not
// hold handlers back while one is open (probe/probe_loop.hpp).
#pragma once
#include <cstddef>

#include <boost/asio/execution_context.hpp>

namespace lse::http {

// One per io_context (asio::use_service). One thread runs an io_context, so
// a plain count does.
class OpeningCount : public boost::asio::execution_context::service {
 public:
  using key_type = OpeningCount;
  static inline boost::asio::execution_context::id id;

  explicit OpeningCount(boost::asio::execution_context& ctx) : service(ctx) {}

  std::size_t opening() const { return n_; }

  // Counts one exchange as opening from construction to release() (or the
  // end of its scope, whichever comes first).
  class Guard {
   public:
    explicit Guard(boost::asio::execution_context& ctx)
        : count_(&boost::asio::use_service<OpeningCount>(ctx)) {
      ++count_->n_;
    }
    ~Guard() { release(); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    void release() {
      if (count_) --count_->n_;
      count_ = nullptr;
    }

   private:
    OpeningCount* count_;
  };

 private:
  void shutdown() override {}
  std::size_t n_ = 0;
};

// Exchanges opening on `ctx` now.
inline std::size_t opening_exchanges(boost::asio::execution_context& ctx) {
  return boost::asio::use_service<OpeningCount>(ctx).opening();
}

}  // namespace lse::http
