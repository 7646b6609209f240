/*
 * opu.h -- the OPU vendor plugin (build/plugins/libgp_opu.so): target `opu`, an FPGA overlay
 * processor's Relay stack as a plugin of graphpass.  These sources are the vendor's: they
 * include only abi/graphpass.h (and <dlpack/dlpack.h> through it), never a project header, and
 * are built with `-I abi` alone, as a vendor outside this repository builds them.  What they
 * need from the host goes through the GPHostAPI table (ABI 1.3 for plugin_require).
 *
 * What the plugin registers (opu/plugin.c):
 *  - target `opu` with kernels for the ops the accelerator runs and a `target.opu` predicate
 *    attribute on each of them (opu/target.c), so AnnotateTarget{targets=opu} / PartitionGraph
 *    put the supported regions into Compiler="opu" functions and leave the rest to the host;
 *  - its passes, each in its own file, each bound to target opu: ToNCHWLayout
 *    (opu/to_nchw_layout.c), Peephole (opu/peephole.c), CanonicalizeConcatPos
 *    (opu/canonicalize_concat_pos.c); GenIR (opu/genir.c) quantizes and emits;
 *  - the optimization set `default` of target opu (the seed's order; see plugin.c).
 */
#ifndef OPU_H
#define OPU_H

#include "graphpass.h"

#include <stdbool.h>

/* The host's table, set by initialize before anything else runs; valid until finalize. */
extern const GPHostAPI *opu_host;

/* The target, its kernels and its target.opu predicates (opu/target.c). */
int opu_register_target(const GPHostAPI *host);

/* The passes; each returns 0 or -1 + the host's error. */
int opu_register_to_nchw_layout(const GPHostAPI *host);
int opu_register_peephole(const GPHostAPI *host);
int opu_register_canonicalize_concat_pos(const GPHostAPI *host);
/* GenIR (opu/genir.c): quantization and instruction-stream codegen. */
int opu_genir_register(const GPHostAPI *host);

/* ---- helpers shared by the passes (opu/util.c) ---- */

/* The descriptor of an OPU pass: a transform bound to target "opu", opt-level 0, with `name`,
 * `func` and `help` (static strings); requires InferType when `typed`.  The caller adds config
 * keys or a self_deleter before pass_register. */
GPPassInfo opu_pass_info(const char *name, GPPackedCFunc func, const char *help, bool typed);
/* Unpacks a pass's arguments [module (borrowed), context (opaque)]; -1 + GP_ERR_VALUE. */
int opu_pass_args(const char *pass, const GPAny *args, int32_t nargs, GPModule **mod, GPPassContext **ctx);
/* Stores mod (a new reference, consumed) as a pass result; -1 when mod is NULL. */
int opu_return_module(GPAny *result, GPModule *mod);
/* Runs `pipeline` on mod in a fresh context with the caller's target and opt-level 3 (the std
 * passes underneath, e.g. ConvertLayout, are level 3), so the inner passes run whatever the
 * outer opt-level.  A new module, or NULL + error prefixed with `pass`. */
GPModule *opu_run_inner(const char *pass, const GPModule *mod, const char *pipeline, GPPassContext *ctx);
/* The op named `name` (registered by the host; NULL + error otherwise). */
const GPOp *opu_op(const char *name);
/* Whether e is a call of op `name`. */
bool opu_is_call(const GPExpr *e, const char *name);
/* Applies spec (patterns, check, rewrite, user; struct_size and abi_version filled here) to
 * every function of mod without a Compiler, Primitive or Composite attribute, in rounds: type
 * the module, one GPHostAPI.pattern_rewrite walk per function, until a round rewrites nothing
 * (at most 64 rounds).  Returns the typed result (a new reference; mod typed when nothing
 * matched), *total = matches rewritten; NULL + error (a typing failure prefixed with `pass`). */
GPModule *opu_rewrite_rounds(const char *pass, const GPModule *mod, GPRewriteSpec *spec, int64_t *total);
/* A call of op `name` with the given attrs of its schema (new reference), or NULL + error;
 * opu_fold_call: the same call evaluated on constant arguments, a new constant. */
GPExpr *opu_call(const char *name, int32_t nargs, GPExpr *const *args, int32_t nattrs, const char *const *keys,
                 const GPAttrValue *vals);
GPExpr *opu_fold_call(const char *name, int32_t nargs, GPExpr *const *args, int32_t nattrs, const char *const *keys,
                      const GPAttrValue *vals);
/* The capture named `name` of m (NULL when absent or unmatched). */
GPExpr *opu_capture(const GPMatch *m, const char *name);

/* An ints attribute of c into out[want]: absent -> dflt each; 1 value repeated; 2 values of a
 * 4-value padding as (top, left, top, left) (TVM's expansion); -1 for another length. */
int opu_attr_ints(const GPCall *c, const char *key, int64_t *out, int want, int64_t dflt);
/* Whether the OPU runs the window of a typed nn.conv2d (conv) or max / avg pool call: kernel or
 * pool_size and strides from 1 to OPU_MAX_KERNEL / OPU_MAX_STRIDE, padding below the kernel,
 * dilation 1, and for a conv at most OPU_MAX_TAPS taps per output.  0, or -1 with the reason in
 * why (target.c's predicates keep such a call on the host; GenIR reports it). */
int opu_window_ok(const GPCall *c, bool conv, char *why, size_t n);
/* Whether the OPU runs a typed nn.pad call: constant mode, a 4-d input, pad_width of 8 values
 * that pad neither the batch axis nor by more than 65535 or less than 0, a float32 scalar
 * constant fill.  0, or -1 with the reason in why (as opu_window_ok). */
int opu_pad_ok(const GPCall *c, char *why, size_t n);

/* "source:line:col" of e (or "<source>" when e has no location) into buf. */
const char *opu_where(const GPModule *mod, const GPExpr *e, char *buf, size_t size);

#endif /* OPU_H */
