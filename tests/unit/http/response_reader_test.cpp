// ResponseReader on its own (pure: bytes in, head and body out): a status
// line without a reason phrase, as curl and Python accept it, whole or cut
// anywhere, and behind an interim response.
#include "http/response_reader.hpp"

#include <gtest/gtest.h>

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <string>

namespace {

namespace bhttp = boost::beast::http;
using lse::http::ResponseReader;

const std::string kBody = "data: {}\n\n";
const std::string kRest =
    "\r\nContent-Type: text/event-stream\r\nContent-Length: 10\r\n\r\n" + kBody;

// What the reader made of `bytes` fed in pieces cut at `cuts`: the status,
// the body, or the head's fault.
struct Seen {
  int status = 0;
  std::string body;
  std::string fault;
  std::size_t interim = 0;
};
Seen read_all(const std::string& bytes, std::vector<std::size_t> cuts) {
  ResponseReader r;
  r.start();
  Seen seen;
  cuts.push_back(bytes.size());
  std::size_t from = 0;
  for (const std::size_t cut : cuts) {
    r.feed(std::string_view(bytes).substr(from, cut - from));
    from = cut;
    if (r.response() == nullptr) {
      auto heads = r.read_heads();
      if (!heads) return Seen{0, "", heads.fault().detail, 0};
      if (!heads.value()) continue;
      seen.status = r.response()->status;
      seen.interim = r.interim_responses();
    }
    if (r.has_unparsed()) {
      if (auto f = r.decode_body()) return Seen{seen.status, seen.body, f->detail, seen.interim};
      seen.body += r.decoded();
      r.clear_decoded();
    }
  }
  return seen;
}

// Why the reader has to do something: Beast's parser refuses the line.
TEST(ResponseReader, BeastAloneRefusesAStatusLineWithoutReasonPhrase) {
  bhttp::response_parser<bhttp::empty_body> p;
  boost::beast::error_code ec;
  const std::string head = "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n";
  p.put(boost::asio::buffer(head), ec);
  EXPECT_EQ(ec, bhttp::error::bad_status);
}

TEST(ResponseReader, StatusLineWithoutReasonPhraseIsAccepted) {
  const Seen seen = read_all("HTTP/1.1 200" + kRest, {});
  EXPECT_EQ(seen.fault, "");
  EXPECT_EQ(seen.status, 200);
  EXPECT_EQ(seen.body, kBody);
}

// Cut after the digits, inside the CRLF, and right after it: the same.
TEST(ResponseReader, StatusLineWithoutReasonPhraseCutAnywhere) {
  const std::string bytes = "HTTP/1.0 200" + kRest;
  for (const std::size_t cut : {5U, 12U, 13U, 14U, 20U}) {
    const Seen seen = read_all(bytes, {cut});
    EXPECT_EQ(seen.fault, "") << "cut at " << cut;
    EXPECT_EQ(seen.status, 200) << "cut at " << cut;
    EXPECT_EQ(seen.body, kBody) << "cut at " << cut;
  }
}

TEST(ResponseReader, InterimAndFinalBothWithoutReasonPhrase) {
  const Seen seen = read_all("HTTP/1.1 100\r\n\r\nHTTP/1.1 503" + kRest, {});
  EXPECT_EQ(seen.fault, "");
  EXPECT_EQ(seen.interim, 1U);
  EXPECT_EQ(seen.status, 503);
}

// Only the missing phrase is forgiven: a bad status code still fails.
TEST(ResponseReader, ABadStatusCodeStillFails) {
  EXPECT_NE(read_all("HTTP/1.1 2x0" + kRest, {}).fault, "");
  EXPECT_NE(read_all("HTTP/1.1 20\r\n" + kRest, {}).fault, "");
}

TEST(ResponseReader, AReasonPhraseIsUnchanged) {
  const Seen seen = read_all("HTTP/1.1 200 OK" + kRest, {});
  EXPECT_EQ(seen.fault, "");
  EXPECT_EQ(seen.status, 200);
  EXPECT_EQ(seen.body, kBody);
}

}  // namespace
