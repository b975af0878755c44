// Accept negotiation by q-values: what Prometheus and curl send, the weight
// that wins, the order that breaks a tie, and q=0 as "not acceptable".
#include "server/negotiation.hpp"

#include <gtest/gtest.h>

namespace lse::server {
namespace {

using metrics::Exposition;

TEST(ChooseExposition, WhatScrapersSend) {
  // Prometheus 2.x with exemplar storage: OpenMetrics 1.0.0 at q=1.
  EXPECT_EQ(choose_exposition("application/openmetrics-text;version=1.0.0,application/"
                              "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
                              "q=0.5,*/*;q=0.1"),
            Exposition::openmetrics);
  // Prometheus 3's default scrape_protocols.
  EXPECT_EQ(choose_exposition("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;"
                              "q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/"
                              "plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;"
                              "version=0.0.4;q=0.2,*/*;q=0.1"),
            Exposition::openmetrics);
  // Prometheus 2.x without exemplars, curl, no header.
  EXPECT_EQ(choose_exposition("text/plain;version=0.0.4;q=1,*/*;q=0.1"), Exposition::text);
  EXPECT_EQ(choose_exposition("*/*"), Exposition::text);
  EXPECT_EQ(choose_exposition(""), Exposition::text);
  EXPECT_EQ(choose_exposition("Application/OpenMetrics-Text"), Exposition::openmetrics);
}

TEST(ChooseExposition, ProtobufForAScraperThatAsksForNativeHistograms) {
  // Prometheus 2.42 with --enable-feature=native-histograms.
  EXPECT_EQ(choose_exposition("application/vnd.google.protobuf;proto=io.prometheus.client."
                              "MetricFamily;encoding=delimited,application/openmetrics-text;"
                              "version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;"
                              "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            Exposition::protobuf);
  // Prometheus 3 with scrape_native_histograms: true (PrometheusProto first).
  EXPECT_EQ(choose_exposition("application/vnd.google.protobuf;proto=io.prometheus.client."
                              "MetricFamily;encoding=delimited;q=0.5,application/openmetrics-"
                              "text;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;"
                              "version=0.0.4;q=0.2,*/*;q=0.1"),
            Exposition::protobuf);
  // With spaces, as the content type is written.
  EXPECT_EQ(choose_exposition(metrics::kProtobufContentType), Exposition::protobuf);
  // Another encoding or message type, a wildcard, or a lower weight: not protobuf.
  EXPECT_EQ(choose_exposition("application/vnd.google.protobuf;proto=io.prometheus.client."
                              "MetricFamily;encoding=text"),
            Exposition::text);
  EXPECT_EQ(choose_exposition("application/vnd.google.protobuf;encoding=delimited"),
            Exposition::text);
  EXPECT_EQ(choose_exposition("application/*"), Exposition::openmetrics);
  EXPECT_EQ(choose_exposition("application/vnd.google.protobuf;proto=io.prometheus.client."
                              "MetricFamily;encoding=delimited;q=0.2,text/plain;q=0.5"),
            Exposition::text);
  EXPECT_EQ(choose_exposition("application/vnd.google.protobuf;proto=io.prometheus.client."
                              "MetricFamily;encoding=delimited;q=0"),
            Exposition::text);
}

TEST(ChooseExposition, HighestWeightWinsWhateverTheOrder) {
  // The case: listed second, but weighed ten times lower.
  EXPECT_EQ(choose_exposition("text/plain;q=1, application/openmetrics-text;q=0.1"),
            Exposition::text);
  EXPECT_EQ(choose_exposition("text/plain;q=0.1, application/openmetrics-text;q=1"),
            Exposition::openmetrics);
  EXPECT_EQ(choose_exposition("text/plain, application/openmetrics-text; version=1.0.0; q=0.2"),
            Exposition::text);
  EXPECT_EQ(choose_exposition("application/openmetrics-text; q=0.3, text/plain; q=0.2"),
            Exposition::openmetrics);
  // A more specific range overrides a wildcard's weight: text is 0.2 here,
  // OpenMetrics (only in "*/*") 0.9.
  EXPECT_EQ(choose_exposition("*/*;q=0.9, text/plain;q=0.2"), Exposition::openmetrics);
  EXPECT_EQ(choose_exposition("text/*;q=0.9, text/plain;q=0.1, application/*;q=0.5"),
            Exposition::openmetrics);
  EXPECT_EQ(choose_exposition("*/*;q=0.9, text/plain;q=0.2, application/openmetrics-text;q=0.5"),
            Exposition::openmetrics);
  EXPECT_EQ(choose_exposition("application/*;q=0.8, text/*;q=0.5"), Exposition::openmetrics);
}

TEST(ChooseExposition, TiesGoToTheRangeListedFirst) {
  EXPECT_EQ(choose_exposition("application/openmetrics-text;version=1.0.0;q=0.5,text/plain;q=0.5"),
            Exposition::openmetrics);
  EXPECT_EQ(choose_exposition("text/plain;q=0.5,application/openmetrics-text;version=1.0.0;q=0.5"),
            Exposition::text);
  EXPECT_EQ(choose_exposition("application/openmetrics-text, text/plain"), Exposition::openmetrics);
  // One range weighs both: the default format.
  EXPECT_EQ(choose_exposition("*/*;q=0.5"), Exposition::text);
}

TEST(ChooseExposition, ZeroWeightOrOtherVersionIsNotAcceptable) {
  EXPECT_EQ(choose_exposition("application/openmetrics-text; q=0"), Exposition::text);
  EXPECT_EQ(choose_exposition("application/openmetrics-text;q=0, */*"), Exposition::text);
  EXPECT_EQ(choose_exposition("application/openmetrics-text;version=0.0.1"), Exposition::text);
  // text refused outright, OpenMetrics acceptable even at a low weight.
  EXPECT_EQ(choose_exposition("text/plain;q=0, application/openmetrics-text;q=0.01"),
            Exposition::openmetrics);
  EXPECT_EQ(choose_exposition("text/plain;q=0, */*;q=0.1"), Exposition::openmetrics);
  // Nothing acceptable: the text format rather than no answer.
  EXPECT_EQ(choose_exposition("application/json"), Exposition::text);
}

TEST(ChooseExposition, OddSpellingsAreRead) {
  EXPECT_EQ(choose_exposition("text/plain ; Q=1 ,application/openmetrics-text ;q= 0.1"),
            Exposition::text);
  EXPECT_EQ(choose_exposition("text/plain;q=0.2,application/openmetrics-text;q=junk"),
            Exposition::openmetrics);  // an unreadable q is 1
  EXPECT_EQ(choose_exposition(",,text/plain;q=0.4,,application/openmetrics-text;q=0.3,"),
            Exposition::text);
}

}  // namespace
}  // namespace lse::server
