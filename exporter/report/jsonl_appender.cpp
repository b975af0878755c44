// JsonlAppender: open(2)/write(2)/ftruncate(2), nothing buffered in between;
// fstat(2)/stat(2) tell whether the path still names the open file.
#include "report/jsonl_appender.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>
#include <cerrno>
#include <cstring>
#include <string>

#include "util/bounded_file.hpp"

namespace lse::report {

JsonlAppender::~JsonlAppender() { close(); }

JsonlAppender::JsonlAppender(JsonlAppender&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

JsonlAppender& JsonlAppender::operator=(JsonlAppender&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  return std::string("is not a regular file (") + std::string(util::file_kind(mode)) + ")";
}

}  // namespace

std::string JsonlAppender::open(const std::string& path, bool regular_only) {
  close();
  struct stat st {};
  if (regular_only && ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return kind_of(st.st_mode);
  const int extra = regular_only ? O_NONBLOCK | O_NOCTTY : 0;
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | extra, 0644);
  if (fd_ < 0) return std::strerror(errno);
  if (regular_only && (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode))) {
    close();
    return kind_of(st.st_mode);
  }
  return {};
}

bool JsonlAppender::is_at(const std::string& path) const {
  struct stat open_file {
  }, named{};
  if (fd_ < 0 || ::fstat(fd_, &open_file) != 0 || ::stat(path.c_str(), &named) != 0) return false;
  return open_file.st_dev == named.st_dev && open_file.st_ino == named.st_ino;
}

bool JsonlAppender::is_deleted() const {
  struct stat st {};
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 && st.st_nlink == 0;
}

void JsonlAppender::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::uint64_t JsonlAppender::size() const {
  struct stat st {};
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.st_size);
}

std::string JsonlAppender::append(std::string_view line) {
  if (fd_ < 0) return "write failed: file not open";
  // One write(2) per line; the loop only continues after a short write.
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string error = std::string("write failed: ") + std::strerror(n < 0 ? errno : EIO);
      // Drop the partial row so readers never see half a line glued to the
      // next. It is the file's last `done` bytes (O_APPEND), wherever the
      // end was: a size taken before the write may be stale by then (the
      // file truncated under us), and cutting to it could extend the file.
      const std::uint64_t now = size();
      if (done > 0 && now >= done && ::ftruncate(fd_, static_cast<off_t>(now - done)) != 0)
        error += std::string("; cannot drop partial row: ") + std::strerror(errno);
      return error;
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace lse::report
