// An in-process peer for client and prober tests: a blocking Asio server on
// 127.0.0.1:0 in its own thread. Each accepted connection runs the test's
// script, which reads the request and answers with whatever the test needs:
// a status, headers, SSE bytes with delays, a close, a hang. Bounded: a hang
// ends when the client closes, and the destructor unblocks a pending accept.
#pragma once
#include <utility>  // before asio with GCC 12
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace lse::test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// One chunk of a chunked body: the size line, the payload, CRLF.
inline std::string chunked(std::string_view payload) {
  char head[32];
  std::snprintf(head, sizeof head, "%zx\r\n", payload.size());
  return head + std::string(payload) + "\r\n";
}

// When a script really acted, on the steady clock. A loaded machine may wake
// the peer late, so a test checks a measured time against these instants, not
// against the pause the script asked for.
struct PeerTimes {
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Send {
    TimePoint begin, end;  // around the write
  };
  std::vector<TimePoint> requests;  // each request read to its end
  std::vector<Send> sends;

  // Seconds from `a` to `b`.
  static double seconds(TimePoint a, TimePoint b) {
    return std::chrono::duration<double>(b - a).count();
  }
};

class PeerLog {
 public:
  void request_read() {
    const auto now = std::chrono::steady_clock::now();
    const std::lock_guard lock(mu_);
    times_.requests.push_back(now);
  }
  void sent(PeerTimes::TimePoint begin, PeerTimes::TimePoint end) {
    {
      const std::lock_guard lock(mu_);
      times_.sends.push_back({begin, end});
    }
    logged_.notify_all();
  }
  // The times so far, once `sends` writes are logged (the client may read a
  // write before the peer's thread notes that it returned), or after 5 s.
  PeerTimes snapshot(std::size_t sends) const {
    std::unique_lock lock(mu_);
    logged_.wait_for(lock, std::chrono::seconds(5), [&] { return times_.sends.size() >= sends; });
    return times_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable logged_;
  PeerTimes times_;
};

// One accepted connection, as a script sees it.
class PeerConn {
 public:
  explicit PeerConn(tcp::socket& socket, PeerLog* log = nullptr) : socket_(socket), log_(log) {}

  // Reads one request head ("...\r\n\r\n") and its Content-Length body;
  // returns both.
  std::string read_request() {
    const std::size_t head = asio::read_until(socket_, buf_, "\r\n\r\n");
    const std::string text(asio::buffers_begin(buf_.data()),
                           asio::buffers_begin(buf_.data()) + head);
    buf_.consume(head);
    std::size_t length = 0;
    if (auto p = text.find("Content-Length: "); p != std::string::npos)
      length = std::stoul(text.substr(p + 16));
    if (length > buf_.size())
      asio::read(socket_, buf_, asio::transfer_exactly(length - buf_.size()));
    const std::string body(asio::buffers_begin(buf_.data()),
                           asio::buffers_begin(buf_.data()) + length);
    buf_.consume(length);
    if (log_ != nullptr) log_->request_read();
    return text + body;
  }

  void send(std::string_view bytes) {
    const auto begin = std::chrono::steady_clock::now();
    asio::write(socket_, asio::buffer(bytes.data(), bytes.size()));
    if (log_ != nullptr) log_->sent(begin, std::chrono::steady_clock::now());
  }

  // A 200 text/event-stream head with a chunked body.
  void send_stream_head(std::string_view content_type = "text/event-stream") {
    send("HTTP/1.1 200 OK\r\nContent-Type: " + std::string(content_type) +
         "\r\nTransfer-Encoding: chunked\r\n\r\n");
  }
  void send_chunk(std::string_view payload) { send(chunked(payload)); }
  void send_event(std::string_view data) { send_chunk("data: " + std::string(data) + "\n\n"); }
  void send_content(int i) {
    send_event("{\"choices\":[{\"delta\":{\"content\":\"w" + std::to_string(i) + "\"}}]}");
  }
  // finish_reason, [DONE] and the last chunk.
  void send_end() {
    send_event("{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}");
    send_event("[DONE]");
    send("0\r\n\r\n");
  }
  // A complete non-streaming answer that closes the connection.
  void send_status(int status, std::string_view body = "") {
    send("HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         std::string(body));
  }

  // Waits until the client closes (or resets) the connection.
  void hang() {
    boost::system::error_code ec;
    char sink[256];
    while (!ec) socket_.read_some(asio::buffer(sink), ec);
  }
  void close() {
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }
  // Aborts the connection: the client reads a reset (SO_LINGER 0, close).
  void reset() {
    boost::system::error_code ignored;
    socket_.set_option(asio::socket_base::linger(true, 0), ignored);
    socket_.close(ignored);
  }
  static void pause(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }

 private:
  tcp::socket& socket_;
  PeerLog* log_;
  asio::streambuf buf_;
};

class ScriptedPeer {
 public:
  using Script = std::function<void(PeerConn&)>;

  // Serves `connections` connections one after another with `script`.
  explicit ScriptedPeer(Script script, int connections = 1)
      : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this, script = std::move(script), connections] {
      for (int i = 0; i < connections; ++i) {
        boost::system::error_code ec;
        tcp::socket s(io_);
        acceptor_.accept(s, ec);
        if (ec || stopping_) return;
        s.set_option(tcp::no_delay(true), ec);
        PeerConn conn(s, &log_);
        try {
          script(conn);
        } catch (const std::exception&) {
          // The client went away mid-script (a timeout, a cancel): expected.
        }
        ++served_;
      }
    });
  }
  ~ScriptedPeer() {
    stopping_ = true;
    // Unblock an accept that is still waiting.
    boost::system::error_code ec;
    asio::io_context io;
    tcp::socket poke(io);
    poke.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ec);
    if (thread_.joinable()) thread_.join();
  }
  unsigned short port() const { return port_; }
  std::string url(std::string_view scheme = "http") const {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(port_) + "/v1";
  }
  int served() const { return served_; }
  // Every request read and write of every connection so far, once at least
  // `sends` writes are logged.
  PeerTimes times(std::size_t sends = 0) const { return log_.snapshot(sends); }

 private:
  asio::io_context io_;
  tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> served_{0};
  PeerLog log_;
  std::thread thread_;
};

// A port nothing listens on (bound once, then released).
inline unsigned short closed_port() {
  asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

}  // namespace lse::test
