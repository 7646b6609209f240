/*
 * layout.h -- the layout rewriter shared by ConvertLayout and AlterOpLayout (TVM v0.12's
 * transform_layout.h, infer_layout_utils.h/.cc and the ops' FInferCorrectLayout functions).
 *
 * One host rewrite per function, producers first, computes for each node its value in the
 * new layout, the (old, new) layout of each of its outputs, and its value realized in the old
 * layout (what a consumer that knows nothing of layouts receives).  A call of an op with a
 * layout relation (the table in layout.c) is rebuilt through the pass's `alter` callback
 * (ConvertLayout: the op's convert function and the desired layouts; AlterOpLayout: the op's
 * FTVMAlterOpLayout hook) and its arguments are transformed from the layout their producer
 * gives to the layout the call needs: layout_transform (after expand_dims for a lower-rank
 * broadcast operand) only where the two differ, each (node, src, dst) built once, and a
 * transform of a layout_transform composed with it (an adjacent inverse pair cancels).  The
 * realized values that no consumer uses are dropped, so layout_transforms remain only at the
 * boundaries.  Relations: conv, pooling, resize, bias_add, batch_norm, layer_norm, instance_norm,
 * l2_normalize, prelu, concatenate, pad, reductions, transpose, squeeze, strided_slice, split,
 * elementwise and broadcast ops.  Plain layouts only (upper-case axes, each once); a blocked layout (NCHW4c) in a
 * call's attributes makes that call keep its layout.  Linear in the graph; no recursion.
 */
#ifndef GP_LAYOUT_H
#define GP_LAYOUT_H

#include "passes.h"

#define LAY_MAX 26

/* A plain layout: n axes (upper-case letters, each once); n == -1: undefined. */
typedef struct Lay {
  int32_t n;
  char a[LAY_MAX + 1];
} Lay;

/* Parse s as a plain layout; false when it is not one (blocked, repeated axes, lower case). */
bool lay_parse(const char *s, Lay *out);

/* The call the pass wants instead of `orig` (a typed call of the input graph): `attrs` are the
 * attributes its layout relation gave, `args` (nargs, structured like orig's) the producers'
 * values in their new layouts.  Set *out to a new reference to a call of an op (or leave it NULL
 * to keep the op and attrs) and return 0; -1 + error to abort. */
typedef int (*LayAlterFn)(void *user, const GPCall *orig, GPAttrs *attrs, GPExpr *const *args, GPExpr **out);

typedef struct LayStats {
  int64_t altered;    /* calls whose op or attributes the alter callback changed */
  int64_t transforms; /* layout_transform calls in the output that the input did not have */
} LayStats;

/* Rewrite function `index` of the typed module `mod` (a StdFunctionRewrite body). */
GPExpr *lay_rewrite_function(const char *pass, const GPModule *mod, int32_t index, LayAlterFn alter,
                             void *user, LayStats *stats);

/* The attributes of `attrs` (an op call's) with keys[i] set to vals[i]: a new reference, or
 * NULL + error. */
GPAttrs *lay_attrs_set(const GPOp *op, const GPAttrs *attrs, int32_t n, const char *const *keys,
                       const GPAttrValue *vals);
const char *lay_attr_str(const GPAttrs *attrs, const char *key); /* "" when absent */

#endif
