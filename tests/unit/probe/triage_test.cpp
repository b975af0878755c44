// The one triage: facts of a finished probe → DESIGN §3 failure reason, one
// test per reason, plus the precedence between facts and the deadline choice.
#include "probe/triage.hpp"

#include <gtest/gtest.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http/error.hpp>

namespace {

using lse::http::Fault;
using lse::http::Interrupt;
using lse::http::Stage;
using lse::probe::Deadline;
using lse::probe::Deadlines;
using lse::probe::Ending;
using lse::probe::FailureReason;
using lse::probe::triage;
namespace asio = boost::asio;
using namespace std::chrono_literals;

Ending with_fault(Stage stage, lse::http::error_code ec, Interrupt interrupt = Interrupt::none,
                  Deadline deadline = Deadline::first_token) {
  Ending e;
  e.fault = Fault{stage, interrupt, ec, "x"};
  e.deadline = deadline;
  return e;
}

// A 200 event stream that ended with [DONE].
Ending clean_stream() {
  Ending e;
  e.http_status = 200;
  e.end_marker = true;
  e.finish_reason = true;
  e.any_event = true;
  e.content = true;
  return e;
}

TEST(Triage, Dns) {
  EXPECT_EQ(triage(with_fault(Stage::resolve, asio::error::host_not_found)), FailureReason::dns);
  EXPECT_EQ(triage(with_fault(Stage::resolve,
                              lse::http::make_error_code(lse::http::Errc::name_not_resolved))),
            FailureReason::dns);
}

// A lookup that outlives the first_token deadline is `dns`, not a timeout:
// the name is what to fix.
TEST(Triage, DnsPastTheDeadline) {
  Ending e;
  e.fault = Fault{Stage::resolve, Interrupt::deadline, {}, "dns: timed out after 3s resolving x"};
  e.deadline = Deadline::first_token;
  EXPECT_EQ(triage(e), FailureReason::dns);
}

TEST(Triage, ResolveIsTheFormerNameOfDns) {
  EXPECT_EQ(lse::probe::parse_failure_reason("resolve"), FailureReason::dns);
  EXPECT_EQ(lse::probe::parse_failure_reason("dns"), FailureReason::dns);
}

TEST(Triage, Connect) {
  EXPECT_EQ(triage(with_fault(Stage::connect, asio::error::connection_refused)),
            FailureReason::connect);
  // A proxy that refuses the tunnel, or drops it, is a connect failure too.
  EXPECT_EQ(
      triage(with_fault(Stage::proxy_connect, make_error_code(lse::http::Errc::proxy_refused))),
      FailureReason::connect);
  EXPECT_EQ(triage(with_fault(Stage::proxy_connect, asio::error::eof)), FailureReason::connect);
}

TEST(Triage, Tls) {
  const lse::http::error_code handshake(1, asio::error::get_ssl_category());
  EXPECT_EQ(triage(with_fault(Stage::tls, handshake)), FailureReason::tls);
  EXPECT_EQ(triage(with_fault(Stage::tls, asio::error::eof)), FailureReason::tls);
  // A TLS record error mid-stream is the TLS layer failing, not a close.
  EXPECT_EQ(triage(with_fault(Stage::body, handshake)), FailureReason::tls);
}

TEST(Triage, Http4xx429And5xx) {
  for (int status : {400, 401, 404, 499}) {
    Ending e;
    e.http_status = status;
    EXPECT_EQ(triage(e), FailureReason::http_4xx) << status;
  }
  Ending e;
  e.http_status = 429;
  EXPECT_EQ(triage(e), FailureReason::http_429);
  for (int status : {500, 503, 599}) {
    e.http_status = status;
    EXPECT_EQ(triage(e), FailureReason::http_5xx) << status;
  }
  // Reading the error body may then fail: the status still names the probe.
  e.fault = Fault{Stage::body, Interrupt::deadline, {}, "timeout"};
  EXPECT_EQ(triage(e), FailureReason::http_5xx);
  // Other statuses are no stream at all.
  for (int status : {101, 204, 302}) {
    EXPECT_EQ(lse::probe::triage_status(status), FailureReason::protocol) << status;
  }
  e = Ending{};
  e.http_status = 302;
  EXPECT_EQ(triage(e), FailureReason::protocol);
}

// A status of no class HTTP defines, or an interim one as the final
// answer, is neither a server error nor a client error.
TEST(Triage, UnknownStatusClassesAreHttpOther) {
  for (int status : {1, 99, 600, 999, 100, 102, 103, 199}) {
    Ending e;
    e.http_status = status;
    EXPECT_EQ(triage(e), FailureReason::http_other) << status;
  }
  EXPECT_EQ(lse::probe::triage_status(999), FailureReason::http_other);
  EXPECT_EQ(lse::probe::triage_status(599), FailureReason::http_5xx);
  EXPECT_EQ(lse::probe::triage_status(101), FailureReason::protocol);  // left HTTP
}

TEST(Triage, AStreamWithoutAContentChunkIsEmpty) {
  // finish_reason and [DONE], nothing else.
  Ending e = clean_stream();
  e.content = false;
  EXPECT_EQ(triage(e), FailureReason::empty);
  // Body ended after a finish_reason, no end marker, no content.
  e.end_marker = false;
  EXPECT_EQ(triage(e), FailureReason::empty);
  // Without a finish reason it is cut short, not empty.
  e.finish_reason = false;
  EXPECT_EQ(triage(e), FailureReason::truncated);
}

// The Content-Type is not fatal: only a body without one event is protocol.
TEST(Triage, AnotherContentTypeIsProtocolOnlyWithoutAnyEvent) {
  Ending e = clean_stream();
  e.stream_content_type = false;
  EXPECT_EQ(triage(e), FailureReason::none);
  e.end_marker = false;
  EXPECT_EQ(triage(e), FailureReason::none);  // finish_reason, body ended
  Ending nothing;
  nothing.http_status = 200;
  nothing.stream_content_type = false;
  EXPECT_EQ(triage(nothing), FailureReason::protocol);
  // A deadline still names a slow stream whatever its type.
  nothing.fault = Fault{Stage::body, Interrupt::deadline, {}, "timeout"};
  EXPECT_EQ(triage(nothing), FailureReason::timeout_first_token);
}

// (A lookup past its deadline is `dns`: Triage.DnsPastTheDeadline.)
TEST(Triage, TimeoutsFollowTheDeadline) {
  for (Stage stage : {Stage::connect, Stage::tls, Stage::send, Stage::headers, Stage::body}) {
    EXPECT_EQ(triage(with_fault(stage, {}, Interrupt::deadline, Deadline::first_token)),
              FailureReason::timeout_first_token);
    EXPECT_EQ(triage(with_fault(stage, {}, Interrupt::deadline, Deadline::idle)),
              FailureReason::timeout_idle);
    EXPECT_EQ(triage(with_fault(stage, asio::error::operation_aborted, Interrupt::deadline,
                                Deadline::total)),
              FailureReason::timeout_total);
  }
}

TEST(Triage, Truncated) {
  for (auto ec : {lse::http::error_code(asio::error::eof),
                  lse::http::error_code(asio::error::connection_reset),
                  lse::http::error_code(asio::ssl::error::stream_truncated)}) {
    EXPECT_EQ(triage(with_fault(Stage::body, ec)), FailureReason::truncated) << ec.message();
    EXPECT_EQ(triage(with_fault(Stage::headers, ec)), FailureReason::truncated);
  }
  EXPECT_EQ(triage(with_fault(Stage::send, asio::error::broken_pipe)), FailureReason::truncated);
  // The body ended without the end marker and without a finish reason, or
  // inside an event.
  Ending e;
  e.http_status = 200;
  e.any_event = true;
  e.content = true;
  EXPECT_EQ(triage(e), FailureReason::truncated);
  e.finish_reason = true;
  e.partial_event = true;
  EXPECT_EQ(triage(e), FailureReason::truncated);
  // With a finish reason and nothing pending, a body end is a clean end.
  e.partial_event = false;
  EXPECT_EQ(triage(e), FailureReason::none);
}

TEST(Triage, Protocol) {
  EXPECT_EQ(triage(with_fault(Stage::headers, boost::beast::http::error::bad_version)),
            FailureReason::protocol);
  EXPECT_EQ(triage(with_fault(Stage::headers, boost::beast::http::error::header_limit)),
            FailureReason::protocol);
  EXPECT_EQ(
      triage(with_fault(Stage::headers, make_error_code(lse::http::Errc::unsupported_encoding))),
      FailureReason::protocol);
  EXPECT_EQ(triage(with_fault(Stage::body, make_error_code(lse::http::Errc::corrupt_encoding))),
            FailureReason::protocol);
  Ending wrong_type;
  wrong_type.http_status = 200;
  wrong_type.stream_content_type = false;
  EXPECT_EQ(triage(wrong_type), FailureReason::protocol);
  Ending bad = clean_stream();
  bad.end_marker = false;
  bad.malformed_event = true;
  EXPECT_EQ(triage(bad), FailureReason::protocol);
  bad.malformed_event = false;
  bad.event_too_large = true;
  EXPECT_EQ(triage(bad), FailureReason::protocol);
}

// HTTP/2: the server's RST_STREAM (or a GOAWAY that cut our stream) is
// `reset` at whatever stage it came; a broken session or h2 not negotiated
// is `protocol`, also at the TLS stage where ALPN decides.
TEST(Triage, ResetAndHttp2ProtocolFaults) {
  using lse::http::Errc;
  for (Stage stage : {Stage::send, Stage::headers, Stage::body}) {
    EXPECT_EQ(triage(with_fault(stage, make_error_code(Errc::stream_reset))), FailureReason::reset);
    EXPECT_EQ(triage(with_fault(stage, make_error_code(Errc::h2_protocol))),
              FailureReason::protocol);
  }
  EXPECT_EQ(triage(with_fault(Stage::tls, make_error_code(Errc::h2_not_negotiated))),
            FailureReason::protocol);
  EXPECT_EQ(triage(with_fault(Stage::proxy_connect, make_error_code(Errc::h2_not_negotiated))),
            FailureReason::protocol);
  // A deadline that expired is still the deadline's.
  EXPECT_EQ(triage(with_fault(Stage::body, make_error_code(Errc::stream_reset), Interrupt::deadline,
                              Deadline::idle)),
            FailureReason::timeout_idle);
  // After the end marker, a reset of the finished stream changes nothing.
  Ending e = clean_stream();
  e.fault = Fault{Stage::body, Interrupt::none, make_error_code(Errc::stream_reset), "RST_STREAM"};
  EXPECT_EQ(triage(e), FailureReason::none);
  EXPECT_EQ(lse::probe::to_string(FailureReason::reset), "reset");
  EXPECT_EQ(lse::probe::parse_failure_reason("reset"), FailureReason::reset);
}

TEST(Triage, UpstreamError) {
  Ending e;
  e.http_status = 200;
  e.upstream_error = true;
  EXPECT_EQ(triage(e), FailureReason::upstream_error);
  // It stands even when the connection then failed in the same read.
  e.fault = Fault{Stage::body, Interrupt::none, asio::error::eof, "closed"};
  EXPECT_EQ(triage(e), FailureReason::upstream_error);
}

TEST(Triage, Canceled) {
  for (Stage stage : {Stage::resolve, Stage::connect, Stage::proxy_connect, Stage::tls, Stage::send,
                      Stage::headers, Stage::body})
    EXPECT_EQ(triage(with_fault(stage, asio::error::operation_aborted, Interrupt::canceled)),
              FailureReason::canceled);
}

TEST(Triage, SuccessAndTheEndMarkerWins) {
  EXPECT_EQ(triage(clean_stream()), FailureReason::none);
  Ending e = clean_stream();
  e.fault = Fault{Stage::body, Interrupt::none, asio::error::eof, "closed"};
  EXPECT_EQ(triage(e), FailureReason::none);
}

TEST(Deadlines, FirstTokenThenIdleCappedByTotal) {
  const auto start = std::chrono::steady_clock::time_point{} + 1h;
  const Deadlines d = Deadlines::from_start(start, 1s, 2s, 10s);
  auto b = d.next(std::nullopt);
  EXPECT_EQ(b.at, start + 1s);
  EXPECT_EQ(b.which, Deadline::first_token);
  b = d.next(start + 3s);
  EXPECT_EQ(b.at, start + 5s);
  EXPECT_EQ(b.which, Deadline::idle);
  b = d.next(start + 9s);
  EXPECT_EQ(b.at, start + 10s);
  EXPECT_EQ(b.which, Deadline::total);
  // When first_token is no nearer than total, total is the one that expires.
  const Deadlines same = Deadlines::from_start(start, 10s, 2s, 10s);
  EXPECT_EQ(same.next(std::nullopt).which, Deadline::total);
}

}  // namespace
