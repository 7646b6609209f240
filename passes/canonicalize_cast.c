/* canonicalize_cast.c -- CanonicalizeCast (opt-level 3, requires InferType), TVM v0.12's
 * CastCanonicalizer: an up-cast (cast whose target dtype has more bits than its argument's)
 * used as an argument of several calls of ops whose pattern is <= broadcast is duplicated so
 * that each such use after the first gets its own copy; FuseOps can then fuse each copy into its
 * consumer and keep the narrow tensor as the fused functions' input.
 *
 * Exactly TVM's order: its mutator visits depth first, arguments left to right, each node once;
 * a use is counted when the consumer has visited that argument, and the first counted use keeps
 * the original cast (other consumers, e.g. a conv2d, share it too).  A consumer that uses the
 * same cast twice gets a copy for the second argument.  Only bits are compared (int8 -> float32
 * is an up-cast, float32 -> int32 is not), as TVM does.  The analysis is an explicit-stack
 * depth-first walk (no recursion); the rewrite is one host rewrite per function; the result is
 * re-typed. */
#include "expr_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASS_NAME "CanonicalizeCast"

typedef struct Cast {
  const char *source;
  PMap count; /* up-cast call -> uses counted so far (uintptr_t) */
  PMap copy;  /* consumer call -> malloc'd uint8_t[nargs]: 1 where the argument gets a copy */
  int64_t copies;
} Cast;

static bool is_consumer(const GPExpr *e) {
  if (ekind(e) != GP_TI_CALL) return false;
  const GPExpr *op = ((const GPCall *)e)->op;
  return ekind(op) == GP_TI_OP && ((const GPOp *)op)->pattern <= GP_PATTERN_BROADCAST;
}

/* 1 when e is an up-cast, 0 when not, -1 + error when its argument is untyped. */
static int is_upcast(const Cast *cs, const GPExpr *e) {
  const char *op = sb_op_name(e);
  if (!op || strcmp(op, "cast") != 0) return 0;
  const GPCall *c = (const GPCall *)e;
  const GPType *from = c->nargs == 1 ? c->args[0]->checked_type : NULL;
  const GPAttrValue *to = c->attrs ? H->attrs_get(c->attrs, "dtype") : NULL;
  if (!from || from->kind != GP_TYPE_TENSOR) {
    char loc[256];
    H->error_set(GP_ERR_TYPE, "cast at %s: the type of its argument is %s (run InferType first)",
                 sb_where(cs->source, e, loc, sizeof loc), from ? "not a tensor type" : "unknown");
    return -1;
  }
  return to && to->kind == GP_ATTR_DTYPE && from->tensor.dtype.bits < to->dtype.bits;
}

/* Consumer `parent` has visited its child `ci` (0 = the op), `child`. */
static int use(Cast *cs, const GPExpr *parent, int32_t ci, const GPExpr *child) {
  if (ci < 1 || !is_consumer(parent)) return 0;
  int up = is_upcast(cs, child);
  if (up <= 0) return up;
  uintptr_t n = (uintptr_t)pmap_get(&cs->count, child) + 1;
  pmap_put(&cs->count, child, (void *)n);
  if (n < 2) return 0;
  uint8_t *flags = pmap_get(&cs->copy, parent);
  if (!flags) {
    int32_t nargs = ((const GPCall *)parent)->nargs;
    flags = calloc((size_t)nargs, 1);
    if (!flags) {
      H->error_set(GP_ERR_MEMORY, "out of memory");
      return -1;
    }
    pmap_put(&cs->copy, parent, flags);
  }
  flags[ci - 1] = 1;
  cs->copies++;
  return 0;
}

typedef struct Frame {
  GPExpr *e;
  int32_t next; /* next child to visit */
} Frame;

/* TVM's visiting order, depth first, children in the shared order, each node once. */
static int analyse(Cast *cs, GPExpr *root) {
  PMap seen = {0};
  size_t cap = 64, n = 0;
  Frame *st = malloc(cap * sizeof *st);
  int rc = 0;
  if (!st) {
    H->error_set(GP_ERR_MEMORY, "out of memory");
    return -1;
  }
  pmap_put(&seen, root, root);
  st[n++] = (Frame){root, 0};
  while (n > 0 && rc == 0) {
    Frame *top = &st[n - 1];
    if (top->next < gp_expr_num_children(top->e)) {
      int32_t ci = top->next++;
      GPExpr *child = gp_expr_child_at(top->e, ci);
      if (pmap_has(&seen, child)) {
        rc = use(cs, top->e, ci, child);
        continue;
      }
      pmap_put(&seen, child, child);
      if (n == cap) {
        Frame *ns = realloc(st, 2 * cap * sizeof *st);
        if (!ns) {
          H->error_set(GP_ERR_MEMORY, "out of memory");
          rc = -1;
          break;
        }
        st = ns;
        cap *= 2;
      }
      st[n++] = (Frame){child, 0};
    } else {
      GPExpr *done = top->e;
      n--;
      if (n > 0) rc = use(cs, st[n - 1].e, st[n - 1].next - 1, done);
    }
  }
  free(st);
  pmap_free(&seen);
  return rc;
}

static GPExpr *cast_rewrite(void *user, GPExpr *orig, GPExpr *rebuilt) {
  Cast *cs = user;
  const uint8_t *flags = pmap_get(&cs->copy, orig);
  if (!flags) return std_keep(rebuilt);
  const GPCall *c = (const GPCall *)rebuilt;
  GPExpr **args = calloc((size_t)c->nargs, sizeof *args);
  if (!args) {
    H->error_set(GP_ERR_MEMORY, "out of memory");
    return NULL;
  }
  GPExpr *res = NULL;
  bool ok = true;
  for (int32_t i = 0; i < c->nargs && ok; i++) {
    if (!flags[i]) {
      args[i] = gp_retain(c->args[i]);
      continue;
    }
    const GPCall *cast = (const GPCall *)c->args[i]; /* the rewrite of a cast is that cast */
    args[i] = (GPExpr *)H->call_new(cast->op, cast->nargs, cast->args, cast->attrs);
    ok = args[i] != NULL;
  }
  if (ok) res = (GPExpr *)H->call_new(c->op, c->nargs, args, c->attrs);
  for (int32_t i = 0; i < c->nargs; i++) gp_release(args[i]);
  free(args);
  if (!res) {
    char msg[512], loc[256];
    snprintf(msg, sizeof msg, "%s", H->error_message());
    H->error_set(H->error_kind() ? H->error_kind() : GP_ERR_INTERNAL, "cannot duplicate a cast used by %s at %s: %s",
                 sb_op_name(rebuilt), sb_where(cs->source, orig, loc, sizeof loc), msg);
  }
  return res;
}

static void cast_free(Cast *cs) {
  for (size_t i = 0; i < cs->copy.cap; i++)
    if (cs->copy.slots[i].key) free(cs->copy.slots[i].val);
  pmap_free(&cs->copy);
  pmap_free(&cs->count);
}

/* One function: count the up-casts' uses, then rewrite only when some copy is needed. */
static GPExpr *cast_function(void *user, const GPModule *mod, int32_t index) {
  int64_t *copies = user;
  GPExpr *root = &mod->funcs[index]->base;
  if (!std_may_call(root, "cast")) return gp_retain(root); /* no cast: O(1) */
  Cast cs = {.source = mod->source_name};
  GPExpr *nf = NULL;
  if (analyse(&cs, root) == 0) {
    *copies += cs.copies;
    nf = cs.copies ? H->rewrite(root, cast_rewrite, &cs) : gp_retain(root);
  }
  cast_free(&cs);
  return nf;
}

static int canonicalize_cast(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  int64_t copies = 0;
  GPModule *out = std_function_pass(mod, cast_function, &copies);
  if (!out) return -1;
  std_note(ctx, "made %lld copies of shared up-casts", (long long)copies);
  return std_return_module(result, out);
}

int std_register_canonicalize_cast(void) {
  static const char *const required[] = {"InferType"};
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 3,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .func = canonicalize_cast,
      .help = "Give each elementwise / broadcast consumer of a shared up-cast its own copy, so that "
              "fusion keeps the narrow input.",
  };
  return H->pass_register(&info, 0);
}
