// Name resolution on the caller's own event loop, with c-ares: the channel's
// sockets and its timeout are watched by the same io_context as the probes,
// so a lookup that hangs blocks nobody else on it, ends at once when its
// caller gives up (abort()), and shutdown never waits on one. c-ares reads
// /etc/resolv.conf (name servers, search domains, ndots, timeout, attempts)
// and /etc/hosts as glibc does; IP literals are never looked up. Answers are
// reused for their TTL (at most 5 minutes); failures are not kept.
#pragma once
#include <utility>  // before asio with GCC 12
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lse::dns {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

enum class Failure {
  none,
  no_such_host,  // NXDOMAIN (after the search domains)
  no_address,    // the name exists, without A/AAAA records
  timed_out,     // no name server answered within resolv.conf's timeout x attempts
  unreachable,   // the name servers refused the query or could not be reached
  canceled,      // the caller gave up (abort()) or the resolver shut down
  other,
};

struct Answer {
  std::vector<tcp::endpoint> endpoints;  // in c-ares' order (RFC 6724); empty on failure
  Failure failure = Failure::none;
  std::string error;  // names the name: "no such host api.example.invalid"
};

// `host` as an IP literal (v4, v6, v6 in brackets) with `port`: no lookup
// needed. nullopt for a name.
std::optional<tcp::endpoint> ip_literal(std::string_view host, std::uint16_t port);

// A c-ares status of a lookup of `host` in words that name it.
Answer failed(int ares_status, std::string_view host);

class Resolver;
struct ResolverState;

// One lookup in flight. Its callback runs exactly once, posted to the
// io_context (never inside lookup() or abort()), unless the io_context shuts
// down first.
class Lookup {
 public:
  Lookup(std::weak_ptr<ResolverState> state, std::string host, std::function<void(Answer)> done);
  Lookup(const Lookup&) = delete;
  Lookup& operator=(const Lookup&) = delete;
  ~Lookup();

  // Ends the lookup now with Failure::canceled; c-ares' own answer, when it
  // comes, is dropped. Nothing when the lookup already ended.
  void abort();
  bool ended() const { return ended_; }

 private:
  friend struct ResolverState;
  std::weak_ptr<ResolverState> state_;
  std::string host_;
  std::function<void(Answer)> done_;
  bool ended_ = false;
};

// The c-ares channel of one io_context (asio::use_service<Resolver>(io)).
// One thread runs the io_context; nothing here is locked.
class Resolver : public asio::execution_context::service {
 public:
  using key_type = Resolver;
  static inline asio::execution_context::id id;  // NOLINT(readability-identifier-naming)

  explicit Resolver(asio::io_context& io);
  ~Resolver() override;
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // The name servers instead of resolv.conf's ("127.0.0.1:5353,[::1]:53").
  // Throws std::runtime_error when c-ares refuses the list.
  void set_servers(const std::string& csv);

  // Starts resolving `host` (a name, not an IP literal) for `port`, A and
  // AAAA at once; `done` gets the answer.
  std::shared_ptr<Lookup> lookup(const std::string& host, std::uint16_t port,
                                 std::function<void(Answer)> done);

  // Queries c-ares still runs, including those whose caller gave up (they
  // are canceled as soon as no caller waits on this channel any more).
  std::size_t queries() const;

 private:
  void shutdown() override;
  std::shared_ptr<ResolverState> state_;
};

// lookup() as an asio operation: completes with the answer, or with
// Failure::canceled as soon as `handle->abort()` is called. `handle` is set
// before this returns.
template <class Token>
auto async_lookup(asio::io_context& io, const std::string& host, std::uint16_t port,
                  std::shared_ptr<Lookup>& handle, Token&& token) {
  return asio::async_initiate<Token, void(Answer)>(
      [&io, &host, port, &handle](auto handler) {
        using Handler = decltype(handler);
        auto h = std::make_shared<Handler>(std::move(handler));
        handle = asio::use_service<Resolver>(io).lookup(host, port,
                                                        [h](Answer a) { (*h)(std::move(a)); });
      },
      token);
}

}  // namespace lse::dns
