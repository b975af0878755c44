// The reload transaction of service::Service: a bad file keeps the running
// config and flips the reload gauge to 0; a good one swaps and records the
// time; a part that fails late rolls back the parts already switched. The
// service listens on 127.0.0.1:0 and probes a closed port, so no test needs
// a fixed port or a real upstream.
#include "service/service.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>
#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <string>

#include "../metrics/exposition.hpp"
#include "util/wall_clock.hpp"

namespace lse::service {
namespace {

namespace fs = std::filesystem;
using lse::testing::count_samples;
using lse::testing::parse_exposition;
using lse::testing::value_of;

constexpr const char* kReloadOk = "llm_stream_exporter_config_last_reload_successful";
constexpr const char* kReloadTime =
    "llm_stream_exporter_config_last_reload_success_timestamp_seconds";

std::string target_yaml(const std::string& name, const std::string& extra = "") {
  return "  - name: " + name + "\n    url: http://127.0.0.1:1/v1\n    model: m\n" +
         "    prompts: [short]\n" + extra;
}

std::string config_yaml(const std::string& targets, const std::string& top = "") {
  return "listen: \"127.0.0.1:0\"\n"
         "defaults: {interval: 60s, jitter: 0, warmup: 0}\n"
         "prompts:\n  short: {text: \"hi\"}\n" +
         top + "targets:\n" + targets;
}

class ServiceReload : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lse-service-test-XXXXXX";
    const char* made = mkdtemp(tmpl);
    ASSERT_NE(made, nullptr) << "mkdtemp: " << std::strerror(errno);
    dir = made;
    path = dir / "config.yaml";
    write(config_yaml(target_yaml("alpha")));
    svc = std::make_unique<Service>(path, Identity{"test-host", "test-agent", {"1", "r"}}, 1);
    svc->start();
  }
  void TearDown() override {
    svc.reset();
    fs::remove_all(dir);
  }
  void write(const std::string& text) { std::ofstream(path) << text; }
  testing::Exposition scrape() { return parse_exposition(svc->scrape()); }
  bool has_target(const std::string& name) {
    return value_of(scrape(), "llm_stream_stall_threshold_seconds", {{"target", name}}).has_value();
  }

  fs::path dir, path;
  std::unique_ptr<Service> svc;
};

TEST_F(ServiceReload, ListensOnAFreePortAndStartsSuccessful) {
  EXPECT_NE(svc->port(), 0);
  EXPECT_EQ(value_of(scrape(), kReloadOk, {}), 1.0);
  EXPECT_EQ(value_of(scrape(), "llm_stream_row_write_errors_total", {}), 0.0);
  EXPECT_TRUE(has_target("alpha"));
}

TEST_F(ServiceReload, BadFileKeepsTheRunningConfigAndFlipsTheGauge) {
  const double started = *value_of(scrape(), kReloadTime, {});
  write("targets: [ {name: broken\n");
  auto r = svc->reload();
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("config.yaml"), std::string::npos) << r.message;
  EXPECT_EQ(value_of(scrape(), kReloadOk, {}), 0.0);
  EXPECT_EQ(value_of(scrape(), kReloadTime, {}), started);  // the last *success*
  ASSERT_EQ(svc->config()->targets.size(), 1u);
  EXPECT_EQ(svc->config()->targets[0].name, "alpha");
  EXPECT_TRUE(has_target("alpha"));
}

TEST_F(ServiceReload, GoodFileSwapsAndRecordsTheTime) {
  write("targets: [ {name: broken\n");
  ASSERT_FALSE(svc->reload().ok);
  write(config_yaml(target_yaml("alpha") + target_yaml("beta")));
  const double before = wall_clock::unix_now();
  auto r = svc->reload();
  ASSERT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.message, "config reloaded");
  EXPECT_EQ(value_of(scrape(), kReloadOk, {}), 1.0);
  EXPECT_GE(*value_of(scrape(), kReloadTime, {}), before);
  EXPECT_EQ(svc->config()->targets.size(), 2u);
  EXPECT_TRUE(has_target("beta"));
  EXPECT_EQ(count_samples(scrape(), "llm_stream_diagnosis"), 10u);  // 2 series x 5 shapes
}

TEST_F(ServiceReload, RowsPathThatCannotBeOpenedChangesNothing) {
  std::ofstream(dir / "plain-file") << "x";
  write(config_yaml(
      target_yaml("alpha") + target_yaml("beta"),
      "rows: {path: \"" + (dir / "plain-file" / "rows.jsonl").string() + "\", ring: 7}\n"));
  auto r = svc->reload();
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("rows.jsonl"), std::string::npos) << r.message;
  EXPECT_EQ(value_of(scrape(), kReloadOk, {}), 0.0);
  EXPECT_FALSE(has_target("beta"));
  EXPECT_EQ(svc->rows().capacity(), 1000u);
  EXPECT_EQ(svc->config()->targets.size(), 1u);
}

TEST_F(ServiceReload, SchedulerFailureRollsBackRowsAndMetrics) {
  // ca_file exists (config validation passes) but is no certificate: only
  // the scheduler, the last step, fails, when it builds beta's TLS context.
  std::ofstream(dir / "ca.pem") << "not a certificate\n";
  const std::string beta =
      "  - name: beta\n    url: https://127.0.0.1:1/v1\n    model: m\n"
      "    prompts: [short]\n    tls: {ca_file: \"" +
      (dir / "ca.pem").string() + "\"}\n";
  write(config_yaml(target_yaml("alpha") + beta, "rows: {ring: 7}\n"));
  auto r = svc->reload();
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("ca_file"), std::string::npos) << r.message;
  EXPECT_EQ(value_of(scrape(), kReloadOk, {}), 0.0);
  EXPECT_FALSE(has_target("beta"));              // metrics rolled back
  EXPECT_EQ(svc->rows().capacity(), 1000u);      // rows rolled back
  EXPECT_EQ(svc->config()->targets.size(), 1u);  // snapshot kept
  EXPECT_TRUE(has_target("alpha"));
}

}  // namespace
}  // namespace lse::service
