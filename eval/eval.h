/*
 * eval.h -- the reference evaluator: one op on tensors (eval/eval_op.c), whole functions
 * (eval/eval.c), deterministic inputs and numeric comparison (eval/eval.c), .npy files
 * (eval/npy.c).  Kernels: eval/kernel.h.
 *
 * Values are tensors (GPTensor) or tuples of values.  Nothing recurses on graph depth.
 */
#ifndef GP_EVAL_H
#define GP_EVAL_H

#include "ir/ir.h"

/* ------------------------------------------------------------------------------------------ */
/* One op (eval/eval_op.c)                                                                     */

/* Evaluate `op` with `attrs` on arguments whose types are arg_types[0..nargs) (a tuple type for
 * a tuple argument); `inputs` are the argument tensors with tuple arguments flattened (nin of
 * them, each with data, CPU).  Infers the result type from the inputs' actual types, allocates
 * the outputs (one, or one per field of a tuple result; at most max_out) and runs the op's
 * kernel.  On success *out_type is the result type, outputs[0..*nout) new references.
 * Errors: GP_ERR_UNSUPPORTED (no kernel, dtype), GP_ERR_TYPE, GP_ERR_VALUE, prefixed with the
 * op name. */
int gp_eval_op(const GPOp *op, const GPAttrs *attrs, int32_t nargs, const GPType *const *arg_types,
               int32_t nin, GPTensor *const *inputs, int32_t num_threads, const GPType **out_type,
               GPTensor **outputs, int32_t max_out, int32_t *nout);

/* Evaluate a call of an op whose arguments are constants with data or tuples of them (the
 * GPHostAPI.eval_call contract): a new GPConstant, or a new GPTuple of constants. */
GPExpr *gp_eval_call(const GPCall *call);

/* Bytes of a tensor-typed (or tuple-of-tensor-typed) result, or -1 when a dim is unknown. */
int64_t gp_type_nbytes(const GPType *t);

/* Threads the evaluator uses by default (the number of online CPUs, at least 1). */
int32_t gp_eval_default_threads(void);

/* ------------------------------------------------------------------------------------------ */
/* Functions (eval/eval.c)                                                                     */

/* Evaluate function `name` (NULL: "main") of m on inputs (one per parameter, in order, a
 * tuple-typed parameter's fields flattened in order -- an ONNX sequence input; shape and dtype
 * must match the parameter's annotation, else GP_ERR_VALUE naming the parameter, the expected
 * and the given type).  The module must be typed where the evaluator needs it (it
 * re-infers types internally when not).  Calls of ops, of function expressions (e.g.
 * Primitive functions from FuseOps) and of global functions are evaluated; let, if, tuples and
 * get-items as Relay defines them.  Intermediates are freed after their last use.
 * Success: *outputs (gp_malloc'd) holds *nout new tensor references, the result flattened
 * (tuple fields in order).  opts may be NULL; when given, num_threads is read and peak_bytes,
 * ops_run are filled. */
int gp_eval_function(const GPModule *m, const char *name, int32_t nin, GPTensor *const *inputs,
                     GPTensor ***outputs, int32_t *nout, GPEvalOptions *opts);

/* Deterministic inputs for function `name` (NULL: "main") from `seed`: floats uniform in
 * [-1, 1), integers uniform in [0, 10), bool 0/1.  Every parameter must have a static tensor
 * type (else GP_ERR_VALUE naming it).  *inputs (gp_malloc'd) gets *nin new references. */
int gp_eval_random_inputs(const GPModule *m, const char *name, uint64_t seed, GPTensor ***inputs,
                          int32_t *nin);
/* A parameter's concrete shape for inputs made from its type (GPInputShape.name: its name). */
typedef struct GPInputShape {
  const char *name;
  int32_t ndim;
  const int64_t *dims;
} GPInputShape;
/* As gp_eval_random_inputs, for parameters whose types have `?` dims: a parameter named in
 * shapes takes that shape (its rank and static dims must agree), every other `?` becomes any_dim
 * (any_dim < 0: an error, as gp_eval_random_inputs).  A shape naming no parameter is
 * GP_ERR_NOT_FOUND. */
int gp_eval_random_inputs_shaped(const GPModule *m, const char *name, uint64_t seed, const GPInputShape *shapes,
                                 int32_t nshapes, int64_t any_dim, GPTensor ***inputs, int32_t *nin);

/* Compare two tensors of the same shape and dtype elementwise: |a - b| <= atol + rtol * |b|
 * (NaN equals NaN; infinities must match exactly).  Fills the largest absolute and relative
 * errors and the flat index of the worst element.  Returns 1 when within tolerance, 0 when
 * not, -1 + GP_ERR_VALUE when shapes or dtypes differ (message says both). */
int gp_tensor_allclose(const GPTensor *a, const GPTensor *b, double rtol, double atol,
                       double *max_abs, double *max_rel, int64_t *worst);

/* A DLManagedTensor viewing t's data that holds a reference to t (GPHostAPI.tensor_to_dlpack). */
DLManagedTensor *gp_tensor_to_dlpack(GPTensor *t);

/* ------------------------------------------------------------------------------------------ */
/* .npy files (eval/npy.c): format versions 1.0-3.0 read, 1.0 written; little-endian, C order
 * (Fortran order is read and transposed); dtypes the kernels support. */

/* Errors: GP_ERR_IO (open/read), GP_ERR_PARSE "<path>: <what>" (bad header, truncated). */
GPTensor *gp_npy_read(const char *path);
GPTensor *gp_npy_parse(const void *data, size_t len, const char *path_for_errors);
int gp_npy_write(const char *path, const GPTensor *t);

#endif /* GP_EVAL_H */
