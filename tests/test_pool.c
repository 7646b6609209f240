/* test_pool.c -- the node allocator (ir/pool.c): zeroed aligned blocks at every size class and
 * beyond, memory reused after a free (also a free from another thread and after the owning
 * thread exited), nodes laid out in creation order, empty segments given back, and a stress run
 * of threads that allocate, pass on and free blocks.  Where the pool is off (sanitizer builds,
 * GRAPHPASS_NODE_POOL=0) the blocks are still checked and the layout claims are skipped. */
#include "test_helpers.h"

#include <pthread.h>
#include <stdint.h>

TestSuite(pool);

#define POOL_HUGE 100000 /* over the pool's largest class (8192 bytes): a segment of its own */

static const size_t sizes[] = {1, 8, 24, 56, 64, 72, 120, 128, 129, 200, 1000, 4000, 8191, 8192, 8193, 100000};

static size_t mapped(void) {
  GPNodePoolStats st;
  gp_node_pool_stats(&st);
  return st.mapped_bytes;
}

static bool pool_on(void) {
  GPNodePoolStats st;
  return gp_node_pool_stats(&st);
}

static void check_block(const unsigned char *p, size_t size) {
  cr_assert_not_null(p);
  cr_assert_eq((uintptr_t)p % 8, 0, "block of %zu bytes at %p is not 8-byte aligned", size, (const void *)p);
  size_t bad = size;
  for (size_t i = 0; i < size && bad == size; i++)
    if (p[i]) bad = i;
  cr_assert_eq(bad, size, "byte %zu of a new %zu-byte block is not zero", bad, size);
}

Test(pool, blocks_zeroed_aligned_and_reused_at_every_size) {
  enum { N = 300 };
  size_t after_first = 0;
  for (int round = 0; round < 3; round++) {
    for (size_t s = 0; s < GP_ARRAY_LEN(sizes); s++) {
      unsigned char *b[N];
      for (int i = 0; i < N; i++) {
        b[i] = gp_node_alloc(sizes[s]);
        check_block(b[i], sizes[s]);
        memset(b[i], 0xA5, sizes[s]); /* the next round must see zeros again */
      }
      for (int i = 0; i < N; i++)
        for (int j = i + 1; j < i + 3 && j < N; j++) /* neighbours do not overlap */
          cr_assert(b[j] >= b[i] + sizes[s] || b[i] >= b[j] + sizes[s], "blocks %d and %d overlap", i, j);
      for (int i = 0; i < N; i++) gp_node_free(b[i]);
    }
    if (round == 0) after_first = mapped();
    else if (pool_on())
      cr_expect_leq(mapped(), after_first, "round %d mapped %zu bytes more", round, mapped() - after_first);
  }
  gp_node_free(NULL); /* a no-op */
}

Test(pool, nodes_in_creation_order) {
  if (!pool_on()) cr_skip_test("the node pool is off in this build (calloc/free)");
  enum { N = 20000 };
  void **p = gp_malloc(N * sizeof *p);
  GPNodePoolStats st0, st1;
  for (int round = 0; round < 2; round++) { /* the second round reuses what the first freed */
    gp_node_pool_stats(&st0);
    for (int i = 0; i < N; i++) p[i] = gp_node_alloc(72);
    gp_node_pool_stats(&st1);
    cr_expect_eq(st1.live_bytes - st0.live_bytes, (size_t)N * 72, "live bytes grew by %zu for %d nodes of 72",
                 st1.live_bytes - st0.live_bytes, N);
    int adjacent = 0;
    for (int i = 0; i + 1 < N; i++) adjacent += (char *)p[i + 1] == (char *)p[i] + 72;
    cr_expect_geq(adjacent, N * 98 / 100, "round %d: only %d of %d consecutive nodes are adjacent", round, adjacent, N);
    for (int i = 0; i < N; i++) gp_node_free(p[i]);
    gp_node_pool_stats(&st1);
    cr_expect_eq(st1.live_bytes, st0.live_bytes, "live bytes after freeing them: %zu, before: %zu", st1.live_bytes,
                 st0.live_bytes);
  }
  gp_free(p);
}

Test(pool, freed_segments_are_kept_within_bound_or_unmapped) {
  if (!pool_on()) cr_skip_test("the node pool is off in this build (calloc/free)");
  size_t base = mapped();
  enum { N = 2000000 }; /* 128 MB of 64-byte nodes: 31 segments */
  void **p = gp_malloc(N * sizeof *p);
  for (int i = 0; i < N; i++) p[i] = gp_node_alloc(64);
  size_t peak = mapped();
  /* Up to 8 empty segments (32 MiB) kept from earlier work may serve part of it. */
  cr_assert_geq(peak - base + (36u << 20), (size_t)N * 64, "mapped %zu bytes for %d nodes of 64", peak - base, N);
  cr_expect_leq(peak - base, (size_t)N * 64 * 103 / 100 + (4u << 20), "mapped %zu bytes for %zu", peak - base,
                (size_t)N * 64);
  for (int i = 0; i < N; i++) gp_node_free(p[i]);
  size_t after = mapped();
  cr_expect_leq(after, base + (32u << 20) + (4u << 20), "%zu bytes stay mapped after freeing all", after - base);
  void *huge = gp_node_alloc(50u << 20);
  cr_expect_geq(mapped(), after + (50u << 20));
  gp_node_free(huge);
  cr_expect_eq(mapped(), after, "a huge block is unmapped when freed");
  gp_free(p);
}

/* gp_node_pool_page: a pooled block's page is its address rounded down to GP_NODE_PAGE_SIZE, the
 * same for blocks cut from one page and different across pages; a huge block has none, nor has
 * any block when the pool is off (the node index then keeps shared nodes in an address map). */
Test(pool, page_of_a_block) {
  void *a = gp_node_alloc(64), *b = gp_node_alloc(64), *huge = gp_node_alloc(POOL_HUGE);
  if (!pool_on()) {
    cr_assert_eq(gp_node_pool_page(a), 0);
    cr_assert_eq(gp_node_pool_page(huge), 0);
  } else {
    uintptr_t pa = gp_node_pool_page(a);
    cr_assert_eq(pa, (uintptr_t)a & ~(GP_NODE_PAGE_SIZE - 1));
    cr_assert_eq(gp_node_pool_page(b), (uintptr_t)b & ~(GP_NODE_PAGE_SIZE - 1));
    cr_assert_eq(gp_node_pool_page(huge), 0, "a huge block is not in a pool page");
    enum { N = 3000 }; /* 192 KB of 64-byte blocks: several pages */
    void **p = gp_malloc(N * sizeof *p);
    size_t pages = 1;
    for (int i = 0; i < N; i++) {
      p[i] = gp_node_alloc(64);
      if (i && gp_node_pool_page(p[i]) != gp_node_pool_page(p[i - 1])) pages++;
      cr_assert_eq(gp_node_pool_page(p[i]) % GP_NODE_PAGE_SIZE, 0);
    }
    cr_assert_geq(pages, (size_t)N * 64 / GP_NODE_PAGE_SIZE, "%d blocks of 64 bytes on %zu pages", N, pages);
    for (int i = 0; i < N; i++) gp_node_free(p[i]);
    gp_free(p);
  }
  gp_node_free(a);
  gp_node_free(b);
  gp_node_free(huge);
}

/* A pass replaces a module by one up to twice its size: the second one's segments, freed, stay
 * mapped for the next run while the first is live (a fault per 4 KiB otherwise). */
Test(pool, output_twice_the_live_size_is_kept) {
  if (!pool_on()) cr_skip_test("the node pool is off in this build (calloc/free)");
  enum { L = 1000000, O = 2 * L }; /* 64 MB live (16 segments), then 128 MB more (31) */
  void **live = gp_malloc(L * sizeof *live), **out = gp_malloc(O * sizeof *out);
  for (int i = 0; i < L; i++) live[i] = gp_node_alloc(64);
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < O; i++) out[i] = gp_node_alloc(64);
    size_t peak = mapped();
    for (int i = 0; i < O; i++) gp_node_free(out[i]);
    cr_expect_geq(mapped() + (8u << 20), peak, "round %d: %zu of %zu bytes unmapped on freeing the output", round,
                  peak - mapped(), peak);
  }
  for (int i = 0; i < L; i++) gp_node_free(live[i]);
  gp_free(out);
  gp_free(live);
}

/* ---- threads */

typedef struct {
  void **blocks;
  int n;
  size_t size;
} Batch;

static void *free_batch(void *arg) {
  Batch *b = arg;
  for (int i = 0; i < b->n; i++) gp_node_free(b->blocks[i]);
  return NULL;
}

Test(pool, free_from_another_thread_is_reused) {
  enum { N = 200000 };
  Batch b = {gp_malloc(N * sizeof(void *)), N, 48};
  size_t peak = 0;
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < N; i++) {
      b.blocks[i] = gp_node_alloc(b.size);
      if (i % 997 == 0) check_block(b.blocks[i], b.size);
      memset(b.blocks[i], 0x5A, b.size);
    }
    if (round == 0) peak = mapped();
    else if (pool_on())
      cr_expect_leq(mapped(), peak + (4u << 20), "round %d: %zu bytes mapped, %zu after the first", round, mapped(),
                    peak);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, free_batch, &b), 0);
    pthread_join(t, NULL);
  }
  gp_free(b.blocks);
}

static void *alloc_keep_half(void *arg) {
  Batch *b = arg;
  for (int i = 0; i < b->n; i++) {
    void *x = gp_node_alloc(b->size);
    memset(x, 0x77, b->size);
    if (i % 2) gp_node_free(x);
    else b->blocks[i / 2] = x;
  }
  return NULL;
}

Test(pool, heaps_of_exited_threads_are_adopted) {
  enum { N = 100000 };
  Batch b = {gp_malloc(N / 2 * sizeof(void *)), N, 96};
  size_t first = 0;
  for (int round = 0; round < 20; round++) {
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, alloc_keep_half, &b), 0);
    pthread_join(t, NULL); /* the thread has exited: its heap is an orphan */
    if (round == 0) first = mapped();
    b.n = N / 2;
    free_batch(&b); /* frees into the orphan, taken up by the next thread */
    b.n = N;
  }
  if (pool_on()) cr_expect_leq(mapped(), first, "20 threads mapped %zu bytes, the first %zu", mapped(), first);
  gp_free(b.blocks);
}

/* Four threads allocate tagged blocks of random sizes, hand some to the next thread through a
 * locked mailbox and free the rest; every block's tag is checked before it is freed. */
enum { STRESS_THREADS = 4, STRESS_OPS = 150000, BOX = 4096 };
typedef struct {
  pthread_mutex_t lock;
  void *items[BOX];
  int len;
} Mailbox;
static Mailbox boxes[STRESS_THREADS];
static int stress_bad;

static void tag(unsigned char *p, size_t size) {
  memcpy(p, &size, sizeof size);
  for (size_t i = sizeof size; i < size; i++) p[i] = (unsigned char)(size + i);
}

static void check_and_free(unsigned char *p) {
  size_t size;
  memcpy(&size, p, sizeof size);
  int bad = size < 8 || size > 20000;
  for (size_t i = sizeof size; !bad && i < size; i++) bad = p[i] != (unsigned char)(size + i);
  if (bad) __atomic_store_n(&stress_bad, 1, __ATOMIC_RELAXED);
  gp_node_free(p);
}

static void *stress(void *arg) {
  int me = (int)(intptr_t)arg;
  uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(me + 1);
  void *mine[256] = {0};
  for (int op = 0; op < STRESS_OPS; op++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    int slot = (int)(rng % 256);
    if (mine[slot]) {
      if (rng & 0x100) { /* pass it on */
        Mailbox *mb = &boxes[(me + 1) % STRESS_THREADS];
        pthread_mutex_lock(&mb->lock);
        if (mb->len < BOX) {
          mb->items[mb->len++] = mine[slot];
          mine[slot] = NULL;
        }
        pthread_mutex_unlock(&mb->lock);
      }
      if (mine[slot]) check_and_free(mine[slot]);
    }
    size_t size = (rng >> 32) % 64 == 0 ? 8 + (rng >> 40) % 12000 : 8 + (rng >> 40) % 240;
    mine[slot] = gp_node_alloc(size);
    check_block(mine[slot], size);
    tag(mine[slot], size);
    if (op % 64 == 0) { /* empty my mailbox */
      Mailbox *mb = &boxes[me];
      pthread_mutex_lock(&mb->lock);
      while (mb->len) check_and_free(mb->items[--mb->len]);
      pthread_mutex_unlock(&mb->lock);
    }
  }
  for (int i = 0; i < 256; i++)
    if (mine[i]) check_and_free(mine[i]);
  return NULL;
}

Test(pool, threads_allocate_pass_on_and_free) {
  for (int i = 0; i < STRESS_THREADS; i++) pthread_mutex_init(&boxes[i].lock, NULL);
  pthread_t t[STRESS_THREADS];
  for (int i = 0; i < STRESS_THREADS; i++)
    cr_assert_eq(pthread_create(&t[i], NULL, stress, (void *)(intptr_t)i), 0);
  for (int i = 0; i < STRESS_THREADS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < STRESS_THREADS; i++)
    while (boxes[i].len) check_and_free(boxes[i].items[--boxes[i].len]);
  cr_assert_eq(stress_bad, 0, "a block was overwritten while it was live");
  /* All blocks are free: one more thread adopts an orphan, and nothing is lost. */
  Batch b = {gp_malloc(1000 * sizeof(void *)), 1000, 64};
  for (int i = 0; i < 1000; i++) b.blocks[i] = gp_node_alloc(64);
  free_batch(&b);
  gp_free(b.blocks);
}

/* Expression nodes come from the pool: a 1M-node chain built, freed and built again maps no
 * more the second time. */
Test(pool, expression_chains_reuse_their_memory) {
  const GPType *t = gp_type_tensor((DLDataType){kDLFloat, 32, 1}, 2, (int64_t[]){2, 3});
  const GPOp *relu = gp_op_get("nn.relu");
  cr_assert(relu);
  size_t first = 0;
  for (int round = 0; round < 3; round++) {
    GPExpr *e = (GPExpr *)gp_var_new("x", t);
    for (int i = 0; i < 1000000; i++) {
      GPExpr *c = (GPExpr *)gp_call_new((GPExpr *)relu, 1, &e, NULL);
      gp_release(e);
      e = c;
    }
    if (round == 0) first = mapped();
    else if (pool_on()) cr_expect_leq(mapped(), first, "round %d", round);
    gp_release(e);
  }
}

/* A page with a few holes is not reused before it is half free: nodes made after a quarter of
 * the previous ones died are laid out in a run, not one per hole; after three quarters died
 * they fill the holes (no new memory) and stay in address order page by page. */
Test(pool, new_nodes_go_to_mostly_free_pages) {
  if (!pool_on()) cr_skip_test("the node pool is off in this build (calloc/free)");
  enum { N = 200000, M = N / 4 };
  void **old = gp_malloc(N * sizeof *old), **p = gp_malloc(M * sizeof *p);
  for (int i = 0; i < N; i++) old[i] = gp_node_alloc(80);
  for (int i = 0; i < N; i += 4) gp_node_free(old[i]); /* pages 3/4 live */
  for (int i = 0; i < M; i++) p[i] = gp_node_alloc(80);
  int adjacent = 0;
  for (int i = 0; i + 1 < M; i++) adjacent += (char *)p[i + 1] == (char *)p[i] + 80;
  cr_expect_geq(adjacent, M * 98 / 100, "only %d of %d consecutive nodes are adjacent: the holes were reused",
                adjacent, M);
  for (int i = 0; i < M; i++) gp_node_free(p[i]);
  for (int i = 0; i < N; i++)
    if (i % 4 == 0) old[i] = NULL;
    else if (i % 4 < 3) gp_node_free(old[i]), old[i] = NULL; /* pages 1/4 live */
  size_t before = mapped();
  for (int i = 0; i < N; i++)
    if (!old[i]) old[i] = gp_node_alloc(80);
  cr_expect_leq(mapped(), before, "%zu bytes more mapped while pages were 1/4 live", mapped() - before);
  for (int i = 0; i < N; i++) gp_node_free(old[i]);
  gp_free(p);
  gp_free(old);
}
