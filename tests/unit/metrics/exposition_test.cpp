// Accept negotiation: what Prometheus and curl send, and ranges that must not
// select OpenMetrics (q=0, another major version).
#include "metrics/exposition.hpp"

#include <gtest/gtest.h>

namespace lse::metrics {
namespace {

TEST(Negotiate, WhatScrapersSend) {
  // Prometheus 2.42 with exemplar storage (scrape_classic_histograms off).
  EXPECT_EQ(negotiate("application/openmetrics-text;version=1.0.0,application/"
                      "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;"
                      "q=0.1"),
            Exposition::openmetrics);
  EXPECT_EQ(negotiate("text/plain;version=0.0.4;q=1,*/*;q=0.1"), Exposition::text);
  EXPECT_EQ(negotiate("*/*"), Exposition::text);
  EXPECT_EQ(negotiate(""), Exposition::text);
  EXPECT_EQ(negotiate("Application/OpenMetrics-Text"), Exposition::openmetrics);
}

TEST(Negotiate, ZeroWeightOrOtherVersionIsNotOpenMetrics) {
  EXPECT_EQ(negotiate("application/openmetrics-text; q=0"), Exposition::text);
  EXPECT_EQ(negotiate("application/openmetrics-text;version=0.0.1"), Exposition::text);
  EXPECT_EQ(negotiate("text/plain, application/openmetrics-text; version=1.0.0; q=0.2"),
            Exposition::openmetrics);
}

TEST(Negotiate, ContentTypes) {
  EXPECT_STREQ(content_type(Exposition::text), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_STREQ(content_type(Exposition::openmetrics),
               "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

}  // namespace
}  // namespace lse::metrics
