/* support.c -- plugin-local helpers: a pointer map, child access, the pass calling convention. */
#include "passes.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static _Noreturn void out_of_memory(void) {
  fputs("graphpass std plugin: out of memory\n", stderr);
  abort();
}

/* ---- buffers: see passes.h.  Layout: a 16-byte header (the mapping's length, 0 when the block
 * is malloc'd) then the caller's bytes, 16-byte aligned either way. */

#define BUF_HDR ((size_t)16)
#define BUF_BIG ((size_t)1 << 20)

static size_t page_round(size_t n) {
  size_t pg = 4096;
  if (n > SIZE_MAX - pg) out_of_memory();
  return (n + pg - 1) & ~(pg - 1);
}

static void *buf_map(size_t n) {
  size_t len = page_round(n + BUF_HDR);
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) out_of_memory();
  *(size_t *)m = len;
  return (char *)m + BUF_HDR;
}

void *std_buf_alloc(size_t n) {
  if (n > SIZE_MAX - 2 * BUF_HDR) out_of_memory();
  if (n >= BUF_BIG) return buf_map(n);
  char *h = malloc(n + BUF_HDR);
  if (!h) out_of_memory();
  *(size_t *)h = 0;
  return h + BUF_HDR;
}

void *std_buf_zalloc(size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes) || bytes > SIZE_MAX - 2 * BUF_HDR) out_of_memory();
  if (bytes >= BUF_BIG) return buf_map(bytes); /* fresh pages are zero */
  char *h = calloc(1, bytes + BUF_HDR);
  if (!h) out_of_memory();
  return h + BUF_HDR;
}

void *std_buf_realloc(void *p, size_t n) {
  if (!p) return std_buf_alloc(n);
  if (n > SIZE_MAX - 2 * BUF_HDR) out_of_memory();
  char *h = (char *)p - BUF_HDR;
  size_t len = *(size_t *)h;
  if (len) { /* mapped: grow or shrink the mapping, moving page tables rather than bytes */
    size_t nlen = page_round(n + BUF_HDR);
    void *m = mremap(h, len, nlen, MREMAP_MAYMOVE);
    if (m == MAP_FAILED) out_of_memory();
    *(size_t *)m = nlen;
    return (char *)m + BUF_HDR;
  }
  if (n >= BUF_BIG) { /* outgrows the heap: move it to a mapping of its own */
    char *q = buf_map(n);
    size_t old = malloc_usable_size(h) - BUF_HDR;
    memcpy(q, p, old < n ? old : n);
    free(h);
    return q;
  }
  h = realloc(h, n + BUF_HDR);
  if (!h) out_of_memory();
  return h + BUF_HDR;
}

void std_buf_free(void *p) {
  if (!p) return;
  char *h = (char *)p - BUF_HDR;
  size_t len = *(size_t *)h;
  if (len)
    munmap(h, len);
  else
    free(h);
}

static size_t phash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x;
}

static size_t pslot(const PMapSlot *slots, size_t cap, const void *key) {
  size_t i = phash(key) & (cap - 1);
  while (slots[i].key && slots[i].key != key) i = (i + 1) & (cap - 1);
  return i;
}

void *pmap_get(const PMap *m, const void *key) {
  if (!m->cap) return NULL;
  const PMapSlot *s = &m->slots[pslot(m->slots, m->cap, key)];
  return s->key ? s->val : NULL;
}

bool pmap_has(const PMap *m, const void *key) {
  return m->cap && m->slots[pslot(m->slots, m->cap, key)].key != NULL;
}

void pmap_put(PMap *m, const void *key, void *val) {
  if ((m->len + 1) * 4 > m->cap * 3) {
    size_t ncap = m->cap ? m->cap * 2 : 64;
    PMapSlot *ns = std_buf_zalloc(ncap, sizeof *ns);
    for (size_t i = 0; i < m->cap; i++)
      if (m->slots[i].key) ns[pslot(ns, ncap, m->slots[i].key)] = m->slots[i];
    std_buf_free(m->slots);
    m->slots = ns;
    m->cap = ncap;
  }
  PMapSlot *s = &m->slots[pslot(m->slots, m->cap, key)];
  if (!s->key) {
    s->key = key;
    m->len++;
  }
  s->val = val;
}

void pmap_free(PMap *m) {
  std_buf_free(m->slots);
  memset(m, 0, sizeof *m);
}

int std_pass_args(const char *pass, const GPAny *args, int32_t nargs, GPModule **mod, GPPassContext **ctx) {
  if (nargs != 2 || args[0].type_index != GP_TI_MODULE || !args[0].v_obj ||
      args[1].type_index != GP_TI_OPAQUE_PTR) {
    H->error_set(GP_ERR_VALUE, "%s: expects (module, pass context), got %d arguments", pass, (int)nargs);
    return -1;
  }
  *mod = (GPModule *)args[0].v_obj;
  *ctx = (GPPassContext *)args[1].v_ptr;
  return 0;
}

int std_return_module(GPAny *result, GPModule *mod) {
  if (!mod) return -1;
  result->type_index = GP_TI_MODULE;
  result->zero_padding = 0;
  result->v_obj = &mod->obj;
  return 0;
}

bool std_config_bool(GPPassContext *ctx, const char *key, bool dflt) {
  GPAny v = {0};
  if (!ctx || H->ctx_get_config(ctx, key, &v) != 0) {
    H->error_clear();
    return dflt;
  }
  return v.type_index == GP_TI_BOOL || v.type_index == GP_TI_INT ? v.v_int64 != 0 : dflt;
}

const char *std_config_str(GPPassContext *ctx, const char *key, const char *dflt) {
  GPAny v = {0};
  if (!ctx || H->ctx_get_config(ctx, key, &v) != 0) {
    H->error_clear();
    return dflt;
  }
  if (v.type_index == GP_TI_RAW_STR) return v.v_c_str;
  if (v.type_index == GP_TI_STR) return ((GPString *)v.v_obj)->data;
  return dflt;
}

int64_t std_config_int(GPPassContext *ctx, const char *key, int64_t dflt) {
  GPAny v = {0};
  if (!ctx || H->ctx_get_config(ctx, key, &v) != 0) {
    H->error_clear();
    return dflt;
  }
  return v.type_index == GP_TI_INT || v.type_index == GP_TI_BOOL ? v.v_int64 : dflt;
}
