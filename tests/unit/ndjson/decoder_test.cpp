// Tests for ndjson/decoder: line framing (LF, CRLF, lone CR), blank lines, the
// leading BOM, the line limit, the end-of-stream line, zero-copy hand-out and
// independence from feed boundaries on the recorded Ollama streams.
#include "ndjson/decoder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace std::string_literals;

namespace lse::ndjson {
namespace {

constexpr std::size_t kDefaultLimit = 1 << 20;

// Everything observable about one decoded stream.
struct Decoded {
  std::vector<std::string> lines;  // delivered by feed()
  Status status = Status::ok;
  bool partial = false;               // has_partial_line() before finish()
  std::vector<std::string> finished;  // delivered by finish()
};

bool operator==(const Decoded& a, const Decoded& b) {
  return a.lines == b.lines && a.status == b.status && a.partial == b.partial &&
         a.finished == b.finished;
}

std::ostream& operator<<(std::ostream& os, const Decoded& d) {
  os << "status=" << static_cast<int>(d.status) << " partial=" << d.partial
     << " lines=" << d.lines.size();
  for (const std::string& l : d.lines) os << "\n  '" << l << "'";
  for (const std::string& l : d.finished) os << "\n  finish: '" << l << "'";
  return os;
}

Decoded decode_pieces(const std::vector<std::string_view>& pieces,
                      std::size_t limit = kDefaultLimit) {
  Decoder dec(limit);
  Decoded out;
  for (std::string_view piece : pieces) {
    out.status = dec.feed(piece, [&](std::string_view l) { out.lines.emplace_back(l); });
  }
  out.status = dec.status();
  out.partial = dec.has_partial_line();
  dec.finish([&](std::string_view l) { out.finished.emplace_back(l); });
  return out;
}

Decoded decode(std::string_view bytes, std::size_t limit = kDefaultLimit) {
  return decode_pieces({bytes}, limit);
}

Decoded decode_bytewise(std::string_view bytes, std::size_t limit = kDefaultLimit) {
  std::vector<std::string_view> pieces;
  for (std::size_t i = 0; i < bytes.size(); ++i) pieces.push_back(bytes.substr(i, 1));
  return decode_pieces(pieces, limit);
}

// Asserts that `bytes` decodes the same in one piece, split in two at every
// byte, in three at every pair of bytes (short inputs) and byte by byte.
void expect_split_invariant(std::string_view bytes, std::size_t limit = kDefaultLimit) {
  const Decoded whole = decode(bytes, limit);
  for (std::size_t i = 0; i <= bytes.size(); ++i) {
    ASSERT_EQ(decode_pieces({bytes.substr(0, i), bytes.substr(i)}, limit), whole)
        << "split at " << i;
  }
  if (bytes.size() <= 64) {
    for (std::size_t i = 0; i <= bytes.size(); ++i) {
      for (std::size_t j = i; j <= bytes.size(); ++j) {
        ASSERT_EQ(
            decode_pieces({bytes.substr(0, i), bytes.substr(i, j - i), bytes.substr(j)}, limit),
            whole)
            << "split at " << i << "," << j;
      }
    }
  }
  ASSERT_EQ(decode_bytewise(bytes, limit), whole) << "byte by byte";
}

std::vector<std::string> lines_of(const Decoded& d) { return d.lines; }

// ---- framing ---------------------------------------------------------------

TEST(NdjsonDecoder, LinesEndAtLf) {
  const Decoded d = decode("{\"a\":1}\n{\"b\":2}\n");
  EXPECT_EQ(d.lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
  EXPECT_EQ(d.status, Status::ok);
  EXPECT_FALSE(d.partial);
  EXPECT_TRUE(d.finished.empty());
}

TEST(NdjsonDecoder, CrlfStrippedWhateverTheSplit) {
  const std::string s = "{\"a\":1}\r\n{\"b\":2}\r\n";
  EXPECT_EQ(lines_of(decode(s)), (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
  expect_split_invariant(s);
}

TEST(NdjsonDecoder, CrThenLfInNextFeedIsOneLineEnd) {
  const Decoded d = decode_pieces({"{}\r", "\n[]\n"});
  EXPECT_EQ(d.lines, (std::vector<std::string>{"{}", "[]"}));
}

TEST(NdjsonDecoder, LoneCrIsLineContentNotALineEnd) {
  // SSE would see three lines here; NDJSON sees one line holding the CRs.
  const std::string s = "{\"a\":\r1}\r{}\n";
  EXPECT_EQ(lines_of(decode(s)), (std::vector<std::string>{"{\"a\":\r1}\r{}"}));
  expect_split_invariant(s);
}

TEST(NdjsonDecoder, OnlyOneCrStrippedBeforeLf) {
  EXPECT_EQ(lines_of(decode("{}\r\r\n")), (std::vector<std::string>{"{}\r"}));
}

TEST(NdjsonDecoder, BlankAndWhitespaceOnlyLinesSkipped) {
  const std::string s = "\n\n{\"a\":1}\n \t \n\r\n\r\r\n  {\"b\":2} \n\n";
  const Decoded d = decode(s);
  // A line with a value keeps its surrounding whitespace: parsing is the
  // dialect's job, and JSON allows it.
  EXPECT_EQ(d.lines, (std::vector<std::string>{"{\"a\":1}", "  {\"b\":2} "}));
  expect_split_invariant(s);
}

// ---- BOM -------------------------------------------------------------------

TEST(NdjsonDecoder, LeadingBomSkippedWhateverTheSplit) {
  const std::string s = "\xEF\xBB\xBF{\"a\":1}\n{}\n";
  EXPECT_EQ(lines_of(decode(s)), (std::vector<std::string>{"{\"a\":1}", "{}"}));
  expect_split_invariant(s);
}

TEST(NdjsonDecoder, BomOnlySkippedAtTheVeryStart) {
  const std::string s = "{}\n\xEF\xBB\xBF{}\n";
  EXPECT_EQ(lines_of(decode(s)), (std::vector<std::string>{"{}", "\xEF\xBB\xBF{}"}));
  EXPECT_EQ(lines_of(decode("\n\xEF\xBB\xBF{}\n")), (std::vector<std::string>{"\xEF\xBB\xBF{}"}));
}

TEST(NdjsonDecoder, PartialBomIsOrdinaryBytes) {
  const std::string s = "\xEF\xBBx\n{}\n";
  EXPECT_EQ(lines_of(decode(s)), (std::vector<std::string>{"\xEF\xBBx", "{}"}));
  expect_split_invariant(s);
  // The stream ending inside a would-be BOM: those bytes are a partial line.
  const Decoded d = decode("\xEF\xBB");
  EXPECT_TRUE(d.partial);
  EXPECT_EQ(d.finished, (std::vector<std::string>{"\xEF\xBB"}));
}

// ---- limit -----------------------------------------------------------------

TEST(NdjsonDecoder, LineExactlyAtLimitIsDelivered) {
  const std::string line(16, 'x');
  for (const std::string& s : {line + "\n", line + "\r\n", "{}\n" + line + "\r\n{}\n"}) {
    const Decoded d = decode(s, 16);
    EXPECT_EQ(d.status, Status::ok) << s;
    EXPECT_NE(std::find(d.lines.begin(), d.lines.end(), line), d.lines.end()) << s;
    expect_split_invariant(s, 16);
  }
}

TEST(NdjsonDecoder, LineOneOverLimitIsTooLargeWhateverTheSplit) {
  const std::string s = "{}\n" + std::string(17, 'x') + "\r\n{}\n";
  const Decoded d = decode(s, 16);
  EXPECT_EQ(d.status, Status::line_too_large);
  EXPECT_EQ(d.lines, (std::vector<std::string>{"{}"}));  // lines before it still count
  EXPECT_TRUE(d.partial);
  EXPECT_TRUE(d.finished.empty());
  expect_split_invariant(s, 16);
}

TEST(NdjsonDecoder, TooLargeIsStickyUntilReset) {
  Decoder dec(4);
  std::vector<std::string> got;
  auto sink = [&](std::string_view l) { got.emplace_back(l); };
  EXPECT_EQ(dec.feed("12345\n", sink), Status::line_too_large);
  EXPECT_EQ(dec.feed("{}\n", sink), Status::line_too_large);
  EXPECT_EQ(dec.status(), Status::line_too_large);
  dec.finish(sink);
  EXPECT_TRUE(got.empty());
  dec.reset();
  EXPECT_EQ(dec.feed("{}\n", sink), Status::ok);
  EXPECT_EQ(got, (std::vector<std::string>{"{}"}));
}

TEST(NdjsonDecoder, UnterminatedOversizeStopsBufferingAtOnce) {
  // A server that never sends LF must not make us buffer without bound: the
  // error comes as soon as the pending bytes pass the limit.
  Decoder dec(8);
  auto sink = [](std::string_view) {};
  EXPECT_EQ(dec.feed("12345678", sink), Status::ok);
  EXPECT_EQ(dec.feed("\r", sink), Status::ok);  // may still be a CRLF
  EXPECT_EQ(dec.feed("x", sink), Status::line_too_large);
}

// ---- end of stream -----------------------------------------------------------

TEST(NdjsonDecoder, UnterminatedFinalLineDeliveredByFinish) {
  const std::string s = "{\"a\":1}\n{\"done\":true}";
  const Decoded d = decode(s);
  EXPECT_EQ(d.lines, (std::vector<std::string>{"{\"a\":1}"}));
  EXPECT_TRUE(d.partial);
  EXPECT_EQ(d.finished, (std::vector<std::string>{"{\"done\":true}"}));
  expect_split_invariant(s);
  EXPECT_EQ(decode("{}\n{\"x\":2}\r").finished, (std::vector<std::string>{"{\"x\":2}"}));
}

TEST(NdjsonDecoder, BlankTailIsNotAPartialLine) {
  for (const char* s : {"{}\n", "{}\n  \t", "{}\n\r", ""}) {
    const Decoded d = decode(s);
    EXPECT_FALSE(d.partial) << s;
    EXPECT_TRUE(d.finished.empty()) << s;
  }
}

TEST(NdjsonDecoder, FinishClearsThePendingLine) {
  Decoder dec;
  std::vector<std::string> got;
  auto sink = [&](std::string_view l) { got.emplace_back(l); };
  dec.feed("{}", sink);
  dec.finish(sink);
  EXPECT_FALSE(dec.has_partial_line());
  dec.finish(sink);
  EXPECT_EQ(got, (std::vector<std::string>{"{}"}));
}

TEST(NdjsonDecoder, ResetStartsANewStream) {
  Decoder dec;
  std::vector<std::string> got;
  auto sink = [&](std::string_view l) { got.emplace_back(l); };
  dec.feed("\xEF\xBB\xBF{\"half", sink);
  dec.reset();
  EXPECT_FALSE(dec.has_partial_line());
  dec.feed("\xEF\xBB\xBF{}\n", sink);  // the BOM is looked for again
  EXPECT_EQ(got, (std::vector<std::string>{"{}"}));
}

// ---- fast path -------------------------------------------------------------

TEST(NdjsonDecoder, WholeLinesAreViewsIntoTheFedBytes) {
  const std::string s = "{\"a\":1}\n{\"b\":2}\r\n{\"c\"";
  Decoder dec;
  std::vector<bool> in_place;
  auto sink = [&](std::string_view l) {
    in_place.push_back(l.data() >= s.data() && l.data() + l.size() <= s.data() + s.size());
  };
  dec.feed(s, sink);
  dec.feed(":3}\n", sink);  // this line spans feeds: it must be the buffered copy
  EXPECT_EQ(in_place, (std::vector<bool>{true, true, false}));
}

// ---- recorded Ollama streams -----------------------------------------------

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(LSE_FIXTURES) + "/sse/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Reference framing, written independently of the decoder: split on LF,
// drop one CR before it, drop blank lines.
std::vector<std::string> reference_lines(const std::string& bytes) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t lf; (lf = bytes.find('\n', start)) != std::string::npos; start = lf + 1) {
    std::string line = bytes.substr(start, lf - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t\r") != std::string::npos) out.push_back(line);
  }
  return out;
}

std::string to_crlf(const std::string& lf) {
  std::string out;
  for (char c : lf) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

struct Recorded {
  const char* file;
  std::size_t lines;
};

class NdjsonRecorded : public testing::TestWithParam<Recorded> {};

TEST_P(NdjsonRecorded, WholeMatchesReferenceSplit) {
  const std::string bytes = read_fixture(GetParam().file);
  const Decoded d = decode(bytes);
  EXPECT_EQ(d.status, Status::ok);
  EXPECT_EQ(d.lines.size(), GetParam().lines);
  EXPECT_EQ(d.lines, reference_lines(bytes));
  EXPECT_FALSE(d.partial);  // Ollama terminates every line
  EXPECT_TRUE(d.finished.empty());
  ASSERT_FALSE(d.lines.empty());
  EXPECT_EQ(d.lines.front().front(), '{');
  EXPECT_NE(d.lines.back().find("\"done\":true"), std::string::npos);
}

TEST_P(NdjsonRecorded, EverySplitAndByteByByteMatchWhole) {
  const std::string bytes = read_fixture(GetParam().file);
  ASSERT_FALSE(bytes.empty());
  expect_split_invariant(bytes);
}

TEST_P(NdjsonRecorded, CrlfVersionGivesTheSameLines) {
  const std::string lf = read_fixture(GetParam().file);
  const std::string crlf = to_crlf(lf);
  EXPECT_EQ(decode(crlf).lines, reference_lines(lf));
  expect_split_invariant(crlf);
}

TEST_P(NdjsonRecorded, CutLastLineIsPartialAndFinishDeliversIt) {
  std::string bytes = read_fixture(GetParam().file);
  ASSERT_EQ(bytes.back(), '\n');
  bytes.pop_back();
  const std::vector<std::string> ref = reference_lines(bytes + "\n");
  const Decoded d = decode(bytes);
  EXPECT_EQ(d.lines, std::vector<std::string>(ref.begin(), ref.end() - 1));
  EXPECT_TRUE(d.partial);
  EXPECT_EQ(d.finished, std::vector<std::string>{ref.back()});
}

INSTANTIATE_TEST_SUITE_P(Ollama, NdjsonRecorded,
                         testing::Values(Recorded{"ollama-api-chat.ndjson", 22},
                                         Recorded{"ollama-api-generate.ndjson", 22},
                                         Recorded{"ollama-api-chat-llama3-2024.ndjson", 50}),
                         [](const testing::TestParamInfo<Recorded>& info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find('.'));
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace lse::ndjson
