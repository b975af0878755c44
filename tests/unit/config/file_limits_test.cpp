// Every file the config names is read bounded (`limits:`): a prompt or secret
// path set to /dev/zero, a FIFO, a directory or a file over its cap is an
// error at the `file:` value, at once (a FIFO never blocks the load); the
// config file itself is bounded too; the limits are dumped and read back.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "../util/within_deadline.hpp"
#include "config/config.hpp"
#include "test_support.hpp"

namespace lse::config {
namespace {

using namespace std::chrono_literals;

const std::string kTarget = "targets: [{name: t, url: 'http://h', model: m}]\n";

class FileLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/lse-file-limits-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& content) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::string fifo(const std::string& name) const {
    const std::string path = dir_ + "/" + name;
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0);
    return path;
  }

  // The config's errors ("" when it loads), from a child that is killed
  // when it does not finish in time: today's reader waits on a FIFO forever.
  std::string errors_of(const std::string& yaml) const {
    const auto got = lse::test::within_deadline(10s, [&]() -> std::string {
      try {
        parse(yaml, "c.yaml", dir_);
      } catch (const ConfigError& e) {
        return e.what();
      }
      return "";
    });
    EXPECT_TRUE(got.has_value()) << "loading did not end within 10s:\n" << yaml;
    return got.value_or("(timed out)");
  }

  std::string dir_;
};

TEST_F(FileLimits, DefaultToOneMiBForPromptsAndSixtyFourKiBForSecrets) {
  const Config c = parse("prompts: {p: {text: hi}}\n" + kTarget, "c.yaml", dir_);
  EXPECT_EQ(c.limits.prompt_file_bytes, 1u << 20);
  EXPECT_EQ(c.limits.secret_file_bytes, 64u << 10);
}

TEST_F(FileLimits, TakeSizesWithUnitsOrPlainBytes) {
  const Config c = parse(
      "limits: {prompt_file_bytes: 2MiB, secret_file_bytes: 4096}\nprompts: {p: {text: hi}}\n" +
          kTarget,
      "c.yaml", dir_);
  EXPECT_EQ(c.limits.prompt_file_bytes, 2u << 20);
  EXPECT_EQ(c.limits.secret_file_bytes, 4096u);
}

TEST_F(FileLimits, APromptFileOnDevZeroIsRefusedAtItsValue) {
  EXPECT_EQ(errors_of("prompts:\n  p: {file: /dev/zero}\n" + kTarget),
            "c.yaml:2:13: prompts.p.file: cannot read '/dev/zero': is not a regular file "
            "(character device)");
}

TEST_F(FileLimits, APromptFileOnAFifoIsRefusedWithoutWaiting) {
  const std::string path = fifo("prompt.fifo");
  EXPECT_EQ(
      errors_of("prompts:\n  p: {file: prompt.fifo}\n" + kTarget),
      "c.yaml:2:13: prompts.p.file: cannot read '" + path + "': is not a regular file (FIFO)");
}

TEST_F(FileLimits, APromptFileThatIsADirectoryOrMissingSaysSo) {
  std::filesystem::create_directory(dir_ + "/prompts");
  EXPECT_EQ(errors_of("prompts:\n  p: {file: prompts}\n" + kTarget),
            "c.yaml:2:13: prompts.p.file: cannot read '" + dir_ + "/prompts': is a directory");
  EXPECT_EQ(errors_of("prompts:\n  p: {file: gone.txt}\n" + kTarget),
            "c.yaml:2:13: prompts.p.file: cannot read '" + dir_ + "/gone.txt': does not exist");
}

TEST_F(FileLimits, APromptFileOverItsLimitNamesTheSizeTheLimitAndTheKey) {
  const std::string big(2u << 20, 'x');
  write("big.txt", big);
  EXPECT_EQ(errors_of("prompts:\n  p: {file: big.txt}\n" + kTarget),
            "c.yaml:2:13: prompts.p.file: cannot read '" + dir_ +
                "/big.txt': is 2.0 MiB, over the 1 MiB limit for prompt files (raise "
                "limits.prompt_file_bytes)");
  const Config c =
      parse("limits: {prompt_file_bytes: 2MiB}\nprompts:\n  p: {file: big.txt}\n" + kTarget,
            "c.yaml", dir_);
  EXPECT_EQ(c.prompts.at("p").text, big);
}

TEST_F(FileLimits, TheDefaultPromptSetIsReadBoundedToo) {
  std::filesystem::create_directory(dir_ + "/prompts");
  write("prompts/short.txt", "short?");
  write("prompts/medium.txt", std::string(100, 'm'));
  write("prompts/long.txt", "long?");
  EXPECT_EQ(errors_of("limits: {prompt_file_bytes: 64}\n" + kTarget),
            "c.yaml:1:1: no prompts: section: cannot read '" + dir_ +
                "/prompts/medium.txt' (it overrides the built-in medium prompt): is 100 bytes, "
                "over the 64 bytes limit for prompt files (raise limits.prompt_file_bytes)");
}

TEST_F(FileLimits, ASecretFileOnAFifoOrDeviceIsRefusedWithoutItsPath) {
  fifo("key.fifo");
  const std::string target = "targets:\n  - {name: t, url: 'http://h', model: m, auth: ";
  EXPECT_EQ(errors_of("prompts: {p: {text: hi}}\n" + target + "{bearer_token_file: key.fifo}}\n"),
            "c.yaml:3:68: auth.bearer_token_file: cannot read the secret file: is not a regular "
            "file (FIFO)");
  EXPECT_EQ(
      errors_of("prompts: {p: {text: hi}}\n" + target + "{header: X-Key, file: /dev/zero}}\n"),
      "c.yaml:3:70: auth.file: cannot read the secret file: is not a regular file (character "
      "device)");
}

TEST_F(FileLimits, ASecretFileOverItsLimitOrMissingIsRefusedWithoutItsPath) {
  write("key", "sk-0123456789abcdef0123456789abcdef\n");
  const std::string auth = "targets: [{name: t, url: 'http://h', model: m, auth: ";
  EXPECT_EQ(errors_of("limits: {secret_file_bytes: 16}\nprompts: {p: {text: hi}}\n" + auth +
                      "{bearer_token_file: key}}]\n"),
            "c.yaml:3:74: auth.bearer_token_file: cannot read the secret file: is 36 bytes, over "
            "the 16 bytes limit for secret files (raise limits.secret_file_bytes)");
  // A token pasted where its file's path goes is not echoed back.
  const std::string pasted = "sk-pasted-0123456789abcdef";
  const std::string missing =
      errors_of("prompts: {p: {text: hi}}\n" + auth + "{bearer_token_file: " + pasted + "}}]\n");
  EXPECT_EQ(missing,
            "c.yaml:2:74: auth.bearer_token_file: cannot read the secret file: does not exist (a "
            "relative path resolves against the config file's folder '" +
                dir_ + "')");
  EXPECT_EQ(missing.find(pasted), std::string::npos);
  const Config ok =
      parse("prompts: {p: {text: hi}}\n" + auth + "{bearer_token_file: key}}]\n", "c.yaml", dir_);
  EXPECT_EQ(ok.targets[0].auth.secret.value, "sk-0123456789abcdef0123456789abcdef");
}

TEST_F(FileLimits, TheConfigFileItselfIsReadBounded) {
  const auto load_error = [](const std::string& path) {
    return lse::test::within_deadline(10s,
                                      [&]() -> std::string {
                                        try {
                                          load_file(path);
                                        } catch (const ConfigError& e) {
                                          return e.what();
                                        }
                                        return "";
                                      })
        .value_or("(timed out)");
  };
  EXPECT_EQ(load_error("/dev/zero"),
            "/dev/zero: cannot read config file: is not a regular file (character device)");
  const std::string path = fifo("config.yaml");
  EXPECT_EQ(load_error(path), path + ": cannot read config file: is not a regular file (FIFO)");
}

TEST_F(FileLimits, AreDumpedAndReadBack) {
  const Config c = parse(
      "limits: {prompt_file_bytes: 2MiB, secret_file_bytes: 4KiB}\nprompts: {p: {text: hi}}\n" +
          kTarget,
      "c.yaml", dir_);
  const std::string dump = dump_redacted(c);
  const std::string block = "limits:\n  prompt_file_bytes: 2097152\n  secret_file_bytes: 4096\n";
  ASSERT_NE(dump.find(block), std::string::npos) << dump;
  EXPECT_EQ(parse(block + "prompts: {p: {text: hi}}\n" + kTarget, "dump.yaml", dir_).limits,
            c.limits);
}

}  // namespace
}  // namespace lse::config
