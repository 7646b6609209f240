/* attrs.c -- attribute sets: one allocation holding keys, values and their payloads.
 * A schema field of kind GP_ATTR_NONE accepts a value of any kind (e.g. split's
 * indices_or_sections, an INT or INTS); a NONE value is accepted for any field.
 *
 * Attribute sets are immutable and interned: gp_attrs_new returns the live set equal to the one
 * asked for (same keys in the same order, same kinds, bit-equal values) when there is one.  A
 * model's thousand convolutions then share a handful of sets, and a pass that rebuilds a call
 * reads an attribute set that is already in cache instead of one 500-byte block per call.
 * The table holds no reference: a set is removed by its deleter.  A lookup under the lock takes
 * a reference only while the count is not zero, so a set being freed is never handed out. */
#include "ir.h"
#include "../common/checked.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct AttrsImpl {
  GPAttrs pub;
  uint64_t hash;
  struct AttrsImpl *next; /* intern table chain */
} AttrsImpl;

static struct {
  pthread_mutex_t lock;
  AttrsImpl **buckets;
  size_t nbuckets, count;
} interned = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

static void attrs_free(GPObject *o) {
  AttrsImpl *a = (AttrsImpl *)o;
  pthread_mutex_lock(&interned.lock);
  AttrsImpl **at = &interned.buckets[a->hash & (interned.nbuckets - 1)];
  while (*at && *at != a) at = &(*at)->next;
  if (*at) { /* absent when a lookup found it dying and put an equal set in its place */
    *at = a->next;
    interned.count--;
  }
  pthread_mutex_unlock(&interned.lock);
  gp_node_free(o);
}

static bool value_eq(const GPAttrValue *a, const GPAttrValue *b, bool bitwise);
static uint64_t hash_kv(int32_t n, const char *const *keys, const GPAttrValue *values);

static bool attrs_same(const AttrsImpl *a, uint64_t hash, int32_t n, const char *const *keys,
                       const GPAttrValue *values) {
  if (a->hash != hash || a->pub.n != n) return false;
  for (int32_t i = 0; i < n; i++)
    if (strcmp(a->pub.keys[i], keys[i]) != 0 || !value_eq(&a->pub.values[i], &values[i], true)) return false;
  return true;
}

/* Takes a reference unless the count already reached zero (the set is being freed). */
static bool retain_live(GPObject *o) {
  uint32_t c = __atomic_load_n(&o->ref_count, __ATOMIC_RELAXED);
  while (c != 0)
    if (__atomic_compare_exchange_n(&o->ref_count, &c, c + 1, true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return true;
  return false;
}

static void intern_grow(void) {
  size_t nb = interned.nbuckets ? interned.nbuckets * 2 : 256;
  AttrsImpl **b = gp_calloc(nb, sizeof *b);
  for (size_t i = 0; i < interned.nbuckets; i++)
    for (AttrsImpl *a = interned.buckets[i], *next; a; a = next) {
      next = a->next;
      a->next = b[a->hash & (nb - 1)];
      b[a->hash & (nb - 1)] = a;
    }
  gp_free(interned.buckets);
  interned.buckets = b;
  interned.nbuckets = nb;
}

static size_t payload_size(const GPAttrValue *v) {
  switch (v->kind) {
  case GP_ATTR_STR: return strlen(v->s) + 1;
  case GP_ATTR_INTS: return (size_t)v->n * sizeof(int64_t);
  case GP_ATTR_FLOATS: return (size_t)v->n * sizeof(double);
  default: return 0;
  }
}

static int check_value(const GPAttrValue *v, const char *key) {
  if (v->kind < GP_ATTR_NONE || v->kind > GP_ATTR_FLOATS) {
    gp_error_set(GP_ERR_VALUE, "attribute '%s' has an invalid kind %d", key, (int)v->kind);
    return -1;
  }
  if ((v->kind == GP_ATTR_INTS || v->kind == GP_ATTR_FLOATS) && (v->n < 0 || (v->n && !v->ints))) {
    gp_error_set(GP_ERR_VALUE, "attribute '%s' has an invalid array", key);
    return -1;
  }
  if (v->kind == GP_ATTR_STR && !v->s) {
    gp_error_set(GP_ERR_VALUE, "attribute '%s' has a NULL string", key);
    return -1;
  }
  return 0;
}

GPAttrs *gp_attrs_new(int32_t n, const char *const *keys, const GPAttrValue *values) {
  if (n < 0 || (n && (!keys || !values))) {
    gp_error_set(GP_ERR_VALUE, "attrs_new: bad arguments (n=%d)", (int)n);
    return NULL;
  }
  size_t extra = 0;
  for (int32_t i = 0; i < n; i++) {
    if (!keys[i] || !keys[i][0]) {
      gp_error_set(GP_ERR_VALUE, "attribute %d has an empty name", (int)i);
      return NULL;
    }
    for (int32_t j = 0; j < i; j++)
      if (strcmp(keys[i], keys[j]) == 0) {
        gp_error_set(GP_ERR_VALUE, "attribute '%s' is given twice", keys[i]);
        return NULL;
      }
    if (check_value(&values[i], keys[i]) != 0) return NULL;
    extra += strlen(keys[i]) + 1 + payload_size(&values[i]) + 8;
  }
  uint64_t hash = hash_kv(n, keys, values); /* bit-equal sets are equal sets: one hash */
  pthread_mutex_lock(&interned.lock);
  if (interned.nbuckets) {
    AttrsImpl **at = &interned.buckets[hash & (interned.nbuckets - 1)];
    for (; *at; at = &(*at)->next)
      if (attrs_same(*at, hash, n, keys, values)) {
        AttrsImpl *hit = *at;
        if (retain_live(&hit->pub.obj)) {
          pthread_mutex_unlock(&interned.lock);
          return &hit->pub;
        }
        *at = hit->next; /* dying: its deleter will not find it; an equal new set replaces it */
        interned.count--;
        break;
      }
  }
  size_t head = sizeof(AttrsImpl) + (size_t)n * (sizeof(char *) + sizeof(GPAttrValue));
  head = (head + 7) & ~(size_t)7;
  AttrsImpl *impl = gp_node_object_alloc(head + extra, GP_TI_ATTRS, attrs_free); /* beside its calls */
  GPAttrs *a = &impl->pub;
  impl->hash = hash;
  const char **k = (const char **)(impl + 1);
  GPAttrValue *v = (GPAttrValue *)(k + n);
  char *p = (char *)a + head;
  for (int32_t i = 0; i < n; i++) {
    size_t kl = strlen(keys[i]) + 1;
    memcpy(p, keys[i], kl);
    k[i] = p;
    p += kl;
    p = (char *)(((uintptr_t)p + 7) & ~(uintptr_t)7);
    v[i] = values[i];
    size_t ps = payload_size(&values[i]);
    if (ps) {
      memcpy(p, values[i].kind == GP_ATTR_STR ? (const void *)values[i].s : (const void *)values[i].ints, ps);
      if (values[i].kind == GP_ATTR_STR)
        v[i].s = p;
      else
        v[i].ints = (const int64_t *)p;
      p += ps;
    } else if (values[i].kind == GP_ATTR_INTS || values[i].kind == GP_ATTR_FLOATS) {
      v[i].ints = NULL;
    }
  }
  a->n = n;
  a->keys = k;
  a->values = v;
  if (interned.count >= interned.nbuckets) intern_grow();
  AttrsImpl **bucket = &interned.buckets[hash & (interned.nbuckets - 1)];
  impl->next = *bucket;
  *bucket = impl;
  interned.count++;
  pthread_mutex_unlock(&interned.lock);
  return a;
}

static void list_keys(GPBuf *b, const GPOp *op) {
  for (int32_t i = 0; i < op->num_attrs; i++) {
    if (i) gp_buf_puts(b, ", ");
    gp_buf_puts(b, op->attrs[i].name);
  }
}

static const char *kind_name(int32_t k) {
  static const char *names[] = {"None", "int", "float", "bool", "string", "dtype", "int array", "float array"};
  return k >= 0 && k <= GP_ATTR_FLOATS ? names[k] : "invalid";
}

/* Convert v to the schema kind `want`, into *out (may point into tmp storage). */
static int convert(const GPAttrValue *v, int32_t want, GPAttrValue *out, double *ftmp, size_t ftmp_cap,
                   const GPOp *op, const char *key) {
  *out = *v;
  if (want == GP_ATTR_NONE || v->kind == GP_ATTR_NONE || v->kind == want) return 0;
  switch (want) {
  case GP_ATTR_FLOAT:
    if (v->kind == GP_ATTR_INT) {
      *out = gp_attr_float((double)v->i);
      return 0;
    }
    break;
  case GP_ATTR_INT:
    if (v->kind == GP_ATTR_BOOL) {
      *out = gp_attr_int(v->i);
      return 0;
    }
    break;
  case GP_ATTR_BOOL:
    if (v->kind == GP_ATTR_INT && (v->i == 0 || v->i == 1)) {
      *out = gp_attr_bool(v->i != 0);
      return 0;
    }
    break;
  case GP_ATTR_DTYPE:
    if (v->kind == GP_ATTR_STR) {
      if (!v->s[0]) {
        *out = gp_attr_dtype((DLDataType){0, 0, 0});
        return 0;
      }
      DLDataType dt;
      if (gp_dtype_parse(v->s, strlen(v->s), &dt) != 0) {
        gp_error_prefix("%s: attribute '%s'", op->name, key);
        return -1;
      }
      *out = gp_attr_dtype(dt);
      return 0;
    }
    break;
  case GP_ATTR_INTS:
    if (v->kind == GP_ATTR_INT) {
      /* a single int where an array is expected: TVM accepts e.g. axis=1 for [1] */
      out->kind = GP_ATTR_INTS;
      out->n = 1;
      out->ints = &v->i;
      return 0;
    }
    break;
  case GP_ATTR_FLOATS:
    if (v->kind == GP_ATTR_INTS && (size_t)v->n <= ftmp_cap) {
      for (int32_t i = 0; i < v->n; i++) ftmp[i] = (double)v->ints[i];
      out->kind = GP_ATTR_FLOATS;
      out->floats = ftmp;
      return 0;
    }
    break;
  default:
    break;
  }
  gp_error_set(GP_ERR_VALUE, "%s: attribute '%s' expects %s, got %s", op->name, key, kind_name(want),
               kind_name(v->kind));
  return -1;
}

GPAttrs *gp_op_attrs_new(const GPOp *op, int32_t n, const char *const *keys, const GPAttrValue *values) {
  if (n < 0 || (n && (!keys || !values))) {
    gp_error_set(GP_ERR_VALUE, "op_attrs_new: bad arguments");
    return NULL;
  }
  if (op->num_attrs == 0) {
    if (n > 0) {
      gp_error_set(GP_ERR_VALUE, "%s takes no attributes, got '%s'", op->name, keys[0]);
      return NULL;
    }
    return NULL;
  }
  int32_t m = op->num_attrs;
  const char **k = gp_malloc((size_t)m * sizeof(char *));
  GPAttrValue *v = gp_malloc((size_t)m * sizeof(GPAttrValue));
  bool *given = gp_calloc((size_t)m, sizeof(bool));
  double *ftmp = gp_malloc(64 * (size_t)m * sizeof(double));
  GPAttrs *result = NULL;
  for (int32_t i = 0; i < m; i++) {
    k[i] = op->attrs[i].name;
    v[i] = op->attrs[i].default_value;
  }
  for (int32_t i = 0; i < n; i++) {
    int32_t idx = -1;
    for (int32_t j = 0; j < m; j++)
      if (keys[i] && strcmp(keys[i], op->attrs[j].name) == 0) idx = j;
    if (idx < 0) {
      GPBuf b = {0};
      list_keys(&b, op);
      gp_error_set(GP_ERR_VALUE, "%s has no attribute '%s' (valid: %s)", op->name, keys[i] ? keys[i] : "(null)",
                   b.data);
      gp_buf_free(&b);
      goto done;
    }
    if (given[idx]) {
      gp_error_set(GP_ERR_VALUE, "%s: attribute '%s' is given twice", op->name, keys[i]);
      goto done;
    }
    if (check_value(&values[i], keys[i]) != 0) goto done;
    given[idx] = true;
    if (convert(&values[i], op->attrs[idx].kind, &v[idx], ftmp + 64 * idx, 64, op, keys[i]) != 0) goto done;
  }
  for (int32_t j = 0; j < m; j++)
    if (op->attrs[j].required && !given[j]) {
      gp_error_set(GP_ERR_VALUE, "%s: required attribute '%s' is missing", op->name, op->attrs[j].name);
      goto done;
    }
  result = gp_attrs_new(m, k, v);
done:
  gp_free(k);
  gp_free(v);
  gp_free(given);
  gp_free(ftmp);
  return result;
}

const GPAttrValue *gp_attrs_get(const GPAttrs *a, const char *key) {
  if (!a) return NULL;
  for (int32_t i = 0; i < a->n; i++)
    if (strcmp(a->keys[i], key) == 0) return &a->values[i];
  return NULL;
}

int64_t gp_attrs_int(const GPAttrs *a, const char *key, int64_t dflt) {
  const GPAttrValue *v = gp_attrs_get(a, key);
  if (!v) return dflt;
  if (v->kind == GP_ATTR_INT || v->kind == GP_ATTR_BOOL) return v->i;
  if (v->kind == GP_ATTR_FLOAT) return gp_f64_to_i64_sat(v->f);
  return dflt;
}

double gp_attrs_float(const GPAttrs *a, const char *key, double dflt) {
  const GPAttrValue *v = gp_attrs_get(a, key);
  if (!v) return dflt;
  if (v->kind == GP_ATTR_FLOAT) return v->f;
  if (v->kind == GP_ATTR_INT || v->kind == GP_ATTR_BOOL) return (double)v->i;
  return dflt;
}

/* Equal values; `bitwise` (interning) tells 0.0 from -0.0 and NaNs apart by their bits, as the
 * printed text does. */
static bool value_eq(const GPAttrValue *a, const GPAttrValue *b, bool bitwise) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case GP_ATTR_NONE: return true;
  case GP_ATTR_INT:
  case GP_ATTR_BOOL: return a->i == b->i;
  case GP_ATTR_FLOAT:
    if (bitwise) return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    return a->f == b->f || (isnan(a->f) && isnan(b->f));
  case GP_ATTR_STR: return strcmp(a->s, b->s) == 0;
  case GP_ATTR_DTYPE: return gp_dtype_eq(a->dtype, b->dtype);
  case GP_ATTR_INTS: return a->n == b->n && (!a->n || memcmp(a->ints, b->ints, (size_t)a->n * 8) == 0);
  case GP_ATTR_FLOATS:
    if (a->n != b->n) return false;
    if (bitwise) return !a->n || memcmp(a->floats, b->floats, (size_t)a->n * 8) == 0;
    for (int32_t i = 0; i < a->n; i++)
      if (a->floats[i] != b->floats[i]) return false;
    return true;
  default: return false;
  }
}

bool gp_attr_value_eq(const GPAttrValue *a, const GPAttrValue *b) { return value_eq(a, b, false); }

bool gp_attrs_eq(const GPAttrs *a, const GPAttrs *b) {
  if (a == b) return true;
  if (!a || !b || a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++)
    if (strcmp(a->keys[i], b->keys[i]) != 0 || !gp_attr_value_eq(&a->values[i], &b->values[i])) return false;
  return true;
}

static uint64_t hash_kv(int32_t n, const char *const *keys, const GPAttrValue *values) {
  uint64_t h = (uint64_t)n;
  for (int32_t i = 0; i < n; i++) {
    const GPAttrValue *v = &values[i];
    h = gp_hash_mix(h, gp_hash_bytes(keys[i], strlen(keys[i]), 1));
    h = gp_hash_mix(h, (uint64_t)v->kind);
    switch (v->kind) {
    case GP_ATTR_INT:
    case GP_ATTR_BOOL: h = gp_hash_mix(h, (uint64_t)v->i); break;
    case GP_ATTR_FLOAT: {
      double f = v->f == 0 ? 0 : v->f;
      uint64_t u;
      memcpy(&u, &f, 8);
      h = gp_hash_mix(h, u);
      break;
    }
    case GP_ATTR_STR: h = gp_hash_mix(h, gp_hash_bytes(v->s, strlen(v->s), 2)); break;
    case GP_ATTR_DTYPE: h = gp_hash_mix(h, (uint64_t)v->dtype.code << 24 | (uint64_t)v->dtype.bits << 16 | v->dtype.lanes); break;
    case GP_ATTR_INTS: h = gp_hash_mix(h, gp_hash_bytes(v->ints, (size_t)v->n * 8, 3)); break;
    case GP_ATTR_FLOATS: h = gp_hash_mix(h, gp_hash_bytes(v->floats, (size_t)v->n * 8, 4)); break;
    default: break;
    }
  }
  return h;
}

uint64_t gp_attrs_hash(const GPAttrs *a) { return a ? hash_kv(a->n, a->keys, a->values) : 0x51ed270b27c1d3b1ull; }

/* Shortest decimal that reads back as the same double. */
static void print_double(GPBuf *b, double f) {
  char tmp[40];
  if (isnan(f)) {
    gp_buf_puts(b, "nan");
    return;
  }
  if (isinf(f)) {
    gp_buf_puts(b, f < 0 ? "-inf" : "inf");
    return;
  }
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, f);
    if (strtod(tmp, NULL) == f) break;
  }
  gp_buf_puts(b, tmp);
}

void gp_attr_value_print(GPBuf *b, const GPAttrValue *v) {
  char dt[24];
  switch (v->kind) {
  case GP_ATTR_NONE: gp_buf_puts(b, "None"); break;
  case GP_ATTR_INT: gp_buf_printf(b, "%lld", (long long)v->i); break;
  case GP_ATTR_BOOL: gp_buf_puts(b, v->i ? "True" : "False"); break;
  case GP_ATTR_FLOAT:
    print_double(b, v->f);
    gp_buf_putc(b, 'f');
    break;
  case GP_ATTR_DTYPE:
    gp_buf_putc(b, '"');
    if (v->dtype.bits) gp_buf_puts(b, gp_dtype_str(v->dtype, dt));
    gp_buf_putc(b, '"');
    break;
  case GP_ATTR_STR:
    gp_buf_putc(b, '"');
    for (const char *s = v->s; *s; s++) {
      unsigned char c = (unsigned char)*s;
      if (c == '"' || c == '\\')
        gp_buf_printf(b, "\\%c", c);
      else if (c == '\n')
        gp_buf_puts(b, "\\n");
      else if (c == '\t')
        gp_buf_puts(b, "\\t");
      else if (c < 0x20)
        gp_buf_printf(b, "\\x%02x", c);
      else
        gp_buf_putc(b, (char)c);
    }
    gp_buf_putc(b, '"');
    break;
  case GP_ATTR_INTS:
  case GP_ATTR_FLOATS:
    gp_buf_putc(b, '[');
    for (int32_t i = 0; i < v->n; i++) {
      if (i) gp_buf_puts(b, ", ");
      if (v->kind == GP_ATTR_INTS) {
        gp_buf_printf(b, "%lld", (long long)v->ints[i]);
      } else {
        print_double(b, v->floats[i]);
        gp_buf_putc(b, 'f');
      }
    }
    gp_buf_putc(b, ']');
    break;
  default: gp_buf_puts(b, "<invalid>"); break;
  }
}

GPAttrValue gp_attr_int(int64_t v) { return (GPAttrValue){.kind = GP_ATTR_INT, .i = v}; }
GPAttrValue gp_attr_float(double v) { return (GPAttrValue){.kind = GP_ATTR_FLOAT, .f = v}; }
GPAttrValue gp_attr_bool(bool v) { return (GPAttrValue){.kind = GP_ATTR_BOOL, .i = v ? 1 : 0}; }
GPAttrValue gp_attr_str(const char *s) { return (GPAttrValue){.kind = GP_ATTR_STR, .s = s}; }
GPAttrValue gp_attr_ints(int32_t n, const int64_t *v) { return (GPAttrValue){.kind = GP_ATTR_INTS, .n = n, .ints = v}; }
GPAttrValue gp_attr_dtype(DLDataType t) { return (GPAttrValue){.kind = GP_ATTR_DTYPE, .dtype = t}; }

bool gp_attr_in_pairs(const char *op, const char *key) {
  static const char *const pairs[][2] = {{"nn.pad", "pad_width"},
                                         {"nn.mirror_pad", "pad_width"},
                                         {"nn.space_to_batch_nd", "paddings"},
                                         {"nn.batch_to_space_nd", "crops"}};
  for (size_t i = 0; op && key && i < sizeof pairs / sizeof pairs[0]; i++)
    if (strcmp(op, pairs[i][0]) == 0 && strcmp(key, pairs[i][1]) == 0) return true;
  return false;
}
