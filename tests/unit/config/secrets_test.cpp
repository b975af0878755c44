// secret_values: every credential a target sends upstream, resolved (what an
// upstream echoes of them is masked); and auth errors that say what is wrong
// without echoing a value that may be the secret itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "test_support.hpp"
#include "util/redact.hpp"

namespace lse::config {
namespace {

const std::string kPrompts = "prompts: {p: {text: hi}}\n";

std::string first_error(const std::string& yaml) {
  try {
    parse(yaml, "f.yaml", "");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

TEST(SecretValues, CollectEveryCredentialATargetSends) {
  test::set_test_env();
  const Config c = parse(kPrompts +
                             "targets:\n"
                             "  - name: a\n"
                             "    url: 'https://h/v1?api-version=2024-02-01&key=q-key-123456'\n"
                             "    model: m\n"
                             "    auth: {bearer_token_env: LSE_TEST_SECRET}\n"
                             "    headers: {X-Team: probes, X-Api-Key: hdr-key-abcdef, "
                             "Proxy-Authorization: 'Basic dXNlcjpwYXNz'}\n"
                             "    body: {client: {api_key: body-key-998877}, note: plain-text}\n"
                             "  - name: b\n"
                             "    url: 'https://h/v1'\n"
                             "    model: m\n"
                             "    auth: {bearer_token_env: LSE_TEST_SECRET}\n",
                         "f.yaml", "");
  const std::vector<std::string> a = secret_values(c.targets[0]);
  EXPECT_TRUE(has(a, test::kEnvSecret));
  EXPECT_TRUE(has(a, "hdr-key-abcdef"));
  // A scheme's credential is sent whole and may be echoed alone.
  EXPECT_TRUE(has(a, "Basic dXNlcjpwYXNz"));
  EXPECT_TRUE(has(a, "dXNlcjpwYXNz"));
  EXPECT_TRUE(has(a, "q-key-123456"));
  EXPECT_TRUE(has(a, "body-key-998877"));
  // Not credentials: a plain header, api-version, a body value under a plain key.
  EXPECT_FALSE(has(a, "probes"));
  EXPECT_FALSE(has(a, "2024-02-01"));
  EXPECT_FALSE(has(a, "plain-text"));
  EXPECT_EQ(a.size(), 6u);

  EXPECT_EQ(secret_values(c.targets[1]), std::vector<std::string>{test::kEnvSecret});
  // The config's list holds each value once.
  const std::vector<std::string> all = secret_values(c);
  EXPECT_EQ(all.size(), a.size());
  EXPECT_EQ(std::count(all.begin(), all.end(), test::kEnvSecret), 1);
}

TEST(SecretValues, AnAuthorizationHeadersTokenIsListedWithoutItsScheme) {
  Target t;
  t.headers = {{"Authorization", "Bearer sk-inline-0123456789"}, {"Cookie", "session=abcdef12"}};
  EXPECT_EQ(secret_values(t),
            (std::vector<std::string>{"Bearer sk-inline-0123456789", "sk-inline-0123456789",
                                      "session=abcdef12"}));
  EXPECT_TRUE(secret_values(Target{}).empty());  // nothing read: nothing to mask
}

// --- headers: values from env or file ------------------------------------------------

std::string header_target(const std::string& headers) {
  return kPrompts + "targets:\n  - name: t\n    url: 'http://127.0.0.1:18799'\n    model: m\n" +
         "    headers: " + headers + "\n";
}

TEST(SecretHeaders, AValueFromEnvOrFileIsReadAtLoadAndIsASecretWhateverItsName) {
  test::set_test_env();
  const std::string file = ::testing::TempDir() + "/header-secret";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("file-header-secret-31f0\n", f);
    std::fclose(f);
  }
  const Config c = parse(
      header_target("{x-portkey-api-key: {env: LSE_TEST_SECRET}, X-Plain-Name: {file: " + file +
                    "}, x-portkey-provider: openai}"),
      "f.yaml", "");
  const Target& t = c.targets[0];
  using H = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(t.headers, (H{{"x-portkey-api-key", test::kEnvSecret},
                          {"X-Plain-Name", "file-header-secret-31f0"},
                          {"x-portkey-provider", "openai"}}));
  EXPECT_TRUE(is_secret_header(t, "X-PLAIN-NAME"));  // loaded: secret whatever the name
  EXPECT_FALSE(is_secret_header(t, "x-portkey-provider"));
  const std::vector<std::string> values = secret_values(t);
  EXPECT_TRUE(has(values, test::kEnvSecret));
  EXPECT_TRUE(has(values, "file-header-secret-31f0"));
  EXPECT_FALSE(has(values, "openai"));
  const std::string dump = dump_redacted(c);
  EXPECT_EQ(dump.find("file-header-secret-31f0"), std::string::npos) << dump;
  EXPECT_EQ(dump.find(test::kEnvSecret), std::string::npos) << dump;
  EXPECT_NE(dump.find("x-portkey-provider: openai"), std::string::npos) << dump;
  EXPECT_NE(dump.find("X-Plain-Name: <secret>"), std::string::npos) << dump;
}

TEST(SecretHeaders, AMissingVariableOrFileIsAnErrorAtItsPlace) {
  test::set_test_env();
  EXPECT_EQ(first_error(header_target("{X-Key-Two: {env: LSE_TEST_SURELY_UNSET_VARIABLE}}")),
            "f.yaml:6:32: headers.X-Key-Two.env: environment variable "
            "LSE_TEST_SURELY_UNSET_VARIABLE is not set");
  const std::string missing = first_error(header_target("{X-Key-Two: {file: /nonexistent/k}}"));
  EXPECT_EQ(missing.rfind("f.yaml:6:33: headers.X-Key-Two.file: ", 0), 0u) << missing;
  const std::string both =
      first_error(header_target("{X-Key-Two: {env: LSE_TEST_SECRET, file: /nonexistent/k}}"));
  EXPECT_EQ(both.rfind("f.yaml:6:", 0), 0u) << both;
  EXPECT_NE(both.find("exactly one of env or file"), std::string::npos) << both;
}

TEST(SecretHeaders, ATargetsPlainValueReplacesADefaultsSecretOne) {
  test::set_test_env();
  const Config c =
      parse(kPrompts +
                "defaults: {headers: {X-Shared: {env: LSE_TEST_SECRET}}}\n"
                "targets:\n"
                "  - {name: a, url: 'http://h', model: m}\n"
                "  - {name: b, url: 'http://h', model: m, headers: {x-shared: plain}}\n",
            "f.yaml", "");
  EXPECT_TRUE(is_secret_header(c.targets[0], "X-Shared"));
  EXPECT_FALSE(is_secret_header(c.targets[1], "X-Shared"));
}

// A gateway's routing headers are no credentials: their values (a host:port
// among them) are not masked in what an upstream or the client writes.
TEST(SecretValues, APortkeyRoutingHeaderLeavesHostAndPortInErrors) {
  const Config c = parse(header_target("{x-portkey-provider: openai, x-portkey-custom-host: "
                                       "'http://127.0.0.1:18799/v1', x-portkey-api-key: "
                                       "pk-literal-6e21a0c4}"),
                         "f.yaml", "");
  const std::vector<std::string> values = secret_values(c.targets[0]);
  EXPECT_EQ(values, std::vector<std::string>{"pk-literal-6e21a0c4"});
  const util::Redactor redactor(values);
  EXPECT_EQ(redactor.mask("connect 127.0.0.1:18799: Connection refused"),
            "connect 127.0.0.1:18799: Connection refused");
  EXPECT_EQ(redactor.mask("invalid key pk-literal-6e21a0c4"), "invalid key <redacted>");
}

// --- auth errors never echo what may be the token ---------------------------------

TEST(AuthErrors, ATokenInBearerTokenEnvIsNotEchoed) {
  const std::string token = "sk-proj-AbC0123456789xyz";
  const std::string e = first_error(
      kPrompts +
      "targets: [{name: t, url: 'http://h', model: m, auth: {bearer_token_env: " + token + "}}]\n");
  EXPECT_EQ(e,
            "f.yaml:2:73: auth.bearer_token_env: must name an environment variable (letters, "
            "digits and _, not starting with a digit), not hold the token itself");
}

TEST(AuthErrors, ANameThatLooksLikeATokenIsLeftOutOfNotSet) {
  const std::string token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
  unsetenv(token.c_str());
  const std::string e = first_error(
      kPrompts +
      "targets: [{name: t, url: 'http://h', model: m, auth: {bearer_token_env: " + token + "}}]\n");
  EXPECT_EQ(e.find(token), std::string::npos) << e;
  EXPECT_NE(e.find("auth.bearer_token_env: the environment variable it names"), std::string::npos)
      << e;
  EXPECT_NE(e.find("is not set"), std::string::npos) << e;
  // A conventional name is still named: it helps and is no secret.
  unsetenv("LSE_TEST_SURELY_UNSET_VARIABLE");
  EXPECT_NE(first_error(kPrompts +
                        "targets: [{name: t, url: 'http://h', model: m, auth: {bearer_token_env: "
                        "LSE_TEST_SURELY_UNSET_VARIABLE}}]\n")
                .find("environment variable LSE_TEST_SURELY_UNSET_VARIABLE is not set"),
            std::string::npos);
}

TEST(AuthErrors, ATokenInAuthOrAuthHeaderIsNotEchoed) {
  const std::string token = "sk-live-0123456789abcdef";
  const std::string as_auth = first_error(
      kPrompts + "targets: [{name: t, url: 'http://h', model: m, auth: " + token + "}]\n");
  EXPECT_EQ(as_auth,
            "f.yaml:2:54: auth: expected a mapping (bearer_token_file, bearer_token_env, or header "
            "with file or env), not a value: the key goes in a file or an environment variable");
  test::set_test_env();
  const std::string as_header = first_error(
      kPrompts + "targets: [{name: t, url: 'http://h', model: m, auth: {header: 'Bearer " + token +
      "', env: LSE_TEST_SECRET}}]\n");
  EXPECT_EQ(as_header.find(token), std::string::npos) << as_header;
  EXPECT_NE(as_header.find("f.yaml:2:63: auth.header: must be a header name"), std::string::npos)
      << as_header;
}

}  // namespace
}  // namespace lse::config
