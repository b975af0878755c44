// libFuzzer target for the HTTP/2 client session (h2/session.cpp), without a
// socket: the input (after a control byte) is what a server sends on the
// connection, fed in reads of a size the control byte picks, while the
// request's frames are written as output() offers them (whole or in halves).
// DATA is taken after every read (or every other read, so the windows fill),
// a second stream is opened when the first left the connection reusable.
// See tests/fuzz/README.md. Built and run by tests/fuzz/fuzz_all.sh.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "h2/session.hpp"

namespace {

using lse::h2::Break;
using lse::h2::Session;
using lse::h2::Settings;

// ---------------------------------------------------------------------------
// Controls: the first input byte.
//   bits 0-2  the size of a read: 1, 2, 9, 64, 512, 4096, 16384, 65536 bytes
//   bits 3-4  request body: 0 none (POST, content-length 0), 1 10 bytes,
//             2 70000 bytes (over the RFC's initial window), 3 GET
//   bit 5     windows: 0 the browser's, 1 65535 with a 200-byte header limit
//   bit 6     take DATA after every other read only
//   bit 7     write output() in two halves
constexpr std::size_t kReadSizes[] = {1, 2, 9, 64, 512, 4096, 16384, 65536};

lse::h2::Request request_for(unsigned control) {
  lse::h2::Request r;
  r.scheme = "https";
  r.authority = "llm.test:443";
  r.path = "/v1/chat/completions";
  r.fields = {{"Content-Type", "application/json"}, {"Connection", "close"}, {"TE", "trailers"}};
  switch ((control >> 3) & 3) {
    case 1: r.body = "0123456789"; break;
    case 2: r.body.assign(70000, 'b'); break;
    case 3: r.method = "GET"; break;
    default: break;
  }
  return r;
}

void write_out(Session& s, bool halves) {
  for (int i = 0; i < 64; ++i) {
    const std::string_view out = s.output();
    if (out.empty()) return;
    s.wrote(halves && out.size() > 1 ? out.size() / 2 : out.size());
  }
}

void check(const Session& s) {
  const lse::h2::Trouble& t = s.trouble();
  for (const char c : t.detail) {
    if (c < ' ' || c > '~') lse::fuzz::fail("trouble detail is not printable ASCII", t.detail);
  }
  if (t.kind == Break::none && !t.detail.empty())
    lse::fuzz::fail("detail without trouble", t.detail);
  if (s.reusable() && t.kind != Break::none) lse::fuzz::fail("reusable after trouble", t.detail);
  if (s.reusable() && s.stream_id() > 0 && !s.ended()) lse::fuzz::fail("reusable mid-stream");
  if (s.window_blocked() && s.request_sent()) lse::fuzz::fail("blocked yet sent");
  if (const auto* head = s.head(); head != nullptr && (head->status < 200 || head->status > 999)) {
    lse::fuzz::fail("final head with a non-final status", std::to_string(head->status));
  }
  if (lse::h2::error_code_name(t.error_code).empty()) lse::fuzz::fail("unnamed error code");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned control = data[0];
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  Settings settings;
  if ((control & 32) != 0) settings = Settings{65535, 65535, 200};
  Session session(settings);
  session.submit(request_for(control));
  const bool halves = (control & 128) != 0;
  write_out(session, halves);
  const std::size_t read_size = kReadSizes[control & 7];
  std::string body;
  int reads = 0;
  for (std::size_t at = 0; at < input.size(); at += read_size) {
    session.feed(input.substr(at, read_size));
    if ((control & 64) == 0 || ++reads % 2 == 0) session.take_data(body);
    check(session);
    write_out(session, halves);
    if (session.ended() && session.reusable() && session.stream_id() < 9) {
      session.finish_stream();
      session.submit(request_for(control));
      write_out(session, halves);
    }
  }
  session.take_data(body);
  session.finish_stream();
  write_out(session, halves);
  check(session);
  return 0;
}
