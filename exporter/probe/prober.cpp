// One probe: the only place where the HTTP client, the SSE decoder and the
// API adapter meet. Timestamps come from the client's reads; parsing happens
// after them and never moves them.
#include "probe/prober.hpp"

#include <algorithm>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <stdexcept>

#include "sse/decoder.hpp"

namespace lse::probe {
namespace {

http::ClientOptions client_options(const config::Target& t) {
  http::ClientOptions o;
  auto url = http::parse_url(t.url);
  if (!url) throw std::runtime_error("target " + t.name + ": bad url");
  o.url = *url;
  o.tls = {t.tls.ca_file, t.tls.cert_file, t.tls.key_file, t.tls.server_name,
           t.tls.insecure_skip_verify};
  std::string proxy = t.proxy_url;
  if (proxy.empty() && t.proxy_from_environment) {
    auto env = [](const char* a, const char* b) -> std::string {
      if (const char* v = std::getenv(a); v && *v) return v;
      if (const char* v = std::getenv(b); v && *v) return v;
      return {};
    };
    proxy = o.url.tls ? env("HTTPS_PROXY", "https_proxy") : env("HTTP_PROXY", "http_proxy");
    if (!proxy.empty() && http::no_proxy_matches(env("NO_PROXY", "no_proxy"), o.url)) proxy.clear();
  }
  if (!proxy.empty()) {
    auto p = http::parse_url(proxy);
    if (!p) throw std::runtime_error("target " + t.name + ": bad proxy url");
    o.proxy = *p;
  }
  return o;
}

api::CountSet count_set(const config::CountSet& c) {
  return {c.content, c.reasoning, c.tool_calls};
}

FailureReason reason_for(http::ErrorKind k, bool first_token_phase, bool total_bound) {
  switch (k) {
    case http::ErrorKind::none: return FailureReason::none;
    case http::ErrorKind::resolve: return FailureReason::resolve;
    case http::ErrorKind::connect: return FailureReason::connect;
    case http::ErrorKind::tls: return FailureReason::tls;
    case http::ErrorKind::timeout:
      if (total_bound) return FailureReason::timeout_total;
      return first_token_phase ? FailureReason::timeout_first_token : FailureReason::timeout_idle;
    case http::ErrorKind::closed: return FailureReason::truncated;
    case http::ErrorKind::protocol: return FailureReason::protocol;
    case http::ErrorKind::canceled: return FailureReason::canceled;
  }
  return FailureReason::protocol;
}

FailureReason reason_for_status(int status) {
  if (status == 429) return FailureReason::http_429;
  if (status >= 500) return FailureReason::http_5xx;
  if (status >= 400) return FailureReason::http_4xx;
  return FailureReason::protocol;  // 1xx/3xx/other 2xx are not a stream
}

bool starts_with_icase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> request_headers(const config::Target& t,
                                                                 const std::string& user_agent) {
  std::vector<std::pair<std::string, std::string>> h;
  const bool browser = t.client == "browser";
  if (browser) {
    // What a current desktop browser sends with a fetch() of an SSE answer.
    h.emplace_back("User-Agent",
                   "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                   "Chrome/131.0.0.0 Safari/537.36");
    h.emplace_back("Accept", "text/event-stream");
    h.emplace_back("Accept-Language", "en-US,en;q=0.9");
    h.emplace_back("Accept-Encoding", "gzip, deflate, br");
    h.emplace_back("Sec-Fetch-Mode", "cors");
  } else {
    h.emplace_back("User-Agent", user_agent);
    h.emplace_back("Accept", "text/event-stream");
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
    case config::Auth::Kind::bearer:
      h.emplace_back("Authorization", "Bearer " + t.auth.secret.value);
      break;
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
  auto dialect = api::parse_dialect(target.api);
  if (!dialect)
    throw std::runtime_error("target " + target.name + ": unsupported api " + target.api);
  adapter_ = api::make_adapter(*dialect, count_set(target.count));
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
  summarize(t, std::chrono::duration<double>(target_.stall_threshold).count(), r);
  co_return r;
}

boost::asio::awaitable<bool> Prober::attempt(const config::Prompt& prompt, ProbeResult& r,
                                             Timeline& t) {
  using std::chrono::system_clock;
  r.ts = std::chrono::duration<double>(system_clock::now().time_since_epoch()).count();
  r.target = target_.name;
  r.model = target_.model;
  r.prompt = prompt.name;
  r.host = host_label_;
  r.stall_threshold = std::chrono::duration<double>(target_.stall_threshold).count();

  api::RequestSpec spec;
  spec.model = target_.model;
  spec.prompt_text = prompt.text;
  spec.max_tokens = target_.max_tokens;
  spec.temperature = target_.temperature;
  spec.include_usage = include_usage_;
  spec.extra_body = target_.body;
  http::Request req;
  req.path = std::string(adapter_->path());
  req.body = adapter_->build_body(spec);
  req.headers = request_headers(target_, user_agent_);

  t.start = Clock::now();
  const TimePoint total_deadline = t.start + target_.timeout.total;
  const TimePoint first_deadline = std::min(total_deadline, t.start + target_.timeout.first_token);
  t.reserve(std::max(64, target_.max_tokens + 8));

  auto fail = [&](FailureReason reason, std::string detail) {
    r.ok = false;
    r.reason = reason;
    r.error_detail = std::move(detail);
    if (!t.end) t.end = Clock::now();
  };

  http::Stamps stamps;
  http::Response resp;
  http::Error err = co_await client_.start(req, first_deadline, stamps, resp);
  t.resolved = stamps.resolved;
  t.connected = stamps.connected;
  t.tls_done = stamps.tls_done;
  t.request_sent = stamps.request_sent;
  t.headers = stamps.headers;
  if (err) {
    fail(reason_for(err.kind, true, first_deadline == total_deadline), err.detail);
    client_.finish(false);
    co_return false;
  }
  r.http_status = resp.status;

  if (resp.status < 200 || resp.status > 299) {
    // Read a bounded error body: it names the problem, and tells us when the
    // server rejects stream_options.
    std::string body;
    bool done = false;
    TimePoint arrival{};
    const TimePoint deadline = std::min(total_deadline, Clock::now() + std::chrono::seconds(5));
    while (!done && body.size() < 65536) {
      if (co_await client_.read(deadline, body, arrival, done)) break;
    }
    client_.finish(done);
    if (resp.status == 400 && include_usage_ && body.find("stream_options") != std::string::npos) {
      include_usage_ = false;  // remembered for this target from now on
      co_return true;
    }
    fail(reason_for_status(resp.status), "HTTP " + std::to_string(resp.status));
    co_return false;
  }
  if (!starts_with_icase(resp.content_type, "text/event-stream")) {
    client_.finish(false);
    fail(FailureReason::protocol,
         "unexpected content-type '" + resp.content_type.substr(0, 64) + "'");
    co_return false;
  }

  sse::Decoder decoder(target_.max_event_bytes);
  bool ended = false;  // [DONE]
  bool body_done = false;
  FailureReason stream_failure = FailureReason::none;
  std::string detail;
  TimePoint arrival{};
  while (!ended && !body_done && stream_failure == FailureReason::none) {
    const bool before_first = t.content_arrivals.empty();
    const TimePoint idle_deadline =
        before_first ? first_deadline
                     : std::min(total_deadline, t.content_arrivals.back() + target_.timeout.idle);
    body_.clear();
    err = co_await client_.read(idle_deadline, body_, arrival, body_done);
    if (!body_.empty()) {
      const auto status = decoder.feed(body_, [&](const sse::Event& ev) {
        if (ended || stream_failure != FailureReason::none) return;
        const api::EventMeaning m = adapter_->interpret(ev);
        if (m.protocol_error) {
          stream_failure = FailureReason::protocol;
          detail = "malformed event";
          return;
        }
        if (m.upstream_error) {
          stream_failure = FailureReason::upstream_error;
          detail = m.error_message;
          return;
        }
        if (m.content) t.content_arrivals.push_back(arrival);
        if (m.reasoning && !t.first_reasoning) t.first_reasoning = arrival;
        if (m.usage) {
          if (m.usage->prompt_tokens >= 0) r.prompt_tokens = m.usage->prompt_tokens;
          if (m.usage->completion_tokens >= 0) r.completion_tokens = m.usage->completion_tokens;
        }
        if (!m.finish_reason.empty()) r.finish_reason = m.finish_reason;
        if (m.done) {
          ended = true;
          t.end = arrival;
        }
      });
      if (status == sse::Status::event_too_large && stream_failure == FailureReason::none) {
        stream_failure = FailureReason::protocol;
        detail = "event larger than max_event_bytes";
      }
    }
    if (err && !ended && stream_failure == FailureReason::none) {
      const bool total_bound =
          before_first ? first_deadline == total_deadline : idle_deadline == total_deadline;
      fail(reason_for(err.kind, before_first, total_bound), err.detail);
      client_.finish(false);
      co_return false;
    }
  }
  if (stream_failure != FailureReason::none) {
    t.end = arrival;
    client_.finish(false);
    fail(stream_failure, detail);
    co_return false;
  }
  if (!ended) {
    // The body ended without [DONE]: a clean end only if the answer finished.
    t.end = arrival;
    client_.finish(false);
    if (r.finish_reason.empty() || decoder.has_partial_event()) {
      fail(FailureReason::truncated, "stream ended before the end marker");
      co_return false;
    }
  } else {
    // Drain the rest of the body (usually just the last chunk marker) so the
    // connection can be reused; this never touches the probe's clock.
    const TimePoint drain_deadline =
        std::min(total_deadline, Clock::now() + std::chrono::seconds(1));
    std::string rest;
    TimePoint ignored{};
    while (!body_done) {
      rest.clear();
      if (co_await client_.read(drain_deadline, rest, ignored, body_done)) break;
    }
    client_.finish(body_done);
  }
  r.ok = true;
  co_return false;
}

}  // namespace lse::probe
