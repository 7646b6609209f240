/* eval_op.c -- evaluate one op on tensors: infer the result type from the actual inputs,
 * allocate the outputs, run the kernel.  Also eval_call (FoldConstant's entry). */
#include "eval/eval.h"
#include "eval/kernel.h"

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define MAX_OUT 64

/* The online CPU count, read once: sysconf opens and parses /sys/devices/system/cpu/online on
 * every call (about 2 us), and FoldConstant evaluates one call per folded node.  Two threads
 * racing on the first call both store the same value. */
int32_t gp_eval_default_threads(void) {
  static _Atomic int32_t cached;
  int32_t n = atomic_load_explicit(&cached, memory_order_relaxed);
  if (n == 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c < 1 ? 1 : c > 64 ? 64 : (int32_t)c;
    atomic_store_explicit(&cached, n, memory_order_relaxed);
  }
  return n;
}

int64_t gp_type_nbytes(const GPType *t) {
  if (!t) return -1;
  if (t->kind == GP_TYPE_TENSOR) {
    int64_t n = gp_type_numel(t);
    return n < 0 ? -1 : n * (int64_t)gp_dtype_bytes(t->tensor.dtype);
  }
  if (t->kind == GP_TYPE_TUPLE) {
    int64_t sum = 0;
    for (int32_t i = 0; i < t->n; i++) {
      int64_t b = gp_type_nbytes(t->tuple.fields[i]); /* tuples nest shallowly (types are data) */
      if (b < 0) return -1;
      sum += b;
    }
    return sum;
  }
  return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Storage dtypes (ir.h: bfloat16, float8, float4, int2/int4, ...): kernels never see them.   */

static bool is_storage(const GPTensor *t) { return gp_dtype_is_storage(t->dl.dtype, NULL); }

/* Element i as float; float32 and bfloat16 by their bits (a trip through double would quiet a
 * signaling NaN and change its bits). */
static float load_f32(const GPTensor *t, int64_t i) {
  if (!t->dl.strides && (gp_dtype_eq(t->dl.dtype, GP_DT_F32) || gp_dtype_eq(t->dl.dtype, GP_DT_BF16))) {
    const char *p = (const char *)t->dl.data + t->dl.byte_offset;
    uint32_t b = 0;
    if (t->dl.dtype.bits == 32) memcpy(&b, p + 4 * i, 4);
    else memcpy((char *)&b + 2, p + 2 * i, 2); /* little-endian: the high half */
    float f;
    memcpy(&f, &b, 4);
    return f;
  }
  return (float)gp_tensor_get_f64(t, i);
}

/* t's values in its compute dtype (float32 or int32), compact; exact. */
static GPTensor *to_compute(const GPTensor *t) {
  DLDataType c;
  gp_dtype_is_storage(t->dl.dtype, &c);
  GPTensor *r = gp_tensor_alloc(c, t->dl.ndim, t->dl.shape, true);
  if (!r) return NULL;
  int64_t n = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) n *= t->dl.shape[i];
  for (int64_t i = 0; i < n; i++) {
    if (c.code == kDLFloat) ((float *)r->dl.data)[i] = load_f32(t, i);
    else ((int32_t *)r->dl.data)[i] = (int32_t)gp_tensor_get_i64(t, i);
  }
  return r;
}

/* Store src's values (any dtype, same number of elements) into the compact storage tensor dst:
 * narrow floats rounded to nearest even, saturated when `saturate` (a cast: ONNX's default),
 * else out of range to infinity or NaN (a kernel's result: values that came from the type
 * itself come back exactly, and an infinity stays one where the type has it); integers
 * truncated toward zero and wrapped to their bits (as a C conversion to a narrower type). */
static void from_compute(GPTensor *dst, const GPTensor *src, bool saturate) {
  DLDataType dt = dst->dl.dtype;
  bool isint = dt.code == kDLInt || dt.code == kDLUInt;
  unsigned bits = dt.bits;
  int64_t n = 1;
  for (int32_t i = 0; i < dst->dl.ndim; i++) n *= dst->dl.shape[i];
  if (dt.code == kDLBfloat) {
    for (int64_t i = 0; i < n; i++)
      ((uint16_t *)dst->dl.data)[i] = (uint16_t)gp_f32_to_narrow_float(dt, load_f32(src, i), saturate, 0);
    return;
  }
  uint8_t *o = dst->dl.data;
  for (int64_t i = 0; i < n; i++) {
    if (!isint) {
      o[i] = (uint8_t)gp_f32_to_narrow_float(dt, load_f32(src, i), saturate, 0);
    } else {
      uint64_t u = (uint64_t)gp_tensor_get_i64(src, i) & ((UINT64_C(1) << bits) - 1);
      if (dt.code == kDLInt && (u >> (bits - 1)) & 1u) u |= ~((UINT64_C(1) << bits) - 1); /* sign-extend */
      o[i] = (uint8_t)u;
    }
  }
}

/* t's first element is not aligned to its element size (a view into a mapped file: DLPack
 * allows any alignment, the kernels read typed pointers). */
static bool misaligned(const GPTensor *t) {
  size_t e = gp_dtype_bytes(t->dl.dtype);
  return e > 1 && ((uintptr_t)t->dl.data + t->dl.byte_offset) % (e > 16 ? 16 : e) != 0;
}

/* An aligned compact copy of t. */
static GPTensor *to_aligned(const GPTensor *t) {
  GPTensor *r = gp_tensor_alloc(t->dl.dtype, t->dl.ndim, t->dl.shape, true);
  if (!r) return NULL;
  GPKView v;
  gp_k_view(&t->dl, &v);
  if (v.compact) {
    if (v.numel) memcpy(r->dl.data, v.data, (size_t)v.numel * v.elem);
  } else {
    for (int64_t i = 0; i < v.numel; i++)
      memcpy((char *)r->dl.data + (size_t)i * v.elem, v.data + (size_t)gp_k_offset_of(&v, i) * v.elem, v.elem);
  }
  return r;
}

/* Run the kernel with the storage-dtype inputs and outputs in their compute dtypes, and the
 * misaligned inputs copied.  A cast to a storage dtype converts directly (the cast kernel knows
 * only the compute dtypes). */
static int run_storage(GPOpKernelFn kernel, void *user, GPKernelArgs *ka, GPTensor *const *inputs,
                       GPTensor **outputs) {
  int32_t nin = ka->num_inputs, nf = ka->num_outputs;
  if (strcmp(ka->op->name, "cast") == 0 && nin == 1 && nf == 1 && is_storage(outputs[0])) {
    from_compute(outputs[0], inputs[0], true);
    return 0;
  }
  GPTensor **tmp = gp_calloc((size_t)(nin + nf), sizeof *tmp);
  const DLTensor **in_dl = gp_malloc((size_t)(nin ? nin : 1) * sizeof *in_dl);
  DLTensor **out_dl = gp_malloc((size_t)nf * sizeof *out_dl);
  int rc = -1;
  for (int32_t i = 0; i < nin; i++) {
    if (is_storage(inputs[i]) && !(tmp[i] = to_compute(inputs[i]))) goto done;
    if (!tmp[i] && misaligned(inputs[i]) && !(tmp[i] = to_aligned(inputs[i]))) goto done;
    in_dl[i] = tmp[i] ? &tmp[i]->dl : &inputs[i]->dl;
  }
  for (int32_t j = 0; j < nf; j++) {
    if (is_storage(outputs[j])) {
      DLDataType c;
      gp_dtype_is_storage(outputs[j]->dl.dtype, &c);
      if (!(tmp[nin + j] = gp_tensor_alloc(c, outputs[j]->dl.ndim, outputs[j]->dl.shape, true))) goto done;
    }
    out_dl[j] = tmp[nin + j] ? &tmp[nin + j]->dl : &outputs[j]->dl;
  }
  ka->inputs = in_dl;
  ka->outputs = out_dl;
  rc = kernel(ka, user);
  if (rc == 0)
    for (int32_t j = 0; j < nf; j++)
      if (tmp[nin + j]) from_compute(outputs[j], tmp[nin + j], false);
done:
  for (int32_t i = 0; i < nin + nf; i++) gp_release(tmp[i]);
  gp_free(tmp);
  gp_free(in_dl);
  gp_free(out_dl);
  return rc;
}

static bool has_data(const GPTensor *t) {
  if (t->dl.data) return true;
  for (int32_t i = 0; i < t->dl.ndim; i++)
    if (t->dl.shape[i] == 0) return true;
  return false;
}

int gp_eval_op(const GPOp *op, const GPAttrs *attrs, int32_t nargs, const GPType *const *arg_types,
               int32_t nin, GPTensor *const *inputs, int32_t num_threads, const GPType **out_type,
               GPTensor **outputs, int32_t max_out, int32_t *nout) {
  *nout = 0;
  void *user = NULL;
  GPOpKernelFn kernel = gp_op_kernel(op, &user);
  if (!kernel) {
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: the op has no kernel, so it cannot be evaluated", op->name);
    return -1;
  }
  /* The actual argument types, from the tensors (annotations may have unknown dims). */
  const GPType *small[16];
  const GPType **types = nargs > 16 ? gp_malloc((size_t)nargs * sizeof *types) : small;
  int rc = -1;
  int32_t at = 0;
  for (int32_t i = 0; i < nargs; i++) {
    const GPType *want = arg_types[i];
    int32_t k = want && want->kind == GP_TYPE_TUPLE ? want->n : 1;
    if (at + k > nin) {
      gp_error_set(GP_ERR_VALUE, "%s: %d input tensors for arguments that need more", op->name, (int)nin);
      goto done;
    }
    for (int32_t j = 0; j < k; j++) {
      const GPTensor *t = inputs[at + j];
      if (!has_data(t)) {
        gp_error_set(GP_ERR_VALUE, "%s: argument %d has no values (a constant of known type only)", op->name, (int)i);
        goto done;
      }
      if (t->dl.ndim > GP_K_MAX_RANK) {
        gp_error_set(GP_ERR_UNSUPPORTED, "%s: argument %d has rank %d (at most %d)", op->name, (int)i,
                     (int)t->dl.ndim, GP_K_MAX_RANK);
        goto done;
      }
    }
    if (want && want->kind == GP_TYPE_TUPLE) {
      const GPType *fs[GP_K_MAX_RANK];
      if (k > GP_K_MAX_RANK) {
        gp_error_set(GP_ERR_UNSUPPORTED, "%s: a tuple argument of %d fields (at most %d)", op->name, (int)k,
                     GP_K_MAX_RANK);
        goto done;
      }
      for (int32_t j = 0; j < k; j++) fs[j] = gp_tensor_type(inputs[at + j]);
      types[i] = gp_type_tuple(k, fs);
    } else {
      types[i] = gp_tensor_type(inputs[at]);
    }
    if (!types[i]) goto done;
    at += k;
  }
  if (at != nin) {
    gp_error_set(GP_ERR_VALUE, "%s: %d input tensors for %d argument tensors", op->name, (int)nin, (int)at);
    goto done;
  }
  const GPType *out = gp_op_infer(op, attrs, types, nargs);
  if (!out) goto done;
  const GPType *const *fields = &out;
  int32_t nf = 1;
  if (out->kind == GP_TYPE_TUPLE) fields = out->tuple.fields, nf = out->n;
  if (nf > max_out || nf > MAX_OUT) {
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: %d results (at most %d)", op->name, (int)nf, max_out < MAX_OUT ? max_out : MAX_OUT);
    goto done;
  }
  for (int32_t j = 0; j < nf; j++) {
    const GPType *f = fields[j];
    if (f->kind != GP_TYPE_TENSOR || gp_type_numel(f) < 0) {
      GPBuf tb = {0};
      gp_type_print(&tb, f);
      gp_error_set(GP_ERR_UNSUPPORTED, "%s: result %d has type %s, which is not a static tensor type", op->name,
                   (int)j, tb.data ? tb.data : "?");
      gp_buf_free(&tb);
      goto fail_out;
    }
    outputs[j] = gp_tensor_alloc(f->tensor.dtype, f->n, f->tensor.shape, true);
    if (!outputs[j]) goto fail_out;
    *nout = j + 1;
  }
  {
    const DLTensor *in_small[16];
    DLTensor *out_dl[MAX_OUT];
    const DLTensor **in_dl = nin > 16 ? gp_malloc((size_t)nin * sizeof *in_dl) : in_small;
    for (int32_t i = 0; i < nin; i++) in_dl[i] = &inputs[i]->dl;
    for (int32_t j = 0; j < nf; j++) out_dl[j] = &outputs[j]->dl;
    GPKernelArgs ka = {
        .struct_size = sizeof ka,
        .abi_version = GP_ABI_VERSION,
        .num_threads = num_threads > 0 ? num_threads : 1,
        .op = op,
        .attrs = attrs,
        .num_inputs = nin,
        .num_outputs = nf,
        .inputs = in_dl,
        .outputs = out_dl,
    };
    bool storage = false;
    for (int32_t i = 0; i < nin; i++) storage |= is_storage(inputs[i]) || misaligned(inputs[i]);
    for (int32_t j = 0; j < nf; j++) storage |= is_storage(outputs[j]);
    int krc = storage ? run_storage(kernel, user, &ka, inputs, outputs) : kernel(&ka, user);
    if (in_dl != in_small) gp_free(in_dl);
    if (krc != 0) {
      if (!gp_error_kind()) gp_error_set(GP_ERR_INTERNAL, "kernel failed without a message");
      gp_error_prefix("%s", op->name);
      goto fail_out;
    }
  }
  *out_type = out;
  rc = 0;
  goto done;
fail_out:
  for (int32_t j = 0; j < *nout; j++) gp_release(outputs[j]);
  *nout = 0;
done:
  if (types != small) gp_free(types);
  return rc;
}

GPExpr *gp_eval_call(const GPCall *call) {
  if (!call || gp_kind(call) != GP_TI_CALL || gp_kind(call->op) != GP_TI_OP) {
    gp_error_set(GP_ERR_VALUE, "eval_call: not a call of an op");
    return NULL;
  }
  const GPOp *op = (const GPOp *)call->op;
  int32_t nargs = call->nargs, nin = 0, cap = 16;
  const GPType *tsmall[16];
  const GPType **types = nargs > 16 ? gp_malloc((size_t)nargs * sizeof *types) : tsmall;
  GPTensor **ins = gp_malloc((size_t)cap * sizeof *ins);
  GPExpr *result = NULL;
  for (int32_t i = 0; i < nargs; i++) {
    GPExpr *a = call->args[i];
    if (gp_kind(a) == GP_TI_CONSTANT) {
      if (nin == cap) ins = gp_realloc(ins, (size_t)(cap *= 2) * sizeof *ins);
      ins[nin++] = GP_AS(GPConstant, a)->data;
      types[i] = NULL;
    } else if (gp_kind(a) == GP_TI_TUPLE) {
      GPTuple *t = GP_AS(GPTuple, a);
      const GPType *fs[GP_K_MAX_RANK];
      if (t->n > GP_K_MAX_RANK) {
        gp_error_set(GP_ERR_UNSUPPORTED, "%s: a tuple argument of %d fields (at most %d)", op->name, (int)t->n,
                     GP_K_MAX_RANK);
        goto done;
      }
      for (int32_t j = 0; j < t->n; j++) {
        if (gp_kind(t->fields[j]) != GP_TI_CONSTANT) {
          gp_error_set(GP_ERR_VALUE, "%s: argument %d field %d is not a constant", op->name, (int)i, (int)j);
          goto done;
        }
        GPTensor *d = GP_AS(GPConstant, t->fields[j])->data;
        if (nin == cap) ins = gp_realloc(ins, (size_t)(cap *= 2) * sizeof *ins);
        ins[nin++] = d;
        fs[j] = gp_tensor_type(d);
        if (!fs[j]) goto done;
      }
      types[i] = gp_type_tuple(t->n, fs);
      if (!types[i]) goto done;
    } else {
      gp_error_set(GP_ERR_VALUE, "%s: argument %d is a %s, not a constant", op->name, (int)i, gp_expr_kind_name(a));
      goto done;
    }
  }
  {
    GPTensor *outs[MAX_OUT];
    const GPType *out_type = NULL;
    int32_t nout = 0;
    if (gp_eval_op(op, call->attrs, nargs, types, nin, ins, gp_eval_default_threads(), &out_type, outs, MAX_OUT,
                   &nout) != 0)
      goto done;
    /* FoldConstant has read these constants into a new one: those that view a model file give
     * their resident pages back (they fault in again if read later). */
    for (int32_t i = 0; i < nin; i++) gp_tensor_drop_pages(ins[i]);
    GPExpr *cs[MAX_OUT];
    for (int32_t j = 0; j < nout; j++) {
      GPConstant *c = gp_constant_new(outs[j]); /* typed from its tensor */
      gp_release(outs[j]);
      if (!c) { /* cannot happen for a kernel's output; leave nothing behind */
        for (int32_t k = 0; k < j; k++) gp_release(cs[k]);
        for (int32_t k = j + 1; k < nout; k++) gp_release(outs[k]);
        goto done;
      }
      c->base.line = call->base.line; /* fresh and not shared yet: located in place, not copied */
      c->base.col = call->base.col;
      cs[j] = &c->base;
    }
    if (out_type->kind == GP_TYPE_TUPLE) {
      GPTuple *t = gp_tuple_new(nout, cs);
      for (int32_t j = 0; j < nout; j++) gp_release(cs[j]);
      if (!t) goto done;
      result = gp_expr_annotate(&t->base, out_type, call->base.line, call->base.col);
      gp_release(t);
    } else {
      result = cs[0];
    }
  }
done:
  if (types != tsmall) gp_free(types);
  gp_free(ins);
  return result;
}
