// Tests for the dialect registry (api/adapter.cpp): every dialect of
// kAllDialects has a name that parses back to it and a factory that builds
// an adapter of that dialect.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "api/adapter.hpp"

namespace lse::api {
namespace {

TEST(Registry, EveryDialectIsRegistered) {
  std::set<std::string> names;
  for (Dialect d : kAllDialects) {
    const std::string name(dialect_name(d));
    EXPECT_NE(name, "unknown");
    EXPECT_TRUE(names.insert(name).second) << name << " named twice";
    EXPECT_EQ(parse_dialect(name), d) << name;
    auto adapter = make_adapter(d, {});
    ASSERT_NE(adapter, nullptr) << name;
    EXPECT_EQ(adapter->dialect(), d) << name;
    EXPECT_EQ(adapter->path().front(), '/') << name;
  }
}

TEST(Registry, UnknownNamesAreRejected) {
  for (const char* name :
       {"", "openai", "OpenAI-Chat", "openai-chat ", "anthropic", "ollama", "vertex"})
    EXPECT_EQ(parse_dialect(name), std::nullopt) << name;
}

}  // namespace
}  // namespace lse::api
