// The rows path check of validation (see rows_check.hpp).
#include "config/rows_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/bounded_file.hpp"

namespace lse::config::detail {
namespace {

std::string not_regular(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  return "is not a regular file (" + std::string(util::file_kind(mode)) + ")";
}

// The file does not exist yet: `serve` will create it in its directory.
std::optional<std::string> directory_problem(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return "cannot be created: " + dir + " does not exist";
    return "cannot be created: " + dir + ": " + std::strerror(errno);
  }
  if (!S_ISDIR(st.st_mode)) return "cannot be created: " + dir + " is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return "cannot be created: " + dir + " is not writable: " + std::strerror(errno);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> rows_path_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return directory_problem(path);
    if (errno == ENOTDIR) return directory_problem(path);
    return std::string("cannot be checked: ") + std::strerror(errno);
  }
  if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
  // Opening for appending writes nothing; O_NONBLOCK keeps a FIFO swapped
  // in after the stat from blocking the open.
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return std::string("cannot be written: ") + std::strerror(errno);
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  if (!regular) return not_regular(st.st_mode);
  return std::nullopt;
}

}  // namespace lse::config::detail
