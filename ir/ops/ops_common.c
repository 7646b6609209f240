/* ops_common.c -- shared helpers of the built-in ops and gp_ops_register_builtin. */
#include "ir/ops/ops.h"
#include "eval/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gp_ops_register_builtin(void) {
  gp_ops_register_elemwise();
  gp_ops_register_nn();
  gp_ops_register_transform();
  gp_ops_register_reduce();
  gp_ops_register_logic();
  gp_ops_register_sort();
  gp_ops_register_index();
  gp_ops_register_image();
  gp_ops_register_annotation();
  gp_kernels_register_builtin();
}

void gp_ops_def(const char *name, int32_t num_inputs, int32_t pattern, uint32_t flags,
                const GPAttrField *attrs, int32_t num_attrs, GPTypeRelFn rel, const char *help) {
  GPOpDef def;
  memset(&def, 0, sizeof def);
  def.struct_size = sizeof def;
  def.abi_version = GP_ABI_VERSION;
  def.name = name;
  def.num_inputs = num_inputs;
  def.pattern = pattern;
  def.flags = flags;
  def.attrs = num_attrs ? attrs : NULL;
  def.num_attrs = num_attrs;
  def.type_rel = rel;
  def.type_rel_user = NULL;
  def.help = help;
  if (!gp_op_register(&def, false)) {
    fprintf(stderr, "graphpass: cannot register built-in op %s: %s\n", name, gp_error_message());
    abort();
  }
}

void gp_ops_set_fill(const char *name, GPTypeFillFn fill) {
  const GPOp *op = NULL;
  for (int32_t i = 0; !op; i++) {
    const GPOp *o = gp_op_at(i);
    if (!o) break;
    if (strcmp(o->name, name) == 0) op = o; /* the first registration: built-ins come first */
  }
  if (!op || gp_op_set_fill(op, fill) != 0) {
    fprintf(stderr, "graphpass: no built-in op '%s' to attach a type fill to\n", name);
    abort();
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Formatting                                                                                  */

static void str_put(GPOpsStr *r, size_t *len, const char *s) {
  size_t cap = sizeof r->s;
  while (*s && *len + 1 < cap) r->s[(*len)++] = *s++;
  if (*s && cap > 4) memcpy(r->s + cap - 4, "...", 3), *len = cap - 1;
  r->s[*len] = '\0';
}

static GPOpsStr list_str(int32_t n, const int64_t *v, char open, char close, bool any) {
  GPOpsStr r;
  size_t len = 0;
  char tmp[32];
  r.s[0] = '\0';
  snprintf(tmp, sizeof tmp, "%c", open);
  str_put(&r, &len, tmp);
  for (int32_t i = 0; i < n; i++) {
    if (any && v[i] == GP_DIM_ANY)
      snprintf(tmp, sizeof tmp, "%s?", i ? ", " : "");
    else
      snprintf(tmp, sizeof tmp, "%s%lld", i ? ", " : "", (long long)v[i]);
    str_put(&r, &len, tmp);
  }
  snprintf(tmp, sizeof tmp, "%c", close);
  str_put(&r, &len, tmp);
  return r;
}

GPOpsStr gp_ops_dims(int32_t n, const int64_t *dims) { return list_str(n, dims, '(', ')', true); }

GPOpsStr gp_ops_ints(int32_t n, const int64_t *v) { return list_str(n, v, '[', ']', false); }

GPOpsStr gp_ops_type(const GPType *t) {
  GPOpsStr r;
  size_t len = 0;
  GPBuf b = {0};
  gp_type_print(&b, t);
  r.s[0] = '\0';
  str_put(&r, &len, b.data ? b.data : "");
  gp_buf_free(&b);
  return r;
}

GPOpsStr gp_ops_shape(const GPType *t) {
  if (t && t->kind == GP_TYPE_TENSOR) return gp_ops_dims(t->n, t->tensor.shape);
  return gp_ops_type(t);
}

GPOpsStr gp_ops_dtype(DLDataType t) {
  GPOpsStr r;
  char buf[32];
  if (t.bits == 0) {
    snprintf(r.s, sizeof r.s, "void");
    return r;
  }
  snprintf(r.s, sizeof r.s, "%s", gp_dtype_str(t, buf));
  return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Arguments and attributes                                                                    */

int gp_ops_nargs(int32_t nargs, int32_t want) {
  if (nargs == want) return 0;
  gp_error_set(GP_ERR_TYPE, "expects %d argument%s, got %d", (int)want, want == 1 ? "" : "s",
               (int)nargs);
  return -1;
}

const GPType *gp_ops_tensor(const GPType *const *args, int32_t i, const char *what) {
  const GPType *t = args[i];
  if (!t) {
    gp_error_set(GP_ERR_TYPE, "the type of %s is unknown", what);
    return NULL;
  }
  if (t->kind != GP_TYPE_TENSOR) {
    gp_error_set(GP_ERR_TYPE, "%s must be a tensor, got %s", what, gp_ops_type(t).s);
    return NULL;
  }
  if (t->n > GP_OPS_MAX_RANK) {
    gp_error_set(GP_ERR_TYPE, "%s has rank %d; at most %d is supported", what, (int)t->n,
                 GP_OPS_MAX_RANK);
    return NULL;
  }
  return t;
}

static const GPAttrValue k_none = {.kind = GP_ATTR_NONE};

const GPAttrValue *gp_ops_attr(const GPOp *op, const GPAttrs *attrs, const char *key) {
  const GPAttrValue *v = gp_attrs_get(attrs, key);
  if (v && v->kind != GP_ATTR_NONE) return v;
  for (int32_t i = 0; op && i < op->num_attrs; i++)
    if (strcmp(op->attrs[i].name, key) == 0) return &op->attrs[i].default_value;
  return v ? v : &k_none;
}

bool gp_ops_attr_none(const GPOp *op, const GPAttrs *attrs, const char *key) {
  return gp_ops_attr(op, attrs, key)->kind == GP_ATTR_NONE;
}

int64_t gp_ops_attr_int(const GPOp *op, const GPAttrs *attrs, const char *key) {
  const GPAttrValue *v = gp_ops_attr(op, attrs, key);
  if (v->kind == GP_ATTR_INT || v->kind == GP_ATTR_BOOL) return v->i;
  if (v->kind == GP_ATTR_FLOAT) return (int64_t)v->f;
  if (v->kind == GP_ATTR_INTS && v->n == 1) return v->ints[0];
  return 0;
}

bool gp_ops_attr_bool(const GPOp *op, const GPAttrs *attrs, const char *key) {
  return gp_ops_attr_int(op, attrs, key) != 0;
}

double gp_ops_attr_float(const GPOp *op, const GPAttrs *attrs, const char *key) {
  const GPAttrValue *v = gp_ops_attr(op, attrs, key);
  if (v->kind == GP_ATTR_FLOAT) return v->f;
  if (v->kind == GP_ATTR_INT || v->kind == GP_ATTR_BOOL) return (double)v->i;
  return 0.0;
}

const char *gp_ops_attr_str(const GPOp *op, const GPAttrs *attrs, const char *key) {
  const GPAttrValue *v = gp_ops_attr(op, attrs, key);
  return v->kind == GP_ATTR_STR && v->s ? v->s : "";
}

DLDataType gp_ops_attr_dtype(const GPOp *op, const GPAttrs *attrs, const char *key) {
  const GPAttrValue *v = gp_ops_attr(op, attrs, key);
  if (v->kind == GP_ATTR_DTYPE) return v->dtype;
  if (v->kind == GP_ATTR_STR && v->s && v->s[0]) {
    DLDataType t;
    if (gp_dtype_parse(v->s, strlen(v->s), &t) == 0) return t;
  }
  return (DLDataType){0, 0, 0};
}

const int64_t *gp_ops_attr_ints(const GPOp *op, const GPAttrs *attrs, const char *key,
                                int32_t *n) {
  const GPAttrValue *v = gp_ops_attr(op, attrs, key);
  if (v->kind == GP_ATTR_INTS) {
    *n = v->n;
    return v->ints;
  }
  if (v->kind == GP_ATTR_INT) {
    *n = 1;
    return &v->i;
  }
  *n = -1;
  return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Shapes                                                                                      */

int gp_ops_axis(int64_t axis, int32_t ndim, const char *attr, const GPType *t, int32_t *out) {
  if (axis < -(int64_t)ndim || axis >= ndim) {
    gp_error_set(GP_ERR_TYPE, "%s %lld is out of range for data of rank %d (shape %s)", attr,
                 (long long)axis, (int)ndim, gp_ops_shape(t).s);
    return -1;
  }
  *out = (int32_t)(axis < 0 ? axis + ndim : axis);
  return 0;
}

int gp_ops_same_dtype(const GPType *a, const char *an, const GPType *b, const char *bn) {
  if (gp_dtype_eq(a->tensor.dtype, b->tensor.dtype)) return 0;
  gp_error_set(GP_ERR_TYPE, "data types of %s (%s) and %s (%s) do not match", an,
               gp_ops_dtype(a->tensor.dtype).s, bn, gp_ops_dtype(b->tensor.dtype).s);
  return -1;
}

int gp_ops_broadcast(const GPType *a, const char *an, const GPType *b, const char *bn,
                     const GPType **out) {
  if (gp_ops_same_dtype(a, an, b, bn) != 0) return -1;
  int32_t n = a->n > b->n ? a->n : b->n;
  int64_t shape[GP_OPS_MAX_RANK];
  for (int32_t i = 0; i < n; i++) {
    /* aligned from the right */
    int32_t ia = a->n - n + i, ib = b->n - n + i;
    int64_t da = ia >= 0 ? a->tensor.shape[ia] : 1;
    int64_t db = ib >= 0 ? b->tensor.shape[ib] : 1;
    int64_t d;
    if (da == db)
      d = da;
    else if (da == 1)
      d = db;
    else if (db == 1)
      d = da;
    else if (da == GP_DIM_ANY)
      d = db;
    else if (db == GP_DIM_ANY)
      d = da;
    else {
      gp_error_set(GP_ERR_TYPE,
                   "shapes %s of %s and %s of %s do not broadcast: %lld vs %lld at axis %d",
                   gp_ops_shape(a).s, an, gp_ops_shape(b).s, bn, (long long)da, (long long)db,
                   (int)(i - n));
      return -1;
    }
    shape[i] = d;
  }
  return gp_ops_ret(a->tensor.dtype, n, shape, out);
}

int gp_ops_ret(DLDataType dt, int32_t ndim, const int64_t *shape, const GPType **out) {
  const GPType *t = gp_type_tensor(dt, ndim, shape);
  if (!t) {
    if (gp_error_kind() == GP_OK)
      gp_error_set(GP_ERR_TYPE, "invalid result type of shape %s", gp_ops_dims(ndim, shape).s);
    else
      gp_error_set_kind(GP_ERR_TYPE);
    return -1;
  }
  *out = t;
  return 0;
}

int gp_ops_pad4(const int64_t *pad, int32_t n, const char *attr, int64_t out[4]) {
  if (n == 1) {
    out[0] = out[1] = out[2] = out[3] = pad[0];
  } else if (n == 2) {
    out[0] = out[2] = pad[0];
    out[1] = out[3] = pad[1];
  } else if (n == 4) {
    memcpy(out, pad, 4 * sizeof(int64_t));
  } else {
    gp_error_set(GP_ERR_TYPE, "%s must have 1, 2 or 4 values, got %s", attr,
                 n < 0 ? "None" : gp_ops_ints(n, pad).s);
    return -1;
  }
  for (int i = 0; i < 4; i++)
    if (out[i] < 0) {
      gp_error_set(GP_ERR_TYPE, "%s %s has a negative value", attr, gp_ops_ints(n, pad).s);
      return -1;
    }
  return 0;
}

int gp_ops_ints_check(const int64_t *v, int32_t n, int32_t want, int64_t min, const char *attr) {
  if (n != want) {
    gp_error_set(GP_ERR_TYPE, "%s must have %d values, got %s", attr, (int)want,
                 n < 0 ? "None" : gp_ops_ints(n, v).s);
    return -1;
  }
  for (int32_t i = 0; i < n; i++)
    if (v[i] < min) {
      gp_error_set(GP_ERR_TYPE, "%s %s must be >= %lld", attr, gp_ops_ints(n, v).s,
                   (long long)min);
      return -1;
    }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Layouts                                                                                     */

int gp_layout_parse(const char *s, const char *attr, GPLayout *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->text, sizeof out->text, "%s", s);
  const char *p = s;
  if (!*p) {
    gp_error_set(GP_ERR_TYPE, "%s is empty", attr);
    return -1;
  }
  while (*p) {
    int64_t f = 0;
    bool digits = false;
    while (*p >= '0' && *p <= '9') {
      if (f > (int64_t)1 << 40) break;
      f = f * 10 + (*p++ - '0');
      digits = true;
    }
    char c = *p;
    bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z';
    const char *why = NULL;
    if (!upper && !lower)
      why = "expected an axis letter";
    else if (upper && digits)
      why = "a primal (upper-case) axis cannot have a block size";
    else if (lower && (!digits || f <= 0))
      why = "a subordinate (lower-case) axis needs a positive block size";
    else if (out->n >= GP_LAYOUT_MAX)
      why = "too many axes";
    else if (gp_layout_index(out, c) >= 0)
      why = "repeated axis";
    if (why) {
      gp_error_set(GP_ERR_TYPE, "%s \"%s\" is not a valid layout: %s at offset %d", attr, s, why,
                   (int)(p - s));
      return -1;
    }
    out->axis[out->n] = c;
    out->factor[out->n] = lower ? f : 0;
    out->n++;
    p++;
  }
  for (int32_t i = 0; i < out->n; i++)
    if (out->factor[i] && gp_layout_index(out, (char)(out->axis[i] - 'a' + 'A')) < 0) {
      gp_error_set(GP_ERR_TYPE, "%s \"%s\" is not a valid layout: block axis %c has no primal %c",
                   attr, s, out->axis[i], out->axis[i] - 'a' + 'A');
      return -1;
    }
  return 0;
}

int32_t gp_layout_index(const GPLayout *l, char axis) {
  for (int32_t i = 0; i < l->n; i++)
    if (l->axis[i] == axis) return i;
  return -1;
}

int gp_layout_require(const GPLayout *l, const char *primal, bool no_split, const char *attr) {
  int32_t nprimal = 0;
  for (int32_t i = 0; i < l->n; i++) nprimal += l->factor[i] == 0;
  bool ok = (size_t)nprimal == strlen(primal);
  for (const char *p = primal; ok && *p; p++) {
    if (gp_layout_index(l, *p) < 0) ok = false;
    if (no_split && gp_layout_index(l, (char)(*p - 'A' + 'a')) >= 0) ok = false;
  }
  if (!ok) {
    gp_error_set(GP_ERR_TYPE, "%s \"%s\" is not supported: expected the axes %s%s", attr, l->text,
                 primal, no_split ? " (not split)" : "");
    return -1;
  }
  return 0;
}

int gp_layout_to_primal(const GPLayout *l, const GPType *t, const char *what, int64_t primal[26]) {
  if (t->n != l->n) {
    gp_error_set(GP_ERR_TYPE, "%s has rank %d (shape %s) but layout %s has %d axes", what,
                 (int)t->n, gp_ops_shape(t).s, l->text, (int)l->n);
    return -1;
  }
  for (int i = 0; i < 26; i++) primal[i] = -2;
  for (int32_t i = 0; i < l->n; i++)
    if (!l->factor[i]) primal[l->axis[i] - 'A'] = t->tensor.shape[i];
  for (int32_t i = 0; i < l->n; i++) {
    if (!l->factor[i]) continue;
    int64_t d = t->tensor.shape[i];
    if (d != GP_DIM_ANY && d != l->factor[i]) {
      gp_error_set(GP_ERR_TYPE, "%s (shape %s) has %lld at axis %d but layout %s blocks it by %lld",
                   what, gp_ops_shape(t).s, (long long)d, (int)i, l->text,
                   (long long)l->factor[i]);
      return -1;
    }
    int k = l->axis[i] - 'a';
    primal[k] = gp_ops_dim_mul(primal[k], l->factor[i]);
  }
  return 0;
}

int gp_layout_from_primal(const GPLayout *l, const int64_t primal[26], int64_t *shape) {
  for (int32_t i = 0; i < l->n; i++) {
    if (l->factor[i]) {
      shape[i] = l->factor[i];
      continue;
    }
    int64_t d = primal[l->axis[i] - 'A'];
    int32_t sub = gp_layout_index(l, (char)(l->axis[i] - 'A' + 'a'));
    if (d == -2) {
      gp_error_set(GP_ERR_TYPE, "layout %s has an axis %c the source does not have", l->text,
                   l->axis[i]);
      return -1;
    }
    if (sub >= 0 && d != GP_DIM_ANY) d = (d + l->factor[sub] - 1) / l->factor[sub];
    shape[i] = d;
  }
  return 0;
}
