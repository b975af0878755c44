// Allocation test for ndjson/decoder: once warm, decoding lines (whole or split
// across feeds, LF or CRLF) performs no heap allocation. Replaces global
// operator new in this test binary to count allocations inside a measured
// window, as tests/unit/sse/alloc_test.cpp does.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "../../support/counting_new.hpp"
#include "ndjson/decoder.hpp"

using lse::test::g_allocations;

namespace lse::ndjson {
namespace {

TEST(NdjsonDecoderAlloc, NoAllocationPerLineOnceWarm) {
  std::string stream = "\xEF\xBB\xBF";
  for (int i = 0; i < 500; ++i) {
    stream += "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"" +
              std::string(20 + i % 50, 'w') + "\"},\"done\":false}";
    stream += i % 3 == 0 ? "\r\n" : "\n";
    if (i % 50 == 0) stream += "\n";
  }
  Decoder dec;
  std::size_t lines = 0;
  std::size_t bytes = 0;
  auto sink = [&](std::string_view l) {
    ++lines;
    bytes += l.size();
  };
  // Warm-up pass: the split-line buffer grows to the stream's line size.
  dec.feed(stream, sink);
  for (std::size_t pos = 0; pos < stream.size(); pos += 13) {
    dec.feed(std::string_view(stream).substr(pos, 13), sink);
  }
  ASSERT_EQ(lines, 1000u);

  const long before = g_allocations.load();
  dec.reset();             // a new stream on the same decoder stays warm too
  dec.feed(stream, sink);  // whole
  for (std::size_t pos = 0; pos < stream.size(); pos += 7) {  // split mid-line
    dec.feed(std::string_view(stream).substr(pos, 7), sink);
  }
  dec.finish(sink);
  const long after = g_allocations.load();
  EXPECT_EQ(lines, 2000u);
  EXPECT_EQ(after - before, 0) << "allocations while decoding warm";
}

}  // namespace
}  // namespace lse::ndjson
