/* util.c -- the one allocator, byte buffers, vectors, hash maps. */
#include "ir.h"
#include "../common/scratch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void gp_oom(size_t size) {
  fprintf(stderr, "graphpass: out of memory (%zu bytes)\n", size);
  abort();
}

void *gp_malloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (!p) gp_oom(size);
  return p;
}

void *gp_calloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) gp_oom(n * size);
  return p;
}

void *gp_realloc(void *p, size_t size) {
  void *q = realloc(p, size ? size : 1);
  if (!q) gp_oom(size);
  return q;
}

void gp_free(void *p) { free(p); }

char *gp_strdup(const char *s) { return gp_strndup(s, strlen(s)); }

char *gp_strndup(const char *s, size_t n) {
  char *d = gp_malloc(n + 1);
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

/* ---- GPBuf */

static void buf_reserve(GPBuf *b, size_t extra) {
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap *= 2;
  b->data = gp_realloc(b->data, cap);
  b->cap = cap;
}

void gp_buf_put(GPBuf *b, const char *s, size_t n) {
  buf_reserve(b, n);
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void gp_buf_putc(GPBuf *b, char c) {
  buf_reserve(b, 1);
  b->data[b->len++] = c;
  b->data[b->len] = 0;
}

void gp_buf_puts(GPBuf *b, const char *s) { gp_buf_put(b, s, strlen(s)); }

void gp_buf_printf(GPBuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    gp_buf_put(b, small, (size_t)n);
    return;
  }
  buf_reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

char *gp_buf_take(GPBuf *b) {
  char *d = b->data ? b->data : gp_strdup("");
  b->data = NULL;
  b->len = b->cap = 0;
  return d;
}

void gp_buf_free(GPBuf *b) {
  gp_free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* ---- GPVec */

void gp_vec_push(GPVec *v, void *p) {
  if (v->len == v->cap) {
    v->cap = v->cap ? v->cap * 2 : 8;
    v->items = gp_realloc(v->items, v->cap * sizeof(void *));
  }
  v->items[v->len++] = p;
}

void *gp_vec_pop(GPVec *v) { return v->len ? v->items[--v->len] : NULL; }

void gp_vec_free(GPVec *v) {
  gp_free(v->items);
  v->items = NULL;
  v->len = v->cap = 0;
}

/* ---- hashing */

uint64_t gp_hash_bytes(const void *data, size_t n, uint64_t seed) {
  /* FNV-1a over 8-byte words, then a final avalanche. */
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  while (n--) h = (h ^ *p++) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

static inline size_t ptr_hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x;
}

/* ---- GPPtrMap */

static size_t map_slot(const GPPtrMapSlot *slots, size_t cap, const void *key) {
  size_t mask = cap - 1, i = ptr_hash(key) & mask;
  while (slots[i].key && slots[i].key != key) i = (i + 1) & mask;
  return i;
}

void *gp_map_get(const GPPtrMap *m, const void *key) {
  if (!m->cap) return NULL;
  const GPPtrMapSlot *s = &m->slots[map_slot(m->slots, m->cap, key)];
  return s->key ? s->val : NULL;
}

bool gp_map_has(const GPPtrMap *m, const void *key) {
  if (!m->cap) return false;
  return m->slots[map_slot(m->slots, m->cap, key)].key != NULL;
}

static void map_rehash(GPPtrMap *m, size_t ncap) {
  GPPtrMapSlot *ns = gp_scratch_zalloc(ncap, sizeof *ns);
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].key) continue;
    ns[map_slot(ns, ncap, m->slots[i].key)] = m->slots[i];
  }
  gp_scratch_free(m->slots);
  m->slots = ns;
  m->cap = ncap;
}

void gp_map_reserve(GPPtrMap *m, size_t n) {
  size_t need = 16;
  while (need * 3 < n * 4 + 4) need *= 2;
  if (need > m->cap) map_rehash(m, need);
}

void gp_map_put(GPPtrMap *m, const void *key, void *val) {
  if ((m->len + 1) * 4 > m->cap * 3) map_rehash(m, m->cap ? m->cap * 2 : 16);
  GPPtrMapSlot *s = &m->slots[map_slot(m->slots, m->cap, key)];
  if (!s->key) {
    s->key = (void *)key;
    m->len++;
  }
  s->val = val;
}

void gp_map_free(GPPtrMap *m) {
  gp_scratch_free(m->slots);
  memset(m, 0, sizeof *m);
}

/* ---- GPStrMap (linear probing, tombstones avoided by backward-shift deletion) */

static size_t str_hash(const char *s) { return (size_t)gp_hash_bytes(s, strlen(s), 0); }

static size_t strmap_slot(char *const *keys, size_t cap, const char *key) {
  size_t mask = cap - 1, i = str_hash(key) & mask;
  while (keys[i] && strcmp(keys[i], key) != 0) i = (i + 1) & mask;
  return i;
}

void *gp_strmap_get(const GPStrMap *m, const char *key) {
  if (!m->cap) return NULL;
  size_t i = strmap_slot(m->keys, m->cap, key);
  return m->keys[i] ? m->vals[i] : NULL;
}

bool gp_strmap_has(const GPStrMap *m, const char *key) {
  if (!m->cap) return false;
  return m->keys[strmap_slot(m->keys, m->cap, key)] != NULL;
}

static void strmap_grow(GPStrMap *m) {
  size_t ncap = m->cap ? m->cap * 2 : 16;
  char **nk = gp_calloc(ncap, sizeof(char *));
  void **nv = gp_calloc(ncap, sizeof(void *));
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = strmap_slot(nk, ncap, m->keys[i]);
    nk[j] = m->keys[i];
    nv[j] = m->vals[i];
  }
  gp_free(m->keys);
  gp_free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = ncap;
}

void gp_strmap_put(GPStrMap *m, const char *key, void *val) {
  if ((m->len + 1) * 4 > m->cap * 3) strmap_grow(m);
  size_t i = strmap_slot(m->keys, m->cap, key);
  if (!m->keys[i]) {
    m->keys[i] = gp_strdup(key);
    m->len++;
  }
  m->vals[i] = val;
}

void *gp_strmap_remove(GPStrMap *m, const char *key) {
  if (!m->cap) return NULL;
  size_t mask = m->cap - 1, i = strmap_slot(m->keys, m->cap, key);
  if (!m->keys[i]) return NULL;
  void *old = m->vals[i];
  gp_free(m->keys[i]);
  m->keys[i] = NULL;
  m->vals[i] = NULL;
  m->len--;
  /* backward-shift: re-insert the rest of the cluster */
  for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
    char *k = m->keys[j];
    void *v = m->vals[j];
    m->keys[j] = NULL;
    m->vals[j] = NULL;
    size_t s = strmap_slot(m->keys, m->cap, k);
    m->keys[s] = k;
    m->vals[s] = v;
  }
  return old;
}

void gp_strmap_free(GPStrMap *m) {
  for (size_t i = 0; i < m->cap; i++) gp_free(m->keys[i]);
  gp_free(m->keys);
  gp_free(m->vals);
  memset(m, 0, sizeof *m);
}

char *gp_read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) {
    gp_error_set(GP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  GPBuf b = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) gp_buf_put(&b, chunk, n);
  bool err = ferror(f);
  if (f != stdin) fclose(f);
  if (err) {
    gp_buf_free(&b);
    gp_error_set(GP_ERR_IO, "%s: read error", path);
    return NULL;
  }
  if (len) *len = b.len;
  return gp_buf_take(&b);
}
