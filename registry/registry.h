/*
 * registry.h -- passes by name, pass contexts, pipelines, optimization sets, instruments.
 * Internal to the host library.  Thread-safe: registration takes a global lock; a running
 * pipeline holds references to the entries it resolved, so unregistering during a run is safe.
 */
#ifndef GP_REGISTRY_H
#define GP_REGISTRY_H

#include "../ir/ir.h"
#include "../eval/eval.h"

#include <stdio.h>

/* A registered pass: a deep copy of the GPPassInfo the registrant gave. */
typedef struct GPPassEntry GPPassEntry;
struct GPPassEntry {
  uint32_t refs;         /* atomic; the registry holds one, running pipelines one each */
  GPPassInfo info;       /* every string and array owned by the entry */
  char *origin;          /* plugin name that registered it, or "host" */
};

/* Registration.  `origin` names the plugin ("host" for the host); copied. */
int gp_pass_register(const GPPassInfo *info, bool allow_override, const char *origin);
int gp_pass_unregister(const char *name);
GPPassEntry *gp_pass_acquire(const char *name); /* new reference or NULL (no error) */
void gp_pass_entry_release(GPPassEntry *e);
/* Snapshot of every registered pass sorted by name; release each entry, gp_free the array. */
size_t gp_pass_list(GPPassEntry ***out);
/* Why a pass does not run for `target` (bound to others, excluding it, or a kernel the target
 * lacks), gp_malloc'd; NULL when it runs (no error either way). */
char *gp_pass_target_refusal(const GPPassInfo *info, const char *target);
/* GPHostAPI.pass_list (ABI 1.3): one tab-separated line per pass (see abi/graphpass.h), only
 * those that run for `target` when it is not NULL; gp_malloc'd, never NULL. */
char *gp_pass_list_text(const char *target);
/* The origin used for registrations made while a plugin initializes (set by the loader). */
void gp_registry_set_origin(const char *origin);
const char *gp_registry_origin(void);
/* Unregister every pass, drop every optimization set and target (process exit / tests only). */
void gp_registry_shutdown(void);

/* Global functions by name (registry/global_funcs.c; GPHostAPI.func_register / func_get).
 * Thread-safe.  gp_func_register retains f and copies the name; a taken name is GP_ERR_VALUE
 * unless allow_override; f == NULL removes the name (GP_ERR_NOT_FOUND when it is free).
 * gp_func_get: a new reference, or NULL (no error) when the name is free.  gp_funcs_shutdown
 * releases every function (called by gp_registry_shutdown). */
int gp_func_register(const char *name, GPPackedFunc *f, int allow_override);
GPPackedFunc *gp_func_get(const char *name);
size_t gp_func_count(void);
/* Remove every global function registered while `origin` was the registry origin (the loader,
 * when that plugin fails or is unloaded); the functions are released outside the lock. */
void gp_funcs_unregister_origin(const char *origin);
void gp_funcs_shutdown(void);

/* Optimization sets: per target, named pipelines; "default" is what runs when no pipeline is
 * given.  Registering an existing (target, set) replaces it. */
int gp_opt_set_register(const char *target, const char *set, const char *pipeline);
/* Borrowed-until-next-registration copy is unsafe across threads, so: gp_malloc'd copy or NULL
 * + GP_ERR_NOT_FOUND listing the sets of that target. */
char *gp_opt_set_get(const char *target, const char *set);
/* Remove every optimization set registered while `origin` was the registry origin (the loader,
 * when that plugin fails or is unloaded).  A removed set that was selected is deselected; a
 * target left with no sets is forgotten. */
void gp_opt_sets_unregister_origin(const char *origin);
/* Make `set` the default of `target` (swap optimization sets at run time). */
int gp_opt_set_select(const char *target, const char *set);
/* Lines "target set pipeline" (gp_malloc'd). */
char *gp_opt_set_list(void);
/* 1 when `target` has set `set`; 0 (no error) when the target has no sets at all; -1 +
 * GP_ERR_NOT_FOUND naming the target and its sets when it has sets but not this one. */
int gp_opt_set_check(const char *target, const char *set);

/* Targets (registry/targets.c; GPHostAPI.target_*, ABI 1.2): what each target has kernels for.
 * Thread-safe (the registry lock).  gp_target_register copies `info` (GPTargetInfo's rules);
 * `origin` names the plugin (NULL: gp_registry_origin()).  A taken name is GP_ERR_VALUE naming
 * who registered it, unless allow_override. */
int gp_target_register(const GPTargetInfo *info, bool allow_override, const char *origin);
/* GP_ERR_NOT_FOUND naming the known targets when `name` is not registered. */
int gp_target_unregister(const char *name);
/* Remove every target registered by `origin` (the loader, when a plugin goes away). */
void gp_targets_unregister_origin(const char *origin);
/* 1 / 0 (an unregistered target has no kernel); -1 + GP_ERR_VALUE when an argument is NULL. */
int gp_target_has_kernel(const char *target, const char *kernel);
/* NULL when `target` has every one of the n kernels; else why not, gp_malloc'd:
 * "target 'llvm' has no kernel 'fc'" / "... has no kernels 'fc', 'fc_relu'", or for an
 * unregistered target "target 'x' is not registered, so it has no kernel 'fc'". */
char *gp_target_missing_kernels(const char *target, const char *const *kernels, int32_t n);
/* GPHostAPI.target_list: the sorted names in one gp_malloc'd block (NULL when none). */
int gp_target_names(char ***out_names, int32_t *out_count);

/* A target as `graphpass targets` shows it: a consistent copy of its entry and its
 * optimization sets.  Every string and array is owned by the view. */
typedef struct GPTargetView {
  char *name;
  bool registered;      /* false: only optimization sets name this target */
  char *help;           /* NULL when none (or not registered) */
  char *origin;         /* the registering plugin or "host"; NULL when not registered */
  uint32_t flags;       /* GP_TARGET_* */
  int32_t num_kernels;
  char **kernels;       /* sorted (ops and composites together) */
  int32_t num_sets;
  char **set_names;     /* sorted */
  char **set_pipelines; /* parallel to set_names */
  char *default_set;    /* the set that runs when no pipeline is given; NULL when none */
} GPTargetView;
/* Every registered target and every target with optimization sets, sorted by name. */
size_t gp_target_views(GPTargetView **out);
void gp_target_views_free(GPTargetView *v, size_t n);
/* Drop every target (gp_registry_shutdown). */
void gp_targets_shutdown(void);

/* A pipeline item parsed from "A,B{key=value,key2=value2},C". */
typedef struct GPPipelineItem {
  char *name;
  int32_t nconfig;
  char **keys;   /* as written, relative to the pass ("max_depth") or full ("FuseOps.max_depth") */
  char **values; /* raw text, typed when applied */
  uint32_t col;  /* 1-based column of the name in the pipeline string */
} GPPipelineItem;

typedef struct GPPipeline {
  int32_t n;
  GPPipelineItem *items;
} GPPipeline;

/* Parse a pipeline string; errors GP_ERR_PARSE "pipeline:1:<col>: error: ...". */
int gp_pipeline_parse(const char *text, GPPipeline *out);
void gp_pipeline_free(GPPipeline *p);

/* The pass context (opaque in the ABI). */
struct GPPassContext {
  int32_t opt_level;      /* default 2 */
  char *target;           /* default "llvm" */
  char *opt_set;          /* the set a run without a pipeline runs; NULL: the target's default */
  GPVec required;         /* char* pass names */
  GPVec disabled;         /* char* pass names */
  GPStrMap config;        /* full key -> GPAny* (typed; owned) */
  /* instruments */
  bool time_passes;       /* the timing instrument on ctx->out, report kept in timing_report */
  bool print_before_all, print_after_all;
  GPVec print_before;     /* char* pass names */
  GPVec print_after;
  bool verify_each;       /* gp_verify after every pass; implies check_immutable */
  bool check_immutable;   /* hash each pass's input before and after it (registry/pass_check.c) */
  bool explain;           /* the explain instrument (gp_instrument_explain) on ctx->out, for one run */
  bool print_types;       /* IR dumps with ty= comments (default true) */
  FILE *out;              /* where instruments write (default stderr) */
  /* --verify-numerics: evaluate @main on deterministic inputs (from `seed`) before the first
   * pass and after every pass that ran; a pass whose outputs differ beyond
   * |got - want| <= atol + rtol * |want| fails the run naming it. */
  bool verify_numerics;
  double rtol;            /* default 1e-4 */
  double atol;            /* default 1e-5 */
  uint64_t seed;          /* default 0 */
  /* the inputs' shapes where @main's parameters have `?` dims (gp_ctx_add_numerics_shape; names
   * and dims owned), every other `?` is 1: what gp_eval_random_inputs_shaped takes */
  GPInputShape *numerics_shapes;
  int32_t num_numerics_shapes;
  /* instruments (ABI 1.3): GPInstrumentEntry*, in registration order */
  GPVec instruments;
  int32_t run_depth;      /* runs under way (a pass may run a pipeline with its context) */
  bool collect_notes;     /* set by a run while an instrument takes notes */
  /* filled by a run */
  bool registry_error;    /* the last run failed on a registry defect (a dependency cycle) */
  char *timing_report;    /* gp_malloc'd, when time_passes */
  GPVec notes;            /* char* (gp_malloc'd): the running pass's explain notes */
};

GPPassContext *gp_ctx_new(void);
void gp_ctx_free(GPPassContext *ctx);
int gp_ctx_set_opt_level(GPPassContext *ctx, int32_t level);
int gp_ctx_set_target(GPPassContext *ctx, const char *target);
/* Choose the optimization set of the context's target that a run without a pipeline runs
 * (NULL: back to the target's default).  A set the target does not have is an error now when
 * the target has sets, else when the pipeline runs (GP_ERR_NOT_FOUND naming target and sets). */
int gp_ctx_set_opt_set(GPPassContext *ctx, const char *set);
/* --verify-numerics: the shape of @main's parameter `param` (whose type has `?` dims) on the
 * inputs it is evaluated on; a second shape for one parameter replaces the first.  GP_ERR_VALUE
 * for a negative dim or more than 64 dims. */
int gp_ctx_add_numerics_shape(GPPassContext *ctx, const char *param, int32_t ndim, const int64_t *dims);
/* Set a config value from text: the key must be declared by a registered pass (full key
 * "Pass.key"); the value is parsed by the key's type.  Errors list the valid keys / type. */
int gp_ctx_set_config(GPPassContext *ctx, const char *key, const char *value);
/* The value of a key: the context's, else the declaring pass's default.  *out borrowed. */
int gp_ctx_get_config(const GPPassContext *ctx, const char *key, GPAny *out);
int gp_ctx_disable(GPPassContext *ctx, const char *pass_name);
int gp_ctx_require(GPPassContext *ctx, const char *pass_name);
int gp_ctx_set_check_immutable(GPPassContext *ctx, int on); /* GPHostAPI.ctx_set_check_immutable */
/* A note from the running pass (GPHostAPI.ctx_note): buffered when ctx->explain or while a run
 * has instruments (else dropped), and given to the instruments after the pass (GPPassEvent). */
void gp_ctx_note(GPPassContext *ctx, const char *fmt, ...) GP_FMT(2, 3);
/* Drop the buffered notes. */
void gp_ctx_notes_clear(GPPassContext *ctx);

/* ---- instruments (registry/instruments.c; GPHostAPI.ctx_instrument_*, ABI 1.3) */

typedef struct GPInstrumentEntry {
  GPInstrument ins; /* the registrant's table, copied (fields it did not have are NULL) */
  char *name;       /* owned copy; ins.name points to it */
} GPInstrumentEntry;

/* Register / unregister on a context (see GPInstrument in abi/graphpass.h). */
int gp_ctx_instrument_register(GPPassContext *ctx, const GPInstrument *ins);
int gp_ctx_instrument_unregister(GPPassContext *ctx, const char *name);
/* Run every instrument's user_deleter and forget them (gp_ctx_free). */
void gp_ctx_instruments_clear(GPPassContext *ctx);

/* The command's --explain as an instrument: for every item, after it,
 * "explain: <Name>: ran|skipped[ (<reason>)]", then "explain: <Name>: note: <note>" per note and
 * "explain: <Name>: <checks>" when a check ran, on `out` (flushed).  `out` is borrowed and must
 * outlive the registration.  Named "explain". */
GPInstrument gp_instrument_explain(FILE *out);
/* The command's --time-passes: after each run, the report "pipeline: <total>us [<self>us]
 * (100.00%; 100.00%)" and one line "\t<Name>: <us>us [<us>us] (<pct>%; <pct>%)" per pass that
 * ran, written to `out` (may be NULL) and, when report_slot is not NULL, kept in *report_slot
 * (gp_malloc'd; replaced by each run).  Allocates its state (freed by its user_deleter: register
 * it, or call .user_deleter(.user)).  Named "time-passes". */
GPInstrument gp_instrument_timing(FILE *out, char **report_slot);

/* TVM's enablement: disabled wins, then required, then ctx opt_level >= the pass's. */
bool gp_pass_enabled(const GPPassContext *ctx, const GPPassEntry *e);

/* Run a pipeline (NULL: the target's default set).  Resolves required passes (expanded,
 * de-duplicated, topologically ordered; a cycle or missing pass is GP_ERR_NOT_FOUND /
 * GP_ERR_VALUE naming it), skips passes bound to other targets, excluding this one or bound to
 * kernels it lacks (gp_target_missing_kernels), applies
 * enablement, runs the instruments.  Returns a new module; `m` is never changed.  On a pass
 * failure: GP_ERR_PASS "pass <Name>: <message>".  With ctx->explain, writes one line per pass
 * to ctx->out: "explain: <Name>: ran|skipped (<reason>)", then the pass's notes
 * ("explain: <Name>: note: <message>") and, with verify_numerics, "explain: <Name>: numerics
 * ok (max abs error <e>)".  With verify_numerics: GP_ERR_VALUE when @main is missing or has a
 * parameter without a static tensor type (or cannot be evaluated before any pass);
 * GP_ERR_PASS "pass <Name> changed the numbers of @main output <i>: ..." for the first pass
 * whose outputs differ beyond tolerance. */
GPModule *gp_run_pipeline(const GPModule *m, const char *pipeline, GPPassContext *ctx);

/* Checks around one pass (registry/pass_check.c).  Before the pass, gp_pass_snap_take records
 * the input's function table (and, with ctx->check_immutable or verify_each, its structural
 * hash); after it, gp_pass_snap_check fails (GP_ERR_PASS naming the pass) when the input
 * changed or the returned module is ill-formed (gp_module_check_shape; and gp_verify_new of
 * the functions it made, for a pass whose origin is not the "std" plugin; see pass_check.c).
 * gp_pass_snap_free releases the snapshot either way. */
typedef struct GPPassSnap {
  const GPModule *in;
  int32_t n;
  void **table; /* gvars then funcs, as they were */
  bool hashed;
  uint64_t hash;
  bool verify; /* gp_verify_new of the output: a pass from outside the host and its std plugin */
} GPPassSnap;
void gp_pass_snap_take(GPPassSnap *s, const GPModule *in, const GPPassContext *ctx, const char *origin);
int gp_pass_snap_check(GPPassSnap *s, const char *pass, const GPModule *out);
void gp_pass_snap_free(GPPassSnap *s);

#endif /* GP_REGISTRY_H */
