/*
 * genir.c -- GenIR: quantize the Compiler="opu" functions and emit the OPU's programs
 * (docs/OPU.md), plus the runtime side an embedding host uses.
 *
 * The pass (GenIR, target opu, after PartitionGraph):
 *  1. Calibration.  @main is evaluated in float (GPEvalOptions.observe, ABI 1.3) on the inputs
 *     named by `GenIR.calibrate` ("NAME=FILE;NAME=FILE", .npy or .pb; the CLI's repeatable
 *     --calibrate NAME=FILE fills it) or, without them, on the deterministic inputs of
 *     --verify-numerics for `GenIR.seed` (a note says so).  For every call and variable in an
 *     opu function's body the largest magnitude seen is kept.
 *  2. The ranges go onto each opu function as attribute `opu.ranges` (floats, one per call or
 *     variable of the body in post-order) with `opu.pe` = [rows, cols]: the program and weight
 *     blob are a pure function of the function and these attributes (opu_compile below), so an
 *     embedding host regenerates them from a printed module without files.
 *  3. Each function is compiled (opu_compile), validated, and with `GenIR.out=DIR` written as
 *     DIR/<function>.opu (the binary stream), .lst (its listing), .wts (the weight blob) and
 *     DIR/manifest.json (inputs, outputs, shapes, dtypes, scales, addresses of every function).
 *
 * Compilation walks the body once in post-order.  Producers are kept pending while their only
 * consumer can still fold into them: a conv2d takes the per-channel multiply / add / bias
 * constants after it into its weights and biases, then a relu / clip into its clamp; an
 * element-wise add of two activations takes a relu / clip; a concatenate's inputs are written
 * straight into their channel range of its output.  Each weight is read once (per output
 * channel: its largest magnitude, then its int8 values into the blob's PE-blocked layout).
 *
 * The runtime: global functions `graphpass.ext.opu.run` (the evaluator's external runner,
 * ABI 1.3: quantize the inputs, simulate, dequantize the outputs) and
 * `graphpass.ext.opu.artifacts` ([function] -> array [program (uint8 tensor), weights (uint8
 * tensor), manifest (string)]; an embedding host takes the tensors' bytes with
 * tensor_to_dlpack).  Compiled programs are cached per function (the 64 most recent).
 */
#define _POSIX_C_SOURCE 200809L
#include "opu.h"
#include "isa.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define H opu_host
#define PASS "GenIR"

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */

typedef struct Buf {
  uint8_t *d;
  size_t n, cap;
} Buf;

static int buf_reserve(Buf *b, size_t more) {
  if (b->n + more <= b->cap) return 0;
  size_t nc = b->cap ? b->cap : 4096;
  while (nc < b->n + more) nc *= 2;
  uint8_t *nd = realloc(b->d, nc);
  if (!nd) {
    H->error_set(GP_ERR_MEMORY, "%s: out of memory (%zu bytes)", PASS, nc);
    return -1;
  }
  b->d = nd;
  b->cap = nc;
  return 0;
}

/* Append `bytes` bytes at an aligned offset (*off); the alignment gap is zeroed, and the bytes
 * too when `zero` (else the caller writes every one of them). */
static int buf_alloc(Buf *b, size_t bytes, size_t align, size_t *off, int zero) {
  size_t start = (b->n + align - 1) / align * align;
  if (buf_reserve(b, start - b->n + bytes) != 0) return -1;
  memset(b->d + b->n, 0, start - b->n);
  if (zero) memset(b->d + start, 0, bytes);
  b->n = start + bytes;
  *off = start;
  return 0;
}

static void txt(Buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (k < 0 || buf_reserve(b, (size_t)k + 1) != 0) return;
  va_start(ap, fmt);
  vsnprintf((char *)b->d + b->n, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)k;
}

static int is_op(const GPExpr *e, const char *name) { return opu_is_call(e, name); }

static const char *call_name(const GPExpr *e) {
  if (e->obj.type_index == GP_TI_CALL && ((const GPCall *)e)->op->obj.type_index == GP_TI_OP)
    return ((const GPOp *)((const GPCall *)e)->op)->name;
  switch (e->obj.type_index) {
  case GP_TI_VAR: return "variable";
  case GP_TI_CONSTANT: return "constant";
  case GP_TI_TUPLE: return "tuple";
  case GP_TI_TUPLE_GET_ITEM: return "get-item";
  default: return "expression";
  }
}

static const GPAttrValue *attr(const GPCall *c, const char *key) { return c->attrs ? H->attrs_get(c->attrs, key) : NULL; }

static int64_t attr_int(const GPCall *c, const char *key, int64_t dflt) {
  const GPAttrValue *v = attr(c, key);
  return v && (v->kind == GP_ATTR_INT || v->kind == GP_ATTR_BOOL) ? v->i : dflt;
}

static const char *attr_str(const GPCall *c, const char *key) {
  const GPAttrValue *v = attr(c, key);
  return v && v->kind == GP_ATTR_STR ? v->s : NULL;
}

static int is_f32(const GPType *t) {
  return t && t->kind == GP_TYPE_TENSOR && t->tensor.dtype.code == kDLFloat && t->tensor.dtype.bits == 32 &&
         t->tensor.dtype.lanes == 1;
}

static int64_t numel(const GPType *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->n; i++) n *= t->tensor.shape[i];
  return n;
}

/* N, C, H, W of a tensor type: rank 0 -> 1,1,1,1; 1 -> 1,C,1,1; 2 -> N,C,1,1; 3 -> N,C,H,1;
 * 4 -> N,C,H,W; more -> N,C,H,product of the rest. */
static void dims4(const GPType *t, uint32_t d[4]) {
  int64_t v[4] = {1, 1, 1, 1};
  if (t->n == 1) v[1] = t->tensor.shape[0];
  for (int32_t i = 0; i < t->n && t->n > 1; i++) {
    if (i < 3)
      v[i] = t->tensor.shape[i];
    else
      v[3] *= t->tensor.shape[i];
  }
  for (int i = 0; i < 4; i++) d[i] = (uint32_t)v[i];
}

static float f32_at(const GPTensor *t, int64_t i) {
  return ((const float *)((const char *)t->dl.data + t->dl.byte_offset))[i];
}

static int tensor_compact_f32(const GPTensor *t) {
  if (!(t->dl.dtype.code == kDLFloat && t->dl.dtype.bits == 32 && t->dl.dtype.lanes == 1) || !t->dl.data) return 0;
  if (!t->dl.strides) return 1;
  int64_t s = 1;
  for (int32_t i = t->dl.ndim - 1; i >= 0; i--) {
    if (t->dl.shape[i] != 1 && t->dl.strides[i] != s) return 0;
    s *= t->dl.shape[i];
  }
  return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Pointer map (open addressing)                                                               */

typedef struct PMap {
  const void **keys;
  int64_t *vals;
  size_t cap;
} PMap;

static size_t phash(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

static int pmap_init(PMap *m, size_t n) {
  m->cap = 16;
  while (m->cap < 2 * n + 2) m->cap *= 2;
  m->keys = calloc(m->cap, sizeof *m->keys);
  m->vals = calloc(m->cap, sizeof *m->vals);
  if (!m->keys || !m->vals) {
    H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS);
    return -1;
  }
  return 0;
}

static void pmap_put(PMap *m, const void *k, int64_t v) {
  size_t i = phash(k, m->cap);
  while (m->keys[i] && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
  m->keys[i] = k;
  m->vals[i] = v;
}

static int64_t pmap_get(const PMap *m, const void *k) {
  if (!m->cap) return -1;
  size_t i = phash(k, m->cap);
  while (m->keys[i]) {
    if (m->keys[i] == k) return m->vals[i];
    i = (i + 1) & (m->cap - 1);
  }
  return -1;
}

static void pmap_free(PMap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------------------------------ */
/* Compilation of one function                                                                 */

/* The result of compiling one function. */
typedef struct Compiled {
  OpuProgram prog;
  Buf blob;
  uint8_t *code; /* encoded program */
  size_t code_len;
  char **in_names; /* parameter names */
  const GPType **in_types, **out_types;
} Compiled;

static void compiled_free(Compiled *c) {
  if (!c) return;
  if (c->in_names)
    for (uint32_t i = 0; i < c->prog.num_inputs; i++) free(c->in_names[i]);
  free(c->in_names);
  free(c->in_types);
  free(c->out_types);
  opu_program_free(&c->prog);
  free(c->blob.d);
  free(c->code);
  free(c);
}

enum { K_NONE = 0, K_TENSOR, K_PCONV, K_PADD, K_PREQ, K_CONST, K_TUPLE };

typedef struct Node {
  int kind;
  int32_t uses;
  int32_t range_idx; /* index into ranges (calls and vars), -1 */
  uint32_t tid;      /* K_TENSOR */
  int32_t pend;      /* K_P*: index into pendings */
} Node;

typedef struct Pending {
  int kind;
  int32_t node;   /* the chain's last node (its range gives the output scale) */
  uint32_t in0, in1;
  /* conv */
  const GPTensor *w; /* OIHW float32, or NULL: identity depthwise 1x1 */
  float *mult, *bias; /* per output channel */
  uint32_t oc, groups, kh, kw, sh, sw, pt, pl, pb, pr;
  /* clamp in real values */
  double lo_r, hi_r;
  int clamped;
} Pending;

typedef struct Comp {
  const GPModule *mod;
  const GPFunctionExpr *fn;
  const char *fname;
  const double *ranges;
  int32_t nranges;
  uint32_t R, C;
  GPExpr **nodes;
  size_t nnodes;
  PMap idx;
  Node *info;
  Pending *pend;
  size_t npend, cappend;
  OpuTensor *tens;
  uint32_t ntens, captens;
  /* per tensor: 1 when its steps are scale_for's default, not a calibrated range (calibration
   * saw only zeros there); such a tensor's scale says nothing of its values */
  uint8_t *tdefault; /* captens bytes, grown with tens */
  OpuInstr *ins;
  uint32_t nins, capins;
  uint64_t act;
  Buf blob;
  int8_t *qrow; /* conv_emit_all's scratch: 2 max-K bytes per thread */
  size_t qcap;
  struct ConvEmit *jobs; /* convs whose weights are still to be written (conv_emit_all) */
  size_t njobs, capjobs;
} Comp;

static int node_err(Comp *c, const GPExpr *e, const char *fmt, ...) {
  char where[512], msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  H->error_set(GP_ERR_UNSUPPORTED, "%s: @%s: %s at %s: %s", PASS, c->fname, call_name(e),
               opu_where(c->mod, e, where, sizeof where), msg);
  return -1;
}

static int32_t node_of(Comp *c, const GPExpr *e) { return (int32_t)pmap_get(&c->idx, e); }

static double range_of(Comp *c, int32_t node) {
  int32_t r = c->info[node].range_idx;
  return r >= 0 && r < c->nranges ? c->ranges[r] : 0.0;
}

/* The step of int8 (uns: uint8) values over [-range, range]; a range of zero (or not finite)
 * has no step of its own and takes 1/127 (scale_is_default). */
static bool scale_is_default(double range, int uns) {
  double s = range / (uns ? 255.0 : 127.0);
  return !(s > 1e-30) || !isfinite(s);
}

static float scale_for(double range, int uns) {
  return scale_is_default(range, uns) ? (float)(1.0 / 127.0) : (float)(range / (uns ? 255.0 : 127.0));
}

/* Room for one more element in the array *p of *cap elements holding n (doubling, from 64);
 * -1 + GP_ERR_MEMORY with *p and *cap unchanged. */
static int grow(void **p, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return 0;
  size_t nc = *cap ? 2 * *cap : 64;
  void *q = nc <= SIZE_MAX / elem ? realloc(*p, nc * elem) : NULL;
  if (!q) return H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS), -1;
  *p = q;
  *cap = nc;
  return 0;
}

/* The same for the uint32_t-counted tensor and instruction tables. */
static int grow32(void **p, uint32_t *cap, uint32_t n, size_t elem) {
  size_t c = *cap;
  if (c >= UINT32_MAX / 2) return H->error_set(GP_ERR_UNSUPPORTED, "%s: more than 2^31 tensors or instructions", PASS), -1;
  if (grow(p, &c, n, elem) != 0) return -1;
  *cap = (uint32_t)c;
  return 0;
}

/* Append t (dflt: its steps are the default, see Comp.tdefault) as tensor *out. */
static int push_tensor(Comp *c, OpuTensor t, bool dflt, uint32_t *out) {
  uint32_t cap = c->captens;
  if (grow32((void **)&c->tens, &c->captens, c->ntens, sizeof *c->tens) != 0) return -1;
  if (c->captens != cap) {
    uint8_t *p = realloc(c->tdefault, c->captens);
    if (!p) {
      H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS);
      return -1;
    }
    c->tdefault = p;
  }
  c->tens[c->ntens] = t;
  c->tdefault[c->ntens] = dflt;
  *out = c->ntens++;
  return 0;
}

static int new_tensor_flags(Comp *c, uint32_t d[4], uint32_t flags, float scale, uint32_t *out) {
  uint64_t esize = (flags & OPU_T_INT32) ? 4 : 1, bytes = (uint64_t)d[0] * d[1] * d[2] * d[3] * esize;
  if (c->act + bytes > UINT32_MAX) {
    H->error_set(GP_ERR_UNSUPPORTED, "%s: @%s needs more than 4 GiB of activation memory", PASS, c->fname);
    return -1;
  }
  uint64_t addr = (c->act + 63) / 64 * 64;
  OpuTensor t = {(uint32_t)addr, d[0], d[1], d[2], d[3], (uint32_t)(d[1] * d[2] * d[3] * esize), flags, scale};
  if (push_tensor(c, t, false, out) != 0) return -1;
  c->act = addr + bytes;
  return 0;
}

/* A new tensor in the steps of another (in): same scale, and its default flag. */
static int new_tensor_like(Comp *c, uint32_t d[4], uint32_t in, uint32_t *out) {
  OpuTensor src = c->tens[in];
  if (new_tensor_flags(c, d, src.flags & OPU_T_UNSIGNED, src.scale, out) != 0) return -1;
  c->tdefault[*out] = c->tdefault[in];
  return 0;
}

/* A new tensor in the steps of a calibrated range. */
static int new_tensor_range(Comp *c, uint32_t d[4], int uns, double range, uint32_t *out) {
  if (new_tensor_flags(c, d, uns ? OPU_T_UNSIGNED : 0, scale_for(range, uns), out) != 0) return -1;
  c->tdefault[*out] = scale_is_default(range, uns);
  return 0;
}

/* A view t of the bytes of tensor `of` (its steps). */
static int add_view(Comp *c, OpuTensor t, uint32_t of, uint32_t *out) {
  return push_tensor(c, t, c->tdefault[of], out);
}

static OpuInstr *emit(Comp *c, uint16_t op, uint32_t in0, uint32_t out) {
  if (grow32((void **)&c->ins, &c->capins, c->nins, sizeof *c->ins) != 0) return NULL;
  OpuInstr *s = &c->ins[c->nins++];
  memset(s, 0, sizeof *s);
  s->op = op;
  s->in0 = in0;
  s->out = out;
  s->lo = (int16_t)opu_tensor_lo(&c->tens[out]);
  s->hi = (int16_t)opu_tensor_hi(&c->tens[out]);
  return s;
}

/* clamp bounds in steps of the output tensor: lo = round(lo_r / s), hi = round(hi_r / s),
 * each ties away from zero and inside the tensor's range */
static void set_clamp(Comp *c, OpuInstr *s, const Pending *p) {
  const OpuTensor *o = &c->tens[s->out];
  int32_t lo = opu_tensor_lo(o), hi = opu_tensor_hi(o);
  if (o->flags & OPU_T_INT32) { /* bounds in units of 2^16 steps, rounded outwards */
    if (p && p->clamped && p->lo_r > -INFINITY) {
      double q = floor(p->lo_r / o->scale / 65536.0);
      lo = q < lo ? lo : q > hi ? hi : (int32_t)q;
    }
    if (p && p->clamped && p->hi_r < INFINITY) {
      double q = floor(p->hi_r / o->scale / 65536.0);
      hi = q < lo ? lo : q > hi ? hi : (int32_t)q;
    }
    s->lo = (int16_t)lo;
    s->hi = (int16_t)hi;
    return;
  }
  if (p && p->clamped) {
    if (p->lo_r > -INFINITY) lo = opu_quantize((float)p->lo_r, o->scale, lo, hi);
    if (p->hi_r < INFINITY) hi = opu_quantize((float)p->hi_r, o->scale, lo, hi);
  }
  s->lo = (int16_t)lo;
  s->hi = (int16_t)(hi < lo ? lo : hi);
}

static void requant_params(double real, int32_t *m, uint16_t *sh) { opu_quant_multiplier(real, m, sh); }

#if defined(__GNUC__) && !defined(__clang__)
#define OPU_VECTORIZE __attribute__((optimize("O3")))
#else
#define OPU_VECTORIZE
#endif
/* q[k] = round(w[k] * inv) (ties away from zero), clamped to [-127, 127]; |w[k] * inv| is at
 * most 127 and a little (inv = 127 / the row's largest magnitude), so the conversion is exact */
OPU_VECTORIZE static void quant_row(const float *restrict w, uint32_t n, float inv, int8_t *restrict q) {
  for (uint32_t k = 0; k < n; k++) {
    float v = w[k] * inv;
    int32_t t = (int32_t)(v + copysignf(0.5f, v));
    t = t > 127 ? 127 : t;
    t = t < -127 ? -127 : t;
    q[k] = (int8_t)t;
  }
}

/* ---- A conv's weights and requantization records (docs/OPU.md "Weight layout")
 * Per output channel: its largest magnitude and its int8 values, the row read from memory once
 * (the second read, the quantization, hits the cache), written once into the blob's
 * PE-blocked layout, then its record (bias, multiplier, shift).  A conv's instruction is
 * emitted during the walk and its weights after it (conv_emit_all, once every blob range is
 * allocated): channels are independent and write disjoint bytes, so the work is cut into
 * units of whole blocks of R channels (a block's tiles are one contiguous range of the blob)
 * that every core claims in turn; a thread the scheduler starts late finds less to do, and
 * the caller waits for it once per function, not once per weight. */

typedef struct ConvEmit {
  const float *W;            /* oc x K float32, or NULL: identity depthwise 1x1 */
  const float *mult, *bias;  /* per output channel, or NULL (the Pending's, alive until comp_free) */
  uint32_t oc, icg, g, kh, kw, K, R, C;
  int dw;
  size_t w_off, q_off;       /* the weights' and the records' offsets in the blob */
  double a_scale, o_scale;   /* the input's and the output's scales */
} ConvEmit;

/* the largest |w[k]| (NaN ignored, as `v > m ? v : m` does) */
OPU_VECTORIZE static float absmax_row(const float *w, uint32_t n) {
  uint32_t k = 0;
  float m = 0;
#if defined(__SSE2__)
  const __m128 sign = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  __m128 m0 = _mm_setzero_ps(), m1 = m0, m2 = m0, m3 = m0;
  for (; k + 16 <= n; k += 16) { /* max(v, m): m when v is NaN */
    m0 = _mm_max_ps(_mm_and_ps(_mm_loadu_ps(w + k), sign), m0);
    m1 = _mm_max_ps(_mm_and_ps(_mm_loadu_ps(w + k + 4), sign), m1);
    m2 = _mm_max_ps(_mm_and_ps(_mm_loadu_ps(w + k + 8), sign), m2);
    m3 = _mm_max_ps(_mm_and_ps(_mm_loadu_ps(w + k + 12), sign), m3);
  }
  float l[4];
  _mm_storeu_ps(l, _mm_max_ps(_mm_max_ps(m0, m1), _mm_max_ps(m2, m3)));
  for (int j = 0; j < 4; j++) m = l[j] > m ? l[j] : m;
#endif
  for (; k < n; k++) {
    float v = fabsf(w[k]);
    m = v > m ? v : m;
  }
  return m;
}

/* qt[yx][i] = q[i][yx] */
static void transpose_taps(const int8_t *restrict q, uint32_t icg, uint32_t KK, int8_t *restrict qt) {
  for (uint32_t i = 0; i < icg; i++)
    for (uint32_t yx = 0; yx < KK; yx++) qt[(size_t)yx * icg + i] = q[(size_t)i * KK + yx];
}

/* Channels [o0, o1) of e into `blob`; q: 2 K bytes of scratch. */
static void conv_channels(const ConvEmit *e, uint8_t *blob, uint32_t o0, uint32_t o1, int8_t *q) {
  uint32_t KK = e->kh * e->kw, C = e->C;
  size_t step = e->dw ? e->R : (size_t)e->R * C, ib_stride = (size_t)KK * step;
  int8_t *qt = q + e->K;
  for (uint32_t o2 = o0; o2 < o1; o2++) {
    double mul = e->mult ? e->mult[o2] : 1.0;
    const float *wr = e->W ? e->W + (size_t)o2 * e->K : NULL;
    double mx = wr ? absmax_row(wr, e->K) * fabs(mul) : fabs(mul);
    double sw = mx > 0 ? mx / 127.0 : 1.0;
    /* the bias in accumulator steps (a_scale * sw) must stay within 2^30: a coarser weight step
     * where it would not (the weights' whole contribution, at most K * 127^2 steps, is then
     * below 2^-15 of the bias: an input of range 1e-9 with a bias of 1 had lost its bias) */
    double bmin_sw = e->bias ? fabs((double)e->bias[o2]) / (e->a_scale * 1073741824.0) : 0.0;
    if (sw < bmin_sw) sw = bmin_sw;
    float inv = (float)(mul / sw);
    if (wr) {
      quant_row(wr, e->K, inv, q);
    } else {
      float one = 1.0f;
      quant_row(&one, 1, inv, q);
    }
    /* destination of [o2][i][y][x]: the tile row of o2, column i % C, tiles (y, x) `step`
     * apart: tap (i, yx) at base + (i / C) * KK * step + yx * step + i % C; a 1x1 kernel's
     * columns are runs of C bytes, and so are a larger kernel's once its taps are transposed
     * to [yx][i] (in the cache: qt) */
    if (KK > 1 && !e->dw) transpose_taps(q, e->icg, KK, qt);
    uint8_t *base = blob + e->w_off + opu_conv_weight_index(o2, 0, 0, 0, e->oc, e->icg, e->g, e->kh, e->kw, e->dw, e->R, C);
    for (uint32_t i0 = 0, ib = 0; i0 < e->icg; i0 += C, ib++) {
      uint32_t cols = e->icg - i0 < C ? e->icg - i0 : C;
      uint8_t *blk = base + ib * ib_stride;
      if (KK == 1) {
        memcpy(blk, q + i0, cols);
        continue;
      }
      if (!e->dw) { /* tap yx of columns i0.. is a run of `cols` bytes of qt */
        for (uint32_t yx = 0; yx < KK; yx++) memcpy(blk + yx * step, qt + (size_t)yx * e->icg + i0, cols);
        continue;
      }
      for (uint32_t ic = 0; ic < cols; ic++) {
        const int8_t *src = q + (size_t)(i0 + ic) * KK;
        uint8_t *d = blk + ic;
        for (uint32_t yx = 0; yx < KK; yx++, d += step) *d = (uint8_t)src[yx];
      }
    }
    double acc_scale = e->a_scale * sw;
    double bq = e->bias ? e->bias[o2] / acc_scale : 0.0;
    bq = bq < 0 ? -floor(-bq + 0.5) : floor(bq + 0.5);
    if (bq > 1073741824.0) bq = 1073741824.0;
    if (bq < -1073741824.0) bq = -1073741824.0;
    int32_t m;
    uint16_t sh;
    opu_quant_multiplier(acc_scale / e->o_scale, &m, &sh);
    uint8_t *r = blob + e->q_off + (size_t)o2 * OPU_QREC_BYTES;
    int32_t rec[3] = {(int32_t)bq, m, (int32_t)sh};
    for (int j = 0; j < 3; j++)
      for (int b = 0; b < 4; b++) r[4 * j + b] = (uint8_t)((uint32_t)rec[j] >> (8 * b));
  }
}

typedef struct EmitUnit {
  uint32_t job, o0, o1;
} EmitUnit;

typedef struct EmitRun {
  const ConvEmit *jobs;
  const EmitUnit *units;
  size_t nunits;
  uint8_t *blob;
  _Atomic size_t next; /* the next unit to claim */
} EmitRun;

typedef struct EmitWorker {
  EmitRun *run;
  int8_t *q; /* 2 max-K bytes */
} EmitWorker;

static void *emit_worker(void *arg) {
  EmitWorker *w = arg;
  EmitRun *r = w->run;
  for (size_t u; (u = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed)) < r->nunits;) {
    const EmitUnit *e = &r->units[u];
    conv_channels(&r->jobs[e->job], r->blob, e->o0, e->o1, w->q);
  }
  return NULL;
}

#define OPU_PAR_WEIGHTS ((uint64_t)1 << 18) /* below 256K weights in all one thread */
#define OPU_UNIT_WEIGHTS ((uint64_t)1 << 16) /* a unit: blocks of R channels, about 64K weights */
#define OPU_EMIT_THREADS 16

/* The weights and records of every conv emitted so far (c->jobs), over the cores. */
static int conv_emit_all(Comp *c) {
  if (!c->njobs) return 0;
  size_t nunits = 0;
  uint64_t total = 0;
  uint32_t maxk = 1;
  for (size_t j = 0; j < c->njobs; j++) {
    const ConvEmit *e = &c->jobs[j];
    uint64_t blocks = (e->oc + e->R - 1) / e->R, per = OPU_UNIT_WEIGHTS / ((uint64_t)e->R * e->K);
    if (per < 1) per = 1;
    nunits += (size_t)((blocks + per - 1) / per);
    total += (uint64_t)e->oc * e->K;
    if (e->K > maxk) maxk = e->K;
  }
  EmitUnit *units = malloc(nunits * sizeof *units);
  if (!units) return H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS), -1;
  size_t u = 0;
  for (size_t j = 0; j < c->njobs; j++) {
    const ConvEmit *e = &c->jobs[j];
    uint32_t blocks = (e->oc + e->R - 1) / e->R;
    uint64_t per = OPU_UNIT_WEIGHTS / ((uint64_t)e->R * e->K);
    if (per < 1) per = 1;
    for (uint32_t b = 0; b < blocks; b += (uint32_t)per) {
      uint32_t b1 = b + (uint32_t)per < blocks ? b + (uint32_t)per : blocks;
      units[u++] = (EmitUnit){(uint32_t)j, b * e->R, b1 * e->R < e->oc ? b1 * e->R : e->oc};
    }
  }
  long nproc = sysconf(_SC_NPROCESSORS_ONLN);
  size_t nth = total < OPU_PAR_WEIGHTS || nproc < 2 ? 1 : (size_t)nproc;
  if (nth > OPU_EMIT_THREADS) nth = OPU_EMIT_THREADS;
  if (nth > nunits) nth = nunits;
  size_t need = (size_t)maxk * 2 * nth;
  if (need > c->qcap) {
    int8_t *nq = realloc(c->qrow, need);
    if (!nq) {
      free(units);
      return H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS), -1;
    }
    c->qrow = nq;
    c->qcap = need;
  }
  EmitRun run = {.jobs = c->jobs, .units = units, .nunits = nunits, .blob = c->blob.d};
  atomic_init(&run.next, 0);
  EmitWorker w[OPU_EMIT_THREADS];
  pthread_t th[OPU_EMIT_THREADS];
  int started[OPU_EMIT_THREADS] = {0};
  for (size_t t = 0; t < nth; t++) {
    w[t] = (EmitWorker){&run, c->qrow + (size_t)maxk * 2 * t};
    if (t > 0) started[t] = pthread_create(&th[t], NULL, emit_worker, &w[t]) == 0;
  }
  emit_worker(&w[0]); /* claims units until none is left; a helper that could not start claims none */
  for (size_t t = 1; t < nth; t++)
    if (started[t]) pthread_join(th[t], NULL);
  free(units);
  return 0;
}

/* Emit the instruction of a pending producer writing into tensor `out`. */
static int emit_pending(Comp *c, Pending *p, uint32_t out) {
  const OpuTensor *o = &c->tens[out];
  if (p->kind == K_PREQ) {
    OpuInstr *s = emit(c, OPU_OP_REQUANT, p->in0, out);
    if (!s) return -1;
    requant_params((double)c->tens[p->in0].scale / o->scale, &s->m0, &s->shift);
    set_clamp(c, s, p);
    return 0;
  }
  if (p->kind == K_PADD) {
    OpuInstr *s = emit(c, OPU_OP_ADD, p->in0, out);
    if (!s) return -1;
    s->in1 = p->in1;
    double ra = (double)c->tens[p->in0].scale / o->scale, rb = (double)c->tens[p->in1].scale / o->scale;
    int32_t m;
    uint16_t sh;
    opu_quant_multiplier(ra > rb ? ra : rb, &m, &sh);
    if (sh > 62) sh = 62;
    double small = (ra > rb ? rb : ra) * ldexp(1.0, sh);
    int32_t m2 = (int32_t)llround(small);
    s->m0 = ra > rb ? m : m2;
    s->m1 = ra > rb ? m2 : m;
    s->shift = sh;
    set_clamp(c, s, p);
    return 0;
  }
  /* CONV */
  const OpuTensor *a = &c->tens[p->in0];
  uint32_t g = p->groups, icg = a->c / g, oc = p->oc;
  int dw = g == a->c && g == oc && icg == 1;
  uint64_t wbytes = opu_conv_weight_bytes(oc, icg, g, p->kh, p->kw, dw, c->R, c->C);
  size_t w_off, q_off;
  int dense_tiles = dw ? oc % c->R == 0 : (oc / g) % c->R == 0 && icg % c->C == 0;
  if (wbytes > UINT32_MAX || buf_alloc(&c->blob, (size_t)wbytes, 64, &w_off, !dense_tiles) != 0 ||
      buf_alloc(&c->blob, (size_t)oc * OPU_QREC_BYTES, 64, &q_off, 0) != 0 || c->blob.n > UINT32_MAX) {
    if (H->error_kind() == GP_OK) H->error_set(GP_ERR_UNSUPPORTED, "%s: @%s: weight blob above 4 GiB", PASS, c->fname);
    return -1;
  }
  OpuInstr *s = emit(c, OPU_OP_CONV, p->in0, out);
  if (!s) return -1;
  s->flags = dw ? OPU_F_DEPTHWISE : 0;
  s->kh = (uint16_t)p->kh;
  s->kw = (uint16_t)p->kw;
  s->sh = (uint16_t)p->sh;
  s->sw = (uint16_t)p->sw;
  s->pt = (uint16_t)p->pt;
  s->pl = (uint16_t)p->pl;
  s->pb = (uint16_t)p->pb;
  s->pr = (uint16_t)p->pr;
  s->groups = g;
  s->w_off = (uint32_t)w_off;
  s->q_off = (uint32_t)q_off;
  set_clamp(c, s, p);
  if (grow((void **)&c->jobs, &c->capjobs, c->njobs, sizeof *c->jobs) != 0) return -1;
  /* the weights and records are written by conv_emit_all, after the walk */
  c->jobs[c->njobs++] = (ConvEmit){
      .W = p->w ? (const float *)((const char *)p->w->dl.data + p->w->dl.byte_offset) : NULL,
      .mult = p->mult,
      .bias = p->bias,
      .oc = oc, .icg = icg, .g = g, .kh = p->kh, .kw = p->kw, .K = icg * p->kh * p->kw, .R = c->R, .C = c->C,
      .dw = dw,
      .w_off = w_off,
      .q_off = q_off,
      .a_scale = a->scale,
      .o_scale = o->scale,
  };
  return 0;
}

static int pending_unsigned(const Comp *c, const Pending *p) {
  if (p->clamped && p->lo_r >= 0) return 1;
  (void)c;
  return 0;
}

/* The tensor of node i, emitting its pending producer into a new tensor first. */
static int materialize(Comp *c, int32_t i, uint32_t *out) {
  Node *n = &c->info[i];
  if (n->kind == K_TENSOR) {
    *out = n->tid;
    return 0;
  }
  if (n->kind < K_PCONV || n->kind > K_PREQ)
    return node_err(c, c->nodes[i], "its value is not an activation tensor (a constant or tuple where the OPU needs data)");
  Pending *p = &c->pend[n->pend];
  const GPType *t = c->nodes[i]->checked_type;
  uint32_t d[4];
  dims4(t, d);
  int uns = pending_unsigned(c, p);
  uint32_t tid;
  if (new_tensor_range(c, d, uns, range_of(c, i), &tid) != 0) return -1;
  if (emit_pending(c, p, tid) != 0) return -1;
  n->kind = K_TENSOR;
  n->tid = tid;
  *out = tid;
  return 0;
}

/* A function result: a pending producer writes it as int32 with 2^24 steps over its calibrated
 * range (the driver dequantizes; no 8-bit rounding of the logits); anything else is int8. */
static int materialize_output(Comp *c, int32_t i, uint32_t *out) {
  Node *n = &c->info[i];
  if (n->kind < K_PCONV || n->kind > K_PREQ) return materialize(c, i, out);
  Pending *p = &c->pend[n->pend];
  uint32_t d[4];
  dims4(c->nodes[i]->checked_type, d);
  double r = range_of(c, i);
  float sc = (float)(r > 0 && isfinite(r) ? r / 16777216.0 : 1.0 / 16777216.0);
  uint32_t tid;
  if (new_tensor_flags(c, d, OPU_T_INT32, sc, &tid) != 0) return -1;
  if (emit_pending(c, p, tid) != 0) return -1;
  n->kind = K_TENSOR;
  n->tid = tid;
  *out = tid;
  return 0;
}

static Pending *new_pending(Comp *c, int kind, int32_t node) {
  if (grow((void **)&c->pend, &c->cappend, c->npend, sizeof *c->pend) != 0) return NULL;
  Pending *p = &c->pend[c->npend];
  memset(p, 0, sizeof *p);
  p->kind = kind;
  p->node = node;
  p->lo_r = -INFINITY;
  p->hi_r = INFINITY;
  c->info[node].kind = kind;
  c->info[node].pend = (int32_t)c->npend++;
  return p;
}

/* The per-channel values of constant e for `channels` channels (a scalar repeats), into a new
 * array; NULL + error when its shape is neither. */
static float *channel_values(Comp *c, const GPExpr *call, const GPExpr *e, uint32_t channels) {
  const GPTensor *t = ((const GPConstant *)e)->data;
  if (!tensor_compact_f32(t)) {
    node_err(c, call, "its constant is not float32 data");
    return NULL;
  }
  int64_t n = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) n *= t->dl.shape[i];
  if (n != 1 && n != channels) {
    node_err(c, call, "its constant has %lld values; the OPU takes a scalar or one per channel (%u)", (long long)n,
             channels);
    return NULL;
  }
  float *v = malloc((size_t)channels * sizeof *v);
  if (!v) {
    H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS);
    return NULL;
  }
  for (uint32_t k = 0; k < channels; k++) v[k] = f32_at(t, n == 1 ? 0 : k);
  return v;
}

/* A pending conv of node i (identity depthwise 1x1 when w is NULL) over tensor in. */
static Pending *pending_conv(Comp *c, int32_t i, uint32_t in, uint32_t oc) {
  Pending *p = new_pending(c, K_PCONV, i);
  if (!p) return NULL;
  p->in0 = in;
  p->oc = oc;
  p->groups = oc;
  p->kh = p->kw = p->sh = p->sw = 1;
  return p;
}

/* A conv pending at node a that may take one more affine step (single use, not yet clamped),
 * moved to node i; else -1. */
static int32_t foldable(Comp *c, int32_t a, int kind) {
  if (a < 0 || c->info[a].uses != 1 || c->info[a].kind != kind) return -1;
  return c->info[a].pend;
}

static int do_affine(Comp *c, int32_t i, const GPCall *call, int is_mul) {
  /* which argument is the constant */
  int ci = call->args[1]->obj.type_index == GP_TI_CONSTANT ? 1 : call->args[0]->obj.type_index == GP_TI_CONSTANT ? 0 : -1;
  if (ci < 0) return 1; /* not affine */
  int32_t a = node_of(c, call->args[1 - ci]);
  const GPType *t = call->base.checked_type;
  uint32_t d[4];
  dims4(t, d);
  float *v = channel_values(c, &call->base, call->args[ci], d[1]);
  if (!v) return -1;
  int32_t pi = foldable(c, a, K_PCONV);
  Pending *p;
  if (pi >= 0 && !c->pend[pi].clamped) {
    p = &c->pend[pi];
    c->info[i].kind = K_PCONV;
    c->info[i].pend = pi;
    c->info[a].kind = K_NONE;
    p->node = i;
  } else {
    uint32_t in;
    if (materialize(c, a, &in) != 0) {
      free(v);
      return -1;
    }
    p = pending_conv(c, i, in, d[1]);
    if (!p) {
      free(v);
      return -1;
    }
  }
  if (!p->mult) {
    p->mult = malloc(p->oc * sizeof(float));
    p->bias = calloc(p->oc, sizeof(float));
    if (!p->mult || !p->bias) {
      free(v);
      H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS);
      return -1;
    }
    for (uint32_t k = 0; k < p->oc; k++) p->mult[k] = 1.0f;
  }
  for (uint32_t k = 0; k < p->oc; k++) {
    if (is_mul) {
      p->mult[k] *= v[k];
      p->bias[k] *= v[k];
    } else {
      p->bias[k] += v[k];
    }
  }
  free(v);
  return 0;
}

static int do_conv(Comp *c, int32_t i, const GPCall *call, int dense) {
  if (call->args[1]->obj.type_index != GP_TI_CONSTANT)
    return node_err(c, &call->base, "the weight is not a constant (the OPU reads weights at compile time)");
  const GPTensor *w = ((const GPConstant *)call->args[1])->data;
  if (!tensor_compact_f32(w)) return node_err(c, &call->base, "the weight is not float32 data");
  const GPType *xt = call->args[0]->checked_type, *ot = call->base.checked_type;
  uint32_t xd[4], od[4];
  dims4(xt, xd);
  dims4(ot, od);
  Pending tmp = {0};
  if (dense) {
    if (xt->n != 2 || w->dl.ndim != 2) return node_err(c, &call->base, "dense needs 2-d data and weight");
    tmp.groups = 1;
    tmp.kh = tmp.kw = tmp.sh = tmp.sw = 1;
  } else {
    const char *dl = attr_str(call, "data_layout"), *kl = attr_str(call, "kernel_layout"), *ol = attr_str(call, "out_layout");
    if ((dl && strcmp(dl, "NCHW")) || (kl && strcmp(kl, "OIHW")) || (ol && ol[0] && strcmp(ol, "NCHW")))
      return node_err(c, &call->base, "layouts %s/%s; the OPU takes NCHW data and OIHW weights (ToNCHWLayout)",
                      dl ? dl : "?", kl ? kl : "?");
    char why[256];
    if (opu_window_ok(call, true, why, sizeof why) != 0) return node_err(c, &call->base, "%s", why);
    if (w->dl.ndim != 4) return node_err(c, &call->base, "conv2d needs 4-d data and weight");
    int64_t st[2], pad[4];
    opu_attr_ints(call, "strides", st, 2, 1);
    opu_attr_ints(call, "padding", pad, 4, 0);
    tmp.groups = (uint32_t)attr_int(call, "groups", 1);
    tmp.kh = (uint32_t)w->dl.shape[2];
    tmp.kw = (uint32_t)w->dl.shape[3];
    tmp.sh = (uint32_t)st[0];
    tmp.sw = (uint32_t)st[1];
    tmp.pt = (uint32_t)pad[0];
    tmp.pl = (uint32_t)pad[1];
    tmp.pb = (uint32_t)pad[2];
    tmp.pr = (uint32_t)pad[3];
  }
  if ((uint64_t)xd[1] / (tmp.groups ? tmp.groups : 1) * tmp.kh * tmp.kw > OPU_MAX_TAPS) /* a dense's (a conv's: above) */
    return node_err(c, &call->base, "%llu taps per output; the OPU's int32 accumulator takes at most %u",
                    (unsigned long long)xd[1] / (tmp.groups ? tmp.groups : 1) * tmp.kh * tmp.kw, OPU_MAX_TAPS);
  uint32_t in;
  if (materialize(c, node_of(c, call->args[0]), &in) != 0) return -1;
  Pending *p = new_pending(c, K_PCONV, i);
  if (!p) return -1;
  *p = (Pending){K_PCONV, i, in, 0, w, NULL, NULL, od[1], tmp.groups, tmp.kh, tmp.kw, tmp.sh, tmp.sw,
                 tmp.pt, tmp.pl, tmp.pb, tmp.pr, -INFINITY, INFINITY, 0};
  if (tmp.groups < 1 || xd[1] % tmp.groups || od[1] % tmp.groups ||
      (uint64_t)w->dl.shape[1] * tmp.groups != xd[1] || (uint64_t)w->dl.shape[0] != od[1])
    return node_err(c, &call->base, "weight shape does not fit the data's channels and groups");
  return 0;
}

static int do_clamp(Comp *c, int32_t i, const GPCall *call, double lo, double hi) {
  int32_t a = node_of(c, call->args[0]);
  int32_t pi = a >= 0 && c->info[a].uses == 1 &&
                       (c->info[a].kind == K_PCONV || c->info[a].kind == K_PADD || c->info[a].kind == K_PREQ)
                   ? c->info[a].pend
                   : -1;
  Pending *p;
  if (pi >= 0) {
    p = &c->pend[pi];
    c->info[i].kind = c->info[a].kind;
    c->info[i].pend = pi;
    c->info[a].kind = K_NONE;
    p->node = i;
  } else {
    uint32_t in;
    if (materialize(c, a, &in) != 0) return -1;
    p = new_pending(c, K_PREQ, i);
    if (!p) return -1;
    p->in0 = in;
  }
  p->clamped = 1;
  if (lo > p->lo_r) p->lo_r = lo;
  if (hi < p->hi_r) p->hi_r = hi;
  return 0;
}

static int do_pool(Comp *c, int32_t i, const GPCall *call, int kind) {
  const char *layout = attr_str(call, "layout");
  if (layout && strcmp(layout, "NCHW"))
    return node_err(c, &call->base, "layout %s; the OPU pools NCHW", layout);
  uint32_t in;
  if (materialize(c, node_of(c, call->args[0]), &in) != 0) return -1;
  uint32_t d[4];
  dims4(call->base.checked_type, d);
  OpuTensor src = c->tens[in];
  /* An average far below its input's range (below a quarter: count_include_pad over mostly
   * padding, a chain of padded pools) goes into steps of its own calibrated range, the division
   * rescaling it (ISA 1.1); in the input's steps it kept two bits or fewer (cosine 0.86 after
   * three such pools).  Max pools, and averages of about their input's range, keep the steps. */
  int uns = (src.flags & OPU_T_UNSIGNED) != 0;
  double r_in = (double)src.scale * (uns ? 255 : 127), r_out = range_of(c, i);
  bool rescale = kind != OPU_OP_MAXPOOL && r_out > 0 && r_out * 4 < r_in;
  int32_t m0 = 0;
  uint16_t shift = 0;
  uint32_t out;
  if ((rescale ? new_tensor_range(c, d, uns, r_out, &out) : new_tensor_like(c, d, in, &out)) != 0) return -1;
  if (rescale) requant_params((double)src.scale / c->tens[out].scale, &m0, &shift);
  if (kind == OPU_OP_GAVGPOOL) {
    OpuInstr *s = emit(c, OPU_OP_GAVGPOOL, in, out);
    if (!s) return -1;
    s->m0 = m0;
    s->shift = shift;
  } else {
    char why[256];
    if (opu_window_ok(call, false, why, sizeof why) != 0) return node_err(c, &call->base, "%s", why);
    int64_t ps[2], st[2], pad[4];
    opu_attr_ints(call, "pool_size", ps, 2, 1);
    opu_attr_ints(call, "strides", st, 2, 1);
    opu_attr_ints(call, "padding", pad, 4, 0);
    OpuInstr *s = emit(c, (uint16_t)kind, in, out);
    if (!s) return -1;
    s->kh = (uint16_t)ps[0];
    s->kw = (uint16_t)ps[1];
    s->sh = (uint16_t)st[0];
    s->sw = (uint16_t)st[1];
    s->pt = (uint16_t)pad[0];
    s->pl = (uint16_t)pad[1];
    s->pb = (uint16_t)pad[2];
    s->pr = (uint16_t)pad[3];
    if (kind == OPU_OP_AVGPOOL && attr_int(call, "count_include_pad", 0)) s->flags |= OPU_F_COUNT_PAD;
    s->m0 = m0;
    s->shift = shift;
  }
  c->info[i].kind = K_TENSOR;
  c->info[i].tid = out;
  return 0;
}

static int do_concat(Comp *c, int32_t i, const GPCall *call) {
  int64_t axis = attr_int(call, "axis", 0);
  const GPType *ot = call->base.checked_type;
  if (ot->n != 4 || (axis != 1 && axis != -3))
    return node_err(c, &call->base, "axis %lld of a %d-d tensor; the OPU concatenates channels of 4-d tensors",
                    (long long)axis, (int)ot->n);
  const GPExpr *tup = call->args[0];
  if (tup->obj.type_index != GP_TI_TUPLE) return node_err(c, &call->base, "its argument is not a tuple expression");
  const GPTuple *tp = (const GPTuple *)tup;
  int32_t ti = node_of(c, tup);
  int direct = c->info[ti].uses == 1;
  double mx = 0;
  int uns = 1;
  for (int32_t k = 0; k < tp->n; k++) {
    int32_t f = node_of(c, tp->fields[k]);
    const Node *fn = &c->info[f];
    double r;
    int fu;
    if (fn->kind == K_TENSOR) {
      const OpuTensor *t = &c->tens[fn->tid];
      fu = (t->flags & OPU_T_UNSIGNED) != 0;
      /* an input calibrated as all zeros has the default steps, whose range of 1.0 would round
       * the others' small values to 0 (cosine 0): it adds no range */
      r = c->tdefault[fn->tid] ? 0.0 : (double)t->scale * (fu ? 255 : 127);
    } else if (fn->kind >= K_PCONV && fn->kind <= K_PREQ) {
      fu = pending_unsigned(c, &c->pend[fn->pend]);
      r = range_of(c, f);
    } else {
      return node_err(c, tp->fields[k], "a concatenate input that is not an activation");
    }
    uns &= fu;
    if (r > mx) mx = r;
  }
  uint32_t d[4];
  dims4(ot, d);
  uint32_t out;
  if (new_tensor_range(c, d, uns, mx, &out) != 0) return -1;
  uint32_t coff = 0;
  for (int32_t k = 0; k < tp->n; k++) {
    int32_t f = node_of(c, tp->fields[k]);
    uint32_t fd[4];
    dims4(tp->fields[k]->checked_type, fd);
    OpuTensor o = c->tens[out];
    OpuTensor view = {o.addr + coff * o.h * o.w, o.n, fd[1], o.h, o.w, o.bstride, o.flags, o.scale};
    coff += fd[1];
    uint32_t vid;
    if (add_view(c, view, out, &vid) != 0) return -1;
    Node *fn = &c->info[f];
    if (direct && fn->uses == 1 && fn->kind >= K_PCONV && fn->kind <= K_PREQ) {
      if (emit_pending(c, &c->pend[fn->pend], vid) != 0) return -1;
      fn->kind = K_NONE;
    } else {
      uint32_t src;
      if (materialize(c, f, &src) != 0) return -1;
      OpuInstr *s = emit(c, OPU_OP_REQUANT, src, vid);
      if (!s) return -1;
      requant_params((double)c->tens[src].scale / c->tens[vid].scale, &s->m0, &s->shift);
    }
  }
  c->info[i].kind = K_TENSOR;
  c->info[i].tid = out;
  return 0;
}

static int do_reshape(Comp *c, int32_t i, const GPCall *call) {
  uint32_t in;
  if (materialize(c, node_of(c, call->args[0]), &in) != 0) return -1;
  OpuTensor t = c->tens[in];
  if (t.n > 1 && t.bstride != t.c * t.h * t.w) { /* a strided view: copy it first */
    uint32_t d0[4] = {t.n, t.c, t.h, t.w}, cp;
    if (new_tensor_like(c, d0, in, &cp) != 0) return -1;
    OpuInstr *s = emit(c, OPU_OP_REQUANT, in, cp);
    if (!s) return -1;
    requant_params(1.0, &s->m0, &s->shift);
    t = c->tens[cp];
    in = cp;
  }
  uint32_t d[4];
  dims4(call->base.checked_type, d);
  OpuTensor v = {t.addr, d[0], d[1], d[2], d[3], d[1] * d[2] * d[3], t.flags, t.scale};
  uint32_t id;
  if (add_view(c, v, in, &id) != 0) return -1;
  c->info[i].kind = K_TENSOR;
  c->info[i].tid = id;
  return 0;
}

static int do_pad(Comp *c, int32_t i, const GPCall *call) {
  char why[256];
  if (opu_pad_ok(call, why, sizeof why) != 0) return node_err(c, &call->base, "%s", why);
  const GPAttrValue *pw = attr(call, "pad_width");
  float fill = call->nargs > 1 ? f32_at(((const GPConstant *)call->args[1])->data, 0) : 0;
  uint32_t in;
  if (materialize(c, node_of(c, call->args[0]), &in) != 0) return -1;
  OpuTensor src = c->tens[in];
  /* PAD keeps the input's steps; a fill outside them (below 0 after a relu, or beyond the
   * input's range) first requantizes the input into steps that hold both */
  double lo_r = opu_tensor_lo(&src) * (double)src.scale, hi_r = opu_tensor_hi(&src) * (double)src.scale;
  if (fill < lo_r || fill > hi_r) {
    double r = fmax(fmax(fabs(lo_r), fabs(hi_r)), fabs((double)fill));
    int uns = (src.flags & OPU_T_UNSIGNED) && fill >= 0;
    uint32_t sd[4] = {src.n, src.c, src.h, src.w}, cp;
    if (new_tensor_range(c, sd, uns, r, &cp) != 0) return -1;
    OpuInstr *q = emit(c, OPU_OP_REQUANT, in, cp);
    if (!q) return -1;
    requant_params((double)src.scale / c->tens[cp].scale, &q->m0, &q->shift);
    in = cp;
    src = c->tens[cp];
  }
  uint32_t d[4], out;
  dims4(call->base.checked_type, d);
  if (new_tensor_like(c, d, in, &out) != 0) return -1;
  if (fill != 0) c->tdefault[out] = 0; /* not all zeros now */
  OpuInstr *s = emit(c, OPU_OP_PAD, in, out);
  if (!s) return -1;
  s->groups = (uint32_t)pw->ints[2];
  s->q_off = (uint32_t)pw->ints[3];
  s->pt = (uint16_t)pw->ints[4];
  s->pb = (uint16_t)pw->ints[5];
  s->pl = (uint16_t)pw->ints[6];
  s->pr = (uint16_t)pw->ints[7];
  s->m0 = opu_quantize(fill, src.scale, opu_tensor_lo(&src), opu_tensor_hi(&src));
  c->info[i].kind = K_TENSOR;
  c->info[i].tid = out;
  return 0;
}

static int compile_node(Comp *c, int32_t i) {
  GPExpr *e = c->nodes[i];
  switch (e->obj.type_index) {
  case GP_TI_CONSTANT: c->info[i].kind = K_CONST; return 0;
  case GP_TI_TUPLE: c->info[i].kind = K_TUPLE; return 0;
  case GP_TI_OP: return 0;
  case GP_TI_VAR: return c->info[i].kind == K_TENSOR ? 0 : node_err(c, e, "a variable that is not a parameter");
  case GP_TI_CALL: break;
  default: return node_err(c, e, "not supported inside an OPU function");
  }
  const GPCall *call = (const GPCall *)e;
  if (call->op->obj.type_index != GP_TI_OP) return node_err(c, e, "a call of a function inside an OPU function");
  if (!is_f32(e->checked_type)) return node_err(c, e, "its result is not a float32 tensor");
  for (int32_t k = 0; k < call->nargs; k++) {
    const GPType *at = call->args[k]->checked_type;
    int ok = at && (is_f32(at) || at->kind == GP_TYPE_TUPLE);
    if (!ok) return node_err(c, e, "argument %d is not a float32 tensor", (int)k);
  }
  if (is_op(e, "nn.conv2d")) return do_conv(c, i, call, 0);
  if (is_op(e, "nn.dense")) return do_conv(c, i, call, 1);
  if (is_op(e, "nn.bias_add")) {
    if (call->args[1]->obj.type_index != GP_TI_CONSTANT) return node_err(c, e, "the bias is not a constant");
    int64_t ax = attr_int(call, "axis", 1);
    if (ax != 1 && !(ax == -1 && e->checked_type->n == 2)) return node_err(c, e, "bias axis %lld; the OPU adds per channel (axis 1)", (long long)ax);
    return do_affine(c, i, call, 0);
  }
  if (is_op(e, "add") || is_op(e, "multiply")) {
    int mul = is_op(e, "multiply");
    int rc = do_affine(c, i, call, mul);
    if (rc <= 0) return rc;
    if (mul) return node_err(c, e, "a product of two activations; the OPU multiplies by constants only");
    uint32_t a, b;
    if (numel(call->args[0]->checked_type) != numel(e->checked_type) ||
        numel(call->args[1]->checked_type) != numel(e->checked_type))
      return node_err(c, e, "a broadcasting add of two activations; the OPU adds tensors of one shape");
    if (materialize(c, node_of(c, call->args[0]), &a) != 0 || materialize(c, node_of(c, call->args[1]), &b) != 0)
      return -1;
    Pending *p = new_pending(c, K_PADD, i);
    if (!p) return -1;
    p->in0 = a;
    p->in1 = b;
    return 0;
  }
  if (is_op(e, "nn.relu")) return do_clamp(c, i, call, 0.0, INFINITY);
  if (is_op(e, "clip")) {
    const GPAttrValue *lo = attr(call, "a_min"), *hi = attr(call, "a_max");
    double l = lo && lo->kind == GP_ATTR_FLOAT ? lo->f : lo && lo->kind == GP_ATTR_INT ? (double)lo->i : -INFINITY;
    double h = hi && hi->kind == GP_ATTR_FLOAT ? hi->f : hi && hi->kind == GP_ATTR_INT ? (double)hi->i : INFINITY;
    return do_clamp(c, i, call, l, h);
  }
  if (is_op(e, "nn.max_pool2d")) return do_pool(c, i, call, OPU_OP_MAXPOOL);
  if (is_op(e, "nn.avg_pool2d")) return do_pool(c, i, call, OPU_OP_AVGPOOL);
  if (is_op(e, "nn.global_avg_pool2d")) return do_pool(c, i, call, OPU_OP_GAVGPOOL);
  if (is_op(e, "concatenate")) return do_concat(c, i, call);
  if (is_op(e, "reshape") || is_op(e, "nn.batch_flatten") || is_op(e, "squeeze") || is_op(e, "expand_dims"))
    return do_reshape(c, i, call);
  if (is_op(e, "nn.pad")) return do_pad(c, i, call);
  if (is_op(e, "nn.dropout") || is_op(e, "copy")) {
    int32_t a = node_of(c, call->args[0]);
    uint32_t t;
    if (materialize(c, a, &t) != 0) return -1;
    c->info[i].kind = K_TENSOR;
    c->info[i].tid = t;
    return 0;
  }
  return node_err(c, e, "not an OPU instruction; its target.opu predicate should keep it on the host");
}

static void comp_free(Comp *c) {
  free(c->nodes);
  pmap_free(&c->idx);
  free(c->info);
  for (size_t k = 0; k < c->npend; k++) {
    free(c->pend[k].mult);
    free(c->pend[k].bias);
  }
  free(c->pend);
  free(c->tens);
  free(c->tdefault);
  free(c->ins);
  free(c->blob.d);
  free(c->qrow);
  free(c->jobs);
}

/* Count the calls and vars of a function's body in post-order (the length of opu.ranges). */
static int range_slots(const GPFunctionExpr *fn, GPExpr ***nodes, size_t *n, int32_t *nranges) {
  if (H->post_order(fn->body, nodes, n) != 0) return -1;
  int32_t r = 0;
  for (size_t i = 0; i < *n; i++) {
    int k = (*nodes)[i]->obj.type_index;
    if (k == GP_TI_CALL || k == GP_TI_VAR) r++;
  }
  *nranges = r;
  return 0;
}

/* Compile fn (typed) with the given ranges and PE array: a new Compiled, or NULL + error. */
static Compiled *opu_compile(const GPModule *mod, const GPFunctionExpr *fn, const char *fname, const double *ranges,
                             int32_t nranges, uint32_t R, uint32_t C) {
  Comp c;
  memset(&c, 0, sizeof c);
  c.mod = mod;
  c.fn = fn;
  c.fname = fname;
  c.ranges = ranges;
  c.nranges = nranges;
  c.R = R;
  c.C = C;
  Compiled *out = NULL;
  GPExpr **nodes = NULL;
  size_t nn = 0;
  int32_t nr = 0;
  if (range_slots(fn, &nodes, &nn, &nr) != 0) goto fail;
  /* the host's post-order array is freed with its `free`; keep our own copy */
  c.nodes = malloc((nn ? nn : 1) * sizeof *c.nodes);
  if (!c.nodes) goto oom;
  memcpy(c.nodes, nodes, nn * sizeof *nodes);
  H->free(nodes);
  nodes = NULL;
  c.nnodes = nn;
  if (nr != nranges) {
    H->error_set(GP_ERR_VALUE, "%s: @%s has %d calls and variables but opu.ranges holds %d values (was the function "
                 "changed after GenIR?)", PASS, fname, (int)nr, (int)nranges);
    goto fail;
  }
  { /* the blob is about one byte per weight: reserve it once */
    size_t est = 1 << 20;
    for (size_t i = 0; i < nn; i++)
      if (c.nodes[i]->obj.type_index == GP_TI_CONSTANT) {
        const GPTensor *t = ((const GPConstant *)c.nodes[i])->data;
        size_t k = 1;
        for (int32_t d = 0; d < t->dl.ndim; d++) k *= (size_t)t->dl.shape[d];
        est += k + k / 4 + 256;
      }
    if (buf_reserve(&c.blob, est) != 0) goto fail;
  }
  c.info = calloc(nn ? nn : 1, sizeof *c.info);
  if (!c.info || pmap_init(&c.idx, nn) != 0) goto oom;
  int32_t r = 0;
  for (size_t i = 0; i < nn; i++) {
    pmap_put(&c.idx, c.nodes[i], (int64_t)i);
    int k = c.nodes[i]->obj.type_index;
    c.info[i].range_idx = k == GP_TI_CALL || k == GP_TI_VAR ? r++ : -1;
    if (!c.nodes[i]->checked_type && k != GP_TI_OP) {
      node_err(&c, c.nodes[i], "the function is not typed (run InferType first)");
      goto fail;
    }
  }
  for (size_t i = 0; i < nn; i++) {
    const GPExpr *e = c.nodes[i];
    int32_t nk = gp_expr_num_children(e);
    for (int32_t k = 0; k < nk; k++) {
      int64_t j = pmap_get(&c.idx, gp_expr_child_at(e, k));
      if (j >= 0) c.info[j].uses++;
    }
  }
  c.info[nn - 1].uses++; /* the result */
  /* inputs: one int8 tensor per parameter */
  out = calloc(1, sizeof *out);
  if (!out) goto oom;
  uint32_t np = (uint32_t)fn->nparams;
  uint32_t *inputs = calloc(np ? np : 1, 4);
  out->prog.inputs = inputs;
  out->in_names = calloc(np ? np : 1, sizeof(char *));
  out->in_types = calloc(np ? np : 1, sizeof(GPType *));
  if (!inputs || !out->in_names || !out->in_types) goto oom;
  out->prog.num_inputs = np;
  for (uint32_t k = 0; k < np; k++) {
    const GPVar *v = fn->params[k];
    const GPType *t = v->base.checked_type ? v->base.checked_type : v->type_annotation;
    if (!is_f32(t)) {
      node_err(&c, &v->base, "parameter %%%s is not a float32 tensor", v->name ? v->name : "_");
      goto fail;
    }
    for (int32_t d = 0; d < t->n; d++)
      if (t->tensor.shape[d] < 0) {
        node_err(&c, &v->base, "parameter %%%s has an unknown dimension", v->name ? v->name : "_");
        goto fail;
      }
    int64_t j = pmap_get(&c.idx, v);
    uint32_t d4[4];
    dims4(t, d4);
    double rg = j >= 0 ? range_of(&c, (int32_t)j) : 0.0;
    if (new_tensor_range(&c, d4, 0, rg, &inputs[k]) != 0) goto fail;
    if (j >= 0) {
      c.info[j].kind = K_TENSOR;
      c.info[j].tid = inputs[k];
    }
    out->in_names[k] = strdup(v->name ? v->name : "");
    out->in_types[k] = t;
    if (!out->in_names[k]) goto oom;
  }
  for (size_t i = 0; i < nn; i++)
    if (compile_node(&c, (int32_t)i) != 0) goto fail;
  /* outputs */
  {
    const GPExpr *body = fn->body;
    int32_t nout = body->obj.type_index == GP_TI_TUPLE ? ((const GPTuple *)body)->n : 1;
    if (nout < 1) {
      node_err(&c, body, "the function returns an empty tuple");
      goto fail;
    }
    out->prog.outputs = calloc((size_t)nout, 4);
    out->out_types = calloc((size_t)nout, sizeof(GPType *));
    if (!out->prog.outputs || !out->out_types) goto oom;
    out->prog.num_outputs = (uint32_t)nout;
    for (int32_t k = 0; k < nout; k++) {
      const GPExpr *f = body->obj.type_index == GP_TI_TUPLE ? ((const GPTuple *)body)->fields[k] : body;
      if (!is_f32(f->checked_type)) {
        node_err(&c, f, "the function's result %d is not a float32 tensor", (int)k);
        goto fail;
      }
      if (materialize_output(&c, node_of(&c, f), &out->prog.outputs[k]) != 0) goto fail;
      out->out_types[k] = f->checked_type;
    }
  }
  if (conv_emit_all(&c) != 0) goto fail;
  out->prog.ver_major = OPU_VERSION_MAJOR;
  out->prog.ver_minor = OPU_VERSION_MINOR;
  out->prog.pe_rows = (uint16_t)R;
  out->prog.pe_cols = (uint16_t)C;
  out->prog.act_bytes = (uint32_t)((c.act + 63) / 64 * 64);
  out->prog.weight_bytes = (uint32_t)c.blob.n;
  out->prog.num_tensors = c.ntens;
  out->prog.tensors = c.tens;
  c.tens = NULL;
  out->prog.num_instrs = c.nins;
  out->prog.instrs = c.ins;
  c.ins = NULL;
  out->blob = c.blob;
  c.blob = (Buf){0};
  {
    char err[512];
    if (opu_program_validate(&out->prog, err, sizeof err) != 0) {
      H->error_set(GP_ERR_INTERNAL, "%s: @%s: the generated program is invalid: %s", PASS, fname, err);
      goto fail;
    }
  }
  out->code_len = opu_program_size(&out->prog);
  out->code = malloc(out->code_len);
  if (!out->code) goto oom;
  opu_program_encode(&out->prog, out->code);
  comp_free(&c);
  return out;
oom:
  H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS);
fail:
  if (nodes) H->free(nodes);
  comp_free(&c);
  compiled_free(out);
  return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Attributes of a compiled function                                                           */

static int is_opu_fn(const GPFunctionExpr *fn) {
  const GPAttrValue *v = fn->attrs ? H->attrs_get(fn->attrs, "Compiler") : NULL;
  return v && v->kind == GP_ATTR_STR && v->s && strcmp(v->s, "opu") == 0;
}

static int parse_pe(const char *s, uint32_t *R, uint32_t *C) {
  char *end;
  long r = strtol(s, &end, 10);
  if (end == s || *end != 'x') return -1;
  const char *q = end + 1;
  long cc = strtol(q, &end, 10);
  if (end == q || *end || r < 1 || r > 256 || cc < 1 || cc > 256) return -1;
  *R = (uint32_t)r;
  *C = (uint32_t)cc;
  return 0;
}

/* Compile a function that carries opu.ranges and opu.pe. */
static Compiled *compile_from_attrs(const GPModule *mod, const GPFunctionExpr *fn, const char *fname) {
  const GPAttrValue *rv = fn->attrs ? H->attrs_get(fn->attrs, "opu.ranges") : NULL;
  const GPAttrValue *pv = fn->attrs ? H->attrs_get(fn->attrs, "opu.pe") : NULL;
  if (!rv || (rv->kind != GP_ATTR_FLOATS && !(rv->kind == GP_ATTR_INTS && rv->n == 0)) || !pv ||
      pv->kind != GP_ATTR_INTS || pv->n != 2 || pv->ints[0] < 1 || pv->ints[0] > 256 || pv->ints[1] < 1 ||
      pv->ints[1] > 256) {
    H->error_set(GP_ERR_VALUE,
                 "%s: @%s has no valid opu.ranges / opu.pe attributes: run GenIR (the opu target's set) first", PASS,
                 fname);
    return NULL;
  }
  return opu_compile(mod, fn, fname, rv->kind == GP_ATTR_FLOATS ? rv->floats : NULL, rv->n, (uint32_t)pv->ints[0],
                     (uint32_t)pv->ints[1]);
}

/* ------------------------------------------------------------------------------------------ */
/* Manifest                                                                                    */

static void json_str(Buf *b, const char *s) {
  txt(b, "\"");
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      txt(b, "\\%c", ch);
    else if (ch < 0x20)
      txt(b, "\\u%04x", ch);
    else
      txt(b, "%c", ch);
  }
  txt(b, "\"");
}

static void json_tensor(Buf *b, const char *name, const GPType *t, const OpuProgram *p, uint32_t id) {
  const OpuTensor *x = &p->tensors[id];
  txt(b, "{\"name\": ");
  json_str(b, name);
  txt(b, ", \"shape\": [");
  for (int32_t d = 0; d < t->n; d++) txt(b, "%s%lld", d ? ", " : "", (long long)t->tensor.shape[d]);
  txt(b, "], \"dtype\": \"%s\", \"scale\": %.9g, \"zero_point\": 0, \"tensor\": %u, \"addr\": %u, \"nchw\": [%u, %u, %u, %u], "
      "\"batch_stride\": %u}",
      (x->flags & OPU_T_INT32) ? "int32" : (x->flags & OPU_T_UNSIGNED) ? "uint8" : "int8", (double)x->scale, id, x->addr, x->n, x->c, x->h, x->w,
      x->bstride);
}

static void manifest_function(Buf *b, const char *fname, const Compiled *cp, const char *files) {
  txt(b, "    {\"name\": ");
  json_str(b, fname);
  if (files) txt(b, ", \"program\": \"%s.opu\", \"listing\": \"%s.lst\", \"weights\": \"%s.wts\"", files, files, files);
  txt(b, ",\n     \"program_bytes\": %zu, \"weight_bytes\": %u, \"activation_bytes\": %u, \"instructions\": %u, "
      "\"pe\": [%u, %u],\n     \"inputs\": [",
      cp->code_len, cp->prog.weight_bytes, cp->prog.act_bytes, cp->prog.num_instrs, cp->prog.pe_rows, cp->prog.pe_cols);
  for (uint32_t i = 0; i < cp->prog.num_inputs; i++) {
    txt(b, i ? ", " : "");
    json_tensor(b, cp->in_names[i], cp->in_types[i], &cp->prog, cp->prog.inputs[i]);
  }
  txt(b, "],\n     \"outputs\": [");
  for (uint32_t i = 0; i < cp->prog.num_outputs; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "output_%u", i);
    txt(b, i ? ", " : "");
    json_tensor(b, nm, cp->out_types[i], &cp->prog, cp->prog.outputs[i]);
  }
  txt(b, "]}");
}

/* ------------------------------------------------------------------------------------------ */
/* Calibration                                                                                 */

typedef struct Calib {
  PMap idx;    /* node -> range slot */
  double *mx;  /* per slot */
  size_t nslots;
} Calib;

static int observe(void *user, const GPExpr *node, int32_t field, const DLTensor *v) {
  Calib *cb = user;
  if (field >= 0) return 0;
  int64_t s = pmap_get(&cb->idx, node);
  if (s < 0) return 0;
  if (!(v->dtype.code == kDLFloat && v->dtype.bits == 32)) return 0;
  int64_t n = 1;
  for (int32_t d = 0; d < v->ndim; d++) n *= v->shape[d];
  const float *x = (const float *)((const char *)v->data + v->byte_offset);
  float m = (float)cb->mx[s];
  if (!v->strides) {
    for (int64_t i = 0; i < n; i++) {
      float a = fabsf(x[i]);
      m = a > m ? a : m; /* NaN is skipped */
    }
  } else { /* strided: walk the index */
    int64_t idx[16] = {0};
    if (v->ndim > 16) return 0;
    for (int64_t i = 0; i < n; i++) {
      int64_t off = 0;
      for (int32_t d = 0; d < v->ndim; d++) off += idx[d] * v->strides[d];
      float a = fabsf(x[off]);
      m = a > m ? a : m;
      for (int32_t d = v->ndim - 1; d >= 0; d--) {
        if (++idx[d] < v->shape[d]) break;
        idx[d] = 0;
      }
    }
  }
  cb->mx[s] = m;
  return 0;
}

static const char *cfg_str(GPPassContext *ctx, const char *key, const char *dflt) {
  GPAny v = {0};
  if (!ctx || H->ctx_get_config(ctx, key, &v) != 0) {
    H->error_clear();
    return dflt;
  }
  if (v.type_index == GP_TI_RAW_STR) return v.v_c_str;
  if (v.type_index == GP_TI_STR) return ((GPString *)v.v_obj)->data;
  return dflt;
}

static int64_t cfg_int(GPPassContext *ctx, const char *key, int64_t dflt) {
  GPAny v = {0};
  if (!ctx || H->ctx_get_config(ctx, key, &v) != 0) {
    H->error_clear();
    return dflt;
  }
  return v.type_index == GP_TI_INT || v.type_index == GP_TI_BOOL ? v.v_int64 : dflt;
}

/* The deterministic inputs of @main for seed (those of --verify-numerics), each `?` dim of a
 * parameter as 1 as --verify-numerics fills it (GPHostAPI.eval_random_inputs_filled, ABI 1.6;
 * a static @main needs only eval_random_inputs).  *shapes_note gets "; %x as (1, 2, 4, 4)" for
 * each parameter filled (caller frees), or NULL. */
static int random_inputs(const GPModule *mod, const GPFunctionExpr *mainf, int64_t seed, GPTensor ***rnd, int32_t *n,
                         char **shapes_note) {
  *shapes_note = NULL;
  Buf note = {0};
  for (int32_t i = 0; i < mainf->nparams; i++) {
    const GPVar *v = mainf->params[i];
    const GPType *t = v->type_annotation ? v->type_annotation : v->base.checked_type;
    if (!t) {
      free(note.d);
      return H->error_set(GP_ERR_VALUE, "@main's parameter %%%s has no type", v->name ? v->name : "_"), -1;
    }
    bool any = false;
    for (int32_t d = 0; t->kind == GP_TYPE_TENSOR && d < t->n; d++) any |= t->tensor.shape[d] < 0;
    if (!any) continue;
    txt(&note, "; %%%s as (", v->name ? v->name : "_");
    for (int32_t d = 0; d < t->n; d++)
      txt(&note, "%s%lld", d ? ", " : "", (long long)(t->tensor.shape[d] < 0 ? 1 : t->tensor.shape[d]));
    txt(&note, ")");
  }
  int rc;
  if (!note.n) {
    rc = H->eval_random_inputs(mod, "main", (uint64_t)seed, rnd, n);
  } else if (GP_HAS_FIELD(H, GPHostAPI, eval_random_inputs_filled) && H->eval_random_inputs_filled) {
    rc = H->eval_random_inputs_filled(mod, "main", (uint64_t)seed, 1, rnd, n);
  } else {
    H->error_set(GP_ERR_VERSION, "@main has `?` dims (%s); filling them needs a graphpass host of ABI 1.6 "
                 "(eval_random_inputs_filled): give calibration inputs (GenIR.calibrate)", (const char *)note.d + 2);
    rc = -1;
  }
  if (rc == 0 && note.n) *shapes_note = strndup((const char *)note.d, note.n);
  free(note.d);
  return rc;
}

/* Inputs of @main from "NAME=FILE;NAME=FILE" (every parameter named), or the deterministic
 * ones (*filled_dims: some `?` dim was made 1 in them).  *inputs: malloc'd array of n new
 * references. */
static int calib_inputs(const GPModule *mod, const GPFunctionExpr *mainf, const char *spec, int64_t seed,
                        GPPassContext *ctx, GPTensor ***inputs, bool *filled_dims) {
  *filled_dims = false;
  int32_t np = mainf->nparams;
  GPTensor **ins = calloc((size_t)(np ? np : 1), sizeof *ins);
  if (!ins) return H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS), -1;
  if (!spec || !spec[0]) {
    GPTensor **rnd = NULL;
    int32_t n = 0;
    char *filled = NULL;
    if (random_inputs(mod, mainf, seed, &rnd, &n, &filled) != 0) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", H->error_message());
      H->error_set(H->error_kind(), "%s: the deterministic calibration inputs: %s", PASS, msg);
      free(ins);
      return -1;
    }
    for (int32_t i = 0; i < n && i < np; i++) ins[i] = rnd[i];
    for (int32_t i = np; i < n; i++) gp_release(rnd[i]);
    H->free(rnd);
    H->ctx_note(ctx,
                "no calibration inputs (GenIR.calibrate / --calibrate NAME=FILE): activation scales come from the "
                "deterministic inputs of --verify-numerics (seed %lld%s), not from real data",
                (long long)seed, filled ? filled : "");
    *filled_dims = filled != NULL;
    free(filled);
    *inputs = ins;
    return 0;
  }
  char *s = strdup(spec);
  if (!s) {
    free(ins);
    return H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS), -1;
  }
  int rc = 0;
  char *save = NULL;
  for (char *item = strtok_r(s, ";", &save); item && rc == 0; item = strtok_r(NULL, ";", &save)) {
    char *eq = strchr(item, '=');
    if (!eq || eq == item || !eq[1]) {
      H->error_set(GP_ERR_VALUE, "%s: GenIR.calibrate item '%s' is not NAME=FILE", PASS, item);
      rc = -1;
      break;
    }
    *eq = 0;
    const char *name = item[0] == '%' ? item + 1 : item;
    int32_t pi = -1;
    for (int32_t i = 0; i < np && pi < 0; i++)
      if (mainf->params[i]->name && strcmp(mainf->params[i]->name, name) == 0) pi = i;
    if (pi < 0) {
      H->error_set(GP_ERR_VALUE, "%s: calibration input %s: @main has no parameter %%%s", PASS, name, name);
      rc = -1;
      break;
    }
    if (ins[pi]) {
      H->error_set(GP_ERR_VALUE, "%s: calibration input %s is given twice", PASS, name);
      rc = -1;
      break;
    }
    ins[pi] = H->tensor_read(eq + 1);
    if (!ins[pi]) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", H->error_message());
      H->error_set(H->error_kind(), "%s: calibration input %s: %s", PASS, name, msg);
      rc = -1;
    }
  }
  free(s);
  for (int32_t i = 0; rc == 0 && i < np; i++)
    if (!ins[i]) {
      H->error_set(GP_ERR_VALUE, "%s: no calibration input for @main's parameter %%%s (give every one, or none)", PASS,
                   mainf->params[i]->name ? mainf->params[i]->name : "_");
      rc = -1;
    }
  if (rc != 0) {
    for (int32_t i = 0; i < np; i++) gp_release(ins[i]);
    free(ins);
    return -1;
  }
  *inputs = ins;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Files                                                                                       */

static int mkdirs(const char *dir) {
  char *p = strdup(dir);
  if (!p) return -1;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || !*s) {
      char ch = *s;
      *s = 0;
      struct stat st;
      if (stat(p, &st) != 0 && mkdir(p, 0777) != 0) {
        H->error_set(GP_ERR_IO, "%s: cannot create directory %s", PASS, p);
        free(p);
        return -1;
      }
      *s = ch;
      if (!ch) break;
    }
  }
  free(p);
  return 0;
}

static int write_file(const char *dir, const char *name, const char *ext, const void *data, size_t len) {
  size_t n = strlen(dir) + strlen(name) + strlen(ext) + 3;
  char *path = malloc(n);
  if (!path) return H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS), -1;
  snprintf(path, n, "%s/%s%s", dir, name, ext);
  FILE *f = fopen(path, "wb");
  int ok = f && fwrite(data, 1, len, f) == len;
  if (f && fclose(f) != 0) ok = 0;
  if (!ok) H->error_set(GP_ERR_IO, "%s: cannot write %s", PASS, path);
  free(path);
  return ok ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* The pass                                                                                    */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* the process's CPU time, all threads (a loaded machine stretches wall time; a large weight is
 * emitted on every core) */
static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int genir(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *in;
  GPPassContext *ctx;
  if (opu_pass_args(PASS, args, nargs, &in, &ctx) != 0) return -1;
  int nopu = 0;
  for (int32_t i = 0; i < in->num_functions; i++) nopu += is_opu_fn(in->funcs[i]);
  if (!nopu) {
    H->ctx_note(ctx, "no Compiler=\"opu\" function: nothing to compile");
    return opu_return_module(result, gp_retain(in));
  }
  uint32_t R = 16, C = 16;
  const char *pe = cfg_str(ctx, "GenIR.pe", "16x16");
  if (parse_pe(pe, &R, &C) != 0) {
    H->error_set(GP_ERR_VALUE, "%s: GenIR.pe '%s' is not ROWSxCOLS with each from 1 to 256 (e.g. 16x16)", PASS, pe);
    return -1;
  }
  const char *outdir = cfg_str(ctx, "GenIR.out", "");
  const char *spec = cfg_str(ctx, "GenIR.calibrate", "");
  int64_t seed = cfg_int(ctx, "GenIR.seed", 0);
  GPModule *mod = H->infer_types(in);
  if (!mod) return -1;
  GPModule *outm = NULL;
  Calib cb = {0};
  GPTensor **ins = NULL, **outs = NULL;
  int32_t nouts = 0, nins = 0;
  Compiled **comp = NULL;
  int rc = -1;
  double t0 = now_ms();
  /* 1. calibration slots over every opu function */
  size_t total = 0;
  for (int32_t f = 0; f < mod->num_functions; f++) {
    if (!is_opu_fn(mod->funcs[f])) continue;
    GPExpr **nodes;
    size_t n;
    int32_t nr;
    if (range_slots(mod->funcs[f], &nodes, &n, &nr) != 0) goto done;
    H->free(nodes);
    total += (size_t)nr;
  }
  if (pmap_init(&cb.idx, total) != 0) goto done;
  cb.mx = calloc(total ? total : 1, sizeof *cb.mx);
  if (!cb.mx) goto done;
  {
    size_t slot = 0;
    for (int32_t f = 0; f < mod->num_functions; f++) {
      if (!is_opu_fn(mod->funcs[f])) continue;
      GPExpr **nodes;
      size_t n;
      int32_t nr;
      if (range_slots(mod->funcs[f], &nodes, &n, &nr) != 0) goto done;
      for (size_t i = 0; i < n; i++) {
        int k = nodes[i]->obj.type_index;
        if (k == GP_TI_CALL || k == GP_TI_VAR) pmap_put(&cb.idx, nodes[i], (int64_t)slot++);
      }
      H->free(nodes);
    }
    cb.nslots = slot;
  }
  {
    const GPFunctionExpr *mainf = H->module_lookup(mod, "main");
    if (!mainf) {
      H->error_set(GP_ERR_VALUE, "%s: the module has no @main to calibrate the opu functions on", PASS);
      goto done;
    }
    bool filled = false;
    if (calib_inputs(mod, mainf, spec, seed, ctx, &ins, &filled) != 0) goto done;
    nins = mainf->nparams;
    GPEvalOptions eo;
    memset(&eo, 0, sizeof eo);
    eo.struct_size = sizeof eo;
    eo.abi_version = GP_ABI_VERSION;
    eo.observe = observe;
    eo.observe_user = &cb;
    if (H->eval_function(mod, "main", nins, ins, &outs, &nouts, &eo) != 0) {
      char msg[2048];
      snprintf(msg, sizeof msg, "%s", H->error_message());
      H->error_set(H->error_kind(), "%s: calibration (evaluating @main in float): %s%s", PASS, msg,
                   filled ? " (@main's ? dims were taken as 1: give calibration inputs of the real shapes, "
                            "--calibrate NAME=FILE)"
                          : "");
      goto done;
    }
  }
  double t1 = now_ms(), c1 = cpu_ms();
  /* 2-3. attributes, compile, write */
  outm = H->module_copy(mod);
  if (!outm) goto done;
  comp = calloc((size_t)mod->num_functions, sizeof *comp);
  if (!comp) goto done;
  Buf man = {0};
  txt(&man, "{\"format\": \"opu-manifest\", \"version\": 1, \"isa\": \"%d.%d\", \"pe\": [%u, %u], \"calibration\": ",
      OPU_VERSION_MAJOR, OPU_VERSION_MINOR, R, C);
  if (spec[0]) {
    json_str(&man, spec);
  } else {
    txt(&man, "\"deterministic inputs, seed %lld\"", (long long)seed);
  }
  txt(&man, ",\n  \"functions\": [\n");
  int first = 1;
  size_t slot = 0;
  uint64_t wbytes = 0, instrs = 0;
  for (int32_t f = 0; f < mod->num_functions; f++) {
    GPFunctionExpr *fn = mod->funcs[f];
    if (!is_opu_fn(fn)) continue;
    const char *fname = mod->gvars[f]->name;
    GPExpr **nodes;
    size_t n;
    int32_t nr;
    if (range_slots(fn, &nodes, &n, &nr) != 0) goto man_fail;
    H->free(nodes);
    const double *rg = cb.mx + slot;
    slot += (size_t)nr;
    comp[f] = opu_compile(mod, fn, fname, rg, nr, R, C);
    if (!comp[f]) goto man_fail;
    wbytes += comp[f]->prog.weight_bytes;
    instrs += comp[f]->prog.num_instrs;
    /* the attributes: old ones, then opu.ranges and opu.pe */
    int32_t na = fn->attrs ? fn->attrs->n : 0, k2 = 0;
    const char **keys = malloc((size_t)(na + 2) * sizeof *keys);
    GPAttrValue *vals = malloc((size_t)(na + 2) * sizeof *vals);
    if (!keys || !vals) {
      free(keys);
      free(vals);
      H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS);
      goto man_fail;
    }
    for (int32_t a = 0; a < na; a++) {
      if (!strcmp(fn->attrs->keys[a], "opu.ranges") || !strcmp(fn->attrs->keys[a], "opu.pe")) continue;
      keys[k2] = fn->attrs->keys[a];
      vals[k2++] = fn->attrs->values[a];
    }
    int64_t pev[2] = {R, C};
    keys[k2] = "opu.ranges";
    vals[k2++] = nr ? (GPAttrValue){.kind = GP_ATTR_FLOATS, .n = nr, .floats = rg}
                    : (GPAttrValue){.kind = GP_ATTR_INTS, .n = 0, .ints = pev};
    keys[k2] = "opu.pe";
    vals[k2++] = (GPAttrValue){.kind = GP_ATTR_INTS, .n = 2, .ints = pev};
    GPAttrs *at = H->attrs_new(k2, keys, vals);
    free(keys);
    free(vals);
    if (!at) goto man_fail;
    GPFunctionExpr *nf = H->function_new(fn->nparams, fn->params, fn->body, fn->ret_type, at);
    gp_release(at);
    if (!nf) goto man_fail;
    GPExpr *nfa = H->expr_annotate(&nf->base, fn->base.checked_type, fn->base.line, fn->base.col);
    gp_release(nf);
    if (!nfa) goto man_fail;
    int arc = H->module_add(outm, fname, (GPFunctionExpr *)nfa, 1);
    gp_release(nfa);
    if (arc != 0) goto man_fail;
    if (!first) txt(&man, ",\n");
    first = 0;
    manifest_function(&man, fname, comp[f], outdir[0] ? fname : NULL);
  }
  txt(&man, "\n  ]\n}\n");
  double t2 = now_ms(), c2 = cpu_ms();
  if (outdir[0]) {
    if (mkdirs(outdir) != 0) goto man_fail;
    for (int32_t f = 0; f < mod->num_functions; f++) {
      if (!comp[f]) continue;
      const char *fname = mod->gvars[f]->name;
      char *lst = opu_program_listing(&comp[f]->prog);
      if (!lst) {
        H->error_set(GP_ERR_MEMORY, "%s: out of memory", PASS);
        goto man_fail;
      }
      int w = write_file(outdir, fname, ".opu", comp[f]->code, comp[f]->code_len) ||
              write_file(outdir, fname, ".lst", lst, strlen(lst)) ||
              write_file(outdir, fname, ".wts", comp[f]->blob.d ? (const void *)comp[f]->blob.d : (const void *)"", comp[f]->blob.n);
      free(lst);
      if (w) goto man_fail;
    }
    if (write_file(outdir, "manifest", ".json", man.d, man.n) != 0) goto man_fail;
  }
  char wrote[64] = "";
  if (outdir[0]) snprintf(wrote, sizeof wrote, " in %.1f ms", now_ms() - t2);
  H->ctx_note(ctx, "%d opu function(s): %llu instructions, %llu weight bytes (PE %ux%u); calibration %.1f ms, "
              "quantize+emit %.1f ms (CPU %.1f ms, all threads)%s%s%s",
              nopu, (unsigned long long)instrs, (unsigned long long)wbytes, R, C, t1 - t0, t2 - t1, c2 - c1,
              outdir[0] ? ", written to " : "", outdir, wrote);
  free(man.d);
  rc = 0;
  goto done;
man_fail:
  free(man.d);
done:
  if (comp)
    for (int32_t f = 0; f < mod->num_functions; f++) compiled_free(comp[f]);
  free(comp);
  for (int32_t i = 0; i < nouts; i++) gp_release(outs[i]);
  if (outs) H->free(outs);
  if (ins)
    for (int32_t i = 0; i < nins; i++) gp_release(ins[i]);
  free(ins);
  pmap_free(&cb.idx);
  free(cb.mx);
  gp_release(mod);
  if (rc != 0) {
    gp_release(outm);
    return -1;
  }
  return opu_return_module(result, outm);
}

/* ------------------------------------------------------------------------------------------ */
/* Runtime: compiled-program cache, the external runner and the artifacts function             */

static void array_delete(GPObject *o) {
  GPArray *a = (GPArray *)o;
  for (int64_t i = 0; i < a->size; i++)
    if (a->items[i].type_index >= GP_TI_OBJECT) gp_release(a->items[i].v_obj);
  free(a->items);
  free(a);
}

/* A GPArray of n values (their references taken), or NULL. */
static GPArray *array_new(int64_t n, GPAny *vals) {
  GPArray *arr = calloc(1, sizeof *arr);
  GPAny *items = calloc((size_t)(n ? n : 1), sizeof *items);
  if (!arr || !items) {
    free(arr);
    free(items);
    for (int64_t i = 0; i < n; i++)
      if (vals[i].type_index >= GP_TI_OBJECT) gp_release(vals[i].v_obj);
    H->error_set(GP_ERR_MEMORY, "opu: out of memory");
    return NULL;
  }
  arr->obj = (GPObject){1, GP_TI_ARRAY, array_delete};
  arr->size = n;
  arr->items = items;
  memcpy(items, vals, (size_t)n * sizeof *items);
  return arr;
}

typedef struct CacheEntry {
  GPFunctionExpr *fn; /* retained */
  Compiled *cp;
  OpuSim *sim;
} CacheEntry;

#define CACHE_N 64
static CacheEntry g_cache[CACHE_N];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void cache_clear(void) {
  for (int i = 0; i < CACHE_N; i++) {
    opu_sim_free(g_cache[i].sim);
    compiled_free(g_cache[i].cp);
    gp_release(g_cache[i].fn);
    memset(&g_cache[i], 0, sizeof g_cache[i]);
  }
}

/* The entry of fn (compiled on a miss), moved to the front; under g_lock. */
static CacheEntry *cache_get(GPFunctionExpr *fn, int need_sim) {
  int hit = -1;
  for (int i = 0; i < CACHE_N && hit < 0; i++)
    if (g_cache[i].fn == fn) hit = i;
  if (hit < 0) {
    const GPAttrValue *gs = fn->attrs ? H->attrs_get(fn->attrs, "global_symbol") : NULL;
    const char *name = gs && gs->kind == GP_ATTR_STR ? gs->s : "opu_function";
    Compiled *cp = compile_from_attrs(NULL, fn, name);
    if (!cp) return NULL;
    opu_sim_free(g_cache[CACHE_N - 1].sim);
    compiled_free(g_cache[CACHE_N - 1].cp);
    gp_release(g_cache[CACHE_N - 1].fn);
    memmove(&g_cache[1], &g_cache[0], (CACHE_N - 1) * sizeof g_cache[0]);
    g_cache[0] = (CacheEntry){gp_retain(fn), cp, NULL};
  } else if (hit > 0) {
    CacheEntry e = g_cache[hit];
    memmove(&g_cache[1], &g_cache[0], (size_t)hit * sizeof g_cache[0]);
    g_cache[0] = e;
  }
  CacheEntry *e = &g_cache[0];
  if (need_sim && !e->sim) {
    char err[512];
    e->sim = opu_sim_new(&e->cp->prog, e->cp->blob.d, e->cp->blob.n, err, sizeof err);
    if (!e->sim) {
      H->error_set(GP_ERR_INTERNAL, "opu simulator: %s", err);
      return NULL;
    }
  }
  return e;
}

static int64_t dl_numel(const DLTensor *t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

/* graphpass.ext.opu.run: [fn, DLTensor*...] -> tensor or array of tensors */
static int ext_run(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs < 1 || args[0].type_index != GP_TI_FUNCTION_EXPR || !args[0].v_obj) {
    H->error_set(GP_ERR_VALUE, "graphpass.ext.opu.run: expects [function, DLTensor*...]");
    return -1;
  }
  GPFunctionExpr *fn = (GPFunctionExpr *)args[0].v_obj;
  long nproc = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = nproc < 1 ? 1 : nproc > 16 ? 16 : (int)nproc;
  pthread_mutex_lock(&g_lock);
  CacheEntry *e = cache_get(fn, 1);
  if (!e) {
    pthread_mutex_unlock(&g_lock);
    return -1;
  }
  const OpuProgram *p = &e->cp->prog;
  int rc = -1;
  GPTensor **outs = NULL;
  if ((uint32_t)(nargs - 1) != p->num_inputs) {
    H->error_set(GP_ERR_VALUE, "graphpass.ext.opu.run: the program takes %u inputs, %d given", p->num_inputs,
                 (int)nargs - 1);
    goto out;
  }
  uint8_t *mem = opu_sim_memory(e->sim);
  for (uint32_t i = 0; i < p->num_inputs; i++) {
    if (args[i + 1].type_index != GP_TI_DLTENSOR_PTR || !args[i + 1].v_ptr) {
      H->error_set(GP_ERR_VALUE, "graphpass.ext.opu.run: argument %u is not a DLTensor*", i + 1);
      goto out;
    }
    const DLTensor *x = args[i + 1].v_ptr;
    const OpuTensor *t = &p->tensors[p->inputs[i]];
    if (!(x->dtype.code == kDLFloat && x->dtype.bits == 32 && x->dtype.lanes == 1) ||
        dl_numel(x) != (int64_t)t->n * t->c * t->h * t->w || !x->data) {
      H->error_set(GP_ERR_VALUE, "graphpass.ext.opu.run: input %u (%%%s) is not float32 with %llu elements", i,
                   e->cp->in_names[i], (unsigned long long)t->n * t->c * t->h * t->w);
      goto out;
    }
    /* driver-side quantization: q = round(x / scale), ties away from zero, saturated */
    int64_t idx[16] = {0};
    if (x->ndim > 16) {
      H->error_set(GP_ERR_VALUE, "graphpass.ext.opu.run: input %u has more than 16 dims", i);
      goto out;
    }
    const float *xd = (const float *)((const char *)x->data + x->byte_offset);
    int32_t lo = opu_tensor_lo(t), hi = opu_tensor_hi(t);
    double inv = 1.0 / (double)t->scale;
    int64_t k = 0;
    for (uint32_t n = 0; n < t->n; n++)
      for (uint32_t c = 0; c < t->c; c++) {
        uint8_t *dst = mem + t->addr + (uint64_t)n * t->bstride + (uint64_t)c * t->h * t->w;
        uint32_t hw = t->h * t->w;
        if (!x->strides) {
          for (uint32_t j = 0; j < hw; j++) dst[j] = (uint8_t)opu_quantize_inv(xd[k + j], inv, lo, hi);
          k += hw;
          continue;
        }
        for (uint32_t j = 0; j < hw; j++, k++) {
          int64_t off = 0;
          for (int32_t d = 0; d < x->ndim; d++) off += idx[d] * x->strides[d];
          for (int32_t d = x->ndim - 1; d >= 0; d--) {
            if (++idx[d] < x->shape[d]) break;
            idx[d] = 0;
          }
          dst[j] = (uint8_t)opu_quantize_inv(xd[off], inv, lo, hi);
        }
      }
  }
  char err[512];
  if (opu_sim_run(e->sim, threads, err, sizeof err) != 0) {
    H->error_set(GP_ERR_INTERNAL, "opu simulator: %s", err);
    goto out;
  }
  outs = calloc(p->num_outputs, sizeof *outs);
  if (!outs) goto out;
  for (uint32_t i = 0; i < p->num_outputs; i++) {
    const GPType *ty = e->cp->out_types[i];
    outs[i] = H->tensor_alloc(ty->tensor.dtype, ty->n, ty->tensor.shape, 1);
    if (!outs[i]) goto out;
    const OpuTensor *t = &p->tensors[p->outputs[i]];
    float *od = (float *)outs[i]->dl.data;
    int uns = (t->flags & OPU_T_UNSIGNED) != 0;
    uint32_t hw = t->h * t->w;
    for (uint32_t n = 0; n < t->n; n++)
      for (uint32_t c = 0; c < t->c; c++) {
        if (t->flags & OPU_T_INT32) { /* x = q * scale, in double then rounded to float */
          for (uint32_t j = 0; j < hw; j++)
            *od++ = (float)((double)opu_mem_get(mem, t, n, c, j / t->w, j % t->w) * (double)t->scale);
          continue;
        }
        const uint8_t *src = mem + t->addr + (uint64_t)n * t->bstride + (uint64_t)c * hw;
        for (uint32_t j = 0; j < hw; j++) *od++ = (float)(uns ? (int32_t)src[j] : (int32_t)(int8_t)src[j]) * t->scale;
      }
  }
  if (p->num_outputs == 1 && e->cp->prog.num_outputs == 1 && fn->body->obj.type_index != GP_TI_TUPLE) {
    result->type_index = GP_TI_TENSOR;
    result->v_obj = &outs[0]->obj;
    outs[0] = NULL;
  } else {
    GPAny vals[OPU_MAX_IO];
    for (uint32_t i = 0; i < p->num_outputs; i++) {
      vals[i] = (GPAny){.type_index = GP_TI_TENSOR, .v_obj = &outs[i]->obj};
      outs[i] = NULL;
    }
    GPArray *arr = array_new(p->num_outputs, vals);
    if (!arr) goto out;
    result->type_index = GP_TI_ARRAY;
    result->v_obj = &arr->obj;
  }
  rc = 0;
out:
  if (rc != 0 && H->error_kind() == GP_OK) H->error_set(GP_ERR_MEMORY, "graphpass.ext.opu.run: out of memory");
  if (outs)
    for (uint32_t i = 0; i < p->num_outputs; i++) gp_release(outs[i]);
  free(outs);
  pthread_mutex_unlock(&g_lock);
  return rc;
}

static GPTensor *bytes_tensor(const void *data, size_t n) {
  int64_t shape[1] = {(int64_t)n};
  GPTensor *t = H->tensor_alloc((DLDataType){kDLUInt, 8, 1}, 1, shape, 1);
  if (t && n) memcpy(t->dl.data, data, n);
  return t;
}

/* graphpass.ext.opu.artifacts: [fn] -> [program (uint8 tensor), weights (uint8 tensor),
 * manifest (string)] */
static int ext_artifacts(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs != 1 || args[0].type_index != GP_TI_FUNCTION_EXPR || !args[0].v_obj) {
    H->error_set(GP_ERR_VALUE, "graphpass.ext.opu.artifacts: expects [function]");
    return -1;
  }
  GPFunctionExpr *fn = (GPFunctionExpr *)args[0].v_obj;
  pthread_mutex_lock(&g_lock);
  CacheEntry *e = cache_get(fn, 0);
  if (!e) {
    pthread_mutex_unlock(&g_lock);
    return -1;
  }
  const GPAttrValue *gs = fn->attrs ? H->attrs_get(fn->attrs, "global_symbol") : NULL;
  Buf man = {0};
  manifest_function(&man, gs && gs->kind == GP_ATTR_STR ? gs->s : "opu_function", e->cp, NULL);
  GPTensor *prog = bytes_tensor(e->cp->code, e->cp->code_len);
  GPTensor *wts = prog ? bytes_tensor(e->cp->blob.d, e->cp->blob.n) : NULL;
  GPString *ms = wts ? H->string_new(man.d ? (const char *)man.d : "", man.n) : NULL;
  pthread_mutex_unlock(&g_lock);
  free(man.d);
  if (!ms) {
    gp_release(prog);
    gp_release(wts);
    return -1;
  }
  GPAny vals[3] = {{.type_index = GP_TI_TENSOR, .v_obj = &prog->obj},
                   {.type_index = GP_TI_TENSOR, .v_obj = &wts->obj},
                   {.type_index = GP_TI_STR, .v_obj = &ms->obj}};
  GPArray *arr = array_new(3, vals);
  if (!arr) return -1;
  result->type_index = GP_TI_ARRAY;
  result->v_obj = &arr->obj;
  return 0;
}

static void genir_deleter(void *self) {
  (void)self;
  pthread_mutex_lock(&g_lock);
  cache_clear();
  pthread_mutex_unlock(&g_lock);
}

int opu_genir_register(const GPHostAPI *host) {
  if (!GP_HAS_FIELD(host, GPHostAPI, eval_random_inputs)) {
    host->error_set(GP_ERR_VERSION, "GenIR needs a graphpass host of ABI 1.3 (tensor_read, eval_random_inputs, "
                    "external functions in the evaluator)");
    return -1;
  }
  static const char *const required[] = {"PartitionGraph"};
  GPConfigKey keys[4];
  memset(keys, 0, sizeof keys);
  keys[0] = (GPConfigKey){"out", GP_TI_RAW_STR, {.type_index = GP_TI_RAW_STR, .v_c_str = ""},
                          "directory for <function>.opu / .lst / .wts and manifest.json (empty: no files)"};
  keys[1] = (GPConfigKey){"pe", GP_TI_RAW_STR, {.type_index = GP_TI_RAW_STR, .v_c_str = "16x16"},
                          "PE array ROWSxCOLS the weight blob is blocked for (output x input channels)"};
  keys[2] = (GPConfigKey){"calibrate", GP_TI_RAW_STR, {.type_index = GP_TI_RAW_STR, .v_c_str = ""},
                          "calibration inputs of @main, NAME=FILE;NAME=FILE (.npy or .pb); empty: the "
                          "deterministic inputs of --verify-numerics"};
  keys[3] = (GPConfigKey){"seed", GP_TI_INT, {.type_index = GP_TI_INT, .v_int64 = 0},
                          "seed of the deterministic calibration inputs"};
  GPPassInfo info = opu_pass_info(PASS, genir, NULL, false);
  info.required = required;
  info.num_required = 1;
  info.config_keys = keys;
  info.num_config_keys = 4;
  info.self_deleter = genir_deleter;
  info.help = "OPU codegen: calibrate, quantize (int8 per-channel weights, per-tensor activations) and emit each "
              "Compiler=\"opu\" function's instruction stream and weight blob (docs/OPU.md).";
  if (host->pass_register(&info, 0) != 0) return -1;
  GPPackedFunc *run = host->func_new(NULL, ext_run, NULL);
  if (!run) return -1;
  int rc = host->func_register("graphpass.ext.opu.run", run, 0);
  gp_release(run);
  if (rc != 0) return -1;
  GPPackedFunc *art = host->func_new(NULL, ext_artifacts, NULL);
  if (!art) return -1;
  rc = host->func_register("graphpass.ext.opu.artifacts", art, 0);
  gp_release(art);
  return rc;
}
