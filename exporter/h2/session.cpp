// The client session over libnghttp2 (see session.hpp). nghttp2 does the
// framing, HPACK, the HTTP messaging checks and the flow-control accounting;
// this file keeps the one stream a probe owns, the bytes to write, and turns
// what nghttp2 reports into a Head, DATA bytes and a Trouble.
//
// Window updates are manual (NGHTTP2_OPT_NO_AUTO_WINDOW_UPDATE): a byte
// counts as consumed only when take_data() hands it to the caller, so a
// caller that stops reading stops the server, as a browser does.
#include "h2/session.hpp"

#include <nghttp2/nghttp2.h>

#include <utility>
#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace lse::h2 {
namespace {

constexpr std::size_t kOutputChunk = 256 * std::size_t{1024};
constexpr std::uint32_t kMaxConcurrentStreams = 1000;  // as Chromium announces
constexpr std::uint32_t kHeaderTableSize = 65536;      // as Chromium announces
constexpr std::size_t kFieldOverhead = 32;             // RFC 9113 §6.5.2
constexpr std::uint32_t kLastClientStreamId = 0x7fffffffu;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  return out;
}

// RFC 9113 §8.2.2 connection-specific fields, plus host (:authority carries
// it) and content-length (submit() writes the body's own).
bool dropped_field(std::string_view name, std::string_view value) {
  static constexpr std::array<std::string_view, 8> kDropped = {
      "connection", "keep-alive", "proxy-connection", "transfer-encoding",
      "upgrade",    "host",       "content-length",   "http2-settings"};
  if (std::find(kDropped.begin(), kDropped.end(), name) != kDropped.end()) return true;
  return name == "te" && lower(value) != "trailers";
}

nghttp2_nv make_nv(const std::string& name, const std::string& value) {
  // nghttp2 copies names and values (no NO_COPY flags); the casts only
  // satisfy its C signature.
  auto* n = reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data()));
  auto* v = reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data()));
  return nghttp2_nv{n, v, name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

std::string code_text(std::uint32_t code) {
  return fmt::format("{} (0x{:x})", error_code_name(code), code);
}

// Library reasons (GOAWAY debug data nghttp2 writes, e.g. "SETTINGS
// expected") are fixed ASCII; anything else is left out of details.
std::string safe_reason(const std::uint8_t* data, std::size_t size) {
  std::string out;
  for (std::size_t i = 0; i < size && i < 80; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c < ' ' || c > '~') return {};
    out.push_back(c);
  }
  return out;
}

template <class F>
int guarded(F&& f) noexcept {
  try {
    return std::forward<F>(f)();
  } catch (...) {
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
}

}  // namespace

struct Session::Impl {
  // The stream of the probe in flight.
  struct Stream {
    std::int32_t id = 0;  // 0: none yet
    std::string body;
    std::size_t body_sent = 0;  // bytes handed to nghttp2's DATA frames
    bool body_done = true;      // END_STREAM handed to nghttp2 (no body: on HEADERS)
    std::optional<std::uint64_t> end_stream_at;  // output offset just past END_STREAM
    bool head_done = false;
    Head head;
    std::vector<Field> block;  // the header block being received
    int block_status = 0;
    std::size_t block_bytes = 0;
    bool in_trailers = false;
    std::size_t interim = 0;
    std::string data;  // DATA payload not taken yet
    bool ended = false;
    bool closed = false;
    bool cancelling = false;  // finish_stream() reset it
    std::string malformed;    // why nghttp2 or we rejected the answer
    Trouble trouble;
  };

  Settings settings;
  nghttp2_session* ng = nullptr;
  bool dead = false;  // nghttp2 failed fatally: nothing more in or out
  std::string out;    // handed out by output(), valid until wrote() drains it
  std::size_t out_off = 0;
  std::string pending;  // produced while `out` was in use
  std::uint64_t produced = 0;
  std::uint64_t written = 0;
  bool eos_just_sent = false;
  bool goaway_recv = false;
  bool goaway_sent = false;
  Stream s;

  explicit Impl(Settings given);
  ~Impl() { nghttp2_session_del(ng); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;

  static Impl& of(void* user_data) { return *static_cast<Impl*>(user_data); }
  bool ours(std::int32_t stream_id) const { return s.id != 0 && stream_id == s.id; }

  void set_trouble(Break kind, bool by_peer, std::uint32_t code, std::string detail,
                   bool unprocessed = false) {
    if (s.id == 0 || s.trouble.kind != Break::none) return;
    s.trouble = Trouble{kind, by_peer, code, std::move(detail), unprocessed};
  }
  void fail_fatally(int lib_error);
  void pump(std::string& into, std::size_t limit);
  void install_callbacks(nghttp2_session_callbacks* cbs);
  void send_settings();

  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* ud);
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                       std::uint8_t flags, void* ud);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* ud);
  static int on_data_chunk(nghttp2_session*, std::uint8_t flags, std::int32_t stream_id,
                           const std::uint8_t* data, std::size_t len, void* ud);
  static int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t code,
                             void* ud);
  static int on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* ud);
  static int on_invalid_frame(nghttp2_session*, const nghttp2_frame* frame, int lib_error,
                              void* ud);
  static ssize_t read_body(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buf,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                           void* ud);

  void header_block_done();
  void goaway_received(const nghttp2_goaway& goaway);
  void sent_frame(const nghttp2_frame& frame);
};

Session::Impl::Impl(Settings given) : settings(given) {
  settings.stream_window = std::clamp(settings.stream_window, kMinWindow, kMaxWindow);
  settings.connection_window = std::clamp(settings.connection_window, kMinWindow, kMaxWindow);
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_option* opt = nullptr;
  if (nghttp2_session_callbacks_new(&cbs) != 0) throw std::bad_alloc();
  if (nghttp2_option_new(&opt) != 0) {
    nghttp2_session_callbacks_del(cbs);
    throw std::bad_alloc();
  }
  install_callbacks(cbs);
  nghttp2_option_set_no_auto_window_update(opt, 1);
  nghttp2_option_set_peer_max_concurrent_streams(opt, 100);
  const int rv = nghttp2_session_client_new2(&ng, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0) throw std::runtime_error("HTTP/2: cannot create a session");
  send_settings();
}

void Session::Impl::install_callbacks(nghttp2_session_callbacks* cbs) {
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, &on_frame_send);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cbs, &on_invalid_frame);
}

// SETTINGS as a browser sends them, then the connection window opened
// from the RFC's 65535 to `connection_window` (one WINDOW_UPDATE).
void Session::Impl::send_settings() {
  const std::array<nghttp2_settings_entry, 5> entries = {{
      {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, kHeaderTableSize},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kMaxConcurrentStreams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings.stream_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       static_cast<std::uint32_t>(std::min<std::size_t>(settings.max_header_bytes, kMaxWindow))},
  }};
  if (nghttp2_submit_settings(ng, NGHTTP2_FLAG_NONE, entries.data(), entries.size()) != 0 ||
      nghttp2_session_set_local_window_size(
          ng, NGHTTP2_FLAG_NONE, 0, static_cast<std::int32_t>(settings.connection_window)) != 0) {
    throw std::runtime_error("HTTP/2: cannot queue the connection SETTINGS");
  }
}

void Session::Impl::fail_fatally(int lib_error) {
  dead = true;
  const std::uint32_t code =
      lib_error == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_INTERNAL_ERROR;
  set_trouble(Break::connection_error, false, code,
              fmt::format("HTTP/2 session failed: {}", nghttp2_strerror(lib_error)));
}

// Serialises what nghttp2 has queued (preface, SETTINGS, HEADERS, DATA as
// the windows allow, WINDOW_UPDATE, ACKs, RST_STREAM, GOAWAY) into `into`.
void Session::Impl::pump(std::string& into, std::size_t limit) {
  while (!dead && into.size() < limit) {
    const std::uint8_t* bytes = nullptr;
    eos_just_sent = false;
    const ssize_t n = nghttp2_session_mem_send(ng, &bytes);
    if (n < 0) {
      fail_fatally(static_cast<int>(n));
      return;
    }
    if (n == 0) return;
    into.append(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(n));
    produced += static_cast<std::uint64_t>(n);
    if (eos_just_sent) s.end_stream_at = produced;
  }
}

int Session::Impl::on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* ud) {
  Impl& self = of(ud);
  if (frame->hd.type != NGHTTP2_HEADERS || !self.ours(frame->hd.stream_id)) return 0;
  self.s.block.clear();
  self.s.block_status = 0;
  self.s.block_bytes = 0;
  self.s.in_trailers = self.s.head_done;
  return 0;
}

int Session::Impl::on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                             std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                             std::uint8_t, void* ud) {
  return guarded([&] {
    Impl& self = of(ud);
    if (frame->hd.type != NGHTTP2_HEADERS || !self.ours(frame->hd.stream_id)) return 0;
    Stream& s = self.s;
    s.block_bytes += namelen + valuelen + kFieldOverhead;
    if (s.block_bytes > self.settings.max_header_bytes) {
      // nghttp2 resets the stream (INTERNAL_ERROR) and skips the block.
      s.malformed =
          fmt::format("response header list over {} bytes", self.settings.max_header_bytes);
      return static_cast<int>(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE);
    }
    const std::string_view n(reinterpret_cast<const char*>(name), namelen);
    const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    if (s.in_trailers) return 0;
    if (n == ":status") {
      s.block_status = 0;
      for (const char c : v)
        s.block_status = s.block_status * 10 + (c - '0');  // nghttp2 checked 3 digits
    } else if (n.empty() || n.front() != ':') {
      s.block.push_back(Field{std::string(n), std::string(v)});
    }
    return 0;
  });
}

// nghttp2 checked that :status is three digits; "051" passes that check
// but is no HTTP status: the answer is malformed (RFC 9113 §8.1.1).
void Session::Impl::header_block_done() {
  if (s.in_trailers || !s.malformed.empty()) return;
  if (s.block_status < 100) {
    s.malformed = fmt::format("malformed response: status {:03}", s.block_status);
    nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_PROTOCOL_ERROR);
    return;
  }
  if (s.block_status < 200) {
    ++s.interim;
    s.block.clear();
    return;
  }
  s.head.status = s.block_status;
  s.head.fields = std::move(s.block);
  s.block.clear();
  s.head_done = true;
}

void Session::Impl::goaway_received(const nghttp2_goaway& goaway) {
  goaway_recv = true;
  if (s.id == 0 || s.closed || s.ended) return;
  if (s.id > goaway.last_stream_id) {
    set_trouble(
        Break::goaway, true, goaway.error_code,
        fmt::format("GOAWAY {} from the server left the stream unprocessed (last stream {})",
                    code_text(goaway.error_code), goaway.last_stream_id),
        true);
  } else if (goaway.error_code != NGHTTP2_NO_ERROR) {
    set_trouble(
        Break::goaway, true, goaway.error_code,
        fmt::format("GOAWAY {} from the server cut the stream", code_text(goaway.error_code)));
  }
}

int Session::Impl::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* ud) {
  return guarded([&] {
    Impl& self = of(ud);
    const bool mine = self.ours(frame->hd.stream_id);
    const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_HEADERS:
        if (mine) self.header_block_done();
        if (mine && end_stream && self.s.malformed.empty()) self.s.ended = true;
        break;
      case NGHTTP2_DATA:
        if (mine && end_stream && self.s.malformed.empty()) self.s.ended = true;
        break;
      case NGHTTP2_RST_STREAM:
        // A reset after a complete answer (RFC 9113 §8.1: NO_ERROR while
        // the request is still being sent) loses nothing.
        if (mine && !self.s.ended) {
          const std::uint32_t code = frame->rst_stream.error_code;
          self.set_trouble(Break::stream_reset, true, code,
                           fmt::format("RST_STREAM {} from the server", code_text(code)),
                           code == NGHTTP2_REFUSED_STREAM);
        }
        break;
      case NGHTTP2_GOAWAY: self.goaway_received(frame->goaway); break;
      default: break;
    }
    return 0;
  });
}

int Session::Impl::on_data_chunk(nghttp2_session* ng, std::uint8_t, std::int32_t stream_id,
                                 const std::uint8_t* data, std::size_t len, void* ud) {
  return guarded([&] {
    Impl& self = of(ud);
    if (!self.ours(stream_id) || self.s.cancelling || !self.s.malformed.empty()) {
      // Not for the probe in flight, or after the answer was rejected:
      // give the window back at once.
      nghttp2_session_consume(ng, stream_id, len);
      return 0;
    }
    self.s.data.append(reinterpret_cast<const char*>(data), len);
    return 0;
  });
}

int Session::Impl::on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t code,
                                   void* ud) {
  return guarded([&] {
    Impl& self = of(ud);
    if (!self.ours(stream_id)) return 0;
    Stream& s = self.s;
    s.closed = true;
    if (s.ended || s.cancelling || s.trouble.kind != Break::none) return 0;
    if (self.goaway_recv) {
      self.set_trouble(
          Break::goaway, true, code,
          fmt::format("stream closed after the server's GOAWAY ({})", code_text(code)));
    } else {
      const std::string why = s.malformed.empty() ? "stream closed" : s.malformed;
      self.set_trouble(Break::stream_reset, false, code,
                       fmt::format("{}: RST_STREAM {} sent", why, code_text(code)));
    }
    return 0;
  });
}

void Session::Impl::sent_frame(const nghttp2_frame& frame) {
  const bool mine = ours(frame.hd.stream_id);
  if (mine && (frame.hd.flags & NGHTTP2_FLAG_END_STREAM) != 0 &&
      (frame.hd.type == NGHTTP2_HEADERS || frame.hd.type == NGHTTP2_DATA)) {
    eos_just_sent = true;
  }
  if (frame.hd.type == NGHTTP2_RST_STREAM && mine && !s.cancelling) {
    const std::uint32_t code = frame.rst_stream.error_code;
    const std::string why = s.malformed.empty() ? "malformed response" : s.malformed;
    set_trouble(Break::stream_reset, false, code,
                fmt::format("{}: RST_STREAM {} sent", why, code_text(code)));
  }
  if (frame.hd.type == NGHTTP2_GOAWAY) {
    // We never submit GOAWAY ourselves: nghttp2 sends it on a connection
    // error, with its fixed reason text as debug data.
    goaway_sent = true;
    const std::uint32_t code = frame.goaway.error_code;
    const std::string reason = safe_reason(frame.goaway.opaque_data, frame.goaway.opaque_data_len);
    std::string detail = fmt::format("HTTP/2 connection error: GOAWAY {} sent", code_text(code));
    if (!reason.empty()) detail += ": " + reason;
    if (s.id != 0 && s.trouble.kind == Break::stream_reset && !s.trouble.by_peer) {
      s.trouble = Trouble{};  // the connection error is the cause
    }
    if (!s.ended || s.trouble.kind != Break::none) {
      set_trouble(Break::connection_error, false, code, std::move(detail));
    }
  }
}

int Session::Impl::on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* ud) {
  return guarded([&] {
    of(ud).sent_frame(*frame);
    return 0;
  });
}

int Session::Impl::on_invalid_frame(nghttp2_session*, const nghttp2_frame* frame, int lib_error,
                                    void* ud) {
  return guarded([&] {
    Impl& self = of(ud);
    if (!self.ours(frame->hd.stream_id) || !self.s.malformed.empty()) return 0;
    switch (lib_error) {
      case NGHTTP2_ERR_HTTP_HEADER:
        self.s.malformed = "malformed response: invalid header field";
        break;
      case NGHTTP2_ERR_HTTP_MESSAGING:
        self.s.malformed = "malformed response: HTTP/2 message rules (content-length, status)";
        break;
      case NGHTTP2_ERR_FLOW_CONTROL:
        self.s.malformed = "the server overran the stream window";
        break;
      default:
        self.s.malformed =
            fmt::format("invalid frame from the server: {}", nghttp2_strerror(lib_error));
        break;
    }
    return 0;
  });
}

ssize_t Session::Impl::read_body(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buf,
                                 std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                                 void* ud) {
  Impl& self = of(ud);
  Stream& s = self.s;
  if (!self.ours(stream_id)) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  const std::size_t n = std::min(length, s.body.size() - s.body_sent);
  s.body.copy(reinterpret_cast<char*>(buf), n, s.body_sent);
  s.body_sent += n;
  if (s.body_sent == s.body.size()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    s.body_done = true;
  }
  return static_cast<ssize_t>(n);
}

// ---- Session ----

Session::Session(Settings settings) : impl_(std::make_unique<Impl>(settings)) {}
Session::~Session() = default;

void Session::submit(const Request& request) {
  Impl& m = *impl_;
  if (m.s.id != 0) finish_stream();
  m.s = Impl::Stream{};
  if (m.dead || m.goaway_sent) {
    m.s.id = -1;
    m.s.trouble = Trouble{Break::connection_error, false, NGHTTP2_INTERNAL_ERROR,
                          "HTTP/2: the connection failed before this request"};
    return;
  }
  std::vector<std::pair<std::string, std::string>> fields = {
      {":method", request.method},
      {":scheme", request.scheme},
      {":authority", request.authority},
      {":path", request.path},
  };
  for (const Field& f : request.fields) {
    std::string name = lower(f.name);
    if (!dropped_field(name, f.value)) fields.emplace_back(std::move(name), f.value);
  }
  const bool bodiless = request.method == "GET" || request.method == "HEAD";
  if (!request.body.empty() || !bodiless) {
    fields.emplace_back("content-length", std::to_string(request.body.size()));
  }
  std::vector<nghttp2_nv> nva;
  nva.reserve(fields.size());
  for (const auto& [name, value] : fields) nva.push_back(make_nv(name, value));
  m.s.body = request.body;
  m.s.body_done = request.body.empty();
  nghttp2_data_provider provider{};
  provider.read_callback = &Impl::read_body;
  const std::int32_t id = nghttp2_submit_request(
      m.ng, nullptr, nva.data(), nva.size(), request.body.empty() ? nullptr : &provider, nullptr);
  if (id < 0) {
    m.s.id = -1;  // no stream: trouble() reports why
    m.s.trouble = Trouble{Break::connection_error, false, NGHTTP2_INTERNAL_ERROR,
                          fmt::format("HTTP/2: cannot open a stream: {}", nghttp2_strerror(id))};
    return;
  }
  m.s.id = id;
}

std::int32_t Session::stream_id() const { return impl_->s.id; }

std::string_view Session::output() {
  Impl& m = *impl_;
  if (m.out_off == m.out.size()) {
    m.out.clear();
    m.out_off = 0;
    m.out.swap(m.pending);
    m.pump(m.out, kOutputChunk);
  }
  return std::string_view(m.out).substr(m.out_off);
}

void Session::wrote(std::size_t n) {
  Impl& m = *impl_;
  n = std::min(n, m.out.size() - m.out_off);
  m.out_off += n;
  m.written += n;
}

bool Session::request_sent() const {
  const Impl& m = *impl_;
  return m.s.end_stream_at.has_value() && m.written >= *m.s.end_stream_at;
}

bool Session::window_blocked() const {
  const Impl& m = *impl_;
  if (m.s.id <= 0 || m.s.body_done || m.s.closed || m.dead) return false;
  return nghttp2_session_get_stream_remote_window_size(m.ng, m.s.id) <= 0 ||
         nghttp2_session_get_remote_window_size(m.ng) <= 0;
}

void Session::feed(std::string_view bytes) {
  Impl& m = *impl_;
  if (m.dead || m.goaway_sent) return;
  const ssize_t n = nghttp2_session_mem_recv(
      m.ng, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (n < 0) {
    m.fail_fatally(static_cast<int>(n));
    return;
  }
  // ACKs, RST_STREAM and GOAWAY nghttp2 queued in answer are produced now,
  // so trouble() tells at once what the bytes did.
  if (m.out_off == m.out.size()) {
    output();
  } else {
    m.pump(m.pending, kOutputChunk);
  }
}

const Head* Session::head() const { return impl_->s.head_done ? &impl_->s.head : nullptr; }
std::size_t Session::interim() const { return impl_->s.interim; }

void Session::take_data(std::string& into) {
  Impl& m = *impl_;
  if (m.s.data.empty()) return;
  into.append(m.s.data);
  if (!m.dead && m.s.id > 0) nghttp2_session_consume(m.ng, m.s.id, m.s.data.size());
  m.s.data.clear();
}

bool Session::has_data() const { return !impl_->s.data.empty(); }
bool Session::ended() const { return impl_->s.ended; }
const Trouble& Session::trouble() const { return impl_->s.trouble; }

bool Session::reusable() const {
  const Impl& m = *impl_;
  if (m.dead || m.goaway_recv || m.goaway_sent) return false;
  if (nghttp2_session_get_next_stream_id(m.ng) > kLastClientStreamId) return false;
  if (m.s.id == 0) return true;
  return m.s.id > 0 && m.s.ended && m.s.trouble.kind == Break::none;
}

void Session::finish_stream() {
  Impl& m = *impl_;
  if (m.s.id <= 0) return;
  if (!m.dead) {
    // Bytes never taken still count against the connection window.
    if (!m.s.data.empty()) nghttp2_session_consume(m.ng, m.s.id, m.s.data.size());
    if (!m.s.closed && !m.s.cancelling) {
      nghttp2_submit_rst_stream(m.ng, NGHTTP2_FLAG_NONE, m.s.id, NGHTTP2_CANCEL);
    }
  }
  m.s.data.clear();
  m.s.cancelling = true;
}

}  // namespace lse::h2
