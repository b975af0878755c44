// The probe's TLS layer against a real OpenSSL server on 127.0.0.1: each
// record is one SSL_read that does its own stamped recvmsg() (no second
// buffer, no read that can only say "want input"), records that arrive
// together are one recvmsg(), the end of a connection has the codes asio's
// ssl::stream gave (close_notify: eof; a bare FIN: stream_truncated; RST:
// connection_reset), a bad certificate names the verify error, and a write
// larger than the socket's buffer goes out whole. Bounded: every wait fails
// the test at a deadline instead of hanging it.
#include "http/tls_stream.hpp"

#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <sys/socket.h>
#include <unistd.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <thread>

#include "../web/test_pki.hpp"
#include "http/tls_context.hpp"

namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using lse::http::ProbeSocket;
using lse::http::TimestampingSocket;
using lse::http::TlsStream;
using namespace std::chrono_literals;

std::int64_t realtime_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

const lse::testing::TestPki& pki() {
  static const lse::testing::TestPki p = [] {
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("lse-tls-stream-" + std::to_string(::getpid())))
            .string();
    std::filesystem::create_directories(dir);
    return lse::testing::make_test_pki(dir);
  }();
  return p;
}

// A blocking OpenSSL server for one connection on 127.0.0.1, driven by
// `script` in its own thread (the socket and the SSL after the handshake).
class Server {
 public:
  using Script = std::function<void(SSL*, int)>;

  // `setup` adjusts the server's context (protocol versions) before it listens.
  explicit Server(Script script, const std::function<void(SSL_CTX*)>& setup = {})
      : script_(std::move(script)) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate_chain_file(ctx_, pki().server_cert.c_str());
    SSL_CTX_use_PrivateKey_file(ctx_, pki().server_key.c_str(), SSL_FILETYPE_PEM);
    if (setup) setup(ctx_);
    thread_ = std::thread([this] { serve(); });
  }
  ~Server() {
    thread_.join();
    SSL_CTX_free(ctx_);
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  bool handshake_done() const { return handshake_done_; }

 private:
  void serve() {
    asio::ip::tcp::socket peer(io_);
    error_code ec;
    acceptor_.accept(peer, ec);
    if (ec) return;
    peer.set_option(asio::ip::tcp::no_delay(true));
    const int fd = peer.native_handle();
    timeval tv{5, 0};  // a client that stops answering ends the script
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      handshake_done_ = true;
      script_(ssl, fd);
    }
    SSL_free(ssl);
  }

  Script script_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_{io_, {asio::ip::make_address("127.0.0.1"), 0}};
  SSL_CTX* ctx_ = nullptr;
  std::thread thread_;
  std::atomic<bool> handshake_done_{false};
};

// The probe's side: a connected socket with stamps and queue hints, and the
// TLS layer over it, with a client context that trusts `ca`.
struct Client {
  asio::io_context io;
  ProbeSocket socket{io};
  TimestampingSocket reader{socket};
  asio::ssl::context ctx{asio::ssl::context::tls_client};
  std::unique_ptr<TlsStream> tls;

  Client(unsigned short port, const std::string& ca) {
    ctx.load_verify_file(ca);
    ctx.set_verify_mode(asio::ssl::verify_peer);
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
    socket.set_option(asio::ip::tcp::no_delay(true));
    EXPECT_TRUE(reader.enable_timestamps());
    EXPECT_TRUE(reader.enable_queue_hints());
    tls = std::make_unique<TlsStream>(reader, ctx);
    lse::http::TlsOptions options;
    lse::http::configure_peer_check(tls->native_handle(), options, "127.0.0.1");
  }

  // Runs the loop until `done`, at most `limit`.
  void run_until(const bool& done, std::chrono::milliseconds limit) {
    io.restart();
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done && std::chrono::steady_clock::now() < end) io.run_one_for(10ms);
    EXPECT_TRUE(done) << "no completion within " << limit.count() << " ms";
  }

  error_code handshake() {
    error_code out;
    bool done = false;
    tls->async_handshake([&](error_code ec) {
      out = ec;
      done = true;
    });
    run_until(done, 5000ms);
    return out;
  }

  // One read into `buffer`: its error and its bytes. A read that does not
  // complete within `limit` fails the test (and must be the test's last).
  std::pair<error_code, std::string> read(std::size_t buffer = 4096,
                                          std::chrono::milliseconds limit = 5000ms) {
    std::string bytes(buffer, '\0');
    std::pair<error_code, std::string> out;
    bool done = false;
    tls->async_read_some(asio::buffer(bytes), [&](error_code ec, std::size_t n) {
      out = {ec, bytes.substr(0, n)};
      done = true;
    });
    run_until(done, limit);
    return out;
  }

  std::pair<error_code, std::size_t> write_all(const std::string& bytes) {
    std::pair<error_code, std::size_t> out;
    bool done = false;
    asio::async_write(*tls, asio::buffer(bytes), [&](error_code ec, std::size_t n) {
      out = {ec, n};
      done = true;
    });
    run_until(done, 10000ms);
    return out;
  }
};

void write_record(SSL* ssl, const std::string& text) {
  ASSERT_EQ(SSL_write(ssl, text.data(), static_cast<int>(text.size())),
            static_cast<int>(text.size()));
}

// Writes `records` in one TCP segment: corked, then sent at once.
void write_together(SSL* ssl, int fd, std::initializer_list<const char*> records) {
  const int on = 1, off = 0;
  ::setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
  for (const char* r : records) write_record(ssl, r);
  ::setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
}

// Waits (bounded) for the client's sign to go on.
void wait_for(const std::atomic<bool>& flag) {
  for (int i = 0; i < 500 && !flag; ++i) std::this_thread::sleep_for(10ms);
}

TEST(TlsStream, EachRecordIsOneStampedRecvmsg) {
  constexpr int kRecords = 6;
  std::atomic<int> asked{0};
  std::int64_t before_write[kRecords] = {};
  std::atomic<bool> finished{false};
  Server server([&](SSL* ssl, int) {
    for (int i = 0; i < kRecords; ++i) {
      while (asked.load() <= i) std::this_thread::sleep_for(1ms);  // the client waits in a read
      std::this_thread::sleep_for(5ms);
      before_write[i] = realtime_ns();
      write_record(ssl, "record " + std::to_string(i));
    }
    wait_for(finished);  // no FIN behind the last record (the kernel counts it as unread)
  });
  Client c(server.port(), pki().ca);
  ASSERT_FALSE(c.handshake());
  std::uint64_t calls_after_first = 0;
  for (int i = 0; i < kRecords; ++i) {
    asked = i + 1;
    auto [ec, bytes] = c.read();
    const std::int64_t after_read = realtime_ns();
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(bytes, "record " + std::to_string(i));
    // The stamp is the kernel's for the segment that brought the record.
    const std::int64_t stamp = c.reader.last_kernel_ns();
    EXPECT_GE(stamp, before_write[i]);
    EXPECT_LE(stamp, after_read);
    EXPECT_TRUE(c.tls->drained()) << "record " << i;
    // The first read also takes TLS 1.3's session tickets, which came first.
    if (i == 0) calls_after_first = c.reader.receive_calls();
  }
  // One recvmsg() per record: the read waits for the record's event, then
  // OpenSSL reads it. asio's stream made one more per record that could
  // only return EAGAIN.
  EXPECT_EQ(c.reader.receive_calls() - calls_after_first, static_cast<std::uint64_t>(kRecords - 1));
  finished = true;
}

TEST(TlsStream, RecordsThatArriveTogetherAreOneRecvmsg) {
  std::atomic<bool> go{false};
  Server server([&](SSL* ssl, int fd) {
    write_record(ssl, "hello");  // read with the session tickets before it
    wait_for(go);
    write_together(ssl, fd, {"one", "two", "three"});
    char b;
    SSL_read(ssl, &b, 1);  // until the client closes
  });
  Client c(server.port(), pki().ca);
  ASSERT_FALSE(c.handshake());
  ASSERT_EQ(c.read().second, "hello");
  const std::uint64_t calls_before = c.reader.receive_calls();
  go = true;
  std::this_thread::sleep_for(100ms);  // all three are in the kernel
  std::string got;
  std::uint64_t calls_after_first = 0;
  for (int i = 0; i < 3; ++i) {
    auto [ec, bytes] = c.read();
    ASSERT_FALSE(ec) << ec.message();
    got += bytes + "|";
    if (i == 0) calls_after_first = c.reader.receive_calls();
    // The records still in OpenSSL are read without waiting for an event,
    // and a read that did not read the socket cannot say it is drained.
    EXPECT_FALSE(c.tls->drained());
  }
  EXPECT_EQ(got, "one|two|three|");
  // One recvmsg() brought the three; the second and third took none.
  EXPECT_EQ(calls_after_first - calls_before, 1u);
  EXPECT_EQ(c.reader.receive_calls(), calls_after_first);
  c.socket.close();
}

// Records served from OpenSSL's buffer say nothing of the kernel: bytes that
// arrived meanwhile, whose event the reactor spent while no read waited, are
// still read (a read that called itself drained would wait for an event that
// already came, until its deadline).
TEST(TlsStream, BytesWhoseEventCameBetweenBufferedReadsAreRead) {
  std::atomic<bool> go{false}, more{false}, finished{false};
  Server server([&](SSL* ssl, int fd) {
    write_record(ssl, "hello");  // read with the session tickets before it
    wait_for(go);
    write_together(ssl, fd, {"one", "two", "three"});
    wait_for(more);
    write_record(ssl, "four");
    wait_for(finished);
  });
  Client c(server.port(), pki().ca);
  ASSERT_FALSE(c.handshake());
  ASSERT_EQ(c.read().second, "hello");
  go = true;
  std::this_thread::sleep_for(100ms);  // the three are in the kernel
  ASSERT_EQ(c.read().second, "one");   // one recvmsg() brings them all
  more = true;
  std::this_thread::sleep_for(100ms);  // "four" is in the kernel
  // The reactor runs while no read waits: it spends the event of "four".
  asio::steady_timer tick(c.io, 20ms);
  bool ticked = false;
  tick.async_wait([&](error_code) { ticked = true; });
  c.run_until(ticked, 5000ms);
  EXPECT_EQ(c.read().second, "two");
  EXPECT_EQ(c.read().second, "three");
  // Bounded below the server's wait (whose end, a FIN, would wake any read):
  // fails at the limit if the read waits for an event.
  auto [ec, bytes] = c.read(4096, 2000ms);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(bytes, "four");
  finished = true;
}

TEST(TlsStream, CloseNotifyIsTheEndOfTheStream) {
  Server server([&](SSL* ssl, int) {
    write_record(ssl, "last");
    SSL_shutdown(ssl);  // close_notify
  });
  Client c(server.port(), pki().ca);
  ASSERT_FALSE(c.handshake());
  auto first = c.read();
  ASSERT_FALSE(first.first) << first.first.message();
  EXPECT_EQ(first.second, "last");
  auto end = c.read();
  EXPECT_EQ(end.first, asio::error::eof) << end.first.message();
  EXPECT_TRUE(end.second.empty());
}

TEST(TlsStream, AConnectionClosedWithoutCloseNotifyIsTruncated) {
  Server server([&](SSL* ssl, int fd) {
    write_record(ssl, "cut");
    ::shutdown(fd, SHUT_WR);  // FIN, no close_notify
    char b;
    ::recv(fd, &b, 1, 0);
  });
  Client c(server.port(), pki().ca);
  ASSERT_FALSE(c.handshake());
  auto first = c.read();
  ASSERT_FALSE(first.first) << first.first.message();
  EXPECT_EQ(first.second, "cut");
  auto end = c.read();
  EXPECT_EQ(end.first, asio::ssl::error::stream_truncated) << end.first.message();
  c.socket.close();
}

TEST(TlsStream, AResetIsTheSocketsError) {
  std::atomic<bool> first_read{false};
  Server server([&](SSL* ssl, int fd) {
    write_record(ssl, "then reset");
    // After the record's read: a reset that came with the last bytes shares
    // their event (the client's read watch re-arms for that one).
    wait_for(first_read);
    linger l{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  });
  Client c(server.port(), pki().ca);
  ASSERT_FALSE(c.handshake());
  auto first = c.read();
  first_read = true;
  ASSERT_FALSE(first.first) << first.first.message();
  EXPECT_EQ(first.second, "then reset");
  auto end = c.read();
  EXPECT_EQ(end.first, asio::error::connection_reset) << end.first.message();
}

TEST(TlsStream, AGarbledRecordIsAnOpenSslErrorNotAHang) {
  std::atomic<bool> finished{false};
  Server server([&](SSL*, int fd) {
    // An application-data record header and 32 bytes that no key made.
    std::string junk("\x17\x03\x03\x00\x20", 5);
    junk.append(32, '\x5a');
    ASSERT_EQ(::send(fd, junk.data(), junk.size(), 0), static_cast<ssize_t>(junk.size()));
    wait_for(finished);
  });
  Client c(server.port(), pki().ca);
  ASSERT_FALSE(c.handshake());
  auto [ec, bytes] = c.read();
  finished = true;
  ASSERT_TRUE(ec);
  EXPECT_EQ(ec.category(), asio::error::get_ssl_category()) << ec.message();
  EXPECT_NE(ec.message().find("bad record mac"), std::string::npos) << ec.message();
  EXPECT_TRUE(bytes.empty());
}

TEST(TlsStream, AnUntrustedCertificateNamesTheVerifyError) {
  Server server([&](SSL*, int) {});
  // The stranger's self-signed certificate is not the server's issuer.
  Client c(server.port(), pki().stranger_cert);
  const error_code ec = c.handshake();
  ASSERT_TRUE(ec);
  EXPECT_EQ(ec.category(), asio::error::get_ssl_category());
  EXPECT_EQ(lse::http::tls_failure_detail(ec, c.tls->native_handle())
                .rfind("certificate verify failed: ", 0),
            0u)
      << lse::http::tls_failure_detail(ec, c.tls->native_handle());
  EXPECT_FALSE(server.handshake_done());
  c.socket.close();
}

// A TLS 1.0-only server (the client's floor is TLS 1.2): the failure is
// OpenSSL's reason, not the close that followed it ("stream truncated").
TEST(TlsStream, AHandshakeRefusedForItsVersionSaysWhy) {
  Server server([&](SSL*, int) {},
                [](SSL_CTX* ctx) {
                  SSL_CTX_set_min_proto_version(ctx, TLS1_VERSION);
                  SSL_CTX_set_max_proto_version(ctx, TLS1_VERSION);
                });
  Client c(server.port(), pki().ca);
  const error_code ec = c.handshake();
  ASSERT_TRUE(ec);
  const std::string detail = lse::http::tls_failure_detail(ec, c.tls->native_handle());
  EXPECT_EQ(ec.category(), asio::error::get_ssl_category()) << detail;
  // OpenSSL's reason string: the server's alert.
  EXPECT_EQ(detail, ERR_reason_error_string(static_cast<unsigned long>(ec.value())));
  EXPECT_NE(detail.find("alert"), std::string::npos) << detail;
  EXPECT_EQ(detail.find("truncated"), std::string::npos) << detail;
  EXPECT_FALSE(server.handshake_done());
  c.socket.close();
}

TEST(TlsStream, AHandshakeWithAPeerThatClosesIsTruncated) {
  asio::io_context peer_io;
  asio::ip::tcp::acceptor acceptor(peer_io, {asio::ip::make_address("127.0.0.1"), 0});
  std::thread peer([&] {
    asio::ip::tcp::socket s(peer_io);
    acceptor.accept(s);
    char hello[16384];
    s.read_some(asio::buffer(hello));  // the ClientHello, then a bare FIN
  });
  Client c(acceptor.local_endpoint().port(), pki().ca);
  const error_code ec = c.handshake();
  peer.join();
  EXPECT_EQ(ec, asio::ssl::error::stream_truncated) << ec.message();
}

// The client's deadline closes the socket: a handshake waiting for a silent
// peer ends with the wait's error instead of waiting on.
TEST(TlsStream, AHandshakeWaitingForASilentPeerEndsWhenTheSocketCloses) {
  asio::io_context peer_io;
  asio::ip::tcp::acceptor acceptor(peer_io, {asio::ip::make_address("127.0.0.1"), 0});
  std::atomic<bool> finished{false};
  std::thread peer([&] {
    asio::ip::tcp::socket s(peer_io);
    acceptor.accept(s);
    wait_for(finished);  // reads nothing, answers nothing
  });
  Client c(acceptor.local_endpoint().port(), pki().ca);
  asio::steady_timer deadline(c.io, 50ms);
  deadline.async_wait([&](error_code) { c.socket.close(); });
  const error_code ec = c.handshake();
  finished = true;
  peer.join();
  EXPECT_EQ(ec, asio::error::operation_aborted) << ec.message();
}

TEST(TlsStream, AWriteLargerThanTheSocketBufferGoesOutWhole) {
  std::string payload(1'000'000, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + i % 26);
  std::string received;
  {
    std::atomic<bool> go{false};
    Server server([&](SSL* ssl, int) {
      wait_for(go);
      std::this_thread::sleep_for(100ms);  // the client's send buffer fills first
      char buf[16384];
      for (;;) {  // until the client closes
        const int n = SSL_read(ssl, buf, sizeof buf);
        if (n <= 0) break;
        received.append(buf, static_cast<std::size_t>(n));
      }
    });
    Client c(server.port(), pki().ca);
    const int small = 4096;
    ::setsockopt(c.socket.native_handle(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ASSERT_FALSE(c.handshake());
    go = true;
    auto [ec, n] = c.write_all(payload);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(n, payload.size());
  }  // the client closes, then the server's thread ends
  EXPECT_EQ(received.size(), payload.size());
  EXPECT_TRUE(received == payload);
}

TEST(TlsStream, RecordBuffersStayAndReadsGoAhead) {
  asio::io_context io;
  ProbeSocket socket(io);
  TimestampingSocket reader(socket);
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  TlsStream tls(reader, ctx);
  SSL* s = tls.native_handle();
  EXPECT_EQ(SSL_get_mode(s) & SSL_MODE_RELEASE_BUFFERS, 0u);
  EXPECT_NE(SSL_get_mode(s) & SSL_MODE_ENABLE_PARTIAL_WRITE, 0u);
  EXPECT_EQ(SSL_get_read_ahead(s), 1);
  EXPECT_NE(SSL_get_options(s) & SSL_OP_NO_RENEGOTIATION, 0u);
}

}  // namespace
