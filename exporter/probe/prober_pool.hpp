// The probers of `run`, per target, shared by the worker slots. A slot takes
// one for the target of its next plan item and gives it back when the probe
// ends; a prober given back keeps its warm keep-alive connection for the next
// probe of that target, whichever slot runs it. Memory and sockets grow with
// the work in flight, not with concurrency × targets: at most `concurrency`
// probers are busy, at most `max_idle` wait idle, and beyond that the one idle
// for the longest goes (its connection closes).
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
        --idle_;
        // Most recently used at the back: move the entry there.
        entries_.splice(entries_.end(), entries_, std::prev(it.base()));
        return *entries_.back().prober;
      }
    entries_.push_back({target, make_(target), true});
    ++created_;
    return *entries_.back().prober;
  }

  // Gives back what acquire() handed out; trims the idle ones to max_idle.
  void release(P& prober) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->prober.get() == &prober) {
        if (!it->busy) throw std::logic_error("ProberPool: released twice");
        it->busy = false;
        ++idle_;
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
    ++idle_;
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
  std::uint64_t created() const { return created_; }

 private:
  struct Entry {
    std::size_t target;
    std::unique_ptr<P> prober;
    bool busy;
  };

  // Drops the idle entries used longest ago (nearest the front).
  void trim() {
    for (auto it = entries_.begin(); idle_ > max_idle_ && it != entries_.end();) {
      if (it->busy) {
        ++it;
        continue;
      }
      it = entries_.erase(it);
      --idle_;
    }
  }

  std::size_t max_idle_;
  Factory make_;
  std::list<Entry> entries_;  // least recently used first
  std::size_t idle_ = 0;
  std::uint64_t created_ = 0;
};

}  // namespace lse::probe
