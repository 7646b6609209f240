/*
 * ops.h -- internal helpers shared by the built-in op definitions (ir/ops/ops_*.c).
 *
 * Type relations follow GPTypeRelFn: they read the argument types and the call's attrs, store an
 * interned output type and return 0, or return -1 after gp_error_set(GP_ERR_TYPE, ...) with a
 * message naming the argument or attribute and the shapes involved.  The host prefixes the op
 * name and the location, so messages do not repeat the op name.  Unknown dimensions
 * (GP_DIM_ANY) propagate as unknown.
 */
#ifndef GP_OPS_H
#define GP_OPS_H

#include "common/checked.h"
#include "ir/ir.h"

/* ------------------------------------------------------------------------------------------ */
/* Registration                                                                                */

/* Registers one op (GPOpDef filled in here); aborts the process on a registration failure,
 * which can only be a programming error in the built-in table. */
void gp_ops_def(const char *name, int32_t num_inputs, int32_t pattern, uint32_t flags,
                const GPAttrField *attrs, int32_t num_attrs, GPTypeRelFn rel, const char *help);

/* Attaches a backward inference hook (gp_op_set_fill) to the built-in op `name`; runs inside
 * gp_ops_init's once, so it finds the op without gp_op_find.  Aborts when there is no such op. */
void gp_ops_set_fill(const char *name, GPTypeFillFn fill);

void gp_ops_register_elemwise(void);
void gp_ops_register_nn(void);
void gp_ops_register_transform(void);
void gp_ops_register_reduce(void);
void gp_ops_register_logic(void); /* ops_logic.c: comparisons, logical and bitwise ops, where */
void gp_ops_register_sort(void); /* ops_sort.c: topk, argsort, cumsum, cumprod, reverse */
void gp_ops_register_index(void); /* ops_index.c: take, gather, gather_nd, scatter, one_hot, trilu */
void gp_ops_register_image(void); /* ops_image.c: image.resize2d and other image ops */
void gp_ops_register_annotation(void); /* ops_annotation.c: compiler_begin / compiler_end (BYOC) */

/* Schema field initializers (TVM's attrs-struct order and defaults). */
#define GP_F_REQ(nm, k) {(nm), (k), 1, {.kind = GP_ATTR_NONE}, NULL}
#define GP_F_NONE(nm, k) {(nm), (k), 0, {.kind = GP_ATTR_NONE}, NULL}
#define GP_F_INT(nm, v) {(nm), GP_ATTR_INT, 0, {.kind = GP_ATTR_INT, .i = (v)}, NULL}
#define GP_F_BOOL(nm, v) {(nm), GP_ATTR_BOOL, 0, {.kind = GP_ATTR_BOOL, .i = (v)}, NULL}
#define GP_F_FLOAT(nm, v) {(nm), GP_ATTR_FLOAT, 0, {.kind = GP_ATTR_FLOAT, .f = (v)}, NULL}
#define GP_F_STR(nm, v) {(nm), GP_ATTR_STR, 0, {.kind = GP_ATTR_STR, .s = (v)}, NULL}
#define GP_F_DTYPE_VOID(nm) {(nm), GP_ATTR_DTYPE, 0, {.kind = GP_ATTR_DTYPE, .dtype = {0, 0, 0}}, NULL}
#define GP_F_INTS(nm, arr) \
  {(nm), GP_ATTR_INTS, 0, {.kind = GP_ATTR_INTS, .n = (int32_t)GP_ARRAY_LEN(arr), .ints = (arr)}, NULL}

/* ------------------------------------------------------------------------------------------ */
/* Formatting for messages.  The returned struct is a temporary: use `.s` within one full
 * expression, e.g. gp_error_set(..., gp_ops_shape(t).s). */

typedef struct GPOpsStr {
  char s[200];
} GPOpsStr;

GPOpsStr gp_ops_dims(int32_t n, const int64_t *dims); /* "(1, 3, ?, 224)"; "()" for rank 0 */
GPOpsStr gp_ops_shape(const GPType *t);               /* shape of a tensor type, else the type */
GPOpsStr gp_ops_ints(int32_t n, const int64_t *v);    /* "[1, 2]" */
GPOpsStr gp_ops_dtype(DLDataType t);                  /* "float32" */
GPOpsStr gp_ops_type(const GPType *t);                /* "Tensor[(1, 3), float32]" */

/* ------------------------------------------------------------------------------------------ */
/* Arguments and attributes                                                                    */

/* Error unless nargs == want. */
int gp_ops_nargs(int32_t nargs, int32_t want);
/* The tensor type of argument i (named `what` in errors), or NULL + GP_ERR_TYPE (also when its
 * rank exceeds GP_OPS_MAX_RANK, what the fixed shape buffers hold). */
const GPType *gp_ops_tensor(const GPType *const *args, int32_t i, const char *what);

/* The value of `key`: from attrs, else the schema default; an explicit None on a field with a
 * non-None default reads as the default.  Never NULL (a static None when unknown). */
const GPAttrValue *gp_ops_attr(const GPOp *op, const GPAttrs *attrs, const char *key);
bool gp_ops_attr_none(const GPOp *op, const GPAttrs *attrs, const char *key);
int64_t gp_ops_attr_int(const GPOp *op, const GPAttrs *attrs, const char *key);
bool gp_ops_attr_bool(const GPOp *op, const GPAttrs *attrs, const char *key);
double gp_ops_attr_float(const GPOp *op, const GPAttrs *attrs, const char *key);
const char *gp_ops_attr_str(const GPOp *op, const GPAttrs *attrs, const char *key); /* "" if none */
DLDataType gp_ops_attr_dtype(const GPOp *op, const GPAttrs *attrs, const char *key); /* bits 0 if none */
/* INTS (or a single INT) as an array; *n = -1 when None. */
const int64_t *gp_ops_attr_ints(const GPOp *op, const GPAttrs *attrs, const char *key, int32_t *n);

/* ------------------------------------------------------------------------------------------ */
/* Shapes                                                                                      */

#define GP_OPS_MAX_RANK 64

/* Normalize `axis` (attribute `attr`) into [0, ndim) (negative counts from the end); error
 * naming the attribute and the shape of `t` when out of range. */
int gp_ops_axis(int64_t axis, int32_t ndim, const char *attr, const GPType *t, int32_t *out);
/* Error unless a and b have the same dtype. */
int gp_ops_same_dtype(const GPType *a, const char *an, const GPType *b, const char *bn);
/* numpy broadcasting of two tensor types (dtypes must match). */
int gp_ops_broadcast(const GPType *a, const char *an, const GPType *b, const char *bn,
                     const GPType **out);
/* Interned tensor type; -1 when the host refuses it. */
int gp_ops_ret(DLDataType dt, int32_t ndim, const int64_t *shape, const GPType **out);

/* Arithmetic on possibly unknown dims: GP_DIM_ANY stays unknown; a product that overflows is
 * GP_DIM_OVERFLOW, which stays so and which no tensor type accepts (common/checked.h). */
#define GP_DIM_OVERFLOW INT64_MAX
static inline int64_t gp_ops_dim_mul(int64_t a, int64_t b) {
  if (a == GP_DIM_ANY || b == GP_DIM_ANY) return GP_DIM_ANY;
  int64_t r;
  if (a == GP_DIM_OVERFLOW || b == GP_DIM_OVERFLOW || !gp_mul_i64(a, b, &r) || r > GP_MAX_TYPE_ELEMS)
    return (a == 0 || b == 0) ? 0 : GP_DIM_OVERFLOW;
  return r;
}

/* Normalize a 2-d padding of 1, 2 or 4 values to (top, left, bottom, right); error naming the
 * attribute otherwise. */
int gp_ops_pad4(const int64_t *pad, int32_t n, const char *attr, int64_t out[4]);
/* Error unless the INTS attribute `attr` has exactly `want` values, all >= min. */
int gp_ops_ints_check(const int64_t *v, int32_t n, int32_t want, int64_t min, const char *attr);

/* ------------------------------------------------------------------------------------------ */
/* Layouts (TVM's Layout: primal axes A-Z, subordinate blocks like 16c)                        */

#define GP_LAYOUT_MAX 16

typedef struct GPLayout {
  int32_t n;
  char axis[GP_LAYOUT_MAX];    /* 'A'..'Z' primal, 'a'..'z' subordinate */
  int64_t factor[GP_LAYOUT_MAX]; /* block size of a subordinate axis; 0 for primal */
  char text[40];
} GPLayout;

/* Parse a layout string (attribute `attr` in errors). */
int gp_layout_parse(const char *s, const char *attr, GPLayout *out);
/* Index of `axis` in l, or -1. */
int32_t gp_layout_index(const GPLayout *l, char axis);
/* Error unless every letter of `primal` is a primal axis of l and l has no other primal axes.
 * With no_split, those axes must not be blocked either. */
int gp_layout_require(const GPLayout *l, const char *primal, bool no_split, const char *attr);
/* Primal extents of shape t (laid out as l) into primal[26] (index letter - 'A'; -2 absent). */
int gp_layout_to_primal(const GPLayout *l, const GPType *t, const char *what, int64_t primal[26]);
/* Shape in layout l from primal extents (ceil division for blocked axes). */
int gp_layout_from_primal(const GPLayout *l, const int64_t primal[26], int64_t *shape);

#endif /* GP_OPS_H */
