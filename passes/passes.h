/*
 * passes.h -- the internal header of the standard pass plugin (build/plugins/libgp_std.so).
 * The plugin reaches the host only through the GPHostAPI table it is handed at initialize;
 * it links nothing of the host library (only libc and libm).  Node fields are read directly
 * through the public layout of abi/graphpass.h.
 */
#ifndef GP_PASSES_H
#define GP_PASSES_H

#include "graphpass.h"
#include "../common/scratch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The host table, set once by the plugin's initialize (process lifetime). */
extern const GPHostAPI *gp_std_host;
#define H gp_std_host

/* ---- support.c: what every pass needs */

/* Buffers for the passes' arrays and tables: common/scratch.h (gp_scratch_*). */

/* Pointer-keyed open-addressing map (plugin-local; slots from gp_scratch_zalloc). */
typedef struct PMapSlot {
  const void *key;
  void *val;
} PMapSlot;
typedef struct PMap {
  PMapSlot *slots; /* key and value together: one cache line per probe */
  size_t len, cap;
} PMap;
void *pmap_get(const PMap *m, const void *key);
bool pmap_has(const PMap *m, const void *key);
void pmap_put(PMap *m, const void *key, void *val);
void pmap_free(PMap *m);

/* Nodes met again, keyed by source location (by the node itself when it has none: a rebuilt
 * node keeps its location), each with a mask of bits: a pass meeting a kept match again (the
 * next round of a fixed point, the driver's fixed-point probe) notes it once.  std_seen_mark
 * sets bit for e and returns whether it was set already. */
typedef struct StdSeen {
  PMap at_loc, at_node;
} StdSeen;
bool std_seen_mark(StdSeen *s, const GPExpr *e, uintptr_t bit);
void std_seen_free(StdSeen *s);

/* Per-op hooks (an op attribute holding a packed function: FTVMLegalize, FTVMAlterOpLayout),
 * looked up once per op and pass run.  std_hook_of: the hook (borrowed from the cache), NULL
 * when the op has none, or NULL + error (*err set) when the attribute is not a packed function
 * ("its <key> attribute is ..., not a packed function"). */
typedef struct StdHooks {
  const char *key; /* the op attribute */
  PMap cache;      /* op -> GPPackedFunc* (owned reference), or a mark for "none" */
} StdHooks;
GPPackedFunc *std_hook_of(StdHooks *h, const GPOp *op, bool *err);
void std_hooks_free(StdHooks *h);

static inline int32_t ekind(const void *e) { return ((const GPObject *)e)->type_index; }

/* Unpack the pass calling convention: args = [module, context]. */
int std_pass_args(const char *pass, const GPAny *args, int32_t nargs, GPModule **mod, GPPassContext **ctx);
/* Store a new module reference as the pass result. */
int std_return_module(GPAny *result, GPModule *mod);
bool std_config_bool(GPPassContext *ctx, const char *key, bool dflt);
const char *std_config_str(GPPassContext *ctx, const char *key, const char *dflt);
int64_t std_config_int(GPPassContext *ctx, const char *key, int64_t dflt);
/* A note for --explain / --stats (ctx_note), when there is a context and the host has the field;
 * at most 511 bytes. */
void std_note(GPPassContext *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- function_pass.c: function-level passes (TVM's CreateFunctionPass) */

/* Rewrite function `index` of the typed module `mod`: a new reference to the new function (or
 * the old one, retained, when nothing changed), or NULL + error. */
typedef GPExpr *(*StdFunctionRewrite)(void *user, const GPModule *mod, int32_t index);
/* Types `mod` when it is not typed, runs `run` on every function that TVM's
 * FunctionPassNode::SkipFunction keeps (skipped: a `Compiler` attribute, or SkipOptimization
 * != 0), re-types the result when something changed.  A new module reference (the typed
 * input when nothing changed) or NULL + error.  Never changes `mod`. */
GPModule *std_function_pass(const GPModule *mod, StdFunctionRewrite run, void *user);
/* As std_function_pass, and `*untyped` (when not NULL) is read after each run: false promises
 * that every node of the new function carries the checked type InferType would give it (e.g.
 * every result of the pass's rewrite callback was typed: see std_note_typed), so when that
 * holds for every rewritten function the re-typing is skipped. */
GPModule *std_function_pass_typed(const GPModule *mod, StdFunctionRewrite run, void *user, const bool *untyped);
/* GPHostAPI.rewrite_keep when the host has it (ABI 1.5), else NULL (set by initialize). */
extern GPExpr *gp_std_keep;
/* What a rewrite callback returns to keep `rebuilt`: the host's marker (no reference count
 * traffic on the node) or, from a 1.4 host, a new reference. */
static inline GPExpr *std_keep(GPExpr *rebuilt) { return gp_std_keep ? gp_std_keep : gp_retain(rebuilt); }
/* The node a callback's result r stands for: rebuilt when r is the marker, else r. */
static inline GPExpr *std_kept(GPExpr *r, GPExpr *rebuilt) { return r && r == gp_std_keep ? rebuilt : r; }
/* For a rewrite callback: returns r, setting *untyped when the node r stands for has no type. */
static inline GPExpr *std_note_typed(GPExpr *r, GPExpr *rebuilt, bool *untyped) {
  const GPExpr *x = std_kept(r, rebuilt);
  if (x && !x->checked_type && ((const GPObject *)x)->type_index != GP_TI_OP) *untyped = true;
  return r;
}
bool std_function_skipped(const GPFunctionExpr *fn);
/* Every function and its body carry a checked type. */
bool std_module_typed(const GPModule *m);
/* Subtree facts (GPHostAPI.expr_may_call / expr_has_kind, ABI 1.4), for skipping work: false
 * only when e certainly calls no op named op_name / holds no node of that kind; true when it
 * may. */
bool std_may_call(const GPExpr *e, const char *op_name);
bool std_has_kind(const GPExpr *e, int32_t type_index);
/* Whether e may call an op that has attribute key (a hook): true when the host cannot tell. */
bool std_may_call_attr(const GPExpr *e, const char *key);
/* "<source>:<line>:<col>" of a node (or "an unknown location"); returns buf. */
const char *std_where(const char *source, const GPExpr *e, char *buf, size_t n);
/* "a tuple", "an int", ... for a type index; std_describe_any adds the value of a POD. */
const char *std_kind_name(int32_t type_index);
void std_describe_any(const GPAny *v, char *buf, size_t n);
/* A check's or predicate's answer (a MergeComposite table's check, a target.<T> predicate): a
 * bool or an int (non-zero accepts), or from ABI 1.6 a string, which refuses and says why.
 * 1 accept; 0 refuse, with the reason in why (truncated to n - 1 bytes; "" for a false); -1
 * for any other value (the caller reports it).  res stays the caller's to clear. */
int std_verdict(const GPAny *res, char *why, size_t n);
/* Re-set the pending error as "<prefix>: <message>", keeping its kind. */
void std_error_prefix(const char *prefix);

/* ---- one registration function per pass file */
int std_register_infer_type(void);
int std_register_remove_unused_functions(void);
int std_register_dead_code_elimination(void);
int std_register_print_ir(void);
int std_register_fuse_ops(void);
int std_register_fold_constant(void);
int std_register_legalize(void);
int std_register_eliminate_common_subexpr(void);
int std_register_simplify_inference(void);
int std_register_canonicalize_ops(void);
int std_register_canonicalize_cast(void);
int std_register_merge_composite(void);
/* BackwardFoldScaleAxis, ForwardFoldScaleAxis, FoldScaleAxis */
int std_register_fold_scale_axis(void);
/* TVM's parallel-op combiners (combine_parallel.h), opt-level 4 */
int std_register_combine_parallel_conv2d(void);
int std_register_combine_parallel_dense(void);
int std_register_combine_parallel_batch_matmul(void);
/* Paddle Lite's fusions (pattern_pass.h) */
int std_register_fc_fuse(void);
int std_register_conv_bn_fuse(void);
int std_register_conv_elementwise_fuse(void);
int std_register_conv_activation_fuse(void);
int std_register_annotate_target(void);
int std_register_merge_compiler_regions(void);
int std_register_partition_graph(void);
/* TVM v0.12 SimplifyExpr and SimplifyExprPostAlterOp (simplify_expr.c, on pattern_pass.h) */
int std_register_simplify_expr(void);
/* TVM v0.12 FlattenAtrousConv (flatten_atrous_conv.c, on pattern_pass.h) */
int std_register_flatten_atrous_conv(void);
/* TVM v0.12 ConvertLayout and AlterOpLayout (on layout.h) */
int std_register_convert_layout(void);
int std_register_alter_op_layout(void);

#endif
