#include "histogram/exponential.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace lse::histogram {
namespace {

TEST(BucketIndex, PowersOfTwoAreUpperBoundsAtEverySchema) {
  for (int schema = kMinSchema; schema <= kMaxSchema; ++schema) {
    EXPECT_EQ(bucket_index(1.0, schema), 0) << schema;
    EXPECT_DOUBLE_EQ(bucket_upper_bound(0, schema), 1.0) << schema;
  }
  EXPECT_EQ(bucket_index(2.0, 3), 8);     // 8 buckets per doubling
  EXPECT_EQ(bucket_index(2.0, 0), 1);     // (1, 2]
  EXPECT_EQ(bucket_index(2.0, -1), 1);    // (1, 4]
  EXPECT_EQ(bucket_index(0.5, 3), -8);    // (2^-9/8, 2^-1]
  EXPECT_EQ(bucket_index(0.25, -2), -0);  // (2^-4, 1]
}

TEST(BucketIndex, MatchesPrometheusBoundsForMilliseconds) {
  // 3 ms at schema 3: (2^-8.5, 2^-8.375] = (0.002762, 0.003012].
  EXPECT_EQ(bucket_index(0.003, 3), -67);
  EXPECT_NEAR(bucket_upper_bound(-67, 3), 0.0030121, 1e-7);
  EXPECT_NEAR(bucket_upper_bound(-68, 3), 0.0027621, 1e-7);
  // schema 1: bounds ..., 0.5, 0.7071, 1: 0.6 is in bucket -1.
  EXPECT_EQ(bucket_index(0.6, 1), -1);
  EXPECT_NEAR(bucket_upper_bound(-1, 1), std::sqrt(0.5), 1e-15);
}

TEST(BucketIndex, EveryValueLiesInsideItsBucket) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-30, 30);
  for (int schema = kMinSchema; schema <= kMaxSchema; ++schema) {
    for (int n = 0; n < 2000; ++n) {
      const double v = std::exp2(exponent(rng));
      const auto i = bucket_index(v, schema);
      ASSERT_GT(v, bucket_upper_bound(i - 1, schema)) << v << " schema " << schema;
      ASSERT_LE(v, bucket_upper_bound(i, schema)) << v << " schema " << schema;
    }
  }
}

TEST(SpansAndDeltas, EncodesRunsAndDifferences) {
  const auto e = spans_and_deltas({{-2, 1}, {-1, 3}, {3, 2}, {4, 2}});
  ASSERT_EQ(e.spans.size(), 2u);
  EXPECT_EQ(e.spans[0].offset, -2);
  EXPECT_EQ(e.spans[0].length, 2u);
  EXPECT_EQ(e.spans[1].offset, 3);  // indices 0, 1, 2 empty
  EXPECT_EQ(e.spans[1].length, 2u);
  EXPECT_EQ(e.deltas, (std::vector<std::int64_t>{1, 2, -1, 0}));
  EXPECT_TRUE(spans_and_deltas({}).spans.empty());
}

TEST(Exponential, CountsSumZeroBucketAndIgnoresNaN) {
  Exponential h({3, 1e-5, 160});
  h.observe(0.003);
  h.observe(0.003);
  h.observe(0.0);
  h.observe(1e-6);
  h.observe(std::nan(""));
  h.observe(0.25);
  EXPECT_EQ(h.count(), 5u);
  EXPECT_DOUBLE_EQ(h.sum(), 0.003 + 0.003 + 1e-6 + 0.25);
  EXPECT_EQ(h.zero_count(), 2u);
  ASSERT_EQ(h.positive().size(), 2u);
  EXPECT_EQ(h.positive().at(-67), 2u);
  EXPECT_EQ(h.positive().at(-16), 1u);
  EXPECT_TRUE(h.negative().empty());
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_TRUE(h.positive().empty());
}

TEST(Exponential, HalvesResolutionUntilBucketsFit) {
  Exponential h({3, 1e-5, 4});
  std::vector<double> values;
  for (int k = 0; k < 40; ++k) values.push_back(0.001 * std::exp2(k / 4.0));  // 0.001 .. ~0.9
  for (double v : values) h.observe(v);
  EXPECT_LE(h.positive().size(), 4u);
  EXPECT_LT(h.schema(), 3);
  Exponential::Buckets expected;
  for (double v : values) ++expected[bucket_index(v, h.schema())];
  EXPECT_EQ(h.positive(), expected);  // merged buckets are the buckets of the lower schema
  EXPECT_EQ(h.count(), values.size());
  h.reset();
  EXPECT_EQ(h.schema(), 3);
}

TEST(Exponential, SettingsAreClampedToWhatPrometheusAccepts) {
  EXPECT_EQ(Exponential({12, 0, 10}).schema(), kMaxSchema);
  EXPECT_EQ(Exponential({-9, 0, 10}).schema(), kMinSchema);
}

}  // namespace
}  // namespace lse::histogram
