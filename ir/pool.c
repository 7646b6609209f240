/* pool.c -- the node allocator: where expression nodes live.
 *
 * Why: a pass reads a graph in the order its nodes were made and writes a new graph in about the
 * same order.  From glibc malloc, on a heap the previous graph left fragmented, the new nodes land
 * all over the address space; from ~100k nodes on, every node then costs DRAM misses, and at 1M
 * nodes FuseOps spent half its time in malloc.  Here nodes of one size class are cut from 64 KiB
 * pages in address order, and a page whose nodes are all freed is recycled whole, so a graph
 * that replaces the previous one is laid out again in creation order.
 *
 * Layout and rules:
 *  - A segment is SEG_SIZE (4 MiB) bytes, SEG_SIZE-aligned, from mmap.  Its header holds its
 *    owner heap and the descriptors of its 64 pages of 64 KiB; page 0's slots start after the
 *    header.  The segment of an object is its address rounded down to SEG_SIZE.
 *  - A page serves one size class: first a bump pointer over never-used space, then a free list.
 *    A page with no live object goes back to its segment (unless it is the page allocation is
 *    cutting from: that one is rewound in place).
 *  - A page that filled up is taken again only once at most half its slots are live.  Reusing
 *    every hole at once would scatter a new graph over the pages of the old one, a few nodes per
 *    page: at 1M calls a pass's walk of its input then took about 120 ns per node in DRAM misses
 *    instead of 30 (the same graph laid out afresh).  So new nodes go to pages that are mostly
 *    free, in runs, and the pages of a class hold at most twice its live bytes (plus the page
 *    being cut from) whenever a new page is made: the queue is empty then, so every page of the
 *    class is more than half live.
 *  - Objects over POOL_MAX bytes get a segment of their own (huge), unmapped when freed.
 *  - Each thread has a heap.  The owner allocates and frees without locks or atomics.  A free
 *    from another thread pushes the object on the owner heap's atomic list (a lock-free push;
 *    the owner takes the whole list with one exchange, so there is no ABA), and the owner frees
 *    those objects on its next slow path.  When a thread exits, its heap is orphaned; the next
 *    thread that needs a heap adopts it whole.  Heaps are never destroyed.
 *  - A heap keeps empty segments for reuse while they are no more than twice the segments it
 *    has in use, or POOL_KEEP of them, and unmaps the others.  So the mapped memory stays within
 *    three times the segments in use (plus 32 MiB), whose pages are at least half live, and a
 *    pass that replaces a module by a new one up to twice its size (FuseOps' output is about
 *    that: a var, a function and a call per group) builds it in the old one's memory, without a
 *    page fault per 4 KiB.
 *
 * Sanitizer builds, and runs with GRAPHPASS_NODE_POOL=0 in the environment, use calloc/free
 * instead, so that AddressSanitizer, LeakSanitizer and valgrind see every node. */
#include "ir.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define POOL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define POOL_SANITIZED 1
#endif
#endif
#ifndef POOL_SANITIZED
#define POOL_SANITIZED 0
#endif

#define SEG_SHIFT 22
#define SEG_SIZE ((size_t)1 << SEG_SHIFT)
#define PAGE_SHIFT 16
#define PAGE_SIZE ((size_t)1 << PAGE_SHIFT)
#define PAGES (SEG_SIZE / PAGE_SIZE)
#define ALL_PAGES (~(uint64_t)0)
#define POOL_MAX 8192 /* largest pooled object; 8 per page */
#define NCLASS 40     /* 8-byte steps to 128, then 4 classes per doubling to POOL_MAX */
#define POOL_KEEP 8   /* empty segments a heap keeps at least (32 MiB) */
#define SEG_MAGIC 0x6770736567u

typedef struct Heap Heap;

typedef struct Page {
  void *free;               /* freed slots of this page (owner only) */
  char *bump, *end;         /* [bump, end): slots never handed out since the page was set up */
  struct Page *prev, *next; /* the heap's queue of pages of this class with room */
  uint32_t used;            /* slots handed out and not freed */
  uint32_t reuse_at;        /* half its slots: out of the queue, it goes back when used falls to this */
  uint16_t cls;             /* size class while in use */
  uint8_t in_queue, in_use;
} Page;

typedef struct Segment {
  Heap *heap;                  /* owner; NULL for a huge segment; fixed while mapped */
  struct Segment *prev, *next; /* heap's list of segments with a free page, or of empty ones */
  size_t size;                 /* mapped bytes */
  uint64_t free_pages;         /* bit i: page i is not in use */
  uint64_t magic;
  Page pages[PAGES];
} Segment;

#define SEG_HEADER ((sizeof(Segment) + 63) & ~(size_t)63)

struct Heap {
  Page *queue[NCLASS]; /* pages with room; allocation cuts from the head */
  Segment *partial;    /* segments with at least one page not in use (and one in use) */
  Segment *empty;      /* empty segments kept for reuse */
  size_t nempty;       /* segments on `empty` */
  size_t nlive;        /* segments with a page in use */
  _Atomic(void *) remote; /* objects freed by other threads, linked through their first word */
  _Atomic size_t live;    /* bytes of slots handed out and not freed back (owner writes) */
  Heap *next_all;         /* every heap ever made (so they stay reachable) */
  Heap *next_orphan;
};

static uint32_t class_size[NCLASS];
static _Atomic int pool_mode; /* 0 not decided, 1 pool, 2 malloc */
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static pthread_key_t heap_key;
static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;
static Heap *all_heaps, *orphans;
static _Atomic size_t mapped_bytes, mapped_segments, huge_bytes;
static _Thread_local Heap *tls_heap;

/* ---- size classes */

static unsigned class_of(size_t size) {
  size = (size + 7) & ~(size_t)7;
  if (size <= 128) return (unsigned)(size >> 3) - (size != 0);
  unsigned b = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1)); /* 7..12 */
  unsigned sub = (unsigned)((size - 1) >> (b - 2)) & 3u;
  return 16u + (b - 7u) * 4u + sub;
}

static void heap_orphan(void *h);

static void lock_heaps(void) { pthread_mutex_lock(&heaps_lock); }
static void unlock_heaps(void) { pthread_mutex_unlock(&heaps_lock); }

static void pool_init(void) {
  for (unsigned c = 0; c < 16; c++) class_size[c] = 8 * (c + 1);
  for (unsigned c = 16; c < NCLASS; c++) {
    unsigned b = 7 + (c - 16) / 4, sub = (c - 16) % 4;
    class_size[c] = (1u << b) + (sub + 1) * (1u << (b - 2));
  }
  const char *env = getenv("GRAPHPASS_NODE_POOL");
  int use_pool = !POOL_SANITIZED && !(env && strcmp(env, "0") == 0);
  if (use_pool) {
    if (pthread_key_create(&heap_key, heap_orphan) != 0) use_pool = 0;
    /* A fork while another thread holds the lock must not leave the child locked. */
    else pthread_atfork(lock_heaps, unlock_heaps, unlock_heaps);
  }
  atomic_store(&pool_mode, use_pool ? 1 : 2);
}

static int mode(void) {
  int m = atomic_load_explicit(&pool_mode, memory_order_acquire);
  if (m) return m;
  pthread_once(&pool_once, pool_init);
  return atomic_load(&pool_mode);
}

/* ---- segments */

static Segment *seg_of(const void *p) { return (Segment *)((uintptr_t)p & ~(uintptr_t)(SEG_SIZE - 1)); }

static char *page_start(Segment *s, size_t i) { return (char *)s + (i ? i * PAGE_SIZE : SEG_HEADER); }

/* Maps `size` bytes (a multiple of SEG_SIZE) at a SEG_SIZE-aligned address. */
static Segment *seg_map(size_t size) {
  size_t span = size + SEG_SIZE;
  char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    fprintf(stderr, "graphpass: out of memory (mapping %zu bytes for nodes)\n", size);
    abort();
  }
  uintptr_t at = ((uintptr_t)raw + SEG_SIZE - 1) & ~(uintptr_t)(SEG_SIZE - 1);
  size_t head = at - (uintptr_t)raw, tail = span - head - size;
  if (head) munmap(raw, head);
  if (tail) munmap((char *)at + size, tail);
#ifdef MADV_POPULATE_WRITE
  /* Fault the segment in at once: a segment is mapped when every page of the others is taken,
   * so it is about to be written; one call instead of 1024 faults (the first run of the llvm
   * set at 1M calls, which maps its memory, was ~5% faster).  An older kernel refuses: then
   * the pages fault in one by one as before. */
  madvise((void *)at, size, MADV_POPULATE_WRITE);
#endif
  atomic_fetch_add(&mapped_bytes, size);
  atomic_fetch_add(&mapped_segments, 1);
  Segment *s = (Segment *)at; /* fresh pages read as zero */
  s->size = size;
  s->magic = SEG_MAGIC;
  return s;
}

static void seg_unmap(Segment *s) {
  size_t size = s->size;
  munmap(s, size);
  atomic_fetch_sub(&mapped_bytes, size);
  atomic_fetch_sub(&mapped_segments, 1);
}

static void list_unlink(Segment **head, Segment *s) {
  if (s->prev) s->prev->next = s->next;
  else *head = s->next;
  if (s->next) s->next->prev = s->prev;
  s->prev = s->next = NULL;
}

static void list_push(Segment **head, Segment *s) {
  s->prev = NULL;
  s->next = *head;
  if (*head) (*head)->prev = s;
  *head = s;
}

/* ---- pages and their queues */

static void queue_unlink(Heap *h, Page *p) {
  if (p->prev) p->prev->next = p->next;
  else h->queue[p->cls] = p->next;
  if (p->next) p->next->prev = p->prev;
  p->prev = p->next = NULL;
  p->in_queue = 0;
}

static void queue_push_head(Heap *h, Page *p) {
  p->prev = NULL;
  p->next = h->queue[p->cls];
  if (p->next) p->next->prev = p;
  h->queue[p->cls] = p;
  p->in_queue = 1;
}

/* Behind the head: the head stays the page allocation cuts from. */
static void queue_push_second(Heap *h, Page *p) {
  Page *head = h->queue[p->cls];
  if (!head) {
    queue_push_head(h, p);
    return;
  }
  p->prev = head;
  p->next = head->next;
  if (p->next) p->next->prev = p;
  head->next = p;
  p->in_queue = 1;
}

static void page_setup(Segment *s, size_t i, unsigned cls) {
  Page *p = &s->pages[i];
  char *start = page_start(s, i);
  size_t n = ((char *)s + (i + 1) * PAGE_SIZE - start) / class_size[cls];
  p->free = NULL;
  p->bump = start;
  p->end = start + n * class_size[cls];
  p->used = 0;
  p->reuse_at = (uint32_t)(n / 2);
  p->cls = (uint16_t)cls;
  p->in_use = 1;
  p->in_queue = 0;
  p->prev = p->next = NULL;
}

/* A new page of class cls at the head of its queue. */
static Page *page_new(Heap *h, unsigned cls) {
  Segment *s = h->partial;
  if (!s) {
    if (h->empty) {
      s = h->empty;
      list_unlink(&h->empty, s);
      h->nempty--;
    } else {
      s = seg_map(SEG_SIZE);
      s->heap = h;
    }
    s->free_pages = ALL_PAGES;
    list_push(&h->partial, s);
    h->nlive++;
  }
  size_t i = (size_t)__builtin_ctzll(s->free_pages);
  s->free_pages &= ~((uint64_t)1 << i);
  if (!s->free_pages) list_unlink(&h->partial, s);
  page_setup(s, i, cls);
  queue_push_head(h, &s->pages[i]);
  return &s->pages[i];
}

/* The page holds no live object: give it back to its segment. */
static void page_retire(Heap *h, Segment *s, Page *p) {
  if (p->in_queue) queue_unlink(h, p);
  p->in_use = 0;
  size_t i = (size_t)(p - s->pages);
  if (!s->free_pages) list_push(&h->partial, s); /* it was full */
  s->free_pages |= (uint64_t)1 << i;
  if (s->free_pages != ALL_PAGES) return;
  list_unlink(&h->partial, s);
  h->nlive--;
  list_push(&h->empty, s);
  h->nempty++;
  while (h->nempty > POOL_KEEP && h->nempty > 2 * h->nlive) { /* the coldest (last pushed first) go */
    Segment *last = h->empty;
    while (last->next) last = last->next;
    list_unlink(&h->empty, last);
    h->nempty--;
    seg_unmap(last);
  }
}

/* Owner only: a plain read-modify-write, atomic only so that stats may read it. */
static void live_add(Heap *h, size_t delta) {
  atomic_store_explicit(&h->live, atomic_load_explicit(&h->live, memory_order_relaxed) + delta, memory_order_relaxed);
}

static void local_free(Heap *h, Segment *s, void *o) {
  Page *p = &s->pages[((uintptr_t)o - (uintptr_t)s) >> PAGE_SHIFT];
  assert(p->in_use && p->used > 0);
  live_add(h, -(size_t)class_size[p->cls]);
  if (--p->used == 0 && p == h->queue[p->cls]) {
    /* The page allocation cuts from: rewind it, so the next nodes are in order again. */
    p->free = NULL;
    p->bump = page_start(s, (size_t)(p - s->pages));
    return;
  }
  if (p->used == 0) {
    page_retire(h, s, p);
    return;
  }
  *(void **)o = p->free;
  p->free = o;
  if (!p->in_queue && p->used <= p->reuse_at) queue_push_second(h, p);
}

static void drain_remote(Heap *h) {
  if (!atomic_load_explicit(&h->remote, memory_order_relaxed)) return;
  void *o = atomic_exchange_explicit(&h->remote, NULL, memory_order_acquire);
  while (o) {
    void *next = *(void **)o;
    local_free(h, seg_of(o), o);
    o = next;
  }
}

/* ---- heaps */

static void heap_orphan(void *arg) {
  Heap *h = arg;
  if (tls_heap == h) tls_heap = NULL;
  lock_heaps();
  h->next_orphan = orphans;
  orphans = h;
  unlock_heaps();
}

static Heap *heap_acquire(void) {
  lock_heaps();
  Heap *h = orphans;
  if (h) {
    orphans = h->next_orphan;
    h->next_orphan = NULL;
  } else {
    h = gp_calloc(1, sizeof *h);
    h->next_all = all_heaps;
    all_heaps = h;
  }
  unlock_heaps();
  tls_heap = h;
  pthread_setspecific(heap_key, h);
  drain_remote(h);
  return h;
}

/* ---- the interface */

static void *huge_alloc(size_t size) {
  size_t total = (SEG_HEADER + size + SEG_SIZE - 1) & ~(SEG_SIZE - 1);
  Segment *s = seg_map(total); /* heap NULL: huge */
  atomic_fetch_add(&huge_bytes, total);
  return (char *)s + SEG_HEADER;
}

static void *alloc_slow(Heap *h, unsigned cls) {
  drain_remote(h);
  for (;;) {
    Page *p = h->queue[cls];
    if (!p) p = page_new(h, cls);
    if (p->free) {
      void *o = p->free;
      p->free = *(void **)o;
      p->used++;
      return o;
    }
    if (p->bump < p->end) {
      void *o = p->bump;
      p->bump += class_size[cls];
      p->used++;
      return o;
    }
    queue_unlink(h, p); /* full; a free puts it back */
  }
}

void *gp_node_alloc(size_t size) {
  if (mode() != 1) return gp_calloc(1, size);
  if (size > POOL_MAX) return huge_alloc(size);
  unsigned cls = class_of(size);
  Heap *h = tls_heap ? tls_heap : heap_acquire();
  Page *p = h->queue[cls];
  void *o;
  if (p && p->free) {
    o = p->free;
    p->free = *(void **)o;
    p->used++;
  } else if (p && p->bump < p->end) {
    o = p->bump;
    p->bump += class_size[cls];
    p->used++;
  } else {
    o = alloc_slow(h, cls);
  }
  live_add(h, class_size[cls]);
  memset(o, 0, size);
  return o;
}

void gp_node_free(void *o) {
  if (!o) return;
  if (mode() != 1) {
    free(o);
    return;
  }
  Segment *s = seg_of(o);
  assert(s->magic == SEG_MAGIC);
  if (!s->heap) {
    atomic_fetch_sub(&huge_bytes, s->size);
    seg_unmap(s);
    return;
  }
  Heap *h = s->heap;
  if (h == tls_heap) {
    local_free(h, s, o);
    return;
  }
  void *head = atomic_load_explicit(&h->remote, memory_order_relaxed);
  do {
    *(void **)o = head;
  } while (!atomic_compare_exchange_weak_explicit(&h->remote, &head, o, memory_order_release, memory_order_relaxed));
}

uintptr_t gp_node_pool_page(const void *p) {
  _Static_assert(GP_NODE_PAGE_SIZE == PAGE_SIZE, "ir.h's page size is the pool's");
  if (mode() != 1) return 0;
  const Segment *s = seg_of(p);
  assert(s->magic == SEG_MAGIC);
  return s->heap ? (uintptr_t)p & ~(uintptr_t)(PAGE_SIZE - 1) : 0;
}

bool gp_node_pool_stats(GPNodePoolStats *st) {
  st->mapped_bytes = atomic_load(&mapped_bytes);
  st->segments = atomic_load(&mapped_segments);
  st->live_bytes = atomic_load(&huge_bytes);
  lock_heaps();
  for (Heap *h = all_heaps; h; h = h->next_all) st->live_bytes += atomic_load_explicit(&h->live, memory_order_relaxed);
  unlock_heaps();
  return mode() == 1;
}
