/* support.c -- plugin-local helpers: a pointer map, child access, the pass calling convention. */
#include "passes.h"

#include <malloc.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

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
    PMapSlot *ns = gp_scratch_zalloc(ncap, sizeof *ns);
    for (size_t i = 0; i < m->cap; i++)
      if (m->slots[i].key) ns[pslot(ns, ncap, m->slots[i].key)] = m->slots[i];
    gp_scratch_free(m->slots);
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
  gp_scratch_free(m->slots);
  memset(m, 0, sizeof *m);
}

int std_verdict(const GPAny *res, char *why, size_t n) {
  if (n) why[0] = 0;
  if (res->type_index == GP_TI_BOOL || res->type_index == GP_TI_INT) return res->v_int64 != 0;
  if (res->type_index == GP_TI_STR && res->v_obj) {
    const GPString *str = (const GPString *)res->v_obj;
    if (n) snprintf(why, n, "%.*s", (int)(str->size < n ? str->size : n - 1), str->data);
    return 0;
  }
  if (res->type_index == GP_TI_RAW_STR && res->v_c_str) {
    if (n) snprintf(why, n, "%s", res->v_c_str);
    return 0;
  }
  return -1;
}

bool std_seen_mark(StdSeen *s, const GPExpr *e, uintptr_t bit) {
  PMap *m = e->line ? &s->at_loc : &s->at_node;
  const void *key = e->line ? (const void *)(uintptr_t)((uint64_t)e->line << 32 | e->col) : (const void *)e;
  uintptr_t mask = (uintptr_t)pmap_get(m, key);
  if (mask & bit) return true;
  pmap_put(m, key, (void *)(mask | bit));
  return false;
}

void std_seen_free(StdSeen *s) {
  pmap_free(&s->at_loc);
  pmap_free(&s->at_node);
}

static char no_hook_mark;
#define NO_HOOK ((void *)&no_hook_mark)

GPPackedFunc *std_hook_of(StdHooks *h, const GPOp *op, bool *err) {
  void *cached = pmap_get(&h->cache, op);
  if (cached) return cached == NO_HOOK ? NULL : cached;
  GPAny v = {0};
  int found = H->op_get_attr(op, h->key, &v);
  if (found < 0) {
    *err = true;
    return NULL;
  }
  if (!found || v.type_index == GP_TI_NONE) {
    pmap_put(&h->cache, op, NO_HOOK);
    return NULL;
  }
  if (v.type_index != GP_TI_FUNCTION || !v.v_obj) {
    char what[128];
    std_describe_any(&v, what, sizeof what);
    H->any_clear(&v);
    H->error_set(GP_ERR_TYPE, "its %s attribute is %s, not a packed function", h->key, what);
    *err = true;
    return NULL;
  }
  pmap_put(&h->cache, op, v.v_obj); /* the cache owns the reference */
  return (GPPackedFunc *)v.v_obj;
}

void std_hooks_free(StdHooks *h) {
  for (size_t i = 0; i < h->cache.cap; i++)
    if (h->cache.slots[i].key && h->cache.slots[i].val != NO_HOOK) gp_release(h->cache.slots[i].val);
  pmap_free(&h->cache);
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

void std_note(GPPassContext *ctx, const char *fmt, ...) {
  if (!ctx || !GP_HAS_FIELD(H, GPHostAPI, ctx_note) || !H->ctx_note) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  H->ctx_note(ctx, "%s", buf);
}
