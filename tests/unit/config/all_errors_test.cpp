// A file with many mistakes reports every one of them, each at its place and
// in file order, without cascades (a prompt that failed still counts as
// defined, a misspelt key is not also "missing"); a YAML syntax error stops
// at itself.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.hpp"
#include "test_support.hpp"

namespace lse::config {
namespace {

struct Expected {
  int line, column;
  std::string message_part;
};

std::string several_errors_path() { return test::data_dir() + "/multi/several-errors.yaml"; }

TEST(AllErrors, EveryMistakeOfTheFileInFileOrder) {
  const std::vector<Expected> expected = {
      {1, 9, "listen port must be 0..65535, got '70000'"},
      {4, 13, "interval: 1s is below min_interval (2s)"},
      {5, 11, "jitter: must be between 0 and 0.5, got 2"},
      {8, 18, "prompts.broken.text: prompt text is empty"},
      {11, 10, "url must start with http:// or https://, got 'ftp://h'"},
      {13, 17, "max_tokens: must be >= 1, got 0"},
      {17, 5, "unknown key 'modle' in targets[1], did you mean 'model'?"},
      {18, 11, "name: duplicate target name 'a' (first defined on line 10)"},
      {21, 28, "timeout.first_token: must be > 0, got 0s"},
      {22, 1, "unknown key 'bukets', did you mean 'buckets'?"},
  };
  try {
    load_file(several_errors_path());
    FAIL() << "loaded without error";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.errors().size(), expected.size()) << e.what();
    std::string lines;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const Diagnostic& d = e.errors()[i];
      EXPECT_EQ(d.file, several_errors_path());
      EXPECT_EQ(d.line, expected[i].line) << "error " << i << ": " << d.where_and_what();
      EXPECT_EQ(d.column, expected[i].column) << "error " << i << ": " << d.where_and_what();
      EXPECT_NE(d.message.find(expected[i].message_part), std::string::npos)
          << "error " << i << ": " << d.where_and_what();
      lines += (i ? "\n" : "") + d.where_and_what();
    }
    // what() has every error, one line each; the accessors are the first's.
    EXPECT_EQ(std::string(e.what()), lines);
    EXPECT_EQ(e.line(), 1);
    EXPECT_EQ(e.column(), 9);
  }
}

TEST(AllErrors, YamlSyntaxErrorStopsAtItself) {
  try {
    load_file(test::invalid_dir() + "/yaml-syntax.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.errors().size(), 1u) << e.what();
  }
}

TEST(AllErrors, SeveralErrorsInOneTarget) {
  const std::string yaml =
      "prompts: {p: {text: hi}}\n"
      "targets:\n"
      "  - name: 'bad name'\n"
      "    url: http://h\n"
      "    model: m\n"
      "    warmup: -1\n"
      "    temperature: 9\n"
      "    prompts: [p, nope]\n";
  try {
    parse(yaml, "t.yaml", "");
    FAIL();
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.errors().size(), 4u) << e.what();
    EXPECT_EQ(e.errors()[0].line, 3);
    EXPECT_EQ(e.errors()[1].line, 6);
    EXPECT_EQ(e.errors()[2].line, 7);
    EXPECT_EQ(e.errors()[3].line, 8);
    EXPECT_NE(e.errors()[3].message.find("unknown prompt 'nope'"), std::string::npos);
  }
}

TEST(AllErrors, OneErrorIsWhatItAlwaysWas) {
  ConfigError e(std::vector<Diagnostic>{{"a.yaml", 3, 7, "boom"}, {"a.yaml", 0, 0, "gone"}});
  EXPECT_STREQ(e.what(), "a.yaml:3:7: boom\na.yaml: gone");
  EXPECT_EQ(e.message(), "boom");
  EXPECT_EQ(e.errors().size(), 2u);
}

}  // namespace
}  // namespace lse::config
