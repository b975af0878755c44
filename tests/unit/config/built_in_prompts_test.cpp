// The default prompt set is compiled in: a config without `prompts:` loads in
// any folder with the text of config/prompts/*.txt, byte for byte; a file
// <config dir>/prompts/<name>.txt overrides one prompt; a file there that
// cannot be read is an error naming it, never silently replaced.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "config/built_in_prompts.hpp"
#include "config/config.hpp"
#include "test_support.hpp"

namespace lse::config {
namespace {

const std::string kTarget = "targets: [{name: t, url: 'http://h', model: m}]\n";

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string shipped(const std::string& name) {
  return read_whole(test::repo_config_dir() + "/prompts/" + name + ".txt");
}

class BuiltInPrompts : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/lse-built-in-prompts-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    config_ = dir_ + "/c.yaml";
    std::ofstream(config_) << kTarget;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string put_prompt(const std::string& name, const std::string& text) const {
    std::filesystem::create_directories(dir_ + "/prompts");
    const std::string path = dir_ + "/prompts/" + name + ".txt";
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string error_of_load() const {
    try {
      load_file(config_);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }

  std::string dir_, config_;
};

TEST_F(BuiltInPrompts, TheEmbeddedBytesAreTheShippedFiles) {
  const auto set = built_in_prompts();
  ASSERT_EQ(set.size(), 3u);
  EXPECT_EQ(set[0].name, "short");
  EXPECT_EQ(set[1].name, "medium");
  EXPECT_EQ(set[2].name, "long");
  for (const auto& p : set) {
    const std::string file = shipped(std::string(p.name));
    ASSERT_FALSE(file.empty()) << p.name;
    EXPECT_EQ(p.text, file) << p.name;  // byte for byte, trailing newline included
  }
}

TEST_F(BuiltInPrompts, AConfigInAnEmptyFolderLoadsTheBuiltInSet) {
  const Config c = load_file(config_);
  ASSERT_EQ(c.prompts.size(), 3u);
  for (const std::string name : {"short", "medium", "long"}) {
    const Prompt& p = c.prompts.at(name);
    EXPECT_EQ(p.source, "built in") << name;
    // The same text a prompt file gives: the file's bytes without the final newline.
    std::string want = shipped(name);
    ASSERT_EQ(want.back(), '\n') << name;
    want.pop_back();
    EXPECT_EQ(p.text, want) << name;
  }
  // Every target probes all three (none names its prompts).
  EXPECT_EQ(c.targets.at(0).prompts, (std::vector<std::string>{"long", "medium", "short"}));
  // The dump says where each came from.
  EXPECT_NE(dump_redacted(c).find("source: built in"), std::string::npos);
}

TEST_F(BuiltInPrompts, AFileBesideTheConfigOverridesOnePrompt) {
  const std::string path = put_prompt("medium", "Name three prime numbers.\n");
  const Config c = load_file(config_);
  EXPECT_EQ(c.prompts.at("medium").text, "Name three prime numbers.");
  EXPECT_EQ(c.prompts.at("medium").source, path);
  EXPECT_EQ(c.prompts.at("short").source, "built in");
  EXPECT_EQ(c.prompts.at("long").source, "built in");
}

TEST_F(BuiltInPrompts, APromptFileThatCannotBeReadIsAnErrorNamingIt) {
  // A directory where the file would be.
  std::filesystem::create_directories(dir_ + "/prompts/long.txt");
  EXPECT_EQ(error_of_load(), config_ + ":1:1: no prompts: section: cannot read '" + dir_ +
                                 "/prompts/long.txt' (it overrides the built-in long prompt): "
                                 "is a directory");
  std::filesystem::remove(dir_ + "/prompts/long.txt");
  // A FIFO: refused without being opened (the load does not wait on it).
  ASSERT_EQ(::mkfifo((dir_ + "/prompts/short.txt").c_str(), 0600), 0);
  EXPECT_EQ(error_of_load(), config_ + ":1:1: no prompts: section: cannot read '" + dir_ +
                                 "/prompts/short.txt' (it overrides the built-in short prompt): "
                                 "is not a regular file (FIFO)");
  std::filesystem::remove(dir_ + "/prompts/short.txt");
  // Without read permission (root reads it anyway: checked only as another user).
  const std::string path = put_prompt("medium", "unreadable\n");
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  if (::geteuid() != 0) {
    EXPECT_EQ(error_of_load(), config_ + ":1:1: no prompts: section: cannot read '" + path +
                                   "' (it overrides the built-in medium prompt): cannot be "
                                   "read: Permission denied");
  }
  // An empty override is an empty prompt, not a fallback to the built-in text.
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  put_prompt("medium", "\n");
  EXPECT_EQ(error_of_load(), config_ + ":1:1: no prompts: section: '" + path +
                                 "' (it overrides the built-in medium prompt) is empty");
}

}  // namespace
}  // namespace lse::config
