/* target.c -- target `opu`: the ops the accelerator has kernels for, registered twice over:
 * as the target's kernel list (GPHostAPI.target_register; `graphpass targets` lists them) and as
 * a `target.opu` op attribute on each op, a predicate (TVM's FTVMAnnotateTarget) that
 * AnnotateTarget calls with the typed call; it accepts only the shapes, layouts and dtypes the
 * accelerator runs, so anything else of a supported op stays on the host.
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

#include <stdio.h>
#include <string.h>

#define H opu_host

typedef bool (*CheckFn)(const GPCall *c);

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

/* every argument (tuple fields included) and the result float32 tensors of static shapes */
static bool all_f32(const GPCall *c) {
  if (!is_f32_tensor(c->base.checked_type)) return false;
  for (int32_t i = 0; i < c->nargs; i++) {
    const GPType *t = c->args[i]->checked_type;
    if (t && t->kind == GP_TYPE_TUPLE) {
      for (int32_t k = 0; k < t->n; k++)
        if (!is_f32_tensor(t->tuple.fields[k])) return false;
    } else if (!is_f32_tensor(t)) {
      return false;
    }
  }
  return true;
}

static const char *attr_str(const GPCall *c, const char *key) {
  const GPAttrValue *v = c->attrs ? H->attrs_get(c->attrs, key) : NULL;
  return v && v->kind == GP_ATTR_STR ? v->s : NULL;
}

static bool str_is(const char *s, const char *want) { return s && strcmp(s, want) == 0; }

static bool check_conv2d(const GPCall *c) {
  if (!all_f32(c) || c->nargs != 2) return false;
  if (!str_is(attr_str(c, "data_layout"), "NCHW") || !str_is(attr_str(c, "kernel_layout"), "OIHW")) return false;
  const char *ol = attr_str(c, "out_layout");
  if (ol && ol[0] && strcmp(ol, "NCHW") != 0) return false;
  const GPAttrValue *od = H->attrs_get(c->attrs, "out_dtype");
  if (od && od->kind == GP_ATTR_DTYPE && od->dtype.bits != 0 && !(od->dtype.code == kDLFloat && od->dtype.bits == 32))
    return false;
  char why[256];
  return c->args[1]->obj.type_index == GP_TI_CONSTANT && opu_window_ok(c, true, why, sizeof why) == 0;
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

static bool check_add(const GPCall *c) {
  if (!all_f32(c) || c->nargs != 2) return false;
  const GPType *out = c->base.checked_type;
  if (per_channel_const(c->args[1], out) && same_shape(c->args[0]->checked_type, out)) return true;
  if (per_channel_const(c->args[0], out) && same_shape(c->args[1]->checked_type, out)) return true;
  /* two activations: a constant of the output's shape (a folded full) is not one */
  return c->args[0]->obj.type_index != GP_TI_CONSTANT && c->args[1]->obj.type_index != GP_TI_CONSTANT &&
         same_shape(c->args[0]->checked_type, out) && same_shape(c->args[1]->checked_type, out);
}

static bool check_multiply(const GPCall *c) {
  if (!all_f32(c) || c->nargs != 2) return false;
  const GPType *out = c->base.checked_type;
  return (per_channel_const(c->args[1], out) && same_shape(c->args[0]->checked_type, out)) ||
         (per_channel_const(c->args[0], out) && same_shape(c->args[1]->checked_type, out));
}

static bool check_pool(const GPCall *c) {
  char why[256];
  return all_f32(c) && str_is(attr_str(c, "layout"), "NCHW") && opu_window_ok(c, false, why, sizeof why) == 0;
}

static bool check_global_pool(const GPCall *c) { return all_f32(c) && str_is(attr_str(c, "layout"), "NCHW"); }

static bool check_concat(const GPCall *c) {
  if (!all_f32(c) || c->base.checked_type->n != 4) return false;
  const GPAttrValue *a = H->attrs_get(c->attrs, "axis");
  return a && a->kind == GP_ATTR_INT && (a->i == 1 || a->i == -3);
}

static bool check_pad(const GPCall *c) {
  char why[256];
  return all_f32(c) && c->nargs == 2 && opu_pad_ok(c, why, sizeof why) == 0;
}

static bool check_any_f32(const GPCall *c) { return all_f32(c); }

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

/* target.opu: [call] -> bool */
static int predicate(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  const Kernel *k = self;
  if (nargs != 1 || args[0].type_index != GP_TI_CALL || !args[0].v_obj) {
    H->error_set(GP_ERR_VALUE, "target.opu predicate of %s: expected one call", k->op);
    return -1;
  }
  const GPCall *c = (const GPCall *)args[0].v_obj;
  bool ok = c->base.checked_type != NULL;
  for (int32_t i = 0; ok && i < c->nargs; i++) ok = c->args[i]->checked_type != NULL;
  result->type_index = GP_TI_BOOL;
  result->v_int64 = ok && k->check(c);
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
