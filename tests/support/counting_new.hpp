// Replaces the global allocation functions of a test binary with versions
// that count allocations, for the "no allocation once warm" tests. Include
// in exactly one source file per test binary (the replacement is global).
//
// Every replaceable form is replaced (plain, array, aligned, nothrow, and
// each sized/aligned delete), all on malloc/aligned_alloc and free: a
// library that allocates with one form and frees with another (simdjson
// uses new[]/delete[] and nothrow forms) then still pairs malloc with free,
// so ASan sees no mismatch.
#pragma once
#include <atomic>
#include <cstdlib>
#include <new>

namespace lse::test {
inline std::atomic<long> g_allocations{0};
// This thread's allocations: for tests with a peer thread that allocates.
inline thread_local long t_allocations = 0;

inline void* counted_alloc(std::size_t n) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++t_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
inline void* counted_alloc(std::size_t n, std::align_val_t a) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++t_allocations;
  const auto align = static_cast<std::size_t>(a);
  const std::size_t size = n == 0 ? align : (n + align - 1) / align * align;
  return std::aligned_alloc(align, size);
}
}  // namespace lse::test

void* operator new(std::size_t n) {
  if (void* p = lse::test::counted_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = lse::test::counted_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = lse::test::counted_alloc(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = lse::test::counted_alloc(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return lse::test::counted_alloc(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return lse::test::counted_alloc(n);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return lse::test::counted_alloc(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return lse::test::counted_alloc(n, a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
