// The reload transaction of service::Service: a bad file keeps the running
// config and flips the reload gauge to 0; a good one swaps and records the
// time; a part that fails late rolls back the parts already switched. The
// service listens on 127.0.0.1:0 and probes a closed port, so no test needs
// a fixed port or a real upstream. A reload moves the listener when
// `listen:` changes, applies `web:` limits, and counts itself by result.
#include "service/service.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <utility>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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
constexpr const char* kReloads = "llm_stream_exporter_config_reloads_total";

// A TCP socket on 127.0.0.1: listening on a free port (the port is taken
// while it lives), or connected to `port`.
class Socket {
 public:
  static Socket listening() {
    Socket s;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(s.fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(s.fd_, 1) != 0 ||
        ::getsockname(s.fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      ADD_FAILURE() << "listen: " << std::strerror(errno);
    s.port_ = ntohs(a.sin_port);
    return s;
  }
  // nullopt when the connection is refused.
  static std::optional<Socket> connected(unsigned short port) {
    Socket s;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::connect(s.fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return std::nullopt;
    return s;
  }
  Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)), port_(o.port_) {}
  Socket& operator=(Socket&&) = delete;
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  unsigned short port() const { return port_; }
  // True when the peer closes within `wait` (having sent nothing).
  bool closed_within(std::chrono::milliseconds wait) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) != 1) return false;
    char c = 0;
    return ::recv(fd_, &c, 1, 0) <= 0;
  }

 private:
  Socket() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {}
  int fd_;
  unsigned short port_ = 0;
};

std::string target_yaml(const std::string& name, const std::string& extra = "") {
  return "  - name: " + name + "\n    url: http://127.0.0.1:1/v1\n    model: m\n" +
         "    prompts: [short]\n" + extra;
}

std::string config_yaml(const std::string& targets, const std::string& top = "",
                        const std::string& listen = "127.0.0.1:0") {
  return "listen: \"" + listen + "\"\n" +
         "defaults: {interval: 60s, jitter: 0, warmup: 0}\n"
         "prompts:\n  short: {text: \"hi\"}\n" +
         top + "targets:\n" + targets;
}

// Every test runs with one probe thread and with three (targets bound to
// lanes: a reload is one transaction over every lane).
class ServiceReload : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lse-service-test-XXXXXX";
    const char* made = mkdtemp(tmpl);
    ASSERT_NE(made, nullptr) << "mkdtemp: " << std::strerror(errno);
    dir = made;
    path = dir / "config.yaml";
    write(config_yaml(target_yaml("alpha")));
    ProbeOptions probe;
    probe.threads = GetParam();
    svc = std::make_unique<Service>(path, Identity{"test-host", "test-agent", {"1", "r"}}, 1,
                                    HttpOptions{}, probe);
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

TEST_P(ServiceReload, ListensOnAFreePortAndStartsSuccessful) {
  EXPECT_NE(svc->port(), 0);
  EXPECT_EQ(value_of(scrape(), kReloadOk, {}), 1.0);
  EXPECT_EQ(value_of(scrape(), "llm_stream_row_write_errors_total", {}), 0.0);
  EXPECT_TRUE(has_target("alpha"));
}

TEST_P(ServiceReload, BadFileKeepsTheRunningConfigAndFlipsTheGauge) {
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

TEST_P(ServiceReload, GoodFileSwapsAndRecordsTheTime) {
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

TEST_P(ServiceReload, RowsPathThatCannotBeOpenedChangesNothing) {
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

TEST_P(ServiceReload, SchedulerFailureRollsBackRowsAndMetrics) {
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

// Every target is probed, each by the one lane it is bound to: seven targets
// on a closed port (connect refused at once) every second, each counted as
// a failure within a few seconds; a reload that replaces most of them moves
// the probing to the new set on every lane.
TEST_P(ServiceReload, EveryTargetIsProbedWhateverItsLane) {
  const std::vector<std::string> first = {"a", "b", "c", "d", "e", "f", "g"};
  const std::vector<std::string> second = {"a", "h", "i"};
  auto write_targets = [&](const std::vector<std::string>& names) {
    std::string t;
    for (const auto& n : names) t += target_yaml(n);
    write(std::string("listen: \"127.0.0.1:0\"\n") +
          "defaults: {interval: 1s, jitter: 0, warmup: 0}\n"
          "prompts:\n  short: {text: \"hi\"}\ntargets:\n" +
          t);
  };
  auto failures = [&](const std::string& name) {
    return value_of(scrape(), "llm_stream_probes_total",
                    {{"target", name}, {"model", "m"}, {"prompt", "short"}, {"result", "failure"}})
        .value_or(-1);
  };
  auto all_probed = [&](const std::vector<std::string>& names, double at_least) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(8);
    for (;;) {
      bool all = true;
      for (const auto& n : names) all = all && failures(n) >= at_least;
      if (all || std::chrono::steady_clock::now() > limit) return all;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
  write_targets(first);
  ASSERT_TRUE(svc->reload().ok);
  EXPECT_TRUE(all_probed(first, 1));
  write_targets(second);
  ASSERT_TRUE(svc->reload().ok);
  EXPECT_FALSE(has_target("b"));
  EXPECT_TRUE(all_probed(second, 1));
  // "a" was kept: its loop went on where it ran, its count did not restart.
  EXPECT_TRUE(all_probed({"a"}, 2));
}

INSTANTIATE_TEST_SUITE_P(ProbeThreads, ServiceReload, ::testing::Values(1, 3),
                         [](const auto& info) { return std::to_string(info.param) + "_threads"; });

}  // namespace
}  // namespace lse::service

namespace lse::service {
namespace {

TEST_P(ServiceReload, ReloadsAreCountedByResult) {
  // The startup load is not a reload.
  EXPECT_EQ(value_of(scrape(), kReloads, {{"result", "success"}}), 0.0);
  EXPECT_EQ(value_of(scrape(), kReloads, {{"result", "failure"}}), 0.0);
  write("targets: [ {name: broken\n");
  EXPECT_FALSE(svc->reload().ok);
  write(config_yaml(target_yaml("alpha") + target_yaml("beta")));
  EXPECT_TRUE(svc->reload().ok);
  EXPECT_TRUE(svc->reload().ok);
  EXPECT_EQ(value_of(scrape(), kReloads, {{"result", "success"}}), 2.0);
  EXPECT_EQ(value_of(scrape(), kReloads, {{"result", "failure"}}), 1.0);
}

// A changed listen: moves the listener: the new address answers, the old
// one stops accepting, the config and listen_address() say the new one.
TEST_P(ServiceReload, AChangedListenMovesTheListener) {
  const unsigned short old_port = svc->port();
  unsigned short new_port = 0;
  {
    const Socket probe = Socket::listening();
    new_port = probe.port();
  }  // free again
  const std::string to = "127.0.0.1:" + std::to_string(new_port);
  write(config_yaml(target_yaml("alpha"), "", to));
  auto r = svc->reload();
  ASSERT_TRUE(r.ok) << r.message;
  EXPECT_EQ(svc->port(), new_port);
  EXPECT_EQ(svc->listen_address(), to);
  EXPECT_EQ(svc->config()->listen, to);
  EXPECT_TRUE(Socket::connected(new_port).has_value());
  bool old_refused = false;
  for (int i = 0; i < 100 && !old_refused; ++i) {
    old_refused = !Socket::connected(old_port).has_value();
    if (!old_refused) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(old_refused);
  EXPECT_EQ(value_of(scrape(), kReloads, {{"result", "success"}}), 1.0);
}

// A new address that cannot be bound fails the reload whole: the other
// parts roll back, the listener stays, the failure is counted and said.
TEST_P(ServiceReload, AListenAddressInUseRefusesTheReloadWhole) {
  const unsigned short port = svc->port();
  const Socket taken = Socket::listening();
  const std::string to = "127.0.0.1:" + std::to_string(taken.port());
  write(config_yaml(target_yaml("alpha") + target_yaml("beta"), "", to));
  auto r = svc->reload();
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("listen: cannot move from 127.0.0.1:0 to " + to), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("still listening on 127.0.0.1:0"), std::string::npos) << r.message;
  EXPECT_EQ(value_of(scrape(), kReloadOk, {}), 0.0);
  EXPECT_EQ(value_of(scrape(), kReloads, {{"result", "failure"}}), 1.0);
  EXPECT_FALSE(has_target("beta"));
  EXPECT_EQ(svc->config()->listen, "127.0.0.1:0");
  EXPECT_EQ(svc->listen_address(), "127.0.0.1:0");
  EXPECT_EQ(svc->port(), port);
  EXPECT_TRUE(Socket::connected(port).has_value());
}

// web: limits apply on reload: a shorter header deadline closes a silent
// connection made after it.
TEST_P(ServiceReload, WebLimitsApplyOnReload) {
  write(config_yaml(target_yaml("alpha"), "web: {header_timeout: 200ms}\n"));
  auto r = svc->reload();
  ASSERT_TRUE(r.ok) << r.message;
  EXPECT_EQ(svc->config()->web.header_timeout, std::chrono::milliseconds(200));
  // The server applies them on its own thread; a connection made a moment
  // later is under them.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto silent = Socket::connected(svc->port());
  ASSERT_TRUE(silent.has_value());
  EXPECT_TRUE(silent->closed_within(std::chrono::seconds(3)));
}

}  // namespace
}  // namespace lse::service

namespace lse::service {
namespace {

// GET `path` on 127.0.0.1:port with Connection: close; the whole answer.
std::string http_get(unsigned short port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      pollfd p{fd, POLLIN, 0};
      while (::poll(&p, 1, 5000) == 1) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        answer.append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  ::close(fd);
  return answer;
}

// metrics.max_scrape_bytes: a scrape whose exposition would pass it is
// refused whole (500 with the reason, no partial exposition); a reload that
// raises it serves the exposition again.
TEST_P(ServiceReload, AScrapeAboveMaxScrapeBytesIsRefusedWithTheReason) {
  const std::size_t whole = svc->scrape().size();
  ASSERT_GT(whole, 8192u);  // one target's exposition is larger than the cap below
  write(config_yaml(target_yaml("alpha"), "metrics:\n  max_scrape_bytes: 8KiB\n"));
  ASSERT_TRUE(svc->reload().ok);
  try {
    svc->scrape();
    ADD_FAILURE() << "the scrape passed the cap";
  } catch (const std::runtime_error& e) {
    const std::string why = e.what();
    EXPECT_NE(why.find("metrics.max_scrape_bytes (8192 bytes) after "), std::string::npos) << why;
  }
  const std::string answer = http_get(svc->port(), "/metrics");
  EXPECT_EQ(answer.rfind("HTTP/1.1 500 ", 0), 0u) << answer.substr(0, 200);
  EXPECT_NE(answer.find("\r\n\r\nscrape refused: the exposition passed metrics.max_scrape_bytes"),
            std::string::npos)
      << answer.substr(0, 400);
  EXPECT_EQ(answer.find("llm_stream_"), std::string::npos);  // nothing of the exposition

  write(config_yaml(target_yaml("alpha"),
                    "metrics:\n  max_scrape_bytes: " + std::to_string(whole + 4096) + "\n"));
  ASSERT_TRUE(svc->reload().ok);
  EXPECT_EQ(value_of(scrape(), kReloadOk, {}), 1.0);
  EXPECT_EQ(http_get(svc->port(), "/metrics").rfind("HTTP/1.1 200 ", 0), 0u);
}

}  // namespace
}  // namespace lse::service

namespace lse::service {
namespace {

// GET /probe?target= through the whole service, on whichever lane the
// target is bound to: the probe of a closed port fails `connect` and says
// so, and the schedule's counters and rows do not see it.
TEST_P(ServiceReload, OnDemandProbeAnswersAndLeavesTheScheduleAlone) {
  const std::map<std::string, std::string> alpha = {
      {"target", "alpha"}, {"model", "m"}, {"prompt", "short"}, {"result", "failure"}};
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  while (value_of(scrape(), "llm_stream_probes_total", alpha).value_or(0) < 1 &&
         std::chrono::steady_clock::now() < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double scheduled = value_of(scrape(), "llm_stream_probes_total", alpha).value_or(-1);
  ASSERT_EQ(scheduled, 1);
  const std::size_t rows = svc->rows().latest("alpha", 100).size();

  const std::string answer = http_get(svc->port(), "/probe?target=alpha");
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find("\nprobe_success 0\n"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\nprobe_failure_reason{reason=\"connect\"} 1\n"), std::string::npos)
      << answer;
  EXPECT_NE(answer.find("probe_info{target=\"alpha\",prompt=\"short\",model=\"m\""),
            std::string::npos)
      << answer;

  const std::string unknown = http_get(svc->port(), "/probe?target=beta");
  EXPECT_EQ(unknown.rfind("HTTP/1.1 400", 0), 0u) << unknown;

  EXPECT_EQ(value_of(scrape(), "llm_stream_probes_total", alpha).value_or(-1), scheduled);
  EXPECT_EQ(svc->rows().latest("alpha", 100).size(), rows);
}

}  // namespace
}  // namespace lse::service
