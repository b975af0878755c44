// Raw rows (DESIGN §6): exact output for a known probe, round trip through
// the reader, and rejection of malformed lines with a message.
#include "report/row_json.hpp"

#include <gtest/gtest.h>

namespace lse::report {
namespace {

probe::ProbeResult full_result() {
  probe::ProbeResult r;
  r.ts = 1700000000.25;
  r.id = "9f86d081884c7d65";
  r.target = "openai-mini";
  r.model = "gpt-4o-mini";
  r.prompt = "short";
  r.host = "probe-1";
  r.ok = true;
  r.http_status = 200;
  r.phases[static_cast<int>(probe::Phase::resolve)] = 0.0012;
  r.phases[static_cast<int>(probe::Phase::connect)] = 0.0101;
  r.phases[static_cast<int>(probe::Phase::tls)] = 0.02;
  r.phases[static_cast<int>(probe::Phase::request)] = 0.0001;
  r.phases[static_cast<int>(probe::Phase::headers)] = 0.3;
  r.phases[static_cast<int>(probe::Phase::first_token)] = 0.1234567;
  r.ttft = 0.4548567;
  r.gaps = {0.0, 0.021, 0.3004, 0.0455};
  r.chunks = 5;
  r.stalls = 1;
  r.stall_seconds = 0.3004;
  r.gap_p50 = 0.021;
  r.gap_p95 = 0.3004;
  r.gap_max = 0.3004;
  r.tail = 0.002;
  r.duration = 0.8244;
  r.prompt_tokens = 14;
  r.completion_tokens = 9;
  r.tokens_per_chunk = 9.0 / 5.0;
  r.finish_reason = "stop";
  r.response_model = "gpt-4o-mini-2024-07-18";
  r.http_version = "1.1";
  r.content_encoding = "gzip";
  r.content_type = "text/event-stream";
  r.coalesced_chunks = 1;
  r.interim_responses = 2;
  r.stall_details = {{4, 0.3004, 1}};
  return r;
}

TEST(RowJson, ExactRowForAKnownProbe) {
  EXPECT_EQ(
      to_row_json(full_result()),
      R"({"ts":1700000000.250,"id":"9f86d081884c7d65","target":"openai-mini",)"
      R"("model":"gpt-4o-mini","prompt":"short","response_model":"gpt-4o-mini-2024-07-18",)"
      R"("ok":true,"reason":"","http_status":200,"ttft_ms":454.857,"duration_ms":824.400,)"
      R"("tail_ms":2.000,"chunks":5,"stalls":1,"gap_p50_ms":21.000,"gap_p95_ms":300.400,)"
      R"("gap_max_ms":300.400,"phases_ms":{"resolve":1.200,"connect":10.100,"tls":20.000,)"
      R"("request":0.100,"headers":300.000,"first_token":123.457},)"
      R"("usage":{"prompt_tokens":14,"completion_tokens":9},"server_ms":null,"finish_reason":"stop",)"
      R"("gaps_ms":[0.000,21.000,300.400,45.500],"host":"probe-1","error":null,)"
      R"("content_encoding":"gzip","content_type":"text/event-stream",)"
      R"("unexpected_content_type":false,"http_version":"1.1","h2_error":null,)"
      R"("interim_responses":2,)"
      R"("via_proxy":false,"coalesced_chunks":1,)"
      R"("stalls_detail":[{"at_chunk":4,"gap_ms":300.400,"released_chunks":1}],)"
      R"("tokens_per_chunk":1.800})");
}

TEST(RowJson, MissingValuesAreNull) {
  probe::ProbeResult r;
  r.ts = 1;
  r.target = "t";
  r.ok = false;
  r.reason = probe::FailureReason::connect;
  r.phases[static_cast<int>(probe::Phase::resolve)] = 0.001;
  r.duration = 0.0035;
  r.error_detail = "connect 10.0.0.7:443: Connection refused";
  r.via_proxy = true;
  EXPECT_EQ(
      to_row_json(r),
      R"({"ts":1.000,"id":null,"target":"t","model":"","prompt":"","response_model":null,)"
      R"("ok":false,"reason":"connect",)"
      R"("http_status":null,"ttft_ms":null,"duration_ms":3.500,"tail_ms":null,"chunks":0,)"
      R"("stalls":0,"gap_p50_ms":null,"gap_p95_ms":null,"gap_max_ms":null,)"
      R"("phases_ms":{"resolve":1.000},"usage":null,"server_ms":null,"finish_reason":null,"gaps_ms":[],)"
      R"("host":null,"error":"connect 10.0.0.7:443: Connection refused","content_encoding":null,)"
      R"("content_type":null,"unexpected_content_type":false,"http_version":null,)"
      R"("h2_error":null,"interim_responses":0,"via_proxy":true,"coalesced_chunks":0,)"
      R"("stalls_detail":[],"tokens_per_chunk":null})");
}

TEST(RowJson, IdReadsBackAndRowsWithoutOneAreStillRows) {
  auto back = parse_row_json(to_row_json(full_result()), nullptr);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->id, "9f86d081884c7d65");
  // Rows written before probes had ids (and null ones) read as an empty id.
  std::string error;
  auto old = parse_row_json(R"({"ts":1,"target":"t","ok":true})", &error);
  ASSERT_TRUE(old) << error;
  EXPECT_EQ(old->id, "");
  auto null_id = parse_row_json(R"({"ts":1,"id":null,"target":"t","ok":true})", &error);
  ASSERT_TRUE(null_id) << error;
  EXPECT_EQ(null_id->id, "");
  EXPECT_FALSE(parse_row_json(R"({"ts":1,"id":7,"target":"t","ok":true})", &error));
  EXPECT_NE(error.find("\"id\""), std::string::npos) << error;
}

// The model the stream named reads back; null (none named) and rows written
// before the field read as unknown (""); a non-string is refused.
TEST(RowJson, ResponseModelReadsBackAndOlderRowsHaveNone) {
  std::string error;
  auto back = parse_row_json(to_row_json(full_result()), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->response_model, "gpt-4o-mini-2024-07-18");
  auto old = parse_row_json(R"({"ts":1,"target":"t","ok":true})", &error);
  ASSERT_TRUE(old) << error;
  EXPECT_EQ(old->response_model, "");
  auto null_model =
      parse_row_json(R"({"ts":1,"response_model":null,"target":"t","ok":true})", &error);
  ASSERT_TRUE(null_model) << error;
  EXPECT_EQ(null_model->response_model, "");
  EXPECT_FALSE(parse_row_json(R"({"ts":1,"response_model":3,"target":"t","ok":true})", &error));
  EXPECT_NE(error.find("\"response_model\""), std::string::npos) << error;
}

// A stream the server reset over HTTP/2: `reset` with the RFC 9113 name of
// its code, which reads back; rows written before the field, and null, read
// as none; a non-string is refused.
TEST(RowJson, H2ErrorReadsBackAndOlderRowsHaveNone) {
  probe::ProbeResult r = full_result();
  r.ok = false;
  r.reason = probe::FailureReason::reset;
  r.http_version = "2";
  r.h2_error = "INTERNAL_ERROR";
  r.error_detail = "RST_STREAM INTERNAL_ERROR (0x2) from the server";
  const std::string row = to_row_json(r);
  EXPECT_NE(row.find(R"("reason":"reset",)"), std::string::npos) << row;
  EXPECT_NE(row.find(R"("http_version":"2","h2_error":"INTERNAL_ERROR",)"), std::string::npos)
      << row;
  std::string error;
  auto back = parse_row_json(row, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->reason, probe::FailureReason::reset);
  EXPECT_EQ(back->h2_error, "INTERNAL_ERROR");
  EXPECT_EQ(back->http_version, "2");
  auto old = parse_row_json(R"({"ts":1,"target":"t","ok":false,"reason":"truncated"})", &error);
  ASSERT_TRUE(old) << error;
  EXPECT_EQ(old->h2_error, "");
  auto null_code = parse_row_json(
      R"({"ts":1,"target":"t","ok":false,"reason":"reset","h2_error":null})", &error);
  ASSERT_TRUE(null_code) << error;
  EXPECT_EQ(null_code->h2_error, "");
  EXPECT_FALSE(parse_row_json(R"({"ts":1,"target":"t","ok":false,"h2_error":2})", &error));
  EXPECT_NE(error.find("\"h2_error\""), std::string::npos) << error;
}

// Tokens per chunk: to the row's 3 decimals and back; null (no usage) and
// rows written before the field read as unknown; a negative one is refused.
TEST(RowJson, TokensPerChunkReadsBackAndOlderRowsHaveNone) {
  auto r = full_result();
  r.tokens_per_chunk = 4.0;
  std::string error;
  auto back = parse_row_json(to_row_json(r), &error);
  ASSERT_TRUE(back) << error;
  ASSERT_TRUE(back->tokens_per_chunk);
  EXPECT_EQ(*back->tokens_per_chunk, 4.0);
  r.tokens_per_chunk = 10.0 / 3.0;
  back = parse_row_json(to_row_json(r), &error);
  ASSERT_TRUE(back && back->tokens_per_chunk) << error;
  EXPECT_NEAR(*back->tokens_per_chunk, 10.0 / 3.0, 0.0005);
  r.tokens_per_chunk.reset();
  back = parse_row_json(to_row_json(r), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_FALSE(back->tokens_per_chunk);
  auto old = parse_row_json(R"({"ts":1,"target":"t","ok":true,"chunks":4,)"
                            R"("usage":{"prompt_tokens":3,"completion_tokens":16}})",
                            &error);
  ASSERT_TRUE(old) << error;
  EXPECT_FALSE(old->tokens_per_chunk);  // not guessed: the row does not say how reasoning counted
  EXPECT_EQ(old->completion_tokens, 16);
  EXPECT_FALSE(parse_row_json(R"({"ts":1,"target":"t","ok":true,"tokens_per_chunk":-1})", &error));
  EXPECT_NE(error.find("\"tokens_per_chunk\""), std::string::npos) << error;
  EXPECT_FALSE(parse_row_json(R"({"ts":1,"target":"t","ok":true,"tokens_per_chunk":"4"})", &error));
}

TEST(RowJson, InterimResponsesReadBackAndOlderRowsHaveNone) {
  auto r = full_result();
  r.interim_responses = 3;
  std::string error;
  auto back = parse_row_json(to_row_json(r), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->interim_responses, 3u);
  // Rows written before the field existed read as no interim response.
  auto old = parse_row_json(R"({"ts":1,"target":"t","ok":true})", &error);
  ASSERT_TRUE(old) << error;
  EXPECT_EQ(old->interim_responses, 0u);
  EXPECT_FALSE(parse_row_json(R"({"ts":1,"target":"t","ok":true,"interim_responses":-1})", &error));
  EXPECT_NE(error.find("\"interim_responses\""), std::string::npos) << error;
}

// A stream measured under another (or no) Content-Type says so; rows
// written before the fields read as no flag.
TEST(RowJson, AnUnexpectedContentTypeReadsBackAndOlderRowsHaveNone) {
  auto r = full_result();
  r.content_type = "";
  r.unexpected_content_type = true;
  const std::string row = to_row_json(r);
  EXPECT_NE(row.find(R"("content_type":"","unexpected_content_type":true)"), std::string::npos)
      << row;
  std::string error;
  auto back = parse_row_json(row, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->content_type, "");
  EXPECT_TRUE(back->unexpected_content_type);
  auto old = parse_row_json(R"({"ts":1,"target":"t","ok":true})", &error);
  ASSERT_TRUE(old) << error;
  EXPECT_FALSE(old->unexpected_content_type);
  EXPECT_FALSE(
      parse_row_json(R"({"ts":1,"target":"t","ok":true,"unexpected_content_type":1})", &error));
  EXPECT_NE(error.find("\"unexpected_content_type\""), std::string::npos) << error;
}

TEST(RowJson, PartialUsageKeepsTheKnownHalf) {
  auto r = full_result();
  r.prompt_tokens = -1;
  auto line = to_row_json(r);
  EXPECT_NE(line.find(R"("usage":{"prompt_tokens":null,"completion_tokens":9})"),
            std::string::npos);
  auto back = parse_row_json(line, nullptr);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->prompt_tokens, -1);
  EXPECT_EQ(back->completion_tokens, 9);
}

void expect_same_row(const probe::ProbeResult& a, const probe::ProbeResult& b) {
  constexpr double us = 0.5e-6;  // rows keep microseconds
  EXPECT_NEAR(a.ts, b.ts, 0.0005);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.prompt, b.prompt);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.ok, b.ok);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.http_status, b.http_status);
  auto opt = [&](const std::optional<double>& x, const std::optional<double>& y, const char* what) {
    ASSERT_EQ(x.has_value(), y.has_value()) << what;
    if (x) {
      EXPECT_NEAR(*x, *y, us) << what;
    }
  };
  opt(a.ttft, b.ttft, "ttft");
  opt(a.tail, b.tail, "tail");
  opt(a.gap_p50, b.gap_p50, "gap_p50");
  opt(a.gap_p95, b.gap_p95, "gap_p95");
  opt(a.gap_max, b.gap_max, "gap_max");
  for (std::size_t i = 0; i < a.phases.size(); ++i) opt(a.phases[i], b.phases[i], "phase");
  EXPECT_NEAR(a.duration, b.duration, us);
  ASSERT_EQ(a.gaps.size(), b.gaps.size());
  for (std::size_t i = 0; i < a.gaps.size(); ++i) EXPECT_NEAR(a.gaps[i], b.gaps[i], us);
  EXPECT_EQ(a.chunks, b.chunks);
  EXPECT_EQ(a.stalls, b.stalls);
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_EQ(a.completion_tokens, b.completion_tokens);
  ASSERT_EQ(a.tokens_per_chunk.has_value(), b.tokens_per_chunk.has_value());
  if (a.tokens_per_chunk) {
    EXPECT_NEAR(*a.tokens_per_chunk, *b.tokens_per_chunk, 0.0005);
  }
  EXPECT_EQ(a.finish_reason, b.finish_reason);
  EXPECT_EQ(a.response_model, b.response_model);
  EXPECT_EQ(a.error_detail, b.error_detail);
  EXPECT_EQ(a.content_encoding, b.content_encoding);
  EXPECT_EQ(a.content_type, b.content_type);
  EXPECT_EQ(a.unexpected_content_type, b.unexpected_content_type);
  EXPECT_EQ(a.http_version, b.http_version);
  EXPECT_EQ(a.h2_error, b.h2_error);
  EXPECT_EQ(a.via_proxy, b.via_proxy);
  EXPECT_EQ(a.coalesced_chunks, b.coalesced_chunks);
  EXPECT_EQ(a.interim_responses, b.interim_responses);
  ASSERT_EQ(a.stall_details.size(), b.stall_details.size());
  for (std::size_t i = 0; i < a.stall_details.size(); ++i) {
    EXPECT_EQ(a.stall_details[i].at_chunk, b.stall_details[i].at_chunk);
    EXPECT_NEAR(a.stall_details[i].gap, b.stall_details[i].gap, us);
    EXPECT_EQ(a.stall_details[i].released_chunks, b.stall_details[i].released_chunks);
  }
  ASSERT_EQ(a.server.has_value(), b.server.has_value());
  if (a.server) {
    opt(a.server->load, b.server->load, "server load");
    opt(a.server->prompt_eval, b.server->prompt_eval, "server prompt_eval");
    opt(a.server->eval, b.server->eval, "server eval");
  }
}

TEST(RowJson, ServerTimingsAreMillisecondsAndRoundTrip) {
  auto r = full_result();
  r.server = probe::ServerTimings{0.0123, 0.25, std::nullopt};
  const std::string line = to_row_json(r);
  EXPECT_NE(line.find(R"("server_ms":{"load":12.300,"prompt_eval":250.000,"eval":null})"),
            std::string::npos)
      << line;
  std::string error;
  auto back = parse_row_json(line, &error);
  ASSERT_TRUE(back) << error;
  expect_same_row(r, *back);
  EXPECT_FALSE(parse_row_json(R"({"ts":1,"target":"t","ok":true,"server_ms":[1]})", &error));
  EXPECT_NE(error.find("server_ms"), std::string::npos) << error;
}

TEST(RowJson, RoundTripIsExactAtRowPrecision) {
  auto failed = full_result();
  failed.ok = false;
  failed.reason = probe::FailureReason::timeout_idle;
  failed.tail.reset();
  failed.http_status = 0;
  failed.host.clear();
  failed.finish_reason.clear();
  failed.prompt_tokens = failed.completion_tokens = -1;
  failed.phases[static_cast<int>(probe::Phase::tls)].reset();
  failed.error_detail = "no content for 30 s";
  failed.content_encoding.clear();  // identity, written as such
  failed.via_proxy = true;

  for (const auto& r : {full_result(), failed}) {
    const std::string line = to_row_json(r);
    std::string error;
    auto back = parse_row_json(line, &error);
    ASSERT_TRUE(back) << error;
    expect_same_row(r, *back);
    // Writing what was read gives the same bytes.
    EXPECT_EQ(to_row_json(*back), line);
  }
}

TEST(RowJson, ManyGapsRoundTrip) {
  auto r = full_result();
  r.gaps.clear();
  for (int i = 0; i < 5000; ++i) r.gaps.push_back(i * 0.0001234);
  auto back = parse_row_json(to_row_json(r), nullptr);
  ASSERT_TRUE(back);
  expect_same_row(r, *back);
}

TEST(RowJson, StringsAreEscapedAndAlwaysValidUtf8) {
  auto r = full_result();
  r.target = "a\"b\\c\nd\te\x01";
  r.model = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";  // valid UTF-8 kept as is
  r.finish_reason = std::string("bad\xFF\xC3", 5);        // invalid bytes replaced
  const auto line = to_row_json(r);
  EXPECT_NE(line.find(R"("target":"a\"b\\c\nd\te\u0001")"), std::string::npos) << line;
  std::string error;
  auto back = parse_row_json(line, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->target, r.target);
  EXPECT_EQ(back->model, r.model);
  EXPECT_EQ(back->finish_reason, "bad\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(RowJson, ReaderIgnoresUnknownKeysAndAcceptsIntegersAndCrlf) {
  std::string error;
  auto r = parse_row_json(
      R"({"ts":1700000000,"target":"t","ok":true,"future_field":{"x":[1,2]},"duration_ms":12,"gaps_ms":[1,2.5]})"
      "\r\n",
      &error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->ts, 1700000000.0);
  EXPECT_DOUBLE_EQ(r->duration, 0.012);
  ASSERT_EQ(r->gaps.size(), 2u);
  EXPECT_DOUBLE_EQ(r->gaps[1], 0.0025);
  EXPECT_EQ(r->reason, probe::FailureReason::none);
  EXPECT_EQ(r->prompt_tokens, -1);
}

TEST(RowJson, MalformedLinesAreRejectedWithAMessage) {
  const std::string good = to_row_json(full_result());
  struct Case {
    std::string line;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"", "empty"},
      {"   ", "malformed JSON"},
      {"{", "malformed JSON"},
      {good.substr(0, good.size() / 2), "malformed JSON"},  // a row cut by a crash
      {good + " x", "malformed JSON"},
      {good + good, "malformed JSON"},
      {"[1,2]", "object"},
      {R"({"target":"t","ok":true})", "missing field \"ts\""},
      {R"({"ts":1,"ok":true})", "missing field \"target\""},
      {R"({"ts":1,"target":"t"})", "missing field \"ok\""},
      {R"({"ts":"now","target":"t","ok":true})", "\"ts\""},
      {R"({"ts":1,"target":7,"ok":true})", "\"target\""},
      {R"({"ts":1,"target":"t","ok":"yes"})", "\"ok\""},
      {R"({"ts":1,"target":"t","ok":false,"reason":"gremlins"})", "gremlins"},
      {R"({"ts":1,"target":"t","ok":true,"ttft_ms":"fast"})", "\"ttft_ms\""},
      {R"({"ts":1,"target":"t","ok":true,"chunks":-1})", "\"chunks\""},
      {R"({"ts":1,"target":"t","ok":true,"chunks":1.5})", "\"chunks\""},
      {R"({"ts":1,"target":"t","ok":true,"gaps_ms":[1,"x"]})", "\"gaps_ms\""},
      {R"({"ts":1,"target":"t","ok":true,"gaps_ms":{}})", "\"gaps_ms\""},
      {R"({"ts":1,"target":"t","ok":true,"phases_ms":{"dns":1}})", "dns"},
      {R"({"ts":1,"target":"t","ok":true,"usage":{"prompt_tokens":"many"}})",
       "usage.prompt_tokens"},
      {"{\"ts\":1,\"target\":\"\xFF\",\"ok\":true}", "malformed JSON"},
  };
  for (const auto& c : cases) {
    std::string error;
    EXPECT_FALSE(parse_row_json(c.line, &error)) << c.line;
    EXPECT_NE(error.find(c.message_part), std::string::npos)
        << "line: " << c.line << "\nerror: " << error;
  }
  // The error out-parameter is optional.
  EXPECT_FALSE(parse_row_json("{", nullptr));
}

// Found by rows_fuzz (tests/fuzz/findings/rows_fuzz-stall-detail-without-at-chunk):
// a stall without its place or length was read as at_chunk 0, which the
// reader itself refuses when the row is written and read again.
TEST(RowJson, AStallDetailNeedsItsPlaceAndItsLength) {
  for (const char* detail : {R"({"gap_ms":300})", R"({"at_chunk":3})", R"({})"}) {
    const std::string line =
        std::string(R"({"ts":1,"target":"t","ok":true,"stalls_detail":[)") + detail + "]}";
    std::string error;
    EXPECT_FALSE(parse_row_json(line, &error)) << line;
    EXPECT_NE(error.find("at_chunk and gap_ms"), std::string::npos) << error;
  }
  const auto row = parse_row_json(
      R"({"ts":1,"target":"t","ok":true,"stalls_detail":[{"at_chunk":3,"gap_ms":300}]})", nullptr);
  ASSERT_TRUE(row);
  EXPECT_TRUE(parse_row_json(to_row_json(*row), nullptr)) << to_row_json(*row);
}

// Found by rows_fuzz (rows_fuzz-error-echoes-line-breaks): the reasons
// quote the row's text escaped and cut, so a line break or a terminal
// escape in a rows file never reaches compare's or report's output raw.
TEST(RowJson, ReasonsQuoteTheRowsTextEscapedAndCut) {
  const std::string forged = "x\\nts=1 level=error msg=FORGED \\u001b[31m \x7f";
  for (const std::string& line :
       {R"({"ts":1,"target":"t","ok":false,"reason":")" + forged + R"("})",
        R"({"ts":1,"target":"t","ok":true,"phases_ms":{")" + forged + R"(":1}})",
        R"({"ts":1,"target":"t","ok":false,"reason":")" + std::string(500, 'r') + R"("})"}) {
    std::string error;
    EXPECT_FALSE(parse_row_json(line, &error));
    EXPECT_EQ(error.find_first_of(std::string("\n\r\x1b\x7f", 4)), std::string::npos) << error;
    EXPECT_LT(error.size(), 140u) << error;
  }
}

}  // namespace
}  // namespace lse::report
