/* layout.c -- the layout rewriter of ConvertLayout and AlterOpLayout (see layout.h): the ops'
 * layout relations (TVM v0.12's FInferCorrectLayout functions) and TVM's LayoutRewriter, done
 * as one producers-first host rewrite. */
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Layouts                                                                                     */

static const Lay k_undef = {.n = -1};

bool lay_parse(const char *s, Lay *out) {
  *out = k_undef;
  if (!s) return false;
  size_t n = strlen(s);
  if (n > LAY_MAX) return false;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < 'A' || s[i] > 'Z') return false;
    for (size_t j = 0; j < i; j++)
      if (s[j] == s[i]) return false;
  }
  memcpy(out->a, s, n + 1);
  out->n = (int32_t)n;
  return true;
}

static bool lay_def(const Lay *l) { return l->n >= 0; }
static bool lay_eq(const Lay *a, const Lay *b) {
  if (a->n != b->n) return false;
  return a->n < 0 || memcmp(a->a, b->a, (size_t)a->n) == 0;
}
static int32_t lay_index(const Lay *l, char c) {
  for (int32_t i = 0; i < l->n; i++)
    if (l->a[i] == c) return i;
  return -1;
}
static Lay lay_sub(const Lay *l, int32_t start, int32_t len) {
  Lay r = {.n = len};
  memcpy(r.a, l->a + start, (size_t)len);
  r.a[len] = 0;
  return r;
}
static Lay lay_one(char c) {
  Lay r = {.n = 1};
  r.a[0] = c;
  return r;
}
static const char *lay_str(const Lay *l) { return l->n < 0 ? "(undefined)" : l->a; }

/* TVM's TryTransformLike for plain layouts: `old` renamed the way ref_old -> ref_new renames. */
static bool try_transform_like(const Lay *old, const Lay *ref_old, const Lay *ref_new, Lay *out) {
  if (old->n > ref_old->n) return false;
  if (old->n == 0) return *out = *old, true;
  int map[26];
  bool used[26] = {false};
  for (int i = 0; i < 26; i++) map[i] = -1;
  for (int32_t j = old->n - 1, i = ref_old->n - 1; j >= 0; --i, --j) {
    map[ref_old->a[i] - 'A'] = old->a[j] - 'A';
    used[old->a[j] - 'A'] = true;
  }
  for (int32_t i = ref_old->n - 1; i >= 0; --i) {
    int r = ref_old->a[i] - 'A';
    if (map[r] != -1) continue;
    int pick = -1;
    if (!used[r]) pick = r;
    for (int k = 0; k < 26 && pick < 0; k++)
      if (!used[k]) pick = k;
    if (pick < 0) return false;
    map[r] = pick;
    used[pick] = true;
  }
  out->n = ref_new->n;
  for (int32_t i = 0; i < ref_new->n; i++) {
    int m = map[ref_new->a[i] - 'A'];
    if (m < 0) return false;
    out->a[i] = (char)('A' + m);
  }
  out->a[out->n] = 0;
  return true;
}

/* ------------------------------------------------------------------------------------------ */
/* Attributes                                                                                  */

const char *lay_attr_str(const GPAttrs *attrs, const char *key) {
  const GPAttrValue *v = attrs ? H->attrs_get(attrs, key) : NULL;
  return v && v->kind == GP_ATTR_STR && v->s ? v->s : "";
}

static int64_t attr_int(const GPAttrs *attrs, const char *key, int64_t dflt) {
  const GPAttrValue *v = attrs ? H->attrs_get(attrs, key) : NULL;
  return v && (v->kind == GP_ATTR_INT || v->kind == GP_ATTR_BOOL) ? v->i : dflt;
}

GPAttrs *lay_attrs_set(const GPOp *op, const GPAttrs *attrs, int32_t n, const char *const *keys,
                       const GPAttrValue *vals) {
  int32_t m = attrs ? attrs->n : 0;
  const char **k = malloc((size_t)(m + n + 1) * sizeof *k);
  GPAttrValue *v = malloc((size_t)(m + n + 1) * sizeof *v);
  if (!k || !v) {
    free(k);
    free(v);
    H->error_set(GP_ERR_MEMORY, "out of memory");
    return NULL;
  }
  int32_t c = 0;
  for (int32_t i = 0; i < m; i++) {
    k[c] = attrs->keys[i];
    v[c++] = attrs->values[i];
  }
  for (int32_t j = 0; j < n; j++) {
    int32_t at = -1;
    for (int32_t i = 0; i < c; i++)
      if (!strcmp(k[i], keys[j])) at = i;
    if (at < 0) at = c++;
    k[at] = keys[j];
    v[at] = vals[j];
  }
  GPAttrs *r = H->op_attrs_new(op, c, k, v);
  free(k);
  free(v);
  return r;
}

static GPAttrs *attrs_set1(const GPOp *op, const GPAttrs *attrs, const char *key, GPAttrValue val) {
  return lay_attrs_set(op, attrs, 1, &key, &val);
}
static GPAttrValue av_str(const char *s) { return (GPAttrValue){.kind = GP_ATTR_STR, .s = s}; }
static GPAttrValue av_int(int64_t i) { return (GPAttrValue){.kind = GP_ATTR_INT, .i = i}; }

/* ------------------------------------------------------------------------------------------ */
/* The ops' layout relations (FInferCorrectLayout)                                             */

typedef enum {
  K_NONE = 1, K_CONV, K_POOL, K_RESIZE, K_BIAS_ADD, K_BN, K_NORM, K_INST_NORM, K_L2NORM, K_PRELU, K_CONCAT, K_PAD,
  K_REDUCE, K_ELEM, K_BCAST, K_TRANSPOSE, K_SQUEEZE, K_STRIDED_SLICE, K_SPLIT
} Kind;

static Kind kind_by_name(const GPOp *op) {
  static const struct {
    const char *name;
    Kind k;
  } table[] = {
      {"nn.conv1d", K_CONV},           {"nn.conv2d", K_CONV},           {"nn.conv3d", K_CONV},
      {"nn.conv2d_transpose", K_CONV}, {"nn.conv3d_transpose", K_CONV}, {"nn.max_pool1d", K_POOL},
      {"nn.max_pool2d", K_POOL},       {"nn.max_pool3d", K_POOL},       {"nn.avg_pool1d", K_POOL},
      {"nn.avg_pool2d", K_POOL},       {"nn.avg_pool3d", K_POOL},       {"nn.global_max_pool2d", K_POOL},
      {"nn.global_avg_pool2d", K_POOL}, {"image.resize1d", K_RESIZE},   {"image.resize2d", K_RESIZE},
      {"nn.bias_add", K_BIAS_ADD},     {"nn.batch_norm", K_BN},         {"concatenate", K_CONCAT},
      {"nn.pad", K_PAD},               {"sum", K_REDUCE},               {"mean", K_REDUCE},
      {"max", K_REDUCE},               {"min", K_REDUCE},               {"prod", K_REDUCE},
      {"all", K_REDUCE},               {"argmax", K_REDUCE},            {"argmin", K_REDUCE},
      {"variance", K_REDUCE},
      {"nn.layer_norm", K_NORM},       {"nn.instance_norm", K_INST_NORM}, {"nn.l2_normalize", K_L2NORM},
      {"nn.prelu", K_PRELU},           {"transpose", K_TRANSPOSE},      {"squeeze", K_SQUEEZE},
      {"strided_slice", K_STRIDED_SLICE}, {"split", K_SPLIT},
      /* no relation (TVM v0.12 registers no FInferCorrectLayout for any and image.resize3d,
       * unlike all and resize1d / 2d: their inputs go back to the old layout): */
      {"full", K_NONE},                {"layout_transform", K_NONE},
      {"broadcast_to_like", K_NONE},   {"expand_dims", K_NONE},         {"repeat", K_NONE},
      {"broadcast_to", K_NONE},        {"any", K_NONE},                 {"image.resize3d", K_NONE},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(op->name, table[i].name)) return table[i].k;
  /* TVM's ElemwiseArbitraryLayout (unary elementwise ops) and BinaryBroadcastLayout */
  if (op->pattern == GP_PATTERN_ELEMWISE && op->num_inputs == 1) return K_ELEM;
  if (op->pattern == GP_PATTERN_BROADCAST && op->num_inputs == 2) return K_BCAST;
  return K_NONE;
}

/* One relation query: TVM's (attrs, new_in_layouts, old_in_layouts, old_in_types). */
typedef struct Inf {
  int32_t nin;
  const Lay *new_in; /* NULL: not given (the first query) */
  const Lay *old_in;
  const GPType *const *types; /* tensor types of the flattened inputs */
  Lay *in;                    /* out: nin */
  Lay *out;                   /* out: nout (at most out_cap) */
  int32_t nout, out_cap;
  GPAttrs *attrs; /* out: new attributes (owned) or NULL (unchanged) */
} Inf;

static void fill(Lay *in, int32_t n, const Lay *l) {
  for (int32_t i = 0; i < n; i++) in[i] = *l;
}

static int32_t norm_axis(int64_t axis, int32_t rank) {
  if (axis < 0) axis += rank;
  return axis < 0 || axis >= rank ? -1 : (int32_t)axis;
}

/* Whether a and b name the same axes (one is a permutation of the other). */
static bool same_axes(const Lay *a, const Lay *b) {
  if (a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++)
    if (!memchr(b->a, a->a[i], (size_t)b->n)) return false;
  return true;
}

/* 1 success, 0 the relation fails (TVM: an undefined layout; the call keeps its layout), -1 error. */
static int infer(Kind k, const GPOp *op, const GPAttrs *attrs, Inf *f) {
  f->attrs = NULL;
  f->nout = 1;
  f->out[0] = k_undef;
  fill(f->in, f->nin, &k_undef);
  for (int32_t i = 0; i < f->nin; i++)
    if (!f->types[i] || f->types[i]->kind != GP_TYPE_TENSOR) return 0;
  const Lay *ni = f->new_in, *oi = f->old_in;
  switch (k) {
  case K_CONV: {
    Lay d, w, o;
    if (f->nin != 2) return 0;
    const char *os = lay_attr_str(attrs, "out_layout");
    if (!lay_parse(lay_attr_str(attrs, "data_layout"), &d) || !lay_parse(lay_attr_str(attrs, "kernel_layout"), &w) ||
        !lay_parse(*os ? os : d.a, &o))
      return 0;
    f->in[0] = d, f->in[1] = w, f->out[0] = o;
    break;
  }
  case K_POOL: {
    Lay l;
    if (f->nin != 1 || !lay_parse(lay_attr_str(attrs, "layout"), &l)) return 0;
    const char *os = lay_attr_str(attrs, "out_layout");
    /* a pool that reads its input in other axes than the input had (HNBW over an NHWC conv's
     * output): no relation, so the input goes back to the layout the pool read */
    if (ni && oi && lay_def(&oi[0]) && !same_axes(&oi[0], &l)) return 0;
    if (*os) {
      if (strcmp(os, l.a) != 0) return 0; /* TVM: ICHECK layout == out_layout */
    } else if (ni && lay_def(&ni[0]) && !lay_eq(&ni[0], &l)) {
      l = ni[0];
      if (!(f->attrs = attrs_set1(op, attrs, "layout", av_str(l.a)))) return -1;
    }
    f->in[0] = l, f->out[0] = l;
    break;
  }
  case K_RESIZE: {
    Lay l;
    if (f->nin != 1 || !lay_parse(lay_attr_str(attrs, "layout"), &l)) return 0;
    if (ni && lay_def(&ni[0]) && lay_def(&oi[0]) && !lay_eq(&ni[0], &oi[0]) && lay_eq(&l, &oi[0]) &&
        ni[0].n == oi[0].n) {
      l = ni[0];
      if (!(f->attrs = attrs_set1(op, attrs, "layout", av_str(l.a)))) return -1;
    }
    f->in[0] = l, f->out[0] = l;
    break;
  }
  case K_BIAS_ADD:
  case K_BN:
  case K_NORM:
  case K_INST_NORM:
  case K_PRELU: {
    /* TVM's BiasAdd, BatchNorm, Normalization (layer_norm, instance_norm) and PRelu relations:
     * the data's layout with `axis` following its axis; the vectors along that axis.  PRelu
     * keeps its data's old layout (TVM v0.12).  instance_norm's statistics run over every axis
     * but 0 and `axis`, so a new layout must keep the old axis 0 (TVM does not check). */
    int32_t want = k == K_BN ? 5 : k == K_BIAS_ADD || k == K_PRELU ? 2 : 3;
    if (f->nin != want) return 0;
    int32_t axis = norm_axis(attr_int(attrs, "axis", k == K_NORM ? -1 : 1), f->types[0]->n);
    if (axis < 0) return 0;
    Lay ret = k_undef;
    int32_t nax = axis;
    if (ni && k != K_PRELU && lay_def(&ni[0]) && lay_def(&oi[0])) {
      if (axis >= oi[0].n) return 0;
      if (k == K_INST_NORM && (ni[0].n < 1 || oi[0].n < 1 || ni[0].a[0] != oi[0].a[0])) return 0;
      nax = lay_index(&ni[0], oi[0].a[axis]);
      if (nax < 0) return 0;
      ret = ni[0];
      if (nax != axis && !(f->attrs = attrs_set1(op, attrs, "axis", av_int(nax)))) return -1;
    } else if (lay_def(&oi[0])) {
      ret = oi[0];
    }
    if (!lay_def(&ret) || nax >= ret.n) return 0;
    Lay c = lay_one(ret.a[nax]);
    f->in[0] = ret;
    fill(f->in + 1, f->nin - 1, &c);
    f->out[0] = ret;
    if (k == K_BN) f->nout = 3, f->out[1] = c, f->out[2] = c;
    break;
  }
  case K_L2NORM: {
    /* TVM's L2NormalizeInferCorrectLayout: every axis follows its letter */
    const GPAttrValue *ax = attrs ? H->attrs_get(attrs, "axis") : NULL;
    int32_t rank = f->types[0]->n;
    if (f->nin != 1 || !ax || ax->kind != GP_ATTR_INTS || ax->n > LAY_MAX || !lay_def(&oi[0]) || oi[0].n != rank)
      return 0;
    Lay ret = oi[0];
    if (ni && lay_def(&ni[0]) && !lay_eq(&ni[0], &oi[0])) {
      int64_t nax[LAY_MAX];
      for (int32_t i = 0; i < ax->n; i++) {
        int32_t a = norm_axis(ax->ints[i], rank);
        if (a < 0 || (nax[i] = lay_index(&ni[0], oi[0].a[a])) < 0) return 0;
      }
      ret = ni[0];
      GPAttrValue v = {.kind = GP_ATTR_INTS, .n = ax->n, .ints = nax};
      if (!(f->attrs = attrs_set1(op, attrs, "axis", v))) return -1;
    }
    f->in[0] = ret, f->out[0] = ret;
    break;
  }
  case K_TRANSPOSE: {
    /* TVM's TransposeInferCorrectLayout: in a new input layout the axes name the same letters,
     * so the output keeps its old layout */
    int32_t rank = f->types[0]->n;
    if (f->nin != 1 || rank > LAY_MAX || !lay_def(&oi[0]) || oi[0].n != rank) return 0;
    const GPAttrValue *ax = attrs ? H->attrs_get(attrs, "axes") : NULL;
    bool given = ax && ax->kind == GP_ATTR_INTS && ax->n > 0;
    int64_t use[LAY_MAX];
    if (given && ax->n != rank) return 0;
    for (int32_t i = 0; i < rank; i++) {
      int32_t a = given ? norm_axis(ax->ints[i], rank) : rank - 1 - i;
      if (a < 0) return 0;
      use[i] = a;
    }
    Lay in = oi[0];
    if (ni && lay_def(&ni[0]) && ni[0].n == rank && !lay_eq(&ni[0], &oi[0])) {
      int64_t nax[LAY_MAX];
      bool ok = true;
      for (int32_t i = 0; i < rank && ok; i++) ok = (nax[i] = lay_index(&ni[0], oi[0].a[use[i]])) >= 0;
      if (ok) {
        in = ni[0];
        memcpy(use, nax, (size_t)rank * sizeof *use);
        GPAttrValue v = {.kind = GP_ATTR_INTS, .n = rank, .ints = use};
        if (!(f->attrs = attrs_set1(op, attrs, "axes", v))) return -1;
      }
    }
    Lay out = {.n = rank};
    for (int32_t i = 0; i < rank; i++) out.a[i] = in.a[use[i]];
    out.a[rank] = 0;
    f->in[0] = in, f->out[0] = out;
    break;
  }
  case K_SQUEEZE: {
    /* TVM's SqueezeInferCorrectLayout: the squeezed letters leave the layout; explicit axes
     * follow their letters (axis=None squeezes the unit axes, wherever they are) */
    int32_t rank = f->types[0]->n;
    if (f->nin != 1 || rank > LAY_MAX || !lay_def(&oi[0]) || oi[0].n != rank) return 0;
    const GPAttrValue *ax = attrs ? H->attrs_get(attrs, "axis") : NULL;
    bool given = ax && ax->kind == GP_ATTR_INTS, gone[26] = {false};
    if (given) {
      if (ax->n > rank) return 0;
      for (int32_t i = 0; i < ax->n; i++) {
        int32_t a = norm_axis(ax->ints[i], rank);
        if (a < 0) return 0;
        gone[oi[0].a[a] - 'A'] = true;
      }
    } else {
      for (int32_t i = 0; i < rank; i++) {
        if (f->types[0]->tensor.shape[i] < 0) return 0; /* a dynamic extent might be 1 */
        if (f->types[0]->tensor.shape[i] == 1) gone[oi[0].a[i] - 'A'] = true;
      }
    }
    Lay in = oi[0];
    if (ni && lay_def(&ni[0]) && ni[0].n == rank && !lay_eq(&ni[0], &oi[0])) {
      in = ni[0];
      if (given) {
        int64_t nax[LAY_MAX];
        for (int32_t i = 0; i < ax->n; i++)
          if ((nax[i] = lay_index(&in, oi[0].a[norm_axis(ax->ints[i], rank)])) < 0) return 0;
        GPAttrValue v = {.kind = GP_ATTR_INTS, .n = ax->n, .ints = nax};
        if (!(f->attrs = attrs_set1(op, attrs, "axis", v))) return -1;
      }
    }
    Lay out = {.n = 0};
    for (int32_t i = 0; i < in.n; i++)
      if (!gone[in.a[i] - 'A']) out.a[out.n++] = in.a[i];
    out.a[out.n] = 0;
    f->in[0] = in, f->out[0] = out;
    break;
  }
  case K_STRIDED_SLICE: {
    /* TVM's StridedSliceInferCorrectLayout for plain layouts of the same axes: begin, end and
     * strides (or axes) follow their letters */
    int32_t rank = f->types[0]->n;
    if (f->nin != 1 || rank > LAY_MAX || !lay_def(&oi[0]) || oi[0].n != rank) return 0;
    Lay l = oi[0];
    if (ni && lay_def(&ni[0]) && !lay_eq(&ni[0], &oi[0])) {
      const GPAttrValue *b = H->attrs_get(attrs, "begin"), *e = H->attrs_get(attrs, "end");
      const GPAttrValue *st = H->attrs_get(attrs, "strides"), *axs = H->attrs_get(attrs, "axes");
      bool size_mode = !strcmp(lay_attr_str(attrs, "slice_mode"), "size");
      if (ni[0].n != rank || !b || b->kind != GP_ATTR_INTS || !e || e->kind != GP_ATTR_INTS) return 0;
      if (st && st->kind != GP_ATTR_INTS) st = NULL;
      if (b->n > LAY_MAX || e->n > LAY_MAX || (st && st->n > LAY_MAX)) return 0;
      int64_t nb[LAY_MAX], ne[LAY_MAX], ns[LAY_MAX], na[LAY_MAX];
      static const char *const keys[] = {"begin", "end", "strides", "axes"};
      GPAttrValue v[4];
      if (axs && axs->kind == GP_ATTR_INTS) {
        if (axs->n > LAY_MAX) return 0;
        for (int32_t i = 0; i < axs->n; i++) {
          int32_t a = norm_axis(axs->ints[i], rank);
          if (a < 0 || (na[i] = lay_index(&ni[0], oi[0].a[a])) < 0) return 0;
        }
        v[3] = (GPAttrValue){.kind = GP_ATTR_INTS, .n = axs->n, .ints = na};
        if (!(f->attrs = lay_attrs_set(op, attrs, 1, keys + 3, v + 3))) return -1;
      } else {
        for (int32_t i = 0; i < rank; i++) {
          int32_t j = lay_index(&oi[0], ni[0].a[i]);
          if (j < 0) return 0;
          int64_t ext = f->types[0]->tensor.shape[j];
          nb[i] = j < b->n ? b->ints[j] : 0;
          ns[i] = st && j < st->n ? st->ints[j] : 1;
          if (j < e->n) ne[i] = e->ints[j];
          else if (size_mode) ne[i] = -1;
          else if (ext >= 0) ne[i] = ext;
          else return 0;
        }
        v[0] = (GPAttrValue){.kind = GP_ATTR_INTS, .n = rank, .ints = nb};
        v[1] = (GPAttrValue){.kind = GP_ATTR_INTS, .n = rank, .ints = ne};
        v[2] = (GPAttrValue){.kind = GP_ATTR_INTS, .n = rank, .ints = ns};
        if (!(f->attrs = lay_attrs_set(op, attrs, 3, keys, v))) return -1;
      }
      l = ni[0];
    }
    f->in[0] = l, f->out[0] = l;
    break;
  }
  case K_SPLIT: {
    /* TVM's SplitInferCorrectLayout: axis follows its letter; every output in the layout */
    int32_t rank = f->types[0]->n;
    const GPAttrValue *ios = attrs ? H->attrs_get(attrs, "indices_or_sections") : NULL;
    int32_t axis = norm_axis(attr_int(attrs, "axis", 0), rank);
    if (f->nin != 1 || axis < 0 || !lay_def(&oi[0]) || oi[0].n != rank || !ios) return 0;
    int64_t nout = ios->kind == GP_ATTR_INT ? ios->i : ios->kind == GP_ATTR_INTS ? (int64_t)ios->n + 1 : -1;
    if (nout < 1 || nout > f->out_cap) return 0;
    Lay ret = oi[0];
    if (ni && lay_def(&ni[0]) && !lay_eq(&ni[0], &oi[0])) {
      int32_t nax = lay_index(&ni[0], oi[0].a[axis]);
      if (nax < 0) return 0;
      ret = ni[0];
      if (nax != axis && !(f->attrs = attrs_set1(op, attrs, "axis", av_int(nax)))) return -1;
    }
    f->in[0] = ret;
    f->nout = (int32_t)nout;
    fill(f->out, f->nout, &ret);
    break;
  }
  case K_CONCAT: {
    if (f->nin < 1) return 0;
    int32_t axis = norm_axis(attr_int(attrs, "axis", 0), f->types[0]->n);
    if (axis < 0) return 0;
    Lay ret = k_undef;
    bool selected = false;
    if (ni && lay_def(&oi[0]) && axis < oi[0].n) {
      bool same = lay_def(&ni[0]);
      for (int32_t i = 1; i < f->nin; i++) same = same && lay_eq(&ni[i], &ni[0]);
      int32_t nax = same ? lay_index(&ni[0], oi[0].a[axis]) : -1;
      if (nax >= 0) {
        ret = ni[0];
        selected = true;
        if (nax != axis && !(f->attrs = attrs_set1(op, attrs, "axis", av_int(nax)))) return -1;
      }
    }
    if (!selected) {
      for (int32_t i = 0; i < f->nin && !lay_def(&ret); i++) ret = oi[i];
      if (!lay_def(&ret) || ret.n <= axis) return 0;
    }
    fill(f->in, f->nin, &ret);
    f->out[0] = ret;
    break;
  }
  case K_PAD: {
    if (f->nin != 2) return 0;
    const GPAttrValue *pw = attrs ? H->attrs_get(attrs, "pad_width") : NULL;
    Lay ret = oi[0];
    if (ni && lay_def(&ni[0]) && lay_def(&oi[0]) && !lay_eq(&ni[0], &oi[0]) && pw && pw->kind == GP_ATTR_INTS &&
        pw->n == 2 * oi[0].n && ni[0].n == oi[0].n) {
      int64_t npw[2 * LAY_MAX];
      bool ok = true;
      for (int32_t i = 0; i < ni[0].n && ok; i++) {
        int32_t j = lay_index(&oi[0], ni[0].a[i]);
        if (j < 0) ok = false;
        else npw[2 * i] = pw->ints[2 * j], npw[2 * i + 1] = pw->ints[2 * j + 1];
      }
      if (ok) {
        ret = ni[0];
        GPAttrValue v = {.kind = GP_ATTR_INTS, .n = pw->n, .ints = npw};
        if (!(f->attrs = attrs_set1(op, attrs, "pad_width", v))) return -1;
      }
    }
    f->in[0] = ret;
    f->in[1] = (Lay){.n = 0}; /* the pad value is a scalar */
    f->out[0] = ret;
    break;
  }
  case K_REDUCE: {
    if (f->nin != 1 && f->nin != 2) return 0;
    int32_t rank = f->types[0]->n;
    bool keep = attr_int(attrs, "keepdims", 0) != 0, excl = attr_int(attrs, "exclude", 0) != 0;
    bool red[LAY_MAX] = {false};
    const GPAttrValue *ax = attrs ? H->attrs_get(attrs, "axis") : NULL;
    int32_t nred = 0;
    if (rank > LAY_MAX) return 0;
    if (!ax || ax->kind != GP_ATTR_INTS) {
      for (int32_t i = 0; i < rank; i++) red[i] = true;
    } else {
      for (int32_t i = 0; i < ax->n; i++) {
        int32_t a = norm_axis(ax->ints[i], rank);
        if (a < 0) return 0;
        red[a] = true;
      }
      if (excl)
        for (int32_t i = 0; i < rank; i++) red[i] = !red[i];
    }
    for (int32_t i = 0; i < rank; i++) nred += red[i];
    if (!lay_def(&oi[0]) || oi[0].n != rank) return 0;
    bool rdim[26] = {false};
    for (int32_t i = 0; i < rank; i++)
      if (red[i]) rdim[oi[0].a[i] - 'A'] = true;
    const Lay *src = &oi[0];
    bool adapt = ni && nred && lay_def(&ni[0]);
    if (adapt) src = &ni[0];
    Lay in = *src, out = {.n = 0};
    int64_t naxes[LAY_MAX];
    int32_t nn = 0;
    for (int32_t i = 0; i < src->n; i++) {
      bool r = rdim[src->a[i] - 'A'];
      if (r != excl) naxes[nn++] = i;
      if (!r || keep) out.a[out.n++] = src->a[i];
    }
    out.a[out.n] = 0;
    if (adapt) {
      GPAttrValue v = {.kind = GP_ATTR_INTS, .n = nn, .ints = naxes};
      if (!(f->attrs = attrs_set1(op, attrs, "axis", v))) return -1;
    }
    fill(f->in, f->nin, &in);
    f->out[0] = out;
    break;
  }
  case K_ELEM: {
    Lay ret = k_undef;
    if (ni) ret = ni[0];
    else
      for (int32_t i = 0; i < f->nin && !lay_def(&ret); i++) ret = oi[i];
    fill(f->in, f->nin, &ret);
    f->out[0] = ret;
    break;
  }
  case K_BCAST: {
    if (f->nin != 2) return 0;
    int32_t r[2] = {f->types[0]->n, f->types[1]->n};
    int32_t old_large = r[0] >= r[1] ? 0 : 1;
    Lay l[2] = {oi[0], oi[1]}, ret;
    if (!lay_def(&l[0]) && !lay_def(&l[1])) return 0;
    if (!lay_def(&l[0]) || !lay_def(&l[1])) {
      int32_t d = lay_def(&l[0]) ? 0 : 1, u = 1 - d;
      if (r[d] < r[u] || l[d].n != r[d]) return 0;
      l[u] = lay_sub(&l[d], r[d] - r[u], r[u]);
      ret = l[d];
    } else {
      ret = l[old_large];
    }
    if (ni) {
      if (!lay_def(&ni[0]) || !lay_def(&ni[1])) return 0;
      ret = ni[old_large];
      int32_t large = ni[0].n >= ni[1].n ? 0 : 1, small = 1 - large;
      Lay tgt = l[small];
      /* Unlike TVM, an operand whose partner kept its layout keeps its own (TVM would expand a
       * lower-rank one to the partner's rank) */
      if (!lay_eq(&l[large], &ni[large]) && !try_transform_like(&l[small], &l[large], &ni[large], &tgt)) return 0;
      l[large] = ni[large];
      l[small] = tgt;
    }
    f->in[0] = l[0], f->in[1] = l[1], f->out[0] = ret;
    break;
  }
  default: return 0;
  }
  for (int32_t i = 0; i < f->nin; i++)
    if (!lay_def(&f->in[i])) goto fail;
  for (int32_t i = 0; i < f->nout; i++)
    if (!lay_def(&f->out[i])) goto fail;
  return 1;
fail:
  gp_release(f->attrs);
  f->attrs = NULL;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The rewriter                                                                                */

/* What a node of the input became. */
typedef struct St {
  GPExpr *val;  /* owned: the value in the new layouts */
  GPExpr *real; /* owned: the value in the old layouts */
  int32_t nf;   /* layouts: 0 (none), 1 (a tensor) or the fields of a tuple-valued node */
  bool tuple;   /* the node is tuple-valued: a field per layout */
  Lay *old, *new_;
  Lay inl[2];
} St;

typedef struct Memo {
  GPExpr *raw; /* owned, so that its address is not reused while the memo lives */
  Lay src, dst;
  GPExpr *res; /* owned */
  struct Memo *next;
} Memo;

typedef struct Rw {
  const char *pass, *source;
  LayAlterFn alter;
  void *user;
  LayStats *stats;
  PMap st;   /* orig node -> St* */
  PMap memo; /* raw value -> Memo* list */
  PMap kinds; /* op -> Kind */
  const GPOp *lt_op, *ed_op;
} Rw;

static Kind kind_of(Rw *w, const GPOp *op) {
  Kind k = (Kind)(uintptr_t)pmap_get(&w->kinds, op);
  if (!k) {
    k = kind_by_name(op);
    pmap_put(&w->kinds, op, (void *)(uintptr_t)k);
  }
  return k;
}

static GPExpr *mk_lt(Rw *w, GPExpr *x, const char *src, const char *dst) {
  static const char *const keys[] = {"src_layout", "dst_layout"};
  GPAttrValue v[2] = {av_str(src), av_str(dst)};
  GPAttrs *a = H->op_attrs_new(w->lt_op, 2, keys, v);
  if (!a) return NULL;
  GPExpr *c = (GPExpr *)H->call_new((GPExpr *)w->lt_op, 1, &x, a);
  gp_release(a);
  return c;
}

static GPExpr *mk_expand(Rw *w, GPExpr *x, int32_t num) {
  static const char *const keys[] = {"axis", "num_newaxis"};
  GPAttrValue v[2] = {av_int(0), av_int(num)};
  GPAttrs *a = H->op_attrs_new(w->ed_op, 2, keys, v);
  if (!a) return NULL;
  GPExpr *c = (GPExpr *)H->call_new((GPExpr *)w->ed_op, 1, &x, a);
  gp_release(a);
  return c;
}

/* TVM's TransformMemorizer::Transform: `raw` (in layout src) in layout dst.  A new reference. */
static GPExpr *transform(Rw *w, GPExpr *raw, const Lay *src, const Lay *dst) {
  if (lay_eq(src, dst)) return gp_retain(raw);
  Memo *head = pmap_get(&w->memo, raw);
  for (Memo *m = head; m; m = m->next)
    if (lay_eq(&m->src, src) && lay_eq(&m->dst, dst)) return gp_retain(m->res);
  char loc[256];
  if (!lay_def(src) || !lay_def(dst) || src->n > dst->n) {
    H->error_set(GP_ERR_INTERNAL, "cannot transform %s at %s from layout %s to %s", std_kind_name(ekind(raw)),
                 std_where(w->source, raw, loc, sizeof loc), lay_str(src), lay_str(dst));
    return NULL;
  }
  GPExpr *x = gp_retain(raw), *res = NULL;
  Lay s = *src;
  if (s.n < dst->n) {
    if (s.n == 0) { /* a scalar broadcasts in any layout */
      res = x;
      goto done;
    }
    Lay e = {.n = 0};
    for (int32_t i = 0; i < dst->n; i++)
      if (lay_index(&s, dst->a[i]) < 0) e.a[e.n++] = dst->a[i];
    int32_t num = dst->n - s.n;
    if (e.n != num) goto bad;
    memcpy(e.a + e.n, s.a, (size_t)s.n);
    e.n += s.n;
    e.a[e.n] = 0;
    GPExpr *y = mk_expand(w, x, num);
    gp_release(x);
    if (!(x = y)) return NULL;
    s = e;
    if (lay_eq(&s, dst)) {
      res = x;
      goto done;
    }
  }
  for (int32_t i = 0; i < s.n; i++)
    if (lay_index(dst, s.a[i]) < 0) goto bad;
  /* an adjacent pair: layout_transform(y, P, src) then src -> dst is y (P == dst) or P -> dst */
  const char *inner_src = NULL;
  GPExpr *y = x;
  if (ekind(x) == GP_TI_CALL && ((GPCall *)x)->op == (GPExpr *)w->lt_op) {
    const GPCall *c = (const GPCall *)x;
    Lay p, q;
    if (lay_parse(lay_attr_str(c->attrs, "src_layout"), &p) && lay_parse(lay_attr_str(c->attrs, "dst_layout"), &q) &&
        lay_eq(&q, &s) && p.n == s.n) {
      bool same = true;
      for (int32_t i = 0; i < p.n; i++) same = same && lay_index(&s, p.a[i]) >= 0;
      if (same) {
        y = c->args[0];
        inner_src = lay_attr_str(c->attrs, "src_layout");
        if (!strcmp(inner_src, dst->a)) {
          res = gp_retain(y);
          gp_release(x);
          goto done;
        }
      }
    }
  }
  res = mk_lt(w, y, inner_src ? inner_src : s.a, dst->a);
  gp_release(x);
  if (!res) return NULL;
done:;
  Memo *m = malloc(sizeof *m);
  if (!m) {
    gp_release(res);
    H->error_set(GP_ERR_MEMORY, "out of memory");
    return NULL;
  }
  *m = (Memo){.raw = gp_retain(raw), .src = *src, .dst = *dst, .res = gp_retain(res), .next = head};
  pmap_put(&w->memo, raw, m);
  return res;
bad:
  gp_release(x);
  H->error_set(GP_ERR_INTERNAL, "cannot transform %s at %s from layout %s to %s (different axes)",
               std_kind_name(ekind(raw)), std_where(w->source, raw, loc, sizeof loc), lay_str(src), lay_str(dst));
  return NULL;
}

static St *st_new(int32_t nf) {
  St *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->nf = nf;
  if (nf <= 2) {
    s->old = &s->inl[0];
    s->new_ = &s->inl[1];
    if (nf == 2) {
      s->old = malloc(2 * sizeof(Lay));
      s->new_ = malloc(2 * sizeof(Lay));
    }
  } else {
    s->old = malloc((size_t)nf * sizeof(Lay));
    s->new_ = malloc((size_t)nf * sizeof(Lay));
  }
  if (!s->old || !s->new_) {
    if (s->old != &s->inl[0]) free(s->old);
    if (s->new_ != &s->inl[1]) free(s->new_);
    free(s);
    return NULL;
  }
  return s;
}

static void st_free(St *s) {
  if (!s) return;
  gp_release(s->val);
  gp_release(s->real);
  if (s->old != &s->inl[0]) free(s->old);
  if (s->new_ != &s->inl[1]) free(s->new_);
  free(s);
}

static bool st_changed(const St *s) {
  for (int32_t i = 0; i < s->nf; i++)
    if (!lay_eq(&s->old[i], &s->new_[i])) return true;
  return false;
}

/* Record the state of orig; returns a new reference to its realized value (the rewrite's result). */
static GPExpr *put(Rw *w, GPExpr *orig, St *s) {
  pmap_put(&w->st, orig, s);
  return gp_retain(s->real);
}

/* A node without layouts: the value is the rebuilt node. */
static GPExpr *plain(Rw *w, GPExpr *orig, GPExpr *rebuilt) {
  St *s = st_new(0);
  if (!s) {
    H->error_set(GP_ERR_MEMORY, "out of memory");
    return NULL;
  }
  s->val = gp_retain(rebuilt);
  s->real = gp_retain(rebuilt);
  return put(w, orig, s);
}

static St *st_of(Rw *w, const GPExpr *e) { return pmap_get(&w->st, e); }

/* The realized value of a tuple-valued state whose value is `val`. */
static GPExpr *realize_tuple(Rw *w, St *s) {
  GPExpr **f = calloc((size_t)s->nf, sizeof *f);
  if (!f) return NULL;
  GPExpr *r = NULL;
  int32_t i;
  for (i = 0; i < s->nf; i++) {
    GPExpr *g = (GPExpr *)H->tuple_get_item_new(s->val, i);
    if (!g) break;
    f[i] = transform(w, g, &s->new_[i], &s->old[i]);
    gp_release(g);
    if (!f[i]) break;
  }
  if (i == s->nf) r = (GPExpr *)H->tuple_new(s->nf, f);
  for (int32_t j = 0; j < s->nf; j++) gp_release(f[j]);
  free(f);
  return r;
}

static GPExpr *on_tuple(Rw *w, GPTuple *t, GPExpr *rebuilt) {
  St *s = st_new(t->n);
  if (!s) return NULL;
  s->tuple = true;
  for (int32_t i = 0; i < t->n; i++) {
    St *c = st_of(w, t->fields[i]);
    bool one = c && c->nf == 1 && !c->tuple;
    s->old[i] = one ? c->old[0] : k_undef;
    s->new_[i] = one ? c->new_[0] : k_undef;
  }
  s->real = gp_retain(rebuilt);
  if (!st_changed(s)) {
    s->val = gp_retain(rebuilt);
    return put(w, &t->base, s);
  }
  GPExpr **f = malloc((size_t)t->n * sizeof *f);
  if (!f) {
    st_free(s);
    return NULL;
  }
  for (int32_t i = 0; i < t->n; i++) {
    St *c = st_of(w, t->fields[i]);
    f[i] = c && c->nf == 1 && !c->tuple ? c->val : c ? c->real : t->fields[i];
  }
  s->val = (GPExpr *)H->tuple_new(t->n, f);
  free(f);
  if (!s->val) {
    st_free(s);
    return NULL;
  }
  return put(w, &t->base, s);
}

static GPExpr *on_get_item(Rw *w, GPTupleGetItem *g, GPExpr *rebuilt) {
  St *p = st_of(w, g->tuple);
  if (!p || !p->tuple || g->index < 0 || g->index >= p->nf || p->val == p->real) return plain(w, &g->base, rebuilt);
  St *s = st_new(1);
  if (!s) return NULL;
  s->old[0] = p->old[g->index];
  s->new_[0] = p->new_[g->index];
  s->val = (GPExpr *)H->tuple_get_item_new(p->val, g->index);
  s->real = s->val ? transform(w, s->val, &s->new_[0], &s->old[0]) : NULL;
  if (!s->real) {
    st_free(s);
    return NULL;
  }
  return put(w, &g->base, s);
}

/* A flattened input of a call: a tensor argument, or a field of a tuple argument. */
typedef struct In {
  GPExpr *val; /* borrowed: the producer's value in its new layout */
  Lay old_prd, new_prd;
  const GPType *type;
} In;

static int32_t flat_count(const GPCall *c) {
  int32_t n = 0;
  for (int32_t i = 0; i < c->nargs; i++)
    n += ekind(c->args[i]) == GP_TI_TUPLE ? ((const GPTuple *)c->args[i])->n : 1;
  return n;
}

static void flat_in(Rw *w, const GPExpr *e, In *in) {
  St *s = st_of(w, e);
  bool one = s && s->nf == 1 && !s->tuple;
  in->val = one ? s->val : s ? s->real : (GPExpr *)e;
  in->old_prd = one ? s->old[0] : k_undef;
  in->new_prd = one ? s->new_[0] : k_undef;
  in->type = e->checked_type;
}

/* TVM's transform_layout lambda of LayoutRewriter. */
static GPExpr *transform_arg(Rw *w, GPExpr *x, const Lay *old_prd, const Lay *old_cur, const Lay *new_prd,
                             const Lay *new_cur) {
  if (lay_eq(old_cur, old_prd)) return transform(w, x, new_prd, new_cur);
  GPExpr *y = lay_def(old_prd) ? transform(w, x, new_prd, old_prd) : gp_retain(x);
  if (!y) return NULL;
  GPExpr *z = transform(w, y, old_cur, new_cur);
  gp_release(y);
  return z;
}

/* Build args structured like `like`'s from the flat list. New references in out[]. */
static int restructure(const GPCall *like, GPExpr *const *flat, GPExpr **out) {
  int32_t pt = 0;
  for (int32_t i = 0; i < like->nargs; i++) {
    GPExpr *a = like->args[i];
    if (ekind(a) == GP_TI_TUPLE) {
      const GPTuple *t = (const GPTuple *)a;
      bool same = true;
      for (int32_t j = 0; j < t->n; j++) same = same && flat[pt + j] == t->fields[j];
      out[i] = same ? gp_retain(a) : (GPExpr *)H->tuple_new(t->n, flat + pt);
      pt += t->n;
    } else {
      out[i] = gp_retain(flat[pt++]);
    }
    if (!out[i]) return -1;
  }
  return 0;
}

static void release_all(GPExpr **a, int32_t n) {
  for (int32_t i = 0; i < n; i++) gp_release(a[i]);
}

static GPExpr *on_call(Rw *w, GPCall *oc, GPExpr *rebuilt) {
  const GPOp *op = (const GPOp *)oc->op;
  Kind k = kind_of(w, op);
  if (op == w->lt_op && oc->nargs == 1) { /* compose with the producer's new layout: pairs cancel */
    St *p = st_of(w, oc->args[0]);
    Lay src, dst;
    if (p && p->nf == 1 && !p->tuple && lay_def(&p->old[0]) && !lay_eq(&p->old[0], &p->new_[0]) &&
        lay_parse(lay_attr_str(oc->attrs, "src_layout"), &src) && lay_parse(lay_attr_str(oc->attrs, "dst_layout"), &dst) &&
        lay_eq(&src, &p->old[0]) && src.n == dst.n) {
      St *s = st_new(1);
      if (!s) return NULL;
      s->old[0] = s->new_[0] = dst;
      if (!(s->val = transform(w, p->val, &p->new_[0], &dst))) {
        st_free(s);
        return NULL;
      }
      s->real = gp_retain(s->val);
      return put(w, &oc->base, s);
    }
  }
  if (k == K_NONE || !oc->base.checked_type) return plain(w, &oc->base, rebuilt);
  int32_t nin = flat_count(oc), nargs = oc->nargs;
  size_t m = (size_t)(nin ? nin : 1), ma = (size_t)(nargs ? nargs : 1);
  In *in = calloc(m, sizeof *in);
  Lay *lays = calloc(m * 6, sizeof(Lay));
  const GPType **types = calloc(m, sizeof *types);
  GPExpr **ptrs = calloc(m * 3 + ma * 2, sizeof(GPExpr *));
  GPExpr **nflat = ptrs;          /* normal new args, flat (borrowed) */
  GPExpr **tflat = nflat + m;     /* transformed, flat (owned) */
  GPExpr **nflat2 = tflat + m;    /* the new call's args, flat (borrowed) */
  GPExpr **sargs = nflat2 + m;    /* structured normal new args (owned) */
  GPExpr **targs = sargs + ma;    /* structured transformed args (owned) */
  GPExpr *result = NULL, *altered = NULL, *ncall = NULL;
  GPAttrs *attrs1 = NULL, *attrs3 = NULL;
  St *s = NULL;
  bool failed = true;
  Inf f1 = {0}, f2 = {0};
  Lay *outs = NULL;
  /* outputs: a tuple-valued call gives one layout per field (split), else at most 3 (batch_norm) */
  const GPType *rty = oc->base.checked_type;
  int32_t ocap = rty->kind == GP_TYPE_TUPLE && rty->n > 3 ? rty->n : 3;
  outs = calloc((size_t)ocap * 2, sizeof *outs);
  if (!in || !lays || !types || !ptrs || !outs) goto out;
  Lay *old_cur = lays, *new_cur = lays + m;
  Lay *oprd = lays + 2 * m, *nprd = lays + 3 * m, *oprd_inf = lays + 4 * m, *nprd_inf = lays + 5 * m;
  int32_t pt = 0;
  for (int32_t i = 0; i < nargs; i++) {
    GPExpr *a = oc->args[i];
    if (ekind(a) == GP_TI_TUPLE) {
      const GPTuple *t = (const GPTuple *)a;
      for (int32_t j = 0; j < t->n; j++) flat_in(w, t->fields[j], &in[pt++]);
    } else {
      flat_in(w, a, &in[pt++]);
    }
  }
  for (int32_t i = 0; i < nin; i++) {
    oprd[i] = in[i].old_prd, nprd[i] = in[i].new_prd, types[i] = in[i].type, nflat[i] = in[i].val;
  }
  /* 1. old_cur, old_out = infer(None, old_prd) */
  f1 = (Inf){.nin = nin, .new_in = NULL, .old_in = oprd, .types = types, .in = old_cur, .out = outs, .out_cap = ocap};
  int rc = infer(k, op, oc->attrs, &f1);
  if (rc < 0) goto out;
  if (rc == 0) {
    failed = false;
    result = plain(w, &oc->base, rebuilt);
    goto out;
  }
  attrs1 = f1.attrs ? f1.attrs : gp_retain(oc->attrs);
  /* 2. the new call */
  if (restructure(oc, nflat, sargs) != 0) goto out;
  if (w->alter(w->user, oc, attrs1, sargs, &altered) != 0) goto out;
  const GPOp *op2 = op;
  GPAttrs *attrs2 = attrs1;
  const GPCall *like = oc;
  if (altered) {
    if (ekind(altered) != GP_TI_CALL || ekind(((GPCall *)altered)->op) != GP_TI_OP) {
      char loc[256];
      H->error_set(GP_ERR_VALUE, "the new call of %s at %s is %s, not a call of an op", op->name,
                   std_where(w->source, &oc->base, loc, sizeof loc), std_kind_name(ekind(altered)));
      goto out;
    }
    GPCall *ac = (GPCall *)altered;
    if (flat_count(ac) != nin) {
      char loc[256];
      H->error_set(GP_ERR_VALUE, "the new call of %s at %s has %d inputs, the call has %d", op->name,
                   std_where(w->source, &oc->base, loc, sizeof loc), (int)flat_count(ac), (int)nin);
      goto out;
    }
    op2 = (const GPOp *)ac->op;
    attrs2 = ac->attrs;
    like = ac;
    pt = 0;
    for (int32_t i = 0; i < ac->nargs; i++) {
      GPExpr *a = ac->args[i];
      if (ekind(a) == GP_TI_TUPLE) {
        const GPTuple *t = (const GPTuple *)a;
        for (int32_t j = 0; j < t->n; j++) nflat2[pt++] = t->fields[j];
      } else {
        nflat2[pt++] = a;
      }
    }
  } else {
    for (int32_t i = 0; i < nin; i++) nflat2[i] = nflat[i];
  }
  /* 3. new_cur, new_out = infer(new_prd, old_prd) on the new call */
  for (int32_t i = 0; i < nin; i++) {
    nprd_inf[i] = lay_def(&nprd[i]) ? nprd[i] : old_cur[i];
    oprd_inf[i] = lay_def(&oprd[i]) ? oprd[i] : old_cur[i];
  }
  Kind k2 = op2 == op ? k : kind_of(w, op2);
  f2 = (Inf){.nin = nin, .new_in = nprd_inf, .old_in = oprd_inf, .types = types, .in = new_cur, .out = outs + ocap,
             .out_cap = ocap};
  rc = k2 == K_NONE ? 0 : infer(k2, op2, attrs2, &f2);
  if (rc < 0) goto out;
  if (rc == 0 || f2.nout != f1.nout) {
    gp_release(f2.attrs);
    failed = false;
    result = plain(w, &oc->base, rebuilt);
    goto out;
  }
  attrs3 = f2.attrs ? f2.attrs : gp_retain(attrs2);
  /* 4. transform the inputs */
  for (int32_t i = 0; i < nin; i++)
    if (!(tflat[i] = transform_arg(w, nflat2[i], &oprd[i], &old_cur[i], &nprd[i], &new_cur[i]))) goto out;
  if (restructure(like, tflat, targs) != 0) goto out;
  /* 5. the call, or the rebuilt one when nothing changed */
  const GPCall *rb = (const GPCall *)rebuilt;
  bool same = op2 == op && attrs3 == rb->attrs && like->nargs == rb->nargs;
  for (int32_t i = 0; same && i < rb->nargs; i++) same = targs[i] == rb->args[i];
  if (same) {
    ncall = gp_retain(rebuilt);
  } else {
    GPCall *c = H->call_new((GPExpr *)op2, like->nargs, targs, attrs3);
    if (!c) goto out;
    ncall = H->expr_annotate(&c->base, NULL, oc->base.line, oc->base.col);
    gp_release(c);
    if (!ncall) goto out;
    if (op2 != op || attrs3 != oc->attrs) w->stats->altered++;
  }
  /* 6. the state: (old_out, new_out) */
  bool tup = oc->base.checked_type->kind == GP_TYPE_TUPLE;
  if (tup && oc->base.checked_type->n != f1.nout) {
    failed = false;
    result = plain(w, &oc->base, rebuilt);
    goto out;
  }
  s = st_new(f1.nout);
  if (!s) goto out;
  s->tuple = tup;
  for (int32_t i = 0; i < f1.nout; i++) s->old[i] = f1.out[i], s->new_[i] = f2.out[i];
  s->val = gp_retain(ncall);
  if (!st_changed(s)) s->real = gp_retain(ncall);
  else if (tup) s->real = realize_tuple(w, s);
  else s->real = transform(w, ncall, &s->new_[0], &s->old[0]);
  if (!s->real) goto out;
  result = put(w, &oc->base, s);
  s = NULL;
  failed = false;
out:
  if (failed && !H->error_kind()) H->error_set(GP_ERR_MEMORY, "out of memory");
  st_free(s);
  gp_release(ncall);
  gp_release(altered);
  gp_release(attrs1);
  gp_release(attrs3);
  if (ptrs) {
    release_all(tflat, nin);
    release_all(sargs, nargs);
    release_all(targs, nargs);
  }
  free(in);
  free(outs);
  free(lays);
  free(types);
  free(ptrs);
  return result;
}

static GPExpr *lay_cb(void *user, GPExpr *orig, GPExpr *rebuilt) {
  Rw *w = user;
  switch (ekind(orig)) {
  case GP_TI_CALL:
    if (ekind(((GPCall *)orig)->op) == GP_TI_OP) return on_call(w, (GPCall *)orig, rebuilt);
    return plain(w, orig, rebuilt);
  case GP_TI_TUPLE: return on_tuple(w, (GPTuple *)orig, rebuilt);
  case GP_TI_TUPLE_GET_ITEM: return on_get_item(w, (GPTupleGetItem *)orig, rebuilt);
  default: return plain(w, orig, rebuilt);
  }
}

GPExpr *lay_rewrite_function(const char *pass, const GPModule *mod, int32_t index, LayAlterFn alter,
                             void *user, LayStats *stats) {
  Rw w = {.pass = pass, .source = mod->source_name, .alter = alter, .user = user, .stats = stats};
  w.lt_op = H->op_get("layout_transform");
  w.ed_op = w.lt_op ? H->op_get("expand_dims") : NULL;
  if (!w.ed_op) return NULL;
  GPExpr *root = &mod->funcs[index]->base;
  GPExpr *out = H->rewrite(root, lay_cb, &w);
  if (out && out != root) { /* count the layout_transforms that are new */
    GPExpr **nodes;
    size_t n;
    if (H->post_order(out, &nodes, &n) == 0) {
      for (size_t i = 0; i < n; i++)
        if (ekind(nodes[i]) == GP_TI_CALL && ((GPCall *)nodes[i])->op == (GPExpr *)w.lt_op &&
            !pmap_has(&w.st, nodes[i]))
          stats->transforms++;
      free(nodes);
    }
  }
  for (size_t i = 0; i < w.st.cap; i++)
    if (w.st.slots[i].key) st_free(w.st.slots[i].val);
  for (size_t i = 0; i < w.memo.cap; i++)
    if (w.memo.slots[i].key)
      for (Memo *m = w.memo.slots[i].val, *nx; m; m = nx) {
        nx = m->next;
        gp_release(m->res);
        gp_release(m->raw);
        free(m);
      }
  pmap_free(&w.st);
  pmap_free(&w.memo);
  pmap_free(&w.kinds);
  return out;
}
