// Binding the HTTP server's listen address (the one grammar of
// net/listen_address.hpp): all interfaces dual-stack where IPv6 works, an IP
// literal as is, a host name through the resolver. No serving here.
#pragma once
#include <utility>  // before Asio with GCC 12 / C++20 (STYLE.md)

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>

namespace lse::server {

// A new acceptor of `ioc`, bound to `listen` and listening, or
// std::runtime_error naming the address. Used by start() and rebind(), which
// may run on another thread than the server's (the acceptor is not shared
// with it until it is handed over).
std::shared_ptr<boost::asio::ip::tcp::acceptor> bind_listener(boost::asio::io_context& ioc,
                                                              const std::string& listen);

}  // namespace lse::server
