// A scripted HTTP/2 server for the Session tests: a real nghttp2 server
// session driven by hand (mem_recv / mem_send), so every frame our client
// sees was produced by a conforming peer the test configures.
#pragma once
#include <nghttp2/nghttp2.h>

#include <utility>
#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "h2/session.hpp"

namespace lse::h2::test {

class Peer {
 public:
  struct Stream {
    std::vector<Field> fields;  // request fields, pseudo-headers included, as received
    std::string body;
    bool request_ended = false;
    std::string out;  // response DATA still to send
    bool out_eof = false;
    bool deferred = false;
  };

  // `settings` go in the server's first SETTINGS frame; with `manual_window`
  // the server opens its windows only by the test's WINDOW_UPDATEs.
  explicit Peer(const std::vector<nghttp2_settings_entry>& settings = {},
                bool manual_window = false) {
    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_header_callback(cbs, &Peer::on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &Peer::on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &Peer::on_frame);
    nghttp2_option* opt = nullptr;
    nghttp2_option_new(&opt);
    nghttp2_option_set_no_auto_window_update(opt, manual_window ? 1 : 0);
    const int rv = nghttp2_session_server_new2(&ng_, cbs, this, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0) throw std::runtime_error("peer session");
    nghttp2_submit_settings(ng_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
  }
  ~Peer() { nghttp2_session_del(ng_); }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  nghttp2_session* ng() { return ng_; }

  // Client bytes in; false once the server session rejected them.
  bool feed(std::string_view bytes) {
    const auto n = nghttp2_session_mem_recv(
        ng_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    received_ += bytes.size();
    return n == static_cast<ssize_t>(bytes.size());
  }

  // Everything the server has to send now.
  std::string drain() {
    std::string out;
    for (;;) {
      const std::uint8_t* p = nullptr;
      const ssize_t n = nghttp2_session_mem_send(ng_, &p);
      if (n <= 0) break;
      out.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
    }
    return out;
  }

  // HEADERS (and DATA through a provider that waits for push()).
  void respond(std::int32_t id, int status, const std::vector<Field>& fields, std::string body,
               bool end) {
    Stream& s = streams[id];
    s.out += std::move(body);
    s.out_eof = end;
    std::string code = std::to_string(status);
    code.insert(0, 3 - std::min<std::size_t>(3, code.size()), '0');
    std::vector<std::pair<std::string, std::string>> kv = {{":status", code}};
    for (const Field& f : fields) kv.emplace_back(f.name, f.value);
    std::vector<nghttp2_nv> nva;
    for (auto& [n, v] : kv) {
      nva.push_back(nghttp2_nv{reinterpret_cast<std::uint8_t*>(n.data()),
                               reinterpret_cast<std::uint8_t*>(v.data()), n.size(), v.size(),
                               NGHTTP2_NV_FLAG_NONE});
    }
    nghttp2_data_provider prd{};
    prd.read_callback = &Peer::read;
    nghttp2_submit_response(ng_, id, nva.data(), nva.size(), &prd);
  }
  void push(std::int32_t id, std::string more, bool end) {
    Stream& s = streams[id];
    s.out += std::move(more);
    s.out_eof = end;
    if (s.deferred) {
      s.deferred = false;
      nghttp2_session_resume_data(ng_, id);
    }
  }
  void headers_only(std::int32_t id, const std::vector<nghttp2_nv>& nva, bool end) {
    nghttp2_submit_headers(ng_, end ? NGHTTP2_FLAG_END_STREAM : NGHTTP2_FLAG_NONE, id, nullptr,
                           nva.data(), nva.size(), nullptr);
  }

  std::map<std::int32_t, Stream> streams;
  std::vector<nghttp2_settings_entry> client_settings;  // from the client's SETTINGS
  int client_settings_frames = 0;
  int settings_acks = 0;
  int ping_acks = 0;
  std::uint64_t connection_window_updates = 0;                 // total increment on stream 0
  std::vector<std::pair<std::int32_t, std::uint32_t>> resets;  // RST_STREAM from the client
  std::size_t received_ = 0;
  int data_frames_in = 0;       // DATA frames from the client
  std::size_t frame_limit = 0;  // >0: response DATA frames carry at most this many bytes

 private:
  static Peer& of(void* ud) { return *static_cast<Peer*>(ud); }
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                       std::uint8_t, void* ud) {
    of(ud).streams[frame->hd.stream_id].fields.push_back(
        Field{std::string(reinterpret_cast<const char*>(name), namelen),
              std::string(reinterpret_cast<const char*>(value), valuelen)});
    return 0;
  }
  static int on_data(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                     std::size_t len, void* ud) {
    of(ud).streams[id].body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }
  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* ud) {
    Peer& self = of(ud);
    const bool ack = (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_SETTINGS:
        if (ack) {
          ++self.settings_acks;
        } else {
          ++self.client_settings_frames;
          self.client_settings.assign(frame->settings.iv, frame->settings.iv + frame->settings.niv);
        }
        break;
      case NGHTTP2_PING:
        if (ack) ++self.ping_acks;
        break;
      case NGHTTP2_WINDOW_UPDATE:
        if (frame->hd.stream_id == 0) {
          self.connection_window_updates +=
              static_cast<std::uint64_t>(frame->window_update.window_size_increment);
        }
        break;
      case NGHTTP2_RST_STREAM:
        self.resets.emplace_back(frame->hd.stream_id, frame->rst_stream.error_code);
        break;
      default: break;
    }
    if (frame->hd.type == NGHTTP2_DATA) ++self.data_frames_in;
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
      self.streams[frame->hd.stream_id].request_ended = true;
    }
    return 0;
  }
  static ssize_t read(nghttp2_session*, std::int32_t id, std::uint8_t* buf, std::size_t length,
                      std::uint32_t* flags, nghttp2_data_source*, void* ud) {
    Peer& self = of(ud);
    Stream& s = self.streams[id];
    if (self.frame_limit > 0) length = std::min(length, self.frame_limit);
    const std::size_t n = std::min(length, s.out.size());
    s.out.copy(reinterpret_cast<char*>(buf), n);
    s.out.erase(0, n);
    if (s.out.empty() && s.out_eof) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (n == 0) {
      s.deferred = true;
      return NGHTTP2_ERR_DEFERRED;
    }
    return static_cast<ssize_t>(n);
  }

  nghttp2_session* ng_ = nullptr;
};

// Moves bytes both ways until neither side has anything to say (bounded).
inline void exchange(Session& client, Peer& peer, int rounds = 64) {
  for (int i = 0; i < rounds; ++i) {
    const std::string_view out = client.output();
    const std::string to_peer(out);
    client.wrote(out.size());
    if (!to_peer.empty()) peer.feed(to_peer);
    const std::string back = peer.drain();
    if (!back.empty()) client.feed(back);
    if (to_peer.empty() && back.empty()) return;
  }
}

inline std::string field(const std::vector<Field>& fields, std::string_view name) {
  for (const Field& f : fields) {
    if (f.name == name) return f.value;
  }
  return "<absent>";
}

}  // namespace lse::h2::test
