// What validation checks beyond the file's own values: the interval floor
// (min_interval), stall thresholds that are no gap bucket boundary (a
// warning), secrets left unread (--no-env-check), and a listen address that
// cannot be resolved or bound (an error; already in use: a warning; only
// when LoadOptions::check_listen asks: check-config, never a reload).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "config/config.hpp"
#include "config/rules.hpp"
#include "test_support.hpp"

namespace lse::config {
namespace {

using namespace std::chrono_literals;

const std::string kPrompts = "prompts: {p: {text: hi}}\n";

std::string first_error(const std::string& yaml, const LoadOptions& options = {}) {
  try {
    parse(yaml, "f.yaml", "", options);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// --- min_interval ----------------------------------------------------------------

TEST(MinInterval, OneSecondByDefaultAndLoweredByTheKey) {
  const std::string target = "targets: [{name: a, url: 'http://h', model: m, interval: 200ms}]\n";
  EXPECT_EQ(first_error(kPrompts + target),
            "f.yaml:2:58: interval: 200ms is below min_interval (1s); raise it, or lower "
            "min_interval: if probing that often is intended");
  const Config c = parse("min_interval: 100ms\n" + kPrompts + target, "f.yaml", "");
  EXPECT_EQ(c.min_interval, 100ms);
  EXPECT_EQ(c.targets[0].interval, 200ms);
  // Exactly the floor is fine.
  EXPECT_EQ(
      first_error(kPrompts + "targets: [{name: a, url: 'http://h', model: m, interval: 1s}]\n"),
      "");
  EXPECT_EQ(Config{}.min_interval, 1s);
}

TEST(MinInterval, IsInTheDump) {
  const Config c = parse(
      "min_interval: 250ms\n" + kPrompts + "targets: [{name: a, url: 'http://h', model: m}]\n",
      "f.yaml", "");
  EXPECT_NE(dump_redacted(c).find("min_interval: 250ms"), std::string::npos) << dump_redacted(c);
}

// --- stall_threshold on a gap bucket boundary ---------------------------------------

TEST(StallThreshold, OffTheGapBoundsIsAWarningNamingTheNearestBounds) {
  test::set_test_env();
  const Config c = load_file(test::valid_dir() + "/full.yaml");
  // defaults.stall_threshold 300ms against buckets.gap [0.1, 0.25, 1]; the
  // target that sets 1s is on a bound and says nothing.
  ASSERT_EQ(c.findings.warnings.size(), 1u);
  const Diagnostic& w = c.findings.warnings[0];
  EXPECT_EQ(w.file, test::valid_dir() + "/full.yaml");
  EXPECT_EQ(w.line, 9);
  EXPECT_EQ(w.column, 20);
  EXPECT_EQ(w.message,
            "stall_threshold: 300ms is not a bucket boundary of buckets.gap (nearest boundaries: "
            "250ms below, 1s above), so the stalls counted and the gap histogram's buckets "
            "disagree");
}

TEST(StallThreshold, BuiltInThresholdOffOverriddenBucketsIsReportedOnceAtBucketsGap) {
  const Config c = parse(kPrompts +
                             "buckets:\n  gap: [0.1, 0.5]\n"
                             "targets:\n"
                             "  - {name: a, url: 'http://h', model: m}\n"
                             "  - {name: b, url: 'http://h', model: m}\n"
                             "  - {name: c, url: 'http://h', model: m, stall_threshold: 2s}\n",
                         "f.yaml", "");
  ASSERT_EQ(c.findings.warnings.size(), 2u);
  EXPECT_EQ(c.findings.warnings[0].line, 3);
  EXPECT_EQ(c.findings.warnings[0].message,
            "buckets.gap: the built-in stall_threshold 250ms is not a bucket boundary of "
            "buckets.gap (nearest boundaries: 100ms below, 500ms above), so the stalls counted "
            "and the gap histogram's buckets disagree");
  // Above every bound: only the bound below is named.
  EXPECT_EQ(c.findings.warnings[1].line, 7);
  EXPECT_NE(c.findings.warnings[1].message.find("(nearest boundaries: 500ms below)"),
            std::string::npos)
      << c.findings.warnings[1].message;
}

TEST(StallThreshold, OnABoundIsNoWarning) {
  const Config c =
      parse(kPrompts + "targets: [{name: a, url: 'http://h', model: m, stall_threshold: 150ms}]\n",
            "f.yaml", "");
  EXPECT_TRUE(c.findings.warnings.empty());
}

TEST(BucketPlace, OnABoundOrBetweenTheNearestTwo) {
  const std::vector<double> gap = Buckets{}.gap;
  EXPECT_TRUE(detail::bucket_place(gap, 250ms).on_bound);
  EXPECT_TRUE(detail::bucket_place(gap, 5ms).on_bound);  // 0.005 s, no float slop
  EXPECT_TRUE(detail::bucket_place(gap, 75ms).on_bound);
  const auto between = detail::bucket_place(gap, 260ms);
  EXPECT_FALSE(between.on_bound);
  EXPECT_EQ(between.below, 0.25);
  EXPECT_EQ(between.above, 0.3);
  const auto under = detail::bucket_place(gap, 1ms);
  EXPECT_FALSE(under.below);
  EXPECT_EQ(under.above, 0.005);
  const auto over = detail::bucket_place(gap, 11s);
  EXPECT_EQ(over.below, 10);
  EXPECT_FALSE(over.above);
}

// --- read_secrets off (--no-env-check) ---------------------------------------------

TEST(NotChecked, SecretsAreListedInsteadOfRead) {
  unsetenv("LSE_TEST_SURELY_UNSET_VARIABLE");
  const std::string yaml =
      kPrompts +
      "targets:\n"
      "  - name: a\n"
      "    url: https://h\n"
      "    model: m\n"
      "    auth: {bearer_token_env: LSE_TEST_SURELY_UNSET_VARIABLE}\n"
      "  - name: b\n"
      "    url: https://h\n"
      "    model: m\n"
      "    auth: {bearer_token_file: /run/no/such/secret}\n"
      "    tls: {cert_file: /run/no/client.crt, key_file: /run/no/client.key}\n";
  EXPECT_NE(
      first_error(yaml).find("environment variable LSE_TEST_SURELY_UNSET_VARIABLE is not set"),
      std::string::npos);
  LoadOptions no_env;
  no_env.read_secrets = false;
  const Config c = parse(yaml, "f.yaml", "", no_env);
  ASSERT_EQ(c.findings.not_checked.size(), 4u);
  EXPECT_EQ(c.findings.not_checked[0].where_and_what(),
            "f.yaml:6:30: auth.bearer_token_env: environment variable "
            "LSE_TEST_SURELY_UNSET_VARIABLE");
  EXPECT_EQ(c.findings.not_checked[1].where_and_what(),
            "f.yaml:10:31: auth.bearer_token_file: secret file '/run/no/such/secret'");
  EXPECT_EQ(c.findings.not_checked[2].message, "tls.cert_file: file '/run/no/client.crt'");
  EXPECT_EQ(c.findings.not_checked[3].message, "tls.key_file: file '/run/no/client.key'");
  EXPECT_EQ(c.targets[0].auth.kind, Auth::Kind::bearer);
  EXPECT_EQ(c.targets[0].auth.secret.value, "");
  EXPECT_EQ(c.targets[0].auth.secret.source, "env LSE_TEST_SURELY_UNSET_VARIABLE");
}

TEST(NotChecked, NamesAndEverythingElseAreStillChecked) {
  LoadOptions no_env;
  no_env.read_secrets = false;
  const std::string yaml =
      kPrompts +
      "targets:\n"
      "  - {name: a, url: 'https://h', model: m, auth: {bearer_token_env: 1X}}\n"
      "  - {name: b, url: 'https://h', model: m, tls: {ca_file: /no/ca.pem}}\n";
  try {
    parse(yaml, "f.yaml", "", no_env);
    FAIL();
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.errors().size(), 2u) << e.what();
    EXPECT_NE(
        e.errors()[0].message.find("auth.bearer_token_env: must name an environment variable"),
        std::string::npos);
    EXPECT_NE(e.errors()[1].message.find("/no/ca.pem' does not exist"), std::string::npos);
  }
}

// --- listen, tried for real ----------------------------------------------------------

// A socket listening on 127.0.0.1, port chosen by the kernel.
class HeldPort {
 public:
  HeldPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 1), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~HeldPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

std::string with_listen(const std::string& listen) {
  return "listen: \"" + listen + "\"\n" + kPrompts +
         "targets: [{name: a, url: 'http://h', model: m}]\n";
}

LoadOptions checking_listen() {
  LoadOptions o;
  o.check_listen = true;
  return o;
}

// Taken is what check-config finds beside the exporter running on this
// config: a warning, never an error.
TEST(ListenCheck, AddressInUseIsAWarningOnlyWhenAsked) {
  HeldPort held;
  const std::string listen = "127.0.0.1:" + std::to_string(held.port());
  EXPECT_EQ(first_error(with_listen(listen), checking_listen()), "");
  const Config c = parse(with_listen(listen), "f.yaml", "", checking_listen());
  ASSERT_EQ(c.findings.warnings.size(), 1u);
  const Diagnostic& w = c.findings.warnings[0];
  EXPECT_EQ(w.line, 1);
  EXPECT_EQ(w.column, 9);
  EXPECT_EQ(w.message, "listen: cannot bind " + listen +
                           ": Address already in use (is the exporter already running? serve "
                           "cannot start beside it)");
  // A reload (no check_listen) does not try the port its own server holds.
  EXPECT_TRUE(parse(with_listen(listen), "f.yaml", "", {}).findings.warnings.empty());
}

TEST(ListenCheck, AFreePortAndPortZeroBind) {
  EXPECT_EQ(first_error(with_listen("127.0.0.1:0"), checking_listen()), "");
  EXPECT_EQ(first_error(with_listen("localhost:0"), checking_listen()), "");
  EXPECT_EQ(first_error(with_listen(":0"), checking_listen()), "");
}

TEST(ListenCheck, UnresolvableOrForeignAddressIsAnError) {
  EXPECT_NE(first_error(with_listen("no-such-host.invalid:9687"), checking_listen())
                .find("f.yaml:1:9: listen: cannot resolve 'no-such-host.invalid': "),
            std::string::npos);
  // TEST-NET-1 is never an address of this machine.
  EXPECT_EQ(first_error(with_listen("192.0.2.1:0"), checking_listen()),
            "f.yaml:1:9: listen: cannot bind 192.0.2.1:0: Cannot assign requested address");
}

TEST(ListenCheck, AnyInterfaceTakenIsAWarning) {
  HeldPort held;  // 127.0.0.1:P: the dual-stack any address on P cannot be bound
  const Config c =
      parse(with_listen(":" + std::to_string(held.port())), "f.yaml", "", checking_listen());
  ASSERT_EQ(c.findings.warnings.size(), 1u);
  EXPECT_NE(c.findings.warnings[0].message.find("Address already in use"), std::string::npos);
}

}  // namespace
}  // namespace lse::config

namespace lse::config {
namespace {

// config_fuzz (one-hour run): a target's `timeout:` given twice, the second
// time without total, first_token or idle. The first already failed; the
// second's check then blamed `total` in a scope that does not set it and read
// a missing key (check-config aborted with bad_alloc). Now every error is
// told, the last at the second `timeout:`.
TEST(Findings, TimeoutGivenTwiceIsReportedNotACrash) {
  const std::string yaml = kPrompts +
                           "targets:\n"
                           "  - name: t\n"
                           "    url: http://localhost:8000/v1\n"
                           "    model: m\n"
                           "    timeout: {total: 5s}\n"
                           "    timeout: {}\n";
  try {
    parse(yaml, "f.yaml", "", {});
    FAIL() << "loaded without error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("f.yaml:6:22: timeout.total: 5s must not be shorter than "
                        "timeout.first_token (30s)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("f.yaml:7:5: duplicate key 'timeout'"), std::string::npos) << what;
    EXPECT_NE(what.find("f.yaml:7:14: timeout: first_token (30s) exceeds total (5s), both set "
                        "elsewhere"),
              std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace lse::config
