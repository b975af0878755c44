// JsonlAppender: open(2)/write(2)/ftruncate(2), nothing buffered in between.
#include "report/jsonl_appender.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>
#include <cerrno>
#include <cstring>

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

std::string JsonlAppender::open(const std::string& path) {
  close();
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return std::strerror(errno);
  return {};
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
  const std::uint64_t before = size();
  // One write(2) per line; the loop only continues after a short write.
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string error = std::string("write failed: ") + std::strerror(n < 0 ? errno : EIO);
      // Drop the partial row so readers never see half a line glued to the next.
      if (done > 0 && ::ftruncate(fd_, static_cast<off_t>(before)) != 0)
        error += std::string("; cannot drop partial row: ") + std::strerror(errno);
      return error;
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace lse::report
