// Allocation test for api/adapter: once warm, interpreting ordinary chunks
// (content, reasoning, tool calls, usage, finish, [DONE]) performs no heap
// allocation. Replaces global operator new in this test binary to count.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "../../support/counting_new.hpp"
#include "api/adapter.hpp"
#include "sse/decoder.hpp"

using lse::test::g_allocations;

namespace lse::api {
namespace {

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(LSE_FIXTURES) + "/sse/" + name, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AdapterAlloc, NoAllocationPerEventOnceWarm) {
  for (const char* file :
       {"deepseek-reasoner-reasoning-content.sse", "openai-chat-parallel-tool-calls.sse",
        "mistral-content-array-thinking.sse", "vllm-chat-usage.sse"}) {
    const std::string body = read_fixture(file);
    ASSERT_FALSE(body.empty()) << file;
    auto adapter = make_adapter(Dialect::openai_chat, {true, true, true});
    sse::Decoder dec;
    int content = 0;
    auto sink = [&](const sse::Event& e) { content += adapter->interpret(e).content; };
    dec.feed(body, sink);  // warm-up: decoder buffers and parser grow
    const int warm = content;
    ASSERT_GT(warm, 0) << file;

    dec.reset();
    const long before = g_allocations.load();
    dec.feed(body, sink);
    const long after = g_allocations.load();
    EXPECT_EQ(content, 2 * warm) << file;
    EXPECT_EQ(after - before, 0) << file << ": allocations while interpreting warm";
  }
}

}  // namespace
}  // namespace lse::api
