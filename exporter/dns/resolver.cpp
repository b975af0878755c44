// The c-ares channel driven by the io_context: each socket c-ares opens is
// watched with a posix::stream_descriptor (never owning it: c-ares closes
// it), one steady_timer follows ares_timeout(), and every completion is
// posted. A lookup whose caller gave up stays in c-ares until its own end,
// unless no caller waits on the channel any more: then ares_cancel() ends
// them all, so that an io_context with nothing else to do stops at once.
#include "dns/resolver.hpp"

#include <ares.h>
#include <netinet/in.h>
#include <poll.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace lse::dns {

namespace {

std::once_flag g_library_once;

// The longest an answer is reused, whatever its TTL: a moved endpoint is
// followed within this.
constexpr std::chrono::seconds kMaxCacheTtl{300};

bool readable_now(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0;
}

}  // namespace

std::optional<tcp::endpoint> ip_literal(std::string_view host, std::uint16_t port) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(std::string(host), ec);
  if (ec) return std::nullopt;
  return tcp::endpoint(address, port);
}

Answer failed(int ares_status, std::string_view host) {
  const std::string name(host);
  switch (ares_status) {
    case ARES_ENOTFOUND: return {{}, Failure::no_such_host, "no such host " + name};
    case ARES_ENODATA: return {{}, Failure::no_address, "no address for " + name};
    case ARES_ETIMEOUT:
      return {{}, Failure::timed_out, "no answer from the name servers for " + name};
    case ARES_ECONNREFUSED:
    case ARES_EREFUSED:
      return {{}, Failure::unreachable, "the name servers refused to resolve " + name};
    case ARES_ESERVFAIL: return {{}, Failure::other, "server failure resolving " + name};
    case ARES_ECANCELLED:
    case ARES_EDESTRUCTION: return {{}, Failure::canceled, "canceled resolving " + name};
    default:
      return {{}, Failure::other, std::string(ares_strerror(ares_status)) + " resolving " + name};
  }
}

// Everything the channel's callbacks reach: shared with the Lookups (weakly),
// so that one outliving its io_context finds nothing rather than a dangling
// channel.
struct ResolverState : std::enable_shared_from_this<ResolverState> {
  struct Watch {
    explicit Watch(asio::io_context& io, int fd) : descriptor(io, fd) {}
    asio::posix::stream_descriptor descriptor;
    bool read = false, write = false;       // what c-ares wants
    bool reading = false, writing = false;  // waits in flight
    bool closed = false;
  };
  // What c-ares' callback gets: the lookup, kept alive until it answers.
  struct Query {
    std::shared_ptr<Lookup> lookup;
    std::uint16_t port;
    std::weak_ptr<ResolverState> state;
  };

  explicit ResolverState(asio::io_context& io) : io(io), timer(io) {}

  asio::io_context& io;
  ares_channel channel = nullptr;
  int init_status = ARES_SUCCESS;
  asio::steady_timer timer;  // created before the channel: the reactor outlives this service
  std::unordered_map<int, std::shared_ptr<Watch>> watches;
  std::size_t waiting = 0;  // lookups whose caller still waits
  std::size_t queries = 0;  // lookups c-ares still runs
  // Addresses of names answered with a TTL, until it runs out (at most
  // kMaxCacheTtl): a target's new connections need no lookup meanwhile.
  struct Cached {
    std::vector<tcp::endpoint> endpoints;  // port 0
    std::chrono::steady_clock::time_point until;
  };
  std::unordered_map<std::string, Cached> cache;
  bool down = false;

  void init();
  void destroy();
  static void on_sock_state(void* data, ares_socket_t fd, int readable, int writable);
  static void on_answer(void* arg, int status, int timeouts, ares_addrinfo* result);
  void sock_state(int fd, bool readable, bool writable);
  void arm(const std::shared_ptr<Watch>& w, int fd);
  void ready(int fd, bool readable);
  void follow_timeout();
  void end(Lookup& lookup, Answer answer);
  void sweep();
};

void ResolverState::init() {
  std::call_once(g_library_once, [] { ares_library_init(ARES_LIB_INIT_ALL); });
  ares_options options{};
  options.sock_state_cb = &ResolverState::on_sock_state;
  options.sock_state_cb_data = this;
  init_status = ares_init_options(&channel, &options, ARES_OPT_SOCK_STATE_CB);
  if (init_status != ARES_SUCCESS) channel = nullptr;
}

// Every query ends (ARES_EDESTRUCTION) and every socket closes; the callers'
// handlers are destroyed with the io_context's, never run.
void ResolverState::destroy() {
  down = true;
  timer.cancel();
  if (channel) ares_destroy(channel);
  channel = nullptr;
  for (auto& [fd, w] : watches) {
    w->closed = true;
    boost::system::error_code ignored;
    w->descriptor.cancel(ignored);
    (void)w->descriptor.release();
  }
  watches.clear();
}

void ResolverState::on_sock_state(void* data, ares_socket_t fd, int readable, int writable) {
  static_cast<ResolverState*>(data)->sock_state(fd, readable != 0, writable != 0);
}

void ResolverState::sock_state(int fd, bool readable, bool writable) {
  auto it = watches.find(fd);
  if (!readable && !writable) {
    // c-ares closes the socket right after this: forget it first, so that a
    // new socket with the same number is a new registration.
    if (it == watches.end()) return;
    const std::shared_ptr<Watch> w = it->second;
    watches.erase(it);
    w->closed = true;
    boost::system::error_code ignored;
    w->descriptor.cancel(ignored);
    (void)w->descriptor.release();
    return;
  }
  if (it == watches.end()) it = watches.emplace(fd, std::make_shared<Watch>(io, fd)).first;
  it->second->read = readable;
  it->second->write = writable;
  arm(it->second, fd);
}

// Waits for what c-ares wants of the socket, while any query runs (an idle
// socket c-ares keeps open must not keep the io_context running).
void ResolverState::arm(const std::shared_ptr<Watch>& w, int fd) {
  if (down || w->closed || queries == 0) return;
  auto self = weak_from_this();
  if (w->read && !w->reading) {
    w->reading = true;
    w->descriptor.async_wait(asio::posix::stream_descriptor::wait_read,
                             [self, w, fd](boost::system::error_code ec) {
                               w->reading = false;
                               auto s = self.lock();
                               if (!s || w->closed) return;
                               if (ec) {
                                 s->arm(w, fd);  // canceled while idle: again if a query came
                                 return;
                               }
                               s->ready(fd, true);
                             });
  }
  if (w->write && !w->writing) {
    w->writing = true;
    w->descriptor.async_wait(asio::posix::stream_descriptor::wait_write,
                             [self, w, fd](boost::system::error_code ec) {
                               w->writing = false;
                               auto s = self.lock();
                               if (!s || w->closed) return;
                               if (ec) {
                                 s->arm(w, fd);  // canceled while idle: again if a query came
                                 return;
                               }
                               s->ready(fd, false);
                             });
  }
}

// c-ares reads (or writes) the socket; it may close it meanwhile. A TCP
// answer can take several reads, and the reactor's edge announces only new
// data: read again while the socket has some.
void ResolverState::ready(int fd, bool readable) {
  if (readable) {
    constexpr int kMaxRounds = 16;
    for (int i = 0; i < kMaxRounds && channel && watches.count(fd) != 0; ++i) {
      ares_process_fd(channel, fd, ARES_SOCKET_BAD);
      if (watches.count(fd) == 0 || !readable_now(fd)) break;
    }
  } else if (channel) {
    ares_process_fd(channel, ARES_SOCKET_BAD, fd);
  }
  if (auto it = watches.find(fd); it != watches.end()) arm(it->second, fd);
  follow_timeout();
}

// The timer follows c-ares' next timeout while a query runs.
void ResolverState::follow_timeout() {
  if (down || !channel || queries == 0) {
    timer.cancel();
    // Sockets c-ares keeps open between queries must not keep the
    // io_context running; lookup() arms them again.
    for (auto& [fd, w] : watches) {
      boost::system::error_code ignored;
      w->descriptor.cancel(ignored);
    }
    return;
  }
  timeval buf{};
  const timeval* tv = ares_timeout(channel, nullptr, &buf);
  const auto wait = tv ? std::chrono::seconds(tv->tv_sec) + std::chrono::microseconds(tv->tv_usec)
                       : std::chrono::microseconds(std::chrono::seconds(1));
  timer.expires_after(wait);
  timer.async_wait([self = weak_from_this()](boost::system::error_code ec) {
    auto s = self.lock();
    if (ec || !s || !s->channel) return;
    ares_process_fd(s->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    s->follow_timeout();
  });
}

void ResolverState::on_answer(void* arg, int status, int /*timeouts*/, ares_addrinfo* result) {
  std::unique_ptr<Query> q(static_cast<Query*>(arg));
  Answer answer;
  int ttl = std::numeric_limits<int>::max();
  if (status == ARES_SUCCESS && result != nullptr) {
    for (const ares_addrinfo_node* n = result->nodes; n != nullptr; n = n->ai_next) {
      ttl = std::min(ttl, n->ai_ttl);
      if (n->ai_family == AF_INET) {
        const auto* sa = reinterpret_cast<const sockaddr_in*>(n->ai_addr);
        asio::ip::address_v4::bytes_type b;
        std::memcpy(b.data(), &sa->sin_addr, b.size());
        answer.endpoints.emplace_back(asio::ip::address_v4(b), q->port);
      } else if (n->ai_family == AF_INET6) {
        const auto* sa = reinterpret_cast<const sockaddr_in6*>(n->ai_addr);
        asio::ip::address_v6::bytes_type b;
        std::memcpy(b.data(), &sa->sin6_addr, b.size());
        answer.endpoints.emplace_back(asio::ip::address_v6(b, sa->sin6_scope_id), q->port);
      }
    }
  }
  if (result != nullptr) ares_freeaddrinfo(result);
  if (status == ARES_SUCCESS && answer.endpoints.empty()) status = ARES_ENODATA;
  if (status != ARES_SUCCESS) answer = failed(status, q->lookup->host_);
  auto s = q->state.lock();
  if (!s) return;
  --s->queries;
  if (status == ARES_SUCCESS && ttl > 0) {
    const auto keep = std::min<std::chrono::seconds>(std::chrono::seconds(ttl), kMaxCacheTtl);
    ResolverState::Cached& c = s->cache[q->lookup->host_];
    c.endpoints = answer.endpoints;
    for (auto& e : c.endpoints) e.port(0);
    c.until = std::chrono::steady_clock::now() + keep;
  }
  s->end(*q->lookup, std::move(answer));
}

// The lookup's callback, posted; the channel is swept once no caller waits.
void ResolverState::end(Lookup& lookup, Answer answer) {
  if (lookup.ended_) return;
  lookup.ended_ = true;
  --waiting;
  if (!down) {
    asio::post(io, [done = std::move(lookup.done_), a = std::move(answer)]() mutable {
      done(std::move(a));
    });
  }
  lookup.done_ = nullptr;
  if (waiting == 0 && queries > 0)
    asio::post(io, [self = weak_from_this()] {
      if (auto s = self.lock()) s->sweep();
    });
}

// Lookups nobody waits for: ended (their callbacks find them ended).
void ResolverState::sweep() {
  if (waiting == 0 && queries > 0 && channel && !down) ares_cancel(channel);
  follow_timeout();
}

Lookup::Lookup(std::weak_ptr<ResolverState> state, std::string host,
               std::function<void(Answer)> done)
    : state_(std::move(state)), host_(std::move(host)), done_(std::move(done)) {}

Lookup::~Lookup() = default;

void Lookup::abort() {
  if (ended_) return;
  if (auto s = state_.lock()) s->end(*this, failed(ARES_ECANCELLED, host_));
}

Resolver::Resolver(asio::io_context& io)
    : service(io), state_(std::make_shared<ResolverState>(io)) {
  state_->init();
}

Resolver::~Resolver() { state_->destroy(); }

void Resolver::shutdown() { state_->destroy(); }

void Resolver::set_servers(const std::string& csv) {
  if (!state_->channel) throw std::runtime_error("dns: no resolver");
  const int status = ares_set_servers_ports_csv(state_->channel, csv.c_str());
  if (status != ARES_SUCCESS)
    throw std::runtime_error("dns: name servers '" + csv + "': " + ares_strerror(status));
}

std::size_t Resolver::queries() const { return state_->queries; }

std::shared_ptr<Lookup> Resolver::lookup(const std::string& host, std::uint16_t port,
                                         std::function<void(Answer)> done) {
  ResolverState& s = *state_;
  auto lookup = std::make_shared<Lookup>(state_, host, std::move(done));
  ++s.waiting;
  if (!s.channel || s.down) {
    s.end(*lookup, failed(s.channel ? ARES_EDESTRUCTION : s.init_status, host));
    return lookup;
  }
  if (auto it = s.cache.find(host); it != s.cache.end()) {
    if (std::chrono::steady_clock::now() < it->second.until) {
      Answer cached{it->second.endpoints, Failure::none, ""};
      for (auto& e : cached.endpoints) e.port(port);
      s.end(*lookup, std::move(cached));
      return lookup;
    }
    s.cache.erase(it);
  }
  ++s.queries;
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  // The callback may run inside this call (an /etc/hosts entry).
  ares_getaddrinfo(s.channel, host.c_str(), nullptr, &hints, &ResolverState::on_answer,
                   new ResolverState::Query{lookup, port, state_});
  for (auto& [fd, w] : s.watches) s.arm(w, fd);
  s.follow_timeout();
  return lookup;
}

}  // namespace lse::dns
