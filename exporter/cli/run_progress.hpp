// Progress of `run` on stderr: a redrawn line on a terminal, plain lines
// otherwise, with the elapsed time and an ETA.
#pragma once
#include <fmt/format.h>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

#include "cli/run_command.hpp"
#include "probe/result.hpp"
#include "report/format.hpp"

namespace lse::cli {

// "1:05", "1:02:03".
std::string clock_text(double seconds);

// Progress on stderr: a redrawn line on a terminal, plain lines otherwise.
class Progress {
 public:
  Progress(std::size_t measured, std::size_t warmup, bool tty)
      : measured_total_(measured),
        warmup_total_(warmup),
        tty_(tty),
        start_(std::chrono::steady_clock::now()) {}

  bool tty() const { return tty_; }

  void completed(const probe::ProbeResult& r, const PlanItem& item) {
    if (item.warmup)
      ++warmup_done_;
    else
      ++measured_done_;
    last_ = describe(r, item);
    if (tty_) {
      redraw();
    } else {
      std::fprintf(stderr, "%s elapsed=%s eta=%s\n", last_.c_str(), clock_text(elapsed()).c_str(),
                   clock_text(eta()).c_str());
      std::fflush(stderr);
    }
  }

  void redraw() {
    if (!tty_) return;
    const std::string line =
        fmt::format("{}  ·  elapsed {}  ·  ETA {}", last_.empty() ? "starting" : last_,
                    clock_text(elapsed()), clock_text(eta()));
    std::fprintf(stderr, "\r\x1b[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }

  // A line of its own (e.g. a write error) between progress lines.
  void note(const std::string& line) {
    if (tty_ && drawn_) std::fprintf(stderr, "\r\x1b[K");
    std::fprintf(stderr, "%s\n", line.c_str());
    drawn_ = false;
    redraw();
  }

  void finish() {
    if (tty_ && drawn_) std::fprintf(stderr, "\n");
    std::fflush(stderr);
    drawn_ = false;
  }

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  double eta() const {
    const std::size_t done = measured_done_ + warmup_done_;
    const std::size_t total = measured_total_ + warmup_total_;
    if (done == 0) return 0;
    return elapsed() / static_cast<double>(done) * static_cast<double>(total - done);
  }

  std::string describe(const probe::ProbeResult& r, const PlanItem& item) const {
    std::string head = item.warmup ? fmt::format("warmup {}/{}", warmup_done_, warmup_total_)
                                   : fmt::format("run {}/{}", measured_done_, measured_total_);
    std::string what;
    if (r.ok)
      what = fmt::format("ok ttft={} chunks={} stalls={}",
                         r.ttft ? report::format_seconds(*r.ttft) : "-", r.chunks, r.stalls);
    else
      what = fmt::format("FAILED {}{}", probe::to_string(r.reason),
                         r.error_detail.empty() ? "" : ": " + r.error_detail);
    return fmt::format("{} target={} prompt={} {}", head, r.target, r.prompt, what);
  }

  std::size_t measured_total_, warmup_total_;
  std::size_t measured_done_ = 0, warmup_done_ = 0;
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::string last_;
};

}  // namespace lse::cli
