// The content types of the exposition formats (negotiation itself:
// tests/unit/server/negotiation_test.cpp).
#include "metrics/exposition.hpp"

#include <gtest/gtest.h>

namespace lse::metrics {
namespace {

TEST(Negotiate, ContentTypes) {
  EXPECT_STREQ(content_type(Exposition::text), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_STREQ(content_type(Exposition::openmetrics),
               "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

}  // namespace
}  // namespace lse::metrics
