// The listener of the HTTP server: listen address -> bound acceptor.
#include "server/listener.hpp"

#include <boost/asio/ip/v6_only.hpp>
#include <boost/beast/core/error.hpp>
#include <stdexcept>

#include "net/listen_address.hpp"

namespace lse::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

// The address to bind, in the one grammar of net/listen_address.hpp.
net::ListenAddress parse_listen(const std::string& listen) {
  std::string error;
  auto address = net::parse_listen_address(listen, &error);
  if (!address) throw std::runtime_error("invalid listen address \"" + listen + "\": " + error);
  return *address;
}

// Binding a listen address: a new acceptor of `ioc`, bound and listening,
// or std::runtime_error naming the address. Used by start() and rebind(),
// which may run on another thread than the server's (the acceptor is not
// shared with it until it is handed over).
class Binder {
 public:
  Binder(asio::io_context& ioc, std::string listen) : ioc_(ioc), listen_(std::move(listen)) {}

  std::shared_ptr<tcp::acceptor> bind() {
    const net::ListenAddress address = parse_listen(listen_);
    const auto port = static_cast<unsigned short>(std::stoi(address.port));
    acceptor_ = std::make_shared<tcp::acceptor>(ioc_);
    bind_and_listen(address.host.empty() ? any_interface_endpoint(port)
                                         : host_endpoint(address, port));
    return std::move(acceptor_);
  }

 private:
  struct Endpoint {
    tcp::endpoint endpoint;
    bool dual_stack = false;  // IPv6 any that also takes IPv4
  };

  std::runtime_error listen_error(const beast::error_code& ec) {
    beast::error_code ignored;
    acceptor_->close(ignored);
    return std::runtime_error("cannot listen on " + listen_ + ": " + ec.message());
  }

  // All interfaces: IPv6 any with v6_only off also takes IPv4; hosts
  // without IPv6 fall back to IPv4 any. Leaves the acceptor open when v6 works.
  Endpoint any_interface_endpoint(unsigned short port_number) {
    beast::error_code ec;
    acceptor_->open(tcp::v6(), ec);
    if (!ec) return {tcp::endpoint(tcp::v6(), port_number), true};
    return {tcp::endpoint(tcp::v4(), port_number), false};
  }

  // One host: an IP literal as is, a name through the resolver.
  Endpoint host_endpoint(const net::ListenAddress& address, unsigned short port_number) {
    beast::error_code ec;
    auto ip = asio::ip::make_address(address.host, ec);
    if (!ec) return {tcp::endpoint(ip, port_number), false};
    ec.clear();
    tcp::resolver resolver(ioc_);
    auto results = resolver.resolve(address.host, address.port, ec);
    if (!ec && results.empty()) ec = asio::error::host_not_found;
    if (ec) throw listen_error(ec);
    return {results.begin()->endpoint(), false};
  }

  // Open (unless already open), options, bind, listen.
  void bind_and_listen(const Endpoint& where) {
    beast::error_code ec;
    if (!acceptor_->is_open()) acceptor_->open(where.endpoint.protocol(), ec);
    if (ec) throw listen_error(ec);
    if (where.dual_stack) acceptor_->set_option(asio::ip::v6_only(false), ec);
    ec.clear();
    // Lets a restarted exporter bind while old connections sit in TIME_WAIT;
    // on Linux it does not let two listeners share the port.
    acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
    acceptor_->bind(where.endpoint, ec);
    if (ec) throw listen_error(ec);
    acceptor_->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw listen_error(ec);
  }

  asio::io_context& ioc_;
  std::string listen_;
  std::shared_ptr<tcp::acceptor> acceptor_;
};

}  // namespace

std::shared_ptr<tcp::acceptor> bind_listener(asio::io_context& ioc, const std::string& listen) {
  return Binder(ioc, listen).bind();
}

}  // namespace lse::server
