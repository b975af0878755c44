// The one way rows reach a JSONL file (DESIGN §6: "a crash loses at most the
// row being written"), shared by `run --out` (RowsWriter) and `serve`'s
// rotating rows file (RowStore): a whole line in one write(2) on an O_APPEND
// descriptor, EINTR retried, and a line that could only be written in part is
// cut off again so a reader never sees half a row glued to the next.
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
  std::string open(const std::string& path);
  void close();
  bool is_open() const { return fd_ >= 0; }

  // The file's real size (someone may have truncated or replaced it), 0 when unknown.
  std::uint64_t size() const;

  // Appends `line` (which ends in '\n'). Returns "" or why it failed
  // ("write failed: No space left on device"; a partial line that cannot be
  // cut off again adds "; cannot drop partial row: ...").
  std::string append(std::string_view line);

 private:
  int fd_ = -1;
};

}  // namespace lse::report
