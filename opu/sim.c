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
  int16_t *w;   /* depthwise: [oc][kh * kw] */
  int32_t *wp;  /* others: [groups][ocgp][KP] int16 pairs (w[2k] low, w[2k+1] high), zero-padded */
  int32_t *rec; /* [oc][3]: bias, m, shift */
  uint32_t K, KP, ocgp;
} ConvW;

struct OpuSim {
  const OpuProgram *p;
  uint8_t *mem;
  ConvW *conv; /* per instruction (empty for non-CONV) */
  int16_t *cols;
  size_t cols_cap;
};

static int32_t rd32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

void opu_sim_free(OpuSim *s) {
  if (!s) return;
  if (s->conv)
    for (uint32_t k = 0; k < s->p->num_instrs; k++) {
      free(s->conv[k].w);
      free(s->conv[k].wp);
      free(s->conv[k].rec);
    }
  free(s->conv);
  free(s->mem);
  free(s->cols);
  free(s);
}

OpuSim *opu_sim_new(const OpuProgram *p, const uint8_t *weights, size_t weight_len, char *err, size_t errlen) {
  if (weight_len < p->weight_bytes) {
    opu_errf(err, errlen, "weight blob of %zu bytes is smaller than the program's %u", weight_len, p->weight_bytes);
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
    uint32_t g = in->groups, icg = a->c / g, oc = o->c, ocg = oc / g;
    int dw = (in->flags & OPU_F_DEPTHWISE) != 0;
    ConvW *cw = &s->conv[k];
    cw->K = icg * in->kh * in->kw;
    cw->KP = (cw->K + 1) / 2;
    cw->ocgp = (ocg + 3) / 4 * 4;
    cw->rec = malloc((size_t)oc * 3 * sizeof(int32_t));
    if (dw)
      cw->w = malloc((size_t)oc * cw->K * sizeof(int16_t));
    else
      cw->wp = calloc((size_t)g * cw->ocgp * cw->KP, sizeof(int32_t));
    if (!cw->rec || (dw ? !cw->w : !cw->wp)) goto oom;
    const uint8_t *wb = weights + in->w_off;
    for (uint32_t oo = 0; oo < oc; oo++) {
      int16_t *row = dw ? cw->w + (size_t)oo * cw->K : NULL;
      int32_t *prow = dw ? NULL : cw->wp + ((size_t)(oo / ocg) * cw->ocgp + oo % ocg) * cw->KP;
      /* tap (i, yx) of channel oo: base + (i / C) * KK * step + yx * step + i % C */
      uint32_t kk = 0, KK = (uint32_t)in->kh * in->kw;
      size_t step = dw ? p->pe_rows : (size_t)p->pe_rows * p->pe_cols;
      const uint8_t *base =
          wb + opu_conv_weight_index(oo, 0, 0, 0, oc, icg, g, in->kh, in->kw, dw, p->pe_rows, p->pe_cols);
      for (uint32_t i = 0; i < icg; i++) {
        const uint8_t *src = base + (size_t)(i / p->pe_cols) * KK * step + i % p->pe_cols;
        for (uint32_t yx = 0; yx < KK; yx++, kk++, src += step) {
          int16_t v = (int8_t)*src;
          if (dw)
            row[kk] = v;
          else
            prow[kk / 2] |= (int32_t)((uint32_t)(uint16_t)v << (16 * (kk & 1)));
        }
      }
      const uint8_t *r = weights + in->q_off + (size_t)oo * OPU_QREC_BYTES;
      cw->rec[3 * oo] = rd32(r);
      cw->rec[3 * oo + 1] = rd32(r + 4);
      cw->rec[3 * oo + 2] = rd32(r + 8);
      if (cw->rec[3 * oo + 1] < 0 || cw->rec[3 * oo + 2] < 0 || cw->rec[3 * oo + 2] > 63) {
        opu_errf(err, errlen, "instruction %u (CONV): channel %u record has multiplier %d, shift %d (need m >= 0, 0 <= shift <= 63)",
             k, oo, cw->rec[3 * oo + 1], cw->rec[3 * oo + 2]);
        opu_sim_free(s);
        return NULL;
      }
    }
  }
  return s;
oom:
  opu_errf(err, errlen, "out of memory building the simulator");
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

/* The convolution as a GEMM on int16 pairs: cols holds the im2col of one group as
 * [KP][Pp][2] (pixel p's taps 2kp and 2kp+1 side by side, zero beyond K and P), wp the
 * weights as [ocgp][KP] pairs; acc[oc][p] = sum_kp madd(w pair, x pair), exact in int32
 * (|products| <= 127 * 255, at most 2^31 / 32385 taps). */
#define PB 32 /* pixels per block (Pp is a multiple) */

typedef void (*GemmFn)(const int32_t *w, uint32_t KP, const int16_t *cols, uint32_t Pp, uint32_t p0, int32_t acc[4][PB]);

static void gemm_c(const int32_t *w, uint32_t KP, const int16_t *cols, uint32_t Pp, uint32_t p0, int32_t acc[4][PB]) {
  memset(acc, 0, 4 * PB * sizeof(int32_t));
  for (uint32_t kp = 0; kp < KP; kp++) {
    const int16_t *x = cols + ((size_t)kp * Pp + p0) * 2;
    for (int r = 0; r < 4; r++) {
      int32_t wv = w[(size_t)r * KP + kp];
      int32_t w0 = (int16_t)(wv & 0xffff), w1 = (int16_t)((uint32_t)wv >> 16);
      for (int q = 0; q < PB; q++) acc[r][q] += w0 * x[2 * q] + w1 * x[2 * q + 1];
    }
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define OPU_X86 1
__attribute__((target("avx2"))) static void gemm_avx2(const int32_t *w, uint32_t KP, const int16_t *cols, uint32_t Pp,
                                                      uint32_t p0, int32_t acc[4][PB]) {
  __m256i a[4][4];
  for (int r = 0; r < 4; r++)
    for (int q = 0; q < 4; q++) a[r][q] = _mm256_setzero_si256();
  for (uint32_t kp = 0; kp < KP; kp++) {
    const int16_t *x = cols + ((size_t)kp * Pp + p0) * 2;
    __m256i x0 = _mm256_loadu_si256((const __m256i *)x), x1 = _mm256_loadu_si256((const __m256i *)(x + 16));
    __m256i x2 = _mm256_loadu_si256((const __m256i *)(x + 32)), x3 = _mm256_loadu_si256((const __m256i *)(x + 48));
    for (int r = 0; r < 4; r++) {
      __m256i wv = _mm256_set1_epi32(w[(size_t)r * KP + kp]);
      a[r][0] = _mm256_add_epi32(a[r][0], _mm256_madd_epi16(wv, x0));
      a[r][1] = _mm256_add_epi32(a[r][1], _mm256_madd_epi16(wv, x1));
      a[r][2] = _mm256_add_epi32(a[r][2], _mm256_madd_epi16(wv, x2));
      a[r][3] = _mm256_add_epi32(a[r][3], _mm256_madd_epi16(wv, x3));
    }
  }
  for (int r = 0; r < 4; r++)
    for (int q = 0; q < 4; q++) _mm256_storeu_si256((__m256i *)&acc[r][8 * q], a[r][q]);
}

__attribute__((target("avx512f,avx512bw"))) static void gemm_avx512(const int32_t *w, uint32_t KP, const int16_t *cols,
                                                                     uint32_t Pp, uint32_t p0, int32_t acc[4][PB]) {
  __m512i a[4][2];
  for (int r = 0; r < 4; r++) a[r][0] = a[r][1] = _mm512_setzero_si512();
  for (uint32_t kp = 0; kp < KP; kp++) {
    const int16_t *x = cols + ((size_t)kp * Pp + p0) * 2;
    __m512i x0 = _mm512_loadu_si512((const void *)x), x1 = _mm512_loadu_si512((const void *)(x + 32));
    for (int r = 0; r < 4; r++) {
      __m512i wv = _mm512_set1_epi32(w[(size_t)r * KP + kp]);
      a[r][0] = _mm512_add_epi32(a[r][0], _mm512_madd_epi16(wv, x0));
      a[r][1] = _mm512_add_epi32(a[r][1], _mm512_madd_epi16(wv, x1));
    }
  }
  for (int r = 0; r < 4; r++) {
    _mm512_storeu_si512((void *)&acc[r][0], a[r][0]);
    _mm512_storeu_si512((void *)&acc[r][16], a[r][1]);
  }
}

/* the same with AVX512-VNNI: vpdpwssd is madd and add in one instruction (exact: no saturation) */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void gemm_vnni(const int32_t *w, uint32_t KP,
                                                                              const int16_t *cols, uint32_t Pp,
                                                                              uint32_t p0, int32_t acc[4][PB]) {
  __m512i a[4][2];
  for (int r = 0; r < 4; r++) a[r][0] = a[r][1] = _mm512_setzero_si512();
  for (uint32_t kp = 0; kp < KP; kp++) {
    const int16_t *x = cols + ((size_t)kp * Pp + p0) * 2;
    __m512i x0 = _mm512_loadu_si512((const void *)x), x1 = _mm512_loadu_si512((const void *)(x + 32));
    for (int r = 0; r < 4; r++) {
      __m512i wv = _mm512_set1_epi32(w[(size_t)r * KP + kp]);
      a[r][0] = _mm512_dpwssd_epi32(a[r][0], wv, x0);
      a[r][1] = _mm512_dpwssd_epi32(a[r][1], wv, x1);
    }
  }
  for (int r = 0; r < 4; r++) {
    _mm512_storeu_si512((void *)&acc[r][0], a[r][0]);
    _mm512_storeu_si512((void *)&acc[r][16], a[r][1]);
  }
}
#endif

int opu_sim_kernel = 0;

static GemmFn gemm_pick(void) {
  if (opu_sim_kernel == 1) return gemm_c;
#ifdef OPU_X86
  if (opu_sim_kernel == 2 && __builtin_cpu_supports("avx2")) return gemm_avx2;
  if (opu_sim_kernel == 3 && __builtin_cpu_supports("avx512bw")) return gemm_avx512;
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw")) return gemm_vnni;
  if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512f")) return gemm_avx512;
  if (__builtin_cpu_supports("avx2")) return gemm_avx2;
#endif
  return gemm_c;
}

typedef struct {
  const OpuInstr *in;
  const OpuTensor *o;
  const ConvW *cw;
  const int16_t *cols;
  uint8_t *mem;
  GemmFn gemm;
  uint32_t n, g, ocg, P, Pp;
  int32_t lo, hi; /* the clamp (opu_clamp_lo / hi) */
} ConvCtx;

/* pixel blocks [r0, r1) of PB, each against every block of 4 output channels (the block's
 * columns stay in cache while the weights stream) */
static void conv_blocks(void *vc, uint32_t r0, uint32_t r1) {
  const ConvCtx *c = vc;
  const ConvW *cw = c->cw;
  int32_t acc[4][PB];
  for (uint32_t pb = r0; pb < r1; pb++) {
    uint32_t p0 = pb * PB;
    for (uint32_t b = 0; b < cw->ocgp / 4; b++) {
      const int32_t *w = cw->wp + ((size_t)c->g * cw->ocgp + 4 * b) * cw->KP;
      c->gemm(w, cw->KP, c->cols, c->Pp, p0, acc);
      for (uint32_t r = 0; r < 4 && 4 * b + r < c->ocg; r++) {
        uint32_t oc = c->g * c->ocg + 4 * b + r;
        const int32_t *rec = cw->rec + 3 * oc;
        uint32_t nq = c->P - p0 < PB ? c->P - p0 : PB;
        if (c->o->flags & OPU_T_INT32) {
          for (uint32_t q = 0; q < nq; q++)
            opu_mem_set(c->mem, c->o, c->n, oc, (p0 + q) / c->o->w, (p0 + q) % c->o->w,
                        opu_requant((int64_t)rec[0] + acc[r][q], rec[1], (unsigned)rec[2], c->lo, c->hi));
          continue;
        }
        uint8_t *po = c->mem + c->o->addr + (uint64_t)c->n * c->o->bstride + (uint64_t)oc * c->P + p0;
        for (uint32_t q = 0; q < nq; q++)
          po[q] = (uint8_t)opu_requant((int64_t)rec[0] + acc[r][q], rec[1], (unsigned)rec[2], c->lo, c->hi);
      }
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
          opu_mem_set(s->mem, o, n, ch, oy, ox,
                      opu_requant(acc, r[1], (unsigned)r[2], opu_clamp_lo(o, in->lo), opu_clamp_hi(o, in->hi)));
        }
    }
}

static int conv(OpuSim *s, const OpuInstr *in, int threads, char *err, size_t errlen) {
  if (in->flags & OPU_F_DEPTHWISE) {
    depthwise(s, in);
    return 0;
  }
  GemmFn gemm = gemm_pick();
  const OpuTensor *a = &s->p->tensors[in->in0], *o = &s->p->tensors[in->out];
  const ConvW *cw = &s->conv[in - s->p->instrs];
  uint32_t g = in->groups, icg = a->c / g, K = cw->K, KP = cw->KP;
  uint32_t P = o->h * o->w, Pp = (P + PB - 1) / PB * PB;
  size_t need = (size_t)KP * Pp * 2;
  if (need > s->cols_cap) {
    int16_t *nc = realloc(s->cols, need * sizeof(int16_t));
    if (!nc) return opu_errf(err, errlen, "out of memory (%zu bytes of im2col)", need * sizeof(int16_t));
    s->cols = nc;
    s->cols_cap = need;
  }
  int uns = (a->flags & OPU_T_UNSIGNED) != 0;
  for (uint32_t n = 0; n < a->n; n++)
    for (uint32_t gi = 0; gi < g; gi++) {
      if ((K & 1) || P != Pp) memset(s->cols, 0, need * sizeof(int16_t));
      uint32_t k = 0;
      for (uint32_t i = 0; i < icg; i++) {
        const uint8_t *plane = s->mem + a->addr + (uint64_t)n * a->bstride + (uint64_t)(gi * icg + i) * a->h * a->w;
        for (uint32_t y = 0; y < in->kh; y++)
          for (uint32_t x = 0; x < in->kw; x++, k++) {
            int16_t *dst = s->cols + (size_t)(k / 2) * Pp * 2 + (k & 1);
            for (uint32_t oy = 0; oy < o->h; oy++) {
              int64_t iy = (int64_t)oy * in->sh - in->pt + y;
              int16_t *d = dst + (size_t)oy * o->w * 2;
              if (iy < 0 || iy >= a->h) {
                for (uint32_t ox = 0; ox < o->w; ox++) d[2 * ox] = 0;
                continue;
              }
              const uint8_t *row = plane + (uint64_t)iy * a->w;
              int64_t ix = (int64_t)x - in->pl;
              for (uint32_t ox = 0; ox < o->w; ox++, ix += in->sw)
                d[2 * ox] = ix < 0 || ix >= a->w ? 0 : uns ? (int16_t)row[ix] : (int16_t)(int8_t)row[ix];
            }
          }
      }
      ConvCtx c = {in, o, cw, s->cols, s->mem, gemm, n, gi, o->c / g, P, Pp, opu_clamp_lo(o, in->lo),
                   opu_clamp_hi(o, in->hi)};
      par_rows(conv_blocks, &c, Pp / PB, threads, (uint64_t)P * K * (o->c / g));
    }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The other instructions                                                                      */

/* The bytes of plane (n, c) of t, and a reader of their values. */
static inline const uint8_t *plane(const uint8_t *mem, const OpuTensor *t, uint32_t n, uint32_t c) {
  return mem + t->addr + (uint64_t)n * t->bstride + (uint64_t)c * t->h * t->w;
}
#define VAL(uns, p, i) ((uns) ? (int32_t)(p)[i] : (int32_t)(int8_t)(p)[i])
#define CLAMP(v, lo, hi) ((v) < (lo) ? (lo) : (v) > (hi) ? (hi) : (v))

static void add(OpuSim *s, const OpuInstr *in) {
  const OpuTensor *a = &s->p->tensors[in->in0], *b = &s->p->tensors[in->in1], *o = &s->p->tensors[in->out];
  int ua = (a->flags & OPU_T_UNSIGNED) != 0, ub = (b->flags & OPU_T_UNSIGNED) != 0;
  uint32_t hw = o->h * o->w;
  for (uint32_t n = 0; n < o->n; n++)
    for (uint32_t c = 0; c < o->c; c++) {
      const uint8_t *pa = plane(s->mem, a, n, c), *pb = plane(s->mem, b, n, c);
      uint8_t *po = (uint8_t *)plane(s->mem, o, n, c);
      int32_t lo = opu_clamp_lo(o, in->lo), hi = opu_clamp_hi(o, in->hi);
      for (uint32_t i = 0; i < hw; i++) {
        int64_t v = (int64_t)VAL(ua, pa, i) * in->m0 + (int64_t)VAL(ub, pb, i) * in->m1;
        int64_t r = opu_rshift_round(v, in->shift);
        int32_t q = (int32_t)CLAMP(r, lo, hi);
        if (o->flags & OPU_T_INT32)
          opu_mem_set(s->mem, o, n, c, i / o->w, i % o->w, q);
        else
          po[i] = (uint8_t)q;
      }
    }
}

static void requant(OpuSim *s, const OpuInstr *in) {
  const OpuTensor *a = &s->p->tensors[in->in0], *o = &s->p->tensors[in->out];
  int ua = (a->flags & OPU_T_UNSIGNED) != 0;
  uint32_t hw = o->h * o->w;
  for (uint32_t n = 0; n < o->n; n++)
    for (uint32_t c = 0; c < o->c; c++) {
      const uint8_t *pa = plane(s->mem, a, n, c);
      uint8_t *po = (uint8_t *)plane(s->mem, o, n, c);
      int32_t lo = opu_clamp_lo(o, in->lo), hi = opu_clamp_hi(o, in->hi);
      for (uint32_t i = 0; i < hw; i++) {
        int32_t q = opu_requant(VAL(ua, pa, i), in->m0, in->shift, lo, hi);
        if (o->flags & OPU_T_INT32)
          opu_mem_set(s->mem, o, n, c, i / o->w, i % o->w, q);
        else
          po[i] = (uint8_t)q;
      }
    }
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
  int is_max = in->op == OPU_OP_MAXPOOL, ua = (a->flags & OPU_T_UNSIGNED) != 0;
  for (uint32_t n = 0; n < o->n; n++)
    for (uint32_t c = 0; c < o->c; c++) {
      const uint8_t *pa = plane(s->mem, a, n, c);
      uint8_t *po = (uint8_t *)plane(s->mem, o, n, c);
      for (uint32_t oy = 0; oy < o->h; oy++) {
        int64_t ys = (int64_t)oy * in->sh - in->pt;
        uint32_t y0, y1;
        taps(in->kh, a->h, ys, &y0, &y1);
        for (uint32_t ox = 0; ox < o->w; ox++) {
          int64_t xs = (int64_t)ox * in->sw - in->pl;
          uint32_t x0, x1;
          taps(in->kw, a->w, xs, &x0, &x1);
          int64_t acc = is_max ? INT64_MIN : 0;
          for (uint32_t y = y0; y < y1; y++) {
            const uint8_t *row = pa + (uint64_t)(ys + y) * a->w + xs;
            for (uint32_t x = x0; x < x1; x++) {
              int32_t v = VAL(ua, row, x);
              if (is_max)
                acc = v > acc ? v : acc;
              else
                acc += v;
            }
          }
          int64_t r;
          if (is_max) {
            r = acc == INT64_MIN ? 0 : acc;
          } else {
            int64_t cnt = (in->flags & OPU_F_COUNT_PAD)
                              ? (int64_t)pad_taps(in->kh, a->h, ys, in->pb) * pad_taps(in->kw, a->w, xs, in->pr)
                              : (int64_t)(y1 - y0) * (x1 - x0);
            r = opu_average(acc, cnt, in->m0, in->shift);
          }
          po[(size_t)oy * o->w + ox] = (uint8_t)(int32_t)CLAMP(r, in->lo, in->hi);
        }
      }
    }
}

static void gavgpool(OpuSim *s, const OpuInstr *in) {
  const OpuTensor *a = &s->p->tensors[in->in0], *o = &s->p->tensors[in->out];
  int ua = (a->flags & OPU_T_UNSIGNED) != 0;
  uint32_t hw = a->h * a->w;
  for (uint32_t n = 0; n < o->n; n++)
    for (uint32_t c = 0; c < o->c; c++) {
      const uint8_t *pa = plane(s->mem, a, n, c);
      int64_t acc = 0;
      for (uint32_t i = 0; i < hw; i++) acc += VAL(ua, pa, i);
      int64_t r = opu_average(acc, (int64_t)hw, in->m0, in->shift);
      opu_mem_set(s->mem, o, n, c, 0, 0, (int32_t)CLAMP(r, in->lo, in->hi));
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
    default: return opu_errf(err, errlen, "instruction %u: unknown opcode %u", k, (unsigned)in->op);
    }
  }
  return 0;
}
