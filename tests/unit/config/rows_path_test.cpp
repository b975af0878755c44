// rows.path is checked where LoadOptions::check_rows_path asks (check-config,
// serve's start, reload): a FIFO, a device, a directory, a read-only file or
// an unwritable directory is an error at rows.path's line:col, found without
// blocking and without writing; rows.memory is read and bounded.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config/config.hpp"

namespace lse::config {
namespace {

namespace fs = std::filesystem;

class RowsPath : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "lse-rows-path-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  // The error of a config whose rows.path (on line 2, column 15) is `path`,
  // "" when it loads.
  std::string error_for(const std::string& path, bool check = true) {
    const std::string yaml =
        "prompts: {p: {text: hi}}\n"
        "rows: {path: '" +
        path +
        "'}\n"
        "targets:\n  - {name: a, url: 'http://h:1/', model: m}\n";
    LoadOptions options;
    options.check_rows_path = check;
    try {
      parse(yaml, "c.yaml", dir.string(), options);
      return "";
    } catch (const ConfigError& e) {
      return e.what();
    }
  }

  fs::path dir;
};

TEST_F(RowsPath, AFifoIsRefusedAtItsPlaceWithoutBlocking) {
  const fs::path fifo = dir / "rows.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(error_for(fifo.string()),
            "c.yaml:2:14: rows.path: " + fifo.string() + " is not a regular file (FIFO)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(error_for(fifo.string(), false), "");  // only where asked
}

TEST_F(RowsPath, DevicesAndDirectoriesAreRefused) {
  EXPECT_EQ(error_for("/dev/null"),
            "c.yaml:2:14: rows.path: /dev/null is not a regular file (character device)");
  EXPECT_EQ(error_for(dir.string()), "c.yaml:2:14: rows.path: " + dir.string() + " is a directory");
}

TEST_F(RowsPath, AMissingDirectoryIsRefused) {
  const fs::path p = dir / "missing" / "rows.jsonl";
  EXPECT_EQ(error_for(p.string()), "c.yaml:2:14: rows.path: " + p.string() +
                                       " cannot be created: " + (dir / "missing").string() +
                                       " does not exist");
  std::ofstream(dir / "plain") << "x";
  const fs::path under_file = dir / "plain" / "rows.jsonl";
  EXPECT_EQ(error_for(under_file.string()), "c.yaml:2:14: rows.path: " + under_file.string() +
                                                " cannot be created: " + (dir / "plain").string() +
                                                " is not a directory");
}

TEST_F(RowsPath, AWritableFileOrDirectoryIsFineAndNothingIsWritten) {
  EXPECT_EQ(error_for((dir / "new.jsonl").string()), "");
  EXPECT_FALSE(fs::exists(dir / "new.jsonl"));  // checked, not created
  std::ofstream(dir / "old.jsonl") << "{}\n";
  EXPECT_EQ(error_for((dir / "old.jsonl").string()), "");
  EXPECT_EQ(fs::file_size(dir / "old.jsonl"), 3u);
  EXPECT_EQ(error_for("relative.jsonl"), "");  // resolved against the config's folder
}

// Root writes through permission bits: a read-only file system refuses
// everyone (a tmpfs mounted read-only, where mounting is allowed).
TEST_F(RowsPath, AReadOnlyFileAndAnUnwritableDirectoryAreRefused) {
  const fs::path ro = dir / "ro";
  fs::create_directory(ro);
  std::ofstream(ro / "rows.jsonl") << "{}\n";
  ::chmod((ro / "rows.jsonl").c_str(), 0444);
  ::chmod(ro.c_str(), 0555);
  const bool root = ::geteuid() == 0;
  if (root) {
    if (::mount("tmpfs", ro.c_str(), "tmpfs", 0, "size=64k") != 0)
      GTEST_SKIP() << "running as root and cannot mount a read-only tmpfs";
    std::ofstream(ro / "rows.jsonl") << "{}\n";
    ASSERT_EQ(::mount("tmpfs", ro.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "size=64k"), 0);
  }
  const std::string why = root ? "Read-only file system" : "Permission denied";
  EXPECT_EQ(
      error_for((ro / "rows.jsonl").string()),
      "c.yaml:2:14: rows.path: " + (ro / "rows.jsonl").string() + " cannot be written: " + why);
  EXPECT_EQ(error_for((ro / "new.jsonl").string()),
            "c.yaml:2:14: rows.path: " + (ro / "new.jsonl").string() +
                " cannot be created: " + ro.string() + " is not writable: " + why);
  if (root) ::umount(ro.c_str());
  ::chmod(ro.c_str(), 0755);
}

TEST(RowsMemory, DefaultReadAndBounded) {
  const auto load = [](const std::string& memory) {
    return parse("prompts: {p: {text: hi}}\nrows: {memory: " + memory +
                     "}\ntargets:\n  - {name: a, url: 'http://h:1/', model: m}\n",
                 "c.yaml", "");
  };
  EXPECT_EQ(parse("prompts: {p: {text: hi}}\ntargets:\n  - {name: a, url: 'http://h:1/', model: "
                  "m}\n",
                  "c.yaml", "")
                .rows.memory,
            64ull << 20);
  EXPECT_EQ(load("8MiB").rows.memory, 8ull << 20);
  for (const std::string bad : {"1000", "0", "65GiB"}) {
    try {
      load(bad);
      FAIL() << bad << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("c.yaml:2:16: rows.memory: must be between 1MiB and "
                                           "64GiB"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace lse::config
