// The byte budget of one scrape (metrics.max_scrape_bytes): the exposition's
// pieces pass on while their total stays within it; the piece that would
// pass it is withheld and the render stops there, so a config that grew too
// large costs at most the budget and one family of memory, and the scrape is
// refused with the reason instead of sending a truncated exposition. Pure.
#pragma once
#include <utility>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "metrics/exposition.hpp"

namespace lse::metrics {

class ScrapeBudget {
 public:
  explicit ScrapeBudget(std::uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // `sink` behind the budget; the budget must outlive the returned sink.
  ExpositionSink guard(ExpositionSink sink) {
    return [this, sink = std::move(sink)](std::string_view piece) {
      if (piece.size() > max_bytes_ - bytes_) {
        exceeded_ = true;
        return false;
      }
      bytes_ += piece.size();
      return sink(piece);
    };
  }

  bool exceeded() const { return exceeded_; }
  std::uint64_t bytes() const { return bytes_; }  // passed on so far
  std::uint64_t max_bytes() const { return max_bytes_; }

  // Why the scrape is refused, with the way out.
  std::string refusal() const {
    return fmt::format(
        "scrape refused: the exposition passed metrics.max_scrape_bytes ({} bytes) after {} "
        "bytes; raise metrics.max_scrape_bytes or spend fewer series (metrics.per_prompt: "
        "false, metrics.phases: sum_count, fewer buckets, prompts or targets)",
        max_bytes_, bytes_);
  }

 private:
  std::uint64_t max_bytes_;
  std::uint64_t bytes_ = 0;
  bool exceeded_ = false;
};

}  // namespace lse::metrics
