#include "report/rows_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "report/row_json.hpp"

namespace lse::report {

RowsFileError::RowsFileError(const std::string& file, int line, const std::string& message)
    : std::runtime_error(line > 0 ? fmt::format("{}:{}: {}", file, line, message)
                                  : fmt::format("{}: {}", file, message)) {}

std::vector<probe::ProbeResult> read_rows_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw RowsFileError(path, 0, fmt::format("cannot read rows file: {}", std::strerror(errno)));
  std::vector<probe::ProbeResult> rows;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const bool last_without_newline = in.eof();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string error;
    auto row = parse_row_json(line, &error);
    if (!row) {
      if (last_without_newline)
        error += " (the last line has no newline: was the run that wrote it killed mid-row?)";
      throw RowsFileError(path, number, "not a probe row: " + error);
    }
    rows.push_back(std::move(*row));
  }
  if (in.bad())
    throw RowsFileError(path, number, fmt::format("read error: {}", std::strerror(errno)));
  return rows;
}

RowsWriter::RowsWriter(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw RowsFileError(path, 0,
                        fmt::format("cannot open for appending: {}", std::strerror(errno)));
}

RowsWriter::~RowsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void RowsWriter::append(const probe::ProbeResult& result) {
  std::string line = to_row_json(result);
  line += '\n';
  // One write(2): with O_APPEND the line lands whole or (on a crash inside
  // the call) not at all in practice; a short write is retried for the rest.
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw RowsFileError(path_, 0, fmt::format("cannot append a row: {}", std::strerror(errno)));
    }
    done += static_cast<std::size_t>(n);
  }
  ++rows_;
}

}  // namespace lse::report
