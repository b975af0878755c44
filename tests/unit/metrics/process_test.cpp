// process_* from /proc text: the parsers on sample files (a command name with
// spaces and parentheses, unlimited limits, garbage), and one reading of this
// very process.
#include "metrics/process.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "util/wall_clock.hpp"

namespace lse::metrics {
namespace {

// proc(5) fields 1..24+: utime 14 = 250 ticks, stime 15 = 50 ticks,
// starttime 22 = 123456 ticks, vsize 23 bytes, rss 24 pages.
constexpr const char* kStat =
    "4242 (llm stream) (x)) S 1 4242 4242 0 -1 4194560 12345 0 0 0 250 50 0 0 20 0 9 0 "
    "123456 734003200 5120 18446744073709551615 1 1 0 0 0 0 0 4096 17922 0 0 0 17 1 0 0 0 0 0\n";

TEST(ProcStat, FieldsAfterAWeirdCommandName) {
  const auto s = parse_proc_stat(kStat, 100, 4096);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);  // (250 + 50) / 100
  EXPECT_DOUBLE_EQ(s->virtual_bytes, 734003200);
  EXPECT_DOUBLE_EQ(s->resident_bytes, 5120.0 * 4096);
  EXPECT_DOUBLE_EQ(s->start_since_boot, 1234.56);
}

TEST(ProcStat, TruncatedOrGarbageIsNothing) {
  EXPECT_FALSE(parse_proc_stat("4242 (x) S 1 2 3", 100, 4096));
  EXPECT_FALSE(parse_proc_stat("no parenthesis at all", 100, 4096));
  EXPECT_FALSE(parse_proc_stat("", 100, 4096));
  std::string bad = kStat;
  bad.replace(bad.find(" 250 "), 5, " 2x0 ");
  EXPECT_FALSE(parse_proc_stat(bad, 100, 4096));
  EXPECT_FALSE(parse_proc_stat(kStat, 0, 4096));
}

TEST(ProcStat, BootTime) {
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\ncpu0 1 2 3\nintr 5\nctxt 9\nbtime 1700000000\n"
                            "processes 10\n"),
            1700000000.0);
  EXPECT_FALSE(parse_boot_time("cpu 1 2 3\nbtimes 5\n"));
  EXPECT_FALSE(parse_boot_time(""));
}

TEST(ProcLimits, MaxOpenFilesIsTheSoftLimit) {
  constexpr const char* kLimits =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max cpu time              unlimited            unlimited            seconds   \n"
      "Max open files            1024                 524288               files     \n"
      "Max address space         unlimited            unlimited            bytes     \n";
  EXPECT_EQ(parse_max_open_files(kLimits), 1024.0);
  EXPECT_EQ(parse_max_open_files("Max open files            unlimited            unlimited"),
            18446744073709551615.0);
  EXPECT_FALSE(parse_max_open_files("Max cpu time unlimited unlimited seconds\n"));
}

TEST(ProcessStats, ThisProcess) {
  const int extra = ::open("/dev/null", O_RDONLY);  // one more descriptor than before
  const ProcessStats before = read_process_stats();
  ::close(extra);
  const ProcessStats after = read_process_stats();
  ASSERT_TRUE(before.cpu_seconds && before.resident_bytes && before.virtual_bytes &&
              before.start_time_seconds && before.open_fds && before.max_fds);
  EXPECT_GE(*before.cpu_seconds, 0);
  EXPECT_GT(*before.resident_bytes, 1 << 20);
  EXPECT_GE(*before.virtual_bytes, *before.resident_bytes);
  EXPECT_GE(*before.open_fds, 4);  // stdin, stdout, stderr, /dev/null
  EXPECT_EQ(*after.open_fds, *before.open_fds - 1);
  EXPECT_GE(*before.max_fds, *before.open_fds);
  // This test binary started moments ago.
  const double now = wall_clock::unix_now();
  EXPECT_LE(*before.start_time_seconds, now + 1);
  EXPECT_GT(*before.start_time_seconds, now - 600);
  const auto families = process_families(before);
  ASSERT_EQ(families.size(), 6u);
  EXPECT_EQ(families[0].name, "process_cpu_seconds_total");
  EXPECT_EQ(families[0].type, prometheus::MetricType::Counter);
}

}  // namespace
}  // namespace lse::metrics
