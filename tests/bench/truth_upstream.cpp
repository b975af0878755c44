// Ground-truth upstream for the fidelity benchmark (issue 5): an
// OpenAI-compatible streaming server that sends chat.completion.chunk events
// on a schedule taken from the URL and records, for every chunk, the
// CLOCK_MONOTONIC instant it was handed to the kernel.
//
// Why not Boost.Asio / Python: the recorded instant must be the one right
// before the write(2) that carries the chunk's last byte, also under TLS.
// Asio's ssl::stream encrypts and writes inside one operation, so this server
// drives OpenSSL through memory BIOs itself (encrypt first, stamp, then write)
// on a plain epoll loop per thread with an absolute CLOCK_MONOTONIC timerfd
// and a 1 ns timer slack. Python cannot serve 1,000 streams at 50 chunks/s
// within tens of microseconds.
//
// Usage:
//   bench_truth_upstream --port-file F [--host 127.0.0.1] [--port 0] [--threads 2]
//       [--tls-cert C --tls-key K] [--log-file L.jsonl] [--spin-us 0] [--max-seconds 3600]
//       [--rt-priority 0]
//
// Endpoints (HTTP/1.1, keep-alive):
//   POST /s/<spec>/v1/chat/completions   (also /s/<spec>/chat/completions, /v1/chat/completions)
//   GET  /healthz                         200 ok
//   POST /_dump                           appends the records completed since the last
//                                         dump to --log-file, answers {"records":N}
// <spec> = comma-separated key=value (percent-encoding allowed):
//   id=TAG        names the stream in the log (letters, digits, _ . -)
//   ttft=MS       request fully read -> first content chunk (default 100)
//   gap=MS        between content chunks (default 20)
//   chunks=N      content chunks (default 50)
//   stall=I:MS;I:MS   the gap before content chunk I is MS (';' or '|' between entries)
//   jitter=MS, seed=N  each ordinary gap is gap +/- uniform(jitter)
//   tail=MS       last content chunk -> finish event + usage + [DONE] + end of body
//   usage=0|1     usage event (default: when the request asks for include_usage)
//   role=0|1      role-only delta right after the headers (default 1)
//   text=N        bytes of delta.content per chunk (default: one word, 2-12 bytes)
// Response headers go out as soon as the request is read.
//
// Log (--log-file, JSON lines, written at /_dump, SIGUSR1 and exit):
//   {"tag","path","conn","seq","tls","outcome","t_request","first_byte","end",
//    "sends":[...],"late":[...]}
//   All instants are CLOCK_MONOTONIC nanoseconds (std::chrono::steady_clock on
//   Linux). sends[i]: taken immediately before the write(2) that handed the last
//   byte of content chunk i to the kernel (after TLS encryption). late[i]:
//   sends[i] minus its scheduled instant. wdur[i]: how long that write(2) took
//   (on loopback the kernel runs the receiving side inside it, so the bytes became
//   readable somewhere in [sends[i], sends[i] + wdur[i]]: the truth's own
//   uncertainty). outcome: done, client_gone, inflight.
// SIGTERM/SIGINT: dump, remove the port file, exit 0. --max-seconds bounds the
// lifetime (the harness always stops it earlier).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using ns_t = std::int64_t;

ns_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<ns_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "truth_upstream: %s\n", what.c_str());
  std::exit(2);
}

// ---------------------------------------------------------------- spec

struct Spec {
  std::string tag;
  double ttft_ms = 100, gap_ms = 20, tail_ms = 0, jitter_ms = 0;
  int chunks = 50;
  std::vector<std::pair<int, double>> stalls;
  std::uint64_t seed = 1;
  int usage = -1;  // -1: as the request asks
  bool role = true;
  int text_bytes = 0;  // 0: words
};

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      unsigned v = 0;
      auto r = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      if (r.ec == std::errc() && r.ptr == s.data() + i + 3) {
        out.push_back(static_cast<char>(v));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

bool parse_double(std::string_view v, double& out) {
  if (v.empty()) return false;
  std::string tmp(v);
  char* end = nullptr;
  out = std::strtod(tmp.c_str(), &end);
  return end && *end == 0 && std::isfinite(out) && out >= 0 && out <= 3.6e6;
}

bool parse_int(std::string_view v, long long& out, long long lo, long long hi) {
  auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  return r.ec == std::errc() && r.ptr == v.data() + v.size() && out >= lo && out <= hi;
}

// Returns an error message, or empty when the spec is usable.
std::string parse_spec(std::string_view raw, Spec& spec) {
  const std::string s = percent_decode(raw);
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string_view kv(s.data() + pos, comma - pos);
    pos = comma + 1;
    if (kv.empty()) continue;
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) return "spec entry without '=': " + std::string(kv);
    const std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
    long long n = 0;
    if (k == "id") {
      for (char c : v)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
          return "bad id";
      spec.tag = std::string(v);
    } else if (k == "ttft") {
      if (!parse_double(v, spec.ttft_ms)) return "bad ttft";
    } else if (k == "gap") {
      if (!parse_double(v, spec.gap_ms)) return "bad gap";
    } else if (k == "tail") {
      if (!parse_double(v, spec.tail_ms)) return "bad tail";
    } else if (k == "jitter") {
      if (!parse_double(v, spec.jitter_ms)) return "bad jitter";
    } else if (k == "chunks") {
      if (!parse_int(v, n, 0, 1'000'000)) return "bad chunks";
      spec.chunks = static_cast<int>(n);
    } else if (k == "seed") {
      if (!parse_int(v, n, 0, (1LL << 62))) return "bad seed";
      spec.seed = static_cast<std::uint64_t>(n);
    } else if (k == "usage") {
      if (v != "0" && v != "1") return "bad usage";
      spec.usage = v == "1";
    } else if (k == "role") {
      if (v != "0" && v != "1") return "bad role";
      spec.role = v == "1";
    } else if (k == "text") {
      if (!parse_int(v, n, 1, 65536)) return "bad text";
      spec.text_bytes = static_cast<int>(n);
    } else if (k == "stall") {
      std::size_t p = 0;
      while (p <= v.size()) {
        std::size_t e = v.find_first_of(";|", p);
        if (e == std::string_view::npos) e = v.size();
        std::string_view item = v.substr(p, e - p);
        p = e + 1;
        if (item.empty()) continue;
        const auto colon = item.find(':');
        double ms = 0;
        if (colon == std::string_view::npos || !parse_int(item.substr(0, colon), n, 1, 1'000'000) ||
            !parse_double(item.substr(colon + 1), ms))
          return "bad stall entry " + std::string(item);
        spec.stalls.emplace_back(static_cast<int>(n), ms);
      }
    } else {
      return "unknown spec key " + std::string(k);
    }
  }
  for (auto& [i, ms] : spec.stalls)
    if (i >= spec.chunks) return "stall index beyond chunks";
  return {};
}

// ---------------------------------------------------------------- records

struct Record {
  std::string tag, path, outcome;
  std::uint64_t conn = 0;
  std::uint32_t seq = 0;
  bool tls = false;
  ns_t t_request = 0, first_byte = 0, end = 0;
  std::vector<ns_t> sends, late, wdur;
};

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void append_int(std::string& out, long long v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

std::string to_json(const Record& r) {
  std::string o;
  o.reserve(64 + r.sends.size() * 28);
  o += "{\"tag\":";
  append_json_string(o, r.tag);
  o += ",\"path\":";
  append_json_string(o, r.path);
  o += ",\"conn\":";
  append_int(o, static_cast<long long>(r.conn));
  o += ",\"seq\":";
  append_int(o, r.seq);
  o += r.tls ? ",\"tls\":true" : ",\"tls\":false";
  o += ",\"outcome\":";
  append_json_string(o, r.outcome);
  o += ",\"t_request\":";
  append_int(o, r.t_request);
  o += ",\"first_byte\":";
  append_int(o, r.first_byte);
  o += ",\"end\":";
  append_int(o, r.end);
  o += ",\"sends\":[";
  for (std::size_t i = 0; i < r.sends.size(); ++i) {
    if (i) o.push_back(',');
    append_int(o, r.sends[i]);
  }
  o += "],\"late\":[";
  for (std::size_t i = 0; i < r.late.size(); ++i) {
    if (i) o.push_back(',');
    append_int(o, r.late[i]);
  }
  o += "],\"wdur\":[";
  for (std::size_t i = 0; i < r.wdur.size(); ++i) {
    if (i) o.push_back(',');
    append_int(o, r.wdur[i]);
  }
  o += "]}\n";
  return o;
}

// Completed records of one worker; appended once per finished request.
struct RecordStore {
  std::mutex mu;
  std::vector<Record> done;
};

std::vector<std::unique_ptr<RecordStore>> g_stores;
std::mutex g_dump_mu;
std::string g_log_file;

std::size_t dump_records() {
  std::lock_guard lock(g_dump_mu);
  std::vector<Record> all;
  for (auto& s : g_stores) {
    std::lock_guard l(s->mu);
    for (auto& r : s->done) all.push_back(std::move(r));
    s->done.clear();
  }
  if (g_log_file.empty()) return all.size();
  std::FILE* f = std::fopen(g_log_file.c_str(), "a");
  if (!f) {
    std::fprintf(stderr, "truth_upstream: cannot open %s: %s\n", g_log_file.c_str(),
                 std::strerror(errno));
    return 0;
  }
  for (const auto& r : all) {
    const std::string line = to_json(r);
    std::fwrite(line.data(), 1, line.size(), f);
  }
  std::fclose(f);
  return all.size();
}

// ---------------------------------------------------------------- words

constexpr std::string_view kWords[] = {
    " Streaming", " answers", " arrive", " chunk",    " by",     " chunk",    ",",
    " and",       " users",   " feel",   " the",      " pauses", " between",  " them",
    " more",      " than",    " the",    " averages", ".",       " This",     " upstream",
    " sends",     " short",   " words",  " on",       " a",      " scripted", " clock",
    " so",        " every",   " gap",    " can",      " be",     " checked",  "."};

// ---------------------------------------------------------------- connections

struct Conn {
  int fd = -1;
  std::uint64_t id = 0;
  std::uint64_t gen = 0;
  SSL* ssl = nullptr;
  BIO* rbio = nullptr;  // ciphertext from the peer -> OpenSSL
  BIO* wbio = nullptr;  // OpenSSL -> ciphertext for the peer
  std::string in;       // plaintext received, not yet consumed
  std::string out;      // bytes not yet accepted by the kernel
  std::size_t out_off = 0;
  // (end offset in `out`, chunk index; -1 headers, -2 end of body) awaiting a stamp
  std::vector<std::pair<std::size_t, int>> marks;
  bool want_out = false;
  std::uint32_t seq = 0;
  bool close_after = false;

  // the active stream
  bool streaming = false;
  Spec spec;
  Record rec;
  std::vector<ns_t> sched;
  ns_t end_due = 0;
  int next = 0;
  bool usage = false;
  std::string model;

  ~Conn() {
    if (ssl) SSL_free(ssl);  // frees the BIOs too
    if (fd >= 0) ::close(fd);
  }
};

struct Timer {
  ns_t due;
  int fd;
  std::uint64_t gen;
  bool operator>(const Timer& o) const { return due > o.due; }
};

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string port_file;
  int threads = 2;
  std::string cert, key;
  ns_t spin_ns = 0;
  double max_seconds = 3600;
  int rt_priority = 0;  // SCHED_FIFO priority of the workers (0: normal scheduling)
};

class Worker {
 public:
  Worker(int index, int listen_fd, SSL_CTX* ctx, const Options& opt, RecordStore& store)
      : index_(index), listen_fd_(listen_fd), ctx_(ctx), opt_(opt), store_(store) {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    tfd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ep_ < 0 || tfd_ < 0 || stop_fd_ < 0) die("epoll/timerfd/eventfd");
    add(listen_fd_, EPOLLIN, kListenTag);
    add(tfd_, EPOLLIN, kTimerTag);
    add(stop_fd_, EPOLLIN, kStopTag);
    chunk_.reserve(4096);
  }

  void stop() {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_fd_, &one, sizeof one);
  }

  void run() {
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (opt_.rt_priority > 0) {
      // A worker preempted between its clock read and write(2) would stamp a
      // send too early; real-time priority keeps ordinary tasks from doing that.
      sched_param sp{};
      sp.sched_priority = opt_.rt_priority;
      if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0)
        std::fprintf(stderr,
                     "truth_upstream: SCHED_FIFO not permitted, running with normal priority\n");
    }
    epoll_event evs[256];
    for (;;) {
      arm_timer();
      const int n = epoll_wait(ep_, evs, 256, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        die("epoll_wait");
      }
      for (int i = 0; i < n; ++i) {
        const std::uint64_t tag = evs[i].data.u64;
        if (tag == kStopTag) {
          shutdown_all();
          return;
        } else if (tag == kTimerTag) {
          std::uint64_t exp;
          [[maybe_unused]] auto r = ::read(tfd_, &exp, sizeof exp);
        } else if (tag == kListenTag) {
          accept_all();
        } else {
          const int fd = static_cast<int>(tag & 0xffffffffu);
          Conn* c = conn(fd);
          if (!c) continue;
          if (evs[i].events & EPOLLOUT) flush(*c);
          if (c->fd >= 0 && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) on_readable(*c);
        }
      }
      fire_due();
      graveyard_.clear();
    }
  }

 private:
  static constexpr std::uint64_t kListenTag = 1ull << 40, kTimerTag = 2ull << 40,
                                 kStopTag = 3ull << 40;

  void add(int fd, std::uint32_t events, std::uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl add");
  }

  Conn* conn(int fd) {
    return fd >= 0 && fd < static_cast<int>(conns_.size()) ? conns_[fd].get() : nullptr;
  }

  void arm_timer() {
    while (!timers_.empty()) {
      const Timer& t = timers_.top();
      Conn* c = conn(t.fd);
      if (c && c->gen == t.gen && c->streaming) break;
      timers_.pop();  // stale
    }
    const ns_t due = timers_.empty() ? 0 : std::max<ns_t>(1, timers_.top().due - opt_.spin_ns);
    if (due == armed_) return;
    armed_ = due;
    itimerspec its{};
    its.it_value.tv_sec = due / 1'000'000'000;
    its.it_value.tv_nsec = due % 1'000'000'000;
    timerfd_settime(tfd_, TFD_TIMER_ABSTIME, &its, nullptr);
  }

  void fire_due() {
    while (!timers_.empty()) {
      const Timer t = timers_.top();
      ns_t now = mono_ns();
      if (t.due > now) {
        if (t.due - now > opt_.spin_ns) break;
        while ((now = mono_ns()) < t.due) {
        }
      }
      timers_.pop();
      Conn* c = conn(t.fd);
      if (!c || c->gen != t.gen || !c->streaming) continue;
      fire(*c);
    }
  }

  void accept_all() {
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (fd >= static_cast<int>(conns_.size())) conns_.resize(fd + 1024);
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->id = (static_cast<std::uint64_t>(index_) << 48) | ++next_conn_;
      c->gen = ++next_gen_;
      if (ctx_) {
        c->ssl = SSL_new(ctx_);
        c->rbio = BIO_new(BIO_s_mem());
        c->wbio = BIO_new(BIO_s_mem());
        SSL_set_bio(c->ssl, c->rbio, c->wbio);
        SSL_set_accept_state(c->ssl);
      }
      conns_[fd] = std::move(c);
      add(fd, EPOLLIN, static_cast<std::uint64_t>(fd));
    }
  }

  // The Conn stays alive (fd = -1) until the end of the loop iteration, so
  // callers up the stack may still look at it.
  void close_conn(Conn& c, const char* outcome) {
    if (c.fd < 0) return;
    if (c.streaming) finish_record(c, outcome, mono_ns());
    const int fd = c.fd;
    epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    c.fd = -1;
    graveyard_.push_back(std::move(conns_[static_cast<std::size_t>(fd)]));
  }

  void finish_record(Conn& c, const char* outcome, ns_t end) {
    c.streaming = false;
    c.rec.outcome = outcome;
    c.rec.end = end;
    std::lock_guard lock(store_.mu);
    store_.done.push_back(std::move(c.rec));
    c.rec = Record{};
  }

  void shutdown_all() {
    for (auto& p : conns_)
      if (p) close_conn(*p, "inflight");
    graveyard_.clear();
  }

  void set_want_out(Conn& c, bool want) {
    if (c.want_out == want) return;
    c.want_out = want;
    epoll_event ev{};
    ev.events = EPOLLIN | (want ? static_cast<std::uint32_t>(EPOLLOUT) : 0u);
    ev.data.u64 = static_cast<std::uint64_t>(c.fd);
    epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  void stamp_mark(Conn& c, int mark, ns_t at, ns_t after) {
    if (!c.streaming) return;
    if (mark >= 0 && mark < static_cast<int>(c.rec.sends.size())) {
      c.rec.sends[mark] = at;
      c.rec.late[mark] = at - c.sched[mark];
      c.rec.wdur[mark] = after - at;
    } else if (mark == -1) {
      c.rec.first_byte = at;
    }
  }

  // Hands `plain` to the kernel (encrypted first under TLS). The instant is
  // taken right before the write(2) that carries the last byte.
  bool send_bytes(Conn& c, std::string_view plain, int mark) {
    std::string_view wire = plain;
    if (c.ssl) {
      std::size_t written = 0;
      if (SSL_write_ex(c.ssl, plain.data(), plain.size(), &written) != 1) return false;
      tls_out_.clear();
      char buf[16384];
      int n;
      while ((n = BIO_read(c.wbio, buf, sizeof buf)) > 0)
        tls_out_.append(buf, static_cast<std::size_t>(n));
      wire = tls_out_;
    }
    if (c.out_off < c.out.size()) {  // backlog: queue behind it
      c.out.append(wire);
      c.marks.emplace_back(c.out.size(), mark);
      return true;
    }
    const ns_t at = mono_ns();
    const ssize_t n = ::send(c.fd, wire.data(), wire.size(), MSG_NOSIGNAL);
    const ns_t after = mono_ns();
    if (n == static_cast<ssize_t>(wire.size())) {
      stamp_mark(c, mark, at, after);
      return true;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const std::size_t done = n > 0 ? static_cast<std::size_t>(n) : 0;
    c.out.assign(wire.substr(done));
    c.out_off = 0;
    c.marks.emplace_back(c.out.size(), mark);
    set_want_out(c, true);
    return true;
  }

  void flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      const ns_t at = mono_ns();
      const ssize_t n =
          ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      const ns_t after = mono_ns();
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        close_conn(c, "client_gone");
        return;
      }
      c.out_off += static_cast<std::size_t>(n);
      std::size_t k = 0;
      for (; k < c.marks.size() && c.marks[k].first <= c.out_off; ++k)
        stamp_mark(c, c.marks[k].second, at, after);
      c.marks.erase(c.marks.begin(), c.marks.begin() + static_cast<std::ptrdiff_t>(k));
    }
    c.out.clear();
    c.out_off = 0;
    set_want_out(c, false);
  }

  // Flushes whatever OpenSSL produced (handshake records, tickets, alerts).
  bool flush_tls(Conn& c) {
    char buf[16384];
    int n;
    std::string tmp;
    while ((n = BIO_read(c.wbio, buf, sizeof buf)) > 0)
      tmp.append(buf, static_cast<std::size_t>(n));
    if (tmp.empty()) return true;
    if (c.out_off < c.out.size()) {
      c.out.append(tmp);
      return true;
    }
    const ssize_t w = ::send(c.fd, tmp.data(), tmp.size(), MSG_NOSIGNAL);
    if (w == static_cast<ssize_t>(tmp.size())) return true;
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    c.out.assign(tmp.substr(w > 0 ? static_cast<std::size_t>(w) : 0));
    c.out_off = 0;
    set_want_out(c, true);
    return true;
  }

  void on_readable(Conn& conn_ref) {
    Conn* c = &conn_ref;
    const int fd = c->fd;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n == 0) {
        close_conn(*c, "client_gone");
        return;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EINTR) continue;
        close_conn(*c, "client_gone");
        return;
      }
      if (c->ssl) {
        BIO_write(c->rbio, buf, static_cast<int>(n));
      } else {
        c->in.append(buf, static_cast<std::size_t>(n));
      }
      if (static_cast<std::size_t>(n) < sizeof buf) break;
    }
    if (c->ssl) {
      if (!SSL_is_init_finished(c->ssl)) {
        const int r = SSL_do_handshake(c->ssl);
        if (!flush_tls(*c)) {
          close_conn(*c, "client_gone");
          return;
        }
        if (r != 1) {
          const int e = SSL_get_error(c->ssl, r);
          if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            close_conn(*c, "client_gone");
            return;
          }
          return;
        }
      }
      char pt[16384];
      for (;;) {
        std::size_t got = 0;
        if (SSL_read_ex(c->ssl, pt, sizeof pt, &got) == 1) {
          c->in.append(pt, got);
          continue;
        }
        const int e = SSL_get_error(c->ssl, 0);
        if (e == SSL_ERROR_ZERO_RETURN) {
          close_conn(*c, "client_gone");
          return;
        }
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
          ERR_clear_error();
          close_conn(*c, "client_gone");
          return;
        }
        break;
      }
      if (!flush_tls(*c)) {
        close_conn(*c, "client_gone");
        return;
      }
    }
    if (!c->streaming) handle_requests(*c);
  }

  void simple_response(Conn& c, int status, std::string_view ctype, std::string_view body) {
    const char* reason = status == 200 ? "OK" : status == 400 ? "Bad Request" : "Not Found";
    std::string r = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                    "\r\nContent-Type: " + std::string(ctype) +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
                    (c.close_after ? "Connection: close\r\n" : "") + "\r\n" + std::string(body);
    send_bytes(c, r, -3);
  }

  static bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(a[i])) !=
          std::tolower(static_cast<unsigned char>(b[i])))
        return false;
    return true;
  }

  void handle_requests(Conn& c) {
    while (!c.streaming && c.fd >= 0) {
      const auto hdr_end = c.in.find("\r\n\r\n");
      if (hdr_end == std::string::npos) {
        if (c.in.size() > 65536) close_conn(c, "client_gone");
        return;
      }
      const std::string_view head(c.in.data(), hdr_end);
      const auto line_end = head.find("\r\n");
      const std::string_view req_line = head.substr(0, line_end);
      const auto sp1 = req_line.find(' ');
      const auto sp2 = req_line.rfind(' ');
      if (sp1 == std::string_view::npos || sp2 <= sp1) {
        close_conn(c, "client_gone");
        return;
      }
      const std::string method(req_line.substr(0, sp1));
      const std::string path(req_line.substr(sp1 + 1, sp2 - sp1 - 1));
      std::size_t content_length = 0;
      c.close_after = false;
      std::size_t p = line_end == std::string_view::npos ? head.size() : line_end + 2;
      while (p < head.size()) {
        auto e = head.find("\r\n", p);
        if (e == std::string_view::npos) e = head.size();
        const std::string_view h = head.substr(p, e - p);
        p = e + 2;
        const auto colon = h.find(':');
        if (colon == std::string_view::npos) continue;
        std::string_view name = h.substr(0, colon), value = h.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        if (iequals(name, "content-length")) {
          long long v = 0;
          if (parse_int(value, v, 0, 16 << 20)) content_length = static_cast<std::size_t>(v);
        } else if (iequals(name, "connection") && iequals(value, "close")) {
          c.close_after = true;
        }
      }
      if (c.in.size() < hdr_end + 4 + content_length) return;  // body incomplete
      const ns_t t_request = mono_ns();
      const std::string body = c.in.substr(hdr_end + 4, content_length);
      c.in.erase(0, hdr_end + 4 + content_length);
      route(c, method, path, body, t_request);
      if (c.fd >= 0 && !c.streaming && c.close_after && c.out_off >= c.out.size()) {
        close_conn(c, "done");
        return;
      }
    }
  }

  void route(Conn& c, const std::string& method, const std::string& path, const std::string& body,
             ns_t t_request) {
    if (path == "/healthz") return simple_response(c, 200, "text/plain", "ok\n");
    if (path == "/_dump") {
      const std::size_t n = dump_records();
      return simple_response(c, 200, "application/json",
                             "{\"records\":" + std::to_string(n) + "}\n");
    }
    std::string spec_text;
    std::string_view rest = path;
    if (rest.rfind("/s/", 0) == 0) {
      rest.remove_prefix(3);
      const auto slash = rest.find('/');
      spec_text = std::string(rest.substr(0, slash));
      rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    }
    if (rest != "/v1/chat/completions" && rest != "/chat/completions")
      return simple_response(c, 404, "text/plain", "not found\n");
    if (method != "POST") return simple_response(c, 400, "text/plain", "POST only\n");
    Spec spec;
    if (std::string err = parse_spec(spec_text, spec); !err.empty())
      return simple_response(c, 400, "text/plain", err + "\n");
    start_stream(c, std::move(spec), path, body, t_request);
  }

  void start_stream(Conn& c, Spec spec, const std::string& path, const std::string& body, ns_t t0) {
    c.streaming = true;
    c.spec = std::move(spec);
    c.rec = Record{};
    c.rec.tag = c.spec.tag;
    c.rec.path = path;
    c.rec.conn = c.id;
    c.rec.seq = c.seq++;
    c.rec.tls = c.ssl != nullptr;
    c.rec.t_request = t0;
    const int n = c.spec.chunks;
    c.rec.sends.assign(static_cast<std::size_t>(n), 0);
    c.rec.late.assign(static_cast<std::size_t>(n), 0);
    c.rec.wdur.assign(static_cast<std::size_t>(n), 0);
    c.sched.resize(static_cast<std::size_t>(n));
    std::mt19937_64 rng(c.spec.seed);
    std::uniform_real_distribution<double> jit(-c.spec.jitter_ms, c.spec.jitter_ms);
    double t_ms = c.spec.ttft_ms;
    for (int i = 0; i < n; ++i) {
      if (i > 0) {
        double g = c.spec.gap_ms + (c.spec.jitter_ms > 0 ? jit(rng) : 0.0);
        for (auto& [idx, ms] : c.spec.stalls)
          if (idx == i) g = ms;
        t_ms += std::max(0.0, g);
      }
      c.sched[static_cast<std::size_t>(i)] = t0 + static_cast<ns_t>(std::llround(t_ms * 1e6));
    }
    c.end_due = (n > 0 ? c.sched.back() : t0 + static_cast<ns_t>(c.spec.ttft_ms * 1e6)) +
                static_cast<ns_t>(std::llround(c.spec.tail_ms * 1e6));
    c.next = 0;
    c.usage = c.spec.usage >= 0 ? c.spec.usage == 1
                                : body.find("\"include_usage\":true") != std::string::npos ||
                                      body.find("\"include_usage\": true") != std::string::npos;
    c.model = "bench-model";
    if (auto m = body.find("\"model\":\""); m != std::string::npos) {
      const auto s = m + 9, e = body.find('"', s);
      if (e != std::string::npos && e - s < 200) c.model = body.substr(s, e - s);
    }
    std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        "Transfer-Encoding: chunked\r\n";
    head += c.close_after ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
    if (c.spec.role) {
      event_begin(c);
      chunk_ +=
          "{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}";
      event_end();
      head += chunk_;
    }
    if (!send_bytes(c, head, -1)) return close_conn(c, "client_gone");
    schedule(c, n > 0 ? c.sched[0] : c.end_due);
  }

  void schedule(Conn& c, ns_t due) { timers_.push(Timer{due, c.fd, c.gen}); }

  // chunk_ = "<hex len>\r\ndata: {...,"delta":" (the caller appends the rest, then event_end()).
  void event_begin(Conn& c) {
    payload_.clear();
    payload_ +=
        "data: {\"id\":\"chatcmpl-bench0123456789abcdefABCD\",\"object\":\"chat.completion.chunk\","
        "\"created\":1700000000,\"model\":\"";
    payload_ += c.model;
    payload_ += "\",\"system_fingerprint\":\"fp_bench\",\"choices\":[{\"index\":0,\"delta\":";
    chunk_.clear();
  }
  // Moves what the caller appended to chunk_ into the payload and frames it.
  void event_end() {
    payload_ += chunk_;
    payload_ += "\n\n";
    chunk_.clear();
    char hex[16];
    const int hl = std::snprintf(hex, sizeof hex, "%zx\r\n", payload_.size());
    chunk_.append(hex, static_cast<std::size_t>(hl));
    chunk_ += payload_;
    chunk_ += "\r\n";
  }

  void fire(Conn& c) {
    const int n = c.spec.chunks;
    if (c.next < n) {
      const int i = c.next++;
      event_begin(c);
      chunk_ += "{\"content\":\"";
      if (c.spec.text_bytes > 0) {
        chunk_.append(static_cast<std::size_t>(c.spec.text_bytes), 'x');
      } else {
        chunk_ += kWords[static_cast<std::size_t>(i) % std::size(kWords)];
      }
      chunk_ += "\"},\"logprobs\":null,\"finish_reason\":null}]}";
      event_end();
      if (!send_bytes(c, chunk_, i)) return close_conn(c, "client_gone");
      schedule(c, c.next < n ? c.sched[static_cast<std::size_t>(c.next)] : c.end_due);
      return;
    }
    // End: finish event, usage, [DONE], last chunk of the body.
    std::string tail;
    event_begin(c);
    chunk_ += "{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}";
    event_end();
    tail += chunk_;
    if (c.usage) {
      payload_ =
          "data: "
          "{\"id\":\"chatcmpl-bench0123456789abcdefABCD\",\"object\":\"chat.completion.chunk\","
          "\"created\":1700000000,\"model\":\"" +
          c.model + "\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":" +
          std::to_string(n) + ",\"total_tokens\":" + std::to_string(n + 12) + "}}\n\n";
      char hex[16];
      const int hl = std::snprintf(hex, sizeof hex, "%zx\r\n", payload_.size());
      tail.append(hex, static_cast<std::size_t>(hl));
      tail += payload_ + "\r\n";
    }
    tail += "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
    const ns_t at = mono_ns();
    if (!send_bytes(c, tail, -2)) return close_conn(c, "client_gone");
    finish_record(c, "done", at);
    if (c.close_after) {
      if (c.out_off >= c.out.size()) close_conn(c, "done");
      return;
    }
    if (!c.in.empty()) handle_requests(c);  // a pipelined request
  }

  int index_;
  int listen_fd_;
  SSL_CTX* ctx_;
  const Options& opt_;
  RecordStore& store_;
  int ep_ = -1, tfd_ = -1, stop_fd_ = -1;
  ns_t armed_ = -1;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  std::uint64_t next_conn_ = 0, next_gen_ = 0;
  std::vector<std::unique_ptr<Conn>> graveyard_;
  std::string chunk_, payload_, tls_out_;
};

int make_listener(const std::string& host, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) die("bad --host " + host);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0)
    die("bind: " + std::string(std::strerror(errno)));
  if (listen(fd, 4096) < 0) die("listen");
  return fd;
}

int bound_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

void usage() {
  std::fprintf(
      stderr,
      "usage: bench_truth_upstream --port-file F [--host 127.0.0.1] [--port 0] [--threads 2]\n"
      "       [--tls-cert C --tls-key K] [--log-file L.jsonl] [--spin-us 0] [--max-seconds 3600]\n"
      "       [--rt-priority 0]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--host")
      opt.host = val();
    else if (a == "--port")
      opt.port = std::atoi(val().c_str());
    else if (a == "--port-file")
      opt.port_file = val();
    else if (a == "--threads")
      opt.threads = std::max(1, std::atoi(val().c_str()));
    else if (a == "--tls-cert")
      opt.cert = val();
    else if (a == "--tls-key")
      opt.key = val();
    else if (a == "--log-file")
      g_log_file = val();
    else if (a == "--spin-us")
      opt.spin_ns = static_cast<ns_t>(std::atof(val().c_str()) * 1000);
    else if (a == "--max-seconds")
      opt.max_seconds = std::atof(val().c_str());
    else if (a == "--rt-priority")
      opt.rt_priority = std::atoi(val().c_str());
    else
      usage();
  }
  if (opt.port_file.empty()) usage();
  if (opt.cert.empty() != opt.key.empty()) die("--tls-cert and --tls-key go together");

  // Signals are handled by the main thread through a signalfd; workers inherit the mask.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  const int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

  SSL_CTX* ctx = nullptr;
  if (!opt.cert.empty()) {
    ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(ctx, opt.cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, opt.key.c_str(), SSL_FILETYPE_PEM) != 1)
      die("cannot load TLS certificate/key");
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  }

  std::vector<int> listeners;
  listeners.push_back(make_listener(opt.host, opt.port));
  const int port = bound_port(listeners[0]);
  for (int i = 1; i < opt.threads; ++i) listeners.push_back(make_listener(opt.host, port));

  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < opt.threads; ++i) {
    g_stores.push_back(std::make_unique<RecordStore>());
    workers.push_back(std::make_unique<Worker>(i, listeners[static_cast<std::size_t>(i)], ctx, opt,
                                               *g_stores.back()));
  }
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w] { w->run(); });

  {
    const std::string tmp = opt.port_file + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) die("cannot write port file");
    std::fprintf(f, "%d\n", port);
    std::fclose(f);
    std::rename(tmp.c_str(), opt.port_file.c_str());
  }
  std::fprintf(stderr, "truth_upstream: listening on %s:%d threads=%d tls=%d\n", opt.host.c_str(),
               port, opt.threads, ctx ? 1 : 0);

  const ns_t deadline = mono_ns() + static_cast<ns_t>(opt.max_seconds * 1e9);
  for (;;) {
    pollfd p{sfd, POLLIN, 0};
    const ns_t left = deadline - mono_ns();
    if (left <= 0) break;
    const int r = poll(&p, 1, static_cast<int>(std::min<ns_t>(left / 1'000'000 + 1, 1000)));
    if (r <= 0) continue;
    signalfd_siginfo si;
    if (::read(sfd, &si, sizeof si) != sizeof si) continue;
    if (si.ssi_signo == SIGUSR1) {
      dump_records();
      continue;
    }
    break;
  }
  for (auto& w : workers) w->stop();
  for (auto& t : threads) t.join();
  const std::size_t n = dump_records();
  std::remove(opt.port_file.c_str());
  std::fprintf(stderr, "truth_upstream: stopped, %zu records dumped\n", n);
  if (ctx) SSL_CTX_free(ctx);
  return 0;
}
