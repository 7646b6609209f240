/*
 * eval.c -- the whole-function evaluator (gp_eval_function), deterministic inputs, numeric
 * comparison and DLPack export.
 *
 * Values.  A Val is a tensor, a tuple of Vals, or a closure (a function plus the values of its
 * free variables).  Vals are refcounted by the evaluator alone (one thread); freeing a nested
 * tuple walks an explicit stack.
 *
 * Plans.  Each function that runs (a global function, or a function expression called as a
 * closure, e.g. FuseOps' Primitive functions) gets a plan once per gp_eval_function call, built
 * over the node index of its body (gp_ni_build: post-order ids, children before parents):
 *  - let-bound vars and lets are not computed: a use of a let var reads the let's value, a use
 *    of a let reads its body (`vres`, resolved ids);
 *  - regions: the body is region 0; each `if` opens two child regions (then, else) so that only
 *    the chosen branch runs.  A node belongs to the lowest common region of all that demand it
 *    (demands flow from parents to children in reverse post-order), so a node shared by both
 *    branches and the code after the `if` runs once, before the `if`;
 *  - use counts per node (edges from the nodes that read it), so a value is released right
 *    after its last reader ran.  An edge from inside a region to a node outside it is listed in
 *    that region's `ext`: when the region is skipped, those uses are consumed without running.
 * Nested function bodies are not part of their parent's plan: a function expression evaluates
 * to a closure capturing its free variables (a let-bound recursive closure refers to itself).
 *
 * Running.  One loop over an explicit stack of activations (a region of a frame at a step);
 * a call pushes a frame, an `if` pushes its chosen region.  Nothing recurses on graph depth or
 * call depth; the depth of calls (GP_EVAL_MAX_CALL_DEPTH) and the node slots the active calls
 * hold (gp_eval_max_frame_slots) are bounded to stop runaway recursion with an error.
 *
 * Op calls go to gp_eval_op (tuple arguments flattened), except that an op flagged
 * GP_OP_RESHAPE_ONLY on a compact tensor gives a view of the same bytes (no copy).  Tensors
 * pass through untouched: an output may be an input, or a view of one.
 */
#include "eval/eval.h"
#include "eval/kernel.h"
#include "registry/registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP_EVAL_MAX_CALL_DEPTH 100000
/* Node slots (12 bytes each) of all active calls but the entry's: 32M, about 400 MB.  A
 * variable so that tests can lower it; not part of any API. */
size_t gp_eval_max_frame_slots = (size_t)32 << 20;
#define MAX_OUT 64

/* ------------------------------------------------------------------------------------------ */
/* Values                                                                                      */

enum { V_TENSOR = 0, V_TUPLE = 1, V_FUNC = 2 };

typedef struct FnInfo FnInfo;

typedef struct Val {
  int32_t rc;
  int32_t kind;
  int32_t n;          /* tuple fields / closure captures */
  size_t bytes;       /* intermediate bytes this tensor counts for (0: input or constant) */
  GPTensor *t;        /* tensor: owned reference */
  struct Val **items; /* tuple fields / captures (a NULL capture is the closure itself) */
  FnInfo *fn;         /* closure */
} Val;

/* ------------------------------------------------------------------------------------------ */
/* Plans                                                                                       */

enum { ROLE_NONE = 0, ROLE_PARAM = 1, ROLE_FREE = 2, ROLE_LETVAR = 3, ROLE_INNER = 4 };

typedef struct Region {
  int32_t parent, depth;
  int32_t root; /* resolved id of the region's value */
  int32_t *steps;
  size_t nsteps, capsteps;
  int32_t *ext; /* ids outside the region read from inside it (with repeats) */
  size_t next, capext;
} Region;

typedef struct Plan {
  int32_t *uses; /* initial use count per id */
  Region *regions;
  int32_t nregions;
  int32_t *aux;  /* IF: its then region (else is then + 1); FUNCTION_EXPR: offset in capt */
  int32_t *capt; /* per function expression: resolved id per free var of the callee, -1 = self */
  int32_t root;  /* resolved id of the body */
} Plan;

struct FnInfo {
  GPFunctionExpr *fn;
  const char *gname; /* the global function it is, or is inside (for messages) */
  GPNodeIndex ni;    /* of fn->body; kids rewritten to resolved ids once the plan is built */
  uint8_t *role;     /* per id, for vars */
  int32_t *param_slot; /* per param: its id, or -1 when the body never reads it */
  int32_t nfree;
  GPVar **free_vars;
  int32_t *free_slot;
  GPPtrMap var_ids; /* var -> id + 1 (built on demand) */
  bool var_ids_built;
  Plan *plan;
};

/* ------------------------------------------------------------------------------------------ */
/* The evaluation context                                                                      */

typedef struct Frame {
  FnInfo *fi;
  Val **slots;
  int32_t *uses;
  int32_t ret_slot; /* id waiting for the result in the caller's frame; -1: the entry */
  size_t counted;   /* node slots it adds to Ctx.frame_slots (0 for the entry) */
} Frame;

typedef struct Act {
  int32_t frame;
  int32_t region;
  int32_t wait; /* the IF waiting for this region, or -1: the frame's body */
  size_t pc;
} Act;

typedef struct Ctx {
  const GPModule *m;
  const char *source;
  GPPtrMap fninfo; /* GPFunctionExpr* -> FnInfo* */
  GPPtrMap gfn;    /* GPGlobalVar* -> FnInfo* */
  size_t live, peak;
  int64_t ops;
  int32_t threads;
  GPVec freeq;
  size_t frame_slots; /* node slots of the active frames */
  Frame *frames;
  size_t nframes, capframes;
  Act *acts;
  size_t nacts, capacts;
  /* scratch for op calls */
  GPTensor **ins;
  size_t capins;
  const GPType **types;
  size_t captypes;
  /* ABI 1.3 options: external functions and the value observer */
  bool external;
  int (*observe)(void *user, const GPExpr *node, int32_t field, const DLTensor *value);
  void *observe_user;
} Ctx;

/* Report v (computed for node) to the observer; -1 when it stops the evaluation. */
static int observe_val(Ctx *C, const GPExpr *node, const Val *v) {
  if (!C->observe) return 0;
  int rc = 0;
  if (v->kind == V_TENSOR) {
    rc = C->observe(C->observe_user, node, -1, &v->t->dl);
  } else if (v->kind == V_TUPLE) {
    for (int32_t j = 0; j < v->n && rc == 0; j++)
      if (v->items[j]->kind == V_TENSOR) rc = C->observe(C->observe_user, node, j, &v->items[j]->t->dl);
  }
  if (rc != 0 && gp_error_kind() == GP_OK) gp_error_set(GP_ERR_VALUE, "eval: the value observer stopped the evaluation");
  return rc != 0 ? -1 : 0;
}

static void live_add(Ctx *C, size_t b) {
  C->live += b;
  if (C->live > C->peak) C->peak = C->live;
}

static Val *val_new(int32_t kind) {
  Val *v = gp_calloc(1, sizeof *v);
  v->rc = 1;
  v->kind = kind;
  return v;
}

/* Takes t.  counted: an intermediate (its bytes go into live / peak). */
static Val *val_tensor(Ctx *C, GPTensor *t, bool counted) {
  Val *v = val_new(V_TENSOR);
  v->t = t;
  if (counted) {
    v->bytes = gp_tensor_nbytes(t);
    live_add(C, v->bytes);
  }
  return v;
}

/* A DLManagedTensor viewing t's data that holds a reference to t; the shape (and strides) are
 * owned by the managed struct.  Used for DLPack export and for zero-copy reshapes. */
typedef struct {
  DLManagedTensor m;
  int64_t dims[]; /* shape, then strides when present */
} Exported;

static void exported_deleter(DLManagedTensor *self) {
  Exported *x = (Exported *)self;
  gp_release(x->m.manager_ctx);
  gp_free(x);
}

static DLManagedTensor *export_view(GPTensor *t, int32_t nd, const int64_t *shape, const int64_t *strides) {
  size_t ndims = (size_t)nd * (strides ? 2 : 1);
  Exported *x = gp_calloc(1, sizeof *x + ndims * sizeof(int64_t));
  x->m.dl_tensor = t->dl;
  x->m.dl_tensor.ndim = nd;
  if (nd) memcpy(x->dims, shape, (size_t)nd * sizeof(int64_t));
  if (strides && nd) memcpy(x->dims + nd, strides, (size_t)nd * sizeof(int64_t));
  x->m.dl_tensor.shape = nd ? x->dims : NULL;
  x->m.dl_tensor.strides = strides && nd ? x->dims + nd : NULL;
  x->m.manager_ctx = gp_retain(t);
  x->m.deleter = exported_deleter;
  return &x->m;
}

static void val_release(Ctx *C, Val *v) {
  if (!v || --v->rc > 0) return;
  gp_vec_push(&C->freeq, v);
  while (C->freeq.len) {
    Val *x = gp_vec_pop(&C->freeq);
    if (x->kind == V_TENSOR) {
      C->live -= x->bytes;
      gp_release(x->t);
    }
    for (int32_t i = 0; i < x->n; i++) {
      Val *c = x->items[i];
      if (c && --c->rc == 0) gp_vec_push(&C->freeq, c);
    }
    gp_free(x->items);
    gp_free(x);
  }
}

static const char *kind_word(const Val *v) {
  return v->kind == V_TENSOR ? "tensor" : v->kind == V_TUPLE ? "tuple" : "function";
}

/* ------------------------------------------------------------------------------------------ */
/* Messages                                                                                    */

/* Prefix the pending error with "<source>:<line>:<col>: in @fn" (or "in @fn"). */
static void prefix_node(Ctx *C, const FnInfo *fi, const GPExpr *e) {
  if (!gp_error_kind()) gp_error_set(GP_ERR_INTERNAL, "failed without a message");
  if (e && e->line)
    gp_error_prefix("%s:%u:%u: in @%s", C->source, e->line, e->col, fi->gname);
  else
    gp_error_prefix("in @%s", fi->gname);
}

static char *type_str(const GPType *t) {
  GPBuf b = {0};
  if (t)
    gp_type_print(&b, t);
  else
    gp_buf_puts(&b, "?");
  return gp_buf_take(&b);
}

static const char *var_name(const GPVar *v) { return v->name && v->name[0] ? v->name : "_"; }

/* ------------------------------------------------------------------------------------------ */
/* Function info: node index, roles of vars, free vars                                         */

static void fninfo_free(FnInfo *fi) {
  if (!fi) return;
  if (fi->plan) {
    Plan *P = fi->plan;
    for (int32_t r = 0; r < P->nregions; r++) {
      gp_free(P->regions[r].steps);
      gp_free(P->regions[r].ext);
    }
    gp_free(P->regions);
    gp_free(P->uses);
    gp_free(P->aux);
    gp_free(P->capt);
    gp_free(P);
  }
  gp_ni_free(&fi->ni);
  gp_free(fi->role);
  gp_free(fi->param_slot);
  gp_free(fi->free_vars);
  gp_free(fi->free_slot);
  gp_map_free(&fi->var_ids);
  gp_free(fi);
}

static FnInfo *fninfo_get(Ctx *C, GPFunctionExpr *fn, const char *gname) {
  FnInfo *fi = gp_map_get(&C->fninfo, fn);
  if (fi) return fi;
  fi = gp_calloc(1, sizeof *fi);
  fi->fn = fn;
  fi->gname = gname;
  if (gp_ni_build(&fi->ni, fn->body, GP_NI_LET_VALUE_FIRST) != 0) {
    gp_free(fi);
    return NULL;
  }
  size_t n = fi->ni.n;
  fi->role = gp_calloc(n, 1);
  fi->param_slot = gp_malloc((size_t)(fn->nparams ? fn->nparams : 1) * sizeof(int32_t));
  for (int32_t i = 0; i < fn->nparams; i++) fi->param_slot[i] = -1;
  /* binders inside the body */
  for (size_t i = 0; i < n; i++) {
    GPExpr *e = fi->ni.nodes[i];
    if (gp_kind(e) == GP_TI_LET) {
      fi->role[gp_ni_kid(&fi->ni, (int32_t)i, 0)] = ROLE_LETVAR;
    } else if (gp_kind(e) == GP_TI_FUNCTION_EXPR) {
      int32_t np = GP_AS(GPFunctionExpr, e)->nparams;
      for (int32_t k = 0; k < np; k++) {
        int32_t v = gp_ni_kid(&fi->ni, (int32_t)i, k);
        if (fi->role[v] != ROLE_LETVAR) fi->role[v] = ROLE_INNER;
      }
    }
  }
  /* params of this function */
  GPPtrMap pmap = {0};
  if (fn->nparams > 8) {
    gp_map_reserve(&pmap, (size_t)fn->nparams);
    for (int32_t k = 0; k < fn->nparams; k++) gp_map_put(&pmap, fn->params[k], (void *)(intptr_t)(k + 1));
  }
  GPVec fv = {0};
  for (size_t i = 0; i < n; i++) {
    GPExpr *e = fi->ni.nodes[i];
    if (gp_kind(e) != GP_TI_VAR) continue;
    int32_t pi = -1;
    if (fn->nparams > 8) {
      pi = (int32_t)(intptr_t)gp_map_get(&pmap, e) - 1;
    } else {
      for (int32_t k = 0; k < fn->nparams; k++)
        if ((GPExpr *)fn->params[k] == e) pi = k;
    }
    if (pi >= 0) {
      fi->role[i] = ROLE_PARAM;
      fi->param_slot[pi] = (int32_t)i;
    } else if (fi->role[i] == ROLE_NONE) {
      fi->role[i] = ROLE_FREE;
      gp_vec_push(&fv, e);
      gp_vec_push(&fv, (void *)(intptr_t)i);
    }
  }
  gp_map_free(&pmap);
  fi->nfree = (int32_t)(fv.len / 2);
  fi->free_vars = gp_malloc((size_t)(fi->nfree ? fi->nfree : 1) * sizeof(GPVar *));
  fi->free_slot = gp_malloc((size_t)(fi->nfree ? fi->nfree : 1) * sizeof(int32_t));
  for (int32_t k = 0; k < fi->nfree; k++) {
    fi->free_vars[k] = fv.items[2 * k];
    fi->free_slot[k] = (int32_t)(intptr_t)fv.items[2 * k + 1];
  }
  gp_vec_free(&fv);
  gp_map_put(&C->fninfo, fn, fi);
  return fi;
}

static int32_t var_id(FnInfo *fi, const GPVar *v) {
  if (!fi->var_ids_built) {
    fi->var_ids_built = true;
    for (size_t i = 0; i < fi->ni.n; i++)
      if (gp_kind(fi->ni.nodes[i]) == GP_TI_VAR) gp_map_put(&fi->var_ids, fi->ni.nodes[i], (void *)(intptr_t)(i + 1));
  }
  return (int32_t)(intptr_t)gp_map_get(&fi->var_ids, v) - 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Plan building                                                                               */

static int32_t region_new(Plan *P, int32_t *cap, int32_t parent) {
  if (P->nregions == *cap) {
    *cap = *cap ? *cap * 2 : 4;
    P->regions = gp_realloc(P->regions, (size_t)*cap * sizeof *P->regions);
  }
  Region *r = &P->regions[P->nregions];
  memset(r, 0, sizeof *r);
  r->parent = parent;
  r->depth = parent < 0 ? 0 : P->regions[parent].depth + 1;
  r->root = -1;
  return P->nregions++;
}

static int32_t region_lca(const Plan *P, int32_t a, int32_t b) {
  while (a != b) {
    if (P->regions[a].depth >= P->regions[b].depth)
      a = P->regions[a].parent;
    else
      b = P->regions[b].parent;
  }
  return a;
}

static void push_i32(int32_t **arr, size_t *len, size_t *cap, int32_t v) {
  if (*len == *cap) {
    *cap = *cap ? *cap * 2 : 8;
    *arr = gp_realloc(*arr, *cap * sizeof **arr);
  }
  (*arr)[(*len)++] = v;
}

typedef struct Builder {
  Ctx *C;
  FnInfo *fi;
  Plan *P;
  int32_t *vres;
  int32_t *region;
} Builder;

static int scope_error(Builder *B, int32_t user, int32_t t) {
  GPExpr *e = B->fi->ni.nodes[t];
  if (gp_kind(e) == GP_TI_VAR)
    gp_error_set(GP_ERR_VALUE, "%%%s is used outside its scope", var_name(GP_AS(GPVar, e)));
  else
    gp_error_set(GP_ERR_UNSUPPORTED, "a %s node is shared in a way the evaluator cannot order", gp_expr_kind_name(e));
  prefix_node(B->C, B->fi, B->fi->ni.nodes[user]);
  return -1;
}

/* The region a resolved target lives in (params and captured vars: the body's region). */
static int target_region(Builder *B, int32_t user, int32_t t, int32_t *out) {
  GPExpr *e = B->fi->ni.nodes[t];
  if (gp_kind(e) == GP_TI_VAR) {
    uint8_t r = B->fi->role[t];
    if (r != ROLE_PARAM && r != ROLE_FREE) return scope_error(B, user, t);
    *out = 0;
    return 0;
  }
  if (B->region[t] < 0) return scope_error(B, user, t);
  *out = B->region[t];
  return 0;
}

/* A use of t (original id) by step p. */
static int add_edge(Builder *B, int32_t p, int32_t t0) {
  int32_t t = B->vres[t0], rt;
  if (target_region(B, p, t, &rt) != 0) return -1;
  B->P->uses[t]++;
  int32_t r = B->region[p];
  if (rt == r) {
    if (t > p && gp_kind(B->fi->ni.nodes[t]) != GP_TI_VAR) return scope_error(B, p, t);
    return 0;
  }
  while (r != rt) {
    if (r < 0) return scope_error(B, p, t);
    Region *R = &B->P->regions[r];
    push_i32(&R->ext, &R->next, &R->capext, t);
    r = R->parent;
  }
  return 0;
}

/* The root of branch region `br` of the IF p: the edge from p to it. */
static int add_branch_edge(Builder *B, int32_t p, int32_t t0, int32_t br) {
  int32_t t = B->vres[t0], rt;
  if (target_region(B, p, t, &rt) != 0) return -1;
  B->P->regions[br].root = t;
  B->P->uses[t]++;
  if (rt == br) return 0;
  int32_t r = B->region[p];
  while (r != rt) {
    if (r < 0) return scope_error(B, p, t);
    Region *R = &B->P->regions[r];
    push_i32(&R->ext, &R->next, &R->capext, t);
    r = R->parent;
  }
  return 0;
}

static bool is_step(int32_t kind) {
  switch (kind) {
  case GP_TI_CALL:
  case GP_TI_TUPLE:
  case GP_TI_TUPLE_GET_ITEM:
  case GP_TI_IF:
  case GP_TI_FUNCTION_EXPR:
  case GP_TI_CONSTANT:
  case GP_TI_GLOBAL_VAR:
  case GP_TI_OP: return true;
  default: return false;
  }
}

static int plan_build(Ctx *C, FnInfo *fi) {
  GPNodeIndex *ni = &fi->ni;
  int32_t n = (int32_t)ni->n;
  Plan *P = gp_calloc(1, sizeof *P);
  P->uses = gp_calloc((size_t)n, sizeof(int32_t));
  P->aux = gp_malloc((size_t)n * sizeof(int32_t));
  int32_t *vres = gp_malloc((size_t)n * sizeof(int32_t));
  int32_t *region = gp_malloc((size_t)n * sizeof(int32_t));
  Builder B = {C, fi, P, vres, region};
  int32_t regcap = 0;
  size_t capt_len = 0, capt_cap = 0;
  int rc = -1;
  for (int32_t i = 0; i < n; i++) {
    vres[i] = i;
    region[i] = -1;
    P->aux[i] = -1;
  }
  /* resolution: a let var reads the let's value, a let reads its body */
  for (int32_t i = 0; i < n; i++)
    if (gp_kind(ni->nodes[i]) == GP_TI_LET) {
      vres[gp_ni_kid(ni, i, 0)] = gp_ni_kid(ni, i, 1);
      vres[i] = gp_ni_kid(ni, i, 2);
    }
  for (int32_t i = 0; i < n; i++) {
    int32_t x = i;
    int32_t hops = 0;
    while (vres[x] != x) {
      x = vres[x];
      if (++hops > n) break;
    }
    GPExpr *tx = ni->nodes[x];
    if (hops > n || gp_kind(tx) == GP_TI_LET || (gp_kind(tx) == GP_TI_VAR && fi->role[x] == ROLE_LETVAR)) {
      GPExpr *e = ni->nodes[i];
      gp_error_set(GP_ERR_VALUE, "a let binds %s to itself",
                   gp_kind(e) == GP_TI_VAR ? var_name(GP_AS(GPVar, e)) : "a value");
      prefix_node(C, fi, e);
      goto done;
    }
    for (int32_t y = i; vres[y] != x;) {
      int32_t nx = vres[y];
      vres[y] = x;
      y = nx;
    }
  }
  /* regions: demands flow from parents (higher ids) to children */
  region_new(P, &regcap, -1);
  region[n - 1] = 0;
#define DEMAND(c, R)                                                        \
  do {                                                                      \
    int32_t c_ = (c), R_ = (R);                                             \
    region[c_] = region[c_] < 0 ? R_ : region_lca(P, region[c_], R_);      \
  } while (0)
  for (int32_t id = n - 1; id >= 0; id--) {
    int32_t R = region[id];
    if (R < 0) continue;
    GPExpr *e = ni->nodes[id];
    int32_t nk = ni->kid_off[id + 1] - ni->kid_off[id];
    switch (gp_kind(e)) {
    case GP_TI_CALL: {
      int32_t ck = gp_kind(GP_AS(GPCall, e)->op);
      if (ck != GP_TI_OP && ck != GP_TI_GLOBAL_VAR) DEMAND(gp_ni_kid(ni, id, 0), R);
      for (int32_t k = 1; k < nk; k++) DEMAND(gp_ni_kid(ni, id, k), R);
      break;
    }
    case GP_TI_TUPLE:
    case GP_TI_TUPLE_GET_ITEM:
      for (int32_t k = 0; k < nk; k++) DEMAND(gp_ni_kid(ni, id, k), R);
      break;
    case GP_TI_LET:
      DEMAND(gp_ni_kid(ni, id, 1), R);
      DEMAND(gp_ni_kid(ni, id, 2), R);
      break;
    case GP_TI_IF: {
      int32_t T = region_new(P, &regcap, R);
      int32_t E = region_new(P, &regcap, R);
      P->aux[id] = T;
      DEMAND(gp_ni_kid(ni, id, 0), R);
      DEMAND(gp_ni_kid(ni, id, 1), T);
      DEMAND(gp_ni_kid(ni, id, 2), E);
      break;
    }
    default: break;
    }
  }
#undef DEMAND
  /* steps (post-order within each region) and use counts */
  for (int32_t p = 0; p < n; p++) {
    int32_t R = region[p];
    GPExpr *e = ni->nodes[p];
    if (R < 0 || !is_step(gp_kind(e))) continue;
    Region *reg = &P->regions[R];
    push_i32(&reg->steps, &reg->nsteps, &reg->capsteps, p);
    int32_t nk = ni->kid_off[p + 1] - ni->kid_off[p];
    switch (gp_kind(e)) {
    case GP_TI_CALL: {
      int32_t ck = gp_kind(GP_AS(GPCall, e)->op);
      if (ck != GP_TI_OP && ck != GP_TI_GLOBAL_VAR && add_edge(&B, p, gp_ni_kid(ni, p, 0)) != 0) goto done;
      for (int32_t k = 1; k < nk; k++)
        if (add_edge(&B, p, gp_ni_kid(ni, p, k)) != 0) goto done;
      break;
    }
    case GP_TI_TUPLE:
    case GP_TI_TUPLE_GET_ITEM:
      for (int32_t k = 0; k < nk; k++)
        if (add_edge(&B, p, gp_ni_kid(ni, p, k)) != 0) goto done;
      break;
    case GP_TI_IF:
      if (add_edge(&B, p, gp_ni_kid(ni, p, 0)) != 0 || add_branch_edge(&B, p, gp_ni_kid(ni, p, 1), P->aux[p]) != 0 ||
          add_branch_edge(&B, p, gp_ni_kid(ni, p, 2), P->aux[p] + 1) != 0)
        goto done;
      break;
    case GP_TI_FUNCTION_EXPR: {
      FnInfo *inner = fninfo_get(C, GP_AS(GPFunctionExpr, e), fi->gname);
      if (!inner) goto done;
      P->aux[p] = (int32_t)capt_len;
      for (int32_t k = 0; k < inner->nfree; k++) {
        int32_t v = var_id(fi, inner->free_vars[k]);
        if (v < 0) {
          gp_error_set(GP_ERR_INTERNAL, "free variable %%%s of a function is not in its parent",
                       var_name(inner->free_vars[k]));
          prefix_node(C, fi, e);
          goto done;
        }
        int32_t t = vres[v];
        if (t == p) {
          push_i32(&P->capt, &capt_len, &capt_cap, -1);
          continue;
        }
        if (add_edge(&B, p, v) != 0) goto done;
        push_i32(&P->capt, &capt_len, &capt_cap, t);
      }
      break;
    }
    default: break;
    }
  }
  {
    int32_t t = vres[n - 1], rt;
    if (target_region(&B, n - 1, t, &rt) != 0) goto done;
    P->root = t;
    P->uses[t]++;
    P->regions[0].root = t;
  }
  /* runtime reads resolved ids */
  for (int32_t k = 0; k < ni->kid_off[n]; k++) ni->kids[k] = vres[ni->kids[k]];
  rc = 0;
done:
  gp_free(vres);
  gp_free(region);
  if (rc == 0) {
    fi->plan = P;
  } else {
    for (int32_t r = 0; r < P->nregions; r++) {
      gp_free(P->regions[r].steps);
      gp_free(P->regions[r].ext);
    }
    gp_free(P->regions);
    gp_free(P->uses);
    gp_free(P->aux);
    gp_free(P->capt);
    gp_free(P);
  }
  return rc;
}

/* A global function by its global var (cached). */
static FnInfo *global_fn(Ctx *C, const GPGlobalVar *g) {
  FnInfo *fi = gp_map_get(&C->gfn, g);
  if (fi) return fi;
  int32_t i = gp_module_find(C->m, g->name);
  if (i < 0) {
    gp_error_set(GP_ERR_NOT_FOUND, "@%s is not a function of the module", g->name);
    return NULL;
  }
  fi = fninfo_get(C, C->m->funcs[i], C->m->gvars[i]->name);
  if (!fi) return NULL;
  if (fi->nfree) {
    gp_error_set(GP_ERR_VALUE, "@%s: free variable %%%s", fi->gname, var_name(fi->free_vars[0]));
    return NULL;
  }
  gp_map_put(&C->gfn, g, fi);
  return fi;
}

/* ------------------------------------------------------------------------------------------ */
/* Running                                                                                     */

static void use(Ctx *C, Frame *F, int32_t t) {
  if (F->uses[t] > 0 && --F->uses[t] == 0 && F->slots[t]) {
    val_release(C, F->slots[t]);
    F->slots[t] = NULL;
  }
}

static void store(Ctx *C, Frame *F, int32_t id, Val *v) {
  if (F->uses[id] == 0) {
    val_release(C, v);
    return;
  }
  if (F->slots[id]) val_release(C, F->slots[id]);
  F->slots[id] = v;
}

/* Test hook: values still held by a frame that returned normally (every use consumed means
 * none; the tests check it stays 0).  Not part of any API. */
size_t gp_eval_leftover_values;

static void frame_free(Ctx *C, Frame *F, bool returned) {
  if (F->slots) {
    size_t n = F->fi->ni.n, left = 0;
    C->frame_slots -= F->counted;
    for (size_t i = 0; i < n; i++)
      if (F->slots[i]) {
        val_release(C, F->slots[i]);
        left++;
      }
    if (returned && left) __atomic_fetch_add(&gp_eval_leftover_values, left, __ATOMIC_RELAXED);
  }
  gp_free(F->slots);
  gp_free(F->uses);
  F->slots = NULL;
  F->uses = NULL;
}

static void push_act(Ctx *C, int32_t frame, int32_t region, int32_t wait) {
  if (C->nacts == C->capacts) {
    C->capacts = C->capacts ? C->capacts * 2 : 64;
    C->acts = gp_realloc(C->acts, C->capacts * sizeof *C->acts);
  }
  C->acts[C->nacts++] = (Act){frame, region, wait, 0};
}

/* Push a frame for fi with args (taken; nargs == fi->fn->nparams) and closure (borrowed, may
 * be NULL).  `at` is the calling node for messages (NULL for the entry). */
static int push_frame(Ctx *C, FnInfo *fi, Val **args, Val *closure, int32_t ret_slot, const FnInfo *caller,
                      const GPExpr *at) {
  if (C->nframes >= GP_EVAL_MAX_CALL_DEPTH) {
    for (int32_t i = 0; i < fi->fn->nparams; i++) val_release(C, args[i]);
    gp_error_set(GP_ERR_VALUE, "call depth exceeds %d at @%s (runaway recursion?)", GP_EVAL_MAX_CALL_DEPTH,
                 fi->gname);
    if (caller) prefix_node(C, caller, at);
    return -1;
  }
  if (!fi->plan && plan_build(C, fi) != 0) {
    for (int32_t i = 0; i < fi->fn->nparams; i++) val_release(C, args[i]);
    return -1;
  }
  for (int32_t i = 0; C->observe && i < fi->fn->nparams; i++)
    if (observe_val(C, &fi->fn->params[i]->base, args[i]) != 0) {
      for (int32_t j = 0; j < fi->fn->nparams; j++) val_release(C, args[j]);
      return -1;
    }
  Plan *P = fi->plan;
  size_t n = fi->ni.n;
  /* nested frames of a big function: bound their memory before it runs out */
  if (C->nframes && C->frame_slots + n > gp_eval_max_frame_slots) {
    for (int32_t i = 0; i < fi->fn->nparams; i++) val_release(C, args[i]);
    gp_error_set(GP_ERR_VALUE,
                 "call depth exceeds %zu at @%s: the active calls would hold more than %zu node slots (runaway "
                 "recursion?)",
                 C->nframes, fi->gname, gp_eval_max_frame_slots);
    if (caller) prefix_node(C, caller, at);
    return -1;
  }
  size_t counted = C->nframes ? n : 0;
  C->frame_slots += counted;
  if (C->nframes == C->capframes) {
    C->capframes = C->capframes ? C->capframes * 2 : 16;
    C->frames = gp_realloc(C->frames, C->capframes * sizeof *C->frames);
  }
  Frame *F = &C->frames[C->nframes++];
  F->fi = fi;
  F->ret_slot = ret_slot;
  F->counted = counted;
  F->slots = gp_calloc(n, sizeof(Val *));
  F->uses = gp_malloc(n * sizeof(int32_t));
  memcpy(F->uses, P->uses, n * sizeof(int32_t));
  for (int32_t i = 0; i < fi->fn->nparams; i++) {
    int32_t s = fi->param_slot[i];
    if (s >= 0)
      store(C, F, s, args[i]);
    else
      val_release(C, args[i]);
  }
  for (int32_t k = 0; k < fi->nfree; k++) {
    Val *cap = closure && closure->items[k] ? closure->items[k] : closure;
    if (!cap) continue;
    cap->rc++;
    store(C, F, fi->free_slot[k], cap);
  }
  push_act(C, (int32_t)(C->nframes - 1), 0, -1);
  return 0;
}

static Val *slot_get(Ctx *C, Frame *F, int32_t t, int32_t user) {
  Val *v = F->slots[t];
  if (!v) {
    gp_error_set(GP_ERR_INTERNAL, "the value of a %s node is not available (evaluator ordering)",
                 gp_expr_kind_name(F->fi->ni.nodes[t]));
    prefix_node(C, F->fi, F->fi->ni.nodes[user]);
  }
  return v;
}

static int step_op_call(Ctx *C, int32_t fidx, int32_t p, const GPCall *call) {
  Frame *F = &C->frames[fidx];
  const GPNodeIndex *ni = &F->fi->ni;
  const GPOp *op = (const GPOp *)call->op;
  int32_t nargs = call->nargs;
  if ((size_t)nargs > C->captypes) {
    C->captypes = (size_t)nargs * 2;
    C->types = gp_realloc(C->types, C->captypes * sizeof *C->types);
  }
  size_t nin = 0;
  for (int32_t i = 0; i < nargs; i++) {
    Val *v = slot_get(C, F, gp_ni_kid(ni, p, i + 1), p);
    if (!v) return -1;
    size_t need = nin + (v->kind == V_TUPLE ? (size_t)v->n : 1);
    if (need > C->capins) {
      C->capins = need * 2 + 8;
      C->ins = gp_realloc(C->ins, C->capins * sizeof *C->ins);
    }
    if (v->kind == V_TENSOR) {
      C->ins[nin++] = v->t;
      C->types[i] = NULL;
    } else if (v->kind == V_TUPLE) {
      const GPType *fs_small[16];
      const GPType **fs = v->n > 16 ? gp_malloc((size_t)v->n * sizeof *fs) : fs_small;
      for (int32_t j = 0; j < v->n; j++) {
        if (v->items[j]->kind != V_TENSOR) {
          if (fs != fs_small) gp_free(fs);
          gp_error_set(GP_ERR_UNSUPPORTED, "%s: argument %d field %d is a %s, not a tensor", op->name, (int)i, (int)j,
                       kind_word(v->items[j]));
          prefix_node(C, F->fi, &call->base);
          return -1;
        }
        C->ins[nin++] = v->items[j]->t;
        fs[j] = gp_tensor_type(v->items[j]->t);
      }
      C->types[i] = gp_type_tuple(v->n, fs);
      if (fs != fs_small) gp_free(fs);
      if (!C->types[i]) {
        prefix_node(C, F->fi, &call->base);
        return -1;
      }
    } else {
      gp_error_set(GP_ERR_UNSUPPORTED, "%s: argument %d is a function, not a tensor", op->name, (int)i);
      prefix_node(C, F->fi, &call->base);
      return -1;
    }
  }
  /* a reshape of compact data: a view of the same bytes, no copy */
  if ((op->flags & GP_OP_RESHAPE_ONLY) && nargs == 1 && nin == 1 && !C->types[0] && C->ins[0]->dl.data &&
      gp_tensor_is_compact(C->ins[0])) {
    Val *src = slot_get(C, F, gp_ni_kid(ni, p, 1), p);
    const GPType *at = gp_tensor_type(C->ins[0]);
    const GPType *rt = at ? gp_op_infer(op, call->attrs, &at, 1) : NULL;
    if (!rt) {
      prefix_node(C, F->fi, &call->base);
      return -1;
    }
    if (rt->kind == GP_TYPE_TENSOR && gp_dtype_eq(rt->tensor.dtype, at->tensor.dtype) &&
        gp_type_numel(rt) == gp_type_numel(at)) {
      GPTensor *view = gp_tensor_from_dlpack(export_view(C->ins[0], rt->n, rt->tensor.shape, NULL));
      if (!view) {
        prefix_node(C, F->fi, &call->base);
        return -1;
      }
      C->ops++;
      /* counted like its source (which it keeps alive) */
      Val *res = val_tensor(C, view, src->bytes > 0);
      if (observe_val(C, &call->base, res) != 0) { /* a view is an op call's result too */
        val_release(C, res);
        return -1;
      }
      use(C, F, gp_ni_kid(ni, p, 1));
      store(C, F, p, res);
      return 0;
    }
  }
  GPTensor *outs[MAX_OUT];
  const GPType *out_type = NULL;
  int32_t nout = 0;
  if (gp_eval_op(op, call->attrs, nargs, C->types, (int32_t)nin, C->ins, C->threads, &out_type, outs, MAX_OUT,
                 &nout) != 0) {
    prefix_node(C, F->fi, &call->base);
    return -1;
  }
  C->ops++;
  Val *res;
  if (out_type->kind == GP_TYPE_TUPLE) {
    res = val_new(V_TUPLE);
    res->n = nout;
    res->items = gp_malloc((size_t)(nout ? nout : 1) * sizeof(Val *));
    for (int32_t j = 0; j < nout; j++) res->items[j] = val_tensor(C, outs[j], true);
  } else {
    res = val_tensor(C, outs[0], true);
  }
  if (observe_val(C, &call->base, res) != 0) {
    val_release(C, res);
    return -1;
  }
  for (int32_t i = 0; i < nargs; i++) use(C, F, gp_ni_kid(ni, p, i + 1));
  store(C, F, p, res);
  return 0;
}

static bool tensor_matches(const GPType *want, const GPTensor *t);

/* The global function `graphpass.ext.<Compiler>.run` for a callee with a Compiler attribute
 * (new reference), or NULL (no error) when external calls are off or none is registered. */
static GPPackedFunc *external_runner(Ctx *C, const GPFunctionExpr *fn, const char **compiler) {
  if (!C->external || !fn->attrs) return NULL;
  const GPAttrValue *c = gp_attrs_get(fn->attrs, "Compiler");
  if (!c || c->kind != GP_ATTR_STR || !c->s || !c->s[0]) return NULL;
  GPBuf b = {0};
  gp_buf_printf(&b, "graphpass.ext.%s.run", c->s);
  GPPackedFunc *f = gp_func_get(b.data);
  gp_buf_free(&b);
  *compiler = c->s;
  return f;
}

/* One result tensor of an external function against its declared type. */
static int external_check(const FnInfo *callee, const GPType *want, const GPAny *got, int32_t field) {
  if (got->type_index != GP_TI_TENSOR || !got->v_obj) {
    gp_error_set(GP_ERR_VALUE, "@%s: the external runner returned %s for result %d, not a tensor", callee->gname,
                 got->type_index == GP_TI_NONE ? "None" : "another kind of value", (int)field);
    return -1;
  }
  const GPTensor *t = (const GPTensor *)got->v_obj;
  if (!want || want->kind != GP_TYPE_TENSOR || !tensor_matches(want, t) || !t->dl.data) {
    char *ws = want ? type_str(want) : gp_strdup("?");
    char *gs = type_str(gp_tensor_type(t));
    gp_error_set(GP_ERR_VALUE, "@%s: the external runner returned %s for result %d; the function's type says %s",
                 callee->gname, gs, (int)field, ws);
    gp_free(ws);
    gp_free(gs);
    return -1;
  }
  return 0;
}

/* Run a call of an external function through its runner; stores the result at p. */
static int step_external(Ctx *C, int32_t fidx, int32_t p, const GPCall *call, FnInfo *callee, GPPackedFunc *f,
                         const char *compiler) {
  Frame *F = &C->frames[fidx];
  const GPNodeIndex *ni = &F->fi->ni;
  int32_t n = call->nargs;
  GPAny *args = gp_calloc((size_t)n + 1, sizeof(GPAny));
  args[0].type_index = GP_TI_FUNCTION_EXPR;
  args[0].v_obj = &callee->fn->base.obj;
  for (int32_t i = 0; i < n; i++) {
    Val *v = slot_get(C, F, gp_ni_kid(ni, p, i + 1), p);
    if (!v) {
      gp_free(args);
      return -1;
    }
    if (v->kind != V_TENSOR) {
      gp_free(args);
      gp_error_set(GP_ERR_UNSUPPORTED, "@%s (Compiler=\"%s\"): argument %d is a %s; external functions take tensors",
                   callee->gname, compiler, (int)i, kind_word(v));
      prefix_node(C, F->fi, &call->base);
      return -1;
    }
    args[i + 1].type_index = GP_TI_DLTENSOR_PTR;
    args[i + 1].v_ptr = &v->t->dl;
  }
  GPAny res = {0};
  int rc = f->call(f->self, args, n + 1, &res);
  gp_free(args);
  if (rc != 0) {
    if (gp_error_kind() == GP_OK) gp_error_set(GP_ERR_INTERNAL, "the runner failed without an error message");
    gp_error_prefix("graphpass.ext.%s.run(@%s)", compiler, callee->gname);
    prefix_node(C, F->fi, &call->base);
    gp_any_clear(&res);
    return -1;
  }
  const GPType *rt = callee->fn->ret_type ? callee->fn->ret_type : callee->fn->body->checked_type;
  Val *out = NULL;
  if (rt && rt->kind == GP_TYPE_TUPLE) {
    const GPArray *arr = res.type_index == GP_TI_ARRAY ? (const GPArray *)res.v_obj : NULL;
    if (!arr || arr->size != rt->n) {
      gp_error_set(GP_ERR_VALUE, "@%s: the external runner returned %s; the function's result is a tuple of %d",
                   callee->gname, arr ? "an array of another length" : "no array", (int)rt->n);
      goto bad;
    }
    out = val_new(V_TUPLE);
    out->items = gp_malloc((size_t)(arr->size ? arr->size : 1) * sizeof(Val *));
    for (int32_t j = 0; j < rt->n; j++) {
      if (external_check(callee, rt->tuple.fields[j], &arr->items[j], j) != 0) goto bad;
      out->items[out->n++] = val_tensor(C, gp_retain(arr->items[j].v_obj), true);
    }
  } else {
    if (external_check(callee, rt, &res, 0) != 0) goto bad;
    out = val_tensor(C, gp_retain(res.v_obj), true);
  }
  gp_any_clear(&res);
  C->ops++;
  for (int32_t i = 0; i < n; i++) use(C, F, gp_ni_kid(ni, p, i + 1));
  store(C, F, p, out);
  return 0;
bad:
  if (out) val_release(C, out);
  gp_any_clear(&res);
  prefix_node(C, F->fi, &call->base);
  return -1;
}

static int step_call(Ctx *C, int32_t fidx, int32_t p) {
  Frame *F = &C->frames[fidx];
  FnInfo *fi = F->fi;
  const GPNodeIndex *ni = &fi->ni;
  const GPCall *call = GP_AS(const GPCall, ni->nodes[p]);
  int32_t ck = gp_kind(call->op);
  if (ck == GP_TI_OP) return step_op_call(C, fidx, p, call);
  FnInfo *callee;
  Val *closure = NULL;
  if (ck == GP_TI_GLOBAL_VAR) {
    callee = global_fn(C, GP_AS(const GPGlobalVar, call->op));
    if (!callee) {
      prefix_node(C, fi, &call->base);
      return -1;
    }
    const char *compiler = NULL;
    GPPackedFunc *ext = external_runner(C, callee->fn, &compiler);
    if (ext) {
      int rc = call->nargs == callee->fn->nparams ? step_external(C, fidx, p, call, callee, ext, compiler) : -2;
      gp_release(ext);
      if (rc != -2) return rc;
    }
  } else {
    closure = slot_get(C, F, gp_ni_kid(ni, p, 0), p);
    if (!closure) return -1;
    if (closure->kind != V_FUNC) {
      gp_error_set(GP_ERR_VALUE, "the callee is a %s, not a function", kind_word(closure));
      prefix_node(C, fi, &call->base);
      return -1;
    }
    callee = closure->fn;
  }
  if (call->nargs != callee->fn->nparams) {
    gp_error_set(GP_ERR_VALUE, "%s%s takes %d arguments, %d given", ck == GP_TI_GLOBAL_VAR ? "@" : "",
                 ck == GP_TI_GLOBAL_VAR ? callee->gname : "the function", (int)callee->fn->nparams,
                 (int)call->nargs);
    prefix_node(C, fi, &call->base);
    return -1;
  }
  Val *small[16];
  Val **args = call->nargs > 16 ? gp_malloc((size_t)call->nargs * sizeof(Val *)) : small;
  for (int32_t i = 0; i < call->nargs; i++) {
    Val *v = slot_get(C, F, gp_ni_kid(ni, p, i + 1), p);
    if (!v) {
      for (int32_t j = 0; j < i; j++) val_release(C, args[j]);
      if (args != small) gp_free(args);
      return -1;
    }
    v->rc++;
    args[i] = v;
  }
  if (closure) closure->rc++;
  for (int32_t i = 0; i < call->nargs; i++) use(C, F, gp_ni_kid(ni, p, i + 1));
  if (ck != GP_TI_GLOBAL_VAR) use(C, F, gp_ni_kid(ni, p, 0));
  /* F may move when frames grow */
  int rc = push_frame(C, callee, args, closure, p, fi, &call->base);
  if (closure) val_release(C, closure);
  if (args != small) gp_free(args);
  return rc;
}

static int step(Ctx *C, int32_t fidx, int32_t p) {
  Frame *F = &C->frames[fidx];
  FnInfo *fi = F->fi;
  const GPNodeIndex *ni = &fi->ni;
  GPExpr *e = ni->nodes[p];
  switch (gp_kind(e)) {
  case GP_TI_CALL: return step_call(C, fidx, p);
  case GP_TI_CONSTANT: {
    GPTensor *t = GP_AS(GPConstant, e)->data;
    bool empty = false;
    for (int32_t i = 0; i < t->dl.ndim; i++) empty |= t->dl.shape[i] == 0;
    if (!t->dl.data && !empty) {
      char *ts = type_str(gp_tensor_type(t));
      gp_error_set(GP_ERR_VALUE,
                   "constant of type %s has no values (a meta[relay.Constant] reference without a #[metadata] "
                   "entry)",
                   ts);
      gp_free(ts);
      prefix_node(C, fi, e);
      return -1;
    }
    store(C, F, p, val_tensor(C, gp_retain(t), false));
    return 0;
  }
  case GP_TI_TUPLE: {
    int32_t nf = GP_AS(GPTuple, e)->n;
    Val *v = val_new(V_TUPLE);
    v->n = 0;
    v->items = gp_malloc((size_t)(nf ? nf : 1) * sizeof(Val *));
    for (int32_t k = 0; k < nf; k++) {
      Val *f = slot_get(C, F, gp_ni_kid(ni, p, k), p);
      if (!f) {
        val_release(C, v);
        return -1;
      }
      f->rc++;
      v->items[v->n++] = f;
    }
    for (int32_t k = 0; k < nf; k++) use(C, F, gp_ni_kid(ni, p, k));
    store(C, F, p, v);
    return 0;
  }
  case GP_TI_TUPLE_GET_ITEM: {
    int32_t t = gp_ni_kid(ni, p, 0), idx = GP_AS(GPTupleGetItem, e)->index;
    Val *tv = slot_get(C, F, t, p);
    if (!tv) return -1;
    if (tv->kind != V_TUPLE || idx < 0 || idx >= tv->n) {
      if (tv->kind != V_TUPLE)
        gp_error_set(GP_ERR_VALUE, "get-item .%d of a %s", (int)idx, kind_word(tv));
      else
        gp_error_set(GP_ERR_VALUE, "get-item .%d of a tuple of %d fields", (int)idx, (int)tv->n);
      prefix_node(C, fi, e);
      return -1;
    }
    Val *f = tv->items[idx];
    f->rc++;
    use(C, F, t);
    store(C, F, p, f);
    return 0;
  }
  case GP_TI_IF: {
    int32_t ct = gp_ni_kid(ni, p, 0);
    Val *cv = slot_get(C, F, ct, p);
    if (!cv) return -1;
    if (cv->kind != V_TENSOR || cv->t->dl.ndim != 0 || !cv->t->dl.data) {
      char *ts = cv->kind == V_TENSOR ? type_str(gp_tensor_type(cv->t)) : gp_strdup(kind_word(cv));
      gp_error_set(GP_ERR_VALUE, "the condition of an if is %s, not a rank-0 bool or integer tensor with a value",
                   ts);
      gp_free(ts);
      prefix_node(C, fi, e);
      return -1;
    }
    DLDataType dt = cv->t->dl.dtype;
    bool yes = dt.code == kDLFloat || dt.code == kDLBfloat ? gp_tensor_get_f64(cv->t, 0) != 0.0
                                                            : gp_tensor_get_i64(cv->t, 0) != 0;
    use(C, F, ct);
    int32_t T = fi->plan->aux[p], chosen = yes ? T : T + 1, other = yes ? T + 1 : T;
    const Region *ro = &fi->plan->regions[other];
    use(C, F, ro->root);
    for (size_t k = 0; k < ro->next; k++) use(C, F, ro->ext[k]);
    push_act(C, fidx, chosen, p);
    return 0;
  }
  case GP_TI_FUNCTION_EXPR: {
    FnInfo *inner = fninfo_get(C, GP_AS(GPFunctionExpr, e), fi->gname);
    if (!inner) return -1;
    Val *v = val_new(V_FUNC);
    v->fn = inner;
    v->items = gp_malloc((size_t)(inner->nfree ? inner->nfree : 1) * sizeof(Val *));
    const int32_t *capt = inner->nfree ? fi->plan->capt + fi->plan->aux[p] : NULL; /* no captures: capt may be NULL */
    for (int32_t k = 0; k < inner->nfree; k++) {
      Val *c = NULL;
      if (capt[k] >= 0) {
        c = slot_get(C, F, capt[k], p);
        if (!c) {
          val_release(C, v);
          return -1;
        }
        c->rc++;
      }
      v->items[v->n++] = c;
    }
    for (int32_t k = 0; k < inner->nfree; k++)
      if (capt[k] >= 0) use(C, F, capt[k]);
    store(C, F, p, v);
    return 0;
  }
  case GP_TI_GLOBAL_VAR: {
    FnInfo *g = global_fn(C, GP_AS(GPGlobalVar, e));
    if (!g) {
      prefix_node(C, fi, e);
      return -1;
    }
    Val *v = val_new(V_FUNC);
    v->fn = g;
    store(C, F, p, v);
    return 0;
  }
  case GP_TI_OP:
    gp_error_set(GP_ERR_UNSUPPORTED, "the op %s is used as a value (only calls of ops can be evaluated)",
                 GP_AS(GPOp, e)->name);
    prefix_node(C, fi, e);
    return -1;
  default:
    gp_error_set(GP_ERR_INTERNAL, "cannot evaluate a %s node", gp_expr_kind_name(e));
    prefix_node(C, fi, e);
    return -1;
  }
}

/* Run until the entry frame returns; *result a new Val. */
static int run(Ctx *C, Val **result) {
  while (C->nacts) {
    Act *a = &C->acts[C->nacts - 1];
    int32_t fidx = a->frame;
    Frame *F = &C->frames[fidx];
    const Region *R = &F->fi->plan->regions[a->region];
    if (a->pc < R->nsteps) {
      int32_t id = R->steps[a->pc++];
      if (step(C, fidx, id) != 0) return -1;
      continue;
    }
    int32_t r = R->root;
    Val *v = F->slots[r];
    if (!v) {
      gp_error_set(GP_ERR_INTERNAL, "the value of a %s node is not available (evaluator ordering)",
                   gp_expr_kind_name(F->fi->ni.nodes[r]));
      prefix_node(C, F->fi, F->fi->ni.nodes[r]);
      return -1;
    }
    v->rc++;
    use(C, F, r);
    int32_t wait = a->wait;
    C->nacts--;
    if (wait >= 0) {
      store(C, F, wait, v);
      continue;
    }
    int32_t ret = F->ret_slot;
    frame_free(C, F, true);
    C->nframes--;
    if (!C->nframes) {
      *result = v;
      return 0;
    }
    store(C, &C->frames[C->nframes - 1], ret, v);
  }
  gp_error_set(GP_ERR_INTERNAL, "evaluator: no result");
  return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Entry                                                                                       */

static bool module_typed(const GPModule *m) {
  for (int32_t i = 0; i < m->num_functions; i++)
    if (!m->funcs[i]->base.checked_type) return false;
  return true;
}

static const GPType *param_type(const GPVar *v) {
  return v->type_annotation ? v->type_annotation : v->base.checked_type;
}

static bool tensor_matches(const GPType *want, const GPTensor *t) {
  if (!want) return true;
  if (want->kind != GP_TYPE_TENSOR || !gp_dtype_eq(want->tensor.dtype, t->dl.dtype) || want->n != t->dl.ndim)
    return false;
  for (int32_t i = 0; i < want->n; i++)
    if (want->tensor.shape[i] != GP_DIM_ANY && want->tensor.shape[i] != t->dl.shape[i]) return false;
  return true;
}

/* The tensor types of a parameter's type in order (a tuple's fields flattened, depth first;
 * NULL -- no annotation -- is one tensor of any type), appended to out; -1 for a function
 * type. */
static int param_leaves(const GPType *t, GPVec *out) {
  GPVec st = {0};
  gp_vec_push(&st, (void *)t);
  int rc = 0;
  while (st.len) {
    const GPType *x = gp_vec_pop(&st);
    if (!x || x->kind == GP_TYPE_TENSOR) gp_vec_push(out, (void *)x);
    else if (x->kind == GP_TYPE_TUPLE)
      for (int32_t i = x->n; i-- > 0;) gp_vec_push(&st, (void *)x->tuple.fields[i]);
    else rc = -1;
  }
  gp_vec_free(&st);
  return rc;
}

/* The inputs are the parameters' tensors in order: one per tensor-typed parameter, a tuple-typed
 * parameter's fields flattened (as gp_eval_function gives a tuple result). */
static int check_inputs(const char *name, const GPFunctionExpr *fn, int32_t nin, GPTensor *const *inputs) {
  GPVec leaves = {0};
  GPVec owner = {0}; /* the parameter of each leaf */
  for (int32_t i = 0; i < fn->nparams; i++) {
    size_t before = leaves.len;
    if (param_leaves(param_type(fn->params[i]), &leaves) != 0) {
      gp_error_set(GP_ERR_UNSUPPORTED, "@%s: parameter %%%s is a function (the inputs are tensors)", name,
                   var_name(fn->params[i]));
      gp_vec_free(&leaves);
      gp_vec_free(&owner);
      return -1;
    }
    for (size_t k = before; k < leaves.len; k++) gp_vec_push(&owner, (void *)fn->params[i]);
  }
  int rc = -1;
  if ((size_t)nin != leaves.len) {
    GPBuf b = {0};
    for (int32_t i = 0; i < fn->nparams; i++) gp_buf_printf(&b, "%s%%%s", i ? ", " : "", var_name(fn->params[i]));
    if (leaves.len != (size_t)fn->nparams)
      gp_error_set(GP_ERR_VALUE, "@%s: expected %zu input tensors (%s, tuples flattened), got %d", name, leaves.len,
                   b.data ? b.data : "", (int)nin);
    else
      gp_error_set(GP_ERR_VALUE, "@%s: expected %d input%s (%s), got %d", name, (int)fn->nparams,
                   fn->nparams == 1 ? "" : "s", b.data ? b.data : "", (int)nin);
    gp_buf_free(&b);
    goto out;
  }
  for (int32_t i = 0; i < nin; i++) {
    const GPVar *pv = owner.items[i];
    const GPTensor *t = inputs ? inputs[i] : NULL;
    bool field = param_type(pv) && param_type(pv)->kind == GP_TYPE_TUPLE;
    char what[48] = "";
    if (field) snprintf(what, sizeof what, " (input tensor %d)", (int)i);
    if (!t) {
      gp_error_set(GP_ERR_VALUE, "@%s: input %%%s%s is NULL", name, var_name(pv), what);
      goto out;
    }
    const GPType *want = leaves.items[i];
    if (!tensor_matches(want, t)) {
      char *w = type_str(want), *g = type_str(gp_tensor_type(t));
      gp_error_set(GP_ERR_VALUE, "@%s: input %%%s%s: expected %s, got %s", name, var_name(pv), what, w, g);
      gp_free(w);
      gp_free(g);
      goto out;
    }
    bool empty = false;
    for (int32_t k = 0; k < t->dl.ndim; k++) empty |= t->dl.shape[k] == 0;
    if (!t->dl.data && !empty) {
      gp_error_set(GP_ERR_VALUE, "@%s: input %%%s%s has no data", name, var_name(pv), what);
      goto out;
    }
  }
  rc = 0;
out:
  gp_vec_free(&leaves);
  gp_vec_free(&owner);
  return rc;
}

/* The value of a parameter of type t from inputs[*pos..] (its tensors in order), *pos advanced
 * (explicit stack: each item is a type and the slot its value goes to). */
static Val *param_value(Ctx *C, const GPType *t, GPTensor *const *inputs, int32_t *pos) {
  if (!t || t->kind != GP_TYPE_TUPLE) return val_tensor(C, gp_retain(inputs[(*pos)++]), false);
  Val *root = NULL;
  GPVec st = {0};
  gp_vec_push(&st, (void *)t);
  gp_vec_push(&st, &root);
  while (st.len) {
    Val **slot = gp_vec_pop(&st);
    const GPType *x = gp_vec_pop(&st);
    if (x->kind != GP_TYPE_TUPLE) {
      *slot = val_tensor(C, gp_retain(inputs[(*pos)++]), false);
      continue;
    }
    Val *v = val_new(V_TUPLE);
    v->n = x->n;
    v->items = gp_calloc((size_t)(x->n ? x->n : 1), sizeof *v->items);
    *slot = v;
    for (int32_t i = x->n; i-- > 0;) { /* popped in order: inputs consumed in order */
      gp_vec_push(&st, (void *)x->tuple.fields[i]);
      gp_vec_push(&st, &v->items[i]);
    }
  }
  gp_vec_free(&st);
  return root;
}

/* The tensors of v in order (nested tuples flattened), retained, appended to out. */
static int flatten(const char *name, Val *v, GPVec *out) {
  GPVec st = {0};
  gp_vec_push(&st, v);
  int rc = 0;
  while (st.len) {
    Val *x = gp_vec_pop(&st);
    if (x->kind == V_TENSOR) {
      gp_vec_push(out, gp_retain(x->t));
    } else if (x->kind == V_TUPLE) {
      for (int32_t i = x->n - 1; i >= 0; i--) gp_vec_push(&st, x->items[i]);
    } else {
      gp_error_set(GP_ERR_UNSUPPORTED, "@%s: the result contains a function, not only tensors", name);
      rc = -1;
      break;
    }
  }
  gp_vec_free(&st);
  return rc;
}

static void ctx_free(Ctx *C) {
  while (C->nframes) frame_free(C, &C->frames[--C->nframes], false);
  for (size_t i = 0; i < C->fninfo.cap; i++)
    if (C->fninfo.slots[i].key) fninfo_free(C->fninfo.slots[i].val);
  gp_map_free(&C->fninfo);
  gp_map_free(&C->gfn);
  gp_vec_free(&C->freeq);
  gp_free(C->frames);
  gp_free(C->acts);
  gp_free(C->ins);
  gp_free(C->types);
}

int gp_eval_function(const GPModule *m, const char *name, int32_t nin, GPTensor *const *inputs,
                     GPTensor ***outputs, int32_t *nout, GPEvalOptions *opts) {
  if (!outputs || !nout) {
    gp_error_set(GP_ERR_VALUE, "eval_function: outputs and num_outputs must not be NULL");
    return -1;
  }
  *outputs = NULL;
  *nout = 0;
  if (!m || gp_kind(m) != GP_TI_MODULE) {
    gp_error_set(GP_ERR_VALUE, "eval_function: not a module");
    return -1;
  }
  if (nin < 0 || (nin > 0 && !inputs)) {
    gp_error_set(GP_ERR_VALUE, "eval_function: %d inputs but no input array", (int)nin);
    return -1;
  }
  if (!name) name = "main";
  int32_t fi0 = gp_module_find(m, name);
  if (fi0 < 0) {
    GPBuf b = {0};
    for (int32_t i = 0; i < m->num_functions; i++) gp_buf_printf(&b, "%s@%s", i ? ", " : "", m->gvars[i]->name);
    gp_error_set(GP_ERR_NOT_FOUND, "eval: no function @%s in the module (functions: %s)", name,
                 b.data ? b.data : "none");
    gp_buf_free(&b);
    return -1;
  }
  /* the parameters' annotations are checked before any inference work */
  if (check_inputs(name, m->funcs[fi0], nin, inputs) != 0) return -1;
  GPModule *mod;
  if (module_typed(m)) {
    mod = gp_retain((GPModule *)m);
  } else {
    mod = gp_infer_types(m);
    if (!mod) return -1;
    fi0 = gp_module_find(mod, name);
    if (fi0 < 0 || check_inputs(name, mod->funcs[fi0], nin, inputs) != 0) {
      if (fi0 < 0) gp_error_set(GP_ERR_INTERNAL, "eval: @%s lost by type inference", name);
      gp_release(mod);
      return -1;
    }
  }
  Ctx C;
  memset(&C, 0, sizeof C);
  C.m = mod;
  C.source = mod->source_name ? mod->source_name : "<module>";
  C.threads = gp_eval_default_threads();
  if (opts && GP_HAS_FIELD(opts, GPEvalOptions, num_threads) && opts->num_threads > 0) C.threads = opts->num_threads;
  if (opts && GP_HAS_FIELD(opts, GPEvalOptions, observe_user)) {
    C.external = opts->external != 0;
    C.observe = opts->observe;
    C.observe_user = opts->observe_user;
  }
  int rc = -1;
  Val *result = NULL;
  FnInfo *entry = fninfo_get(&C, mod->funcs[fi0], mod->gvars[fi0]->name);
  if (!entry) goto done;
  if (entry->nfree) {
    gp_error_set(GP_ERR_VALUE, "@%s: free variable %%%s", name, var_name(entry->free_vars[0]));
    goto done;
  }
  {
    Val *small[16];
    const GPFunctionExpr *fn0 = mod->funcs[fi0];
    int32_t np = fn0->nparams, pos = 0;
    Val **args = np > 16 ? gp_malloc((size_t)np * sizeof(Val *)) : small;
    for (int32_t i = 0; i < np; i++) args[i] = param_value(&C, param_type(fn0->params[i]), inputs, &pos);
    int prc = push_frame(&C, entry, args, NULL, -1, NULL, NULL);
    if (args != small) gp_free(args);
    if (prc != 0) goto done;
  }
  if (run(&C, &result) != 0) goto done;
  {
    GPVec outs = {0};
    if (flatten(name, result, &outs) != 0) {
      for (size_t i = 0; i < outs.len; i++) gp_release(outs.items[i]);
      gp_vec_free(&outs);
      goto done;
    }
    *nout = (int32_t)outs.len;
    *outputs = gp_malloc((outs.len ? outs.len : 1) * sizeof(GPTensor *));
    for (size_t i = 0; i < outs.len; i++) (*outputs)[i] = outs.items[i];
    gp_vec_free(&outs);
  }
  rc = 0;
done:
  val_release(&C, result);
  if (opts) {
    if (GP_HAS_FIELD(opts, GPEvalOptions, peak_bytes)) opts->peak_bytes = C.peak;
    if (GP_HAS_FIELD(opts, GPEvalOptions, ops_run)) opts->ops_run = C.ops;
  }
  ctx_free(&C);
  gp_release(mod);
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Deterministic inputs                                                                        */

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The concrete shape of parameter pv (type t, a tensor type) into dims: its static dims, each `?`
 * from the shape given for it (by name) or else any_dim; -1 + error when a given shape does not
 * fit the type; -2 (no error) when a `?` has no value (any_dim < 0). */
static int input_dims(const GPVar *pv, const GPType *t, const char *name, const GPInputShape *shapes, int32_t nshapes,
                      int64_t any_dim, int64_t *dims) {
  const GPInputShape *given = NULL;
  for (int32_t j = 0; j < nshapes && !given; j++)
    if (shapes[j].name && pv->name && strcmp(shapes[j].name, pv->name) == 0) given = &shapes[j];
  if (given && given->ndim != t->n) {
    char *ts = type_str(t);
    gp_error_set(GP_ERR_VALUE, "random_inputs: @%s: the shape given for %%%s has %d dims; its type %s has %d", name,
                 var_name(pv), (int)given->ndim, ts, (int)t->n);
    gp_free(ts);
    return -1;
  }
  for (int32_t d = 0; d < t->n; d++) {
    int64_t v = t->tensor.shape[d];
    if (given && v != GP_DIM_ANY && given->dims[d] != v) {
      char *ts = type_str(t);
      gp_error_set(GP_ERR_VALUE, "random_inputs: @%s: the shape given for %%%s has %lld at dim %d; its type %s has %lld",
                   name, var_name(pv), (long long)given->dims[d], (int)d, ts, (long long)v);
      gp_free(ts);
      return -1;
    }
    dims[d] = given ? given->dims[d] : v == GP_DIM_ANY ? any_dim : v;
    if (dims[d] < 0) return -2;
  }
  return 0;
}

static int random_inputs_fn(const GPFunctionExpr *fn, const char *name, uint64_t seed, const GPInputShape *shapes,
                            int32_t nshapes, int64_t any_dim, GPTensor ***inputs, int32_t *nin) {
  for (int32_t j = 0; j < nshapes; j++) {
    bool found = false;
    for (int32_t i = 0; i < fn->nparams && !found; i++)
      found = shapes[j].name && fn->params[i]->name && strcmp(shapes[j].name, fn->params[i]->name) == 0;
    if (!found) {
      gp_error_set(GP_ERR_NOT_FOUND, "random_inputs: @%s has no parameter %%%s (a shape is given for it)", name,
                   shapes[j].name ? shapes[j].name : "(null)");
      return -1;
    }
  }
  int32_t np = fn->nparams;
  GPTensor **out = gp_calloc((size_t)(np ? np : 1), sizeof *out);
  for (int32_t i = 0; i < np; i++) {
    const GPVar *pv = fn->params[i];
    const GPType *t = param_type(pv);
    int k = t && t->kind == GP_TYPE_TENSOR ? gp_k_dtype(t->tensor.dtype) : -1;
    int64_t dims[GP_K_MAX_RANK];
    int drc = -2;
    if (!t || t->kind != GP_TYPE_TENSOR || k < 0 || t->n > GP_K_MAX_RANK ||
        (drc = input_dims(pv, t, name, shapes, nshapes, any_dim, dims)) != 0) {
      if (drc == -2) {
        char *ts = type_str(t);
        gp_error_set(GP_ERR_VALUE, "random_inputs: @%s: parameter %%%s has type %s, not a static tensor type of a "
                     "supported dtype%s", name, var_name(pv), ts,
                     t && t->kind == GP_TYPE_TENSOR && k >= 0 ? " (give its shape to fill the ? dims)" : "");
        gp_free(ts);
      }
      for (int32_t j = 0; j < i; j++) gp_release(out[j]);
      gp_free(out);
      return -1;
    }
    GPTensor *x = gp_tensor_alloc(t->tensor.dtype, t->n, dims, true);
    if (!x) {
      for (int32_t j = 0; j < i; j++) gp_release(out[j]);
      gp_free(out);
      return -1;
    }
    uint64_t st = seed ^ ((uint64_t)(i + 1) * 0xd1b54a32d192ed03ull);
    (void)splitmix64(&st);
    int64_t numel = gp_k_numel(&x->dl);
    size_t es = gp_k_elem_size(k);
    char *p = x->dl.data;
    for (int64_t j = 0; j < numel; j++) {
      uint64_t r = splitmix64(&st);
      void *q = p + (size_t)j * es;
      if (gp_k_is_float(k))
        gp_k_store_f64(q, k, (double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0);
      else if (k == GP_K_BOOL)
        gp_k_store_i64(q, k, (int64_t)(r >> 63));
      else
        gp_k_store_i64(q, k, (int64_t)((r >> 32) % 10u));
    }
    out[i] = x;
  }
  *inputs = out;
  *nin = np;
  return 0;
}

int gp_eval_random_inputs(const GPModule *m, const char *name, uint64_t seed, GPTensor ***inputs, int32_t *nin) {
  return gp_eval_random_inputs_shaped(m, name, seed, NULL, 0, -1, inputs, nin);
}

int gp_eval_random_inputs_shaped(const GPModule *m, const char *name, uint64_t seed, const GPInputShape *shapes,
                                 int32_t nshapes, int64_t any_dim, GPTensor ***inputs, int32_t *nin) {
  if (!inputs || !nin || (nshapes && !shapes)) {
    gp_error_set(GP_ERR_VALUE, "random_inputs: NULL output pointers");
    return -1;
  }
  *inputs = NULL;
  *nin = 0;
  if (!name) name = "main";
  GPFunctionExpr *fn = m ? gp_module_lookup(m, name) : NULL;
  if (!fn) {
    gp_error_set(GP_ERR_NOT_FOUND, "random_inputs: no function @%s in the module", name);
    return -1;
  }
  /* a parameter without a type: InferType solves it from its uses (e.g. a conv2d weight) */
  GPModule *typed = NULL;
  for (int32_t i = 0; i < fn->nparams && !typed; i++) {
    if (param_type(fn->params[i])) continue;
    if (!(typed = gp_infer_types(m))) {
      gp_error_prefix("random_inputs: @%s", name);
      return -1;
    }
    fn = gp_module_lookup(typed, name);
  }
  int rc = random_inputs_fn(fn, name, seed, shapes, nshapes, any_dim, inputs, nin);
  gp_release(typed);
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Comparison                                                                                  */

int gp_tensor_allclose(const GPTensor *a, const GPTensor *b, double rtol, double atol, double *max_abs,
                       double *max_rel, int64_t *worst) {
  if (max_abs) *max_abs = 0;
  if (max_rel) *max_rel = 0;
  if (worst) *worst = -1;
  if (!a || !b) {
    gp_error_set(GP_ERR_VALUE, "allclose: NULL tensor");
    return -1;
  }
  bool same = gp_dtype_eq(a->dl.dtype, b->dl.dtype) && a->dl.ndim == b->dl.ndim;
  for (int32_t i = 0; same && i < a->dl.ndim; i++) same = a->dl.shape[i] == b->dl.shape[i];
  int ka = gp_k_dtype(a->dl.dtype);
  /* A storage dtype (float8, int4, ...) compares through gp_tensor_get_f64 / _i64. */
  bool storage = ka < 0 && gp_dtype_is_storage(a->dl.dtype, NULL);
  if (!same || (ka < 0 && !storage)) {
    char *ta = type_str(gp_tensor_type(a)), *tb = type_str(gp_tensor_type(b));
    gp_error_set(GP_ERR_VALUE, same ? "allclose: unsupported dtype: %s and %s" : "allclose: %s and %s differ", ta,
                 tb);
    gp_free(ta);
    gp_free(tb);
    return -1;
  }
  int64_t numel = 1;
  for (int32_t i = 0; i < a->dl.ndim; i++) numel *= a->dl.shape[i];
  if (numel > 0 && (!a->dl.data || !b->dl.data)) {
    gp_error_set(GP_ERR_VALUE, "allclose: a tensor has no data");
    return -1;
  }
  if (numel == 0) return 1;
  GPKView va, vb;
  gp_k_view(&a->dl, &va);
  gp_k_view(&b->dl, &vb);
  bool isf = storage ? a->dl.dtype.code != kDLInt && a->dl.dtype.code != kDLUInt : gp_k_is_float(ka), ok = true;
  double mabs = 0, mrel = 0, wratio = -1;
  int64_t widx = 0;
  for (int64_t i = 0; i < numel; i++) {
    const char *pa = va.data + (size_t)(va.compact ? i : gp_k_offset_of(&va, i)) * va.elem;
    const char *pb = vb.data + (size_t)(vb.compact ? i : gp_k_offset_of(&vb, i)) * vb.elem;
    double diff, ref;
    if (isf) {
      double x = storage ? gp_tensor_get_f64(a, i) : gp_k_load_f64(pa, ka);
      double y = storage ? gp_tensor_get_f64(b, i) : gp_k_load_f64(pb, ka);
      ref = fabs(y);
      if (isnan(x) || isnan(y)) {
        diff = isnan(x) && isnan(y) ? 0.0 : INFINITY;
        ref = 0;
      } else if (isinf(x) || isinf(y)) {
        diff = x == y ? 0.0 : INFINITY;
        ref = 0;
      } else {
        diff = fabs(x - y);
      }
    } else {
      int64_t x = storage ? gp_tensor_get_i64(a, i) : gp_k_load_i64(pa, ka);
      int64_t y = storage ? gp_tensor_get_i64(b, i) : gp_k_load_i64(pb, ka);
      diff = x == y ? 0.0 : fabs((double)x - (double)y);
      if (x != y && diff == 0.0) diff = 1.0; /* beyond double precision: still different */
      ref = fabs((double)y);
    }
    double tol = atol + rtol * ref;
    /* how far past the tolerance, as a ratio (the worst element has the largest) */
    double ratio = diff == 0.0 ? 0.0 : tol > 0 ? diff / tol : INFINITY;
    if (isinf(diff) || diff > tol) ok = false;
    if (diff > mabs) mabs = diff;
    double rel = diff == 0.0 ? 0.0 : ref > 0 ? diff / ref : INFINITY;
    if (rel > mrel) mrel = rel;
    if (ratio > wratio) {
      wratio = ratio;
      widx = i;
    }
  }
  if (max_abs) *max_abs = mabs;
  if (max_rel) *max_rel = mrel;
  if (worst) *worst = widx;
  return ok ? 1 : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* DLPack out                                                                                  */

DLManagedTensor *gp_tensor_to_dlpack(GPTensor *t) {
  if (!t || gp_kind(t) != GP_TI_TENSOR) {
    gp_error_set(GP_ERR_VALUE, "tensor_to_dlpack: not a tensor");
    return NULL;
  }
  bool empty = false;
  for (int32_t i = 0; i < t->dl.ndim; i++) empty |= t->dl.shape[i] == 0;
  if (!t->dl.data && !empty) {
    char *ts = type_str(gp_tensor_type(t));
    gp_error_set(GP_ERR_VALUE, "tensor_to_dlpack: the tensor (%s) has no data", ts);
    gp_free(ts);
    return NULL;
  }
  return export_view(t, t->dl.ndim, t->dl.shape, t->dl.strides);
}
