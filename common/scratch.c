/* scratch.c -- scratch buffers for walks and passes over big graphs (see scratch.h).  Compiled
 * once per build variant and linked into the host library and into the standard plugin, each of
 * which then has its own per-thread cache.  Uses libc and the kernel only. */
#include "scratch.h"

#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_THREAD__)
#define SCRATCH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SCRATCH_TSAN 1
#endif
#endif
#ifndef SCRATCH_TSAN
#define SCRATCH_TSAN 0
#endif
#include <time.h>

static _Noreturn void out_of_memory(void) {
  fputs("graphpass: out of memory (scratch buffers)\n", stderr);
  abort();
}

/* ---- buffers: see passes.h.  Layout: a 16-byte header (the mapping's length, 0 when the block
 * is malloc'd; then, for a mapping, the data's offset in it) then the caller's bytes, 16-byte
 * aligned either way.  A mapped block starts a few 64-byte lines into its mapping (buf_map).
 *
 * Why mappings from 1 KiB: glibc's malloc, on any request of 1 KiB or more while it holds freed
 * small blocks in its fast bins, first consolidates all of them (malloc_consolidate).  After a
 * pass over a 10M-node graph released its result, that is ~10M scattered blocks: perf showed
 * it as 27% of the next FuseOps run.  The passes' own arrays therefore never ask malloc for
 * 1 KiB or more.  Mappings a thread frees are kept in a small per-thread cache (at most
 * CACHE_N mappings) and reused, the smallest that fits, so a pass makes no system call and
 * takes no page fault in the steady state, even on a 10M-node graph: a buffer that outgrows
 * its mapping moves (a copy) into a cached one when one fits (buf_grow), and grows with mremap
 * (fresh pages) only when none does.  Beyond CACHE_HOT bytes, the cached mappings given back
 * more than CACHE_DECAY ago are lazily freed (madvise(MADV_FREE), oldest first) on the next
 * give: the kernel takes their pages when it needs memory.  Not at once: after MADV_FREE a
 * mapping costs again on reuse (600 MB: 13 ms for the madvise, then 43 instead of 18 ms to
 * write it), and passes run back to back reuse each other's scratch well within a second (a
 * 10M-node FuseOps run frees ~700 MB of it).  As with any allocator that decays without a
 * thread of its own, a thread that stops calling keeps its hot mappings until it exits.  A
 * thread's cache is unmapped when the thread exits (and the unloading thread's when the plugin
 * is unloaded). */

#define BUF_HDR ((size_t)16)
#define BUF_BIG ((size_t)1 << 10)
#define CACHE_N 64
#define CACHE_HOT ((size_t)64 << 20)
#define CACHE_DECAY ((int64_t)1000000000) /* ns */

typedef struct MapCache { /* entries oldest first */
  void *map[CACHE_N];
  size_t len[CACHE_N];
  bool lazy[CACHE_N]; /* given back with MADV_FREE */
  int64_t given[CACHE_N]; /* when it was cached (CLOCK_MONOTONIC_COARSE, ns) */
  int32_t n;
  size_t hot; /* bytes of the entries not lazily freed */
  bool registered; /* the thread-exit destructor knows this cache */
} MapCache;

static _Thread_local MapCache cache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_drop(MapCache *c) {
  for (int32_t i = 0; i < c->n; i++) munmap(c->map[i], c->len[i]);
  c->n = 0;
  c->hot = 0;
}

static void cache_thread_exit(void *c) { cache_drop(c); }
static bool cache_once_done; /* set inside pthread_once: cache_key is valid or -1 */
static void cache_key_make(void) {
  if (pthread_key_create(&cache_key, cache_thread_exit) != 0) cache_key = (pthread_key_t)-1;
  __atomic_store_n(&cache_once_done, true, __ATOMIC_RELEASE);
}
/* At unload: drop this thread's cache and delete the key, so no thread that exits later calls
 * a destructor in the unloaded plugin (their caches, if any, stay mapped: at most CACHE_N
 * mappings each, all but CACHE_HOT bytes of them lazily freed). */
__attribute__((destructor)) static void cache_unload(void) {
  cache_drop(&cache);
  if (__atomic_load_n(&cache_once_done, __ATOMIC_ACQUIRE) && cache_key != (pthread_key_t)-1) pthread_key_delete(cache_key);
}

static size_t page_round(size_t n) {
  size_t pg = 4096;
  if (n > SIZE_MAX - pg) out_of_memory();
  return (n + pg - 1) & ~(pg - 1);
}

static void cache_remove(int32_t i) {
  cache.n--;
  memmove(&cache.map[i], &cache.map[i + 1], (size_t)(cache.n - i) * sizeof cache.map[0]);
  memmove(&cache.len[i], &cache.len[i + 1], (size_t)(cache.n - i) * sizeof cache.len[0]);
  memmove(&cache.lazy[i], &cache.lazy[i + 1], (size_t)(cache.n - i) * sizeof cache.lazy[0]);
  memmove(&cache.given[i], &cache.given[i + 1], (size_t)(cache.n - i) * sizeof cache.given[0]);
}

/* A cached mapping of at least len bytes and at most max(k * len, len + 1 MiB), or NULL: the
 * smallest such (k = 4) for a new buffer, the biggest (k = 16) for a growing one (buf_grow).
 * Somewhat bigger than asked for is fine (its pages are mapped already, and a buffer that grows
 * stays in it without mremap); much bigger would tie up a mapping that a big buffer needs, and
 * lazily freeing it again would walk all its pages. */
static void *cache_take(size_t len, size_t *got, bool grow) {
  const size_t mib = (size_t)1 << 20;
  int k = grow ? 16 : 4;
  size_t most = len > SIZE_MAX / (size_t)k ? SIZE_MAX : len * (size_t)k;
  if (most - len < mib) most = len > SIZE_MAX - mib ? SIZE_MAX : len + mib;
  int32_t best = -1;
  for (int32_t i = 0; i < cache.n; i++)
    if (cache.len[i] >= len && cache.len[i] <= most &&
        (best < 0 || (grow ? cache.len[i] > cache.len[best] : cache.len[i] < cache.len[best])))
      best = i;
  if (best < 0) return NULL;
  void *m = cache.map[best];
  *got = cache.len[best];
  if (!cache.lazy[best]) cache.hot -= *got;
  cache_remove(best);
  return m;
}

/* Keep mapping m (len bytes) for reuse: the oldest entry makes room when the cache is full, and
 * the oldest hot entries cached over CACHE_DECAY ago are lazily freed while the hot ones exceed
 * CACHE_HOT. */
static void cache_give(void *m, size_t len) {
  if (!cache.registered) {
    pthread_once(&cache_once, cache_key_make);
    if (cache_key != (pthread_key_t)-1) pthread_setspecific(cache_key, &cache);
    cache.registered = true;
  }
  if (cache.n == CACHE_N) {
    munmap(cache.map[0], cache.len[0]);
    if (!cache.lazy[0]) cache.hot -= cache.len[0];
    cache_remove(0);
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  cache.map[cache.n] = m;
  cache.len[cache.n] = len;
  cache.given[cache.n] = now;
  cache.lazy[cache.n++] = false;
  cache.hot += len;
  for (int32_t i = 0; i < cache.n - 1 && cache.hot > CACHE_HOT && now - cache.given[i] >= CACHE_DECAY; i++)
    if (!cache.lazy[i]) {
      madvise(cache.map[i], cache.len[i], MADV_FREE);
      cache.lazy[i] = true;
      cache.hot -= cache.len[i];
    }
}

/* A mapped buffer starts `off` bytes into its mapping: a 16-byte header {mapping length, off}
 * right before the data, and in front of it a pad of 64-byte lines that steps through the page
 * from one mapping to the next.  Without it every array starts at the same page offset, and a
 * loop over a dozen arrays indexed alike puts them all in one L1 set (4 KiB aliasing). */
#define COLORS 61 /* lines per step pattern: prime, under the 64 lines of a page */
static _Thread_local unsigned next_color;

static char *buf_base(void *p) { return (char *)p - BUF_HDR - ((size_t *)p)[-1]; }

/* A mapping for n bytes after the header; zeroed when `zero` (fresh pages are). */
static void *buf_map(size_t n, bool zero) {
  size_t off = (size_t)(next_color++ % COLORS) * 64;
  if (n > SIZE_MAX - BUF_HDR - off) out_of_memory();
  size_t len = page_round(n + BUF_HDR + off), got;
  char *m = cache_take(len, &got, false);
  if (m) {
    if (zero) memset(m + off + BUF_HDR, 0, n);
  } else {
    m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) out_of_memory();
    got = len;
  }
  size_t *h = (size_t *)(m + off);
  h[0] = got;
  h[1] = off;
  return m + off + BUF_HDR;
}

void *gp_scratch_alloc(size_t n) {
  if (n > SIZE_MAX - 2 * BUF_HDR) out_of_memory();
  if (n + BUF_HDR >= BUF_BIG) return buf_map(n, false);
  char *h = malloc(n + BUF_HDR);
  if (!h) out_of_memory();
  *(size_t *)h = 0;
  return h + BUF_HDR;
}

void *gp_scratch_zalloc(size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes) || bytes > SIZE_MAX - 2 * BUF_HDR) out_of_memory();
  if (bytes + BUF_HDR >= BUF_BIG) return buf_map(bytes, true);
  char *h = calloc(1, bytes + BUF_HDR);
  if (!h) out_of_memory();
  return h + BUF_HDR;
}

/* Mapping `base` (len bytes) grown to at least nlen bytes, its bytes kept (*got: the new length).
 * A growing buffer likely grows on, so it takes the biggest cached mapping up to 16x (not the
 * smallest fit): after a run on a big graph, the next run's arrays each move once, early, into
 * a mapping of their final size, and copy ~1/16 of it instead of ~all of it (a 10M-node
 * FuseOps run copied 683 MB with smallest-fit, 109 MB now).  base itself goes to the cache,
 * pages and all.  With no cached fit: mremap, whose new pages fault in on first use. */
static char *buf_grow(char *base, size_t len, size_t nlen, size_t *got) {
  char *m = cache_take(nlen, got, true);
  if (!m) {
    *got = nlen;
#if SCRATCH_TSAN
    /* ThreadSanitizer does not see mremap: a range it frees and another thread's mremap reuses
     * would look written by the first thread.  A new mapping, a copy and munmap it does see. */
    m = mmap(NULL, nlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) out_of_memory();
    memcpy(m, base, len);
    munmap(base, len);
#else
    m = mremap(base, len, nlen, MREMAP_MAYMOVE);
    if (m == MAP_FAILED) out_of_memory();
#endif
    return m;
  }
  memcpy(m, base, len);
  cache_give(base, len);
  return m;
}

void *gp_scratch_realloc(void *p, size_t n) {
  if (!p) return gp_scratch_alloc(n);
  if (n > SIZE_MAX - 2 * BUF_HDR) out_of_memory();
  char *h = (char *)p - BUF_HDR;
  size_t len = *(size_t *)h;
  if (len) { /* mapped: grow it (never shrink) */
    size_t off = ((size_t *)p)[-1];
    if (n > SIZE_MAX - 2 * BUF_HDR - off) out_of_memory();
    size_t nlen = page_round(n + BUF_HDR + off);
    if (nlen <= len) return p;
    char *m = buf_grow(buf_base(p), len, nlen, &nlen);
    *(size_t *)(m + off) = nlen;
    return m + off + BUF_HDR;
  }
  if (n + BUF_HDR >= BUF_BIG) { /* outgrows the heap: move it to a mapping */
    char *q = buf_map(n, false);
    size_t old = malloc_usable_size(h) - BUF_HDR;
    memcpy(q, p, old < n ? old : n);
    free(h);
    return q;
  }
  h = realloc(h, n + BUF_HDR);
  if (!h) out_of_memory();
  return h + BUF_HDR;
}

void gp_scratch_free(void *p) {
  if (!p) return;
  char *h = (char *)p - BUF_HDR;
  size_t len = *(size_t *)h;
  if (len)
    cache_give(buf_base(p), len);
  else
    free(h);
}

