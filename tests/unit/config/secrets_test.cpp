// secret_values: every credential a target sends upstream, resolved (what an
// upstream echoes of them is masked); and auth errors that say what is wrong
// without echoing a value that may be the secret itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "test_support.hpp"

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
