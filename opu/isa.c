/* isa.c -- encoder, decoder and text listing of OPU programs (layouts: docs/OPU.md, isa.h).
 * The decoder trusts nothing: every count, id, shape and blob range is checked before use, and
 * a failure says which field of which record is wrong and at which byte offset. */
#include "isa.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Little-endian fields                                                                        */

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int opu_errf(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static const char *op_name(uint16_t op) {
  switch (op) {
  case OPU_OP_CONV: return "CONV";
  case OPU_OP_ADD: return "ADD";
  case OPU_OP_MAXPOOL: return "MAXPOOL";
  case OPU_OP_AVGPOOL: return "AVGPOOL";
  case OPU_OP_GAVGPOOL: return "GAVGPOOL";
  case OPU_OP_REQUANT: return "REQUANT";
  case OPU_OP_PAD: return "PAD";
  default: return "?";
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Encoding                                                                                    */

size_t opu_program_size(const OpuProgram *p) {
  return OPU_HEADER_BYTES + (size_t)p->num_tensors * OPU_TENSOR_BYTES +
         4 * ((size_t)p->num_inputs + p->num_outputs) + (size_t)p->num_instrs * OPU_INSTR_BYTES;
}

void opu_program_encode(const OpuProgram *p, uint8_t *buf) {
  memset(buf, 0, opu_program_size(p));
  put32(buf, OPU_MAGIC);
  put16(buf + 4, OPU_VERSION_MAJOR);
  put16(buf + 6, OPU_VERSION_MINOR);
  put16(buf + 8, p->pe_rows);
  put16(buf + 10, p->pe_cols);
  put32(buf + 12, p->act_bytes);
  put32(buf + 16, p->weight_bytes);
  put32(buf + 20, p->num_tensors);
  put32(buf + 24, p->num_instrs);
  put32(buf + 28, p->num_inputs);
  put32(buf + 32, p->num_outputs);
  put32(buf + 36, OPU_HEADER_BYTES);
  uint8_t *q = buf + OPU_HEADER_BYTES;
  for (uint32_t i = 0; i < p->num_tensors; i++, q += OPU_TENSOR_BYTES) {
    const OpuTensor *t = &p->tensors[i];
    put32(q, t->addr);
    put32(q + 4, t->n);
    put32(q + 8, t->c);
    put32(q + 12, t->h);
    put32(q + 16, t->w);
    put32(q + 20, t->bstride);
    put32(q + 24, t->flags);
    put32(q + 28, f32_bits(t->scale));
  }
  for (uint32_t i = 0; i < p->num_inputs; i++, q += 4) put32(q, p->inputs[i]);
  for (uint32_t i = 0; i < p->num_outputs; i++, q += 4) put32(q, p->outputs[i]);
  for (uint32_t i = 0; i < p->num_instrs; i++, q += OPU_INSTR_BYTES) {
    const OpuInstr *s = &p->instrs[i];
    put16(q, s->op);
    put16(q + 2, s->flags);
    put32(q + 4, s->in0);
    put32(q + 8, s->in1);
    put32(q + 12, s->out);
    put16(q + 16, s->kh);
    put16(q + 18, s->kw);
    put16(q + 20, s->sh);
    put16(q + 22, s->sw);
    put16(q + 24, s->pt);
    put16(q + 26, s->pl);
    put16(q + 28, s->pb);
    put16(q + 30, s->pr);
    put32(q + 32, s->groups);
    put32(q + 36, s->w_off);
    put32(q + 40, s->q_off);
    put32(q + 44, (uint32_t)s->m0);
    put32(q + 48, (uint32_t)s->m1);
    put16(q + 52, s->shift);
    put16(q + 54, (uint16_t)s->lo);
    put16(q + 56, (uint16_t)s->hi);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Validation                                                                                  */

static uint64_t tensor_end(const OpuTensor *t) {
  return (uint64_t)t->addr + (uint64_t)(t->n - 1) * t->bstride + (uint64_t)t->c * t->h * t->w * opu_elem_size(t);
}

static int same_shape(const OpuTensor *a, const OpuTensor *b) {
  return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w;
}

static int disjoint(const OpuTensor *a, const OpuTensor *b) {
  return tensor_end(a) <= b->addr || tensor_end(b) <= a->addr;
}

/* Output extent of a window op along one axis: the last window starts inside the input. */
static int window_ok(uint32_t in, uint32_t out, uint32_t k, uint32_t s, uint32_t p0, uint32_t p1, int exact) {
  if (in + p0 + p1 < k) return 0;
  uint32_t floor_out = (in + p0 + p1 - k) / s + 1;
  if (exact) return out == floor_out;
  /* pooling: floor or ceil mode; every window starts before the input ends */
  return out >= 1 && (out == floor_out || out == floor_out + 1) && (uint64_t)(out - 1) * s < (uint64_t)in + p0;
}

static int check_instr(const OpuProgram *p, uint32_t k, char *err, size_t errlen) {
  const OpuInstr *s = &p->instrs[k];
  const char *nm = op_name(s->op);
  if (s->op < 1 || s->op > OPU_OP_LAST)
    return opu_errf(err, errlen, "instruction %u: unknown opcode %u", k, (unsigned)s->op);
  uint32_t nt = p->num_tensors;
  if (s->in0 >= nt || s->out >= nt || (s->op == OPU_OP_ADD && s->in1 >= nt))
    return opu_errf(err, errlen, "instruction %u (%s): tensor id out of range (in0 %u, in1 %u, out %u; %u tensors)", k, nm,
                s->in0, s->in1, s->out, nt);
  const OpuTensor *a = &p->tensors[s->in0], *o = &p->tensors[s->out];
  if ((a->flags & OPU_T_INT32) || (s->op == OPU_OP_ADD && (p->tensors[s->in1].flags & OPU_T_INT32)))
    return opu_errf(err, errlen, "instruction %u (%s): reads an int32 tensor (int32 tensors are outputs only)", k, nm);
  if ((o->flags & OPU_T_INT32) && s->op != OPU_OP_CONV && s->op != OPU_OP_ADD && s->op != OPU_OP_REQUANT)
    return opu_errf(err, errlen, "instruction %u (%s): writes an int32 tensor (only CONV, ADD and REQUANT do)", k, nm);
  if (!disjoint(a, o) || (s->op == OPU_OP_ADD && !disjoint(&p->tensors[s->in1], o)))
    return opu_errf(err, errlen, "instruction %u (%s): output t%u overlaps an input", k, nm, s->out);
  int32_t lo = opu_tensor_lo(o), hi = opu_tensor_hi(o);
  if (s->lo < lo || s->hi > hi || s->lo > s->hi)
    return opu_errf(err, errlen, "instruction %u (%s): clamp [%d, %d] not inside t%u's range [%d, %d]", k, nm, s->lo, s->hi,
                s->out, lo, hi);
  unsigned allowed = s->op == OPU_OP_CONV ? OPU_F_DEPTHWISE : s->op == OPU_OP_AVGPOOL ? OPU_F_COUNT_PAD : 0;
  if (s->flags & ~allowed) return opu_errf(err, errlen, "instruction %u (%s): unknown flags 0x%x", k, nm, s->flags);
  if (a->n != o->n) return opu_errf(err, errlen, "instruction %u (%s): batch %u -> %u", k, nm, a->n, o->n);
  int windowed = s->op == OPU_OP_CONV || s->op == OPU_OP_MAXPOOL || s->op == OPU_OP_AVGPOOL;
  if (windowed) {
    if (s->kh < 1 || s->kw < 1 || s->kh > OPU_MAX_KERNEL || s->kw > OPU_MAX_KERNEL || s->sh < 1 || s->sw < 1 ||
        s->sh > OPU_MAX_STRIDE || s->sw > OPU_MAX_STRIDE || s->pt >= s->kh || s->pb >= s->kh || s->pl >= s->kw ||
        s->pr >= s->kw)
      return opu_errf(err, errlen, "instruction %u (%s): bad window (kernel %ux%u, stride %ux%u, pad %u,%u,%u,%u)", k, nm,
                  s->kh, s->kw, s->sh, s->sw, s->pt, s->pl, s->pb, s->pr);
    int exact = s->op == OPU_OP_CONV;
    if (!window_ok(a->h, o->h, s->kh, s->sh, s->pt, s->pb, exact) ||
        !window_ok(a->w, o->w, s->kw, s->sw, s->pl, s->pr, exact))
      return opu_errf(err, errlen, "instruction %u (%s): output %ux%u does not follow from input %ux%u and the window", k,
                  nm, o->h, o->w, a->h, a->w);
  }
  switch (s->op) {
  case OPU_OP_CONV: {
    uint32_t g = s->groups;
    if (g < 1 || a->c % g || o->c % g)
      return opu_errf(err, errlen, "instruction %u (CONV): groups %u does not divide channels %u -> %u", k, g, a->c, o->c);
    int dw = (s->flags & OPU_F_DEPTHWISE) != 0;
    if ((uint64_t)(a->c / g) * s->kh * s->kw > OPU_MAX_TAPS)
      return opu_errf(err, errlen, "instruction %u (CONV): %llu taps per output, more than %u", k,
                  (unsigned long long)(a->c / g) * s->kh * s->kw, OPU_MAX_TAPS);
    if (dw && !(g == a->c && g == o->c))
      return opu_errf(err, errlen, "instruction %u (CONV): depthwise needs groups == in == out channels", k);
    uint64_t wb = opu_conv_weight_bytes(o->c, a->c / g, g, s->kh, s->kw, dw, p->pe_rows, p->pe_cols);
    if ((uint64_t)s->w_off + wb > p->weight_bytes || (uint64_t)s->q_off + (uint64_t)o->c * OPU_QREC_BYTES > p->weight_bytes)
      return opu_errf(err, errlen, "instruction %u (CONV): weights [%u, +%llu) or records [%u, +%u) outside the %u-byte blob",
                  k, s->w_off, (unsigned long long)wb, s->q_off, o->c * OPU_QREC_BYTES, p->weight_bytes);
    break;
  }
  case OPU_OP_ADD:
    if (!same_shape(a, o) || !same_shape(&p->tensors[s->in1], o))
      return opu_errf(err, errlen, "instruction %u (ADD): operand shapes differ", k);
    if (s->m0 < 0 || s->m1 < 0 || s->shift > 63)
      return opu_errf(err, errlen, "instruction %u (ADD): bad multipliers %d, %d or shift %u", k, s->m0, s->m1, s->shift);
    break;
  case OPU_OP_REQUANT:
    if (!same_shape(a, o)) return opu_errf(err, errlen, "instruction %u (REQUANT): operand shapes differ", k);
    if (s->m0 < 0 || s->shift > 63)
      return opu_errf(err, errlen, "instruction %u (REQUANT): bad multiplier %d or shift %u", k, s->m0, s->shift);
    break;
  case OPU_OP_PAD:
    if ((uint64_t)a->c + s->groups + s->q_off != o->c || (uint64_t)a->h + s->pt + s->pb != o->h ||
        (uint64_t)a->w + s->pl + s->pr != o->w)
      return opu_errf(err, errlen, "instruction %u (PAD): output %ux%ux%u is not the input %ux%ux%u plus the pads", k, o->c,
                  o->h, o->w, a->c, a->h, a->w);
    if ((a->flags & OPU_T_UNSIGNED) != (o->flags & OPU_T_UNSIGNED) || s->m0 < lo || s->m0 > hi)
      return opu_errf(err, errlen, "instruction %u (PAD): signedness differs or fill %d outside [%d, %d]", k, s->m0, lo, hi);
    break;
  case OPU_OP_MAXPOOL:
  case OPU_OP_AVGPOOL:
  case OPU_OP_GAVGPOOL:
    if (a->c != o->c) return opu_errf(err, errlen, "instruction %u (%s): channels %u -> %u", k, nm, a->c, o->c);
    if ((a->flags & OPU_T_UNSIGNED) != (o->flags & OPU_T_UNSIGNED))
      return opu_errf(err, errlen, "instruction %u (%s): input and output signedness differ", k, nm);
    if (s->op == OPU_OP_GAVGPOOL && (o->h != 1 || o->w != 1))
      return opu_errf(err, errlen, "instruction %u (GAVGPOOL): output is %ux%u, not 1x1", k, o->h, o->w);
    if (s->op != OPU_OP_MAXPOOL && (s->m0 < 0 || s->shift > 63))
      return opu_errf(err, errlen, "instruction %u (%s): bad multiplier %d or shift %u", k, nm, s->m0, s->shift);
    if (s->op != OPU_OP_MAXPOOL && s->m0 > 0 && p->ver_major == 1 && p->ver_minor < 1)
      return opu_errf(err, errlen, "instruction %u (%s): a rescaled average (multiplier %d) needs version 1.1, the "
                      "program is %u.%u", k, nm, s->m0, p->ver_major, p->ver_minor);
    break;
  default: break;
  }
  return 0;
}

int opu_program_validate(const OpuProgram *p, char *err, size_t errlen) {
  if (p->pe_rows < 1 || p->pe_cols < 1 || p->pe_rows > 256 || p->pe_cols > 256)
    return opu_errf(err, errlen, "PE array %ux%u outside 1..256", p->pe_rows, p->pe_cols);
  for (uint32_t i = 0; i < p->num_tensors; i++) {
    const OpuTensor *t = &p->tensors[i];
    if (!t->n || !t->c || !t->h || !t->w)
      return opu_errf(err, errlen, "tensor %u: empty shape %ux%ux%ux%u", i, t->n, t->c, t->h, t->w);
    uint64_t plane = (uint64_t)t->c * t->h * t->w * opu_elem_size(t);
    if (plane > UINT32_MAX || (t->n > 1 && t->bstride < plane))
      return opu_errf(err, errlen, "tensor %u: batch stride %u below its %llu bytes", i, t->bstride,
                  (unsigned long long)plane);
    if (tensor_end(t) > p->act_bytes)
      return opu_errf(err, errlen, "tensor %u: bytes [%u, %llu) outside activation memory (%u bytes)", i, t->addr,
                  (unsigned long long)tensor_end(t), p->act_bytes);
    if ((t->flags & ~(uint32_t)(OPU_T_UNSIGNED | OPU_T_INT32)) ||
        (t->flags & (OPU_T_UNSIGNED | OPU_T_INT32)) == (OPU_T_UNSIGNED | OPU_T_INT32))
      return opu_errf(err, errlen, "tensor %u: unknown flags 0x%x", i, t->flags);
    if (!(t->scale > 0) || !isfinite(t->scale))
      return opu_errf(err, errlen, "tensor %u: scale %g is not a positive finite number", i, (double)t->scale);
  }
  if (p->num_inputs > OPU_MAX_IO || p->num_outputs > OPU_MAX_IO || p->num_outputs == 0)
    return opu_errf(err, errlen, "%u inputs and %u outputs: the OPU takes up to %u of each (and at least one output)",
                p->num_inputs, p->num_outputs, OPU_MAX_IO);
  for (uint32_t i = 0; i < p->num_inputs + p->num_outputs; i++) {
    uint32_t id = i < p->num_inputs ? p->inputs[i] : p->outputs[i - p->num_inputs];
    if (id >= p->num_tensors)
      return opu_errf(err, errlen, "%s %u: tensor id %u out of range (%u tensors)", i < p->num_inputs ? "input" : "output",
                  i < p->num_inputs ? i : i - p->num_inputs, id, p->num_tensors);
  }
  for (uint32_t k = 0; k < p->num_instrs; k++)
    if (check_instr(p, k, err, errlen) != 0) return -1;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Decoding                                                                                    */

void opu_program_free(OpuProgram *p) {
  free(p->tensors);
  free(p->instrs);
  free(p->inputs);
  free(p->outputs);
  memset(p, 0, sizeof *p);
}

int opu_program_decode(const uint8_t *buf, size_t len, OpuProgram *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!buf || len < OPU_HEADER_BYTES)
    return opu_errf(err, errlen, "program of %zu bytes is shorter than the %d-byte header", len, OPU_HEADER_BYTES);
  if (get32(buf) != OPU_MAGIC)
    return opu_errf(err, errlen, "bad magic 0x%08x at byte 0 (want 0x%08x, \"OPU1\")", get32(buf), OPU_MAGIC);
  uint16_t maj = get16(buf + 4), min = get16(buf + 6);
  if (maj != OPU_VERSION_MAJOR)
    return opu_errf(err, errlen, "program version %u.%u: this decoder reads major version %d", maj, min,
                OPU_VERSION_MAJOR);
  if (get32(buf + 36) != OPU_HEADER_BYTES)
    return opu_errf(err, errlen, "header size field (byte 36) is %u, want %d", get32(buf + 36), OPU_HEADER_BYTES);
  for (int i = 40; i < OPU_HEADER_BYTES; i++)
    if (buf[i]) return opu_errf(err, errlen, "reserved header byte %d is not zero", i);
  OpuProgram p = {0};
  p.ver_major = maj;
  p.ver_minor = min;
  p.pe_rows = get16(buf + 8);
  p.pe_cols = get16(buf + 10);
  p.act_bytes = get32(buf + 12);
  p.weight_bytes = get32(buf + 16);
  p.num_tensors = get32(buf + 20);
  p.num_instrs = get32(buf + 24);
  p.num_inputs = get32(buf + 28);
  p.num_outputs = get32(buf + 32);
  if (p.num_tensors > OPU_MAX_TENSORS || p.num_instrs > OPU_MAX_INSTRS || p.num_inputs > OPU_MAX_IO ||
      p.num_outputs > OPU_MAX_IO || p.num_outputs == 0)
    return opu_errf(err, errlen, "counts out of range: %u tensors, %u instructions, %u inputs, %u outputs", p.num_tensors,
                p.num_instrs, p.num_inputs, p.num_outputs);
  size_t need = opu_program_size(&p);
  if (len != need)
    return opu_errf(err, errlen, "program is %zu bytes; its counts say %zu (truncated or trailing bytes)", len, need);
  p.tensors = calloc(p.num_tensors ? p.num_tensors : 1, sizeof *p.tensors);
  p.instrs = calloc(p.num_instrs ? p.num_instrs : 1, sizeof *p.instrs);
  p.inputs = calloc(p.num_inputs ? p.num_inputs : 1, 4);
  p.outputs = calloc(p.num_outputs, 4);
  if (!p.tensors || !p.instrs || !p.inputs || !p.outputs) {
    opu_program_free(&p);
    return opu_errf(err, errlen, "out of memory decoding a program of %zu bytes", len);
  }
  const uint8_t *q = buf + OPU_HEADER_BYTES;
  for (uint32_t i = 0; i < p.num_tensors; i++, q += OPU_TENSOR_BYTES) {
    OpuTensor *t = &p.tensors[i];
    t->addr = get32(q);
    t->n = get32(q + 4);
    t->c = get32(q + 8);
    t->h = get32(q + 12);
    t->w = get32(q + 16);
    t->bstride = get32(q + 20);
    t->flags = get32(q + 24);
    t->scale = bits_f32(get32(q + 28));
  }
  for (uint32_t i = 0; i < p.num_inputs; i++, q += 4) p.inputs[i] = get32(q);
  for (uint32_t i = 0; i < p.num_outputs; i++, q += 4) p.outputs[i] = get32(q);
  for (uint32_t i = 0; i < p.num_instrs; i++, q += OPU_INSTR_BYTES) {
    OpuInstr *s = &p.instrs[i];
    s->op = get16(q);
    s->flags = get16(q + 2);
    s->in0 = get32(q + 4);
    s->in1 = get32(q + 8);
    s->out = get32(q + 12);
    s->kh = get16(q + 16);
    s->kw = get16(q + 18);
    s->sh = get16(q + 20);
    s->sw = get16(q + 22);
    s->pt = get16(q + 24);
    s->pl = get16(q + 26);
    s->pb = get16(q + 28);
    s->pr = get16(q + 30);
    s->groups = get32(q + 32);
    s->w_off = get32(q + 36);
    s->q_off = get32(q + 40);
    s->m0 = (int32_t)get32(q + 44);
    s->m1 = (int32_t)get32(q + 48);
    s->shift = get16(q + 52);
    s->lo = (int16_t)get16(q + 54);
    s->hi = (int16_t)get16(q + 56);
    for (int b = 58; b < OPU_INSTR_BYTES; b++)
      if (q[b]) {
        opu_program_free(&p);
        return opu_errf(err, errlen, "instruction %u: reserved byte %d (stream offset %zu) is not zero", i, b,
                    (size_t)(q - buf) + (size_t)b);
      }
  }
  if (opu_program_validate(&p, err, errlen) != 0) {
    opu_program_free(&p);
    return -1;
  }
  *out = p;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Listing                                                                                     */

typedef struct {
  char *d;
  size_t n, cap;
  int oom;
} Txt;

static void tx(Txt *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->d ? b->d + b->n : NULL, b->d ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->oom = 1;
      return;
    }
    if (b->d && b->n + (size_t)k < b->cap) {
      b->n += (size_t)k;
      return;
    }
    size_t nc = (b->cap ? b->cap * 2 : 4096) + (size_t)k + 1;
    char *nd = realloc(b->d, nc);
    if (!nd) {
      b->oom = 1;
      return;
    }
    b->d = nd;
    b->cap = nc;
  }
}

char *opu_program_listing(const OpuProgram *p) {
  Txt b = {0};
  tx(&b, "; OPU program v%u.%u  PE array %ux%u  activation memory %u B  weight blob %u B\n", p->ver_major,
     p->ver_minor, p->pe_rows, p->pe_cols, p->act_bytes, p->weight_bytes);
  tx(&b, "; %u tensors, %u instructions\n", p->num_tensors, p->num_instrs);
  for (uint32_t i = 0; i < p->num_tensors; i++) {
    const OpuTensor *t = &p->tensors[i];
    tx(&b, "tensor t%u @0x%08x %ux%ux%ux%u bstride %u %s scale %.9g\n", i, t->addr, t->n, t->c, t->h, t->w,
       t->bstride, (t->flags & OPU_T_INT32) ? "i32" : (t->flags & OPU_T_UNSIGNED) ? "u8" : "i8", (double)t->scale);
  }
  for (uint32_t i = 0; i < p->num_inputs; i++) tx(&b, "input %u t%u\n", i, p->inputs[i]);
  for (uint32_t i = 0; i < p->num_outputs; i++) tx(&b, "output %u t%u\n", i, p->outputs[i]);
  for (uint32_t k = 0; k < p->num_instrs; k++) {
    const OpuInstr *s = &p->instrs[k];
    tx(&b, "%04u %-8s ", k, op_name(s->op));
    switch (s->op) {
    case OPU_OP_CONV:
      tx(&b, "t%u -> t%u k%ux%u s%ux%u pad %u,%u,%u,%u groups %u%s w@0x%x q@0x%x", s->in0, s->out, s->kh, s->kw, s->sh,
         s->sw, s->pt, s->pl, s->pb, s->pr, s->groups, (s->flags & OPU_F_DEPTHWISE) ? " depthwise" : "", s->w_off,
         s->q_off);
      break;
    case OPU_OP_ADD:
      tx(&b, "t%u, t%u -> t%u m %d, %d shift %u", s->in0, s->in1, s->out, s->m0, s->m1, s->shift);
      break;
    case OPU_OP_REQUANT: tx(&b, "t%u -> t%u m %d shift %u", s->in0, s->out, s->m0, s->shift); break;
    case OPU_OP_PAD:
      tx(&b, "t%u -> t%u channels %u,%u pad %u,%u,%u,%u fill %d", s->in0, s->out, s->groups, s->q_off, s->pt, s->pl,
         s->pb, s->pr, s->m0);
      break;
    case OPU_OP_MAXPOOL:
    case OPU_OP_AVGPOOL:
      tx(&b, "t%u -> t%u k%ux%u s%ux%u pad %u,%u,%u,%u%s", s->in0, s->out, s->kh, s->kw, s->sh, s->sw, s->pt, s->pl,
         s->pb, s->pr, (s->flags & OPU_F_COUNT_PAD) ? " count_pad" : "");
      if (s->m0) tx(&b, " m %d shift %u", s->m0, s->shift);
      break;
    case OPU_OP_GAVGPOOL:
      tx(&b, "t%u -> t%u", s->in0, s->out);
      if (s->m0) tx(&b, " m %d shift %u", s->m0, s->shift);
      break;
    default: tx(&b, "t%u -> t%u", s->in0, s->out); break;
    }
    tx(&b, " clamp [%d, %d]\n", s->lo, s->hi);
  }
  if (b.oom) {
    free(b.d);
    return NULL;
  }
  return b.d;
}
