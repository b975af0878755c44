// `report` from rows files: every bad line is found (FILE:LINE and why), not
// just the first; files are labelled by host when hosts tell them apart, else
// by file name; several files keep their rows apart, series side by side.
#include "cli/report_command.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "report/row_json.hpp"

namespace lse::cli {
namespace {

namespace fs = std::filesystem;

class ReportCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lse-report-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  fs::path dir_;
};

std::string row(const std::string& target, const std::string& prompt, const std::string& host,
                double ttft = 0.1, double ts = 1700000000, bool ok = true) {
  probe::ProbeResult r;
  r.ts = ts;
  r.target = target;
  r.prompt = prompt;
  r.host = host;
  r.ok = ok;
  if (!ok) r.reason = probe::FailureReason::connect;
  r.ttft = ttft;
  r.duration = 0.5;
  r.chunks = 3;
  r.gaps = {0.02, 0.03};
  return report::to_row_json(r) + "\n";
}

TEST_F(ReportCommand, EveryBadLineIsListedWithFileAndLine) {
  const std::string path =
      write("rows.jsonl", row("svc", "short", "h") + "\n" +  // 1, blank 2
                              "{\"ts\": 1, \"target\": \"svc\", \"ok\": tru\n" +
                              row("svc", "short", "h") +           // 4
                              "[1, 2]\n" +                         // 5
                              "{\"ts\": 1, \"target\": \"svc\"");  // 6, cut
  const RowsSource s = read_rows_source(path);
  EXPECT_TRUE(s.unreadable.empty());
  EXPECT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.lines, 5u);  // the blank line is not counted
  ASSERT_EQ(s.bad.size(), 2u);
  EXPECT_EQ(s.bad[0].rfind(path + ":3: not a probe row: malformed JSON", 0), 0u) << s.bad[0];
  EXPECT_EQ(s.bad[1], path + ":5: not a probe row: a row must be a JSON object");
  // A last line cut mid-row is what a killed writer leaves: a warning, not a bad line.
  EXPECT_EQ(s.partial_tail, path +
                                ":6: the last line (25 bytes) has no newline and is not a row: "
                                "the writer was stopped mid-row; skipped");
}

TEST_F(ReportCommand, AFileThatEndsWholeHasNoPartialTail) {
  const RowsSource s = read_rows_source(write("whole.jsonl", row("svc", "short", "h")));
  EXPECT_TRUE(s.partial_tail.empty());
  EXPECT_TRUE(s.bad.empty());
  EXPECT_EQ(s.rows.size(), 1u);
}

TEST_F(ReportCommand, AMissingFileIsUnreadableNotEmpty) {
  const RowsSource s = read_rows_source((dir_ / "missing.jsonl").string());
  EXPECT_EQ(s.unreadable, (dir_ / "missing.jsonl").string() +
                              ": cannot read rows file: No such file or directory");
  EXPECT_TRUE(s.rows.empty());
}

TEST_F(ReportCommand, LabelsAreHostsWhenTheyTellTheFilesApartElseFileNames) {
  const auto a = read_rows_source(write("before.jsonl", row("svc", "p", "host-a")));
  const auto b = read_rows_source(write("after.jsonl", row("svc", "p", "host-b")));
  EXPECT_EQ(source_labels({a, b}), (std::vector<std::string>{"host-a", "host-b"}));

  // Same host in both: the file names.
  const auto b2 = read_rows_source(write("after2.jsonl", row("svc", "p", "host-a")));
  EXPECT_EQ(source_labels({a, b2}), (std::vector<std::string>{"before.jsonl", "after2.jsonl"}));
  // Two hosts in one file: the file names.
  const auto mixed =
      read_rows_source(write("mixed.jsonl", row("svc", "p", "host-c") + row("svc", "p", "host-d")));
  EXPECT_EQ(source_labels({a, mixed}), (std::vector<std::string>{"before.jsonl", "mixed.jsonl"}));
  // One file: its name.
  EXPECT_EQ(source_labels({a}), std::vector<std::string>{"before.jsonl"});

  // The same name in two folders: the paths as given.
  fs::create_directories(dir_ / "x");
  const auto other = read_rows_source(write("x/before.jsonl", row("svc", "p", "host-a")));
  EXPECT_EQ(source_labels({a, other}), (std::vector<std::string>{a.path, other.path}));
}

TEST_F(ReportCommand, SeveralFilesKeepTheirRowsApartSideBySide) {
  const auto a = read_rows_source(
      write("before.jsonl", row("svc", "short", "h") + row("svc", "long", "h") +
                                row("svc", "short", "h") + row("zzz", "short", "h")));
  const auto b =
      read_rows_source(write("after.jsonl", row("svc", "short", "h") + row("svc", "long", "h")));
  report::SeriesOrder order;
  const auto rows = merge_sources({a, b}, source_labels({a, b}), order);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].target, "svc @ before.jsonl");
  EXPECT_EQ(rows[5].target, "svc @ after.jsonl");
  const report::SeriesOrder expected = {{"svc @ before.jsonl", "long"},
                                        {"svc @ after.jsonl", "long"},
                                        {"svc @ before.jsonl", "short"},
                                        {"svc @ after.jsonl", "short"},
                                        {"zzz @ before.jsonl", "short"}};
  EXPECT_EQ(order, expected);

  // One file: the rows as they are.
  const auto single = merge_sources({a}, source_labels({a}), order);
  EXPECT_EQ(single[0].target, "svc");
  EXPECT_TRUE(order.empty());
}

TEST_F(ReportCommand, TheHeaderNamesEachFileWithItsHostsAndTimeRange) {
  // Two runs a day apart on two hosts; the second has a failed row.
  const auto a =
      read_rows_source(write("before.jsonl", row("svc", "short", "host-a", 0.1) +
                                                 row("svc", "short", "host-a", 0.1, 1700000060)));
  const std::string failed_row = row("svc", "short", "host-b", 0.1, 1700086400, false);
  const auto b = read_rows_source(
      write("after.jsonl", failed_row + row("svc", "short", "host-b", 0.1, 1700086430)));
  ASSERT_EQ(a.rows.size(), 2u);
  ASSERT_EQ(b.rows.size(), 2u);
  ReportOptions o;
  const auto meta = report_meta(o, {a, b}, source_labels({a, b}));
  ASSERT_EQ(meta.sources.size(), 2u);
  EXPECT_EQ(meta.sources[0].label, "host-a");
  EXPECT_EQ(meta.sources[0].hosts, std::vector<std::string>{"host-a"});
  EXPECT_DOUBLE_EQ(meta.sources[0].first_unix, 1700000000);
  EXPECT_DOUBLE_EQ(meta.sources[0].last_unix, 1700000060.5);  // the last row's end
  EXPECT_EQ(meta.sources[0].rows, 2u);
  EXPECT_EQ(meta.sources[0].ok, 2u);
  EXPECT_EQ(meta.sources[1].hosts, std::vector<std::string>{"host-b"});
  EXPECT_DOUBLE_EQ(meta.sources[1].first_unix, 1700086400);
  EXPECT_DOUBLE_EQ(meta.sources[1].last_unix, 1700086430.5);
  EXPECT_EQ(meta.sources[1].ok, 1u);
  // No one span over both runs: a day apart is not a run that "took" a day.
  EXPECT_EQ(meta.elapsed_seconds, 0);
  EXPECT_TRUE(meta.host.empty());
  EXPECT_EQ(meta.title, "llm-stream-exporter report · host-a vs host-b");
}

}  // namespace
}  // namespace lse::cli
