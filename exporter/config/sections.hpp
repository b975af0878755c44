// Internal to the config module: parsers of the `defaults:` and `targets:`
// sections (target.cpp) and of `metrics:` (metrics_section.cpp), called by
// the top-level parser (parse.cpp).
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/reader.hpp"

namespace lse::config::detail {

// What settings are checked against besides their own value: the top-level
// sections read before `defaults:` and `targets:`.
struct Context {
  std::map<std::string, Prompt> prompts;
  // False when `prompts:` had errors: a target naming a prompt that failed
  // to parse is not a second mistake.
  bool prompts_complete = true;
  Duration min_interval = kDefaultMinInterval;
  std::optional<Item> min_interval_item;  // where `min_interval:` is, when set
  std::vector<double> gap_bounds = Buckets{}.gap;
  std::optional<Item> gap_item;            // where `buckets.gap:` is, when set
  std::optional<Item> phase_buckets_item;  // where `buckets.phase:` is, when set
  std::optional<Item> max_series_item;     // where `metrics.max_series:` is, when set
  std::set<std::string> set_in_defaults;   // the keys `defaults:` sets
};

// The built-in Target values with `defaults:` applied on top; each target
// starts as a copy of it. Records in `context` which keys it set.
Target parse_defaults(const Reader& reader, const std::optional<Item>& defaults, Context& context);

// Every target, with secrets read and prompt names checked against the
// context's prompts. Errors are recorded key by key (Reader::attempt).
std::vector<Target> parse_targets(const Reader& reader, const Item& targets, const Target& defaults,
                                  const Context& context);

// `metrics:` and the older top-level `buckets:` (either, not both), read
// before the targets: their stall thresholds are checked against the gap
// buckets. Notes in `ctx` where the gap buckets and max_series are.
void parse_metrics_sections(const Reader& r, const Fields& top, Config& config, Context& ctx);

// metrics.max_series against config::series_count of the whole parsed
// config; the error is at max_series, or at `targets:` when the default
// limit is exceeded, and says how many series the config implies.
void check_max_series(const Reader& r, const Fields& top, const Config& config, const Context& ctx);

// `probe_endpoint:` (probe_endpoint.cpp).
ProbeEndpointOptions parse_probe_endpoint(const Reader& r, const Item& item);

// A header's value as `headers:` takes it: text, or `{env: NAME}` /
// `{file: path}` read like an API key (then `secret` is set).
std::string header_text_or_secret(const Reader& r, const Item& value, bool& secret);

// `otlp:` (otlp_section.cpp), with the OTEL_* variables the OTLP exporter
// specification names filling what the section leaves out.
OtlpOptions parse_otlp(const Reader& r, const Item& item);

}  // namespace lse::config::detail
