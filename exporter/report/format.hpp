// How reports write numbers for people: times as "20.3 ms" / "2.41 s",
// ratios with one decimal, shares as percentages.
#pragma once
#include <string>

namespace lse::report {

std::string format_seconds(double seconds);         // "20.3 ms", "2.41 s"
std::string format_signed_seconds(double seconds);  // "+15.0 ms", "-1.20 s"
std::string format_ratio(double ratio);             // "4.3"
std::string format_percent(double share);           // "25%"
std::string format_number(double value);            // "12", "12.5"

}  // namespace lse::report
