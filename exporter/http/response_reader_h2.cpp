// ResponseReader over one HTTP/2 stream: the session's final head as a
// Response, its DATA through the same content decoders as an HTTP/1.1 body,
// and what broke the stream as a fault (response_reader.hpp).
#include <string_view>

#include "h2/session.hpp"
#include "http/response_reader.hpp"
#include "util/text.hpp"

namespace lse::http {

namespace {

// The response facts of an HTTP/2 head (names are lower case on the wire).
Response h2_response(const h2::Head& head) {
  Response r;
  r.status = head.status;
  r.http_version = "2";
  r.keep_alive = true;  // the session says whether another stream may follow
  for (const h2::Field& f : head.fields) {
    std::string* into = nullptr;
    if (f.name == "content-type") into = &r.content_type;
    if (f.name == "content-encoding") into = &r.content_encoding;
    if (f.name == "retry-after") into = &r.retry_after;
    if (into != nullptr && into->empty()) *into = std::string(text::trim_blanks(f.value));
  }
  return r;
}

}  // namespace

void ResponseReader::start(h2::Session& session) {
  clear();
  h2_ = &session;
}

Result<bool> ResponseReader::h2_read_heads() {
  interim_ = h2_->interim();
  if (h2_response_) return true;
  const h2::Head* head = h2_->head();
  if (head == nullptr) {
    if (h2_->trouble().kind != h2::Break::none) return h2_fault(Stage::headers);
    return false;
  }
  Response response = h2_response(*head);
  decoders_.clear();
  if (Step f = add_content_decoder(response.content_encoding)) return std::move(*f);
  h2_response_ = std::move(response);
  return true;
}

// The DATA taken since the last read, decoded; then the stream's end or
// what broke it (after those bytes: the client delivers them first).
ResponseReader::Step ResponseReader::h2_decode_body() {
  if (decoders_.empty()) {
    h2_->take_data(decoded_);
  } else {
    h2_coded_.clear();
    h2_->take_data(h2_coded_);
    if (!h2_coded_.empty()) {
      if (Step f = decode_fault(decode(h2_coded_))) return f;
    }
  }
  if (h2_->ended()) {
    h2_body_done_ = true;
    return std::nullopt;
  }
  if (h2_->trouble().kind != h2::Break::none) return h2_fault(Stage::body);
  return std::nullopt;
}

bool ResponseReader::h2_has_news() const {
  if (h2_body_done_) return false;
  return h2_->has_data() || h2_->ended() || h2_->trouble().kind != h2::Break::none;
}

bool ResponseReader::h2_answered() const {
  return h2_->head() != nullptr || h2_->interim() > 0 || h2_->has_data();
}

// The session's word (h2::Trouble::unprocessed: a GOAWAY below the stream,
// REFUSED_STREAM), not a guess from the kind of trouble: a GOAWAY with an
// error code may cut a stream the server has already acted on.
bool ResponseReader::refused_unprocessed() const {
  if (h2_ == nullptr || h2_->head() != nullptr || h2_->interim() > 0) return false;
  return h2_->trouble().unprocessed;
}

// The server's RST_STREAM or GOAWAY: stream_reset with its code; ours (a
// malformed answer) or a connection error: h2_protocol with the code sent.
Fault ResponseReader::h2_fault(Stage stage) const {
  const h2::Trouble& t = h2_->trouble();
  const bool theirs =
      t.by_peer && (t.kind == h2::Break::stream_reset || t.kind == h2::Break::goaway);
  Fault f{stage, Interrupt::none, make_error_code(theirs ? Errc::stream_reset : Errc::h2_protocol),
          t.detail};
  f.h2_error = t.error_code;
  return f;
}

}  // namespace lse::http
