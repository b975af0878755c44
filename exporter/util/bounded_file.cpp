// Bounded whole-file reads (see bounded_file.hpp).
#include "util/bounded_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>

namespace lse::util {
namespace {

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = kKiB * 1024;
constexpr std::uint64_t kGiB = kMiB * 1024;

// Closes the descriptor however the read ends.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

FileRead failed(FileProblem problem, std::string error, int error_number = 0) {
  FileRead r;
  r.problem = problem;
  r.error = std::move(error);
  r.error_number = error_number;
  return r;
}

// A failed stat() or open(): gone, or there but not ours to read.
FileRead from_errno(int err) {
  if (err == ENOENT || err == ENOTDIR) return failed(FileProblem::missing, "does not exist", err);
  return failed(FileProblem::unreadable, fmt::format("cannot be read: {}", std::strerror(err)),
                err);
}

FileRead too_large(std::uint64_t size, std::uint64_t max_bytes, std::string_view what) {
  std::string shown = format_byte_size(size);
  // "1.0 MiB, over the 1 MiB limit" would read as no excess at all.
  if (shown == format_byte_size(max_bytes)) shown = fmt::format("{} bytes", size);
  return failed(FileProblem::too_large, fmt::format("is {}, over the {} limit for {}", shown,
                                                    format_byte_limit(max_bytes), what));
}

// Refuses anything but a regular file within the cap (by its metadata).
std::optional<FileRead> refuse(const struct stat& st, std::uint64_t max_bytes,
                               std::string_view what) {
  if (S_ISDIR(st.st_mode)) return failed(FileProblem::directory, "is a directory");
  if (!S_ISREG(st.st_mode)) {
    return failed(FileProblem::not_regular,
                  fmt::format("is not a regular file ({})", file_kind(st.st_mode)));
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes) return too_large(size, max_bytes, what);
  return std::nullopt;
}

// Reads at most max_bytes + 1 bytes: one more than allowed says "too large"
// without reading on.
FileRead read_capped(int fd, std::uint64_t expected, std::uint64_t max_bytes,
                     std::string_view what) {
  FileRead r;
  r.content.reserve(static_cast<std::size_t>(expected));
  char buf[16384];
  const std::uint64_t want_total =
      max_bytes == std::numeric_limits<std::uint64_t>::max() ? max_bytes : max_bytes + 1;
  while (r.content.size() < want_total) {
    const std::uint64_t left = want_total - r.content.size();
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(left, sizeof buf));
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return from_errno(errno);
    if (n == 0) break;
    r.content.append(buf, static_cast<std::size_t>(n));
  }
  if (r.content.size() > max_bytes) {
    return failed(FileProblem::too_large,
                  fmt::format("is over the {} limit for {} (it held more than its size said)",
                              format_byte_limit(max_bytes), what));
  }
  return r;
}

}  // namespace

FileRead read_bounded_file(const std::string& path, std::uint64_t max_bytes,
                           std::string_view what) {
  return read_bounded_file(path, max_bytes, what, nullptr);
}

FileRead read_bounded_file(const std::string& path, std::uint64_t max_bytes, std::string_view what,
                           const std::function<void()>& between_check_and_open) {
  // Checked before opening: opening a device can have effects of its own.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return from_errno(errno);
  if (auto refused = refuse(st, max_bytes, what)) return *refused;
  if (between_check_and_open) between_check_and_open();
  // O_NONBLOCK: a FIFO put in its place after the check must not block the
  // open (or a read); it is refused by the fstat() below.
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return from_errno(errno);
  if (::fstat(fd.get(), &st) != 0) return from_errno(errno);
  if (auto refused = refuse(st, max_bytes, what)) return *refused;
  return read_capped(fd.get(), static_cast<std::uint64_t>(st.st_size), max_bytes, what);
}

std::string_view file_kind(unsigned mode) {
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISSOCK(mode)) return "socket";
  return "special file";
}

std::string format_byte_size(std::uint64_t bytes) {
  const auto in = [&](std::uint64_t unit) {
    return static_cast<double>(bytes) / static_cast<double>(unit);
  };
  if (bytes == 1) return "1 byte";
  if (bytes < kKiB) return fmt::format("{} bytes", bytes);
  if (bytes < kMiB) return fmt::format("{:.1f} KiB", in(kKiB));
  if (bytes < kGiB) return fmt::format("{:.1f} MiB", in(kMiB));
  return fmt::format("{:.1f} GiB", in(kGiB));
}

std::string format_byte_limit(std::uint64_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  if (bytes >= kKiB && bytes % kKiB == 0) return fmt::format("{} KiB", bytes / kKiB);
  return bytes == 1 ? "1 byte" : fmt::format("{} bytes", bytes);
}

}  // namespace lse::util
