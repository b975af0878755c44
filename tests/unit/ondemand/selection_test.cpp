// GET /probe?target= selects configured targets and their prompts only.
#include "ondemand/selection.hpp"

#include <gtest/gtest.h>

namespace lse::ondemand {
namespace {

config::Config two_targets() {
  config::Config c;
  c.prompts["short"] = config::Prompt{};
  c.prompts["long"] = config::Prompt{};
  config::Target a;
  a.name = "a";
  a.prompts = {"long", "short"};
  config::Target b;
  b.name = "b";
  b.prompts = {"short"};
  c.targets = {a, b};
  return c;
}

TEST(OnDemandSelection, DefaultsToTheTargetsFirstPrompt) {
  const auto c = two_targets();
  const Selection s = select(c, "a", std::nullopt);
  ASSERT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(s.target, &c.targets[0]);
  EXPECT_EQ(s.prompt, &c.prompts.at("long"));
}

TEST(OnDemandSelection, TakesANamedPromptOfTheTarget) {
  const auto c = two_targets();
  const Selection s = select(c, "a", "short");
  ASSERT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(s.prompt, &c.prompts.at("short"));
}

TEST(OnDemandSelection, UnknownTargetIsAnErrorNeverAUrl) {
  const auto c = two_targets();
  for (const std::string t : {"c", "http://127.0.0.1:1/v1", ""}) {
    const Selection s = select(c, t, std::nullopt);
    EXPECT_EQ(s.target, nullptr);
    EXPECT_NE(s.error.find("not in the configuration"), std::string::npos) << s.error;
  }
}

TEST(OnDemandSelection, PromptMustBeTheTargetsOwn) {
  const auto c = two_targets();
  // "long" exists in the config, but b does not probe with it.
  const Selection s = select(c, "b", "long");
  EXPECT_EQ(s.target, nullptr);
  EXPECT_NE(s.error.find("prompt \"long\" is not one of target \"b\"'s prompts (short)"),
            std::string::npos)
      << s.error;
  EXPECT_EQ(select(c, "a", "nope").target, nullptr);
}

}  // namespace
}  // namespace lse::ondemand
