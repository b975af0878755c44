// Raw-row files for the experiment CLI: `run --out` appends rows through
// JsonlAppender (one write(2) per line: a crash or Ctrl-C loses at most the
// row being written), `compare` and `report` read them back with
// "FILE:LINE: error" messages. The row format itself is row_json's.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "probe/result.hpp"
#include "report/jsonl_appender.hpp"

namespace lse::report {

// "FILE:LINE: message" (LINE 0 when the file cannot be opened at all).
class RowsFileError : public std::runtime_error {
 public:
  RowsFileError(const std::string& file, int line, const std::string& message);
  // An already located message ("FILE:LINE: ...").
  explicit RowsFileError(const std::string& located) : std::runtime_error(located) {}
};

// One pass over a JSONL rows file. Blank lines are skipped. A last line
// without its newline that is not a row is what a writer killed mid-row
// (kill -9, power loss) leaves: it is skipped with a warning in
// `partial_tail`, never an error. Every other line that is not a row is
// listed in `bad` as "FILE:LINE: not a probe row: ...".
struct RowsScan {
  std::vector<probe::ProbeResult> rows;
  std::vector<std::string> bad;
  std::string partial_tail;  // "FILE:LINE: ... skipped", empty when the file ends whole
  std::size_t lines = 0;     // non-blank lines, the partial tail included
};
// Throws RowsFileError when the file cannot be opened or read.
RowsScan scan_rows_file(const std::string& path);

// Every row of a JSONL rows file, in file order. Throws RowsFileError on the
// first line that is not a row; a partial last line is skipped, and its
// warning appended to `warnings` when given.
std::vector<probe::ProbeResult> read_rows_file(const std::string& path,
                                               std::vector<std::string>* warnings = nullptr);

class RowsWriter {
 public:
  // Opens `path` for appending (creating it). Throws RowsFileError.
  explicit RowsWriter(const std::string& path);

  // Appends one row and its newline with a single write(2) (no fsync: the
  // kernel has the line once write returns). Throws RowsFileError on failure
  // ("PATH: cannot append a row: write failed: No space left on device"); a
  // failed row leaves no partial line, so later rows may still be appended.
  void append(const probe::ProbeResult& result);

  const std::string& path() const { return path_; }
  std::size_t rows_written() const { return rows_; }

 private:
  std::string path_;
  JsonlAppender file_;
  std::size_t rows_ = 0;
};

}  // namespace lse::report
