// Probe lanes: the probe threads of `serve`. With more than one, every
// target is bound to one lane by its name (so a reload keeps a target on the
// lane it ran on), and every series is written by one thread. Pure.
#pragma once
#include <cstddef>
#include <string_view>

#include "config/config.hpp"

namespace lse::schedule {

// The lane of `target` among `lanes` (FNV-1a of the name, mixed so that it
// does not follow the shard: the same in every run, so logs and figures
// from two runs bind targets alike).
std::size_t lane_of(std::string_view target, std::size_t lanes);

// Lanes for `targets` targets on `cores` cores when the operator did not
// say (--probe.threads 0): one per 250 targets, at most one per core, at
// least one. One lane carries ~250 streams of 50 chunks/s in a quarter of a
// core; past that a /metrics render or another tenant on the same core
// delays reads (tests/bench/PERFORMANCE.md, issue 11).
std::size_t auto_lanes(std::size_t targets, std::size_t cores);

// `all` with only the targets of lane `lane`.
config::Config lane_config(const config::Config& all, std::size_t lane, std::size_t lanes);

}  // namespace lse::schedule
