// The wall clock, for what people and other systems read: row timestamps,
// log lines, report headers, file names. Never for measuring: the probe's
// clock is std::chrono::steady_clock (DESIGN §2).
#pragma once
#include <string>

namespace lse::wall_clock {

// Seconds since the Unix epoch, with sub-second precision.
double unix_now();

// `unix_seconds` in UTC through strftime(3) `format`, e.g. "%Y-%m-%dT%H:%M:%S".
std::string format_utc(double unix_seconds, const char* format);

}  // namespace lse::wall_clock
