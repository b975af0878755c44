// Internal to the config module: whether `serve` could append rows at
// `rows.path`, checked without writing a byte and without ever blocking.
// The I/O edge of validation, used when LoadOptions::check_rows_path asks
// (check-config, the start of `serve`, a reload).
#pragma once
#include <optional>
#include <string>

namespace lse::config::detail {

// nullopt when rows can be appended at `path`; else why not, after the path:
// "is not a regular file (FIFO)", "is a directory", "cannot be written:
// Read-only file system", "cannot be created: /d is not writable:
// Permission denied", "cannot be created: /d does not exist". An existing
// path is stat()ed before anything else (a FIFO or device is never opened);
// a regular file is opened for appending (O_NONBLOCK, nothing written) and
// closed; a missing one is not created, its directory is checked instead.
std::optional<std::string> rows_path_problem(const std::string& path);

}  // namespace lse::config::detail
