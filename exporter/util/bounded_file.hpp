// Reads a whole file that a config or a flag names (a prompt, a secret, a
// PEM file, a config file), bounded: a path set by mistake to /dev/zero, a
// FIFO, a directory or a growing log must end in a clear error, never in a
// process that blocks forever or reads until memory runs out.
//
// The path is checked with stat() first, so a device or FIFO is refused
// without being opened; then it is opened O_RDONLY|O_NONBLOCK|O_CLOEXEC|
// O_NOCTTY (a FIFO swapped in after the check does not block the open) and
// the opened descriptor is checked again with fstat(). At most max_bytes + 1
// bytes are read, so a file that grows while it is read is still refused at
// the cap. A path that disappears between the check and the open is
// "does not exist", as if it had never been there.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace lse::util {

enum class FileProblem {
  none,
  missing,      // no such file (also: vanished between check and open)
  unreadable,   // exists, but open/read failed (permissions, I/O error)
  directory,    // a directory
  not_regular,  // a FIFO, device or socket
  too_large,    // over the cap (by stat(), or by what was read)
};

struct FileRead {
  std::string content;  // the whole file when ok()
  FileProblem problem = FileProblem::none;
  // What is wrong, without the path (callers say which file, or not, as a
  // secret's path may itself be a pasted secret): "does not exist", "is a
  // directory", "is not a regular file (FIFO)", "is 2.0 MiB, over the 1 MiB
  // limit for prompt files", "cannot be read: Permission denied".
  std::string error;
  int error_number = 0;  // errno of a failed stat/open/read, else 0

  bool ok() const { return problem == FileProblem::none; }
};

// `what` names the files the cap is for, as in "the 1 MiB limit for
// prompt files". Never throws for a problem of the file.
FileRead read_bounded_file(const std::string& path, std::uint64_t max_bytes, std::string_view what);

// The same, running `between_check_and_open` after the path was checked and
// before it is opened: tests use it to pull the file away in that window.
FileRead read_bounded_file(const std::string& path, std::uint64_t max_bytes, std::string_view what,
                           const std::function<void()>& between_check_and_open);

// What kind of special file a stat() mode is: "FIFO", "character device",
// "block device", "socket", "special file" (for "is not a regular file (FIFO)").
std::string_view file_kind(unsigned mode);

// A size as a person reads it: "812 bytes", "1 byte", "64.0 KiB", "2.0 MiB".
std::string format_byte_size(std::uint64_t bytes);
// A limit exactly: "1 MiB", "64 KiB", "1 GiB", "1000 bytes".
std::string format_byte_limit(std::uint64_t bytes);

}  // namespace lse::util
