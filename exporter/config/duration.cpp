// Durations as written in the config: Prometheus-style unit suffixes with
// optional fractions and compounds ("250ms", "1.5s", "1m30s"), and the
// inverse formatting used by dump_redacted. A bare number is rejected on
// purpose: "interval: 60" could mean seconds or milliseconds.
#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "config/config.hpp"

namespace lse::config {
namespace {

struct Unit {
  std::string_view suffix;
  std::int64_t ns;
  int rank;  // compounds must go from larger to smaller units
};

// Longer suffixes first so "ms" is not read as "m" followed by garbage.
constexpr Unit kUnits[] = {
    {"ms", 1'000'000, 3},         {"us", 1'000, 2},
    {"\xC2\xB5s", 1'000, 2},      {"ns", 1, 1},
    {"d", 86'400'000'000'000, 7}, {"h", 3'600'000'000'000, 6},
    {"m", 60'000'000'000, 5},     {"s", 1'000'000'000, 4},
};

// 128 bits so that 19 digits times a day in nanoseconds cannot overflow
// before the range check; __extension__ keeps -Wpedantic quiet about the
// GCC/Clang builtin type.
__extension__ using Wide = __int128;

}  // namespace

std::optional<Duration> parse_duration(const std::string& text) {
  std::string_view s = text;
  if (s.empty()) return std::nullopt;
  Wide total = 0;
  int last_rank = 100;
  while (!s.empty()) {
    // <digits>[.<digits>] with at least one digit overall.
    std::size_t i = 0;
    Wide whole = 0;
    std::size_t whole_digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (++whole_digits > 19) return std::nullopt;
      whole = whole * 10 + (s[i++] - '0');
    }
    Wide frac = 0, frac_scale = 1;
    std::size_t frac_digits = 0;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        // Digits past nanosecond precision of the largest unit cannot matter.
        if (frac_digits < 18) {
          frac = frac * 10 + (s[i] - '0');
          frac_scale *= 10;
        }
        ++frac_digits;
        ++i;
      }
    }
    if (whole_digits == 0 && frac_digits == 0) return std::nullopt;
    s.remove_prefix(i);
    const Unit* unit = nullptr;
    for (const auto& u : kUnits) {
      if (s.substr(0, u.suffix.size()) == u.suffix) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr || unit->rank >= last_rank) return std::nullopt;
    last_rank = unit->rank;
    s.remove_prefix(unit->suffix.size());
    total += whole * unit->ns + (frac * unit->ns + frac_scale / 2) / frac_scale;
    if (total > std::numeric_limits<std::int64_t>::max()) return std::nullopt;
  }
  return Duration(static_cast<std::int64_t>(total));
}

std::string format_duration(Duration d) {
  std::int64_t ns = d.count();
  if (ns == 0) return "0s";
  if (ns < 0) return "-" + format_duration(Duration(-ns));  // never produced by parse
  // One unit with a decimal fraction: 1.5ms, 250ms, 2.25s.
  auto with_fraction = [](std::int64_t value, std::int64_t unit, int digits,
                          std::string_view suffix) {
    std::string out = std::to_string(value / unit);
    if (std::int64_t rem = value % unit) {
      std::string f = fmt::format("{:0{}}", rem, digits);
      while (!f.empty() && f.back() == '0') f.pop_back();
      out += "." + f;
    }
    return out + std::string(suffix);
  };
  if (ns < 1'000) return std::to_string(ns) + "ns";
  if (ns < 1'000'000) return with_fraction(ns, 1'000, 3, "us");
  if (ns < 1'000'000'000) return with_fraction(ns, 1'000'000, 6, "ms");
  // Hours and minutes as whole compounds, seconds carry the fraction: 1m30s, 1h0.5s.
  std::string out;
  constexpr std::int64_t kHour = 3'600'000'000'000, kMinute = 60'000'000'000;
  if (ns >= kHour) {
    out += std::to_string(ns / kHour) + "h";
    ns %= kHour;
  }
  if (ns >= kMinute) {
    out += std::to_string(ns / kMinute) + "m";
    ns %= kMinute;
  }
  if (ns > 0) out += with_fraction(ns, 1'000'000'000, 9, "s");
  return out;
}

}  // namespace lse::config
