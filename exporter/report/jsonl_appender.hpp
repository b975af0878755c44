// The one way rows reach a JSONL file (DESIGN §6: "a crash loses at most the
// row being written"), shared by `run --out` (RowsWriter) and `serve`'s
// rotating rows file (RowStore): a whole line in one write(2) on an O_APPEND
// descriptor, EINTR retried, and a line that could only be written in part is
// cut off again so a reader never sees half a row glued to the next. O_APPEND
// also makes a file truncated under the writer (logrotate's `copytruncate`)
// go on at its new end, without a hole of zeros.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace lse::report {

class JsonlAppender {
 public:
  JsonlAppender() = default;
  ~JsonlAppender();
  JsonlAppender(JsonlAppender&& other) noexcept;
  JsonlAppender& operator=(JsonlAppender&& other) noexcept;
  JsonlAppender(const JsonlAppender&) = delete;
  JsonlAppender& operator=(const JsonlAppender&) = delete;

  // Opens `path` for appending, creating it (0644); closes any file open
  // before. Returns "" or the reason it could not ("Permission denied").
  // With `regular_only` (serve's rows file) anything but a regular file is
  // refused without blocking ("is not a regular file (FIFO)", "is a
  // directory"): the path is checked before the open, the open itself is
  // O_NONBLOCK (a FIFO swapped in after the check fails with ENXIO instead
  // of waiting for a reader) and the descriptor is checked again.
  std::string open(const std::string& path, bool regular_only = false);
  void close();
  bool is_open() const { return fd_ >= 0; }

  // The file's real size (someone may have truncated or replaced it), 0 when unknown.
  std::uint64_t size() const;

  // Whether `path` still names the open file (same st_dev and st_ino): false
  // once it was renamed away (logrotate's `create`) or deleted, or when no
  // file is open.
  bool is_at(const std::string& path) const;
  // Whether the open file has been deleted (no name left: st_nlink 0), so
  // what is written to it is lost.
  bool is_deleted() const;

  // Appends `line` (which ends in '\n'). Returns "" or why it failed
  // ("write failed: No space left on device"; a partial line that cannot be
  // cut off again adds "; cannot drop partial row: ...").
  std::string append(std::string_view line);

 private:
  int fd_ = -1;
};

}  // namespace lse::report
