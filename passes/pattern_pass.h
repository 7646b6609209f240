/*
 * pattern_pass.h -- a pass as its list of (pattern text, check, rewrite): the fusion passes
 * (fc_fuse.c, conv_bn_fuse.c, conv_elementwise_fuse.c, conv_activation_fuse.c) are each a table
 * of PPRule and a few callbacks.  pp_run compiles the rules' patterns once per pass run
 * (GPHostAPI.pattern_compile), runs the host's rewrite driver (GPHostAPI.pattern_rewrite) over
 * every function std_function_pass keeps, rule 0 claiming its matches first, and notes for
 * --explain what each rule made and why a match was left alone.
 *
 * In a check, the match's nodes are the typed input graph; in a rewrite they are nodes of the
 * rewritten graph (see GPMatchRewriteFn): read attributes and constants there, not types.
 */
#ifndef GP_PATTERN_PASS_H
#define GP_PATTERN_PASS_H

#include "expr_build.h"

#define PP_MAX_RULES 24

typedef struct PPRun PPRun;

/* 1 accept; 0 decline (return pp_decline(...) to say why); -1 error (pp_fail). */
typedef int (*PPCheck)(PPRun *r, const GPMatch *m);
/* A new reference to the replacement, or NULL + error (pp_fail). */
typedef GPExpr *(*PPRewrite)(PPRun *r, const GPMatch *m);

typedef struct PPRule {
  const char *name;    /* what a match becomes: the Composite name, or a label for notes */
  const char *pattern; /* pattern text (abi/graphpass.h, "Patterns") */
  PPCheck check;       /* may be NULL: accept every match */
  PPRewrite rewrite;   /* pp_composite for a composite */
} PPRule;

struct PPRun {
  const char *pass;
  GPPassContext *ctx;
  const char *source;  /* the module's source name (for locations) */
  const PPRule *rules;
  int32_t n;
  void *user;          /* the pass's own state (its config) */
  int64_t made[PP_MAX_RULES];
  int32_t graphs[PP_MAX_RULES]; /* composites made per rule (FunctionVar_<g>_<i>) */
  int64_t declined;    /* distinct (rule, node) pairs left alone */
  StdSeen declined_by; /* the rules that left each node alone (a later round meets it again) */
  bool untyped;        /* a rewrite left nodes without types: re-type the result */
  SBOps ops;
};

/* The builder of a rewrite's replacement: its op cache, and the matched root's location for
 * every node it makes (passes/expr_build.h). */
static inline SBuild pp_build(PPRun *r, const GPMatch *m) { return (SBuild){.ops = &r->ops, .at = m->root}; }

/* The whole pass: unpacks (module, context), compiles the n rules (n <= PP_MAX_RULES), rewrites
 * every function, notes "<total> fusions (<rule> <count>, ...)" and returns the new module in
 * *result (the input, retained, when nothing matched).  -1 + error naming the rule and the node
 * (the registry adds the pass). */
int pp_run(const char *pass, const PPRule *rules, int32_t n, void *user, const GPAny *args, int32_t nargs,
           GPAny *result);

/* pp_run repeated to a fixed point (TVM's RewritePatterns loop): each round runs the driver
 * once over every function (rule 0 claiming first) and re-types what changed; the rounds stop
 * when a round rewrites nothing, or after max_rounds rounds (then a note says so and the result
 * of the last round is returned).  Each round is linear.  Notes "rewrote <total> in <rounds>
 * rounds (<rule> <count>, ...)" listing the rules that rewrote something.  max_rounds < 1 is
 * GP_ERR_VALUE. */
int pp_run_fixed(const char *pass, const PPRule *rules, int32_t n, void *user, int32_t max_rounds,
                 const GPAny *args, int32_t nargs, GPAny *result);

/* The node captured as %name (NULL when unbound or no such capture). */
GPExpr *pp_cap(const GPMatch *m, const char *name);
/* Decline a match with a reason (an --explain note naming the rule and the node); returns 0. */
int pp_decline(PPRun *r, const GPMatch *m, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Set the error "<rule> at <file:line:col>: <what>" (kind GP_ERR_PASS unless one is pending). */
void pp_fail(PPRun *r, const GPMatch *m, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A rewrite: the call of a function with PartitionedFromPattern="<ops>_" and Composite="<rule
 * name>" whose body is the matched interior, constants matched by `const` embedded, and whose
 * parameters are the match's inputs (MergeComposite's form). */
GPExpr *pp_composite(PPRun *r, const GPMatch *m);
/* The same for any caller (MergeComposite): Composite="<name>", parameters FunctionVar_<g>_<i>.
 * A new reference, or NULL + error.  Every node it builds carries the type InferType would give
 * it when the match's nodes are typed; otherwise *untyped is set (untyped may be NULL). */
GPExpr *pp_make_composite(const GPMatch *m, const char *name, int32_t g, bool *untyped);

/* Attributes of a call (NULL / dflt when absent or of another kind). */
const GPAttrValue *pp_attr(const GPExpr *call, const char *key);
int64_t pp_attr_int(const GPExpr *call, const char *key, int64_t dflt);
double pp_attr_float(const GPExpr *call, const char *key, double dflt);
const char *pp_attr_str(const GPExpr *call, const char *key, const char *dflt);

/* The tensor of a constant when it has data that pp_get / pp_set can read: compact, CPU, of a
 * float dtype (float32, float64); else NULL. */
const GPTensor *pp_float_data(const GPExpr *e);
int64_t pp_numel(const GPTensor *t);
double pp_get(const GPTensor *t, int64_t i);
void pp_set(GPTensor *t, int64_t i, double v);
/* The data of a new tensor (shape, ndim, dtype) from GPHostAPI.tensor_alloc, or NULL + error. */
GPTensor *pp_tensor_new(DLDataType dtype, int32_t ndim, const int64_t *shape);
/* A constant of t (new reference; t stays the caller's), or NULL + error. */
GPExpr *pp_constant(GPTensor *t);

/* "(1, 4, 8, 8)" of a tensor type ("?" for an unknown dim; "(untyped)" for NULL); returns buf. */
const char *pp_shape(const GPType *t, char *buf, size_t n);
/* Whether a conv2d layout is a plain permutation of the 4 letters (no split axes like NCHW4c). */
bool pp_layout_plain(const char *layout, const char *letters);

/* Index of the letter c in a layout string like "NCHW" / "OIHW" (-1 when absent). */
int32_t pp_layout_axis(const char *layout, char c);

#endif
