// The probers of `run`, per target, shared by the worker slots. A slot takes
// one for the target of its next plan item and gives it back when the probe
// ends; a prober given back keeps its warm keep-alive connection for the next
// probe of that target, whichever slot runs it. Memory and sockets grow with
// the work, not with concurrency × targets: at most `concurrency` probers are
// busy; idle, each target keeps one (its warm connection: a probe that had
// to connect again would count connect and TLS in its TTFT, DESIGN §2) and
// at most `max_idle` spares are kept beyond those, the one idle for the
// longest going first (its connection closes).
//
// Free of sockets and clocks: P is anything with cancel() (probe::Prober in
// `run`, a stand-in in the tests); the factory builds one for a target.
#pragma once
#include <utility>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <stdexcept>
#include <vector>

namespace lse::probe {

template <class P>
class ProberPool {
 public:
  using Factory = std::function<std::unique_ptr<P>(std::size_t target)>;

  ProberPool(std::size_t max_idle, Factory make) : max_idle_(max_idle), make_(std::move(make)) {}

  // An idle prober of `target` (the one given back last: its connection is
  // the likeliest still open), or a new one from the factory.
  P& acquire(std::size_t target) {
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
      if (!it->busy && it->target == target) {
        it->busy = true;
        leave_idle(target);
        // Most recently used at the back: move the entry there.
        entries_.splice(entries_.end(), entries_, std::prev(it.base()));
        return *entries_.back().prober;
      }
    entries_.push_back({target, make_(target), true});
    ++created_;
    return *entries_.back().prober;
  }

  // Gives back what acquire() handed out; trims the spare idle ones.
  void release(P& prober) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->prober.get() == &prober) {
        if (!it->busy) throw std::logic_error("ProberPool: released twice");
        it->busy = false;
        enter_idle(it->target);
        entries_.splice(entries_.end(), entries_, it);
        trim();
        return;
      }
    throw std::logic_error("ProberPool: not from this pool");
  }

  // Adds a prober built elsewhere as idle (`run` builds one per target up
  // front, so that a bad URL or TLS file fails before the first probe).
  void adopt(std::size_t target, std::unique_ptr<P> prober) {
    entries_.push_back({target, std::move(prober), false});
    enter_idle(target);
    ++created_;
    trim();
  }

  // Cancels every probe in flight.
  void cancel_busy() {
    for (auto& e : entries_)
      if (e.busy) e.prober->cancel();
  }

  std::size_t size() const { return entries_.size(); }
  std::size_t idle() const { return idle_; }
  // Idle probers beyond each target's first.
  std::size_t spare() const { return idle_ - targets_idle_; }
  std::uint64_t created() const { return created_; }

 private:
  struct Entry {
    std::size_t target;
    std::unique_ptr<P> prober;
    bool busy;
  };

  void enter_idle(std::size_t target) {
    if (target >= idle_of_.size()) idle_of_.resize(target + 1, 0);
    if (idle_of_[target]++ == 0) ++targets_idle_;
    ++idle_;
  }
  void leave_idle(std::size_t target) {
    if (--idle_of_[target] == 0) --targets_idle_;
    --idle_;
  }

  // Drops the spare idle entries used longest ago (nearest the front); a
  // target's last idle prober stays.
  void trim() {
    for (auto it = entries_.begin(); spare() > max_idle_ && it != entries_.end();) {
      if (it->busy || idle_of_[it->target] == 1) {
        ++it;
        continue;
      }
      leave_idle(it->target);
      it = entries_.erase(it);
    }
  }

  std::size_t max_idle_;
  Factory make_;
  std::list<Entry> entries_;          // least recently used first
  std::vector<std::size_t> idle_of_;  // per target
  std::size_t idle_ = 0;
  std::size_t targets_idle_ = 0;  // targets with an idle prober
  std::uint64_t created_ = 0;
};

}  // namespace lse::probe
