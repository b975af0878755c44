// RowStore's file under an outside rotation (logrotate's `create`,
// `copytruncate`, a plain `rm`) and at paths that are no regular file: every
// row lands in exactly one file, a failure to reopen is counted, and a FIFO
// is refused without blocking.
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "../../support/temp_dir.hpp"
#include "report/row_json.hpp"
#include "report/row_store.hpp"

namespace lse::report {
namespace {

namespace fs = std::filesystem;

probe::ProbeResult row(int n) {
  probe::ProbeResult r;
  r.ts = 1700000000 + n;
  r.target = "t";
  r.model = "m";
  r.prompt = "p";
  r.ok = true;
  r.http_status = 200;
  r.chunks = static_cast<std::size_t>(n);
  r.gaps = {0.01, 0.02};
  return r;
}

// Each test's own folder, named after the suite for a reader of /tmp.
class TempDir : public test::TempDir {
 public:
  TempDir() : test::TempDir("lse-rotation") {}
};

// The row numbers (chunks) of every line of `p`, in file order; a line that
// is not a row is -1.
std::vector<int> rows_in(const fs::path& p) {
  std::vector<int> out;
  std::ifstream in(p, std::ios::binary);
  for (std::string line; std::getline(in, line);) {
    std::string error;
    auto r = parse_row_json(line, &error);
    out.push_back(r ? static_cast<int>(r->chunks) : -1);
  }
  return out;
}

config::Rows at(const fs::path& p) {
  config::Rows settings;
  settings.path = p.string();
  return settings;
}

using Rows = std::vector<int>;

TEST(RowStoreRotation, RenamedAndRecreatedFollowsThePathOnReload) {
  TempDir dir;
  const fs::path path = dir.path() / "rows.jsonl";
  RowStore store(10, at(path));
  store.add(row(1));
  fs::rename(path, dir.path() / "rows.jsonl.1");  // logrotate `create`: mv, then a new file
  std::ofstream(path).close();
  store.reconfigure(10, at(path));  // SIGHUP
  store.add(row(2));
  EXPECT_EQ(rows_in(dir.path() / "rows.jsonl.1"), Rows{1});
  EXPECT_EQ(rows_in(path), Rows{2});
  EXPECT_EQ(store.write_errors(), 0u);
}

TEST(RowStoreRotation, RenamedFollowsThePathWithinASecondWithoutReload) {
  TempDir dir;
  const fs::path path = dir.path() / "rows.jsonl";
  RowStore store(10, at(path));
  store.add(row(1));
  fs::rename(path, dir.path() / "rows.jsonl.1");  // no new file: the store creates it
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  store.add(row(2));
  store.add(row(3));
  EXPECT_EQ(rows_in(dir.path() / "rows.jsonl.1"), Rows{1});
  EXPECT_EQ(rows_in(path), (Rows{2, 3}));
  EXPECT_EQ(store.write_errors(), 0u);
}

TEST(RowStoreRotation, ADeletedFileIsReplacedAtTheNextRow) {
  TempDir dir;
  const fs::path path = dir.path() / "rows.jsonl";
  RowStore store(10, at(path));
  store.add(row(1));
  fs::remove(path);
  store.add(row(2));  // no wait: the deletion is seen by the row's own fstat
  store.add(row(3));
  EXPECT_EQ(rows_in(path), (Rows{2, 3}));
  EXPECT_EQ(store.write_errors(), 0u);
}

TEST(RowStoreRotation, CopyTruncateGoesOnAtTheStartOfTheTruncatedFile) {
  TempDir dir;
  const fs::path path = dir.path() / "rows.jsonl";
  RowStore store(10, at(path));
  store.add(row(1));
  store.add(row(2));
  fs::copy_file(path, dir.path() / "rows.jsonl.1");  // logrotate `copytruncate`
  fs::resize_file(path, 0);
  store.add(row(3));
  store.reconfigure(10, at(path));  // and its SIGHUP changes nothing
  store.add(row(4));
  EXPECT_EQ(rows_in(dir.path() / "rows.jsonl.1"), (Rows{1, 2}));
  EXPECT_EQ(rows_in(path), (Rows{3, 4}));  // no hole of zeros before row 3
  EXPECT_EQ(store.write_errors(), 0u);
}

TEST(RowStoreRotation, AFailedReopenIsCountedAndRowsStayInTheRenamedFile) {
  TempDir dir;
  const fs::path path = dir.path() / "rows.jsonl";
  RowStore store(10, at(path));
  std::vector<std::string> heard;
  store.on_write_error([&](const std::string& m) { heard.push_back(m); });
  store.add(row(1));
  fs::rename(path, dir.path() / "rows.jsonl.1");
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);  // what takes its place cannot be a rows file
  store.reconfigure(10, at(path));
  store.add(row(2));
  EXPECT_EQ(rows_in(dir.path() / "rows.jsonl.1"), (Rows{1, 2}));
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0], "rows file " + path.string() +
                          ": cannot reopen after it was moved or deleted: is not a regular file "
                          "(FIFO)");
  EXPECT_EQ(store.write_errors(), 1u);
}

TEST(RowStoreRotation, AFifoIsRefusedAtStartAndOnReloadWithoutBlocking) {
  TempDir dir;
  const fs::path fifo = dir.path() / "rows.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  try {
    RowStore store(10, at(fifo));
    FAIL() << "a FIFO was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "rows file " + fifo.string() + ": cannot open: is not a regular file (FIFO)");
  }
  const fs::path good = dir.path() / "rows.jsonl";
  RowStore store(10, at(good));
  EXPECT_THROW(store.reconfigure(10, at(fifo)), std::runtime_error);
  EXPECT_THROW(store.reconfigure(10, at(dir.path())), std::runtime_error);
  store.add(row(1));
  EXPECT_EQ(rows_in(good), Rows{1});  // the old file kept
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(RowStoreRotation, DevicesAndDirectoriesAreRefused) {
  TempDir dir;
  for (const auto& [path, why] :
       std::map<std::string, std::string>{{"/dev/null", "is not a regular file (character device)"},
                                          {dir.path().string(), "is a directory"}}) {
    try {
      RowStore store(10, at(path));
      FAIL() << path << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), fmt::format("rows file {}: cannot open: {}", path, why));
    }
  }
}

}  // namespace
}  // namespace lse::report
