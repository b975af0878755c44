// A scripted DNS server for tests: UDP on 127.0.0.1 and a free port, on its
// own thread. Each name is answered as scripted (an IPv4 address or
// NXDOMAIN, after a delay) or never; AAAA questions get an empty answer.
#pragma once
#include <utility>
#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace lse::dns::testing {

namespace asio = boost::asio;
using udp = asio::ip::udp;

struct Script {
  std::optional<std::string> ipv4;  // nullopt: NXDOMAIN
  std::chrono::milliseconds delay{0};
  bool never = false;  // no answer at all
};

class ScriptedDns {
 public:
  explicit ScriptedDns(std::map<std::string, Script> script)
      : script_(std::move(script)),
        socket_(io_, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    receive();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ScriptedDns() {
    io_.stop();
    thread_.join();
  }
  ScriptedDns(const ScriptedDns&) = delete;
  ScriptedDns& operator=(const ScriptedDns&) = delete;

  // For Resolver::set_servers().
  std::string server() const {
    return "127.0.0.1:" + std::to_string(socket_.local_endpoint().port());
  }
  int questions() const { return questions_.load(); }

 private:
  void receive() {
    socket_.async_receive_from(
        asio::buffer(buf_), from_, [this](boost::system::error_code ec, std::size_t n) {
          if (ec) return;
          ++questions_;
          answer(std::vector<std::uint8_t>(buf_.begin(), buf_.begin() + static_cast<long>(n)),
                 from_);
          receive();
        });
  }

  // The question's name ("a.b.test") and where the question section ends.
  static std::optional<std::pair<std::string, std::size_t>> question(
      const std::vector<std::uint8_t>& q) {
    std::size_t i = 12;
    std::string name;
    while (i < q.size() && q[i] != 0) {
      const std::size_t len = q[i];
      if (i + 1 + len > q.size()) return std::nullopt;
      if (!name.empty()) name += '.';
      name.append(reinterpret_cast<const char*>(&q[i + 1]), len);
      i += 1 + len;
    }
    if (i + 5 > q.size()) return std::nullopt;
    return std::pair{name, i + 5};  // the root label, QTYPE, QCLASS
  }

  void answer(std::vector<std::uint8_t> q, udp::endpoint to) {
    const auto parsed = question(q);
    if (!parsed) return;
    const auto& [name, end] = *parsed;
    const auto it = script_.find(name);
    const Script s = it == script_.end() ? Script{} : it->second;
    if (s.never) return;
    const std::uint16_t qtype = static_cast<std::uint16_t>(q[end - 4] << 8 | q[end - 3]);
    std::vector<std::uint8_t> r(q.begin(), q.begin() + static_cast<long>(end));
    r[2] = 0x81;                  // QR, RD
    r[3] = s.ipv4 ? 0x80 : 0x83;  // RA; NOERROR or NXDOMAIN
    r[6] = r[7] = r[8] = r[9] = r[10] = r[11] = 0;
    if (s.ipv4 && qtype == 1) {
      r[7] = 1;
      const auto a = asio::ip::make_address_v4(*s.ipv4).to_bytes();
      const std::uint8_t rr[] = {0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, a[0], a[1], a[2], a[3]};
      r.insert(r.end(), std::begin(rr), std::end(rr));
    }
    auto timer = std::make_shared<asio::steady_timer>(io_, s.delay);
    timer->async_wait([this, timer, r = std::move(r), to](boost::system::error_code ec) {
      if (!ec) socket_.send_to(asio::buffer(r), to, 0, ec);
    });
  }

  std::map<std::string, Script> script_;
  asio::io_context io_;
  udp::socket socket_;
  std::array<std::uint8_t, 1500> buf_{};
  udp::endpoint from_;
  std::atomic<int> questions_{0};
  std::thread thread_;
};

}  // namespace lse::dns::testing
