// The one JSONL line writer (run --out, serve's rows file): whole lines, a
// failed write reported with its reason, a partial line cut off again, and
// every failure reaching RowsWriter's and RowStore's callers.
#include "report/jsonl_appender.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "report/row_store.hpp"
#include "report/rows_file.hpp"
#include "report_fixtures.hpp"

namespace lse::report {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("lse-appender-test-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(JsonlAppender, AppendsWholeLines) {
  const std::string path = temp_path("lines.jsonl");
  std::filesystem::remove(path);
  JsonlAppender file;
  ASSERT_EQ(file.open(path), "");
  EXPECT_EQ(file.append("{\"a\":1}\n"), "");
  EXPECT_EQ(file.append("{\"b\":2}\n"), "");
  EXPECT_EQ(file.size(), 16u);
  file.close();
  EXPECT_EQ(slurp(path), "{\"a\":1}\n{\"b\":2}\n");
  std::filesystem::remove(path);
}

TEST(JsonlAppender, OpenFailureSaysWhy) {
  JsonlAppender file;
  EXPECT_EQ(file.open("/nonexistent/dir/rows.jsonl"), "No such file or directory");
  EXPECT_FALSE(file.is_open());
  EXPECT_EQ(file.append("x\n"), "write failed: file not open");
}

TEST(JsonlAppender, DiskFullIsAnErrorNotASilentDrop) {
  JsonlAppender file;
  ASSERT_EQ(file.open("/dev/full"), "");
  EXPECT_EQ(file.append("{\"a\":1}\n"), "write failed: No space left on device");
}

// A file size limit makes write(2) stop part-way through a line (then fail
// with EFBIG): the part that landed must be cut off again.
TEST(JsonlAppender, PartialLineIsDropped) {
  const std::string path = temp_path("partial.jsonl");
  std::filesystem::remove(path);
  JsonlAppender file;
  ASSERT_EQ(file.open(path), "");
  ASSERT_EQ(file.append("0123456789\n"), "");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit tight = old;
  tight.rlim_cur = 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &tight), 0);
  const std::string error = file.append("abcdefghijklmnopqrstuvwxyz\n");
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  EXPECT_EQ(error, "write failed: File too large");
  EXPECT_EQ(slurp(path), "0123456789\n");  // not "0123456789\nabcde"
  EXPECT_EQ(file.append("next\n"), "");
  file.close();
  EXPECT_EQ(slurp(path), "0123456789\nnext\n");
  std::filesystem::remove(path);
}

TEST(JsonlAppender, RowsWriterThrowsOnEveryFailedRowAndGoesOn) {
  RowsWriter w("/dev/full");
  const auto row = testing::planted(0.1, {0.02}, 0.0, "svc", "short");
  for (int i = 0; i < 2; ++i) {
    try {
      w.append(row);
      FAIL() << "no error";
    } catch (const RowsFileError& e) {
      EXPECT_STREQ(e.what(),
                   "/dev/full: cannot append a row: write failed: No space left on device");
    }
  }
  EXPECT_EQ(w.rows_written(), 0u);
}

// A file size limit already reached makes every row's write fail (as a
// full disk would: serve's rows file must be a regular file, so /dev/full
// is not one to use here).
TEST(JsonlAppender, RowStoreSinkHearsEveryFailedRow) {
  config::Rows settings;
  settings.path = temp_path("sink.jsonl");
  std::filesystem::remove(settings.path);
  RowStore store(4, settings);
  std::vector<std::string> heard;
  store.on_write_error([&](const std::string& m) { heard.push_back(m); });
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit none = old;
  none.rlim_cur = 0;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &none), 0);
  store.add(testing::planted(0.1, {0.02}));
  store.add(testing::planted(0.1, {0.02}));
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  ASSERT_EQ(heard.size(), 2u);
  EXPECT_EQ(heard[0], "rows file " + settings.path + ": write failed: File too large");
  EXPECT_EQ(store.write_errors(), 2u);
  EXPECT_EQ(store.last_write_error(), heard[1]);
  EXPECT_EQ(store.size(), 2u);  // the ring still has them
  EXPECT_EQ(std::filesystem::file_size(settings.path), 0u);
  std::filesystem::remove(settings.path);
}

}  // namespace
}  // namespace lse::report
