// RowStore: ring and rotating file under separate locks, so a slow disk
// never holds up /api/v1/probes, and a scrape of the ring never holds up a
// probe thread's write. Rows are shared between ring and last-by-target.
#include "report/row_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "report/row_json.hpp"

namespace lse::report {
namespace {

using Row = std::shared_ptr<const probe::ProbeResult>;

std::string errno_text(int err) { return std::strerror(err); }

int open_append(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

std::string numbered(const std::string& path, int n) { return path + "." + std::to_string(n); }

}  // namespace

struct RowStore::Impl {
  mutable std::mutex ring_mutex;
  std::deque<Row> ring;  // oldest at the front
  std::size_t capacity = 1;
  std::map<std::string, Row> last;

  mutable std::mutex file_mutex;
  config::Rows settings;
  int fd = -1;
  std::uint64_t errors = 0;
  std::string last_error;

  ~Impl() {
    if (fd >= 0) ::close(fd);
  }

  void note_error(std::string message) {
    ++errors;
    last_error = std::move(message);
  }

  // path -> path.1 -> ... -> path.keep; anything older is deleted. Caller
  // holds file_mutex. Leaves fd open on the fresh file, or -1 (retried on
  // the next row) when it cannot be created.
  void rotate() {
    const std::string& path = settings.path;
    ::close(fd);
    fd = -1;
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
    fd = open_append(path);
    if (fd < 0) note_error("rows file " + path + ": cannot open: " + errno_text(errno));
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

  void write_line(const std::string& line) {
    std::lock_guard lock(file_mutex);
    if (settings.path.empty()) return;
    if (fd < 0) {
      fd = open_append(settings.path);
      if (fd < 0) {
        note_error("rows file " + settings.path + ": cannot open: " + errno_text(errno));
        return;
      }
    }
    // The file's real size (not a counter): someone may have truncated or
    // replaced it under us.
    struct stat st {};
    std::uint64_t size = ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
    if (settings.max_size > 0 && size > 0 && size + line.size() > settings.max_size) {
      rotate();
      if (fd < 0) return;
      size = 0;
    }
    // One write(2) per line; the loop only continues after a short write.
    std::size_t done = 0;
    while (done < line.size()) {
      ssize_t n = ::write(fd, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        note_error("rows file " + settings.path +
                   ": write failed: " + errno_text(n < 0 ? errno : EIO));
        // Drop the partial row so readers never see half a line glued to the next.
        if (done > 0 && ::ftruncate(fd, static_cast<off_t>(size)) != 0)
          note_error("rows file " + settings.path +
                     ": cannot drop partial row: " + errno_text(errno));
        return;
      }
      done += static_cast<std::size_t>(n);
    }
  }
};

RowStore::RowStore(std::size_t ring_capacity, config::Rows file_settings)
    : impl_(std::make_unique<Impl>()) {
  impl_->capacity = std::max<std::size_t>(ring_capacity, 1);
  if (!file_settings.path.empty()) {
    impl_->fd = open_append(file_settings.path);
    if (impl_->fd < 0)
      throw std::runtime_error("rows file " + file_settings.path +
                               ": cannot open: " + errno_text(errno));
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

void RowStore::reconfigure(std::size_t ring_capacity, config::Rows file_settings) {
  {
    std::lock_guard lock(impl_->file_mutex);
    if (file_settings.path != impl_->settings.path) {
      int fd = -1;
      if (!file_settings.path.empty()) {
        fd = open_append(file_settings.path);
        if (fd < 0)
          throw std::runtime_error("rows file " + file_settings.path +
                                   ": cannot open: " + errno_text(errno));
      }
      if (impl_->fd >= 0) ::close(impl_->fd);
      impl_->fd = fd;
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

std::uint64_t RowStore::write_errors() const {
  std::lock_guard lock(impl_->file_mutex);
  return impl_->errors;
}

std::string RowStore::last_write_error() const {
  std::lock_guard lock(impl_->file_mutex);
  return impl_->last_error;
}

}  // namespace lse::report
