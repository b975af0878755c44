// Rows files for run/compare: appended one line per row, read back in order,
// and a malformed line reported as FILE:LINE.
#include "report/rows_file.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "report/row_json.hpp"
#include "report_fixtures.hpp"

namespace lse::report {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("lse-rows-file-test-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

TEST(ReportRowsFile, AppendsAndReadsBack) {
  const std::string path = temp_path("ok.jsonl");
  std::remove(path.c_str());
  {
    RowsWriter w(path);
    w.append(testing::planted(0.1, {0.02, 0.3}, 0.0, "svc", "short"));
    w.append(testing::failed(probe::FailureReason::connect, "svc", "long"));
    EXPECT_EQ(w.rows_written(), 2u);
  }
  {
    RowsWriter again(path);  // appends, never truncates
    again.append(testing::planted(0.2, {0.02}, 0.0, "svc", "short"));
  }
  const auto rows = read_rows_file(path);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_NEAR(*rows[0].ttft, 0.1, 1e-6);
  ASSERT_EQ(rows[0].gaps.size(), 2u);
  EXPECT_NEAR(rows[0].gaps[1], 0.3, 1e-6);
  EXPECT_FALSE(rows[1].ok);
  EXPECT_EQ(rows[1].reason, probe::FailureReason::connect);
  EXPECT_NEAR(*rows[2].ttft, 0.2, 1e-6);
  std::ifstream in(path);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 3);
  std::remove(path.c_str());
}

TEST(ReportRowsFile, MalformedLineIsFileColonLine) {
  const std::string path = temp_path("bad.jsonl");
  {
    RowsWriter w(path);
    w.append(testing::planted(0.1, {0.02}, 0.0));
  }
  {
    std::ofstream out(path, std::ios::app);
    out << "\n{\"ts\": 1, \"ok\": tru}\n";
  }
  try {
    read_rows_file(path);
    FAIL() << "no error";
  } catch (const RowsFileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ":3: not a probe row: ", 0), 0u) << e.what();
  }
  std::remove(path.c_str());
}

TEST(ReportRowsFile, ARowCutByAKillIsSkippedWithAWarning) {
  // kill -9 between the start and the end of a row's write (or a torn
  // write on power loss): the file ends with part of a row, no newline.
  const std::string path = temp_path("cut.jsonl");
  std::remove(path.c_str());
  {
    RowsWriter w(path);
    w.append(testing::planted(0.1, {0.02}, 0.0));
    w.append(testing::planted(0.2, {0.02}, 0.0));
  }
  const std::string third = to_row_json(testing::planted(0.3, {0.02}, 0.0));
  {
    std::ofstream out(path, std::ios::app);
    out << third.substr(0, third.size() / 2);
  }
  std::vector<std::string> warnings;
  const auto rows = read_rows_file(path, &warnings);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NEAR(*rows[1].ttft, 0.2, 1e-6);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind(path + ":3: the last line (", 0), 0u) << warnings[0];
  EXPECT_NE(warnings[0].find("stopped mid-row; skipped"), std::string::npos) << warnings[0];
  // The same cut line with a newline after it is a bad row, not a cut one.
  {
    std::ofstream out(path, std::ios::app);
    out << "\n";
  }
  EXPECT_THROW(read_rows_file(path), RowsFileError);
  std::remove(path.c_str());
}

TEST(ReportRowsFile, MissingFile) {
  try {
    read_rows_file("/nonexistent/rows.jsonl");
    FAIL() << "no error";
  } catch (const RowsFileError& e) {
    EXPECT_STREQ(e.what(),
                 "/nonexistent/rows.jsonl: cannot read rows file: No such file or directory");
  }
  EXPECT_THROW(RowsWriter("/nonexistent/dir/rows.jsonl"), RowsFileError);
}

}  // namespace
}  // namespace lse::report
