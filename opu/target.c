/* target.c -- target `opu`: the ops the accelerator has kernels for, registered twice over:
 * as the target's kernel list (GPHostAPI.target_register; `graphpass targets` lists them) and as
 * a `target.opu` op attribute on each op, a predicate (TVM's FTVMAnnotateTarget) that
 * AnnotateTarget calls with the typed call; it accepts only the shapes, layouts and dtypes the
 * accelerator runs, so anything else of a supported op stays on the host, and says why (a
 * string, from a 1.6 host on; --explain shows it).
 *
 * What the accelerator runs (every tensor float32 of a static shape before quantization, every
 * call typed; a dynamic batch stays on the host):
 *  - nn.conv2d: NCHW data, OIHW weight that is a constant, out_layout "" or NCHW, out_dtype
 *    unset or float32, any groups (depthwise included), kernel and strides up to 64, padding
 *    below the kernel, dilation 1, at most 32768 taps per output (opu_window_ok);
 *  - add: two activations (not constants) of the output's shape (residual add), or an
 *    activation and a constant that is a scalar or varies only along the channel axis 1 of the
 *    output ((C, 1, 1) or (1, C, 1, 1) on NCHW, (C) on (N, C): a bias); multiply: an activation
 *    and such a constant;
 *  - nn.relu, clip: any shape;
 *  - nn.max_pool2d, nn.avg_pool2d: NCHW, window and strides up to 64, padding below the window,
 *    dilation 1; nn.global_avg_pool2d: NCHW;
 *  - concatenate: 4-d, on the channel axis (1 or -3);
 *  - nn.pad: constant mode, 4-d, the batch axis not padded, pads up to 65535, a constant
 *    float32 scalar pad value (opu_pad_ok);
 *  - reshape, nn.batch_flatten: any.
 * nn.dense is not a kernel: Peephole turns a dense of at most 2048 input features into a 1x1
 * conv2d between reshapes; a larger one stays on the host. */
#include "opu.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define H opu_host

/* true, or false with the reason in why (n bytes) */
typedef bool (*CheckFn)(const GPCall *c, char *why, size_t n);

/* A float32 tensor of a static shape: the instruction stream has every size in it, so a `?`
 * dim (a dynamic batch) keeps its call on the host. */
static bool is_f32_tensor(const GPType *t) {
  if (!t || t->kind != GP_TYPE_TENSOR || t->tensor.dtype.code != kDLFloat || t->tensor.dtype.bits != 32 ||
      t->tensor.dtype.lanes != 1)
    return false;
  for (int32_t i = 0; i < t->n; i++)
    if (t->tensor.shape[i] < 0) return false;
  return true;
}

/* why t (the result, or argument i) is not a float32 tensor of a static shape */
static void f32_why(const GPType *t, int32_t i, char *why, size_t n) {
  char what[32];
  if (i < 0) snprintf(what, sizeof what, "its result");
  else snprintf(what, sizeof what, "argument %d", (int)i);
  if (!t || t->kind != GP_TYPE_TENSOR) {
    snprintf(why, n, "%s is not a tensor", what);
  } else if (t->tensor.dtype.code != kDLFloat || t->tensor.dtype.bits != 32 || t->tensor.dtype.lanes != 1) {
    snprintf(why, n, "%s is %s%d%s, not float32", what,
             t->tensor.dtype.code == kDLFloat ? "float" : t->tensor.dtype.code == kDLUInt ? "uint"
             : t->tensor.dtype.code == kDLInt ? "int" : t->tensor.dtype.code == kDLBfloat ? "bfloat" : "dtype code ",
             (int)t->tensor.dtype.bits, t->tensor.dtype.lanes != 1 ? " (vector lanes)" : "");
  } else {
    snprintf(why, n, "%s has a dynamic dim (the instruction stream needs every size)", what);
  }
}

/* every argument (tuple fields included) and the result float32 tensors of static shapes; else
 * false and why */
static bool all_f32(const GPCall *c, char *why, size_t n) {
  if (!is_f32_tensor(c->base.checked_type)) {
    f32_why(c->base.checked_type, -1, why, n);
    return false;
  }
  for (int32_t i = 0; i < c->nargs; i++) {
    const GPType *t = c->args[i]->checked_type;
    if (t && t->kind == GP_TYPE_TUPLE) {
      for (int32_t k = 0; k < t->n; k++)
        if (!is_f32_tensor(t->tuple.fields[k])) {
          f32_why(t->tuple.fields[k], i, why, n);
          return false;
        }
    } else if (!is_f32_tensor(t)) {
      f32_why(t, i, why, n);
      return false;
    }
  }
  return true;
}

/* false with why */
static bool refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool refuse(char *why, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, n, fmt, ap);
  va_end(ap);
  return false;
}

static const char *attr_str(const GPCall *c, const char *key) {
  const GPAttrValue *v = c->attrs ? H->attrs_get(c->attrs, key) : NULL;
  return v && v->kind == GP_ATTR_STR ? v->s : NULL;
}

static bool str_is(const char *s, const char *want) { return s && strcmp(s, want) == 0; }

static bool check_conv2d(const GPCall *c, char *why, size_t n) {
  if (!all_f32(c, why, n)) return false;
  if (c->nargs != 2) return refuse(why, n, "%d arguments", (int)c->nargs);
  const char *dl = attr_str(c, "data_layout"), *kl = attr_str(c, "kernel_layout"), *ol = attr_str(c, "out_layout");
  if (!str_is(dl, "NCHW") || !str_is(kl, "OIHW"))
    return refuse(why, n, "layouts %s / %s, not NCHW / OIHW", dl ? dl : "(none)", kl ? kl : "(none)");
  if (ol && ol[0] && strcmp(ol, "NCHW") != 0) return refuse(why, n, "out_layout %s, not NCHW", ol);
  const GPAttrValue *od = H->attrs_get(c->attrs, "out_dtype");
  if (od && od->kind == GP_ATTR_DTYPE && od->dtype.bits != 0 && !(od->dtype.code == kDLFloat && od->dtype.bits == 32))
    return refuse(why, n, "out_dtype is not float32");
  if (c->args[1]->obj.type_index != GP_TI_CONSTANT) return refuse(why, n, "the weight is not a constant");
  return opu_window_ok(c, true, why, n) == 0;
}

/* a constant that is a scalar, or varies only along the channel axis 1 of the output (rank >= 2):
 * (C, 1, 1) / (1, C, 1, 1) on (N, C, H, W), (C) / (1, C) on (N, C) -- broadcast onto the output
 * without growing it */
static bool per_channel_const(const GPExpr *e, const GPType *out) {
  if (e->obj.type_index != GP_TI_CONSTANT || !is_f32_tensor(e->checked_type)) return false;
  const GPType *t = e->checked_type;
  if (t->n > out->n) return false;
  for (int32_t i = 0; i < t->n; i++) {
    int32_t axis = out->n - t->n + i;
    int64_t d = t->tensor.shape[i];
    if (d != 1 && (axis != 1 || d != out->tensor.shape[1])) return false;
  }
  return true;
}

static bool same_shape(const GPType *a, const GPType *b) {
  if (a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++)
    if (a->tensor.shape[i] != b->tensor.shape[i]) return false;
  return true;
}

static bool check_add(const GPCall *c, char *why, size_t n) {
  if (!all_f32(c, why, n)) return false;
  if (c->nargs != 2) return refuse(why, n, "%d arguments", (int)c->nargs);
  const GPType *out = c->base.checked_type;
  if (per_channel_const(c->args[1], out) && same_shape(c->args[0]->checked_type, out)) return true;
  if (per_channel_const(c->args[0], out) && same_shape(c->args[1]->checked_type, out)) return true;
  /* two activations: a constant of the output's shape (a folded full) is not one */
  if (c->args[0]->obj.type_index != GP_TI_CONSTANT && c->args[1]->obj.type_index != GP_TI_CONSTANT &&
      same_shape(c->args[0]->checked_type, out) && same_shape(c->args[1]->checked_type, out))
    return true;
  return refuse(why, n, "neither two activations of the result's shape nor an activation and a scalar or "
                        "per-channel constant");
}

static bool check_multiply(const GPCall *c, char *why, size_t n) {
  if (!all_f32(c, why, n)) return false;
  if (c->nargs != 2) return refuse(why, n, "%d arguments", (int)c->nargs);
  const GPType *out = c->base.checked_type;
  if ((per_channel_const(c->args[1], out) && same_shape(c->args[0]->checked_type, out)) ||
      (per_channel_const(c->args[0], out) && same_shape(c->args[1]->checked_type, out)))
    return true;
  return refuse(why, n, "not an activation times a scalar or per-channel constant");
}

static bool check_pool(const GPCall *c, char *why, size_t n) {
  if (!all_f32(c, why, n)) return false;
  const char *l = attr_str(c, "layout");
  if (!str_is(l, "NCHW")) return refuse(why, n, "layout %s, not NCHW", l ? l : "(none)");
  return opu_window_ok(c, false, why, n) == 0;
}

static bool check_global_pool(const GPCall *c, char *why, size_t n) {
  if (!all_f32(c, why, n)) return false;
  const char *l = attr_str(c, "layout");
  return str_is(l, "NCHW") || refuse(why, n, "layout %s, not NCHW", l ? l : "(none)");
}

static bool check_concat(const GPCall *c, char *why, size_t n) {
  if (!all_f32(c, why, n)) return false;
  if (c->base.checked_type->n != 4) return refuse(why, n, "a %d-d result, not 4-d", (int)c->base.checked_type->n);
  const GPAttrValue *a = H->attrs_get(c->attrs, "axis");
  if (a && a->kind == GP_ATTR_INT && (a->i == 1 || a->i == -3)) return true;
  return refuse(why, n, "not on the channel axis 1");
}

static bool check_pad(const GPCall *c, char *why, size_t n) {
  if (!all_f32(c, why, n)) return false;
  if (c->nargs != 2) return refuse(why, n, "%d arguments", (int)c->nargs);
  return opu_pad_ok(c, why, n) == 0;
}

static bool check_any_f32(const GPCall *c, char *why, size_t n) { return all_f32(c, why, n); }

typedef struct Kernel {
  const char *op;
  CheckFn check;
} Kernel;

static const Kernel k_kernels[] = {
    {"nn.conv2d", check_conv2d},       {"add", check_add},
    {"multiply", check_multiply},      {"nn.relu", check_any_f32},
    {"clip", check_any_f32},           {"nn.max_pool2d", check_pool},
    {"nn.avg_pool2d", check_pool},     {"nn.global_avg_pool2d", check_global_pool},
    {"concatenate", check_concat},     {"nn.pad", check_pad},
    {"reshape", check_any_f32},        {"nn.batch_flatten", check_any_f32},
};
#define N_KERNELS ((int32_t)(sizeof k_kernels / sizeof k_kernels[0]))

/* target.opu: [call] -> true, or (a 1.6 host) the reason it stays on the host as a string
 * (AnnotateTarget's --explain shows it), else false */
static int predicate(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  const Kernel *k = self;
  if (nargs != 1 || args[0].type_index != GP_TI_CALL || !args[0].v_obj) {
    H->error_set(GP_ERR_VALUE, "target.opu predicate of %s: expected one call", k->op);
    return -1;
  }
  const GPCall *c = (const GPCall *)args[0].v_obj;
  bool typed = c->base.checked_type != NULL;
  for (int32_t i = 0; typed && i < c->nargs; i++) typed = c->args[i]->checked_type != NULL;
  char why[256] = "";
  bool ok = typed ? k->check(c, why, sizeof why) : refuse(why, sizeof why, "untyped");
  result->type_index = GP_TI_BOOL;
  result->v_int64 = ok;
  if (!ok && GP_ABI_MINOR_OF(H->abi_version) >= 6 && why[0]) {
    GPString *s = H->string_new(why, strlen(why));
    if (!s) return -1;
    result->type_index = GP_TI_STR;
    result->v_obj = &s->obj;
  }
  return 0;
}

int opu_register_target(const GPHostAPI *host) {
  const char *names[N_KERNELS];
  for (int32_t i = 0; i < N_KERNELS; i++) names[i] = k_kernels[i].op;
  GPTargetInfo t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.abi_version = GP_ABI_VERSION;
  t.name = "opu";
  t.help = "OPU, an FPGA overlay processor: int8 convolutions, pooling, element-wise (the vendor plugin opu)";
  t.kernels = names;
  t.num_kernels = N_KERNELS;
  if (host->target_register(&t, 0) != 0) return -1;
  for (int32_t i = 0; i < N_KERNELS; i++) {
    const GPOp *op = host->op_get(k_kernels[i].op);
    if (!op) return -1;
    GPPackedFunc *f = host->func_new((void *)&k_kernels[i], predicate, NULL);
    if (!f) return -1;
    GPAny v = {.type_index = GP_TI_FUNCTION, .v_obj = &f->obj};
    int rc = host->op_set_attr(op, "target.opu", &v, 10);
    gp_release(f);
    if (rc != 0) return -1;
  }
  return 0;
}
