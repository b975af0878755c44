// RowStore: ring and rotating file under separate locks, so a slow disk
// never holds up /api/v1/probes, and a scrape of the ring never holds up a
// probe thread's write. Rows are shared between ring and last-by-target.
#include "report/row_store.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

}  // namespace

struct RowStore::Impl {
  mutable std::mutex ring_mutex;
  std::deque<Row> ring;  // oldest at the front
  std::size_t capacity = 1;
  std::map<std::string, Row> last;

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
    const std::string error = file.open(settings.path);
    if (!error.empty()) note_error("rows file " + settings.path + ": cannot open: " + error);
    return error.empty();
  }

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
        std::find_if(ring.rbegin(), ring.rend(), [&](const Row& row) { return row->id == id; });
    if (newest != ring.rend()) return *newest;
    for (const auto& [target, row] : last)
      if (row->id == id) return row;
    return nullptr;
  }

  void write_line(const std::string& line) {
    std::lock_guard lock(file_mutex);
    if (settings.path.empty()) return;
    if (!file.is_open() && !open_file()) return;
    // The file's real size (not a counter): someone may have truncated or
    // replaced it under us.
    const std::uint64_t size = file.size();
    if (settings.max_size > 0 && size > 0 && size + line.size() > settings.max_size) {
      rotate();
      if (!file.is_open()) return;
    }
    if (const std::string error = file.append(line); !error.empty())
      note_error("rows file " + settings.path + ": " + error);
  }
};

RowStore::RowStore(std::size_t ring_capacity, config::Rows file_settings)
    : impl_(std::make_unique<Impl>()) {
  impl_->capacity = std::max<std::size_t>(ring_capacity, 1);
  if (!file_settings.path.empty()) {
    if (const std::string error = impl_->file.open(file_settings.path); !error.empty())
      throw std::runtime_error("rows file " + file_settings.path + ": cannot open: " + error);
  }
  impl_->settings = std::move(file_settings);
}

RowStore::~RowStore() = default;

void RowStore::add(const probe::ProbeResult& result) {
  if (result.warmup) return;
  auto row = std::make_shared<const probe::ProbeResult>(result);
  {
    std::lock_guard lock(impl_->ring_mutex);
    impl_->ring.push_back(row);
    while (impl_->ring.size() > impl_->capacity) impl_->ring.pop_front();
    impl_->last[row->target] = row;
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
  std::vector<Row> picked;
  {
    std::lock_guard lock(impl_->ring_mutex);
    picked.reserve(std::min(limit, impl_->ring.size()));
    for (auto it = impl_->ring.rbegin(); it != impl_->ring.rend() && picked.size() < limit; ++it)
      if (target.empty() || (*it)->target == target) picked.push_back(*it);
  }
  // Copies are made outside the lock; the rows themselves are immutable.
  std::vector<probe::ProbeResult> out;
  out.reserve(picked.size());
  for (const auto& r : picked) out.push_back(*r);
  return out;
}

std::map<std::string, probe::ProbeResult> RowStore::last_by_target() const {
  std::map<std::string, Row> picked;
  {
    std::lock_guard lock(impl_->ring_mutex);
    picked = impl_->last;
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
  {
    std::lock_guard lock(impl_->file_mutex);
    if (file_settings.path != impl_->settings.path) {
      JsonlAppender fresh;
      if (!file_settings.path.empty())
        if (const std::string error = fresh.open(file_settings.path); !error.empty())
          throw std::runtime_error("rows file " + file_settings.path + ": cannot open: " + error);
      impl_->file = std::move(fresh);
    }
    impl_->settings = std::move(file_settings);
  }
  std::lock_guard lock(impl_->ring_mutex);
  impl_->capacity = std::max<std::size_t>(ring_capacity, 1);
  while (impl_->ring.size() > impl_->capacity) impl_->ring.pop_front();
}

std::size_t RowStore::capacity() const {
  std::lock_guard lock(impl_->ring_mutex);
  return impl_->capacity;
}

std::size_t RowStore::size() const {
  std::lock_guard lock(impl_->ring_mutex);
  return impl_->ring.size();
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
