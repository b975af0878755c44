// Allocation test for sse/decoder: once warm, decoding events (whole or split
// across feeds) performs no heap allocation. Replaces global operator new in
// this test binary to count allocations inside a measured window.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "../../support/counting_new.hpp"
#include "sse/decoder.hpp"

using lse::test::g_allocations;

namespace lse::sse {
namespace {

TEST(SseDecoderAlloc, NoAllocationPerEventOnceWarm) {
  std::string stream;
  for (int i = 0; i < 500; ++i) {
    stream += "id: " + std::to_string(i % 10) +
              "\nevent: chunk\ndata: {\"choices\":[{\"delta\":{\"content\":\"" +
              std::string(20 + i % 50, 'w') + "\"}}]}\n\n";
    if (i % 50 == 0) stream += ": keep-alive\r\n\r\n";
  }
  Decoder dec;
  std::size_t events = 0;
  std::size_t bytes = 0;
  auto sink = [&](const Event& e) {
    ++events;
    bytes += e.data.size();
  };
  // Warm-up pass: buffers grow to the stream's event size.
  dec.feed(stream, sink);
  for (std::size_t pos = 0; pos < stream.size(); pos += 13) {
    dec.feed(std::string_view(stream).substr(pos, 13), sink);
  }
  ASSERT_EQ(events, 1000u);

  const long before = g_allocations.load();
  dec.feed(stream, sink);                                     // whole
  for (std::size_t pos = 0; pos < stream.size(); pos += 7) {  // split mid-line
    dec.feed(std::string_view(stream).substr(pos, 7), sink);
  }
  const long after = g_allocations.load();
  EXPECT_EQ(events, 2000u);
  EXPECT_EQ(after - before, 0) << "allocations while decoding warm";
}

}  // namespace
}  // namespace lse::sse
