// One probe: the only place where the HTTP client, the SSE decoder and the
// API adapter meet. Timestamps come from the client's reads; parsing happens
// after them and never moves them. The steps record facts in an Ending;
// probe/triage.cpp alone turns them into the outcome.
#include "probe/prober.hpp"

#include <algorithm>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <stdexcept>

#include "h2/session.hpp"
#include "net/proxy_env.hpp"
#include "probe/triage.hpp"
#include "util/text.hpp"
#include "util/wall_clock.hpp"

namespace lse::probe {
namespace {

http::HttpVersion client_http_version(config::HttpVersion v) {
  switch (v) {
    case config::HttpVersion::v1_1: return http::HttpVersion::http1_1;
    case config::HttpVersion::v2: return http::HttpVersion::http2;
    case config::HttpVersion::automatic: return http::HttpVersion::automatic;
  }
  return http::HttpVersion::http1_1;
}

}  // namespace

http::ClientOptions client_options(const config::Target& t) {
  http::ClientOptions o;
  auto url = net::parse_url(t.url);
  if (!url) throw std::runtime_error("target " + t.name + ": bad url");
  o.url = *url;
  o.tls = {t.tls.ca_file, t.tls.cert_file, t.tls.key_file, t.tls.server_name,
           t.tls.insecure_skip_verify};
  // proxy_url wins; else the environment, read as run and every SDK read it.
  std::string proxy = t.proxy_url;
  if (proxy.empty() && t.proxy_from_environment) {
    const net::EnvProxy env = net::env_proxy_for(o.url);
    if (env.applies()) proxy = env.value;
  }
  if (!proxy.empty()) {
    const net::ProxyUrl p = net::parse_proxy_url(proxy);
    if (!p.url) throw std::runtime_error("target " + t.name + ": bad proxy url: " + p.error);
    o.proxy = *p.url;
  }
  o.http_version = client_http_version(config::effective_http_version(t));
  o.http2.stream_window = t.http2.stream_window;
  o.http2.connection_window = t.http2.connection_window;
  return o;
}

namespace {

std::string_view stream_media_type(api::Framing framing) {
  return framing == api::Framing::ndjson ? "application/x-ndjson" : "text/event-stream";
}

bool is_stream_content_type(api::Framing framing, std::string_view content_type) {
  if (framing == api::Framing::sse) return text::istarts_with(content_type, "text/event-stream");
  // Ollama sends application/x-ndjson; the other names of JSON Lines are
  // accepted too (proxies and gateways rename it).
  for (std::string_view type : {"application/x-ndjson", "application/ndjson", "application/jsonl",
                                "application/x-jsonlines"})
    if (text::istarts_with(content_type, type)) return true;
  return false;
}

// The server's own timings as the row keeps them (-1 = not reported).
ServerTimings server_timings(const api::ServerTimings& s) {
  auto known = [](double v) { return v >= 0 ? std::optional<double>(v) : std::nullopt; };
  return {known(s.load_seconds), known(s.prompt_eval_seconds), known(s.eval_seconds)};
}

}  // namespace

// "HTTP 500: {...}": the status and the upstream's own words. Secrets are
// masked and the length capped where every probe returns
// (schedule::clean_upstream_text); only a prefix is handed on, so the
// masking never scans the whole 64 KiB.
std::string error_status_detail(int status, std::string_view body) {
  while (!body.empty() && std::string_view(" \t\r\n").find(body.back()) != std::string_view::npos)
    body.remove_suffix(1);
  std::string detail = "HTTP " + std::to_string(status);
  if (!body.empty()) detail.append(": ").append(body.substr(0, 2048));
  return detail;
}

std::vector<std::pair<std::string, std::string>> request_headers(const config::Target& t,
                                                                 const std::string& user_agent,
                                                                 api::Framing framing) {
  const std::string accept(stream_media_type(framing));
  std::vector<std::pair<std::string, std::string>> h;
  const bool browser = t.client == config::ClientStyle::browser;
  if (browser) {
    // What a current desktop browser sends with a fetch() of an SSE answer.
    h.emplace_back("User-Agent",
                   "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                   "Chrome/131.0.0.0 Safari/537.36");
    h.emplace_back("Accept", accept);
    h.emplace_back("Accept-Language", "en-US,en;q=0.9");
    h.emplace_back("Accept-Encoding", "gzip, deflate, br");
    h.emplace_back("Sec-Fetch-Mode", "cors");
  } else {
    h.emplace_back("User-Agent", user_agent);
    h.emplace_back("Accept", accept);
  }
  if (!browser || !t.accept_encoding.empty()) {
    std::string enc;
    for (const auto& e : t.accept_encoding) enc += (enc.empty() ? "" : ", ") + e;
    if (enc.empty()) enc = "identity";
    if (browser) {
      for (auto& [k, v] : h)
        if (k == "Accept-Encoding") v = enc;
    } else {
      h.emplace_back("Accept-Encoding", enc);
    }
  }
  switch (t.auth.kind) {
    case config::Auth::Kind::none: break;
    case config::Auth::Kind::bearer: {
      const api::KeyHeader key = api::key_header(t.api);
      h.emplace_back(std::string(key.name), std::string(key.value_prefix) + t.auth.secret.value);
      break;
    }
    case config::Auth::Kind::header: h.emplace_back(t.auth.header_name, t.auth.secret.value); break;
  }
  for (const auto& kv : t.headers) h.push_back(kv);
  return h;
}

Prober::Prober(boost::asio::io_context& io, const config::Target& target, std::string host_label,
               std::string user_agent)
    : target_(target),
      host_label_(std::move(host_label)),
      user_agent_(std::move(user_agent)),
      client_(io, client_options(target)),
      include_usage_(target.include_usage) {
  adapter_ = api::make_adapter(target.api, target.count);
  if (!adapter_) throw std::runtime_error("target " + target.name + ": unknown api");
}

Prober::~Prober() = default;

void Prober::cancel() { client_.cancel(); }

boost::asio::awaitable<ProbeResult> Prober::run(const config::Prompt& prompt) {
  ProbeResult r;
  Timeline t;
  for (int tries = 0; tries < 2; ++tries) {
    r = ProbeResult{};
    t = Timeline{};
    const bool retry = co_await attempt(prompt, r, t);
    if (!retry) break;
  }
  summarize_probe(t, std::chrono::duration<double>(target_.stall_threshold).count(), Clock::now(),
                  r);
  co_return r;
}

// What one attempt has seen so far.
struct Prober::Attempt {
  ProbeResult& r;
  Timeline& t;
  Deadlines deadlines;
  api::Framing framing;
  sse::Decoder decoder;   // framing sse
  ndjson::Decoder lines;  // framing ndjson: each line becomes line_event.data
  sse::Event line_event;
  Ending ending;
  std::string detail;   // for the failure the ending names
  TimePoint arrival{};  // of the latest successful read: what its events are stamped with
  bool body_done = false;

  // The stream itself has said how it ends: a bad event, an error, the end marker.
  bool stream_over() const {
    return ending.malformed_event || ending.event_too_large || ending.upstream_error ||
           ending.end_marker;
  }
  void record(const http::Fault& fault, Deadline deadline) {
    ending.fault = fault;
    ending.deadline = deadline;
    detail = fault.detail;
  }
};

void Prober::label(const config::Prompt& prompt, ProbeResult& r) const {
  r.ts = wall_clock::unix_now();
  // 64 random bits as 16 hex digits: what ties a row to the exemplars of its
  // observations. One generator per probe thread, seeded by the OS.
  thread_local std::mt19937_64 random_bits = [] {
    std::random_device os;
    std::seed_seq seed{os(), os(), os(), os()};
    return std::mt19937_64(seed);
  }();
  constexpr char kHex[] = "0123456789abcdef";
  std::uint64_t bits = random_bits();
  r.id.assign(16, '0');
  for (int i = 15; i >= 0; --i, bits >>= 4) r.id[static_cast<std::size_t>(i)] = kHex[bits & 15];
  r.target = target_.name;
  r.model = target_.model;
  r.prompt = prompt.name;
  r.host = host_label_;
  r.via_proxy = client_.options().proxy.has_value();
  r.stall_threshold = std::chrono::duration<double>(target_.stall_threshold).count();
}

http::Request Prober::build_request(const config::Prompt& prompt) const {
  api::RequestSpec spec;
  spec.model = target_.model;
  spec.prompt_text = prompt.text;
  spec.max_tokens = target_.max_tokens;
  spec.temperature = target_.temperature;
  spec.include_usage = include_usage_;
  spec.extra_body = target_.body;
  http::Request req;
  req.path = adapter_->request_path(spec);
  req.body = adapter_->build_body(spec);
  req.headers = request_headers(target_, user_agent_, adapter_->framing());
  // The dialect's fixed headers (anthropic-version), unless headers: sets them.
  for (auto& header : adapter_->extra_headers()) {
    const bool overridden =
        std::any_of(req.headers.begin(), req.headers.end(),
                    [&](const auto& kv) { return text::iequals(kv.first, header.first); });
    if (!overridden) req.headers.push_back(std::move(header));
  }
  return req;
}

boost::asio::awaitable<bool> Prober::attempt(const config::Prompt& prompt, ProbeResult& r,
                                             Timeline& t) {
  label(prompt, r);
  const http::Request request = build_request(prompt);
  t.start = Clock::now();
  if (trace_) trace_->restart(t.start);
  t.reserve(std::max(64, target_.max_tokens + 8));
  Attempt a{r,
            t,
            Deadlines::from_start(t.start, target_.timeout.first_token, target_.timeout.idle,
                                  target_.timeout.total),
            adapter_->framing(),
            sse::Decoder(target_.max_event_bytes),
            ndjson::Decoder(target_.max_event_bytes),
            sse::Event{},
            Ending{},
            std::string{}};
  const bool retry = co_await exchange(request, a);
  if (!retry) conclude(a);
  co_return retry;
}

// Connect and send, then the answer: an error body or the stream. A 2xx
// body is read as the dialect's stream whatever its Content-Type says (a
// gateway may omit it or call it text/plain; the SDKs read the body as
// the stream all the same); triage names it only when no event came.
boost::asio::awaitable<bool> Prober::exchange(const http::Request& request, Attempt& a) {
  if (!co_await start(request, a)) co_return false;
  const int status = a.ending.http_status;
  if (status < 200 || status > 299) co_return co_await read_error_body(a);
  co_await stream(a);
  co_await finish_stream(a);
  co_return false;
}

// Resolve, connect, TLS, send, read headers (the client's steps); false when
// one failed.
boost::asio::awaitable<bool> Prober::start(const http::Request& request, Attempt& a) {
  const Deadlines::Bound bound = a.deadlines.next(std::nullopt);
  http::Started started = co_await client_.start(request, bound.at);
  a.t.resolved = started.stamps.resolved;
  a.t.connected = started.stamps.connected;
  a.t.tls_done = started.stamps.tls_done;
  a.t.request_sent = started.stamps.request_sent;
  a.t.headers = started.stamps.headers;
  a.r.interim_responses = started.interim_responses;
  if (!started.response) {
    a.record(started.response.fault(), bound.which);
    client_.finish(false);
    co_return false;
  }
  const http::Response& response = started.response.value();
  a.r.http_status = a.ending.http_status = response.status;
  a.r.content_encoding = response.content_encoding;
  a.r.http_version = response.http_version;
  a.r.content_type = response.content_type.substr(0, kMaxContentTypeBytes);
  a.ending.stream_content_type = is_stream_content_type(a.framing, response.content_type);
  a.r.unexpected_content_type = !a.ending.stream_content_type;
  co_return true;
}

// A bounded error body: it names the problem, and tells us when the server
// rejects stream_options (then true: retry without it). A 429 also says how
// long to stay away (Retry-After), read before finish() lets the response go.
boost::asio::awaitable<bool> Prober::read_error_body(Attempt& a) {
  if (const http::Response* response = client_.response();
      response && a.ending.http_status == 429) {
    a.r.retry_after_seconds =
        http::retry_after_seconds(response->retry_after, wall_clock::unix_now());
  }
  std::string body;
  bool done = false;
  const TimePoint deadline = std::min(a.deadlines.total, Clock::now() + std::chrono::seconds(5));
  while (!done && body.size() < kMaxErrorBodyBytes) {
    auto chunk = co_await client_.read(deadline);
    if (!chunk) break;
    body += chunk->bytes;
    done = chunk->body_done;
  }
  client_.finish(done);
  const int status = a.ending.http_status;
  if (status == 400 && include_usage_ && body.find("stream_options") != std::string::npos) {
    include_usage_ = false;  // remembered for this target from now on
    co_return true;
  }
  a.detail = status == 101 ? "HTTP 101 Switching Protocols: the server left HTTP, no event stream"
                           : error_status_detail(status, body);
  co_return false;
}

// Takes each chunk of the body as its read completes (Client::read_body) and
// names the deadline of the next read: the one that applies now.
class Prober::StreamSink final : public http::ChunkSink {
 public:
  StreamSink(Prober& prober, Attempt& a) : prober_(prober), a_(a), bound_(next_bound()) {}

  std::optional<TimePoint> take(const http::Chunk& chunk) override {
    a_.arrival = chunk.arrival;
    a_.body_done = chunk.body_done;
    if (!chunk.bytes.empty()) prober_.feed(chunk.bytes, a_);
    if (a_.body_done) prober_.end_of_body(a_);
    if (a_.body_done || a_.stream_over()) return std::nullopt;
    bound_ = next_bound();
    return bound_.at;
  }
  // The deadline of the read in flight.
  const Deadlines::Bound& bound() const { return bound_; }

 private:
  Deadlines::Bound next_bound() const {
    std::optional<TimePoint> last;
    if (!a_.t.content_arrivals.empty()) last = a_.t.content_arrivals.back();
    return a_.deadlines.next(last);
  }

  Prober& prober_;
  Attempt& a_;
  Deadlines::Bound bound_;
};

// Reads until the stream says how it ends, the body ends, or a read fails;
// each read runs against the deadline that applies now.
boost::asio::awaitable<void> Prober::stream(Attempt& a) {
  if (a.body_done || a.stream_over()) co_return;
  StreamSink sink(*this, a);
  if (std::optional<http::Fault> fault = co_await client_.read_body(sink, sink.bound().at))
    a.record(*fault, sink.bound().which);
}

void Prober::feed(std::string_view bytes, Attempt& a) {
  bool too_large = false;
  if (a.framing == api::Framing::ndjson) {
    too_large = a.lines.feed(bytes, [&](std::string_view line) { take_line(line, a); }) ==
                ndjson::Status::line_too_large;
  } else {
    too_large = a.decoder.feed(bytes, [&](const sse::Event& ev) { take(ev, a); }) ==
                sse::Status::event_too_large;
  }
  if (too_large && !a.stream_over()) {
    a.ending.event_too_large = true;
    a.detail = "event larger than max_event_bytes";
  }
}

// The body ended cleanly: an NDJSON server may leave its last line
// unterminated, and that line is still whole. (An SSE event without its blank
// line is discarded, as WHATWG says.)
void Prober::end_of_body(Attempt& a) {
  if (a.framing == api::Framing::ndjson)
    a.lines.finish([&](std::string_view line) { take_line(line, a); });
}

// An NDJSON line is an event whose data is the line.
void Prober::take_line(std::string_view line, Attempt& a) {
  a.line_event.data.assign(line);
  take(a.line_event, a);
}

// One event: every event of a read carries that read's arrival instant.
void Prober::take(const sse::Event& ev, Attempt& a) {
  if (a.stream_over()) return;
  a.ending.any_event = true;
  const api::EventMeaning m = adapter_->interpret(ev);
  if (trace_) trace_->record(a.arrival, ev.data.size(), m);
  // m.model views the adapter's buffer: copied now, before the next event.
  if (a.r.response_model.empty() && !m.model.empty()) a.r.response_model.assign(m.model);
  if (m.protocol_error) {
    a.ending.malformed_event = true;
    a.detail = "malformed event";
    return;
  }
  if (m.upstream_error) {
    a.ending.upstream_error = true;
    a.detail = m.error_message;
    return;
  }
  if (m.content) {
    if (a.t.content_arrivals.size() == kMaxContentChunks) {
      a.ending.malformed_event = true;  // a stream no answer makes: protocol
      a.detail = "more than " + std::to_string(kMaxContentChunks) + " content chunks";
      return;
    }
    a.t.content_arrivals.push_back(a.arrival);
    a.ending.content = true;
  }
  if (m.reasoning && !a.t.first_reasoning) a.t.first_reasoning = a.arrival;
  if (m.reasoning && !m.content) ++a.t.reasoning_chunks;
  if (m.usage) {
    if (m.usage->prompt_tokens >= 0) a.r.prompt_tokens = m.usage->prompt_tokens;
    if (m.usage->completion_tokens >= 0) a.r.completion_tokens = m.usage->completion_tokens;
    if (m.usage->reasoning_tokens >= 0) a.r.reasoning_tokens = m.usage->reasoning_tokens;
  }
  if (!m.finish_reason.empty()) a.r.finish_reason = m.finish_reason;
  if (m.server_timings) a.r.server = server_timings(*m.server_timings);
  if (m.done) {
    a.ending.end_marker = true;
    a.t.end = a.arrival;
  }
}

// After the end marker, drains the rest of the body (usually just the last
// chunk marker) so the connection can be reused; this never touches the
// probe's clock. Otherwise the stream ended at the latest read (or failed).
boost::asio::awaitable<void> Prober::finish_stream(Attempt& a) {
  const bool clean_end = a.ending.end_marker;
  if (!clean_end) {
    if (!a.ending.fault) a.t.end = a.arrival;
    client_.finish(false);
    co_return;
  }
  const TimePoint deadline = std::min(a.deadlines.total, Clock::now() + std::chrono::seconds(1));
  while (!a.body_done) {
    auto chunk = co_await client_.read(deadline);
    if (!chunk) break;
    a.body_done = chunk->body_done;
  }
  client_.finish(a.body_done);
}

// What the row's `error` says: the step's own words, or what the stream
// failed to show.
std::string Prober::failure_detail(Attempt& a) {
  const bool ended = !a.ending.fault;
  if (a.r.reason == FailureReason::empty)
    return "the stream ended without a content chunk (finish_reason '" + a.r.finish_reason + "')";
  const bool status_ok = a.ending.http_status >= 200 && a.ending.http_status <= 299;
  if (a.r.reason == FailureReason::protocol && ended && status_ok && !a.ending.any_event &&
      !a.ending.stream_content_type)
    return "unexpected content-type '" + a.r.content_type + "' and no event in the body";
  if (a.r.reason == FailureReason::truncated && ended) return "stream ended before the end marker";
  return std::move(a.detail);
}

void Prober::conclude(Attempt& a) {
  a.ending.finish_reason = !a.r.finish_reason.empty();
  a.ending.partial_event = a.framing == api::Framing::ndjson ? a.lines.has_partial_line()
                                                             : a.decoder.has_partial_event();
  a.r.reason = triage(a.ending);
  a.r.ok = a.r.reason == FailureReason::none;
  if (a.r.ok) return;
  a.r.error_detail = failure_detail(a);
  if (a.ending.fault && a.ending.fault->h2_error)
    a.r.h2_error = h2::error_code_name(*a.ending.fault->h2_error);
  if (!a.t.end) a.t.end = Clock::now();
}

}  // namespace lse::probe
