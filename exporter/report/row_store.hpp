// The latest raw rows of `serve` (DESIGN §6): an in-memory ring for
// /api/v1/probes and the landing page, bounded by rows (`rows.ring`) and by
// their real size in bytes (`rows.memory`), plus the optional rotating JSONL file
// (`rows: {path, max_size, keep}`). Thread-safe: probe threads add, the
// server thread reads, the reload path reconfigures.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "probe/result.hpp"

namespace lse::report {

// The heap a kept row takes (the result, its strings and vectors, the
// shared_ptr's control block): what rows.memory bounds.
std::size_t row_memory_bytes(const probe::ProbeResult& row);

class RowStore {
 public:
  // Opens (appending to) `file_settings.path` when it is not empty; throws
  // std::runtime_error naming the path when it cannot, or when it is not a
  // regular file (a FIFO is refused, never waited on). At most
  // `ring_capacity` rows are kept in the ring, and at most
  // `file_settings.memory` bytes of rows in all (the ring's and each
  // target's newest row, kept for the landing page after it left the
  // ring), the oldest leaving first; the newest row always stays.
  RowStore(std::size_t ring_capacity, config::Rows file_settings);
  ~RowStore();
  RowStore(const RowStore&) = delete;
  RowStore& operator=(const RowStore&) = delete;

  // Stores one finished probe and appends its row to the file (one write(2)
  // of the whole line, so a crash loses at most that row). Warmup results
  // are not rows and are ignored. File errors never throw: probing goes on,
  // and write_errors()/last_write_error() tell.
  void add(const probe::ProbeResult& result);

  // Newest first, at most `limit`, only `target`'s rows unless it is empty.
  std::vector<probe::ProbeResult> latest(std::string_view target, std::size_t limit) const;

  // The same rows handed to `visit` one at a time, without copies (a row of
  // 100,000 gaps is 800 kB), until it returns false. With `older_than` (an
  // id) only the rows kept before that one; false, visiting nothing, when
  // no kept row has that id. `visit` runs outside the store's locks.
  bool visit_latest(std::string_view target, std::size_t limit, std::string_view older_than,
                    const std::function<bool(const probe::ProbeResult&)>& visit) const;

  // The newest row of every target seen since start (not bounded by the ring).
  std::map<std::string, probe::ProbeResult> last_by_target() const;

  // The kept probe (in the ring, or the newest of its target) whose
  // ProbeResult::id is `id`: its row as a JSON line without the newline
  // (to_row_json), or nullopt. An empty id finds nothing.
  std::optional<std::string> find(std::string_view id) const;
  // The same probe as a result, for its page.
  std::optional<probe::ProbeResult> find_result(std::string_view id) const;

  // On reload. Shrinking the ring (ring_capacity or file_settings.memory)
  // drops the oldest rows. A new path is opened
  // before the old file is let go; on failure the old file stays in use and
  // std::runtime_error is thrown. max_size/keep apply from the next row.
  // The same path is opened again when it no longer names the open file
  // (renamed or deleted since: a SIGHUP after logrotate), as add() also
  // does when it notices (at most a second later; at once when deleted).
  void reconfigure(std::size_t ring_capacity, config::Rows file_settings);

  // Called (under the store's file lock, from the thread that added the
  // row) with the secret-free message of every failed file operation.
  using WriteErrorSink = std::function<void(const std::string& message)>;
  void on_write_error(WriteErrorSink sink);

  std::size_t capacity() const;
  std::size_t size() const;
  // What the kept rows take by row_memory_bytes() (the ring's, and each
  // target's newest that has left it), and its bound (rows.memory).
  std::uint64_t memory_bytes() const;
  std::uint64_t memory_limit() const;
  std::uint64_t write_errors() const;
  std::string last_write_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lse::report
