/*
 * bridge.h -- the libffi bridge: packed functions from typed C functions and C function
 * pointers from packed functions.  Internal to the host library; exposed to plugins through
 * GPHostAPI.ffi_wrap / ffi_closure / ffi_closure_free.
 *
 * Signatures: "<ret>(<param>,<param>,...)", e.g. "i64(i32,f64,p,s,o)".  Spaces around codes are
 * allowed; at most GP_FFI_MAX_ARGS parameters; "()" is a function without parameters.
 *   code  C type          GPAny in (wrap arguments, closure results)        GPAny out
 *   v     void            (return only)                                      None
 *   b     bool (_Bool)    Bool, Int (non-zero = true)                        Bool
 *   i32   int32_t         Int, Bool (range checked)                          Int
 *   i64   int64_t         Int, Bool                                          Int
 *   u32   uint32_t        Int, Bool (range checked)                          Int
 *   u64   uint64_t        Int, Bool (the int64 bits, so -1 is UINT64_MAX)    Int (same bits)
 *   f32   float           Float, Int                                         Float
 *   f64   double          Float, Int                                         Float
 *   p     void *          OpaquePtr, DLTensorPtr, None (NULL)                OpaquePtr; NULL: None
 *   s     const char *    RawStr, Str object (its data), None (NULL)         see below
 *   o     GPObject *      any object, None (NULL)                            the object; NULL: None
 *
 * Errors of a wrapped C function: there is no convention for integer, float, bool or void
 * returns -- such functions cannot fail.  Only pointer-like returns ('o', 'p', 's') may signal
 * failure: a NULL return while the thread's error slot is set (gp_error_kind() != GP_OK) makes
 * the packed call return -1 with that error.  (An error pending before the call is put aside
 * during the call and restored when the call succeeds, so stale errors are not mistaken for
 * failures.)  A NULL return with no error set is a plain NULL (None).
 */
#ifndef GP_FFI_BRIDGE_H
#define GP_FFI_BRIDGE_H

#include "../ir/ir.h"

#define GP_FFI_MAX_ARGS 16

typedef struct GPFfiClosure GPFfiClosure;

/* A packed function (new reference) calling `fnptr` with the given signature.  Arguments are
 * checked: wrong count GP_ERR_VALUE, wrong type or out-of-range value GP_ERR_TYPE / GP_ERR_VALUE,
 * each naming the argument index and the expected and given types.  Return values: 'o' must be
 * a new reference (the result owns it); 's' is copied into a new GPString (type_index
 * GP_TI_STR); 'p' is an OpaquePtr (None when NULL).  `fnptr` must stay valid while the packed
 * function lives.  NULL + GP_ERR_VALUE "signature:1:<col>: error: ..." for a bad signature. */
GPPackedFunc *gp_ffi_wrap(void *fnptr, const char *signature);

/* A C function pointer of the given signature calling `f` (retained until the closure is freed).
 * The C arguments become GPAny (p, s, o: borrowed; NULL -> None; u64 -> Int with the same bits);
 * the result is converted as for wrap arguments.  When `f` fails or its result does not convert,
 * the function returns 0 / 0.0 / false / NULL and the error stays in the thread's slot.  An 'o'
 * result is handed to the C caller as a new reference; an 's' result (RawStr: passed through;
 * Str: kept alive by the closure) is valid until the next call of the same closure or its free.
 * *out_handle receives the owner (free with gp_ffi_closure_free).  NULL + error on failure. */
void *gp_ffi_closure(GPPackedFunc *f, const char *signature, GPFfiClosure **out_handle);
void gp_ffi_closure_free(GPFfiClosure *handle); /* NULL is a no-op */

#endif /* GP_FFI_BRIDGE_H */
