/* canonicalize_concat_pos.c -- CanonicalizeConcatPos (target opu, opt-level 0, requires
 * InferType): a channel-wise op whose only input is a concatenate, and which is the
 * concatenate's only consumer, moves before it, onto each input:
 *
 *   OP(concatenate((a, b, ...), axis=k))          -> concatenate((OP(a), OP(b), ...), axis=k)
 *     OP: nn.relu, clip, nn.leaky_relu, sigmoid, tanh (element-wise; the call's attrs are kept)
 *   multiply(concatenate(%t, axis=k), c=const)    -> concatenate((a * c_a, b * c_b, ...), axis=k)
 *   add / multiply with the constant on either side, likewise (bias-free per-channel scales and
 *   shifts: c is a scalar, or broadcasts onto the concatenation without growing it; along axis
 *   k it is 1 (every input gets c) or the concatenation's extent (each input gets its slice,
 *   computed by the host's strided_slice kernel)).
 *
 * So the accelerator applies the op in the producers' output stage (after each convolution)
 * instead of on the concatenated tensor.  Element by element the result is the same values.
 * Written on the host's pattern layer; the driver refuses a match whose concatenate has another
 * use; rounds repeat until nothing moves (relu(clip(concatenate)) takes two). */
#include "opu.h"

#include <stdio.h>
#include <string.h>

#define H opu_host
#define PASS_NAME "CanonicalizeConcatPos"

static const char *const k_unary[] = {"nn.relu", "clip", "nn.leaky_relu", "sigmoid", "tanh"};
#define N_UNARY ((int32_t)(sizeof k_unary / sizeof k_unary[0]))
/* binary patterns after the unary ones: add / multiply, constant second or first */
static const char *const k_binary_text[] = {
    "%op=add(%cat=concatenate(%t), %c=const)",
    "%op=add(%c=const, %cat=concatenate(%t))",
    "%op=multiply(%cat=concatenate(%t), %c=const)",
    "%op=multiply(%c=const, %cat=concatenate(%t))",
};
#define N_BINARY 4
#define N_PATTERNS (N_UNARY + N_BINARY)

static GPPattern *g_patterns[N_PATTERNS];

typedef struct Run {
  const GPModule *mod;
  int64_t moved;
} Run;

static const GPType *tensor_type(const GPExpr *e) {
  const GPType *t = e ? e->checked_type : NULL;
  return t && t->kind == GP_TYPE_TENSOR ? t : NULL;
}

/* The concatenate's axis, normalized, or -1. */
static int32_t cat_axis(const GPCall *cat) {
  const GPType *t = tensor_type(&cat->base);
  const GPAttrValue *a = H->attrs_get(cat->attrs, "axis");
  if (!t || !a || a->kind != GP_ATTR_INT) return -1;
  int64_t ax = a->i < 0 ? a->i + t->n : a->i;
  return ax >= 0 && ax < t->n ? (int32_t)ax : -1;
}

/* For the binary patterns: c broadcasts onto the concatenation without growing it, has its
 * dtype, and is 1 or the full extent on the concatenation axis. */
static bool const_fits(const GPType *c, const GPType *out, int32_t axis) {
  if (!c || !out || c->n > out->n) return false;
  if (c->tensor.dtype.code != out->tensor.dtype.code || c->tensor.dtype.bits != out->tensor.dtype.bits) return false;
  for (int32_t i = 0; i < c->n; i++) {
    int32_t oa = out->n - c->n + i;
    int64_t d = c->tensor.shape[i], o = out->tensor.shape[oa];
    if (d != 1 && d != o) return false;
    if (oa == axis && d != 1 && o < 0) return false;
  }
  return true;
}

static int check(void *user, const GPMatch *m) {
  (void)user;
  const GPCall *cat = (const GPCall *)opu_capture(m, "cat");
  const GPExpr *t = opu_capture(m, "t");
  if (!cat || !t || t->obj.type_index != GP_TI_TUPLE || ((const GPTuple *)t)->n < 1) return 0;
  int32_t axis = cat_axis(cat);
  if (axis < 0) return 0;
  if (m->pattern_index < N_UNARY) return 1;
  const GPType *out = tensor_type(&cat->base);
  /* the op's result keeps the concatenation's shape */
  const GPType *rt = tensor_type(m->root);
  if (!rt || rt->n != out->n) return 0;
  for (int32_t i = 0; i < out->n; i++)
    if (rt->tensor.shape[i] != out->tensor.shape[i]) return 0;
  return const_fits(tensor_type(opu_capture(m, "c")), out, axis);
}

/* c's slice for the input at [start, start + extent) of the concatenation axis (c itself when
 * c is 1 there or does not reach that axis). */
static GPExpr *slice_for(GPExpr *c, const GPType *ct, int32_t out_rank, int32_t axis, int64_t start, int64_t extent) {
  int32_t ca = axis - (out_rank - ct->n);
  if (ca < 0 || ct->tensor.shape[ca] == 1) return (GPExpr *)gp_retain(c);
  static const char *const keys[] = {"begin", "end", "axes"};
  int64_t b = start, e = start + extent, ax = ca;
  GPAttrValue v[3] = {{.kind = GP_ATTR_INTS, .n = 1, .ints = &b},
                      {.kind = GP_ATTR_INTS, .n = 1, .ints = &e},
                      {.kind = GP_ATTR_INTS, .n = 1, .ints = &ax}};
  return opu_fold_call("strided_slice", 1, &c, 3, keys, v);
}

static GPExpr *rewrite(void *user, const GPMatch *m) {
  Run *run = user;
  const GPCall *root = (const GPCall *)m->root;
  const GPCall *cat = (const GPCall *)opu_capture(m, "cat");
  const GPTuple *t = (const GPTuple *)opu_capture(m, "t");
  bool unary = m->pattern_index < N_UNARY;
  GPExpr *c = unary ? NULL : opu_capture(m, "c");
  const GPType *ct = c ? tensor_type(c) : NULL;
  const GPType *out = tensor_type(&cat->base);
  int32_t axis = cat_axis(cat);
  bool c_first = !unary && root->args[0] == c;
  GPExpr **fields = H->alloc((size_t)t->n * sizeof *fields);
  if (!fields) return NULL;
  int32_t built = 0;
  int64_t start = 0;
  bool ok = out && axis >= 0 && (unary || ct);
  for (; ok && built < t->n; built++) {
    GPExpr *f = t->fields[built];
    const GPType *ft = tensor_type(f);
    if (!ft) {
      H->error_set(GP_ERR_TYPE, "field %d of the concatenate is not typed", (int)built);
      ok = false;
      break;
    }
    GPCall *nc = NULL;
    if (unary) {
      nc = H->call_new(root->op, 1, &f, root->attrs);
    } else {
      GPExpr *cs = slice_for(c, ct, out->n, axis, start, ft->tensor.shape[axis]);
      if (cs) {
        GPExpr *args[2] = {c_first ? cs : f, c_first ? f : cs};
        nc = H->call_new(root->op, 2, args, root->attrs);
        gp_release(cs);
      }
    }
    if (!nc) {
      ok = false;
      break;
    }
    fields[built] = &nc->base;
    start += ft->tensor.shape[axis];
  }
  GPExpr *r = NULL;
  if (ok) {
    GPTuple *nt = H->tuple_new(t->n, fields);
    if (nt) {
      GPExpr *arg = &nt->base;
      GPCall *ncat = H->call_new(cat->op, 1, &arg, cat->attrs);
      r = ncat ? &ncat->base : NULL;
      gp_release(nt);
    }
  }
  for (int32_t i = 0; i < built; i++) gp_release(fields[i]);
  H->free(fields);
  if (!r) {
    char where[512], msg[1024];
    snprintf(msg, sizeof msg, "%s", H->error_kind() != GP_OK ? H->error_message() : "failed");
    H->error_set(GP_ERR_PASS, "%s: at %s: %s", PASS_NAME, opu_where(run->mod, m->root, where, sizeof where), msg);
    return NULL;
  }
  run->moved++;
  return r;
}

static int canonicalize_concat_pos(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (opu_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  Run run = {.mod = mod, .moved = 0};
  GPRewriteSpec spec;
  memset(&spec, 0, sizeof spec);
  spec.num_patterns = N_PATTERNS;
  spec.patterns = (const GPPattern *const *)g_patterns;
  spec.check = check;
  spec.rewrite = rewrite;
  spec.user = &run;
  int64_t total = 0;
  GPModule *out = opu_rewrite_rounds(PASS_NAME, mod, &spec, &total);
  if (!out) return -1;
  H->ctx_note(ctx, "moved %lld ops before their concatenate", (long long)run.moved);
  return opu_return_module(result, out);
}

static void release_patterns(void *self) {
  (void)self;
  for (int i = 0; i < N_PATTERNS; i++) {
    gp_release(g_patterns[i]);
    g_patterns[i] = NULL;
  }
}

int opu_register_canonicalize_concat_pos(const GPHostAPI *host) {
  char text[128];
  for (int32_t i = 0; i < N_PATTERNS; i++) {
    if (i < N_UNARY)
      snprintf(text, sizeof text, "%%op=%s(%%cat=concatenate(%%t))", k_unary[i]);
    else
      snprintf(text, sizeof text, "%s", k_binary_text[i - N_UNARY]);
    g_patterns[i] = host->pattern_compile(text, "opu/canonicalize_concat_pos.c", 1, 1);
    if (!g_patterns[i]) {
      release_patterns(NULL);
      return -1;
    }
  }
  GPPassInfo info = opu_pass_info(PASS_NAME, canonicalize_concat_pos, NULL, true);
  info.self_deleter = release_patterns;
  info.help = "OPU: a channel-wise op (relu, clip, per-channel add / multiply by a constant, ...) that is the only "
              "consumer of a concatenate moves onto each of its inputs.";
  if (host->pass_register(&info, 0) != 0) {
    release_patterns(NULL);
    return -1;
  }
  return 0;
}
