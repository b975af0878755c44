// /proc parsing for the process_* metrics (see process.hpp). Field numbers
// are those of proc(5).
#include "metrics/process.hpp"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>

#include "metrics/families.hpp"

namespace lse::metrics {
namespace {

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// The next space-separated field of `s`, consumed.
std::string_view next_field(std::string_view& s) {
  s = trim_left(s);
  const auto end = s.find_first_of(" \t\n");
  const std::string_view field = s.substr(0, end);
  s.remove_prefix(end == std::string_view::npos ? s.size() : end);
  return field;
}

std::optional<double> to_number(std::string_view field) {
  std::uint64_t v = 0;
  const auto r = std::from_chars(field.data(), field.data() + field.size(), v);
  if (r.ec != std::errc() || r.ptr != field.data() + field.size() || field.empty())
    return std::nullopt;
  return static_cast<double>(v);
}

std::optional<std::string> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Entries of /proc/self/fd, as client_golang counts them (the directory's own
// descriptor included).
std::optional<double> count_open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  double n = 0;
  while (const dirent* e = ::readdir(dir))
    if (e->d_name[0] != '.') ++n;
  ::closedir(dir);
  return n;
}

prometheus::MetricFamily one_value(const char* name, const char* help, prometheus::MetricType type,
                                   double value) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter)
    m.counter.value = value;
  else
    m.gauge.value = value;
  f.metric.push_back(std::move(m));
  return f;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text, double ticks_per_second,
                                        double page_size) {
  // "pid (comm) state ppid ...": comm ends at the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) return std::nullopt;
  std::string_view rest = text.substr(close + 1);
  // Fields from 3 (state) on; we want 14 utime, 15 stime, 22 starttime,
  // 23 vsize (bytes), 24 rss (pages).
  std::optional<double> utime, stime, start, vsize, rss;
  for (int field = 3; field <= 24; ++field) {
    const std::string_view f = next_field(rest);
    if (f.empty()) return std::nullopt;
    if (field == 14) utime = to_number(f);
    if (field == 15) stime = to_number(f);
    if (field == 22) start = to_number(f);
    if (field == 23) vsize = to_number(f);
    if (field == 24) rss = to_number(f);
  }
  if (!utime || !stime || !start || !vsize || !rss) return std::nullopt;
  return ProcStat{(*utime + *stime) / ticks_per_second, *vsize, *rss * page_size,
                  *start / ticks_per_second};
}

std::optional<double> parse_boot_time(std::string_view proc_stat) {
  while (!proc_stat.empty()) {
    const auto eol = proc_stat.find('\n');
    std::string_view line = proc_stat.substr(0, eol);
    proc_stat.remove_prefix(eol == std::string_view::npos ? proc_stat.size() : eol + 1);
    if (next_field(line) == "btime") return to_number(next_field(line));
  }
  return std::nullopt;
}

std::optional<double> parse_max_open_files(std::string_view limits) {
  constexpr std::string_view kKey = "Max open files";
  const auto at = limits.find(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = limits.substr(at + kKey.size());
  const std::string_view soft = next_field(rest);
  if (soft == "unlimited") return static_cast<double>(std::numeric_limits<std::uint64_t>::max());
  return to_number(soft);
}

ProcessStats read_process_stats() {
  ProcessStats s;
  const auto stat = read_file("/proc/self/stat");
  const auto proc = stat ? parse_proc_stat(*stat, static_cast<double>(::sysconf(_SC_CLK_TCK)),
                                           static_cast<double>(::sysconf(_SC_PAGESIZE)))
                         : std::nullopt;
  if (proc) {
    s.cpu_seconds = proc->cpu_seconds;
    s.resident_bytes = proc->resident_bytes;
    s.virtual_bytes = proc->virtual_bytes;
    const auto system = read_file("/proc/stat");
    if (const auto boot = system ? parse_boot_time(*system) : std::nullopt)
      s.start_time_seconds = *boot + proc->start_since_boot;
  }
  if (const auto limits = read_file("/proc/self/limits")) s.max_fds = parse_max_open_files(*limits);
  s.open_fds = count_open_fds();
  return s;
}

std::vector<prometheus::MetricFamily> process_families(const ProcessStats& s) {
  using prometheus::MetricType;
  struct Row {
    const char* name;
    const char* help;
    MetricType type;
    const std::optional<double>& value;
  };
  // Names and help texts as client_golang writes them.
  const Row rows[] = {
      {"process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
       MetricType::Counter, s.cpu_seconds},
      {"process_open_fds", "Number of open file descriptors.", MetricType::Gauge, s.open_fds},
      {"process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge, s.max_fds},
      {"process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge,
       s.virtual_bytes},
      {"process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
       s.resident_bytes},
      {"process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
       MetricType::Gauge, s.start_time_seconds},
  };
  // config::series_count counts these (metrics/families.hpp).
  static_assert(sizeof(rows) / sizeof(rows[0]) == kProcessSeries);
  std::vector<prometheus::MetricFamily> out;
  for (const Row& r : rows)
    if (r.value) out.push_back(one_value(r.name, r.help, r.type, *r.value));
  return out;
}

}  // namespace lse::metrics
