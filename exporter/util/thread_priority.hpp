// Threads that must never delay the probe thread's reads (the HTTP server
// that renders /metrics, the bcrypt pool) step below it, whatever the
// process's scheduling class (issue 11 §3: a scrape must not move the clock).
#pragma once

namespace lse::util {

// Moves the calling thread below the probe thread: out of a real-time policy
// (a process started under chrt, or a pod granted CAP_SYS_NICE, runs every
// thread SCHED_FIFO/RR, where nice means nothing) into SCHED_OTHER, then to
// nice 10; and names it `name` (at most 15 characters; shown by top -H and
// in /proc/PID/task/TID/comm). Lowering needs no privilege; a step the
// system refuses is skipped (the thread keeps running as it was).
void step_below_probes(const char* name);

}  // namespace lse::util
