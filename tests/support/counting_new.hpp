// Replaces the global operator new/delete of a test binary with versions
// that count allocations, for the "no allocation once warm" tests. Include
// in exactly one source file per test binary (the replacement is global).
#pragma once
#include <atomic>
#include <cstdlib>
#include <new>

namespace lse::test {
inline std::atomic<long> g_allocations{0};
}  // namespace lse::test

void* operator new(std::size_t n) {
  lse::test::g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
