// The prober against a scripted in-process peer: every failure reason it can
// produce, the three timeouts, cancellation, the stream_options retry, and a
// planted pause that must come out as exactly one stall of its length.
#include "probe/prober.hpp"

#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <chrono>

#include "../http/scripted_peer.hpp"
#include "probe_harness.hpp"

namespace {

namespace asio = boost::asio;
using lse::probe::FailureReason;
using lse::probe::ProbeResult;
using lse::test::expect_failure;
using lse::test::expect_gap_between_writes;
using lse::test::expect_wait_until_write;
using lse::test::PeerConn;
using lse::test::probe;
using lse::test::Probed;
using lse::test::ScriptedPeer;
using lse::test::target_for;
using namespace std::chrono_literals;

// --- success and the clock ----------------------------------------------------

TEST(Prober, PlantedPauseIsExactlyOneStallOfItsLength) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    for (int i = 0; i < 6; ++i) {
      PeerConn::pause(i == 3 ? 300ms : 20ms);
      c.send_content(i);
    }
    c.send_end();
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  ASSERT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(p.result.chunks, 6u);
  EXPECT_EQ(p.result.stalls, 1u);
  ASSERT_EQ(p.result.gaps.size(), 5u);
  // Write 0 is the head, write 1 + i content i: the 300 ms pause is before write 4.
  expect_gap_between_writes(p.result.gaps[2], peer, 3, 4, 0.030);
  ASSERT_TRUE(p.result.gap_max);
  EXPECT_EQ(*p.result.gap_max, p.result.gaps[2]);
  EXPECT_EQ(p.result.finish_reason, "stop");
  EXPECT_EQ(p.result.http_status, 200);
}

TEST(Prober, ServerRejectingStreamOptionsIsRetriedWithoutThem) {
  std::vector<std::string> requests(2);
  int n = 0;
  ScriptedPeer peer(
      [&](PeerConn& c) {
        requests[n] = c.read_request();
        if (n++ == 0) {
          c.send_status(400, "{\"error\":\"unknown field stream_options\"}");
          return;
        }
        c.send_stream_head();
        c.send_content(0);
        c.send_end();
        c.hang();
      },
      2);
  const Probed p = probe(target_for(peer.url()));
  ASSERT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(p.result.chunks, 1u);
  EXPECT_NE(requests[0].find("stream_options"), std::string::npos);
  EXPECT_EQ(requests[1].find("stream_options"), std::string::npos);
}

// A server that answers the moment the request is in: its headers' kernel
// stamp often precedes the user-space stamp of our own send. Every phase of
// every probe is still >= 0 and they add up to TTFT.
TEST(Prober, PhasesOfAnInstantServerAreNeverNegativeAndSumToTtft) {
  constexpr int kProbes = 40;
  ScriptedPeer peer(
      [](PeerConn& c) {
        for (int i = 0; i < kProbes; ++i) {
          c.read_request();
          c.send_stream_head();
          c.send_content(0);
          c.send_end();
        }
        c.hang();
      },
      1);
  asio::io_context io;
  lse::probe::Prober prober(io, target_for(peer.url()), "host", "probe-test/1");
  const lse::config::Prompt prompt{"short", "hi", "inline"};
  std::vector<ProbeResult> results;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < kProbes; ++i) results.push_back(co_await prober.run(prompt));
      },
      asio::detached);
  io.run_for(20s);
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kProbes));
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.error_detail;
    double sum = 0;
    for (auto ph : lse::probe::kAllPhases) {
      const auto& v = r.phases[static_cast<std::size_t>(ph)];
      if (!v) continue;
      EXPECT_GE(*v, 0.0) << lse::probe::to_string(ph);
      sum += *v;
    }
    EXPECT_NEAR(sum, *r.ttft, 1e-9);
  }
}

// --- dialects: framing, headers, path ------------------------------------------

std::string ollama_line(int i) {
  return "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"w" +
         std::to_string(i) + "\"},\"done\":false}\n";
}
const char* const kOllamaDone =
    "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,"
    "\"done_reason\":\"stop\",\"eval_count\":6,\"prompt_eval_count\":3,"
    "\"load_duration\":5000000,\"prompt_eval_duration\":20000000,\"eval_duration\":"
    "120000000}";

lse::config::Target ollama_target(const std::string& url) {
  auto t = target_for(url.substr(0, url.size() - 3));  // the server root: no /v1
  t.api = lse::api::Dialect::ollama_chat;
  return t;
}

// NDJSON: a line is an event, whatever the chunking; the planted pause is one
// stall, and the done line (left unterminated, as servers may) ends the stream.
TEST(Prober, OllamaLinesSplitAcrossChunksAreEventsAtTheReadThatCompletesThem) {
  std::string request;
  ScriptedPeer peer([&](PeerConn& c) {
    request = c.read_request();
    c.send_stream_head("application/x-ndjson; charset=utf-8");
    for (int i = 0; i < 6; ++i) {
      PeerConn::pause(i == 3 ? 300ms : 20ms);
      const std::string line = ollama_line(i);
      c.send_chunk(line.substr(0, 10));  // the line's start alone: no event yet
      PeerConn::pause(5ms);
      c.send_chunk(line.substr(10));
    }
    c.send_chunk(kOllamaDone);
    c.send("0\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(ollama_target(peer.url()));
  ASSERT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(request.substr(0, request.find(' ', 5)), "POST /api/chat");
  EXPECT_NE(request.find("Accept: application/x-ndjson"), std::string::npos) << request;
  EXPECT_EQ(p.result.chunks, 6u);
  EXPECT_EQ(p.result.stalls, 1u);
  ASSERT_EQ(p.result.gaps.size(), 5u);
  // A line arrives with its second half: the gap before line 3 is its 300 ms
  // pause plus the 5 ms between its halves, the others 20 + 5 ms.
  // Write 0 is the head; line i is written as writes 1 + 2i and 2 + 2i.
  expect_gap_between_writes(p.result.gaps[2], peer, 6, 8, 0.030);
  expect_gap_between_writes(p.result.gaps[0], peer, 2, 4, 0.015);
  EXPECT_EQ(p.result.finish_reason, "stop");
  EXPECT_EQ(p.result.completion_tokens, 6);
  EXPECT_EQ(p.result.prompt_tokens, 3);
  ASSERT_TRUE(p.result.server);
  EXPECT_NEAR(*p.result.server->load, 0.005, 1e-9);
  EXPECT_NEAR(*p.result.server->prompt_eval, 0.020, 1e-9);
  EXPECT_NEAR(*p.result.server->eval, 0.120, 1e-9);
}

TEST(Prober, OllamaStreamCutInsideALineIsTruncated) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head("application/x-ndjson");
    c.send_chunk(ollama_line(0));
    c.send_chunk(ollama_line(1).substr(0, 12));
    c.close();
  });
  const Probed p = probe(ollama_target(peer.url()));
  expect_failure(p, FailureReason::truncated);
  EXPECT_EQ(p.result.chunks, 1u);
}

TEST(Prober, OllamaBodyEndingWithoutTheDoneLineIsTruncated) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head("application/x-ndjson");
    c.send_chunk(ollama_line(0));
    c.send("0\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(ollama_target(peer.url()));
  expect_failure(p, FailureReason::truncated);
  EXPECT_EQ(p.result.error_detail, "stream ended before the end marker");
}

// SSE where NDJSON belongs: its lines are no Ollama events.
TEST(Prober, OllamaAnsweringWithSseIsProtocol) {
  ScriptedPeer peer([&](PeerConn& c) {
    c.read_request();
    c.send_stream_head("text/event-stream");
    c.send_event("{\"choices\":[{\"delta\":{\"content\":\"w\"}}]}");
    c.hang();
  });
  expect_failure(probe(ollama_target(peer.url())), FailureReason::protocol);
}

// NDJSON lines called application/json (as a proxy may rename them) are
// the stream all the same.
TEST(Prober, OllamaLinesCalledApplicationJsonAreMeasured) {
  ScriptedPeer peer([&](PeerConn& c) {
    c.read_request();
    c.send_stream_head("application/json");
    c.send_chunk(ollama_line(0));
    c.send_chunk(ollama_line(1));
    c.send_chunk(kOllamaDone);
    c.send("0\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(ollama_target(peer.url()));
  ASSERT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(p.result.chunks, 2u);
  EXPECT_EQ(p.result.content_type, "application/json");
  EXPECT_TRUE(p.result.unexpected_content_type);
}

TEST(Prober, AnthropicKeyHeaderVersionAndEventNames) {
  std::string request;
  ScriptedPeer peer([&](PeerConn& c) {
    request = c.read_request();
    c.send_stream_head();
    c.send_chunk(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"
        "{\"input_tokens\":7,\"output_tokens\":1}}}\n\n");
    c.send_chunk("event: ping\ndata: {\"type\":\"ping\"}\n\n");
    for (int i = 0; i < 3; ++i) {
      PeerConn::pause(20ms);
      c.send_chunk(
          "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
          "\"delta\":{\"type\":\"text_delta\",\"text\":\"w\"}}\n\n");
    }
    c.send_chunk(
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
        "\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n");
    c.send_chunk("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    c.send("0\r\n\r\n");
    c.hang();
  });
  auto t = target_for(peer.url());
  t.api = lse::api::Dialect::anthropic_messages;
  t.auth.kind = lse::config::Auth::Kind::bearer;
  t.auth.secret = {"sk-ant-test-key", "env X"};
  const Probed p = probe(t);
  ASSERT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(request.substr(0, request.find(' ', 5)), "POST /v1/messages");
  EXPECT_NE(request.find("x-api-key: sk-ant-test-key\r\n"), std::string::npos) << request;
  EXPECT_EQ(request.find("Authorization"), std::string::npos) << request;
  EXPECT_NE(request.find("anthropic-version: 2023-06-01\r\n"), std::string::npos) << request;
  EXPECT_EQ(p.result.chunks, 3u);
  EXPECT_EQ(p.result.finish_reason, "stop");
  EXPECT_EQ(p.result.prompt_tokens, 7);
  EXPECT_EQ(p.result.completion_tokens, 3);
  EXPECT_FALSE(p.result.server);
}

// Tokens per chunk from a real stream: 3 reasoning events the target does
// not count as content, 4 content events of 3 tokens each, a finish event
// and a usage-only event (no text: no chunk). 21 completion tokens (9 of
// them reasoning, streamed) over 7 chunks that carried output is 3.
TEST(Prober, TokensPerChunkCountsStreamedReasoningAndNotTheUsageEvent) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    for (int i = 0; i < 3; ++i)
      c.send_event(R"({"choices":[{"delta":{"reasoning_content":"a b c"}}]})");
    for (int i = 0; i < 4; ++i) {
      PeerConn::pause(5ms);
      c.send_event(R"({"choices":[{"delta":{"content":"x y z"}}]})");
    }
    c.send_event(R"({"choices":[{"delta":{},"finish_reason":"stop"}]})");
    c.send_event(R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":21,)"
                 R"("completion_tokens_details":{"reasoning_tokens":9}}})");
    c.send_event("[DONE]");
    c.send("0\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  ASSERT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(p.result.chunks, 4u);
  EXPECT_EQ(p.result.completion_tokens, 21);
  EXPECT_EQ(p.result.reasoning_tokens, 9);
  ASSERT_TRUE(p.result.tokens_per_chunk);
  EXPECT_EQ(*p.result.tokens_per_chunk, 3.0);
}

TEST(RequestHeaders, KeyGoesInTheDialectsHeader) {
  lse::config::Target t = target_for("http://h/v1");
  t.auth.kind = lse::config::Auth::Kind::bearer;
  t.auth.secret = {"k3y", "env X"};
  auto value_of = [](const auto& headers, const std::string& name) -> std::string {
    for (const auto& [k, v] : headers)
      if (k == name) return v;
    return "<absent>";
  };
  const std::pair<lse::api::Dialect, std::pair<const char*, const char*>> cases[] = {
      {lse::api::Dialect::openai_chat, {"Authorization", "Bearer k3y"}},
      {lse::api::Dialect::openai_responses, {"Authorization", "Bearer k3y"}},
      {lse::api::Dialect::ollama_chat, {"Authorization", "Bearer k3y"}},
      {lse::api::Dialect::anthropic_messages, {"x-api-key", "k3y"}},
      {lse::api::Dialect::gemini, {"x-goog-api-key", "k3y"}},
  };
  for (const auto& [dialect, header] : cases) {
    t.api = dialect;
    const auto h = lse::probe::request_headers(t, "ua/1", lse::api::Framing::sse);
    EXPECT_EQ(value_of(h, header.first), header.second) << lse::api::dialect_name(dialect);
    int keys = 0;
    for (const auto& [k, v] : h) keys += v.find("k3y") != std::string::npos;
    EXPECT_EQ(keys, 1) << lse::api::dialect_name(dialect);
  }
  EXPECT_EQ(value_of(lse::probe::request_headers(t, "ua/1", lse::api::Framing::ndjson), "Accept"),
            "application/x-ndjson");
  EXPECT_EQ(value_of(lse::probe::request_headers(t, "ua/1", lse::api::Framing::sse), "Accept"),
            "text/event-stream");
}

TEST(Prober, HeadersFromTheConfigOverrideTheDialectsFixedOnes) {
  std::string request;
  ScriptedPeer peer([&](PeerConn& c) {
    request = c.read_request();
    c.send_status(500);
  });
  auto t = target_for(peer.url());
  t.api = lse::api::Dialect::anthropic_messages;
  t.headers = {{"anthropic-version", "2099-01-01"}};
  probe(t);
  EXPECT_NE(request.find("anthropic-version: 2099-01-01\r\n"), std::string::npos) << request;
  EXPECT_EQ(request.find("2023-06-01"), std::string::npos) << request;
}

// --- each failure reason the prober can produce ----------------------------------

TEST(Prober, Dns) {
  expect_failure(probe(target_for("http://no-such-host.invalid/v1")), FailureReason::dns);
}

TEST(Prober, Connect) {
  const auto port = lse::test::closed_port();
  expect_failure(probe(target_for("http://127.0.0.1:" + std::to_string(port) + "/v1")),
                 FailureReason::connect);
}

TEST(Prober, Tls) {
  // A peer that answers a TLS ClientHello with plain HTTP.
  ScriptedPeer peer([](PeerConn& c) {
    c.send_status(400, "not tls");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url("https")));
  expect_failure(p, FailureReason::tls);
  EXPECT_FALSE(p.result.phases[static_cast<std::size_t>(lse::probe::Phase::tls)]);
}

TEST(Prober, HttpStatuses) {
  for (auto [status, reason] :
       {std::pair{404, FailureReason::http_4xx}, std::pair{429, FailureReason::http_429},
        std::pair{503, FailureReason::http_5xx}, std::pair{999, FailureReason::http_other}}) {
    ScriptedPeer peer([status = status](PeerConn& c) {
      c.read_request();
      c.send_status(status, "{\"error\":\"no\"}");
    });
    const Probed p = probe(target_for(peer.url()));
    expect_failure(p, reason);
    EXPECT_EQ(p.result.http_status, status);
  }
}

// The upstream's own words: a gateway's failure is told from the model's.
TEST(Prober, AnErrorBodyIsKeptInTheErrorAfterTheStatus) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_status(500, "{\"status\":\"failure\",\"message\":\"Something went wrong\"}\n");
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::http_5xx);
  EXPECT_EQ(p.result.error_detail,
            "HTTP 500: {\"status\":\"failure\",\"message\":\"Something went wrong\"}");
}

TEST(Prober, AnEmptyErrorBodyLeavesTheStatusAlone) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_status(502);
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::http_5xx);
  EXPECT_EQ(p.result.error_detail, "HTTP 502");
}

TEST(Prober, TimeoutFirstTokenWhenNoAnswerComes) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.hang();
  });
  auto target = target_for(peer.url());
  target.timeout.first_token = 200ms;
  const Probed p = probe(target);
  expect_failure(p, FailureReason::timeout_first_token);
  EXPECT_GE(p.result.duration, 0.199);
  EXPECT_LT(p.result.duration, 1.0);  // the timeout set here, not the 2 s default
}

TEST(Prober, TimeoutFirstTokenAfterHeaders) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    c.send_event("{\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}");  // not content
    c.hang();
  });
  auto target = target_for(peer.url());
  target.timeout.first_token = 200ms;
  const Probed p = probe(target);
  expect_failure(p, FailureReason::timeout_first_token);
  EXPECT_GE(p.result.duration, 0.199);
  EXPECT_LT(p.result.duration, 1.0);  // the timeout set here, not the 2 s default
}

TEST(Prober, TimeoutIdleAfterContentStops) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    c.send_content(0);
    PeerConn::pause(20ms);
    c.send_content(1);
    c.hang();
  });
  auto target = target_for(peer.url());
  target.timeout.idle = 150ms;
  const Probed p = probe(target);
  expect_failure(p, FailureReason::timeout_idle);
  EXPECT_EQ(p.result.chunks, 2u);
  EXPECT_LT(p.result.duration, 1.0);
}

TEST(Prober, TimeoutTotalWhileContentKeepsComing) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    for (int i = 0; i < 100; ++i) {
      c.send_content(i);
      PeerConn::pause(20ms);
    }
    c.send_end();
  });
  auto target = target_for(peer.url());
  target.timeout.total = 300ms;
  const Probed p = probe(target);
  expect_failure(p, FailureReason::timeout_total);
  EXPECT_GE(p.result.duration, 0.299);
  EXPECT_LT(p.result.duration, 1.0);  // the timeout set here, not the 5 s default
  EXPECT_GT(p.result.chunks, 5u);
}

TEST(Prober, TruncatedWhenTheConnectionClosesMidStream) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    c.send_content(0);
    c.send_content(1);
    c.close();
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::truncated);
  EXPECT_EQ(p.result.chunks, 2u);
}

TEST(Prober, TruncatedWhenTheBodyEndsBeforeTheEndMarker) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    c.send_content(0);
    c.send("0\r\n\r\n");  // a complete body, but no finish_reason and no [DONE]
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::truncated);
  EXPECT_EQ(p.result.error_detail, "stream ended before the end marker");
}

TEST(Prober, ProtocolForABadEvent) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    c.send_content(0);
    c.send_event("{not json");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::protocol);
  EXPECT_EQ(p.result.chunks, 1u);
}

// A JSON answer where the stream belongs: no event at all came.
TEST(Prober, ProtocolForAnotherContentTypeWithoutAnyEvent) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head("application/json");
    c.send_chunk("{\"choices\":[{\"message\":{\"content\":\"hi\"}}]}");
    c.send("0\r\n\r\n");
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::protocol);
  EXPECT_EQ(p.result.error_detail,
            "unexpected content-type 'application/json' and no event in the body");
}

// A gateway that leaves out Content-Type (or calls the stream text/plain or
// application/json) is measured as the SDKs read it: the planted TTFT and
// the planted stall exactly, the type kept and flagged.
TEST(Prober, AStreamWithoutOrWithAnotherContentTypeIsMeasured) {
  for (const char* type : {"", "text/plain; charset=utf-8", "application/json"}) {
    ScriptedPeer peer([&](PeerConn& c) {
      c.read_request();
      if (*type == 0) {
        c.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
      } else {
        c.send_stream_head(type);
      }
      PeerConn::pause(150ms);
      for (int i = 0; i < 5; ++i) {
        PeerConn::pause(i == 3 ? 300ms : 20ms);
        c.send_content(i);
      }
      c.send_end();
      c.hang();
    });
    const Probed p = probe(target_for(peer.url()));
    ASSERT_TRUE(p.result.ok) << type << ": " << p.result.error_detail;
    EXPECT_EQ(p.result.content_type, type);
    EXPECT_TRUE(p.result.unexpected_content_type) << type;
    EXPECT_EQ(p.result.chunks, 5u);
    EXPECT_EQ(p.result.stalls, 1u) << type;
    ASSERT_TRUE(p.result.ttft);
    expect_wait_until_write(*p.result.ttft, p, peer, 1, 0.030);  // write 1: content 0
    ASSERT_EQ(p.result.gaps.size(), 4u);
    expect_gap_between_writes(p.result.gaps[2], peer, 3, 4, 0.030);
  }
}

TEST(Prober, TheStreamTypeIsKeptAndNotFlagged) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head("text/event-stream; charset=utf-8");
    c.send_content(0);
    c.send_end();
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  ASSERT_TRUE(p.result.ok) << p.result.error_detail;
  EXPECT_EQ(p.result.content_type, "text/event-stream; charset=utf-8");
  EXPECT_FALSE(p.result.unexpected_content_type);
}

// Only finish_reason and [DONE]: the answer had nothing in it.
TEST(Prober, EmptyWhenTheStreamEndsWithoutAContentChunk) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    c.send_event("{\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}");
    c.send_end();
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()));
  expect_failure(p, FailureReason::empty);
  EXPECT_EQ(p.result.chunks, 0u);
  EXPECT_FALSE(p.result.ttft);
  EXPECT_EQ(p.result.error_detail,
            "the stream ended without a content chunk (finish_reason 'stop')");
}

TEST(Prober, ProtocolForAnOversizedEvent) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    c.send_event(std::string(4096, 'x'));
    c.hang();
  });
  auto target = target_for(peer.url());
  target.max_event_bytes = 1024;
  expect_failure(probe(target), FailureReason::protocol);
}

TEST(Prober, UpstreamError) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    c.send_content(0);
    c.send_event("{\"error\":{\"message\":\"overloaded\"}}");
    c.hang();
  });
  expect_failure(probe(target_for(peer.url())), FailureReason::upstream_error);
}

TEST(Prober, CanceledMidStream) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.send_stream_head();
    c.send_content(0);
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()), 150ms);
  expect_failure(p, FailureReason::canceled);
  EXPECT_LT(p.wall, 1.0);
}

TEST(Prober, CanceledBeforeTheAnswer) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    c.hang();
  });
  const Probed p = probe(target_for(peer.url()), 100ms);
  expect_failure(p, FailureReason::canceled);
  EXPECT_LT(p.wall, 1.0);
}

}  // namespace
