// Beast's response parser driven one read at a time, with the client's
// framing rules, interim responses and the body's decoders.
#include "http/response_reader.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "h2/session.hpp"
#include "util/text.hpp"

namespace lse::http {

namespace bhttp = boost::beast::http;

namespace {

// Body bytes parsed per put(): the most one socket read brings.
constexpr std::size_t kBodyPiece = 64 * std::size_t{1024};
// Transfer codings decoded before chunked; more is refused (each holds a
// decoder's window).
constexpr std::size_t kMaxTransferCodings = 2;

// 1xx but 101: an answer that a final one follows (RFC 9110 §15.2).
bool is_interim(unsigned status) { return status >= 100 && status <= 199 && status != 101; }

// Printable ASCII of the server's text, cut: it goes into failure messages.
std::string printable(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string out;
  for (const char c : text.substr(0, kMax))
    if (c >= ' ' && c <= '~') out += c;
  return out;
}

// "HTTP/1.x DDD\r\n" at the start of `head`: a status line without the SP
// before its (empty) reason phrase. RFC 9112 §4 requires the SP, but curl,
// Python and browsers accept the line without it, and Beast's parser does
// not (bad_status): the SP is put back before the parser sees the head.
// False when the head ends at "DDD\r" (it cannot tell yet): wait for more.
bool restore_reason_separator(std::string& head) {
  constexpr std::size_t kDigitsEnd = 12;  // "HTTP/1.1 200"
  if (head.size() <= kDigitsEnd || head.compare(0, 7, "HTTP/1.") != 0 || head[8] != ' ' ||
      head[kDigitsEnd] != '\r')
    return true;
  for (std::size_t i = 9; i < kDigitsEnd; ++i)
    if (head[i] < '0' || head[i] > '9') return true;
  if (head.size() == kDigitsEnd + 1) return false;
  if (head[kDigitsEnd + 1] == '\n') head.insert(kDigitsEnd, 1, ' ');
  return true;
}

constexpr std::string_view kLengthAndCoding =
    "response has both Content-Length and Transfer-Encoding (RFC 9112 §6.3: refused as a "
    "request smuggling sign)";

// A head Beast refused. It refuses Content-Length next to a chunked
// Transfer-Encoding as whichever of the two came second; named as the pair.
std::string head_error(const error_code& ec, const bhttp::fields& fields) {
  const bool length = fields.count(bhttp::field::content_length) > 0;
  const bool coded = fields.count(bhttp::field::transfer_encoding) > 0;
  if ((ec == bhttp::error::bad_content_length && coded) ||
      (ec == bhttp::error::bad_transfer_encoding && length))
    return std::string(kLengthAndCoding);
  if (ec == bhttp::error::bad_transfer_encoding && coded)
    return "Transfer-Encoding after chunked (RFC 9112 §6.1: chunked is the last coding, once)";
  return "bad HTTP response: " + ec.message();
}

// A final response's transfer codings before chunked, in the order to undo
// them (the last one applied first), or why its framing cannot be trusted
// (RFC 9112 §6).
struct Framing {
  std::vector<std::string> codings;
  std::string error;  // empty: trusted
};

// One Transfer-Encoding token into `out`; false when the framing is refused.
bool add_coding(std::string_view coding, bool& chunked, Framing& out) {
  if (chunked) {
    out.error =
        "Transfer-Encoding with a coding after chunked (RFC 9112 §6.1: chunked is the last "
        "coding, once)";
    return false;
  }
  if (text::iequals(coding, "chunked")) {
    chunked = true;
  } else if (text::iequals(coding, "gzip") || text::iequals(coding, "x-gzip") ||
             text::iequals(coding, "deflate")) {
    out.codings.insert(out.codings.begin(), text::to_lower(coding));
  } else {
    out.error = "unsupported Transfer-Encoding '" + printable(coding) + "'";
    return false;
  }
  return true;
}

Framing transfer_framing(const bhttp::fields& fields, unsigned version) {
  Framing out;
  const auto [first, last] = fields.equal_range(bhttp::field::transfer_encoding);
  if (first == last) return out;
  if (version < 11) {
    out.error = "Transfer-Encoding in an HTTP/1.0 response (RFC 9112 §6.1: faulty framing)";
    return out;
  }
  if (fields.count(bhttp::field::content_length) > 0) {
    out.error = std::string(kLengthAndCoding);
    return out;
  }
  bool chunked = false;
  for (auto field = first; field != last; ++field)
    for (const auto token : bhttp::token_list{field->value()})
      if (!add_coding(std::string_view(token.data(), token.size()), chunked, out)) return out;
  if (!chunked && out.codings.empty()) out.error = "empty Transfer-Encoding";
  if (out.codings.size() > kMaxTransferCodings)
    out.error = "more than " + std::to_string(kMaxTransferCodings) + " transfer codings";
  return out;
}

}  // namespace

struct ResponseReader::Exchange {
  bhttp::response_parser<bhttp::buffer_body> parser;
  bool body_done = false;
  std::optional<Response> response;  // once the final head is in
};

ResponseReader::ResponseReader(ResponseLimits limits) : limits_(limits) {}
ResponseReader::~ResponseReader() = default;

void ResponseReader::start() {
  clear();
  next_response();
}

void ResponseReader::clear() {
  h2_ = nullptr;
  h2_response_.reset();
  h2_body_done_ = false;
  ex_.reset();
  in_.clear();
  in_seen_ = false;
  interim_ = 0;
  body_fault_.reset();
  decoded_.clear();
  decoders_.clear();
}

void ResponseReader::feed(std::string_view bytes) {
  if (bytes.empty()) return;
  if (h2_) {
    h2_->feed(bytes);
    return;
  }
  in_.append(bytes);
  in_seen_ = false;
}

void ResponseReader::next_response() {
  ex_ = std::make_unique<Exchange>();
  in_seen_ = false;
  // No cap on a stream's body (the deadline ends it). Not boost::none: Boost
  // 1.74 compares a Content-Length with a `none` limit as if it were smaller
  // (boostorg/beast#2070) and fails a head that ends where a read ends.
  ex_->parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  ex_->parser.header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
  ex_->parser.eager(true);
}

bool ResponseReader::head_done() const {
  if (h2_) return h2_->head() != nullptr;
  return ex_ && ex_->parser.is_header_done();
}

const Response* ResponseReader::response() const {
  if (h2_) return h2_response_ ? &*h2_response_ : nullptr;
  return ex_ && ex_->response ? &*ex_->response : nullptr;
}

bool ResponseReader::body_done() const { return h2_ ? h2_body_done_ : ex_ && ex_->body_done; }

bool ResponseReader::keep_alive() const {
  if (h2_) return h2_->reusable();
  return ex_ && ex_->parser.get().keep_alive();
}

bool ResponseReader::holds_bytes() const { return h2_ ? h2_->has_data() : !in_.empty(); }

std::optional<Fault> ResponseReader::take_body_fault() {
  std::optional<Fault> f = std::move(body_fault_);
  body_fault_.reset();
  return f;
}

Result<bool> ResponseReader::read_heads() {
  if (h2_) return h2_read_heads();
  if (!ex_) next_response();
  for (;;) {
    auto head = parse_head();
    if (!head) return head.fault();
    if (!head.value()) return false;  // incomplete: read on
    if (!is_interim(ex_->parser.get().result_int())) {
      auto final = final_response();
      if (!final) return final.fault();
      return true;
    }
    if (interim_ == kMaxInterimResponses)
      return Fault{
          Stage::headers, Interrupt::none, bhttp::error::bad_status,
          "more than " + std::to_string(kMaxInterimResponses) + " interim (1xx) responses"};
    ++interim_;
    next_response();
    if (in_.empty()) return false;
  }
}

// Feeds one head to the parser; body bytes stay in in_. False: the head is
// incomplete.
Result<bool> ResponseReader::parse_head() {
  auto& p = ex_->parser;
  char scratch[1];
  p.get().body().data = scratch;
  p.get().body().size = 0;
  error_code ec;
  // Beast consumes nothing of a head until all of it is in: in_ starts with
  // its status line.
  if (!p.is_header_done() && !restore_reason_separator(in_)) return false;
  const std::size_t used = p.put(boost::asio::buffer(in_), ec);
  in_.erase(0, used);
  if (ec == bhttp::error::need_more) {
    // eager(true) goes on past a complete head into a chunk-size line or
    // trailer and may stop there: the head is done all the same.
    if (p.is_header_done()) {
      in_seen_ = true;
      return true;
    }
    if (in_.size() > limits_.max_header_bytes)
      return Fault{Stage::headers, Interrupt::none, bhttp::error::header_limit,
                   "response header too large"};
    return false;
  }
  if (ec && ec != bhttp::error::need_buffer) {
    if (!p.is_header_done())
      return Fault{Stage::headers, Interrupt::none, ec, head_error(ec, p.get())};
    // A bad first chunk right behind a good head: the head stands, the
    // body fails at the first read.
    body_fault_ = Fault{Stage::body, Interrupt::none, ec, "bad HTTP body: " + ec.message()};
  }
  return p.is_header_done();
}

// The final response of a complete head: its facts, its framing checked,
// its decoders made.
Result<Response> ResponseReader::final_response() {
  auto& h = ex_->parser.get();
  Response response;
  response.status = static_cast<int>(h.result_int());
  response.content_type = std::string(h[bhttp::field::content_type]);
  response.content_encoding = std::string(h[bhttp::field::content_encoding]);
  response.http_version = std::to_string(h.version() / 10) + "." + std::to_string(h.version() % 10);
  response.retry_after = std::string(h[bhttp::field::retry_after]);
  if (response.status == 101) {
    // The connection now speaks another protocol: it never goes back to the pool.
    h.keep_alive(false);
    ex_->body_done = true;
    ex_->response = response;
    return response;
  }
  response.keep_alive = h.keep_alive();
  const Framing framing = transfer_framing(h, h.version());
  if (!framing.error.empty())
    return Fault{Stage::headers, Interrupt::none, bhttp::error::bad_transfer_encoding,
                 framing.error};
  decoders_.clear();
  // Transfer codings first, the content coding last. Transfer codings are
  // known ones (transfer_framing).
  for (const std::string& coding : framing.codings)
    decoders_.push_back(make_content_decoder(coding));
  if (Step f = add_content_decoder(response.content_encoding)) return std::move(*f);
  ex_->body_done = ex_->parser.is_done();
  ex_->response = response;
  return response;
}

// The content coding's decoder last, or the fault of one we do not decode.
ResponseReader::Step ResponseReader::add_content_decoder(const std::string& encoding) {
  try {
    if (auto decoder = make_content_decoder(encoding)) decoders_.push_back(std::move(decoder));
  } catch (const std::exception&) {
    return Fault{Stage::headers, Interrupt::none, make_error_code(Errc::unsupported_encoding),
                 "unsupported content-encoding " + printable(encoding)};
  }
  return std::nullopt;
}

ResponseReader::Step ResponseReader::decode_body() {
  if (h2_) return h2_decode_body();
  auto& p = ex_->parser;
  char buf[kBodyPiece];
  while (!in_.empty() && !p.is_done()) {
    p.get().body().data = buf;
    p.get().body().size = sizeof buf;
    error_code ec;
    const std::size_t used = p.put(boost::asio::buffer(in_), ec);
    in_.erase(0, used);
    const std::size_t got = sizeof buf - p.get().body().size;
    if (got > 0) {
      if (Step f = decode_fault(decode(std::string_view(buf, got)))) return f;
    }
    if (ec == bhttp::error::need_buffer) continue;
    if (ec == bhttp::error::need_more) {
      in_seen_ = !in_.empty();
      break;
    }
    if (ec) return Fault{Stage::body, Interrupt::none, ec, "bad HTTP body: " + ec.message()};
    if (used == 0 && got == 0) break;
  }
  ex_->body_done = p.is_done();
  return std::nullopt;
}

// Runs body bytes through the decoders into decoded_ (at most
// max_decoded_bytes_per_read of them between two clear_decoded()); what
// decoded before a corrupt or too large stream is kept.
Decoded ResponseReader::decode(std::string_view coded) {
  const std::size_t cap = limits_.max_decoded_bytes_per_read;
  if (decoders_.empty()) {
    decoded_.append(coded);
    return Decoded::ok;
  }
  Decoded worst = Decoded::ok;
  std::string_view data = coded;
  for (std::size_t i = 0; i + 1 < decoders_.size(); ++i) {
    std::string& out = staged_[i % 2];
    out.clear();
    const Decoded d = decoders_[i]->decode(data, out, cap);
    if (d == Decoded::too_large) return d;
    if (d == Decoded::corrupt) worst = d;
    data = out;
  }
  const Decoded last = decoders_.back()->decode(data, decoded_, cap);
  return last == Decoded::ok ? worst : last;
}

// The fault of a decode() that did not come to ok.
ResponseReader::Step ResponseReader::decode_fault(Decoded d) const {
  if (d == Decoded::corrupt)
    return Fault{Stage::body, Interrupt::none, make_error_code(Errc::corrupt_encoding),
                 "corrupt compressed body"};
  if (d == Decoded::too_large)
    return Fault{Stage::body, Interrupt::none, make_error_code(Errc::decoded_too_large),
                 "compressed body decodes to more than " +
                     std::to_string(limits_.max_decoded_bytes_per_read) +
                     " bytes in one read (a compression bomb?)"};
  return std::nullopt;
}

// HTTP/2: a close is never a body's end (END_STREAM is); the fault stands.
ResponseReader::Step ResponseReader::end_of_stream(const Fault& fault) {
  if (h2_ || !ex_ || !is_connection_lost(fault)) return fault;
  error_code ec;
  ex_->parser.put_eof(ec);
  if (ec || !ex_->parser.is_done()) return fault;
  ex_->body_done = true;
  ex_->parser.get().keep_alive(false);
  return std::nullopt;
}

}  // namespace lse::http
