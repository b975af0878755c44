// RowStore: ring and rotating file under separate locks, so a slow disk
// never holds up /api/v1/probes, and a scrape of the ring never holds up a
// probe thread's write. Rows are shared between ring and last-by-target.
// The file follows its path: renamed or deleted under us (logrotate), it is
// opened again at the path.
#include "report/row_store.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "report/jsonl_appender.hpp"
#include "report/row_json.hpp"

namespace lse::report {
namespace {

using Row = std::shared_ptr<const probe::ProbeResult>;

std::string errno_text(int err) { return std::strerror(err); }

std::string numbered(const std::string& path, int n) { return path + "." + std::to_string(n); }

// Heap bytes of a string beyond the object itself (none while it fits in
// libstdc++'s 15-byte inline buffer).
std::size_t heap_of(const std::string& s) {
  constexpr std::size_t kInline = 15;
  return s.capacity() > kInline ? s.capacity() + 1 : 0;
}

template <typename T>
std::size_t heap_of(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

}  // namespace

std::size_t row_memory_bytes(const probe::ProbeResult& r) {
  // make_shared: the result and its control block (two counts, vtable) in one allocation.
  constexpr std::size_t kControlBlock = 16 + sizeof(void*);
  std::size_t bytes = sizeof(probe::ProbeResult) + kControlBlock;
  for (const std::string* s :
       {&r.id, &r.target, &r.model, &r.prompt, &r.host, &r.error_detail, &r.content_encoding,
        &r.content_type, &r.http_version, &r.finish_reason, &r.h2_error})
    bytes += heap_of(*s);
  return bytes + heap_of(r.gaps) + heap_of(r.stall_details);
}

struct RowStore::Impl {
  struct Kept {
    Row row;
    std::size_t bytes;  // row_memory_bytes(*row)
  };
  mutable std::mutex ring_mutex;
  std::deque<Kept> ring;  // oldest at the front
  std::size_t capacity = 1;
  std::uint64_t memory = config::Rows{}.memory;
  std::uint64_t ring_bytes = 0;  // sum of the ring's rows' bytes
  // Each target's newest row, also when it has left the ring (its bytes are
  // then in outside_bytes: memory bounds them too).
  struct Last {
    Row row;
    std::size_t bytes = 0;
    bool outside = false;  // no longer in the ring
  };
  std::map<std::string, Last> last;
  std::uint64_t outside_bytes = 0;

  // The row a target just added is its newest. Caller holds ring_mutex.
  void set_last(const Row& row, std::size_t bytes) {
    Last& entry = last[row->target];
    if (entry.outside) outside_bytes -= entry.bytes;
    entry = {row, bytes, false};
  }

  // Oldest first, until both bounds hold; the newest row always stays. A
  // row that is still its target's newest stays held (outside the ring).
  // Caller holds ring_mutex.
  void evict() {
    while (ring.size() > 1 && (ring.size() > capacity || ring_bytes + outside_bytes > memory)) {
      const Kept& oldest = ring.front();
      ring_bytes -= oldest.bytes;
      if (auto it = last.find(oldest.row->target);
          it != last.end() && it->second.row == oldest.row) {
        it->second.outside = true;
        outside_bytes += oldest.bytes;
      }
      ring.pop_front();
    }
  }

  mutable std::mutex file_mutex;
  config::Rows settings;
  JsonlAppender file;
  std::uint64_t errors = 0;
  std::string last_error;
  RowStore::WriteErrorSink error_sink;

  // Caller holds file_mutex. The sink hears every error; it decides what
  // to log (the service logs each distinct message once).
  void note_error(std::string message) {
    ++errors;
    if (error_sink) error_sink(message);
    last_error = std::move(message);
  }

  // path -> path.1 -> ... -> path.keep; anything older is deleted. Caller
  // holds file_mutex. Leaves the fresh file open, or none (retried on the
  // next row) when it cannot be created.
  void rotate() {
    const std::string& path = settings.path;
    file.close();
    const int keep = std::max(settings.keep, 0);
    if (keep == 0) {
      if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        note_error("rows file " + path + ": cannot remove for rotation: " + errno_text(errno));
    } else {
      for (int i = keep - 1; i >= 1; --i)
        if (::rename(numbered(path, i).c_str(), numbered(path, i + 1).c_str()) != 0 &&
            errno != ENOENT)
          note_error("rows file " + numbered(path, i) + ": cannot rotate: " + errno_text(errno));
      if (::rename(path.c_str(), numbered(path, 1).c_str()) != 0)
        note_error("rows file " + path + ": cannot rotate: " + errno_text(errno));
    }
    remove_beyond(keep);
    open_file();
  }

  // Caller holds file_mutex.
  bool open_file() {
    const std::string error = file.open(settings.path, true);
    if (!error.empty()) note_error("rows file " + settings.path + ": cannot open: " + error);
    return error.empty();
  }

  // The path names another file than the open one, or none (logrotate's
  // `create` renamed it, or someone deleted it): open the path again, so the
  // next row lands where readers look. Until that works the rows go on into
  // the open file while it still has a name (they are in exactly one file);
  // a deleted one loses them, and every such row is counted. Caller holds
  // file_mutex.
  void reopen() {
    JsonlAppender fresh;
    if (const std::string error = fresh.open(settings.path, true); !error.empty()) {
      note_error("rows file " + settings.path +
                 ": cannot reopen after it was moved or deleted: " + error);
      return;
    }
    file = std::move(fresh);
  }

  // Whether the path still names the open file is checked at most once a
  // second (a stat(2)), and now when `force` (reload, SIGHUP); a deleted
  // file is noticed at once, by the fstat(2) every row makes anyway. Caller
  // holds file_mutex.
  void follow_path(bool force) {
    if (!file.is_open()) return;
    const auto now = std::chrono::steady_clock::now();
    if (file.is_deleted()) {
      reopen();
    } else if (force || now >= next_path_check) {
      if (!file.is_at(settings.path)) reopen();
    } else {
      return;
    }
    next_path_check = now + std::chrono::seconds(1);
  }
  std::chrono::steady_clock::time_point next_path_check{};

  // A smaller `keep` after a reload would otherwise leave old files behind forever.
  void remove_beyond(int keep) {
    namespace fs = std::filesystem;
    const fs::path p(settings.path);
    const std::string prefix = p.filename().string() + ".";
    std::error_code ec;
    fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string suffix = name.substr(prefix.size());
      if (suffix.size() > 9 ||
          !std::all_of(suffix.begin(), suffix.end(), [](char c) { return c >= '0' && c <= '9'; }))
        continue;
      if (std::stoi(suffix) > keep) fs::remove(it->path(), ec);
    }
  }

  // The kept row with this id, newest first (an id is unique, but the newest
  // is the one to trust); null when none.
  Row find(std::string_view id) const {
    if (id.empty()) return nullptr;
    std::lock_guard lock(ring_mutex);
    const auto newest =
        std::find_if(ring.rbegin(), ring.rend(), [&](const Kept& k) { return k.row->id == id; });
    if (newest != ring.rend()) return newest->row;
    for (const auto& [target, entry] : last)
      if (entry.row->id == id) return entry.row;
    return nullptr;
  }

  void write_line(const std::string& line) {
    std::lock_guard lock(file_mutex);
    if (settings.path.empty()) return;
    if (!file.is_open() && !open_file()) return;
    follow_path(false);
    // The file's real size (not a counter): someone may have truncated or
    // replaced it under us.
    const std::uint64_t size = file.size();
    if (settings.max_size > 0 && size > 0 && size + line.size() > settings.max_size) {
      rotate();
      if (!file.is_open()) return;
    }
    if (const std::string error = file.append(line); !error.empty()) {
      note_error("rows file " + settings.path + ": " + error);
      return;
    }
    // Deleted between the check and the write: the line went nowhere a
    // reader can find it, so it goes again into the file now at the path.
    if (file.is_deleted()) {
      reopen();
      if (file.is_deleted()) {
        note_error("rows file " + settings.path + ": a row went into the deleted file");
      } else if (const std::string error = file.append(line); !error.empty()) {
        note_error("rows file " + settings.path + ": " + error);
      }
    }
  }
};

RowStore::RowStore(std::size_t ring_capacity, config::Rows file_settings)
    : impl_(std::make_unique<Impl>()) {
  impl_->capacity = std::max<std::size_t>(ring_capacity, 1);
  impl_->memory = file_settings.memory;
  if (!file_settings.path.empty()) {
    if (const std::string error = impl_->file.open(file_settings.path, true); !error.empty())
      throw std::runtime_error("rows file " + file_settings.path + ": cannot open: " + error);
  }
  impl_->settings = std::move(file_settings);
}

RowStore::~RowStore() = default;

void RowStore::add(const probe::ProbeResult& result) {
  if (result.warmup) return;
  auto row = std::make_shared<const probe::ProbeResult>(result);
  const std::size_t bytes = row_memory_bytes(*row);
  {
    std::lock_guard lock(impl_->ring_mutex);
    impl_->ring.push_back({row, bytes});
    impl_->ring_bytes += bytes;
    impl_->set_last(row, bytes);
    impl_->evict();
  }
  bool to_file;
  {
    std::lock_guard lock(impl_->file_mutex);
    to_file = !impl_->settings.path.empty();
  }
  if (to_file) {
    std::string line = to_row_json(*row);
    line += '\n';
    impl_->write_line(line);
  }
}

std::vector<probe::ProbeResult> RowStore::latest(std::string_view target, std::size_t limit) const {
  std::vector<probe::ProbeResult> out;
  visit_latest(target, limit, {}, [&](const probe::ProbeResult& r) {
    out.push_back(r);
    return true;
  });
  return out;
}

bool RowStore::visit_latest(std::string_view target, std::size_t limit, std::string_view older_than,
                            const std::function<bool(const probe::ProbeResult&)>& visit) const {
  std::vector<Row> picked;
  {
    std::lock_guard lock(impl_->ring_mutex);
    auto it = impl_->ring.rbegin();
    if (!older_than.empty()) {
      it = std::find_if(it, impl_->ring.rend(),
                        [&](const Impl::Kept& k) { return k.row->id == older_than; });
      if (it == impl_->ring.rend()) return false;
      ++it;
    }
    picked.reserve(std::min(limit, impl_->ring.size()));
    for (; it != impl_->ring.rend() && picked.size() < limit; ++it)
      if (target.empty() || it->row->target == target) picked.push_back(it->row);
  }
  // Visited outside the lock (the rows themselves are immutable): a slow
  // reader never holds up a probe thread's add().
  for (const auto& r : picked)
    if (!visit(*r)) break;
  return true;
}

std::map<std::string, probe::ProbeResult> RowStore::last_by_target() const {
  std::map<std::string, Row> picked;
  {
    std::lock_guard lock(impl_->ring_mutex);
    for (const auto& [name, entry] : impl_->last) picked.emplace(name, entry.row);
  }
  std::map<std::string, probe::ProbeResult> out;
  for (const auto& [name, r] : picked) out.emplace(name, *r);
  return out;
}

std::optional<probe::ProbeResult> RowStore::find_result(std::string_view id) const {
  const Row row = impl_->find(id);
  if (!row) return std::nullopt;
  return *row;
}

std::optional<std::string> RowStore::find(std::string_view id) const {
  const Row row = impl_->find(id);
  if (!row) return std::nullopt;
  return to_row_json(*row);
}

void RowStore::reconfigure(std::size_t ring_capacity, config::Rows file_settings) {
  const std::uint64_t memory = file_settings.memory;
  {
    std::lock_guard lock(impl_->file_mutex);
    if (file_settings.path != impl_->settings.path) {
      JsonlAppender fresh;
      if (!file_settings.path.empty())
        if (const std::string error = fresh.open(file_settings.path, true); !error.empty())
          throw std::runtime_error("rows file " + file_settings.path + ": cannot open: " + error);
      impl_->file = std::move(fresh);
    }
    impl_->settings = std::move(file_settings);
    impl_->follow_path(true);  // a reload (SIGHUP) after a rotation reopens at once
  }
  std::lock_guard lock(impl_->ring_mutex);
  impl_->capacity = std::max<std::size_t>(ring_capacity, 1);
  impl_->memory = memory;
  impl_->evict();
}

std::size_t RowStore::capacity() const {
  std::lock_guard lock(impl_->ring_mutex);
  return impl_->capacity;
}

std::size_t RowStore::size() const {
  std::lock_guard lock(impl_->ring_mutex);
  return impl_->ring.size();
}

std::uint64_t RowStore::memory_bytes() const {
  std::lock_guard lock(impl_->ring_mutex);
  return impl_->ring_bytes + impl_->outside_bytes;
}

std::uint64_t RowStore::memory_limit() const {
  std::lock_guard lock(impl_->ring_mutex);
  return impl_->memory;
}

void RowStore::on_write_error(WriteErrorSink sink) {
  std::lock_guard lock(impl_->file_mutex);
  impl_->error_sink = std::move(sink);
}

std::uint64_t RowStore::write_errors() const {
  std::lock_guard lock(impl_->file_mutex);
  return impl_->errors;
}

std::string RowStore::last_write_error() const {
  std::lock_guard lock(impl_->file_mutex);
  return impl_->last_error;
}

}  // namespace lse::report
