// One test per file in tests/data/config/invalid/: each file's first line is
// "# expect: <line>:<col>: <message substring>", and loading it must fail with
// exactly that place and a message containing that text, and with that error
// only (each file is one mistake: a second error would be a cascade).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "test_support.hpp"

namespace lse::config {
namespace {

std::vector<std::string> invalid_cases() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(test::invalid_dir())) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct Expectation {
  std::string place;    // "line:col"
  std::string message;  // substring of the message
};

Expectation read_expectation(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const std::string prefix = "# expect: ";
  EXPECT_EQ(line.rfind(prefix, 0), 0u) << path << " must start with '" << prefix << "'";
  std::string rest = line.substr(std::min(prefix.size(), line.size()));
  auto second_colon = rest.find(':', rest.find(':') + 1);
  EXPECT_NE(second_colon, std::string::npos) << path << ": expect line needs line:col: message";
  return {rest.substr(0, second_colon), rest.substr(std::min(second_colon + 2, rest.size()))};
}

class InvalidConfig : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { test::set_test_env(); }
};

TEST_P(InvalidConfig, FailsAtTheExpectedPlace) {
  const std::string path = test::invalid_dir() + "/" + GetParam() + ".yaml";
  const Expectation expect = read_expectation(path);
  try {
    load_file(path);
    FAIL() << path << " loaded without error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(path + ":" + expect.place + ": ", 0), 0u)
        << "what(): " << what << "\nexpected place: " << expect.place;
    EXPECT_NE(what.find(expect.message), std::string::npos)
        << "what(): " << what << "\nexpected message part: " << expect.message;
    // One error, and what() is exactly "file:line:col: message".
    EXPECT_EQ(e.errors().size(), 1u) << "what(): " << what;
    EXPECT_EQ(what, path + ":" + std::to_string(e.line()) + ":" + std::to_string(e.column()) +
                        ": " + e.message());
    // No secret of the test environment or the test files may leak.
    for (const char* secret : {test::kEnvSecret, "sk-invalid-dir-token", "hunter2", "line-one"}) {
      EXPECT_EQ(what.find(secret), std::string::npos) << "secret leaked: " << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, InvalidConfig, ::testing::ValuesIn(invalid_cases()),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(InvalidConfigFiles, CoverEnoughCases) { EXPECT_GE(invalid_cases().size(), 25u); }

}  // namespace
}  // namespace lse::config
