// process_* metrics of the exporter itself, named and computed as every
// Prometheus client library does on Linux (client_golang's process
// collector): CPU seconds, resident and virtual memory, open and maximum
// file descriptors, start time. Read from /proc at scrape time; the parsers
// of /proc text are pure, reading the files is the thin shell.
#pragma once
#include <prometheus/metric_family.h>

#include <optional>
#include <string_view>
#include <vector>

namespace lse::metrics {

// One reading; each value nullopt when its /proc file could not be read.
struct ProcessStats {
  std::optional<double> cpu_seconds;         // user + system
  std::optional<double> resident_bytes;      // RSS
  std::optional<double> virtual_bytes;       // VSZ
  std::optional<double> start_time_seconds;  // unix time
  std::optional<double> open_fds;
  std::optional<double> max_fds;  // soft limit of open files
};

// What /proc/<pid>/stat says, in seconds and bytes. `start_since_boot` is
// seconds from boot to the process start.
struct ProcStat {
  double cpu_seconds = 0;
  double virtual_bytes = 0;
  double resident_bytes = 0;
  double start_since_boot = 0;
};

// /proc/<pid>/stat (the command name may hold spaces and parentheses);
// `ticks_per_second` is sysconf(_SC_CLK_TCK), `page_size` sysconf(_SC_PAGESIZE).
std::optional<ProcStat> parse_proc_stat(std::string_view text, double ticks_per_second,
                                        double page_size);

// The `btime` line of /proc/stat: unix time of the boot.
std::optional<double> parse_boot_time(std::string_view proc_stat);

// The soft "Max open files" of /proc/<pid>/limits; "unlimited" is the
// largest 64-bit value, as client_golang reports it.
std::optional<double> parse_max_open_files(std::string_view limits);

// Reads /proc/self/stat, /proc/stat, /proc/self/limits and /proc/self/fd.
ProcessStats read_process_stats();

// The process_* families of one reading (families without a value are left out).
std::vector<prometheus::MetricFamily> process_families(const ProcessStats& stats);

}  // namespace lse::metrics
