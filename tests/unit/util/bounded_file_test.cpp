// util::read_bounded_file: a regular file within its cap is read whole; a
// device, a FIFO (without blocking), a directory, a file over the cap (by
// its size, or grown while read), a missing file and one that vanishes
// between the check and the open each end in their own clear error.
#include "util/bounded_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "within_deadline.hpp"

namespace lse::util {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

class BoundedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/lse-bounded-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string file(const std::string& name, const std::string& content) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  std::string dir_;
};

TEST_F(BoundedFile, ReadsARegularFileWithinTheCapWhole) {
  const std::string text = "What is the capital of France?\n";
  const FileRead r = read_bounded_file(file("p.txt", text), text.size(), "prompt files");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.content, text);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.problem, FileProblem::none);
}

TEST_F(BoundedFile, DevZeroIsRefusedWithoutBeingRead) {
  const FileRead r = read_bounded_file("/dev/zero", kMiB, "prompt files");
  EXPECT_EQ(r.problem, FileProblem::not_regular);
  EXPECT_EQ(r.error, "is not a regular file (character device)");
  EXPECT_EQ(r.content, "");
}

TEST_F(BoundedFile, AFifoIsRefusedAndNeverBlocks) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Nobody writes to the FIFO: a reader that opened it blocking would wait forever.
  const auto error = test::within_deadline(
      std::chrono::seconds(5), [&] { return read_bounded_file(fifo, kMiB, "secret files").error; });
  ASSERT_TRUE(error.has_value()) << "read_bounded_file blocked on a FIFO";
  EXPECT_EQ(*error, "is not a regular file (FIFO)");
}

TEST_F(BoundedFile, AFifoSwappedInAfterTheCheckIsRefusedWithoutBlocking) {
  const std::string path = file("key", "sk-abc\n");
  const auto error = test::within_deadline(std::chrono::seconds(5), [&] {
    return read_bounded_file(path, kMiB, "secret files",
                             [&] {
                               std::filesystem::remove(path);
                               ::mkfifo(path.c_str(), 0600);
                             })
        .error;
  });
  ASSERT_TRUE(error.has_value()) << "the open blocked on a FIFO put in place after the check";
  EXPECT_EQ(*error, "is not a regular file (FIFO)");
}

TEST_F(BoundedFile, ADirectoryIsNamedSo) {
  const FileRead r = read_bounded_file(dir_, kMiB, "prompt files");
  EXPECT_EQ(r.problem, FileProblem::directory);
  EXPECT_EQ(r.error, "is a directory");
}

TEST_F(BoundedFile, AFileOverTheCapIsRefusedBySizeWithTheLimitNamed) {
  const std::string path = file("big.txt", std::string(2 * kMiB, 'x'));
  const FileRead r = read_bounded_file(path, kMiB, "prompt files");
  EXPECT_EQ(r.problem, FileProblem::too_large);
  EXPECT_EQ(r.error, "is 2.0 MiB, over the 1 MiB limit for prompt files");
  EXPECT_EQ(r.content, "");
}

TEST_F(BoundedFile, OneByteOverTheCapIsSaidInBytes) {
  const std::string path = file("big.txt", std::string(kMiB + 1, 'x'));
  EXPECT_EQ(read_bounded_file(path, kMiB, "prompt files").error,
            "is 1048577 bytes, over the 1 MiB limit for prompt files");
  const FileRead at_cap = read_bounded_file(file("cap.txt", std::string(kMiB, 'y')), kMiB, "x");
  ASSERT_TRUE(at_cap.ok()) << at_cap.error;
  EXPECT_EQ(at_cap.content.size(), kMiB);
}

TEST_F(BoundedFile, AFileThatGrowsAfterTheCheckIsRefusedByTheOpenedFilesSize) {
  const std::string path = file("growing.log", "0123456789");
  const FileRead r = read_bounded_file(path, 16, "prompt files", [&] {
    std::ofstream(path, std::ios::app) << std::string(100, 'z');
  });
  EXPECT_EQ(r.problem, FileProblem::too_large);
  EXPECT_EQ(r.error, "is 110 bytes, over the 16 bytes limit for prompt files");
  EXPECT_EQ(r.content, "");
}

// procfs files say size 0 and hold more: only cap + 1 bytes are ever read.
TEST_F(BoundedFile, AFileHoldingMoreThanItsSizeSaysIsCutAtTheCap) {
  const std::string path = "/proc/self/status";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || st.st_size != 0) GTEST_SKIP() << "no procfs";
  const FileRead r = read_bounded_file(path, 16, "prompt files");
  EXPECT_EQ(r.problem, FileProblem::too_large);
  EXPECT_EQ(r.error,
            "is over the 16 bytes limit for prompt files (it held more than its size said)");
  EXPECT_EQ(r.content, "");
  const FileRead whole = read_bounded_file(path, kMiB, "prompt files");
  ASSERT_TRUE(whole.ok()) << whole.error;
  EXPECT_EQ(whole.content.rfind("Name:", 0), 0u) << whole.content;
}

TEST_F(BoundedFile, AMissingFileDoesNotExist) {
  const FileRead r = read_bounded_file(dir_ + "/nope.txt", kMiB, "prompt files");
  EXPECT_EQ(r.problem, FileProblem::missing);
  EXPECT_EQ(r.error, "does not exist");
  EXPECT_EQ(r.error_number, ENOENT);
  // A path through a file, not a folder, does not exist either.
  EXPECT_EQ(read_bounded_file(file("f", "x") + "/inner", kMiB, "x").error, "does not exist");
}

TEST_F(BoundedFile, AFileThatVanishesBetweenCheckAndReadDoesNotExist) {
  const std::string path = file("token", "sk-abc\n");
  const FileRead r =
      read_bounded_file(path, kMiB, "secret files", [&] { std::filesystem::remove(path); });
  EXPECT_EQ(r.problem, FileProblem::missing);
  EXPECT_EQ(r.error, "does not exist");
  EXPECT_EQ(r.content, "");
}

TEST_F(BoundedFile, AFileThatCannotBeOpenedSaysWhy) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  const std::string path = file("locked", "x");
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  const FileRead r = read_bounded_file(path, kMiB, "secret files");
  EXPECT_EQ(r.problem, FileProblem::unreadable);
  EXPECT_EQ(r.error, "cannot be read: Permission denied");
}

TEST(ByteSizes, ReadLikeAPersonWritesThem) {
  EXPECT_EQ(format_byte_size(1), "1 byte");
  EXPECT_EQ(format_byte_size(812), "812 bytes");
  EXPECT_EQ(format_byte_size(64 * 1024), "64.0 KiB");
  EXPECT_EQ(format_byte_size(2 * kMiB), "2.0 MiB");
  EXPECT_EQ(format_byte_size(3 * kMiB / 2), "1.5 MiB");
  EXPECT_EQ(format_byte_size(5ull << 30), "5.0 GiB");
  EXPECT_EQ(format_byte_limit(kMiB), "1 MiB");
  EXPECT_EQ(format_byte_limit(64 * 1024), "64 KiB");
  EXPECT_EQ(format_byte_limit(1ull << 30), "1 GiB");
  EXPECT_EQ(format_byte_limit(1000), "1000 bytes");
  EXPECT_EQ(format_byte_limit(1), "1 byte");
}

}  // namespace
}  // namespace lse::util
