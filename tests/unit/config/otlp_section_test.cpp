// `otlp:` and the OTEL_* variables that fill it; per-target `provider:`.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config/config.hpp"

namespace lse::config {
namespace {

const char* kOtelVariables[] = {
    "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",  "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_RESOURCE_ATTRIBUTES",    "OTEL_SERVICE_NAME"};

class OtlpSection : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kOtelVariables) unsetenv(v);
  }
  void TearDown() override {
    for (const char* v : kOtelVariables) unsetenv(v);
  }

  static std::string with_otlp(const std::string& section) {
    return "targets:\n"
           "  - name: t\n"
           "    url: http://127.0.0.1:8000/v1\n"
           "    model: m\n"
           "    provider: vllm\n" +
           section;
  }
  static Config load(const std::string& yaml) { return parse(yaml, "f.yaml", "/tmp"); }
  static std::string error_of(const std::string& yaml) {
    try {
      load(yaml);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  }
};

TEST_F(OtlpSection, AbsentMeansNoPush) { EXPECT_FALSE(load(with_otlp("")).otlp.has_value()); }

TEST_F(OtlpSection, EndpointGetsTheMetricsPathAndDefaults) {
  const Config c = load(with_otlp("otlp:\n  endpoint: http://collector:4318/\n"));
  ASSERT_TRUE(c.otlp);
  EXPECT_EQ(c.otlp->endpoint, "http://collector:4318/v1/metrics");
  EXPECT_EQ(c.otlp->endpoint_source, "config");
  EXPECT_EQ(c.otlp->interval, std::chrono::seconds(60));
  EXPECT_EQ(c.otlp->timeout, std::chrono::seconds(10));
  EXPECT_EQ(c.otlp->protocol, OtlpOptions::Protocol::http_protobuf);
  EXPECT_EQ(c.otlp->temporality, OtlpOptions::Temporality::cumulative);
  EXPECT_FALSE(c.otlp->gzip);
  EXPECT_EQ(c.targets.at(0).provider, "vllm");
}

TEST_F(OtlpSection, EveryKey) {
  const Config c = load(
      with_otlp("otlp:\n  endpoint: https://c.example:4318/base\n  interval: 15s\n  timeout: 2s\n"
                "  protocol: http/json\n  temporality: delta\n  compression: gzip\n  max_queue: 3\n"
                "  headers: {X-Tenant: lab}\n  resource: {deployment.environment: prod}\n"));
  EXPECT_EQ(c.otlp->endpoint, "https://c.example:4318/base/v1/metrics");
  EXPECT_EQ(c.otlp->interval, std::chrono::seconds(15));
  EXPECT_EQ(c.otlp->timeout, std::chrono::seconds(2));
  EXPECT_EQ(c.otlp->protocol, OtlpOptions::Protocol::http_json);
  EXPECT_EQ(c.otlp->temporality, OtlpOptions::Temporality::delta);
  EXPECT_TRUE(c.otlp->gzip);
  EXPECT_EQ(c.otlp->max_queue, 3u);
  ASSERT_EQ(c.otlp->headers.size(), 1u);
  EXPECT_EQ(c.otlp->headers[0].second, "lab");
  EXPECT_TRUE(c.otlp->secret_headers.empty());
  ASSERT_EQ(c.otlp->resource.size(), 1u);
  EXPECT_EQ(c.otlp->resource[0].first, "deployment.environment");
}

TEST_F(OtlpSection, EnvironmentFillsWhatTheSectionLeavesOut) {
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env-collector:4318", 1);
  setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcret,x-team = a b", 1);
  setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,team=streams", 1);
  setenv("OTEL_SERVICE_NAME", "from-service-name", 1);
  const Config c = load(with_otlp("otlp: {}\n"));
  EXPECT_EQ(c.otlp->endpoint, "http://env-collector:4318/v1/metrics");
  EXPECT_EQ(c.otlp->endpoint_source, "OTEL_EXPORTER_OTLP_ENDPOINT");
  ASSERT_EQ(c.otlp->headers.size(), 2u);
  EXPECT_EQ(c.otlp->headers[0], (std::pair<std::string, std::string>{"api-key", "s=cret"}));
  EXPECT_EQ(c.otlp->headers[1], (std::pair<std::string, std::string>{"x-team", "a b"}));
  EXPECT_EQ(c.otlp->secret_headers.size(), 2u);  // every header from the variable
  // OTEL_SERVICE_NAME wins over service.name in OTEL_RESOURCE_ATTRIBUTES.
  EXPECT_EQ(c.otlp->resource.back(),
            (std::pair<std::string, std::string>{"service.name", "from-service-name"}));
  // Never in the dump.
  const std::string dump = dump_redacted(c);
  EXPECT_EQ(dump.find("s=cret"), std::string::npos) << dump;
  EXPECT_NE(dump.find("api-key: <secret>"), std::string::npos) << dump;
}

TEST_F(OtlpSection, SignalEndpointIsUsedAsItIsAndTheConfigWins) {
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318", 1);
  setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://signal:4318/custom/path", 1);
  EXPECT_EQ(load(with_otlp("otlp:\n")).otlp->endpoint, "http://signal:4318/custom/path");
  EXPECT_EQ(load(with_otlp("otlp: {endpoint: 'http://cfg:1'}\n")).otlp->endpoint,
            "http://cfg:1/v1/metrics");
}

TEST_F(OtlpSection, HeaderFromASecretFileIsLoadedAndRedacted) {
  const auto path = std::filesystem::temp_directory_path() / "lse-otlp-token-test";
  std::ofstream(path) << "tok-51d2e0aa\n";
  const Config c =
      load(with_otlp("otlp:\n  endpoint: http://c:4318\n  headers:\n"
                     "    X-Custom: {file: " +
                     path.string() + "}\n"));
  std::filesystem::remove(path);
  ASSERT_EQ(c.otlp->headers.size(), 1u);
  EXPECT_EQ(c.otlp->headers[0].second, "tok-51d2e0aa");
  const std::string dump = dump_redacted(c);
  EXPECT_EQ(dump.find("tok-51d2e0aa"), std::string::npos) << dump;
  EXPECT_NE(dump.find("X-Custom: <secret>"), std::string::npos) << dump;
}

TEST_F(OtlpSection, ErrorsSayWhereAndWhat) {
  EXPECT_EQ(error_of(with_otlp("otlp:\n  endpoint: http://c:1\n  protocol: grpc\n")),
            "f.yaml:8:13: otlp.protocol: must be http/protobuf or http/json, got 'grpc'");
  EXPECT_EQ(error_of(with_otlp("otlp:\n  endpoint: grpc://c:4317\n")),
            "f.yaml:7:13: otlp.endpoint: must be an http:// or https:// URL (OTLP/HTTP; gRPC is "
            "not supported)");
  EXPECT_NE(error_of(with_otlp("otlp:\n  interval: 5s\n")).find("otlp: needs an endpoint"),
            std::string::npos);
  EXPECT_NE(error_of(with_otlp("otlp:\n  endpoint: http://c:1\n  interval: 1s\n  timeout: 2s\n"))
                .find("timeout (2s) must not exceed interval (1s)"),
            std::string::npos);
  EXPECT_NE(error_of(with_otlp("otlp:\n  endpoint: http://c:1\n  temporaliti: delta\n"))
                .find("unknown key 'temporaliti' in otlp, did you mean 'temporality'?"),
            std::string::npos);
}

TEST_F(OtlpSection, BadHeadersFromTheEnvironmentAreErrorsWithoutTheirValue) {
  setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-key=sec%0Dret-42", 1);
  const std::string e = error_of(with_otlp("otlp: {endpoint: 'http://c:1'}\n"));
  EXPECT_NE(e.find("OTEL_EXPORTER_OTLP_HEADERS: value of header 'x-key' contains a line break"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("sec"), std::string::npos) << e;
  setenv("OTEL_EXPORTER_OTLP_HEADERS", "bad name=v", 1);
  EXPECT_NE(error_of(with_otlp("otlp: {endpoint: 'http://c:1'}\n")).find("invalid header name"),
            std::string::npos);
}

TEST(OtelKeyValues, ListsAsTheVariablesWriteThem) {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(parse_otel_key_values(""), Pairs{});
  EXPECT_EQ(parse_otel_key_values(" a = 1 ,, b=%2C%3D "), (Pairs{{"a", "1"}, {"b", ",="}}));
  EXPECT_EQ(parse_otel_key_values("k=v=w"), (Pairs{{"k", "v=w"}}));
  EXPECT_FALSE(parse_otel_key_values("novalue"));
  EXPECT_FALSE(parse_otel_key_values("=v"));
}

}  // namespace
}  // namespace lse::config
