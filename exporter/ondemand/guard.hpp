// Whether an on-demand probe (GET /probe?target=) may start now: at most
// probe_endpoint.max_concurrent at once, and one target's on-demand probes
// spaced by the config's min_interval (the floor the config puts under
// every interval, so /probe cannot probe a paid API faster than a schedule
// could). Scheduled probes are not counted: they keep their own rhythm.
// Pure: instants are handed in (seconds of a steady clock). Thread-safe
// (admit on the server thread, finish on a probe thread).
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace lse::ondemand {

struct Admission {
  enum class Verdict { go, off, too_soon, busy };
  Verdict verdict = Verdict::go;
  // too_soon: whole seconds until the target may be probed again (>= 1),
  // for Retry-After.
  unsigned retry_after_seconds = 0;
};

class Guard {
 public:
  // A probe of `target` asked for at `now`. go: it counts as running (and
  // as the target's latest start) until finish().
  Admission admit(const std::string& target, double now, double min_interval_seconds,
                  std::size_t max_concurrent);
  // One admitted probe ended (whatever its outcome).
  void finish();
  std::size_t running() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, double> last_start_;
  std::size_t running_ = 0;
};

}  // namespace lse::ondemand
