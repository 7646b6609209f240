/*
 * expr_build.h -- building replacement expressions in the standard plugin (SimplifyInference,
 * SimplifyExpr, FoldScaleAxis, CanonicalizeOps).  A builder owns every node it makes until
 * sb_finish: each sb_* call returns a borrowed node (valid until sb_finish) or NULL with the
 * host's error pending, and takes NULL arguments as "an earlier step failed" (returns NULL
 * without a new error), so a sequence of steps needs one check at the end.  Every node it makes
 * gets the location of `at`, the node the expression replaces, so later passes' messages still
 * name where it came from.  No recursion.
 */
#ifndef GP_EXPR_BUILD_H
#define GP_EXPR_BUILD_H

#include "passes.h"

#define SB_MAX_TEMPS 48

/* Ops by name, looked up once per pass run (ops are immortal); optional. */
#define SB_MAX_OPS 16
typedef struct SBOps {
  const char *name[SB_MAX_OPS];
  const GPOp *op[SB_MAX_OPS];
  int32_t n;
} SBOps;

typedef struct SBuild {
  GPExpr *tmp[SB_MAX_TEMPS]; /* owned references */
  int32_t n;
  bool failed;
  SBOps *ops; /* borrowed, may be NULL: a cache of op lookups shared by builders */
  const GPExpr *at; /* borrowed, may be NULL: the node being replaced, whose location the new nodes take */
} SBuild;

/* Node e, just made (our only reference), into the builder: it owns it until sb_finish and gives
 * it `at`'s location.  NULL e fails the builder (the maker's error pending). */
GPExpr *sb_keep(SBuild *b, GPExpr *e);

/* A call of op `op` (by name) with args and attributes keys[i] = vals[i] (schema defaults for
 * the rest; NULL attrs for an op without a schema). */
GPExpr *sb_call(SBuild *b, const char *op, int32_t nargs, GPExpr *const *args, int32_t nattrs,
                const char *const *keys, const GPAttrValue *vals);
static inline GPExpr *sb_call1(SBuild *b, const char *op, GPExpr *x) { return sb_call(b, op, 1, &x, 0, NULL, NULL); }
static inline GPExpr *sb_call2(SBuild *b, const char *op, GPExpr *x, GPExpr *y) {
  GPExpr *args[2] = {x, y};
  return sb_call(b, op, 2, args, 0, NULL, NULL);
}
/* A scalar constant of dtype dt holding v (TVM's MakeConstantScalar; float16 and bfloat16
 * rounded to nearest even; integers truncated; bool: v != 0).  GP_ERR_UNSUPPORTED for the
 * dtypes sb_scalar_ok refuses. */
GPExpr *sb_scalar(SBuild *b, DLDataType dt, double v);
/* Whether sb_scalar can make a scalar of dt: float16/32/64, bfloat16, int8/16/32/64,
 * uint8/16/32/64 and bool (TVM's MakeConstantScalar's dtypes); not the 2- and 4-bit integers,
 * the float8 / float4 types or vector lanes (TVM stops there: "unknown data type"). */
bool sb_scalar_ok(DLDataType dt);
/* The value of a scalar constant, sb_scalar's reader (TVM's IsScalar: every dim 1; TryToScalar:
 * int, uint, bool, float16/32/64, bfloat16): 1 and *v, or 0 for another node, dtype or a
 * constant without data. */
int sb_scalar_value(const GPExpr *e, double *v);
/* Relay's name of d into buf: int8, bool, bfloat16, float8_e4m3fn, float32x4 (the narrow floats
 * by DLPack 1.1's codes, as the host's printer names them). */
const char *sb_dtype_str(DLDataType d, char *buf, size_t n);
/* A reduction `op` (mean, sum) over axes with keepdims=True, exclude=False. */
GPExpr *sb_reduce(SBuild *b, const char *op, GPExpr *x, int32_t naxes, const int64_t *axes);
/* TVM's ExpandBiasToMatchAxis for one axis: expand_dims(bias, axis=1,
 * num_newaxis=ndim - axis - 1), or bias itself when that is 0. */
GPExpr *sb_expand_bias(SBuild *b, GPExpr *bias, int32_t ndim, int32_t axis);
/* A new reference to `result` (NULL when any step failed); releases the builder's nodes. */
GPExpr *sb_finish(SBuild *b, GPExpr *result);

/* "<source>:<line>:<col>" of e (or "an unknown location"). */
const char *sb_where(const char *source, const GPExpr *e, char *buf, size_t n);
/* The op name of a call of an op, else NULL. */
static inline const char *sb_op_name(const GPExpr *e) {
  if (ekind(e) != GP_TI_CALL) return NULL;
  const GPExpr *op = ((const GPCall *)e)->op;
  return ekind(op) == GP_TI_OP ? ((const GPOp *)op)->name : NULL;
}

#endif
