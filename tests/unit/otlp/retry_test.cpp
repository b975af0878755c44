// When a failed export is retried, and after how long.
#include <gtest/gtest.h>

#include "otlp/pipeline.hpp"

namespace lse::otlp {
namespace {

using std::chrono::milliseconds;

PostResult answered(int status, std::optional<double> retry_after = std::nullopt) {
  PostResult r;
  r.status = status;
  r.retry_after = retry_after;
  return r;
}

TEST(Retry, RetryAfterIsHonoured) {
  const auto d = retry_decision(answered(503, 2.5), 1, milliseconds(1000), 0.5);
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.wait, milliseconds(2500));
}

TEST(Retry, BackoffDoublesWithJitterWithinTwentyPercent) {
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const auto lo = retry_decision(answered(429), attempt, milliseconds(1000), 0.0);
    const auto hi = retry_decision(answered(429), attempt, milliseconds(1000), 0.999);
    const double nominal = 1000.0 * (1 << (attempt - 1));
    EXPECT_NEAR(static_cast<double>(lo.wait.count()), nominal * 0.8, 5.0);
    EXPECT_NEAR(static_cast<double>(hi.wait.count()), nominal * 1.2, 5.0);
  }
}

TEST(Retry, OnlyTransientFailuresAndOnlySoOften) {
  PostResult refused;
  refused.error = "Connection refused";
  EXPECT_TRUE(retry_decision(refused, 1, milliseconds(100), 0).retry);
  for (int status : {429, 502, 503, 504})
    EXPECT_TRUE(retry_decision(answered(status), 1, milliseconds(100), 0).retry) << status;
  for (int status : {400, 401, 404, 413, 500})
    EXPECT_FALSE(retry_decision(answered(status), 1, milliseconds(100), 0).retry) << status;
  EXPECT_FALSE(retry_decision(answered(503), kMaxAttempts, milliseconds(100), 0).retry);
}

TEST(Resource, ServiceAttributesThenTheConfiguredOnes) {
  config::OtlpOptions o;
  o.resource = {{"service.name", "mine"}, {"team", "streams"}};
  const Attributes a = resource_attributes(o, "1.2.3", "host-a");
  auto value = [&](const std::string& key) {
    for (const auto& x : a)
      if (x.key == key) return std::get<std::string>(x.value);
    return std::string("<absent>");
  };
  EXPECT_EQ(value("service.name"), "mine");
  EXPECT_EQ(value("service.version"), "1.2.3");
  EXPECT_EQ(value("service.instance.id"), "host-a");
  EXPECT_EQ(value("team"), "streams");
}

TEST(Gzip, RoundTripsThroughZlib) {
  const std::string data(10000, 'x');
  const std::string z = gzip_compress(data);
  ASSERT_GT(z.size(), 10u);
  EXPECT_EQ(static_cast<unsigned char>(z[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(z[1]), 0x8b);
  EXPECT_LT(z.size(), data.size() / 10);
}

}  // namespace
}  // namespace lse::otlp
