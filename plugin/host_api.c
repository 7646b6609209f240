/*
 * host_api.c -- the host table: the ABI's view of the host library.  graphpass_host_api() is
 * the only symbol libgraphpass.so exports.
 */
#include "../ffi/bridge.h"
#include "../eval/eval.h"
#include "../frontend/onnx/onnx.h"
#include "../ir/ir.h"
#include "../ir/pattern.h"
#include "../registry/registry.h"
#include "plugin.h"

#include <stdlib.h>
#include <string.h>

/* ---- adapters: ABI int flags vs internal bool, argument order, ops init */

static GPTensor *h_tensor_alloc(DLDataType dtype, int32_t ndim, const int64_t *shape,
                                int with_data) {
  return gp_tensor_alloc(dtype, ndim, shape, with_data != 0);
}

static GPAttrs *h_op_attrs_new(const GPOp *op, int32_t n, const char *const *keys,
                               const GPAttrValue *values) {
  gp_ops_init();
  return gp_op_attrs_new(op, n, keys, values);
}

static const GPOp *h_op_get(const char *name) {
  gp_ops_init();
  return gp_op_get(name);
}

static const GPOp *h_op_register(const GPOpDef *def, int allow_override) {
  gp_ops_init();
  return gp_op_register(def, allow_override != 0);
}

static int h_module_add(GPModule *mod, const char *name, GPFunctionExpr *fn, int allow_override) {
  return gp_module_add(mod, name, fn, allow_override != 0);
}

static GPModule *h_infer_types(const GPModule *mod) {
  gp_ops_init();
  return gp_infer_types(mod);
}

static GPModule *h_parse(const char *text, size_t len, const char *source_name) {
  gp_ops_init();
  return gp_parse(text, len, source_name);
}

static int h_structural_equal(const GPModule *a, const GPModule *b) {
  return gp_module_equal(a, b) ? 1 : 0;
}

static int h_pass_register(const GPPassInfo *info, int allow_override) {
  const char *origin = gp_registry_origin();
  return gp_pass_register(info, allow_override != 0, origin ? origin : "host");
}

static int h_target_register(const GPTargetInfo *info, int allow_override) {
  const char *origin = gp_registry_origin();
  return gp_target_register(info, allow_override != 0, origin ? origin : "host");
}

static int32_t h_ctx_opt_level(const GPPassContext *ctx) { return ctx ? ctx->opt_level : 2; }

static const char *h_ctx_target(const GPPassContext *ctx) { return ctx ? ctx->target : NULL; }

static GPModule *h_run_pipeline(const GPModule *mod, const char *pipeline, GPPassContext *ctx) {
  gp_ops_init();
  return gp_run_pipeline(mod, pipeline, ctx);
}

static void *h_ffi_closure(GPPackedFunc *f, const char *signature, void **out_handle) {
  GPFfiClosure *h = NULL;
  void *code = gp_ffi_closure(f, signature, out_handle ? &h : NULL);
  if (out_handle) *out_handle = h;
  return code;
}

static void h_ffi_closure_free(void *handle) { gp_ffi_closure_free(handle); }

static int h_op_set_kernel(const GPOp *op, GPOpKernelFn kernel, void *user) {
  gp_ops_init();
  return gp_op_set_kernel_from(op, kernel, user, gp_registry_origin());
}

static GPExpr *h_eval_call(const GPCall *call) {
  gp_ops_init();
  return gp_eval_call(call);
}

static int h_eval_function(const GPModule *mod, const char *name, int32_t num_inputs,
                           GPTensor *const *inputs, GPTensor ***outputs, int32_t *num_outputs,
                           GPEvalOptions *opts) {
  gp_ops_init();
  return gp_eval_function(mod, name, num_inputs, inputs, outputs, num_outputs, opts);
}

static GPTensor *h_tensor_read(const char *path) {
  gp_ops_init();
  if (!path) {
    gp_error_set(GP_ERR_VALUE, "tensor_read: path is NULL");
    return NULL;
  }
  size_t n = strlen(path);
  if (n >= 3 && strcmp(path + n - 3, ".pb") == 0) return gp_onnx_read_tensor_file(path, NULL);
  return gp_npy_read(path);
}

static int h_expr_may_call(const GPExpr *e, const GPOp *op) {
  if (!e || !op || !gp_is_expr(e) || gp_kind(op) != GP_TI_OP) return 0;
  return gp_expr_may_call(e, op);
}

static int h_expr_has_kind(const GPExpr *e, int32_t type_index) {
  if (!e || !gp_is_expr(e) || type_index < GP_TI_VAR || type_index >= GP_TI_IR_END) return 0;
  return gp_expr_has_kind(e, type_index);
}

static int h_expr_has_constant_call(const GPExpr *e) {
  if (!e || !gp_is_expr(e)) return 0;
  return (gp_expr_summary(e) & GP_SUM_CONST_CALL) != 0;
}

/* A GPExprIndex is the public view of a host node index. */
typedef struct ExprIndex {
  GPExprIndex pub;
  const GPNodeIndex *ni; /* shared (gp_ni_acquire) */
} ExprIndex;

static GPExprIndex *h_expr_index_new(GPExpr *root) {
  ExprIndex *x = gp_calloc(1, sizeof *x);
  if (!root || !gp_is_expr(root)) {
    gp_free(x);
    gp_error_set(GP_ERR_VALUE, "expr_index_new: root is not an expression");
    return NULL;
  }
  if (!(x->ni = gp_ni_acquire(root))) {
    gp_free(x);
    return NULL;
  }
  x->pub = (GPExprIndex){.struct_size = sizeof(GPExprIndex),
                         .abi_version = GP_ABI_VERSION,
                         .num_nodes = x->ni->n,
                         .nodes = x->ni->nodes,
                         .kid_offsets = x->ni->kid_off,
                         .kids = x->ni->kids,
                         .tags = x->ni->tag};
  return &x->pub;
}

static void h_expr_index_free(GPExprIndex *index) {
  if (!index) return;
  ExprIndex *x = (ExprIndex *)index;
  gp_ni_release(x->ni);
  gp_free(x);
}

static GPExpr *h_rewrite_indexed(const GPExprIndex *index, GPRewriteIdFn fn, void *user) {
  if (!index) {
    gp_error_set(GP_ERR_VALUE, "rewrite_indexed: NULL index");
    return NULL;
  }
  return gp_rewrite_indexed(((const ExprIndex *)index)->ni, fn, user);
}

/* eval_random_inputs (any_dim 0: every dim static) and eval_random_inputs_filled. */
static int random_inputs(const char *what, const GPModule *mod, const char *name, uint64_t seed, int64_t any_dim,
                         GPTensor ***inputs, int32_t *num_inputs) {
  gp_ops_init();
  if (!mod || !inputs || !num_inputs) {
    gp_error_set(GP_ERR_VALUE, "%s: mod, inputs and num_inputs must not be NULL", what);
    return -1;
  }
  *inputs = NULL;
  *num_inputs = 0;
  GPTensor **ins = NULL;
  int32_t n = 0;
  if ((any_dim ? gp_eval_random_inputs_shaped(mod, name, seed, NULL, 0, any_dim, &ins, &n)
               : gp_eval_random_inputs(mod, name, seed, &ins, &n)) != 0)
    return -1;
  /* the table promises a block freed with `free` */
  GPTensor **out = malloc((size_t)(n ? n : 1) * sizeof *out);
  if (!out) {
    for (int32_t i = 0; i < n; i++) gp_release(ins[i]);
    gp_free(ins);
    gp_error_set(GP_ERR_MEMORY, "%s: out of memory", what);
    return -1;
  }
  for (int32_t i = 0; i < n; i++) out[i] = ins[i];
  gp_free(ins);
  *inputs = out;
  *num_inputs = n;
  return 0;
}

static int h_eval_random_inputs(const GPModule *mod, const char *name, uint64_t seed, GPTensor ***inputs,
                                int32_t *num_inputs) {
  return random_inputs("eval_random_inputs", mod, name, seed, 0, inputs, num_inputs);
}

static int h_eval_random_inputs_filled(const GPModule *mod, const char *name, uint64_t seed, int64_t any_dim,
                                       GPTensor ***inputs, int32_t *num_inputs) {
  if (any_dim < 1) {
    gp_error_set(GP_ERR_VALUE, "eval_random_inputs_filled: any_dim must be >= 1, got %lld", (long long)any_dim);
    return -1;
  }
  return random_inputs("eval_random_inputs_filled", mod, name, seed, any_dim, inputs, num_inputs);
}

static DLManagedTensor *h_tensor_to_dlpack(GPTensor *t) {
  gp_ops_init();
  return gp_tensor_to_dlpack(t);
}

static int h_op_set_attr(const GPOp *op, const char *key, const GPAny *value, int32_t plevel) {
  gp_ops_init();
  return gp_op_set_attr_from(op, key, value, plevel, gp_registry_origin());
}

static int h_op_get_attr(const GPOp *op, const char *key, GPAny *out) {
  gp_ops_init();
  return gp_op_get_attr(op, key, out);
}

static GPPatternTable *h_pattern_table_read(const char *path) {
  gp_ops_init();
  return gp_pattern_table_read(path);
}

/* ---- 1.3: packed passes */

static int packed_pass_call(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  GPPackedFunc *f = self;
  return f->call(f->self, args, nargs, result);
}

static void packed_pass_release(void *self) { gp_release(self); }

static int h_pass_register_packed(const GPPassInfo *info, GPPackedFunc *f, int allow_override) {
  if (!info || !f) {
    gp_error_set(GP_ERR_VALUE, "pass_register_packed: NULL %s", info ? "function" : "pass info");
    return -1;
  }
  const char *name = info->struct_size >= GP_STRUCT_SIZE(GPPassInfo, name) && info->name ? info->name : "(null)";
  if (f->obj.type_index != GP_TI_FUNCTION || !f->call) {
    gp_error_set(GP_ERR_VALUE, "pass_register_packed: pass %s: the function is not a GPPackedFunc", name);
    return -1;
  }
  GPPassInfo in = {0};
  memcpy(&in, info, info->struct_size < sizeof in ? info->struct_size : sizeof in);
  if (in.func || in.self || in.self_deleter) {
    gp_error_set(GP_ERR_VALUE, "pass_register_packed: pass %s: func, self and self_deleter must be NULL (the packed "
                 "function is the pass)", name);
    return -1;
  }
  in.func = packed_pass_call;
  in.self = gp_retain(f);
  in.self_deleter = packed_pass_release;
  const char *origin = gp_registry_origin();
  if (gp_pass_register(&in, allow_override != 0, origin ? origin : "host") != 0) {
    gp_release(f); /* the registry did not take it */
    return -1;
  }
  return 0;
}

static GPModule *h_onnx_import(const void *data, size_t size, const char *path,
                               const GPOnnxImportOptions *opts) {
  gp_ops_init();
  if (!data && !path) {
    gp_error_set(GP_ERR_VALUE, "onnx_import: neither data nor a path");
    return NULL;
  }
  GPOnnxOptions o = {0};
  GPOnnxShape *shapes = NULL;
  if (opts) {
    if (GP_ABI_MAJOR_OF(opts->abi_version) != GP_ABI_VERSION_MAJOR ||
        opts->struct_size < GP_STRUCT_SIZE(GPOnnxImportOptions, shape_dims)) {
      gp_error_set(GP_ERR_VERSION, "onnx_import: GPOnnxImportOptions of ABI %u.%u with struct_size %zu "
                   "(smaller than the ABI 1.3 size %zu, or another major)",
                   GP_ABI_MAJOR_OF(opts->abi_version), GP_ABI_MINOR_OF(opts->abi_version), opts->struct_size,
                   GP_STRUCT_SIZE(GPOnnxImportOptions, shape_dims));
      return NULL;
    }
    if (opts->num_shapes < 0 ||
        (opts->num_shapes > 0 && (!opts->shape_names || !opts->shape_ndims || !opts->shape_dims))) {
      gp_error_set(GP_ERR_VALUE, "onnx_import: num_shapes %d without its names, ranks and dims",
                   (int)opts->num_shapes);
      return NULL;
    }
    if (opts->num_shapes > 0) {
      shapes = gp_malloc((size_t)opts->num_shapes * sizeof *shapes);
      for (int32_t i = 0; i < opts->num_shapes; i++) {
        const char *bad = !opts->shape_names[i] ? "no name"
                          : opts->shape_ndims[i] < 0 ? "a negative rank"
                          : opts->shape_ndims[i] > 0 && !opts->shape_dims[i] ? "no dims" : NULL;
        for (int32_t d = 0; !bad && d < opts->shape_ndims[i]; d++)
          if (opts->shape_dims[i][d] < 0) bad = "a negative dim";
        if (bad) {
          gp_error_set(GP_ERR_VALUE, "onnx_import: shape %d (%s) has %s", (int)i,
                       opts->shape_names[i] ? opts->shape_names[i] : "?", bad);
          gp_free(shapes);
          return NULL;
        }
        shapes[i] = (GPOnnxShape){opts->shape_names[i], opts->shape_ndims[i], opts->shape_dims[i]};
      }
      o.nshapes = opts->num_shapes;
      o.shapes = shapes;
    }
  }
  GPModule *m = data ? gp_onnx_import(data, size, path, &o) : gp_onnx_import_file(path, &o);
  gp_free(shapes);
  return m;
}

static void *h_object_retain(void *obj) { return gp_retain(obj); }

static void h_object_release(void *obj) { gp_release(obj); }

static const GPHostAPI k_host_api = {
    .struct_size = sizeof(GPHostAPI),
    .abi_version = GP_ABI_VERSION,

    .error_set = gp_error_set,
    .error_kind = gp_error_kind,
    .error_message = gp_error_message,
    .error_clear = gp_error_clear,

    .alloc = gp_malloc,
    .free = gp_free,

    .string_new = gp_string_new,
    .func_new = gp_func_new,
    .any_clear = gp_any_clear,

    .type_tensor = gp_type_tensor,
    .type_tuple = gp_type_tuple,
    .type_func = gp_type_func,

    .tensor_from_dlpack = gp_tensor_from_dlpack,
    .tensor_alloc = h_tensor_alloc,

    .attrs_new = gp_attrs_new,
    .op_attrs_new = h_op_attrs_new,
    .attrs_get = gp_attrs_get,

    .op_get = h_op_get,
    .op_register = h_op_register,

    .var_new = gp_var_new,
    .global_var_new = gp_global_var_new,
    .constant_new = gp_constant_new,
    .call_new = gp_call_new,
    .tuple_new = gp_tuple_new,
    .tuple_get_item_new = gp_tuple_get_item_new,
    .function_new = gp_function_new,
    .let_new = gp_let_new,
    .if_new = gp_if_new,
    .expr_annotate = gp_expr_annotate,

    .post_order = gp_post_order,
    .rewrite = gp_rewrite,

    .module_new = gp_module_new,
    .module_add = h_module_add,
    .module_lookup = gp_module_lookup,
    .module_copy = gp_module_copy,

    .infer_types = h_infer_types,
    .verify = gp_verify,
    .parse = h_parse,
    .print = gp_print,
    .structural_equal = h_structural_equal,
    .structural_hash = gp_module_hash,

    .pass_register = h_pass_register,
    .pass_unregister = gp_pass_unregister,
    .opt_set_register = gp_opt_set_register,

    .ctx_new = gp_ctx_new,
    .ctx_free = gp_ctx_free,
    .ctx_opt_level = h_ctx_opt_level,
    .ctx_target = h_ctx_target,
    .ctx_set_opt_level = gp_ctx_set_opt_level,
    .ctx_set_target = gp_ctx_set_target,
    .ctx_set_config = gp_ctx_set_config,
    .ctx_get_config = gp_ctx_get_config,
    .ctx_disable = gp_ctx_disable,
    .ctx_require = gp_ctx_require,

    .run_pipeline = h_run_pipeline,

    .plugin_load = gp_plugin_load,

    .ffi_wrap = gp_ffi_wrap,
    .ffi_closure = h_ffi_closure,
    .ffi_closure_free = h_ffi_closure_free,

    .op_set_kernel = h_op_set_kernel,
    .eval_call = h_eval_call,
    .op_set_attr = h_op_set_attr,
    .op_get_attr = h_op_get_attr,
    .func_register = gp_func_register,
    .func_get = gp_func_get,
    .eval_function = h_eval_function,
    .tensor_to_dlpack = h_tensor_to_dlpack,
    .ctx_note = gp_ctx_note,

    .pattern_compile = gp_pattern_compile,
    .pattern_match = gp_pattern_match,
    .pattern_rewrite = gp_pattern_rewrite,
    .pattern_table_new = gp_pattern_table_new,
    .pattern_table_read = h_pattern_table_read,
    .pattern_table_register = gp_pattern_table_register,
    .pattern_table_get = gp_pattern_table_get,
    .target_register = h_target_register,
    .target_unregister = gp_target_unregister,
    .target_has_kernel = gp_target_has_kernel,
    .target_list = gp_target_names,

    .plugin_unload = gp_plugin_unload,

    .opt_set_get = gp_opt_set_get,
    .opt_set_list = gp_opt_set_list,
    .ctx_set_opt_set = gp_ctx_set_opt_set,

    .ctx_instrument_register = gp_ctx_instrument_register,
    .ctx_instrument_unregister = gp_ctx_instrument_unregister,
    .plugins_load_default = gp_plugins_load_default,
    .pass_register_packed = h_pass_register_packed,
    .pass_list = gp_pass_list_text,
    .onnx_import = h_onnx_import,
    .object_retain = h_object_retain,
    .object_release = h_object_release,
    .ctx_set_check_immutable = gp_ctx_set_check_immutable,
    /* ABI 1.3 */
    .tensor_drop_pages = gp_tensor_drop_pages,
    .plugin_require = gp_plugin_require,
    .tensor_read = h_tensor_read,
    .eval_random_inputs = h_eval_random_inputs,
    .expr_may_call = h_expr_may_call,
    .expr_has_kind = h_expr_has_kind,
    .op_list_with_attr = gp_op_list_with_attr,
    .expr_index_new = h_expr_index_new,
    .expr_index_free = h_expr_index_free,
    .rewrite_indexed = h_rewrite_indexed,
    .rewrite_keep = gp_rewrite_keep,
    .eval_random_inputs_filled = h_eval_random_inputs_filled,
    .expr_has_constant_call = h_expr_has_constant_call,
};

const GPHostAPI *gp_host_api(void) {
  gp_ops_init();
  return &k_host_api;
}

GP_EXPORT const GPHostAPI *graphpass_host_api(void) {
  gp_ops_init();
  return &k_host_api;
}
