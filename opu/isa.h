/*
 * isa.h -- the OPU's instruction set, its binary program format, the quantization arithmetic
 * and the simulator (docs/OPU.md is the contract; this header is its C form).
 *
 *  - isa.c: encoder, decoder (validates every byte it reads) and text listing of programs.
 *  - quant.c: integer multiplier + shift from a real scale, requantization with round-half-
 *    away-from-zero and saturation, rounded division (average pooling); per-channel weight
 *    quantization and the PE-blocked weight layout.
 *  - sim.c: executes a decoded program on int8 activation memory, bit-exactly.
 *
 * Only abi/graphpass.h and the C library are included, as an outside vendor would build it.
 */
#ifndef OPU_ISA_H
#define OPU_ISA_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------------------ */
/* Binary format (little-endian, fixed layouts; docs/OPU.md "Binary format")                  */

#define OPU_MAGIC 0x3155504fu /* "OPU1" read as a little-endian u32 */
#define OPU_VERSION_MAJOR 1
#define OPU_VERSION_MINOR 1 /* 1.1: AVGPOOL / GAVGPOOL may rescale (m0 > 0) */
#define OPU_HEADER_BYTES 64
#define OPU_TENSOR_BYTES 32
#define OPU_INSTR_BYTES 64
/* Limits a decoder enforces (a program beyond them is rejected, not truncated). */
#define OPU_MAX_TENSORS (1u << 20)
#define OPU_MAX_INSTRS (1u << 20)
#define OPU_MAX_IO 256u
#define OPU_MAX_KERNEL 64u
#define OPU_MAX_STRIDE 64u
#define OPU_MAX_TAPS 32768u /* taps per CONV output: keeps the int32 accumulator exact */

enum {
  OPU_OP_CONV = 1,     /* conv2d (incl. groups / depthwise; dense as 1x1), bias, requant, clamp */
  OPU_OP_ADD = 2,      /* elementwise add, both inputs requantized, clamp */
  OPU_OP_MAXPOOL = 3,  /* max pooling, scale kept */
  OPU_OP_AVGPOOL = 4,  /* average pooling, rounded division; scale kept, or (1.1, m0 > 0) rescaled */
  OPU_OP_GAVGPOOL = 5, /* global average pooling, the same */
  OPU_OP_REQUANT = 6,  /* data movement: copy with requantization and clamp */
  OPU_OP_PAD = 7,      /* data movement: copy into a larger tensor, border filled with m0 */
  OPU_OP_LAST = 7
};

/* Tensor flags. */
enum {
  OPU_T_UNSIGNED = 1u << 0, /* bytes are uint8 (0..255), else int8 */
  OPU_T_INT32 = 1u << 1     /* 4-byte little-endian int32 elements: only written by CONV, ADD and
                             * REQUANT, never read by an instruction (high-precision outputs) */
};
/* Instruction flags. */
enum {
  OPU_F_COUNT_PAD = 1u << 0, /* AVGPOOL: divisor counts padding taps */
  OPU_F_DEPTHWISE = 1u << 1  /* CONV: groups == in channels == out channels (depthwise layout) */
};

/* An activation tensor: N x C x H x W elements at `addr` of activation memory; channel c of
 * batch item n, row y, column x at addr + n * bstride + ((c * H + y) * W + x) * E, E the element
 * size (1; 4 for OPU_T_INT32), bstride in bytes.  A concatenate's inputs
 * are views into its output (addr offset by the channel offset, bstride of the whole). */
typedef struct OpuTensor {
  uint32_t addr, n, c, h, w, bstride, flags;
  float scale; /* real value of one step (x = q * scale); for the driver, not the core */
} OpuTensor;

/* One instruction (64 bytes in the stream; field use per opcode in docs/OPU.md). */
typedef struct OpuInstr {
  uint16_t op, flags;
  uint32_t in0, in1, out;           /* tensor ids (in1: ADD only) */
  uint16_t kh, kw, sh, sw;          /* kernel, strides */
  uint16_t pt, pl, pb, pr;          /* padding: top, left, bottom, right */
  uint32_t groups;                  /* CONV */
  uint32_t w_off;                   /* CONV: offset of the weights in the blob */
  uint32_t q_off;                   /* CONV: offset of the per-channel records in the blob */
  int32_t m0, m1;                   /* ADD / REQUANT multipliers */
  uint16_t shift;                   /* ADD / REQUANT shift */
  int16_t lo, hi;                   /* clamp bounds of the result */
} OpuInstr;

typedef struct OpuProgram {
  uint16_t ver_major, ver_minor;
  uint16_t pe_rows, pe_cols;   /* the PE array the weight blob is blocked for */
  uint32_t act_bytes;          /* activation memory needed */
  uint32_t weight_bytes;       /* size of the weight blob */
  uint32_t num_tensors, num_instrs, num_inputs, num_outputs;
  OpuTensor *tensors;
  OpuInstr *instrs;
  uint32_t *inputs, *outputs; /* tensor ids */
} OpuProgram;

/* All functions that can fail write a message (at most `errlen` bytes, NUL-terminated) to
 * `err` and return -1 (or NULL). */

/* Serialized size of p. */
size_t opu_program_size(const OpuProgram *p);
/* Write p to buf (opu_program_size(p) bytes). */
void opu_program_encode(const OpuProgram *p, uint8_t *buf);
/* Decode and validate: header, counts, every tensor inside act_bytes, every instruction's
 * opcode, operands, shapes and blob ranges (given weight_bytes).  On success *out owns its
 * arrays (opu_program_free). */
/* Writes the printf-style message into err (errlen bytes; either may be 0/NULL) and returns -1:
 * how the decoder, the validator and the simulator report (opu/isa.c). */
int opu_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int opu_program_decode(const uint8_t *buf, size_t len, OpuProgram *out, char *err, size_t errlen);
void opu_program_free(OpuProgram *p);
/* The text listing (malloc'd, NUL-terminated); NULL when out of memory. */
char *opu_program_listing(const OpuProgram *p);
/* Check one program's internal consistency (what decode checks after parsing). */
int opu_program_validate(const OpuProgram *p, char *err, size_t errlen);

/* ------------------------------------------------------------------------------------------ */
/* Quantization arithmetic (quant.c; docs/OPU.md "Quantization")                               */

/* real ~= m * 2^-shift with m in [2^30, 2^31) and shift in [0, 62]; a real too small for that
 * gives m = 0, shift = 0 (the result is 0); a real >= 2^31 is clamped to the largest.  real
 * must be finite and >= 0. */
void opu_quant_multiplier(double real, int32_t *m, uint16_t *shift);
/* round(x / 2^shift) with ties away from zero; shift in [0, 63]. */
int64_t opu_rshift_round(int64_t x, unsigned shift);
/* round(x / d) with ties away from zero; d > 0. */
int64_t opu_div_round(int64_t x, int64_t d);
/* An average of `count` (< 2^32) int8 / uint8 values summing to `sum` (so |sum| <= 255 * count):
 * div_round(sum, count), or with m > 0 (version 1.1) rshift_round(div_round(sum * m, count),
 * shift), in the output's own steps.  sum * m can pass 64 bits (a global pool of a large plane),
 * so it is taken as q * m + div_round(r * m, count) with sum = q * count + r (q and r of sum's
 * sign: the same value; |q| <= 255 and |r| < count keep every term below 2^63).  Not clamped. */
static inline int64_t opu_average(int64_t sum, int64_t count, int32_t m, unsigned shift) {
  if (count < 1) count = 1;
  if (m <= 0) return opu_div_round(sum, count);
  int64_t q = sum / count, r = sum % count;
  return opu_rshift_round(q * m + opu_div_round(r * m, count), shift);
}
/* The requantized value of an int32 accumulator: clamp(rshift_round(acc * m, shift), lo, hi). */
static inline int32_t opu_requant(int64_t acc, int32_t m, unsigned shift, int32_t lo, int32_t hi) {
  int64_t p = acc * (int64_t)m, r;
  if (shift == 0) {
    r = p;
  } else {
    int64_t half = (int64_t)1 << (shift - 1);
    r = p >= 0 ? (p + half) >> shift : -((-p + half) >> shift);
  }
  return r < lo ? lo : r > hi ? hi : (int32_t)r;
}
/* Quantize a float to a step of `scale` (the driver's side): v = x * (1 / scale) in double,
 * rounded with ties away from zero, saturated to [lo, hi]; NaN gives 0. */
static inline int32_t opu_quantize_inv(float x, double inv_scale, int32_t lo, int32_t hi) {
  double v = (double)x * inv_scale;
  if (v != v) return 0;
  if (v <= lo) return lo;
  if (v >= hi) return hi;
  int32_t t = (int32_t)v; /* toward zero */
  double f = v - t;
  return f >= 0.5 ? t + 1 : f <= -0.5 ? t - 1 : t;
}
static inline int32_t opu_quantize(float x, float scale, int32_t lo, int32_t hi) {
  return opu_quantize_inv(x, 1.0 / (double)scale, lo, hi);
}

/* The weight blob layout (docs/OPU.md "Weight layout").  Bytes of one CONV's weights for a PE
 * array of R rows (output channels) by C columns (input channels). */
uint64_t opu_conv_weight_bytes(uint32_t oc, uint32_t icg, uint32_t groups, uint32_t kh, uint32_t kw,
                               int depthwise, uint32_t R, uint32_t C);
/* Byte offset (relative to w_off) of weight [o][i][y][x] (i within o's group). */
uint64_t opu_conv_weight_index(uint32_t o, uint32_t i, uint32_t y, uint32_t x, uint32_t oc, uint32_t icg,
                               uint32_t groups, uint32_t kh, uint32_t kw, int depthwise, uint32_t R,
                               uint32_t C);
/* Per-output-channel record of a CONV at q_off: int32 bias, int32 m, int32 shift (12 bytes). */
#define OPU_QREC_BYTES 12

/* ------------------------------------------------------------------------------------------ */
/* Simulator (sim.c)                                                                           */

typedef struct OpuSim OpuSim;
/* A simulator for program p (borrowed; must outlive it) and its weight blob (copied into the
 * simulator's unpacked form).  NULL + err when the blob is smaller than p needs. */
OpuSim *opu_sim_new(const OpuProgram *p, const uint8_t *weights, size_t weight_len, char *err, size_t errlen);
void opu_sim_free(OpuSim *s);
/* The activation memory (act_bytes): the driver writes quantized inputs at their tensors and
 * reads outputs from theirs. */
uint8_t *opu_sim_memory(OpuSim *s);
/* Test hook: the convolution kernel the simulator uses (0: the best the CPU has, AVX512-VNNI
 * first; 1: portable C; 2: AVX2; 3: AVX-512BW without VNNI; 2 and 3 when the CPU has them).
 * Every kernel gives the same bits. */
extern int opu_sim_kernel;
/* Execute every instruction once, in order.  threads >= 1. */
int opu_sim_run(OpuSim *s, int threads, char *err, size_t errlen);

static inline uint32_t opu_elem_size(const OpuTensor *t) { return (t->flags & OPU_T_INT32) ? 4u : 1u; }

/* Read / write element (n, c, y, x) of tensor t in memory as an integer. */
static inline int32_t opu_mem_get(const uint8_t *mem, const OpuTensor *t, uint32_t n, uint32_t c, uint32_t y,
                                  uint32_t x) {
  const uint8_t *p = mem + t->addr + (uint64_t)n * t->bstride + (((uint64_t)c * t->h + y) * t->w + x) * opu_elem_size(t);
  if (t->flags & OPU_T_INT32)
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
  return (t->flags & OPU_T_UNSIGNED) ? (int32_t)p[0] : (int32_t)(int8_t)p[0];
}
static inline void opu_mem_set(uint8_t *mem, const OpuTensor *t, uint32_t n, uint32_t c, uint32_t y, uint32_t x,
                               int32_t v) {
  uint8_t *p = mem + t->addr + (uint64_t)n * t->bstride + (((uint64_t)c * t->h + y) * t->w + x) * opu_elem_size(t);
  p[0] = (uint8_t)v;
  if (t->flags & OPU_T_INT32) {
    p[1] = (uint8_t)((uint32_t)v >> 8);
    p[2] = (uint8_t)((uint32_t)v >> 16);
    p[3] = (uint8_t)((uint32_t)v >> 24);
  }
}
/* The range of a tensor's elements. */
static inline int32_t opu_tensor_lo(const OpuTensor *t) {
  return (t->flags & OPU_T_INT32) ? INT16_MIN : (t->flags & OPU_T_UNSIGNED) ? 0 : -128;
}
static inline int32_t opu_tensor_hi(const OpuTensor *t) {
  return (t->flags & OPU_T_INT32) ? INT16_MAX : (t->flags & OPU_T_UNSIGNED) ? 255 : 127;
}
/* The clamp bounds an instruction's 16-bit lo / hi give for its output: themselves, or for an
 * int32 output lo * 2^16 and hi * 2^16 + (2^16 - 1) (the full int32 range at -32768, 32767). */
static inline int32_t opu_clamp_lo(const OpuTensor *o, int16_t lo) {
  return (o->flags & OPU_T_INT32) ? (int32_t)((uint32_t)(int32_t)lo << 16) : lo;
}
static inline int32_t opu_clamp_hi(const OpuTensor *o, int16_t hi) {
  return (o->flags & OPU_T_INT32) ? (int32_t)(((uint32_t)(int32_t)hi << 16) | 0xffffu) : hi;
}

#endif /* OPU_ISA_H */
