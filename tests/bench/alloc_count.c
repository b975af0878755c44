/* Heap allocation counter for the fidelity benchmark (run_bench.py --count-allocs).
 *
 *   LSE_ALLOC_COUNT_FILE=/dev/shm/NAME LD_PRELOAD=libbench_alloc_count.so PROGRAM ...
 *
 * Counts calls of malloc, calloc, realloc, aligned_alloc, posix_memalign, memalign
 * (and free, for information) with relaxed atomic increments and forwards each call
 * to the real function (dlsym(RTLD_NEXT)). It never allocates itself; the calloc
 * that dlsym may make while the real functions are being looked up is served from
 * a static bootstrap buffer, and free/realloc recognise pointers into it.
 *
 * The counters live in a shared mapping of LSE_ALLOC_COUNT_FILE (created if needed,
 * LSE_ALLOC_COUNT_SIZE bytes), so the harness reads the running counts at any moment
 * without stopping the process. Layout: 64-byte slots of uint64_t (one cache line
 * each, so that threads allocating at the same time do not share a line):
 *   slot 0: magic 0x4c5345414c4c4f43 ("LSEALLOC") in its first word, pid in its second
 *   slots 1..7: malloc, calloc, realloc, aligned_alloc, posix_memalign, memalign, free
 * Calls made before the mapping exists (the dynamic loader, other constructors) are
 * counted in a static copy and added when the file is mapped. Without the variable the
 * counts stay in the static copy (harmless, and invisible).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOT_WORDS 8 /* 64 bytes */
#define LSE_ALLOC_COUNT_SIZE (8 * SLOT_WORDS * sizeof(uint64_t))
#define MAGIC 0x4c5345414c4c4f43ULL

enum { C_MALLOC = 1, C_CALLOC, C_REALLOC, C_ALIGNED_ALLOC, C_POSIX_MEMALIGN, C_MEMALIGN, C_FREE, C_SLOTS };

static uint64_t early[C_SLOTS * SLOT_WORDS] __attribute__((aligned(64)));
static uint64_t* counters = early;

static void* (*real_malloc)(size_t);
static void* (*real_calloc)(size_t, size_t);
static void* (*real_realloc)(void*, size_t);
static void* (*real_aligned_alloc)(size_t, size_t);
static int (*real_posix_memalign)(void**, size_t, size_t);
static void* (*real_memalign)(size_t, size_t);
static void (*real_free)(void*);
static int resolving;

/* dlsym's own calloc (dlerror state) while the real functions are not known yet. */
static char bootstrap[16384] __attribute__((aligned(64)));
static size_t bootstrap_used;

static inline void count(int which) {
  __atomic_fetch_add(&counters[which * SLOT_WORDS], 1, __ATOMIC_RELAXED);
}

static int in_bootstrap(const void* p) {
  return (const char*)p >= bootstrap && (const char*)p < bootstrap + sizeof bootstrap;
}

static void* bootstrap_alloc(size_t n) {
  size_t off = (bootstrap_used + 15) & ~(size_t)15;
  if (off + n > sizeof bootstrap) return NULL;
  bootstrap_used = off + n;
  return bootstrap + off; /* static storage: already zero, as calloc needs */
}

/* POSIX: a function pointer is stored through dlsym's object pointer
   (ISO C has no conversion between the two). */
static void symbol(void* slot, const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  memcpy(slot, &p, sizeof p);
}

static void resolve(void) {
  if (real_free || resolving) return;
  resolving = 1;
  symbol(&real_malloc, "malloc");
  symbol(&real_calloc, "calloc");
  symbol(&real_realloc, "realloc");
  symbol(&real_aligned_alloc, "aligned_alloc");
  symbol(&real_posix_memalign, "posix_memalign");
  symbol(&real_memalign, "memalign");
  symbol(&real_free, "free");
  resolving = 0;
}

/* Maps LSE_ALLOC_COUNT_FILE and moves the early counts into it (single-threaded: the
 * constructors of a preloaded library run before the program's). */
__attribute__((constructor)) static void alloc_count_init(void) {
  resolve();
  const char* path = getenv("LSE_ALLOC_COUNT_FILE");
  if (!path || !*path) return;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (ftruncate(fd, (off_t)LSE_ALLOC_COUNT_SIZE) != 0) {
    close(fd);
    return;
  }
  void* m = mmap(NULL, LSE_ALLOC_COUNT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return;
  uint64_t* shared = (uint64_t*)m;
  memset(shared, 0, LSE_ALLOC_COUNT_SIZE);
  for (int c = 1; c < C_SLOTS; ++c) shared[c * SLOT_WORDS] = early[c * SLOT_WORDS];
  shared[1] = (uint64_t)getpid();
  __atomic_store_n(&counters, shared, __ATOMIC_RELEASE);
  __atomic_store_n(&shared[0], MAGIC, __ATOMIC_RELEASE);
}

void* malloc(size_t n) {
  if (!real_malloc) {
    resolve();
    if (!real_malloc) return bootstrap_alloc(n);
  }
  count(C_MALLOC);
  return real_malloc(n);
}

void* calloc(size_t k, size_t n) {
  if (!real_calloc) {
    resolve();
    if (!real_calloc) return (n && k > SIZE_MAX / n) ? NULL : bootstrap_alloc(k * n);
  }
  count(C_CALLOC);
  return real_calloc(k, n);
}

void* realloc(void* p, size_t n) {
  if (!real_realloc) resolve();
  count(C_REALLOC);
  if (p && in_bootstrap(p)) {
    void* q = real_malloc(n);
    size_t avail = (size_t)(bootstrap + sizeof bootstrap - (char*)p);
    if (q) memcpy(q, p, n < avail ? n : avail);
    return q;
  }
  return real_realloc(p, n);
}

void free(void* p) {
  if (!p || in_bootstrap(p)) return;
  if (!real_free) resolve();
  count(C_FREE);
  real_free(p);
}

void* aligned_alloc(size_t a, size_t n) {
  if (!real_aligned_alloc) resolve();
  count(C_ALIGNED_ALLOC);
  return real_aligned_alloc(a, n);
}

int posix_memalign(void** out, size_t a, size_t n) {
  if (!real_posix_memalign) resolve();
  count(C_POSIX_MEMALIGN);
  return real_posix_memalign(out, a, n);
}

void* memalign(size_t a, size_t n) {
  if (!real_memalign) resolve();
  count(C_MEMALIGN);
  return real_memalign(a, n);
}
