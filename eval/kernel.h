/*
 * kernel.h -- what the built-in op kernels share (eval/k_*.c), and how they are registered.
 *
 * A kernel is a GPOpKernelFn (abi/graphpass.h, GPKernelArgs): it reads borrowed, possibly
 * strided CPU inputs and fills outputs that the evaluator allocated compact, zeroed, with the
 * shapes the op's type relation gives.  Attributes are read with gp_ops_attr_* (ir/ops/ops.h),
 * which apply the schema's defaults.  A kernel that cannot compute something (a dtype, an
 * attribute value) returns -1 after gp_error_set(GP_ERR_UNSUPPORTED, ...) saying what; the
 * evaluator prefixes the op name and the node.
 *
 * dtypes: float32, float64, float16 (computed in float32, rounded to nearest even on store),
 * int8/16/32/64, uint8/16/32/64 and bool (one byte per element, 0 or 1).  uint16 and uint32 compute
 * exactly in int64; uint64 computes in int64's two's complement: exact for add, subtract,
 * multiply, negative and the bitwise ops, while divide, maximum, minimum, comparisons and right
 * shifts see values of 2^63 and above as negative.  The storage dtypes (bfloat16, float8, int4,
 * ...: ir.h) never reach a kernel: gp_eval_op converts them to their compute dtype and back.
 */
#ifndef GP_KERNEL_H
#define GP_KERNEL_H

#include "ir/ir.h"
#include "ir/ops/ops.h"

#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Registration (eval/kernels.c calls these once, from gp_ops_register_builtin)                */

void gp_kernels_register_builtin(void);
void gp_kernels_register_elemwise(void);  /* eval/k_elemwise.c: unary, binary, clip, cast, ... */
void gp_kernels_register_reduce(void);    /* eval/k_reduce.c: sum, mean */
void gp_kernels_register_nn(void);        /* eval/k_nn.c: conv2d, dense, pools, softmax, ... */
void gp_kernels_register_transform(void); /* eval/k_transform.c: reshape, concatenate, ... */
void gp_kernels_register_norm(void);      /* eval/k_norm.c: layer/instance/group norm, l2 */
void gp_kernels_register_logic(void); /* eval/k_logic.c: comparisons, logical and bitwise ops, where */
void gp_kernels_register_sort(void); /* eval/k_sort.c: topk, argsort, cumsum, cumprod, reverse */
void gp_kernels_register_index(void); /* eval/k_index.c: take, gather, gather_nd, scatter, one_hot, trilu */
void gp_kernels_register_image(void); /* eval/k_image.c: image.resize2d and other image ops */

/* Set the kernel of a built-in op by name (aborts when the op does not exist: a programming
 * error in the built-in tables). */
void gp_kernel_set(const char *op_name, GPOpKernelFn fn);

/* ------------------------------------------------------------------------------------------ */
/* dtypes                                                                                      */

#define GP_K_FOR_EACH_DTYPE(X)                                                                   \
  X(BOOL, uint8_t)                                                                               \
  X(U8, uint8_t)                                                                                 \
  X(I8, int8_t)                                                                                  \
  X(I16, int16_t)                                                                                \
  X(I32, int32_t)                                                                                \
  X(I64, int64_t)                                                                                \
  X(F16, uint16_t)                                                                               \
  X(F32, float)                                                                                  \
  X(F64, double)                                                                                 \
  X(U16, uint16_t)                                                                               \
  X(U32, uint32_t)                                                                               \
  X(U64, uint64_t)

typedef enum GPKDtype {
#define GP_K_ENUM(name, ctype) GP_K_##name,
  GP_K_FOR_EACH_DTYPE(GP_K_ENUM)
#undef GP_K_ENUM
  GP_K_NUM_DTYPES
} GPKDtype;

/* The kernel dtype of dt, or -1 when kernels do not support it. */
int gp_k_dtype(DLDataType dt);
/* -1 + GP_ERR_UNSUPPORTED "<what>: dtype <dt> is not supported" when gp_k_dtype(dt) < 0. */
int gp_k_dtype_check(DLDataType dt, const char *what, int *out);
static inline bool gp_k_is_float(int k) { return k == GP_K_F16 || k == GP_K_F32 || k == GP_K_F64; }
size_t gp_k_elem_size(int k);

float gp_f16_to_f32(uint16_t h);
uint16_t gp_f32_to_f16(float f); /* round to nearest even; overflow to inf; NaN stays NaN */
/* The same from double, rounded once (not through float, which could round twice). */
uint16_t gp_f64_to_f16(double d);

/* Slow generic element access through double / int64 (for rare paths and tests).  Stores
 * convert as C does for in-range values; a float stored to an integer dtype is truncated toward
 * zero and saturated to the type's range (NaN becomes 0); bool stores v != 0. */
double gp_k_load_f64(const void *p, int k);
int64_t gp_k_load_i64(const void *p, int k);
void gp_k_store_f64(void *p, int k, double v);
void gp_k_store_i64(void *p, int k, int64_t v);

/* ------------------------------------------------------------------------------------------ */
/* Views of (possibly strided) tensors                                                         */

#define GP_K_MAX_RANK GP_OPS_MAX_RANK

typedef struct GPKView {
  char *data;       /* first element (data + byte_offset) */
  int32_t ndim;
  int32_t kdt;      /* GPKDtype, or -1 */
  size_t elem;      /* bytes per element */
  int64_t numel;
  bool compact;     /* row-major without gaps */
  int64_t shape[GP_K_MAX_RANK];
  int64_t strides[GP_K_MAX_RANK]; /* in elements; filled for compact tensors too */
} GPKView;

/* Number of elements of t (1 for rank 0). */
static inline int64_t gp_k_numel(const DLTensor *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

/* Fill v from t (rank <= GP_K_MAX_RANK; the evaluator guarantees it). */
void gp_k_view(const DLTensor *t, GPKView *v);
/* Element offset (in elements, from v->data) of the element with row-major index `flat`. */
int64_t gp_k_offset_of(const GPKView *v, int64_t flat);

/* The position in layout s of each axis of canon, in canon's order (at most 5 axes); false unless
 * s is a permutation of canon. */
bool gp_k_axes_of(const char *s, const char *canon, int32_t pos[5]);
/* Copies between a compact buffer c in canonical order (shape cshape, rank r) and the view v
 * whose axis pos[i] is canonical axis i: to_canon gathers v into c, else scatters c into v. */
void gp_k_permute_copy(const GPKView *v, const int64_t *cshape, const int32_t *pos, int32_t r, char *c, bool to_canon);
/* Runs run(a, x', y', user) where x' and y' are x and y in canonical order: x's axis xpos[i]
 * (y's axis ypos[i]) is canonical axis i, rank x->ndim <= 5.  A tensor whose pos is the
 * identity is passed as it is; another is a compact copy (x gathered before, y zeroed and
 * scattered back after a successful run).  Returns run's result. */
typedef int (*GPKCanonRun)(const GPKernelArgs *a, const DLTensor *x, DLTensor *y, void *user);
int gp_k_run_canonical(const GPKernelArgs *a, const DLTensor *x, const int32_t *xpos, DLTensor *y,
                       const int32_t *ypos, GPKCanonRun run, void *user);

/* t's elements in compact row-major order: t's own data when it is compact, else a copy made
 * into *scratch (gp_malloc'd; the caller frees it with gp_free; left NULL when no copy was
 * needed).  numel 0 returns a non-NULL pointer that must not be read. */
const void *gp_k_compact(const DLTensor *t, void **scratch);

/* ------------------------------------------------------------------------------------------ */
/* numpy broadcasting of up to GP_K_BCAST_MAX inputs to an output shape.
 * After gp_k_bcast_init, gp_k_bcast_offsets(b, flat, offs) gives each input's element offset
 * for the output element with row-major index flat; the row loop form is faster:
 *   for (int64_t row = 0; row < b.rows; row++) {
 *     gp_k_bcast_row(&b, row, offs);      // offsets of element 0 of this row
 *     for (int64_t j = 0; j < b.inner; j++) ... in[i][offs[i] + j * b.inner_stride[i]] ...
 *   }
 */
#define GP_K_BCAST_MAX 8

typedef struct GPKBcast {
  int32_t nin, ndim;
  int64_t shape[GP_K_MAX_RANK];                  /* output shape */
  int64_t stride[GP_K_BCAST_MAX][GP_K_MAX_RANK]; /* element strides; 0 on broadcast axes */
  int64_t rows, inner;                           /* numel = rows * inner (inner = last dim) */
  int64_t inner_stride[GP_K_BCAST_MAX];
} GPKBcast;

/* -1 + GP_ERR_VALUE when an input cannot broadcast to out's shape. */
int gp_k_bcast_init(GPKBcast *b, const DLTensor *out, int32_t nin, const GPKView *const *in);
void gp_k_bcast_row(const GPKBcast *b, int64_t row, int64_t *offs);

/* ------------------------------------------------------------------------------------------ */
/* Threads                                                                                     */

/* Run fn(ctx, begin, end) over [0, n) split into at most nthreads contiguous chunks, on
 * nthreads - 1 extra threads plus the caller; returns when all are done.  Chunks are at least
 * `grain` long (so small work stays on one thread). */
void gp_k_parallel_for(int32_t nthreads, int64_t n, int64_t grain,
                       void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);

#endif /* GP_KERNEL_H */
