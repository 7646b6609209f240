/* sim.c -- the OPU simulator: executes a decoded program bit-exactly as docs/OPU.md defines
 * each instruction.  Convolutions unpack their weights from the blob's PE-blocked layout once
 * (opu_sim_new), then run as int16 dot products over an im2col copy of each batch item's input
 * (exact: every product and sum fits int32), split over output rows between threads. */
#include "isa.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ConvW {
  int16_t *w;   /* [oc][K], K = icg * kh * kw in (i, y, x) order */
  int32_t *rec; /* [oc][3]: bias, m, shift */
  uint32_t K;
} ConvW;

struct OpuSim {
  const OpuProgram *p;
  uint8_t *mem;
  ConvW *conv; /* per instruction (empty for non-CONV) */
  int16_t *cols;
  size_t cols_cap;
};

static int fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static int32_t rd32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

void opu_sim_free(OpuSim *s) {
  if (!s) return;
  if (s->conv)
    for (uint32_t k = 0; k < s->p->num_instrs; k++) {
      free(s->conv[k].w);
      free(s->conv[k].rec);
    }
  free(s->conv);
  free(s->mem);
  free(s->cols);
  free(s);
}

OpuSim *opu_sim_new(const OpuProgram *p, const uint8_t *weights, size_t weight_len, char *err, size_t errlen) {
  if (weight_len < p->weight_bytes) {
    fail(err, errlen, "weight blob of %zu bytes is smaller than the program's %u", weight_len, p->weight_bytes);
    return NULL;
  }
  OpuSim *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->p = p;
  s->mem = calloc(p->act_bytes ? p->act_bytes : 1, 1);
  s->conv = calloc(p->num_instrs ? p->num_instrs : 1, sizeof *s->conv);
  if (!s->mem || !s->conv) goto oom;
  for (uint32_t k = 0; k < p->num_instrs; k++) {
    const OpuInstr *in = &p->instrs[k];
    if (in->op != OPU_OP_CONV) continue;
    const OpuTensor *a = &p->tensors[in->in0], *o = &p->tensors[in->out];
    uint32_t g = in->groups, icg = a->c / g, oc = o->c;
    int dw = (in->flags & OPU_F_DEPTHWISE) != 0;
    ConvW *cw = &s->conv[k];
    cw->K = icg * in->kh * in->kw;
    cw->w = malloc((size_t)oc * cw->K * sizeof(int16_t));
    cw->rec = malloc((size_t)oc * 3 * sizeof(int32_t));
    if (!cw->w || !cw->rec) goto oom;
    const uint8_t *wb = weights + in->w_off;
    for (uint32_t oo = 0; oo < oc; oo++) {
      int16_t *row = cw->w + (size_t)oo * cw->K;
      for (uint32_t i = 0; i < icg; i++)
        for (uint32_t y = 0; y < in->kh; y++)
          for (uint32_t x = 0; x < in->kw; x++)
            *row++ = (int8_t)wb[opu_conv_weight_index(oo, i, y, x, oc, icg, g, in->kh, in->kw, dw, p->pe_rows,
                                                      p->pe_cols)];
      const uint8_t *r = weights + in->q_off + (size_t)oo * OPU_QREC_BYTES;
      cw->rec[3 * oo] = rd32(r);
      cw->rec[3 * oo + 1] = rd32(r + 4);
      cw->rec[3 * oo + 2] = rd32(r + 8);
      if (cw->rec[3 * oo + 1] < 0 || cw->rec[3 * oo + 2] < 0 || cw->rec[3 * oo + 2] > 63) {
        fail(err, errlen, "instruction %u (CONV): channel %u record has multiplier %d, shift %d (need m >= 0, 0 <= shift <= 63)",
             k, oo, cw->rec[3 * oo + 1], cw->rec[3 * oo + 2]);
        opu_sim_free(s);
        return NULL;
      }
    }
  }
  return s;
oom:
  fail(err, errlen, "out of memory building the simulator");
  opu_sim_free(s);
  return NULL;
}

uint8_t *opu_sim_memory(OpuSim *s) { return s->mem; }

/* ------------------------------------------------------------------------------------------ */
/* Parallel rows                                                                               */

typedef void (*RowFn)(void *ctx, uint32_t r0, uint32_t r1);
typedef struct {
  RowFn fn;
  void *ctx;
  uint32_t r0, r1;
} Job;

static void *job_run(void *v) {
  Job *j = v;
  j->fn(j->ctx, j->r0, j->r1);
  return NULL;
}

static void par_rows(RowFn fn, void *ctx, uint32_t rows, int threads, uint64_t work) {
  if (threads > 16) threads = 16;
  if (threads <= 1 || rows < 2 || work < 200000) {
    fn(ctx, 0, rows);
    return;
  }
  if ((uint32_t)threads > rows) threads = (int)rows;
  pthread_t th[16];
  Job jobs[16];
  int started[16] = {0};
  for (int t = 0; t < threads; t++) {
    jobs[t] = (Job){fn, ctx, (uint32_t)((uint64_t)rows * t / threads), (uint32_t)((uint64_t)rows * (t + 1) / threads)};
    if (t > 0) started[t] = pthread_create(&th[t], NULL, job_run, &jobs[t]) == 0;
  }
  fn(ctx, jobs[0].r0, jobs[0].r1);
  for (int t = 1; t < threads; t++) {
    if (started[t])
      pthread_join(th[t], NULL);
    else
      fn(ctx, jobs[t].r0, jobs[t].r1); /* no thread: run it here */
  }
}

/* ------------------------------------------------------------------------------------------ */
/* CONV                                                                                        */

typedef struct {
  const OpuInstr *in;
  const OpuTensor *a, *o;
  const ConvW *cw;
  const int16_t *cols; /* [P][K] of the current group */
  uint8_t *mem;
  uint32_t n, g, ocg, OW;
} ConvCtx;

static int32_t dot16(const int16_t *restrict a, const int16_t *restrict b, uint32_t K) {
  int32_t s = 0;
  for (uint32_t k = 0; k < K; k++) s += (int32_t)a[k] * (int32_t)b[k];
  return s;
}

static void conv_rows(void *vc, uint32_t r0, uint32_t r1) {
  const ConvCtx *c = vc;
  uint32_t K = c->cw->K;
  for (uint32_t oy = r0; oy < r1; oy++)
    for (uint32_t ox = 0; ox < c->OW; ox++) {
      const int16_t *col = c->cols + ((size_t)oy * c->OW + ox) * K;
      for (uint32_t j = 0; j < c->ocg; j++) {
        uint32_t oc = c->g * c->ocg + j;
        const int32_t *r = c->cw->rec + 3 * oc;
        int64_t acc = (int64_t)r[0] + dot16(c->cw->w + (size_t)oc * K, col, K);
        opu_mem_set(c->mem, c->o, c->n, oc, oy, ox, opu_requant(acc, r[1], (unsigned)r[2], c->in->lo, c->in->hi));
      }
    }
}

static void depthwise(OpuSim *s, const OpuInstr *in) {
  const OpuTensor *a = &s->p->tensors[in->in0], *o = &s->p->tensors[in->out];
  const ConvW *cw = &s->conv[in - s->p->instrs];
  for (uint32_t n = 0; n < a->n; n++)
    for (uint32_t ch = 0; ch < o->c; ch++) {
      const int16_t *w = cw->w + (size_t)ch * cw->K;
      const int32_t *r = cw->rec + 3 * ch;
      for (uint32_t oy = 0; oy < o->h; oy++)
        for (uint32_t ox = 0; ox < o->w; ox++) {
          int64_t acc = r[0];
          for (uint32_t y = 0; y < in->kh; y++) {
            int64_t iy = (int64_t)oy * in->sh - in->pt + y;
            if (iy < 0 || iy >= a->h) continue;
            for (uint32_t x = 0; x < in->kw; x++) {
              int64_t ix = (int64_t)ox * in->sw - in->pl + x;
              if (ix < 0 || ix >= a->w) continue;
              acc += (int32_t)w[y * in->kw + x] * opu_mem_get(s->mem, a, n, ch, (uint32_t)iy, (uint32_t)ix);
            }
          }
          opu_mem_set(s->mem, o, n, ch, oy, ox, opu_requant(acc, r[1], (unsigned)r[2], in->lo, in->hi));
        }
    }
}

static int conv(OpuSim *s, const OpuInstr *in, int threads, char *err, size_t errlen) {
  if (in->flags & OPU_F_DEPTHWISE) {
    depthwise(s, in);
    return 0;
  }
  const OpuTensor *a = &s->p->tensors[in->in0], *o = &s->p->tensors[in->out];
  const ConvW *cw = &s->conv[in - s->p->instrs];
  uint32_t g = in->groups, icg = a->c / g, K = cw->K;
  size_t P = (size_t)o->h * o->w, need = P * K;
  if (need > s->cols_cap) {
    int16_t *nc = realloc(s->cols, need * sizeof(int16_t));
    if (!nc) return fail(err, errlen, "out of memory (%zu bytes of im2col)", need * sizeof(int16_t));
    s->cols = nc;
    s->cols_cap = need;
  }
  int uns = (a->flags & OPU_T_UNSIGNED) != 0;
  for (uint32_t n = 0; n < a->n; n++)
    for (uint32_t gi = 0; gi < g; gi++) {
      /* im2col of group gi: cols[(oy * OW + ox) * K + (i * kh + y) * kw + x] */
      for (uint32_t oy = 0; oy < o->h; oy++)
        for (uint32_t ox = 0; ox < o->w; ox++) {
          int16_t *col = s->cols + ((size_t)oy * o->w + ox) * K;
          for (uint32_t i = 0; i < icg; i++) {
            const uint8_t *plane = s->mem + a->addr + (uint64_t)n * a->bstride + (uint64_t)(gi * icg + i) * a->h * a->w;
            for (uint32_t y = 0; y < in->kh; y++) {
              int64_t iy = (int64_t)oy * in->sh - in->pt + y;
              int16_t *dst = col + (i * in->kh + y) * in->kw;
              if (iy < 0 || iy >= a->h) {
                memset(dst, 0, in->kw * sizeof(int16_t));
                continue;
              }
              const uint8_t *row = plane + (uint64_t)iy * a->w;
              for (uint32_t x = 0; x < in->kw; x++) {
                int64_t ix = (int64_t)ox * in->sw - in->pl + x;
                dst[x] = ix < 0 || ix >= a->w ? 0 : uns ? (int16_t)row[ix] : (int16_t)(int8_t)row[ix];
              }
            }
          }
        }
      ConvCtx c = {in, a, o, cw, s->cols, s->mem, n, gi, o->c / g, o->w};
      par_rows(conv_rows, &c, o->h, threads, (uint64_t)P * K * (o->c / g));
    }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The other instructions                                                                      */

static void add(OpuSim *s, const OpuInstr *in) {
  const OpuTensor *a = &s->p->tensors[in->in0], *b = &s->p->tensors[in->in1], *o = &s->p->tensors[in->out];
  for (uint32_t n = 0; n < o->n; n++)
    for (uint32_t c = 0; c < o->c; c++)
      for (uint32_t y = 0; y < o->h; y++)
        for (uint32_t x = 0; x < o->w; x++) {
          int64_t v = (int64_t)opu_mem_get(s->mem, a, n, c, y, x) * in->m0 +
                      (int64_t)opu_mem_get(s->mem, b, n, c, y, x) * in->m1;
          int64_t r = opu_rshift_round(v, in->shift);
          opu_mem_set(s->mem, o, n, c, y, x, (int32_t)(r < in->lo ? in->lo : r > in->hi ? in->hi : r));
        }
}

static void requant(OpuSim *s, const OpuInstr *in) {
  const OpuTensor *a = &s->p->tensors[in->in0], *o = &s->p->tensors[in->out];
  for (uint32_t n = 0; n < o->n; n++)
    for (uint32_t c = 0; c < o->c; c++)
      for (uint32_t y = 0; y < o->h; y++)
        for (uint32_t x = 0; x < o->w; x++)
          opu_mem_set(s->mem, o, n, c, y, x, opu_requant(opu_mem_get(s->mem, a, n, c, y, x), in->m0, in->shift, in->lo, in->hi));
}

/* Taps [k0, k1) of a window starting at `start` that fall inside [0, IN). */
static void taps(uint32_t K, uint32_t IN, int64_t start, uint32_t *k0, uint32_t *k1) {
  int64_t a = start < 0 ? -start : 0, b = (int64_t)IN - start;
  if (b > K) b = K;
  if (b < a) b = a;
  *k0 = (uint32_t)a;
  *k1 = (uint32_t)b;
}

/* Taps counted with count_pad: up to the end of the bottom/right padding. */
static uint32_t pad_taps(uint32_t K, uint32_t IN, int64_t start, uint32_t pad_end) {
  int64_t end = start + K - 1, lim = (int64_t)IN + pad_end - 1;
  if (end > lim) end = lim;
  return end < start ? 0 : (uint32_t)(end - start + 1);
}

static void pool(OpuSim *s, const OpuInstr *in) {
  const OpuTensor *a = &s->p->tensors[in->in0], *o = &s->p->tensors[in->out];
  int is_max = in->op == OPU_OP_MAXPOOL;
  for (uint32_t n = 0; n < o->n; n++)
    for (uint32_t c = 0; c < o->c; c++)
      for (uint32_t oy = 0; oy < o->h; oy++) {
        int64_t ys = (int64_t)oy * in->sh - in->pt;
        uint32_t y0, y1;
        taps(in->kh, a->h, ys, &y0, &y1);
        for (uint32_t ox = 0; ox < o->w; ox++) {
          int64_t xs = (int64_t)ox * in->sw - in->pl;
          uint32_t x0, x1;
          taps(in->kw, a->w, xs, &x0, &x1);
          int64_t acc = is_max ? INT64_MIN : 0;
          for (uint32_t y = y0; y < y1; y++)
            for (uint32_t x = x0; x < x1; x++) {
              int32_t v = opu_mem_get(s->mem, a, n, c, (uint32_t)(ys + y), (uint32_t)(xs + x));
              if (is_max)
                acc = v > acc ? v : acc;
              else
                acc += v;
            }
          int64_t r;
          if (is_max) {
            r = acc == INT64_MIN ? 0 : acc;
          } else {
            int64_t cnt = (in->flags & OPU_F_COUNT_PAD)
                              ? (int64_t)pad_taps(in->kh, a->h, ys, in->pb) * pad_taps(in->kw, a->w, xs, in->pr)
                              : (int64_t)(y1 - y0) * (x1 - x0);
            r = opu_div_round(acc, cnt < 1 ? 1 : cnt);
          }
          opu_mem_set(s->mem, o, n, c, oy, ox, (int32_t)(r < in->lo ? in->lo : r > in->hi ? in->hi : r));
        }
      }
}

static void gavgpool(OpuSim *s, const OpuInstr *in) {
  const OpuTensor *a = &s->p->tensors[in->in0], *o = &s->p->tensors[in->out];
  for (uint32_t n = 0; n < o->n; n++)
    for (uint32_t c = 0; c < o->c; c++) {
      int64_t acc = 0;
      for (uint32_t y = 0; y < a->h; y++)
        for (uint32_t x = 0; x < a->w; x++) acc += opu_mem_get(s->mem, a, n, c, y, x);
      int64_t r = opu_div_round(acc, (int64_t)a->h * a->w);
      opu_mem_set(s->mem, o, n, c, 0, 0, (int32_t)(r < in->lo ? in->lo : r > in->hi ? in->hi : r));
    }
}

static void pad(OpuSim *s, const OpuInstr *in) {
  const OpuTensor *a = &s->p->tensors[in->in0], *o = &s->p->tensors[in->out];
  for (uint32_t n = 0; n < o->n; n++)
    for (uint32_t c = 0; c < o->c; c++)
      for (uint32_t y = 0; y < o->h; y++)
        for (uint32_t x = 0; x < o->w; x++) {
          int64_t ic = (int64_t)c - in->groups, iy = (int64_t)y - in->pt, ix = (int64_t)x - in->pl;
          int32_t v = ic < 0 || ic >= a->c || iy < 0 || iy >= a->h || ix < 0 || ix >= a->w
                          ? in->m0
                          : opu_mem_get(s->mem, a, n, (uint32_t)ic, (uint32_t)iy, (uint32_t)ix);
          opu_mem_set(s->mem, o, n, c, y, x, v < in->lo ? in->lo : v > in->hi ? in->hi : v);
        }
}

int opu_sim_run(OpuSim *s, int threads, char *err, size_t errlen) {
  const OpuProgram *p = s->p;
  for (uint32_t k = 0; k < p->num_instrs; k++) {
    const OpuInstr *in = &p->instrs[k];
    switch (in->op) {
    case OPU_OP_CONV:
      if (conv(s, in, threads, err, errlen) != 0) return -1;
      break;
    case OPU_OP_ADD: add(s, in); break;
    case OPU_OP_MAXPOOL:
    case OPU_OP_AVGPOOL: pool(s, in); break;
    case OPU_OP_GAVGPOOL: gavgpool(s, in); break;
    case OPU_OP_REQUANT: requant(s, in); break;
    case OPU_OP_PAD: pad(s, in); break;
    default: return fail(err, errlen, "instruction %u: unknown opcode %u", k, (unsigned)in->op);
    }
  }
  return 0;
}
