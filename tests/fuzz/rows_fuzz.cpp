// libFuzzer target for the rows reader of `compare` and `report`: the input
// is a JSONL rows file. Every line goes through report::parse_row_json; a row
// that parses must survive to_row_json -> parse_row_json -> to_row_json
// unchanged (ProbeResult has no operator==, so the serialised rows are
// compared). The same bytes, written to a file, go through
// report::scan_rows_file, which must agree line by line. See
// tests/fuzz/README.md. Built and run by tests/fuzz/fuzz_all.sh.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "report/row_json.hpp"
#include "report/rows_file.hpp"

namespace {

// The rows file scan_rows_file reads: one per process, rewritten per input.
const std::string& rows_path() {
  static const std::string path = "/tmp/lse-rows-fuzz-" + std::to_string(::getpid()) + ".jsonl";
  return path;
}

void write_rows_file(std::string_view bytes) {
  const int fd = ::open(rows_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror("open rows file");
    std::abort();
  }
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n <= 0) {
      std::perror("write rows file");
      std::abort();
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  ::close(fd);
}

void remove_rows_file() { ::unlink(rows_path().c_str()); }

struct Line {
  std::string_view text;
  int number = 0;
  bool last_without_newline = false;
  std::optional<std::string> row_json;  // to_row_json of the parsed row
};

// to_row_json of the row, and the round trip through parse_row_json.
std::string round_trip(const lse::probe::ProbeResult& row, std::string_view line) {
  const std::string first = lse::report::to_row_json(row);
  FUZZ_CHECK(first.find('\n') == std::string::npos, first);  // one JSONL line
  FUZZ_CHECK(first.find('\r') == std::string::npos, first);
  std::string error;
  const auto back = lse::report::parse_row_json(first, &error);
  if (!back)
    lse::fuzz::fail(
        "to_row_json(row) does not parse back",
        "input line: " + std::string(line) + "\nwritten:    " + first + "\nerror:      " + error);
  const std::string second = lse::report::to_row_json(*back);
  if (second != first)
    lse::fuzz::fail(
        "to_row_json(parse_row_json(to_row_json(row))) != to_row_json(row)",
        "input line: " + std::string(line) + "\nfirst:      " + first + "\nsecond:     " + second);
  return first;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  lse::fuzz::remove_stale("lse-rows-fuzz-");
  std::atexit(remove_rows_file);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // The lines as std::getline splits them: at LF; the rest after the last LF
  // is a line when it is not empty.
  std::vector<Line> lines;
  for (std::size_t start = 0, number = 1; start < input.size(); ++number) {
    const std::size_t lf = input.find('\n', start);
    Line l;
    l.number = static_cast<int>(number);
    l.text =
        input.substr(start, lf == std::string_view::npos ? std::string_view::npos : lf - start);
    l.last_without_newline = lf == std::string_view::npos;
    lines.push_back(l);
    start = lf == std::string_view::npos ? input.size() : lf + 1;
  }

  std::size_t non_blank = 0, rows = 0, bad = 0;
  bool partial_tail = false;
  for (Line& l : lines) {
    std::string error = "untouched";
    const auto row = lse::report::parse_row_json(l.text, &error);
    if (row) {
      l.row_json = round_trip(*row, l.text);
    } else {
      FUZZ_CHECK(!error.empty() && error != "untouched", std::string(l.text));
      // "a one-line reason" (row_json.hpp), printable: no control byte of
      // the row reaches compare's or report's "FILE:LINE: not a probe row:"
      // output (tests/fuzz/findings/rows_fuzz-error-echoes-line-breaks).
      for (const char ch : error)
        FUZZ_CHECK(static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f, error);
      // Without the error out-parameter: the same verdict.
      FUZZ_CHECK(!lse::report::parse_row_json(l.text, nullptr), std::string(l.text));
    }
    if (l.text.find_first_not_of(" \t\r") == std::string_view::npos) {
      FUZZ_CHECK(!row, std::string(l.text));  // a blank line is never a row
      continue;
    }
    ++non_blank;
    if (row)
      ++rows;
    else if (l.last_without_newline)
      partial_tail = true;
    else
      ++bad;
  }

  // The file reader: same lines, same rows, the others as bad lines or the
  // partial tail, with FILE:LINE: in front.
  write_rows_file(input);
  const lse::report::RowsScan scan = lse::report::scan_rows_file(rows_path());
  FUZZ_CHECK(scan.lines == non_blank,
             std::to_string(scan.lines) + " vs " + std::to_string(non_blank));
  FUZZ_CHECK(scan.rows.size() == rows,
             std::to_string(scan.rows.size()) + " vs " + std::to_string(rows));
  FUZZ_CHECK(scan.bad.size() == bad,
             std::to_string(scan.bad.size()) + " vs " + std::to_string(bad));
  FUZZ_CHECK(scan.partial_tail.empty() == !partial_tail, scan.partial_tail);
  std::size_t r = 0, b = 0;
  for (const Line& l : lines) {
    if (l.row_json) {
      FUZZ_CHECK(lse::report::to_row_json(scan.rows[r]) == *l.row_json, *l.row_json);
      ++r;
    } else if (l.text.find_first_not_of(" \t\r") != std::string_view::npos &&
               !l.last_without_newline) {
      const std::string where =
          rows_path() + ":" + std::to_string(l.number) + ": not a probe row: ";
      FUZZ_CHECK(scan.bad[b].rfind(where, 0) == 0, scan.bad[b] + "\nexpected: " + where);
      ++b;
    }
  }
  return 0;
}
