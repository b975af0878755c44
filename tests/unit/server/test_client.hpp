// A blocking HTTP client socket for the server tests, on 127.0.0.1 (or
// another loopback address, for the per-address cap), that gives up after
// a few seconds instead of hanging a test when the server misbehaves.
#pragma once
#include <utility>  // before Asio with GCC 12 / C++20

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <string>
#include <vector>

namespace lse::server::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using ClientResponse = http::response<http::string_body>;

class Client {
 public:
  // `from`: the local address to connect from ("127.0.0.2": another peer
  // address as far as the server can tell).
  explicit Client(unsigned short port, const char* from = nullptr) : socket_(ioc_) {
    socket_.open(tcp::v4());
    if (from) socket_.bind(tcp::endpoint(asio::ip::make_address(from), 0));
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    timeval tv{5, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  ClientResponse request(http::verb verb, const std::string& target,
                         std::vector<std::pair<std::string, std::string>> headers = {},
                         std::string body = {}, bool keep_alive = true) {
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = std::move(body);
    req.prepare_payload();
    req.keep_alive(keep_alive);
    http::write(socket_, req);
    return read_response(verb == http::verb::head);
  }

  ClientResponse read_response(bool head = false) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    parser.skip(head);
    http::read(socket_, buffer_, parser);
    return parser.release();
  }

  void send_raw(const std::string& bytes) { asio::write(socket_, asio::buffer(bytes)); }

  // Everything until the server closes (or the receive timeout).
  std::string read_all() {
    std::string out(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.consume(buffer_.size());
    std::array<char, 4096> chunk;
    for (;;) {
      boost::system::error_code ec;
      std::size_t n = socket_.read_some(asio::buffer(chunk), ec);
      out.append(chunk.data(), n);
      if (ec) {
        last_error_ = ec;
        break;
      }
    }
    return out;
  }

  // True when the server closed the connection (EOF or reset).
  bool closed_by_server() {
    read_all();
    return last_error_ == asio::error::eof || last_error_ == asio::error::connection_reset;
  }

  // True when nothing (no close, no bytes) arrives within `wait`: the
  // server still holds the connection open.
  bool still_open(std::chrono::milliseconds wait = std::chrono::milliseconds(200)) {
    pollfd p{socket_.native_handle(), POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(wait.count())) == 0;
  }

  tcp::socket& socket() { return socket_; }

 private:
  asio::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
  boost::system::error_code last_error_;
};

}  // namespace lse::server::test
