// libFuzzer target for the response side of a probe, without a socket: the
// input (after a control byte) is what an upstream sends, in reads of a size
// the control byte picks. It goes through http::ResponseReader (the client's
// own head parsing, interim responses, framing checks, decoders and decode
// cap) driven as Client::read_headers and Client::read drive it, and the
// decoded bytes through the SSE (or NDJSON) framing decoder, as the prober
// feeds them. See tests/fuzz/README.md for the input layout and the
// invariants. Built and run by tests/fuzz/fuzz_all.sh.
#include <boost/asio/error.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "http/fault.hpp"
#include "http/response_reader.hpp"
#include "ndjson/decoder.hpp"
#include "sse/decoder.hpp"

namespace {

using lse::http::Fault;
using lse::http::ResponseReader;

constexpr std::size_t kReadChunk = 64 * std::size_t{1024};  // one socket read at most (client.cpp)

// ---------------------------------------------------------------------------
// Controls: the first input byte.
//   bits 0-2  the size of a read: 1, 2, 7, 64, 512, 4096, 16384, 65536 bytes
//   bits 3-4  the decode cap per read: 0-1 the default (16 MiB), 2 1 MiB, 3 4 KiB
//   bit 5     framing: 0 SSE, 1 NDJSON
//   bit 6     event/line limit: 0 1 MiB (the default max_event_bytes), 1 64 bytes
//   bit 7     unused
constexpr std::size_t kReadSizes[] = {1, 2, 7, 64, 512, 4096, 16384, kReadChunk};

struct Controls {
  std::size_t read_size = kReadChunk;
  lse::http::ResponseLimits limits;
  bool ndjson = false;
  std::size_t limit = 1 << 20;
};

Controls read_controls(unsigned byte) {
  Controls c;
  c.read_size = kReadSizes[byte & 7];
  const unsigned cap = (byte >> 3) & 3;
  if (cap == 2) c.limits.max_decoded_bytes_per_read = 1u << 20;
  if (cap == 3) c.limits.max_decoded_bytes_per_read = 4096;
  c.ndjson = byte & 32;
  c.limit = (byte & 64) ? 64 : (1 << 20);
  return c;
}

enum class Stage { none, headers, body };

struct Outcome {
  Stage fault = Stage::none;
  std::string why;
  bool capped = false;  // the fault is the decode cap (depends on where reads end)
  int status = 0;
  std::size_t interim = 0;
  bool body_done = false;
  bool decoded_kept = true;  // decoded fits the comparison budget
  std::string decoded;       // every decoded body byte, when decoded_kept
  std::size_t decoded_size = 0;
};

// One exchange as Client does it, from the bytes of `wire` delivered in reads
// of `read_size`, each read's decoded bytes handed to `sink`.
class Exchange {
 public:
  Exchange(const Controls& c, std::string_view wire) : c_(c), wire_(wire), reader_(c.limits) {}

  template <class Sink>
  Outcome run(Sink&& sink) {
    reader_.start();
    // Headers: Client::read_headers.
    for (;;) {
      if (!receive()) return fault(Stage::headers, "connection closed during the headers");
      auto heads = reader_.read_heads();
      out_.interim = reader_.interim_responses();
      FUZZ_CHECK(out_.interim <= lse::http::kMaxInterimResponses, std::to_string(out_.interim));
      if (!heads) return fault(Stage::headers, heads.fault());
      if (heads.value()) break;
    }
    FUZZ_CHECK(reader_.response() != nullptr, "no response after the final head");
    FUZZ_CHECK(reader_.head_done(), "final head not done");
    out_.status = reader_.response()->status;
    if (auto f = reader_.take_body_fault()) return fault(Stage::body, *f);
    // Body: Client::read, until the body ends or a fault.
    for (;;) {
      if (reader_.body_done()) {
        out_.body_done = true;
        return out_;
      }
      ResponseReader::Step f = read_once();
      deliver(sink);
      if (f) return fault(Stage::body, *f);
      if (done_) {
        out_.body_done = reader_.body_done();
        return out_;
      }
    }
  }

 private:
  // One Client::read(): the decoded bytes of one read (or of bytes still
  // buffered), or the fault.
  ResponseReader::Step read_once() {
    reader_.clear_decoded();
    if (reader_.has_unparsed()) {
      if (auto f = reader_.decode_body()) return f;
      if (!reader_.decoded().empty() || reader_.body_done()) return std::nullopt;
    }
    for (;;) {
      const bool closed = !receive();
      if (reader_.has_unparsed()) {
        if (auto f = reader_.decode_body()) return f;
      }
      if (closed) {
        done_ = true;
        const Fault eof{lse::http::Stage::body, lse::http::Interrupt::none, boost::asio::error::eof,
                        "connection closed by peer"};
        return reader_.end_of_stream(eof);
      }
      if (!reader_.decoded().empty() || reader_.body_done()) return std::nullopt;
    }
  }

  Outcome fault(Stage stage, std::string why) {
    if (out_.fault == Stage::none) {
      out_.fault = stage;
      out_.why = std::move(why);
    }
    return out_;
  }
  Outcome fault(Stage stage, const Fault& f) {
    out_.capped = f.ec == lse::http::make_error_code(lse::http::Errc::decoded_too_large);
    FUZZ_CHECK(!f.detail.empty(), "a fault without detail");
    return fault(stage, f.detail);
  }

  // One socket read: the next read_size bytes; false at the end (the peer closed).
  bool receive() {
    if (wire_.empty()) return false;
    const std::string_view piece = wire_.substr(0, c_.read_size);
    wire_.remove_prefix(piece.size());
    reader_.feed(piece);
    return true;
  }

  template <class Sink>
  void deliver(Sink& sink) {
    const std::string_view bytes = reader_.decoded();
    // What one read may hold: the cap, passed by one decoder piece at most.
    FUZZ_CHECK(bytes.size() <= c_.limits.max_decoded_bytes_per_read + kReadChunk,
               std::to_string(bytes.size()));
    out_.decoded_size += bytes.size();
    if (out_.decoded_kept && out_.decoded_size <= kKeepDecoded)
      out_.decoded += bytes;
    else
      out_.decoded_kept = false;
    if (!bytes.empty()) sink(bytes);
  }

  static constexpr std::size_t kKeepDecoded = 4u << 20;

  const Controls& c_;
  std::string_view wire_;
  ResponseReader reader_;
  bool done_ = false;  // the peer closed
  Outcome out_;
};

// The framing decoder the prober feeds: every event/line within the limit.
struct Framed {
  explicit Framed(const Controls& c) : c_(c), sse_(c.limit), lines_(c.limit) {}

  void feed(std::string_view bytes) {
    if (c_.ndjson) {
      lines_.feed(bytes, [&](std::string_view line) { take_line(line); });
    } else {
      sse_.feed(bytes, [&](const lse::sse::Event& e) {
        FUZZ_CHECK(e.data.size() <= c_.limit, std::to_string(e.data.size()));
        FUZZ_CHECK(e.type.find_first_of("\r\n") == std::string::npos, e.type);
        FUZZ_CHECK(e.id.find_first_of("\r\n") == std::string::npos, e.id);
        ++events;
      });
    }
  }
  void finish() {
    if (c_.ndjson) lines_.finish([&](std::string_view line) { take_line(line); });
  }
  void take_line(std::string_view line) {
    FUZZ_CHECK(!line.empty() && line.size() <= c_.limit, std::to_string(line.size()));
    FUZZ_CHECK(line.find('\n') == std::string_view::npos, std::string(line));
    ++events;
  }

  const Controls& c_;
  lse::sse::Decoder sse_;
  lse::ndjson::Decoder lines_;
  std::size_t events = 0;
};

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::none: return "none";
    case Stage::headers: return "headers";
    case Stage::body: return "body";
  }
  return "?";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  Controls c = read_controls(data[0]);
  const std::string_view wire(reinterpret_cast<const char*>(data) + 1, size - 1);

  Framed framed(c);
  const Outcome split = Exchange(c, wire).run([&](std::string_view bytes) { framed.feed(bytes); });
  framed.finish();

  // The same bytes in one read: the same answer (Beast's parser and the
  // decoders are incremental; where reads end must not matter), except for
  // the decode cap, which is per read.
  Controls one = c;
  one.read_size = wire.size() + 1;
  const Outcome whole = Exchange(one, wire).run([](std::string_view) {});
  if (split.capped || whole.capped) return 0;
  const std::string what = std::string("split fault ") + stage_name(split.fault) + " (" +
                           split.why + "), whole fault " + stage_name(whole.fault) + " (" +
                           whole.why + ")";
  FUZZ_CHECK(split.fault == whole.fault, what);
  if (split.fault != Stage::headers) {
    FUZZ_CHECK(split.status == whole.status, what);
    FUZZ_CHECK(split.interim == whole.interim, what);
  }
  FUZZ_CHECK(split.decoded_size == whole.decoded_size || split.fault != Stage::none,
             what + ": decoded " + std::to_string(split.decoded_size) + " vs " +
                 std::to_string(whole.decoded_size));
  if (split.fault == Stage::none) {
    FUZZ_CHECK(split.body_done == whole.body_done, what);
    if (split.decoded_kept && whole.decoded_kept) FUZZ_CHECK(split.decoded == whole.decoded, what);
  }
  return 0;
}
