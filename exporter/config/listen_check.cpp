// try_listen (see listen_check.hpp): getaddrinfo, socket, bind, close.
#include "config/listen_check.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace lse::config::detail {
namespace {

// "127.0.0.1:9687", "[::1]:9687", ":9687" as the message shows it.
std::string shown(const net::ListenAddress& a) {
  if (a.host.find(':') != std::string::npos) return fmt::format("[{}]:{}", a.host, a.port);
  return fmt::format("{}:{}", a.host, a.port);
}

// Binds one socket of `family` to `addr` and closes it again: 0, or the
// errno of socket() or bind().
int bind_once(int family, const sockaddr* addr, socklen_t len, bool dual_stack) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  const int on = 1, off = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (dual_stack) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  const int error = ::bind(fd, addr, len) == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

std::optional<ListenProblem> bind_error(const net::ListenAddress& address, int error) {
  if (error == 0) return std::nullopt;
  return ListenProblem{fmt::format("cannot bind {}: {}", shown(address), std::strerror(error)),
                       error == EADDRINUSE};
}

int bind_any_interface(in_port_t port) {
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_addr = in6addr_any;
  v6.sin6_port = htons(port);
  const int error = bind_once(AF_INET6, reinterpret_cast<const sockaddr*>(&v6), sizeof v6, true);
  if (error != EAFNOSUPPORT) return error;
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_addr.s_addr = htonl(INADDR_ANY);
  v4.sin_port = htons(port);
  return bind_once(AF_INET, reinterpret_cast<const sockaddr*>(&v4), sizeof v4, false);
}

}  // namespace

std::optional<ListenProblem> try_listen(const net::ListenAddress& address) {
  if (address.host.empty())
    return bind_error(address, bind_any_interface(static_cast<in_port_t>(std::stoi(address.port))));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(address.host.c_str(), address.port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr)
    return ListenProblem{fmt::format("cannot resolve '{}': {}", address.host,
                                     rc != 0 ? ::gai_strerror(rc) : "no address"),
                         false};
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
  // The first address, as the server's resolver takes it.
  return bind_error(address, bind_once(found->ai_family, found->ai_addr, found->ai_addrlen, false));
}

}  // namespace lse::config::detail
