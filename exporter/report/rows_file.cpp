#include "report/rows_file.hpp"

#include <fmt/format.h>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "report/row_json.hpp"

namespace lse::report {

RowsFileError::RowsFileError(const std::string& file, int line, const std::string& message)
    : std::runtime_error(line > 0 ? fmt::format("{}:{}: {}", file, line, message)
                                  : fmt::format("{}: {}", file, message)) {}

RowsScan scan_rows_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw RowsFileError(path, 0, fmt::format("cannot read rows file: {}", std::strerror(errno)));
  RowsScan scan;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const bool last_without_newline = in.eof();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++scan.lines;
    std::string error;
    auto row = parse_row_json(line, &error);
    if (row) {
      scan.rows.push_back(std::move(*row));
    } else if (last_without_newline) {
      scan.partial_tail = fmt::format(
          "{}:{}: the last line ({} bytes) has no newline and is not a row: the writer was "
          "stopped mid-row; skipped",
          path, number, line.size());
    } else {
      scan.bad.push_back(fmt::format("{}:{}: not a probe row: {}", path, number, error));
    }
  }
  if (in.bad())
    throw RowsFileError(path, number, fmt::format("read error: {}", std::strerror(errno)));
  return scan;
}

std::vector<probe::ProbeResult> read_rows_file(const std::string& path,
                                               std::vector<std::string>* warnings) {
  RowsScan scan = scan_rows_file(path);
  if (!scan.bad.empty()) throw RowsFileError(scan.bad.front());
  if (warnings && !scan.partial_tail.empty()) warnings->push_back(scan.partial_tail);
  return std::move(scan.rows);
}

RowsWriter::RowsWriter(const std::string& path) : path_(path) {
  if (const std::string error = file_.open(path); !error.empty())
    throw RowsFileError(path, 0, "cannot open for appending: " + error);
}

void RowsWriter::append(const probe::ProbeResult& result) {
  std::string line = to_row_json(result);
  line += '\n';
  if (const std::string error = file_.append(line); !error.empty())
    throw RowsFileError(path_, 0, "cannot append a row: " + error);
  ++rows_;
}

}  // namespace lse::report
