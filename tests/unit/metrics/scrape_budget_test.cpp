// metrics.max_scrape_bytes: pieces pass while the total stays within the
// budget, the piece that would pass it is withheld and stops the render.
#include "metrics/scrape_budget.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace lse::metrics {
namespace {

struct Collected {
  std::vector<std::string> pieces;
  ExpositionSink sink() {
    return [this](std::string_view piece) {
      pieces.emplace_back(piece);
      return true;
    };
  }
};

TEST(ScrapeBudget, PiecesWithinTheBudgetPassUpToTheLastByte) {
  Collected c;
  ScrapeBudget budget(10);
  auto guarded = budget.guard(c.sink());
  EXPECT_TRUE(guarded("abcd"));
  EXPECT_TRUE(guarded(""));
  EXPECT_TRUE(guarded("efghij"));  // exactly 10
  EXPECT_FALSE(budget.exceeded());
  EXPECT_EQ(budget.bytes(), 10u);
  EXPECT_EQ(c.pieces, (std::vector<std::string>{"abcd", "", "efghij"}));
}

TEST(ScrapeBudget, ThePieceThatWouldPassItIsWithheldAndStopsTheRender) {
  Collected c;
  ScrapeBudget budget(10);
  auto guarded = budget.guard(c.sink());
  EXPECT_TRUE(guarded("abcdefgh"));
  EXPECT_FALSE(guarded("ijk"));  // 11
  EXPECT_TRUE(budget.exceeded());
  EXPECT_EQ(budget.bytes(), 8u);
  EXPECT_EQ(c.pieces, (std::vector<std::string>{"abcdefgh"}));
  const std::string why = budget.refusal();
  EXPECT_NE(why.find("metrics.max_scrape_bytes (10 bytes)"), std::string::npos) << why;
  EXPECT_NE(why.find("after 8 bytes"), std::string::npos) << why;
}

TEST(ScrapeBudget, TheDownstreamSinkMayStillStopTheRender) {
  ScrapeBudget budget(100);
  auto guarded = budget.guard([](std::string_view) { return false; });
  EXPECT_FALSE(guarded("abc"));
  EXPECT_FALSE(budget.exceeded());
  EXPECT_EQ(budget.bytes(), 3u);
}

}  // namespace
}  // namespace lse::metrics
