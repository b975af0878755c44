// An in-process HTTP/2 (and HTTP/1.1) server for the client's h2 tests:
// blocking, on 127.0.0.1:0, in its own thread, plain or TLS with the test
// PKI and an ALPN choice of its own. Frames are written by hand (a 9-byte
// header and the payload; header blocks as HPACK literals without indexing),
// so a script can send exactly what a test plants: DATA split across writes,
// RST_STREAM mid-body, a window that never opens. It reads the client's
// frames just enough to find each request's end, acknowledges the client's
// SETTINGS and records what it saw (stream ids, the request's fields).
// Bounded: reads time out after 5 s, and the destructor unblocks an accept.
#pragma once
#include <utility>  // before asio with GCC 12
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../web/test_pki.hpp"

namespace lse::test {

inline const lse::testing::TestPki& h2_pki() {
  static const lse::testing::TestPki p = [] {
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("lse-h2-peer-" + std::to_string(::getpid())))
            .string();
    std::filesystem::create_directories(dir);
    return lse::testing::make_test_pki(dir);
  }();
  return p;
}

namespace h2frame {
constexpr std::uint8_t kData = 0, kHeaders = 1, kRstStream = 3, kSettings = 4, kPing = 6,
                       kGoaway = 7, kWindowUpdate = 8;
constexpr std::uint8_t kEndStream = 1, kAck = 1, kEndHeaders = 4;

inline void put32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}

inline std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                         std::string_view payload) {
  std::string out;
  const auto n = static_cast<std::uint32_t>(payload.size());
  out += static_cast<char>((n >> 16) & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>(type);
  out += static_cast<char>(flags);
  put32(out, stream & 0x7fffffffu);
  out.append(payload);
  return out;
}

// An HPACK integer with an n-bit prefix (RFC 7541 §5.1).
inline void hpack_int(std::string& out, std::uint8_t first, int prefix_bits, std::size_t v) {
  const std::size_t max = (std::size_t{1} << prefix_bits) - 1;
  if (v < max) {
    out += static_cast<char>(first | v);
    return;
  }
  out += static_cast<char>(first | max);
  v -= max;
  while (v >= 128) {
    out += static_cast<char>((v % 128) + 128);
    v /= 128;
  }
  out += static_cast<char>(v);
}

// A header block of literal fields without indexing, new names (§6.2.2).
inline std::string header_block(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    out += '\0';
    hpack_int(out, 0, 7, name.size());
    out += name;
    hpack_int(out, 0, 7, value.size());
    out += value;
  }
  return out;
}
}  // namespace h2frame

// One accepted connection's bytes, plain or TLS, blocking.
class H2PeerConn {
 public:
  using Fields = std::vector<std::pair<std::string, std::string>>;

  H2PeerConn(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}

  void write(std::string_view bytes) {
    while (!bytes.empty()) {
      const long n = ssl_ ? SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()))
                          : ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("peer: write failed");
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    sent_at.push_back(std::chrono::steady_clock::now());
  }

  // At least one more byte into in_; false at the end of the connection.
  bool fill() {
    char buf[16384];
    const long n = ssl_ ? SSL_read(ssl_, buf, sizeof buf) : ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  // HTTP/1.1: a request head and its Content-Length body.
  std::string read_http1_request() {
    while (in_.find("\r\n\r\n") == std::string::npos)
      if (!fill()) throw std::runtime_error("peer: no request");
    const std::size_t end = in_.find("\r\n\r\n") + 4;
    std::string text = in_.substr(0, end);
    in_.erase(0, end);
    return text;
  }

  // HTTP/2: the connection preface (the client's) and our SETTINGS first.
  void start_h2(const std::vector<std::pair<std::uint16_t, std::uint32_t>>& settings = {}) {
    while (in_.size() < 24)
      if (!fill()) throw std::runtime_error("peer: no preface");
    if (in_.compare(0, 24, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") != 0)
      throw std::runtime_error("peer: bad preface");
    in_.erase(0, 24);
    std::string payload;
    for (const auto& [id, value] : settings) {
      payload += static_cast<char>(id >> 8);
      payload += static_cast<char>(id & 0xff);
      h2frame::put32(payload, value);
    }
    write(h2frame::frame(h2frame::kSettings, 0, 0, payload));
  }

  // Reads frames until a request stream ended (END_STREAM); returns its id.
  // Its header block's size and body bytes are kept; the client's SETTINGS
  // are acknowledged.
  std::uint32_t read_h2_request() {
    for (;;) {
      const auto f = next_frame();
      if (f.type == h2frame::kSettings && (f.flags & h2frame::kAck) == 0)
        write(h2frame::frame(h2frame::kSettings, h2frame::kAck, 0, ""));
      if (f.type == h2frame::kData) body += f.payload;
      if (f.type == h2frame::kHeaders) {
        header_block = f.payload;
        body.clear();
      }
      if ((f.type == h2frame::kHeaders || f.type == h2frame::kData) &&
          (f.flags & h2frame::kEndStream) != 0) {
        streams.push_back(f.stream);
        return f.stream;
      }
    }
  }

  // Reads frames until the client's HEADERS (its body held back).
  std::uint32_t read_h2_headers() {
    for (;;) {
      const auto f = next_frame();
      if (f.type == h2frame::kSettings && (f.flags & h2frame::kAck) == 0)
        write(h2frame::frame(h2frame::kSettings, h2frame::kAck, 0, ""));
      if (f.type == h2frame::kHeaders) {
        header_block = f.payload;
        streams.push_back(f.stream);
        return f.stream;
      }
    }
  }

  // Reads frames until the client's WINDOW_UPDATE for `stream`; returns its
  // increment.
  std::uint32_t read_window_update(std::uint32_t stream) {
    for (;;) {
      const auto f = next_frame();
      if (f.type == h2frame::kWindowUpdate && f.stream == stream && f.payload.size() == 4) {
        const auto b = [&](std::size_t i) { return static_cast<std::uint8_t>(f.payload[i]); };
        return ((std::uint32_t{b(0)} << 24) | (std::uint32_t{b(1)} << 16) |
                (std::uint32_t{b(2)} << 8) | b(3)) &
               0x7fffffffu;
      }
    }
  }

  void send_headers(std::uint32_t stream, int status, Fields fields = {}, bool end = false) {
    fields.insert(fields.begin(), {":status", std::to_string(status)});
    write(h2frame::frame(h2frame::kHeaders,
                         static_cast<std::uint8_t>(h2frame::kEndHeaders | (end ? 1 : 0)), stream,
                         h2frame::header_block(fields)));
  }
  void send_data(std::uint32_t stream, std::string_view bytes, bool end = false) {
    write(h2frame::frame(h2frame::kData, end ? h2frame::kEndStream : 0, stream, bytes));
  }
  void send_goaway(std::uint32_t last_stream, std::uint32_t code) {
    std::string payload;
    h2frame::put32(payload, last_stream);
    h2frame::put32(payload, code);
    write(h2frame::frame(h2frame::kGoaway, 0, 0, payload));
  }
  void send_rst(std::uint32_t stream, std::uint32_t code) {
    std::string payload;
    h2frame::put32(payload, code);
    write(h2frame::frame(h2frame::kRstStream, 0, stream, payload));
  }

  // Until the client closes, or 5 s.
  void hang() {
    while (fill()) {
    }
  }

  struct Frame {
    std::uint8_t type = 0, flags = 0;
    std::uint32_t stream = 0;
    std::string payload;
  };
  Frame next_frame() {
    while (in_.size() < 9)
      if (!fill()) throw std::runtime_error("peer: connection ended");
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(in_[i]); };
    const std::size_t n = (std::size_t{byte(0)} << 16) | (std::size_t{byte(1)} << 8) | byte(2);
    while (in_.size() < 9 + n)
      if (!fill()) throw std::runtime_error("peer: connection ended");
    Frame f;
    f.type = byte(3);
    f.flags = byte(4);
    f.stream = ((std::uint32_t{byte(5)} << 24) | (std::uint32_t{byte(6)} << 16) |
                (std::uint32_t{byte(7)} << 8) | byte(8)) &
               0x7fffffffu;
    f.payload = in_.substr(9, n);
    in_.erase(0, 9 + n);
    return f;
  }

  std::vector<std::uint32_t> streams;                          // request streams, in order
  std::string header_block;                                    // of the latest request
  std::string body;                                            // of the latest request
  std::vector<std::chrono::steady_clock::time_point> sent_at;  // after each write

 private:
  int fd_;
  SSL* ssl_;
  std::string in_;
};

// Serves `connections` connections one after another with `script`.
class H2Peer {
 public:
  using Script = std::function<void(H2PeerConn&)>;
  struct Options {
    bool tls = true;
    std::vector<std::string> alpn = {"h2"};  // what the server picks from, in its order
    int connections = 1;
  };

  H2Peer(Script script, Options options) : options_(std::move(options)) {
    // OpenSSL writes with write(): a client gone must not kill the test binary.
    std::signal(SIGPIPE, SIG_IGN);
    if (options_.tls) {
      ctx_ = SSL_CTX_new(TLS_server_method());
      SSL_CTX_use_certificate_chain_file(ctx_, h2_pki().server_cert.c_str());
      SSL_CTX_use_PrivateKey_file(ctx_, h2_pki().server_key.c_str(), SSL_FILETYPE_PEM);
      SSL_CTX_set_alpn_select_cb(ctx_, &H2Peer::select, this);
    }
    thread_ = std::thread([this, script = std::move(script)] { serve(script); });
  }
  ~H2Peer() {
    stop();
    if (ctx_) SSL_CTX_free(ctx_);
  }
  // Ends the server: waits for the script in progress, unblocks an accept.
  void stop() {
    if (!thread_.joinable()) return;
    stopping_ = true;
    boost::system::error_code ec;
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket poke(io);
    poke.connect({boost::asio::ip::make_address("127.0.0.1"), port()}, ec);
    thread_.join();
  }
  H2Peer(const H2Peer&) = delete;
  H2Peer& operator=(const H2Peer&) = delete;

  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  std::string url() const {
    return std::string(options_.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port()) +
           "/v1";
  }
  int accepted() const { return accepted_; }
  // Whether a ClientHello offered protocols by ALPN.
  bool alpn_offered() const { return alpn_offered_; }
  // What the scripts recorded (the server is stopped first).
  std::vector<H2PeerConn> conns() {
    stop();
    return done_;
  }

 private:
  static int select(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen,
                    const unsigned char* in, unsigned int inlen, void* arg) {
    auto* self = static_cast<H2Peer*>(arg);
    self->alpn_offered_ = true;
    for (const std::string& mine : self->options_.alpn) {
      for (unsigned int i = 0; i < inlen; i += 1u + in[i]) {
        if (in[i] == mine.size() &&
            std::string_view(reinterpret_cast<const char*>(in + i + 1), in[i]) == mine) {
          *out = in + i + 1;
          *outlen = in[i];
          return SSL_TLSEXT_ERR_OK;
        }
      }
    }
    return SSL_TLSEXT_ERR_NOACK;
  }

  void serve(const Script& script) {
    for (int i = 0; i < options_.connections; ++i) {
      boost::asio::ip::tcp::socket s(io_);
      boost::system::error_code ec;
      acceptor_.accept(s, ec);
      if (ec || stopping_) return;
      ++accepted_;
      s.set_option(boost::asio::ip::tcp::no_delay(true), ec);
      const int fd = s.native_handle();
      timeval tv{5, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      SSL* ssl = nullptr;
      if (ctx_) {
        ssl = SSL_new(ctx_);
        SSL_set_fd(ssl, fd);
        if (SSL_accept(ssl) != 1) {
          SSL_free(ssl);
          continue;
        }
      }
      H2PeerConn conn(fd, ssl);
      try {
        script(conn);
      } catch (const std::exception&) {
        // The client went away mid-script: the test's assertions say if it should have.
      }
      if (ssl) {
        SSL_shutdown(ssl);
        SSL_free(ssl);
      }
      const std::lock_guard lock(mu_);
      done_.push_back(std::move(conn));
    }
  }

  Options options_;
  SSL_CTX* ctx_ = nullptr;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_{io_, {boost::asio::ip::make_address("127.0.0.1"), 0}};
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::atomic<bool> alpn_offered_{false};
  std::mutex mu_;
  std::vector<H2PeerConn> done_;
  std::thread thread_;
};

// An HTTP proxy for one CONNECT: reads the CONNECT head (kept for the
// test), connects to 127.0.0.1:`target_port`, answers 200 and relays bytes
// both ways until either side closes (or 5 s of silence).
class TunnelProxy {
 public:
  explicit TunnelProxy(unsigned short target_port) {
    thread_ = std::thread([this, target_port] { serve(target_port); });
  }
  ~TunnelProxy() {
    boost::system::error_code ec;
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket poke(io);
    poke.connect({boost::asio::ip::make_address("127.0.0.1"), port()}, ec);
    if (thread_.joinable()) thread_.join();
  }
  TunnelProxy(const TunnelProxy&) = delete;
  TunnelProxy& operator=(const TunnelProxy&) = delete;

  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  std::string head() {
    const std::lock_guard lock(mu_);
    return head_;
  }

 private:
  void serve(unsigned short target_port) {
    boost::asio::ip::tcp::socket client(io_), target(io_);
    boost::system::error_code ec;
    acceptor_.accept(client, ec);
    if (ec) return;
    std::string in;
    char buf[16384];
    while (in.find("\r\n\r\n") == std::string::npos) {
      const std::size_t n = client.read_some(boost::asio::buffer(buf), ec);
      if (ec) return;
      in.append(buf, n);
    }
    {
      const std::lock_guard lock(mu_);
      head_ = in;
    }
    target.connect({boost::asio::ip::make_address("127.0.0.1"), target_port}, ec);
    if (ec) return;
    const std::string ok = "HTTP/1.1 200 Connection established\r\n\r\n";
    boost::asio::write(client, boost::asio::buffer(ok), ec);
    relay(client.native_handle(), target.native_handle());
  }

  static void relay(int a, int b) {
    pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    char buf[16384];
    while (::poll(fds, 2, 5000) > 0) {
      for (int i = 0; i < 2; ++i) {
        if (fds[i].revents == 0) continue;
        const long n = ::recv(fds[i].fd, buf, sizeof buf, 0);
        if (n <= 0) return;
        if (::send(fds[1 - i].fd, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) return;
      }
    }
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_{io_, {boost::asio::ip::make_address("127.0.0.1"), 0}};
  std::mutex mu_;
  std::string head_;
  std::thread thread_;
};

}  // namespace lse::test
