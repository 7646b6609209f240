/* test_opu_isa.c -- the OPU's binary format (round trip, rejected bytes), quantization
 * arithmetic (rounding, saturation) and the simulator against a direct reference of
 * docs/OPU.md's formulas on small programs. */
#include "opu/isa.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Building small programs                                                                     */

typedef struct {
  OpuProgram p;
  OpuTensor t[16];
  OpuInstr in[16];
  uint32_t ins[4], outs[4];
  uint32_t top;
} Prog;

static uint32_t tensor(Prog *g, uint32_t n, uint32_t c, uint32_t h, uint32_t w, int uns) {
  uint32_t id = g->p.num_tensors++;
  g->t[id] = (OpuTensor){g->top, n, c, h, w, c * h * w, uns ? OPU_T_UNSIGNED : 0, 0.05f};
  g->top += n * c * h * w;
  g->top = (g->top + 63) / 64 * 64;
  g->p.act_bytes = g->top;
  return id;
}

static void prog_init(Prog *g, uint16_t R, uint16_t C) {
  memset(g, 0, sizeof *g);
  g->p.ver_major = OPU_VERSION_MAJOR;
  g->p.ver_minor = OPU_VERSION_MINOR;
  g->p.pe_rows = R;
  g->p.pe_cols = C;
  g->p.tensors = g->t;
  g->p.instrs = g->in;
  g->p.inputs = g->ins;
  g->p.outputs = g->outs;
}

static OpuInstr *instr(Prog *g, uint16_t op, uint32_t a, uint32_t o) {
  OpuInstr *s = &g->in[g->p.num_instrs++];
  memset(s, 0, sizeof *s);
  s->op = op;
  s->in0 = a;
  s->out = o;
  s->lo = (int16_t)opu_tensor_lo(&g->t[o]);
  s->hi = (int16_t)opu_tensor_hi(&g->t[o]);
  return s;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}

/* ------------------------------------------------------------------------------------------ */
/* Quantization arithmetic                                                                     */

Test(opu_quant, rounding_halves_away_from_zero) {
  cr_assert_eq(opu_rshift_round(5, 1), 3);   /* 2.5 -> 3 */
  cr_assert_eq(opu_rshift_round(-5, 1), -3); /* -2.5 -> -3 */
  cr_assert_eq(opu_rshift_round(-4, 1), -2);
  cr_assert_eq(opu_rshift_round(-3, 2), -1); /* -0.75 -> -1 */
  cr_assert_eq(opu_rshift_round(-1, 2), 0);  /* -0.25 -> 0 */
  cr_assert_eq(opu_rshift_round(7, 0), 7);
  cr_assert_eq(opu_div_round(5, 2), 3);
  cr_assert_eq(opu_div_round(-5, 2), -3);
  cr_assert_eq(opu_div_round(-4, 3), -1);
  cr_assert_eq(opu_div_round(-5, 3), -2);
  cr_assert_eq(opu_div_round(0, 9), 0);
  cr_assert_eq(opu_quantize(0.5f, 1.0f, -128, 127), 1);
  cr_assert_eq(opu_quantize(-0.5f, 1.0f, -128, 127), -1);
  cr_assert_eq(opu_quantize(-0.49f, 1.0f, -128, 127), 0);
  cr_assert_eq(opu_quantize(1e9f, 1.0f, -128, 127), 127);
  cr_assert_eq(opu_quantize(-1e9f, 1.0f, 0, 255), 0);
}

Test(opu_quant, requant_saturates_and_rounds_negative) {
  int32_t m;
  uint16_t sh;
  opu_quant_multiplier(0.5, &m, &sh);
  cr_assert_eq(m, 1 << 30);
  cr_assert_eq(sh, 31);
  cr_assert_eq(opu_requant(3, m, sh, -128, 127), 2);   /* 1.5 -> 2 */
  cr_assert_eq(opu_requant(-3, m, sh, -128, 127), -2); /* -1.5 -> -2 */
  cr_assert_eq(opu_requant(-1, m, sh, -128, 127), -1); /* -0.5 -> -1 */
  cr_assert_eq(opu_requant(1000, m, sh, -128, 127), 127);
  cr_assert_eq(opu_requant(-1000, m, sh, -128, 127), -128);
  cr_assert_eq(opu_requant(-1000, m, sh, 0, 255), 0);
  cr_assert_eq(opu_requant(INT32_MAX, INT32_MAX, 0, -128, 127), 127);
  cr_assert_eq(opu_requant(INT32_MIN, INT32_MAX, 0, -128, 127), -128);
  /* a clamp narrower than the type (relu6 folded) */
  cr_assert_eq(opu_requant(900, m, sh, 0, 100), 100);
}

Test(opu_quant, multiplier_range_and_precision) {
  double reals[] = {1.0, 0.75, 1e-3, 3.3e-7, 123.456, 0.999999999};
  for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
    int32_t m;
    uint16_t sh;
    opu_quant_multiplier(reals[i], &m, &sh);
    cr_assert(m >= (1 << 30), "m %d of %g below 2^30", m, reals[i]);
    cr_assert(sh <= 62);
    double back = (double)m / (double)((uint64_t)1 << sh);
    cr_assert(back / reals[i] < 1 + 1e-9 && back / reals[i] > 1 - 1e-9, "%g -> %d >> %u = %g", reals[i], m, sh, back);
  }
  int32_t m;
  uint16_t sh;
  opu_quant_multiplier(1e-30, &m, &sh);
  cr_assert_eq(m, 0);
  opu_quant_multiplier(0.0, &m, &sh);
  cr_assert_eq(m, 0);
  opu_quant_multiplier(3e9, &m, &sh);
  cr_assert_eq(m, INT32_MAX);
  cr_assert_eq(sh, 0);
  opu_quant_multiplier(1e-17, &m, &sh); /* below 2^-31 * 2^-31: rounded into shift 62 */
  cr_assert(sh == 62 && m > 0 && m < (1 << 30), "m %d shift %u", m, sh);
}

/* ------------------------------------------------------------------------------------------ */
/* Binary format                                                                               */

static void small_program(Prog *g, uint8_t **blob, size_t *blen) {
  prog_init(g, 4, 3);
  uint32_t x = tensor(g, 1, 5, 6, 6, 0), y = tensor(g, 1, 7, 3, 3, 1), z = tensor(g, 1, 7, 3, 3, 1),
           s = tensor(g, 1, 7, 3, 3, 0), q = tensor(g, 1, 7, 2, 2, 1);
  g->ins[g->p.num_inputs++] = x;
  g->outs[g->p.num_outputs++] = q;
  OpuInstr *c = instr(g, OPU_OP_CONV, x, y);
  c->kh = c->kw = 3;
  c->sh = c->sw = 2;
  c->pt = c->pl = 1;
  c->groups = 1;
  uint64_t wb = opu_conv_weight_bytes(7, 5, 1, 3, 3, 0, 4, 3);
  c->w_off = 0;
  c->q_off = (uint32_t)((wb + 63) / 64 * 64);
  g->p.weight_bytes = c->q_off + 7 * OPU_QREC_BYTES;
  c->lo = 0;
  c->hi = 200;
  OpuInstr *r = instr(g, OPU_OP_REQUANT, y, z);
  opu_quant_multiplier(1.0, &r->m0, &r->shift);
  OpuInstr *a = instr(g, OPU_OP_ADD, y, s);
  a->in1 = z;
  opu_quant_multiplier(0.5, &a->m0, &a->shift);
  a->m1 = a->m0 / 2;
  OpuInstr *p = instr(g, OPU_OP_MAXPOOL, z, q);
  p->kh = p->kw = 2;
  p->sh = p->sw = 1;
  *blen = g->p.weight_bytes;
  *blob = calloc(1, *blen);
  for (size_t i = 0; i < wb; i++) (*blob)[i] = (uint8_t)(rnd() % 255 - 127);
  for (uint32_t o = 0; o < 7; o++) {
    int32_t rec[3] = {(int32_t)(rnd() % 2001) - 1000, 0, 0};
    uint16_t sh;
    opu_quant_multiplier(0.01 + o * 0.003, &rec[1], &sh);
    rec[2] = sh;
    memcpy(*blob + c->q_off + o * OPU_QREC_BYTES, rec, sizeof rec); /* little-endian host */
  }
}

Test(opu_isa, encode_decode_round_trip) {
  Prog g;
  uint8_t *blob;
  size_t blen;
  small_program(&g, &blob, &blen);
  char err[256] = "";
  cr_assert_eq(opu_program_validate(&g.p, err, sizeof err), 0, "%s", err);
  size_t n = opu_program_size(&g.p);
  cr_assert_eq(n, OPU_HEADER_BYTES + 5 * OPU_TENSOR_BYTES + 8 + 4 * OPU_INSTR_BYTES);
  uint8_t *buf = malloc(n);
  opu_program_encode(&g.p, buf);
  cr_assert_eq(buf[0], 'O');
  cr_assert_eq(buf[1], 'P');
  cr_assert_eq(buf[2], 'U');
  cr_assert_eq(buf[3], '1');
  OpuProgram d;
  cr_assert_eq(opu_program_decode(buf, n, &d, err, sizeof err), 0, "%s", err);
  cr_assert_eq(d.num_tensors, g.p.num_tensors);
  cr_assert_eq(d.num_instrs, g.p.num_instrs);
  cr_assert_eq(memcmp(d.tensors, g.p.tensors, g.p.num_tensors * sizeof(OpuTensor)), 0);
  for (uint32_t k = 0; k < d.num_instrs; k++)
    cr_assert_eq(memcmp(&d.instrs[k], &g.p.instrs[k], sizeof(OpuInstr)), 0, "instruction %u differs", k);
  cr_assert_eq(d.inputs[0], g.ins[0]);
  cr_assert_eq(d.outputs[0], g.outs[0]);
  uint8_t *again = malloc(n);
  opu_program_encode(&d, again);
  cr_assert_eq(memcmp(buf, again, n), 0);
  char *lst = opu_program_listing(&d);
  cr_assert(strstr(lst, "CONV     t0 -> t1 k3x3 s2x2 pad 1,1,0,0 groups 1"), "%s", lst);
  cr_assert(strstr(lst, "clamp [0, 200]"), "%s", lst);
  cr_assert(strstr(lst, "MAXPOOL"), "%s", lst);
  free(lst);
  opu_program_free(&d);
  free(again);
  free(buf);
  free(blob);
}

static void expect_reject(const uint8_t *buf, size_t n, const char *want) {
  OpuProgram d;
  char err[256] = "";
  cr_assert_eq(opu_program_decode(buf, n, &d, err, sizeof err), -1, "accepted; wanted '%s'", want);
  cr_assert(strstr(err, want), "error '%s' does not say '%s'", err, want);
}

Test(opu_isa, bad_bytes_rejected_with_clear_errors) {
  Prog g;
  uint8_t *blob;
  size_t blen;
  small_program(&g, &blob, &blen);
  size_t n = opu_program_size(&g.p);
  uint8_t *buf = malloc(n), *b = malloc(n);
  opu_program_encode(&g.p, buf);
  expect_reject(buf, 10, "shorter than the 64-byte header");
  expect_reject(NULL, 0, "shorter than");
  memcpy(b, buf, n);
  b[0] = 'X';
  expect_reject(b, n, "bad magic");
  memcpy(b, buf, n);
  b[4] = 2;
  expect_reject(b, n, "major version 1");
  expect_reject(buf, n - 1, "truncated or trailing");
  memcpy(b, buf, n);
  b[50] = 1;
  expect_reject(b, n, "reserved header byte 50");
  size_t i0 = OPU_HEADER_BYTES + 5 * OPU_TENSOR_BYTES + 8; /* first instruction */
  memcpy(b, buf, n);
  b[i0] = 99;
  expect_reject(b, n, "instruction 0: unknown opcode 99");
  memcpy(b, buf, n);
  b[i0 + 4] = 40; /* in0 = tensor 40 */
  expect_reject(b, n, "tensor id out of range");
  memcpy(b, buf, n);
  b[i0 + 36] = 0xff; /* w_off far beyond the blob */
  b[i0 + 37] = 0xff;
  expect_reject(b, n, "outside the");
  memcpy(b, buf, n);
  b[i0 + 60] = 1;
  expect_reject(b, n, "reserved byte 60");
  memcpy(b, buf, n);
  b[i0 + 64 + 12] = 1; /* REQUANT writes t1: its own input */
  expect_reject(b, n, "overlaps an input");
  memcpy(b, buf, n);
  b[OPU_HEADER_BYTES + 12] = 0; /* tensor 0's h = 0 */
  expect_reject(b, n, "tensor 0: empty shape");
  memcpy(b, buf, n);
  b[OPU_HEADER_BYTES + 3] = 0x7f; /* tensor 0 far outside activation memory */
  expect_reject(b, n, "outside activation memory");
  memcpy(b, buf, n);
  b[i0 + 54] = 0x10; /* clamp lo 16 > hi 200? no: lo 16 is fine; make hi below lo */
  b[i0 + 56] = 0x05;
  expect_reject(b, n, "clamp");
  memcpy(b, buf, n);
  b[24] = 0xff; /* num_instrs enormous */
  b[25] = 0xff;
  b[26] = 0xff;
  expect_reject(b, n, "counts out of range");
  free(b);
  free(buf);
  free(blob);
}

Test(opu_isa, simulator_rejects_short_blob) {
  Prog g;
  uint8_t *blob;
  size_t blen;
  small_program(&g, &blob, &blen);
  char err[256] = "";
  cr_assert_null(opu_sim_new(&g.p, blob, blen - 1, err, sizeof err));
  cr_assert(strstr(err, "smaller than"), "%s", err);
  free(blob);
}

/* ------------------------------------------------------------------------------------------ */
/* Simulator against the reference formulas                                                    */

static int32_t sat(int64_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : (int32_t)v; }

/* Direct conv: acc = bias[o] + sum w[o][i][y][x] * in[n][g*icg+i][oy*s-p+y][ox*s-p+x] (zero
 * outside), out = clamp(round(acc * m[o] / 2^shift[o])). */
static void check_conv(uint32_t N, uint32_t IC, uint32_t OC, uint32_t G, uint32_t H, uint32_t W, uint32_t K,
                       uint32_t S, uint32_t P, int uns, uint16_t R, uint16_t C) {
  Prog g;
  prog_init(&g, R, C);
  uint32_t OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1, icg = IC / G;
  uint32_t x = tensor(&g, N, IC, H, W, uns), y = tensor(&g, N, OC, OH, OW, 0);
  g.ins[g.p.num_inputs++] = x;
  g.outs[g.p.num_outputs++] = y;
  OpuInstr *c = instr(&g, OPU_OP_CONV, x, y);
  int dw = G == IC && G == OC;
  c->flags = dw ? OPU_F_DEPTHWISE : 0;
  c->kh = c->kw = (uint16_t)K;
  c->sh = c->sw = (uint16_t)S;
  c->pt = c->pl = c->pb = c->pr = (uint16_t)P;
  c->groups = G;
  c->lo = -100;
  c->hi = 120;
  uint64_t wb = opu_conv_weight_bytes(OC, icg, G, K, K, dw, R, C);
  c->q_off = (uint32_t)((wb + 63) / 64 * 64);
  g.p.weight_bytes = c->q_off + OC * OPU_QREC_BYTES;
  uint8_t *blob = calloc(1, g.p.weight_bytes);
  int8_t *w = malloc((size_t)OC * icg * K * K);
  int32_t *rec = malloc(OC * 3 * sizeof(int32_t));
  for (uint32_t o = 0; o < OC; o++) {
    for (uint32_t i = 0; i < icg; i++)
      for (uint32_t yy = 0; yy < K; yy++)
        for (uint32_t xx = 0; xx < K; xx++) {
          int8_t v = (int8_t)((int)(rnd() % 255) - 127);
          w[((o * icg + i) * K + yy) * K + xx] = v;
          blob[opu_conv_weight_index(o, i, yy, xx, OC, icg, G, K, K, dw, R, C)] = (uint8_t)v;
        }
    uint16_t sh;
    rec[3 * o] = (int32_t)(rnd() % 20001) - 10000;
    opu_quant_multiplier(0.002 + 0.0007 * o, &rec[3 * o + 1], &sh);
    rec[3 * o + 2] = sh;
    memcpy(blob + c->q_off + o * OPU_QREC_BYTES, &rec[3 * o], 12);
  }
  char err[256] = "";
  cr_assert_eq(opu_program_validate(&g.p, err, sizeof err), 0, "%s", err);
  OpuSim *sim = opu_sim_new(&g.p, blob, g.p.weight_bytes, err, sizeof err);
  cr_assert_not_null(sim, "%s", err);
  uint8_t *mem = opu_sim_memory(sim);
  for (uint32_t k = 0; k < N * IC * H * W; k++) mem[g.t[x].addr + k] = (uint8_t)rnd();
  for (int threads = 1; threads <= 2; threads++) {
    cr_assert_eq(opu_sim_run(sim, threads, err, sizeof err), 0, "%s", err);
    for (uint32_t n = 0; n < N; n++)
      for (uint32_t o = 0; o < OC; o++)
        for (uint32_t oy = 0; oy < OH; oy++)
          for (uint32_t ox = 0; ox < OW; ox++) {
            int64_t acc = rec[3 * o];
            uint32_t gi = o / (OC / G);
            for (uint32_t i = 0; i < icg; i++)
              for (uint32_t yy = 0; yy < K; yy++)
                for (uint32_t xx = 0; xx < K; xx++) {
                  int64_t iy = (int64_t)oy * S - P + yy, ix = (int64_t)ox * S - P + xx;
                  if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
                  acc += (int64_t)w[((o * icg + i) * K + yy) * K + xx] *
                         opu_mem_get(mem, &g.t[x], n, gi * icg + i, (uint32_t)iy, (uint32_t)ix);
                }
            int64_t r = opu_rshift_round(acc * rec[3 * o + 1], (unsigned)rec[3 * o + 2]);
            int32_t want = sat(r, -100, 120);
            int32_t got = opu_mem_get(mem, &g.t[y], n, o, oy, ox);
            cr_assert_eq(got, want, "conv N%u IC%u OC%u G%u K%u S%u P%u: [%u,%u,%u,%u] %d != %d", N, IC, OC, G, K, S, P,
                         n, o, oy, ox, got, want);
          }
  }
  opu_sim_free(sim);
  free(blob);
  free(w);
  free(rec);
}

Test(opu_sim, conv_matches_reference) {
  for (opu_sim_kernel = 0; opu_sim_kernel < 4; opu_sim_kernel++) {
  check_conv(1, 5, 7, 1, 9, 8, 3, 1, 1, 0, 16, 16);  /* padded tiles */
  check_conv(2, 6, 4, 2, 7, 7, 3, 2, 1, 1, 4, 3);   /* groups, batch, uint8 input, odd PE */
  check_conv(1, 8, 8, 8, 6, 6, 3, 2, 1, 0, 4, 4);   /* depthwise */
  check_conv(1, 33, 17, 1, 1, 1, 1, 1, 0, 1, 16, 16); /* dense as 1x1 */
  check_conv(1, 3, 5, 1, 12, 12, 7, 2, 3, 0, 2, 2);  /* large kernel */
  check_conv(1, 20, 9, 1, 11, 13, 3, 1, 1, 1, 16, 16); /* more than one pixel block */
  }
  opu_sim_kernel = 0;
}

Test(opu_sim, add_pool_pad_requant_match_reference) {
  Prog g;
  prog_init(&g, 16, 16);
  uint32_t a = tensor(&g, 2, 3, 5, 5, 0), b = tensor(&g, 2, 3, 5, 5, 1), s = tensor(&g, 2, 3, 5, 5, 0);
  uint32_t mp = tensor(&g, 2, 3, 3, 3, 0), ap = tensor(&g, 2, 3, 3, 3, 0), ga = tensor(&g, 2, 3, 1, 1, 0);
  uint32_t pd = tensor(&g, 2, 6, 6, 8, 0), rq = tensor(&g, 2, 3, 5, 5, 1);
  g.ins[g.p.num_inputs++] = a;
  g.ins[g.p.num_inputs++] = b;
  g.outs[g.p.num_outputs++] = s;
  OpuInstr *ad = instr(&g, OPU_OP_ADD, a, s);
  ad->in1 = b;
  opu_quant_multiplier(0.7, &ad->m0, &ad->shift);
  ad->m1 = (int32_t)(0.3 * (double)((uint64_t)1 << ad->shift));
  OpuInstr *m = instr(&g, OPU_OP_MAXPOOL, a, mp);
  m->kh = m->kw = 3;
  m->sh = m->sw = 2;
  m->pt = m->pl = m->pb = m->pr = 1;
  OpuInstr *av = instr(&g, OPU_OP_AVGPOOL, a, ap);
  *av = *m;
  av->op = OPU_OP_AVGPOOL;
  av->out = ap;
  OpuInstr *gv = instr(&g, OPU_OP_GAVGPOOL, a, ga);
  (void)gv;
  OpuInstr *p = instr(&g, OPU_OP_PAD, a, pd);
  p->groups = 1;
  p->q_off = 2;
  p->pt = 1;
  p->pl = 2;
  p->pr = 1;
  p->m0 = -7;
  OpuInstr *r = instr(&g, OPU_OP_REQUANT, a, rq);
  opu_quant_multiplier(1.9, &r->m0, &r->shift);
  r->lo = 0;
  r->hi = 100;
  char err[256] = "";
  cr_assert_eq(opu_program_validate(&g.p, err, sizeof err), 0, "%s", err);
  OpuSim *sim = opu_sim_new(&g.p, NULL, 0, err, sizeof err);
  cr_assert_not_null(sim, "%s", err);
  uint8_t *mem = opu_sim_memory(sim);
  for (int pass = 0; pass < 2; pass++) { /* the count_include_pad flag on the second pass */
    for (uint32_t k = 0; k < 2 * 3 * 5 * 5; k++) {
      mem[g.t[a].addr + k] = (uint8_t)rnd();
      mem[g.t[b].addr + k] = (uint8_t)rnd();
    }
    if (pass) av->flags = OPU_F_COUNT_PAD;
    cr_assert_eq(opu_sim_run(sim, 1, err, sizeof err), 0, "%s", err);
    for (uint32_t n = 0; n < 2; n++)
      for (uint32_t c = 0; c < 3; c++) {
        int64_t sum = 0;
        for (uint32_t y = 0; y < 5; y++)
          for (uint32_t x = 0; x < 5; x++) {
            int32_t va = opu_mem_get(mem, &g.t[a], n, c, y, x), vb = opu_mem_get(mem, &g.t[b], n, c, y, x);
            sum += va;
            int64_t want = opu_rshift_round((int64_t)va * ad->m0 + (int64_t)vb * ad->m1, ad->shift);
            cr_assert_eq(opu_mem_get(mem, &g.t[s], n, c, y, x), sat(want, -128, 127));
            cr_assert_eq(opu_mem_get(mem, &g.t[rq], n, c, y, x),
                         sat(opu_rshift_round((int64_t)va * r->m0, r->shift), 0, 100));
          }
        cr_assert_eq(opu_mem_get(mem, &g.t[ga], n, c, 0, 0), opu_div_round(sum, 25));
        for (uint32_t oy = 0; oy < 3; oy++)
          for (uint32_t ox = 0; ox < 3; ox++) {
            int32_t mx = -1000;
            int64_t acc = 0, cnt = 0;
            for (int y = (int)oy * 2 - 1; y < (int)oy * 2 + 2; y++)
              for (int x = (int)ox * 2 - 1; x < (int)ox * 2 + 2; x++) {
                if (y < 0 || x < 0 || y >= 5 || x >= 5) continue;
                int32_t v = opu_mem_get(mem, &g.t[a], n, c, (uint32_t)y, (uint32_t)x);
                mx = v > mx ? v : mx;
                acc += v;
                cnt++;
              }
            cr_assert_eq(opu_mem_get(mem, &g.t[mp], n, c, oy, ox), mx);
            /* with count_pad every window of this shape counts 9 taps (pads end inside) */
            cr_assert_eq(opu_mem_get(mem, &g.t[ap], n, c, oy, ox), opu_div_round(acc, pass ? 9 : cnt));
          }
      }
    for (uint32_t n = 0; n < 2; n++)
      for (uint32_t c = 0; c < 6; c++)
        for (uint32_t y = 0; y < 6; y++)
          for (uint32_t x = 0; x < 8; x++) {
            int inside = c >= 1 && c < 4 && y >= 1 && x >= 2 && x < 7;
            int32_t want = inside ? opu_mem_get(mem, &g.t[a], n, c - 1, y - 1, x - 2) : -7;
            cr_assert_eq(opu_mem_get(mem, &g.t[pd], n, c, y, x), want, "pad [%u,%u,%u,%u]", n, c, y, x);
          }
  }
  opu_sim_free(sim);
}

/* ISA 1.1: an AVGPOOL / GAVGPOOL with m0 > 0 gives its average in the output's own steps,
 * rshift_round(div_round(sum * m0, count), shift), exact for sums whose product with m0 passes
 * 64 bits; a 1.0 program with such a multiplier is rejected, naming the version. */
Test(opu_sim, rescaled_average) {
  /* opu_average against 128-bit arithmetic, large and small, both signs: sums of `count` int8 /
   * uint8 values (|sum| <= 255 * count), up to a global pool of a 2^32 - 1 element plane */
  const int64_t sums[] = {0, 7, -7, 1000003, -999999, (int64_t)1 << 40, -((int64_t)1 << 40) - 12345};
  const int64_t counts[] = {1, 3, 9, 4096, ((int64_t)1 << 32) - 1};
  for (size_t i = 0; i < sizeof sums / sizeof *sums; i++)
    for (size_t j = 0; j < sizeof counts / sizeof *counts; j++) {
      if (sums[i] > 255 * counts[j] || sums[i] < -255 * counts[j]) continue;
      int32_t m;
      uint16_t sh;
      opu_quant_multiplier(13.7, &m, &sh);
      __int128 num = (__int128)sums[i] * m, d = counts[j];
      __int128 q = num / d, r = num % d; /* round half away from zero */
      if (2 * (r < 0 ? -r : r) >= d) q += num < 0 ? -1 : 1;
      int64_t want = opu_rshift_round((int64_t)q, sh);
      cr_assert_eq(opu_average(sums[i], counts[j], m, sh), want, "sum %lld count %lld", (long long)sums[i],
                   (long long)counts[j]);
      cr_assert_eq(opu_average(sums[i], counts[j], 0, 0), opu_div_round(sums[i], counts[j]));
    }
  Prog g;
  prog_init(&g, 16, 16);
  uint32_t a = tensor(&g, 1, 2, 4, 4, 0), ap = tensor(&g, 1, 2, 2, 2, 0), ga = tensor(&g, 1, 2, 1, 1, 0);
  g.ins[g.p.num_inputs++] = a;
  g.outs[g.p.num_outputs++] = ap;
  g.outs[g.p.num_outputs++] = ga;
  OpuInstr *av = instr(&g, OPU_OP_AVGPOOL, a, ap);
  av->kh = av->kw = 3;
  av->sh = av->sw = 2;
  av->pt = av->pl = av->pb = av->pr = 1;
  av->flags = OPU_F_COUNT_PAD;
  opu_quant_multiplier(6.0, &av->m0, &av->shift);
  OpuInstr *gv = instr(&g, OPU_OP_GAVGPOOL, a, ga);
  opu_quant_multiplier(2.5, &gv->m0, &gv->shift);
  char err[256] = "";
  cr_assert_eq(opu_program_validate(&g.p, err, sizeof err), 0, "%s", err);
  OpuSim *sim = opu_sim_new(&g.p, NULL, 0, err, sizeof err);
  cr_assert_not_null(sim, "%s", err);
  uint8_t *mem = opu_sim_memory(sim);
  for (uint32_t k = 0; k < 2 * 4 * 4; k++) mem[g.t[a].addr + k] = (uint8_t)(rnd() % 7); /* small: 0 .. 6 */
  cr_assert_eq(opu_sim_run(sim, 1, err, sizeof err), 0, "%s", err);
  for (uint32_t c = 0; c < 2; c++) {
    int64_t total = 0;
    for (uint32_t y = 0; y < 4; y++)
      for (uint32_t x = 0; x < 4; x++) total += opu_mem_get(mem, &g.t[a], 0, c, y, x);
    cr_assert_eq(opu_mem_get(mem, &g.t[ga], 0, c, 0, 0), sat(opu_average(total, 16, gv->m0, gv->shift), -128, 127));
    for (uint32_t oy = 0; oy < 2; oy++)
      for (uint32_t ox = 0; ox < 2; ox++) {
        int64_t acc = 0;
        for (int y = (int)oy * 2 - 1; y < (int)oy * 2 + 2; y++)
          for (int x = (int)ox * 2 - 1; x < (int)ox * 2 + 2; x++)
            if (y >= 0 && x >= 0 && y < 4 && x < 4) acc += opu_mem_get(mem, &g.t[a], 0, c, (uint32_t)y, (uint32_t)x);
        int32_t got = opu_mem_get(mem, &g.t[ap], 0, c, oy, ox);
        cr_assert_eq(got, sat(opu_average(acc, 9, av->m0, av->shift), -128, 127));
        /* six times the plain average, to the rounding of each */
        cr_assert(llabs((long long)got - 6 * opu_div_round(acc, 9)) <= 4, "%d vs 6 * %lld", got,
                  (long long)opu_div_round(acc, 9));
      }
  }
  opu_sim_free(sim);
  g.p.ver_minor = 0;
  cr_assert_eq(opu_program_validate(&g.p, err, sizeof err), -1);
  cr_assert(strstr(err, "instruction 0 (AVGPOOL): a rescaled average (multiplier") && strstr(err, "needs version 1.1"),
            "%s", err);
  g.p.ver_minor = OPU_VERSION_MINOR;
  av->m0 = -3;
  cr_assert_eq(opu_program_validate(&g.p, err, sizeof err), -1);
  cr_assert(strstr(err, "instruction 0 (AVGPOOL): bad multiplier -3"), "%s", err);
}
