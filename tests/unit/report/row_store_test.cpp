// RowStore: ring bound and order, filtering, warmup exclusion, and the
// rotating JSONL file (sizes, number of files kept, every line a valid row).
#include "report/row_store.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../../support/temp_dir.hpp"
#include "report/row_json.hpp"

namespace lse::report {
namespace {

namespace fs = std::filesystem;

probe::ProbeResult row(const std::string& target, int n) {
  probe::ProbeResult r;
  r.ts = 1700000000 + n;
  r.target = target;
  r.model = "m";
  r.prompt = "p";
  r.ok = true;
  r.http_status = 200;
  r.duration = 1.0 + n / 1000.0;
  r.chunks = static_cast<std::size_t>(n);
  r.gaps = {0.01, 0.02, 0.03};
  return r;
}

// Each test's own folder, named after the suite for a reader of /tmp.
class TempDir : public test::TempDir {
 public:
  TempDir() : test::TempDir("lse-rows") {}
};

std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(RowStore, RingKeepsTheNewestRowsNewestFirst) {
  RowStore store(3, {});
  for (int i = 1; i <= 5; ++i) store.add(row("t", i));
  EXPECT_EQ(store.size(), 3u);
  EXPECT_EQ(store.capacity(), 3u);
  auto rows = store.latest("", 100);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].chunks, 5u);
  EXPECT_EQ(rows[1].chunks, 4u);
  EXPECT_EQ(rows[2].chunks, 3u);
  ASSERT_EQ(store.latest("", 2).size(), 2u);
  EXPECT_TRUE(store.latest("", 0).empty());
}

TEST(RowStore, FilterByTargetAndLimit) {
  RowStore store(100, {});
  for (int i = 1; i <= 10; ++i) store.add(row(i % 2 ? "odd" : "even", i));
  auto odd = store.latest("odd", 3);
  ASSERT_EQ(odd.size(), 3u);
  EXPECT_EQ(odd[0].chunks, 9u);
  EXPECT_EQ(odd[1].chunks, 7u);
  EXPECT_EQ(odd[2].chunks, 5u);
  EXPECT_EQ(store.latest("even", 100).size(), 5u);
  EXPECT_TRUE(store.latest("nobody", 100).empty());
}

TEST(RowStore, WarmupIsNotARow) {
  RowStore store(10, {});
  auto w = row("t", 1);
  w.warmup = true;
  store.add(w);
  EXPECT_EQ(store.size(), 0u);
  EXPECT_TRUE(store.last_by_target().empty());
}

TEST(RowStore, LastByTargetOutlivesTheRing) {
  RowStore store(2, {});
  store.add(row("quiet", 1));
  for (int i = 2; i <= 6; ++i) store.add(row("busy", i));
  auto last = store.last_by_target();
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last.at("quiet").chunks, 1u);
  EXPECT_EQ(last.at("busy").chunks, 6u);
  EXPECT_TRUE(store.latest("quiet", 10).empty());
}

TEST(RowStore, ReconfigureShrinksAndGrowsTheRing) {
  RowStore store(5, {});
  for (int i = 1; i <= 5; ++i) store.add(row("t", i));
  store.reconfigure(2, {});
  auto rows = store.latest("", 10);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].chunks, 5u);
  EXPECT_EQ(rows[1].chunks, 4u);
  store.reconfigure(10, {});
  for (int i = 6; i <= 9; ++i) store.add(row("t", i));
  EXPECT_EQ(store.size(), 6u);
}

TEST(RowStore, FileGetsOneValidRowPerLine) {
  TempDir dir;
  config::Rows settings;
  settings.path = (dir.path() / "rows.jsonl").string();
  {
    RowStore store(10, settings);
    auto w = row("t", 0);
    w.warmup = true;
    store.add(w);
    for (int i = 1; i <= 3; ++i) store.add(row("t", i));
    EXPECT_EQ(store.write_errors(), 0u);
  }
  auto lines = lines_of(settings.path);
  ASSERT_EQ(lines.size(), 3u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string error;
    auto r = parse_row_json(lines[i], &error);
    ASSERT_TRUE(r) << error;
    EXPECT_EQ(r->chunks, i + 1);
  }
  // A restart appends to the same file.
  RowStore again(10, settings);
  again.add(row("t", 4));
  EXPECT_EQ(lines_of(settings.path).size(), 4u);
}

TEST(RowStore, RotationKeepsTheConfiguredNumberOfFilesWithinSize) {
  TempDir dir;
  const std::size_t line_size = to_row_json(row("t", 100)).size() + 1;
  config::Rows settings;
  settings.path = (dir.path() / "rows.jsonl").string();
  settings.max_size = line_size * 4 + line_size / 2;  // four rows per file
  settings.keep = 2;
  RowStore store(1000, settings);
  for (int i = 100; i < 100 + 4 * 5 + 1; ++i) store.add(row("t", i));  // 21 rows
  EXPECT_EQ(store.write_errors(), 0u) << store.last_write_error();

  const fs::path base = settings.path;
  ASSERT_TRUE(fs::exists(base));
  ASSERT_TRUE(fs::exists(base.string() + ".1"));
  ASSERT_TRUE(fs::exists(base.string() + ".2"));
  EXPECT_FALSE(fs::exists(base.string() + ".3"));
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    ++files;
    EXPECT_LE(fs::file_size(e.path()), settings.max_size) << e.path();
  }
  EXPECT_EQ(files, 3u);

  // Newest rows in the live file, the previous ones in .1, then .2.
  auto live = lines_of(base), one = lines_of(base.string() + ".1"),
       two = lines_of(base.string() + ".2");
  ASSERT_EQ(live.size(), 1u);
  ASSERT_EQ(one.size(), 4u);
  ASSERT_EQ(two.size(), 4u);
  EXPECT_EQ(parse_row_json(live[0], nullptr)->chunks, 120u);
  EXPECT_EQ(parse_row_json(one[0], nullptr)->chunks, 116u);
  EXPECT_EQ(parse_row_json(two[3], nullptr)->chunks, 115u);
}

TEST(RowStore, SmallerKeepOnReloadDeletesOlderFiles) {
  TempDir dir;
  config::Rows settings;
  settings.path = (dir.path() / "rows.jsonl").string();
  settings.max_size = 1;  // every row rotates
  settings.keep = 4;
  RowStore store(10, settings);
  for (int i = 0; i < 6; ++i) store.add(row("t", i));
  EXPECT_TRUE(fs::exists(settings.path + ".4"));
  settings.keep = 1;
  store.reconfigure(10, settings);
  store.add(row("t", 6));
  EXPECT_TRUE(fs::exists(settings.path));
  EXPECT_TRUE(fs::exists(settings.path + ".1"));
  EXPECT_FALSE(fs::exists(settings.path + ".2"));
  EXPECT_FALSE(fs::exists(settings.path + ".4"));
  settings.keep = 0;  // rotation just starts over
  store.reconfigure(10, settings);
  store.add(row("t", 7));
  EXPECT_FALSE(fs::exists(settings.path + ".1"));
  EXPECT_EQ(lines_of(settings.path).size(), 1u);
}

TEST(RowStore, UnopenablePathIsAStartupError) {
  config::Rows settings;
  settings.path = "/nonexistent-dir/for/rows.jsonl";
  try {
    RowStore store(10, settings);
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/for/rows.jsonl"), std::string::npos);
  }
}

TEST(RowStore, ReconfigureToABadPathKeepsTheOldFile) {
  TempDir dir;
  config::Rows good;
  good.path = (dir.path() / "rows.jsonl").string();
  RowStore store(10, good);
  config::Rows bad = good;
  bad.path = (dir.path() / "missing" / "rows.jsonl").string();
  EXPECT_THROW(store.reconfigure(10, bad), std::runtime_error);
  store.add(row("t", 1));
  EXPECT_EQ(lines_of(good.path).size(), 1u);

  config::Rows moved = good;
  moved.path = (dir.path() / "other.jsonl").string();
  store.reconfigure(10, moved);
  store.add(row("t", 2));
  EXPECT_EQ(lines_of(good.path).size(), 1u);
  EXPECT_EQ(lines_of(moved.path).size(), 1u);
  store.reconfigure(10, {});  // file off
  store.add(row("t", 3));
  EXPECT_EQ(lines_of(moved.path).size(), 1u);
  EXPECT_EQ(store.size(), 3u);
}

TEST(RowStore, ConcurrentAddsNeverInterleaveLines) {
  TempDir dir;
  config::Rows settings;
  settings.path = (dir.path() / "rows.jsonl").string();
  settings.max_size = 64 * 1024;
  settings.keep = 50;
  RowStore store(100, settings);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 250; ++i) {
        auto r = row("t" + std::to_string(t), i);
        r.gaps.assign(static_cast<std::size_t>(i % 50), 0.012345);
        store.add(r);
        (void)store.latest("", 10);
      }
    });
  for (auto& th : threads) th.join();
  std::size_t total = 0;
  for (const auto& e : fs::directory_iterator(dir.path()))
    for (const auto& line : lines_of(e.path())) {
      std::string error;
      ASSERT_TRUE(parse_row_json(line, &error)) << error;
      ++total;
    }
  EXPECT_EQ(total, 1000u);
  EXPECT_EQ(store.size(), 100u);
  EXPECT_EQ(store.last_by_target().size(), 4u);
}

}  // namespace
}  // namespace lse::report
