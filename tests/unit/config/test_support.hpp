// Shared bits of the config tests: where the test data lives and the
// environment the secret-reading cases rely on.
#pragma once
#include <cstdlib>
#include <string>

namespace lse::config::test {

inline std::string data_dir() { return std::string(LSE_TEST_DATA) + "/config"; }
inline std::string valid_dir() { return data_dir() + "/valid"; }
inline std::string invalid_dir() { return data_dir() + "/invalid"; }
// The repository's config/ folder (example.yaml, shipped prompts).
inline std::string repo_config_dir() { return std::string(LSE_TEST_DATA) + "/../../config"; }

constexpr const char* kEnvSecret = "env-secret-9b1e44";

// LSE_TEST_SECRET holds a secret, LSE_TEST_EMPTY_SECRET is set but empty,
// LSE_TEST_SURELY_UNSET_VARIABLE is unset (invalid/auth-env-*.yaml).
inline void set_test_env() {
  setenv("LSE_TEST_SECRET", kEnvSecret, 1);
  setenv("LSE_TEST_EMPTY_SECRET", "", 1);
  unsetenv("LSE_TEST_SURELY_UNSET_VARIABLE");
  setenv("OPENAI_API_KEY", "sk-example-0000", 1);
}

}  // namespace lse::config::test
