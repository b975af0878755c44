// The plan of `run` (which probe runs when) and its positional arguments.
#include <utility>
#include <algorithm>
#include <cctype>
#include <random>
#include <string>

#include "cli/run_command.hpp"

namespace lse::cli {
namespace {

bool parse_positive_int(const std::string& s, int& out) {
  if (s.empty() || s.size() > 9 ||
      !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    return false;
  out = std::stoi(s);
  return out > 0;
}

}  // namespace

Positionals split_positionals(const std::vector<std::string>& args) {
  Positionals p;
  p.files = args;
  int n = 0;
  if (!p.files.empty() && parse_positive_int(p.files.back(), n)) {
    p.runs = n;
    p.files.pop_back();
  }
  return p;
}

std::vector<PlanItem> build_plan(const std::vector<std::size_t>& prompts_per_target, int runs,
                                 const std::vector<int>& warmup, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  // rng() % n keeps plans identical across standard libraries.
  auto shuffle = [&](auto& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
  };
  std::vector<PlanItem> plan;
  const std::size_t targets = prompts_per_target.size();
  for (std::size_t t = 0; t < targets; ++t) {
    const std::size_t n = prompts_per_target[t];
    if (n == 0) continue;
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    shuffle(order);
    const int w = t < warmup.size() ? warmup[t] : 0;
    for (int i = 0; i < w; ++i)
      plan.push_back({t, order[static_cast<std::size_t>(i) % n], true, -1});
  }
  std::vector<std::size_t> target_order(targets);
  for (std::size_t t = 0; t < targets; ++t) target_order[t] = t;
  for (int round = 0; round < runs; ++round) {
    shuffle(target_order);
    for (std::size_t t : target_order) {
      std::vector<std::size_t> order(prompts_per_target[t]);
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      shuffle(order);
      for (std::size_t p : order) plan.push_back({t, p, false, round});
    }
  }
  return plan;
}

}  // namespace lse::cli
