// One probe as one raw JSONL row (DESIGN §6) and back. The row is the
// exchange format between `serve` (/api/v1/probes, rotating file), `run
// --out` and `compare`, so writer and reader live together here.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "probe/result.hpp"

namespace lse::report {

// One row, no trailing newline. Times are milliseconds with 3 decimals
// (`*_ms`, `gaps_ms`, `phases_ms`); `ts` is unix seconds with 3 decimals.
// Missing values (no TTFT, unknown usage, no HTTP status, empty
// finish_reason/host) are null; `reason` is "" for a successful probe;
// `phases_ms` holds only the phases the probe went through.
std::string to_row_json(const probe::ProbeResult& result);

// Inverse of to_row_json for the fields a row has (times come back in
// seconds, rounded to the row's microsecond precision). Unknown keys are
// ignored so older readers accept newer rows. On malformed input returns
// nullopt and, when `error` is given, a one-line reason.
std::optional<probe::ProbeResult> parse_row_json(std::string_view line, std::string* error);

}  // namespace lse::report
