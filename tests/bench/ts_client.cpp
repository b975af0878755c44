// SO_TIMESTAMPNS experiment for the fidelity benchmark (issue 5): would kernel
// receive timestamps make the exporter's gaps more exact than stamping in user
// space at read completion?
//
// A minimal single-threaded epoll client, shaped like the exporter's probe
// thread (one thread, many keep-alive streams, plain or TLS through OpenSSL
// memory BIOs so the timestamp of the socket read is known beneath TLS). Each
// read is stamped twice: `user` = CLOCK_MONOTONIC right after recvmsg returns
// (what the exporter does), `kern` = the SCM_TIMESTAMPNS of that read (the
// instant the kernel queued the last segment), converted from CLOCK_REALTIME to
// CLOCK_MONOTONIC. A content event gets the stamps of the read that delivered
// its last byte. The harness pairs both against the truth upstream's sends.
//
// Usage:
//   bench_ts_client (--url-template http[s]://127.0.0.1:PORT/s/id=k{i},.../v1 | --url-list FILE)
//                   --streams N --seconds S --out rows.jsonl [--ca-file CA]
// FILE: one base URL per line, line i for stream i.
// Output: one JSON line per stream: {"i","ok","start_mono_ns","user":[ns],"kern":[ns]}.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using ns_t = std::int64_t;

ns_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<ns_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// CLOCK_REALTIME - CLOCK_MONOTONIC, from a read of each bracketed by the other.
ns_t realtime_offset() {
  ns_t best = 0, best_width = INT64_MAX;
  for (int k = 0; k < 5; ++k) {
    const ns_t m1 = clock_ns(CLOCK_MONOTONIC), r = clock_ns(CLOCK_REALTIME),
               m2 = clock_ns(CLOCK_MONOTONIC);
    if (m2 - m1 < best_width) {
      best_width = m2 - m1;
      best = r - (m1 + m2) / 2;
    }
  }
  return best;
}

struct Url {
  bool tls = false;
  std::string host, path;
  int port = 0;
};

Url parse(const std::string& u) {
  Url r;
  std::string rest;
  if (u.rfind("https://", 0) == 0) {
    r.tls = true;
    rest = u.substr(8);
  } else if (u.rfind("http://", 0) == 0) {
    rest = u.substr(7);
  } else {
    std::fprintf(stderr, "bad url %s\n", u.c_str());
    std::exit(2);
  }
  const auto slash = rest.find('/');
  const std::string hp = rest.substr(0, slash);
  r.path = slash == std::string::npos ? "/" : rest.substr(slash);
  const auto colon = hp.rfind(':');
  r.host = hp.substr(0, colon);
  r.port = colon == std::string::npos ? (r.tls ? 443 : 80) : std::atoi(hp.c_str() + colon + 1);
  return r;
}

struct Stream {
  ns_t start = 0;
  std::vector<ns_t> user, kern;
  bool ok = false;
};

struct Conn {
  int i = 0;
  int fd = -1;
  Url url;
  SSL* ssl = nullptr;
  BIO *rbio = nullptr, *wbio = nullptr;
  bool handshaken = false;
  bool headers_done = false;
  bool done_seen = false;
  std::string buf;  // plaintext not yet scanned
  Stream cur;
  ns_t last_user = 0, last_kern = 0;
};

std::string g_request_body =
    R"({"model":"bench-model","stream":true,"max_tokens":256,"messages":[{"role":"user","content":"What is the capital of France?"}]})";

void write_all(Conn& c, const std::string& plain) {
  std::string wire = plain;
  if (c.ssl) {
    SSL_write(c.ssl, plain.data(), static_cast<int>(plain.size()));
    wire.clear();
    char b[16384];
    int n;
    while ((n = BIO_read(c.wbio, b, sizeof b)) > 0) wire.append(b, static_cast<std::size_t>(n));
  }
  std::size_t off = 0;
  while (off < wire.size()) {
    const ssize_t n = ::send(c.fd, wire.data() + off, wire.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN) continue;  // tiny requests: the buffer never stays full
      return;
    }
    off += static_cast<std::size_t>(n);
  }
}

void flush_tls(Conn& c) {
  std::string wire;
  char b[16384];
  int n;
  while ((n = BIO_read(c.wbio, b, sizeof b)) > 0) wire.append(b, static_cast<std::size_t>(n));
  std::size_t off = 0;
  while (off < wire.size()) {
    const ssize_t w = ::send(c.fd, wire.data() + off, wire.size() - off, MSG_NOSIGNAL);
    if (w <= 0) {
      if (w < 0 && errno == EAGAIN) continue;
      return;
    }
    off += static_cast<std::size_t>(w);
  }
}

void send_request(Conn& c) {
  c.cur = Stream{};
  c.cur.start = clock_ns(CLOCK_MONOTONIC);
  c.headers_done = false;
  c.done_seen = false;
  c.buf.clear();
  std::string req =
      "POST " + c.url.path + "/chat/completions HTTP/1.1\r\nHost: " + c.url.host + ":" +
      std::to_string(c.url.port) +
      "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: " +
      std::to_string(g_request_body.size()) + "\r\n\r\n" + g_request_body;
  write_all(c, req);
}

// Scans complete lines of c.buf; returns true when the stream ended.
bool scan(Conn& c) {
  if (!c.headers_done) {
    const auto e = c.buf.find("\r\n\r\n");
    if (e == std::string::npos) return false;
    c.buf.erase(0, e + 4);
    c.headers_done = true;
  }
  std::size_t p = 0;
  bool ended = false;
  for (;;) {
    const auto nl = c.buf.find('\n', p);
    if (nl == std::string::npos) break;
    const std::string_view line(c.buf.data() + p, nl - p);
    p = nl + 1;
    // The last HTTP chunk ("0" CRLF CRLF) follows [DONE] in the same write.
    if (c.done_seen && line == "0\r") ended = true;
    if (line.rfind("data: ", 0) != 0) continue;
    if (line.rfind("data: [DONE]", 0) == 0) {
      c.done_seen = true;
      continue;
    }
    static constexpr std::string_view kContent = "\"delta\":{\"content\":\"";
    const auto k = line.find(kContent);
    if (k != std::string_view::npos && k + kContent.size() < line.size() &&
        line[k + kContent.size()] != '"') {
      c.cur.user.push_back(c.last_user);
      c.cur.kern.push_back(c.last_kern);
    }
  }
  c.buf.erase(0, p);
  return ended;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> a;
  for (int i = 1; i + 1 < argc; i += 2) a[std::string(argv[i]).substr(2)] = argv[i + 1];
  const std::string tmpl = a["url-template"];
  const int n = std::atoi(a.count("streams") ? a["streams"].c_str() : "1");
  const double seconds = std::atof(a.count("seconds") ? a["seconds"].c_str() : "10");
  const std::string out_path = a["out"];
  std::vector<std::string> urls;
  if (a.count("url-list")) {
    std::ifstream in(a["url-list"]);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) urls.push_back(line);
  } else {
    for (int i = 0; i < n; ++i) {
      std::string u = tmpl;
      for (auto p = u.find("{i}"); p != std::string::npos; p = u.find("{i}"))
        u.replace(p, 3, std::to_string(i));
      urls.push_back(u);
    }
  }
  if (static_cast<int>(urls.size()) < n || out_path.empty()) {
    std::fprintf(stderr,
                 "usage: bench_ts_client --url-template U|--url-list F --streams N --seconds S "
                 "--out F [--ca-file CA]\n");
    return 2;
  }
  SSL_CTX* ctx = nullptr;
  const ns_t offset = realtime_offset();
  const ns_t deadline = clock_ns(CLOCK_MONOTONIC) + static_cast<ns_t>(seconds * 1e9);
  const int ep = epoll_create1(0);
  std::vector<std::unique_ptr<Conn>> conns;
  std::vector<std::pair<int, Stream>> finished;
  for (int i = 0; i < n; ++i) {
    const std::string& u = urls[static_cast<std::size_t>(i)];
    auto c = std::make_unique<Conn>();
    c->i = i;
    c->url = parse(u);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(c->url.port));
    inet_pton(AF_INET, c->url.host == "localhost" ? "127.0.0.1" : c->url.host.c_str(),
              &sa.sin_addr);
    if (connect(c->fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
      std::perror("connect");
      return 1;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    fcntl(c->fd, F_SETFL, O_NONBLOCK);
    if (c->url.tls) {
      if (!ctx) {
        ctx = SSL_CTX_new(TLS_client_method());
        if (a.count("ca-file")) SSL_CTX_load_verify_locations(ctx, a["ca-file"].c_str(), nullptr);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      }
      c->ssl = SSL_new(ctx);
      c->rbio = BIO_new(BIO_s_mem());
      c->wbio = BIO_new(BIO_s_mem());
      SSL_set_bio(c->ssl, c->rbio, c->wbio);
      SSL_set_connect_state(c->ssl);
      SSL_set_tlsext_host_name(c->ssl, "localhost");
      SSL_do_handshake(c->ssl);
      flush_tls(*c);
    } else {
      c->handshaken = true;
      send_request(*c);
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<std::uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    conns.push_back(std::move(c));
  }

  int open_conns = n;
  epoll_event evs[256];
  char raw[65536];
  alignas(cmsghdr) char control[256];
  while (open_conns > 0) {
    const int k = epoll_wait(ep, evs, 256, 1000);
    for (int e = 0; e < k; ++e) {
      Conn& c = *conns[evs[e].data.u32];
      if (c.fd < 0) continue;
      for (;;) {
        iovec iov{raw, sizeof raw};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t got = recvmsg(c.fd, &msg, 0);
        const ns_t user = clock_ns(CLOCK_MONOTONIC);
        if (got < 0 && errno == EAGAIN) break;
        if (got <= 0) {
          close(c.fd);
          c.fd = -1;
          --open_conns;
          break;
        }
        ns_t kern = 0;
        for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
          if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
            timespec ts;
            std::memcpy(&ts, CMSG_DATA(cm), sizeof ts);
            kern = static_cast<ns_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec - offset;
          }
        }
        c.last_user = user;
        c.last_kern = kern;
        if (c.ssl) {
          BIO_write(c.rbio, raw, static_cast<int>(got));
          if (!c.handshaken) {
            const int r = SSL_do_handshake(c.ssl);
            flush_tls(c);
            if (r == 1) {
              c.handshaken = true;
              send_request(c);
            }
            continue;
          }
          char pt[16384];
          int m;
          while ((m = SSL_read(c.ssl, pt, sizeof pt)) > 0)
            c.buf.append(pt, static_cast<std::size_t>(m));
        } else {
          c.buf.append(raw, static_cast<std::size_t>(got));
        }
        if (scan(c)) {
          c.cur.ok = true;
          finished.emplace_back(c.i, std::move(c.cur));
          const ns_t now = clock_ns(CLOCK_MONOTONIC);
          const ns_t took = now - finished.back().second.start;
          if (now + took > deadline) {
            close(c.fd);
            c.fd = -1;
            --open_conns;
            break;
          }
          send_request(c);
        }
      }
    }
    if (clock_ns(CLOCK_MONOTONIC) > deadline + 30'000'000'000LL) break;  // hard bound
  }
  std::FILE* f = std::fopen(out_path.c_str(), "w");
  if (!f) return 1;
  for (auto& [i, s] : finished) {
    std::fprintf(f, "{\"i\":%d,\"ok\":%s,\"start_mono_ns\":%lld,\"user\":[", i,
                 s.ok ? "true" : "false", static_cast<long long>(s.start));
    for (std::size_t k = 0; k < s.user.size(); ++k)
      std::fprintf(f, "%s%lld", k ? "," : "", static_cast<long long>(s.user[k]));
    std::fprintf(f, "],\"kern\":[");
    for (std::size_t k = 0; k < s.kern.size(); ++k)
      std::fprintf(f, "%s%lld", k ? "," : "", static_cast<long long>(s.kern[k]));
    std::fprintf(f, "]}\n");
  }
  std::fclose(f);
  std::fprintf(stderr, "ts_client: %zu streams\n", finished.size());
  return 0;
}
