/* partition_graph.c -- PartitionGraph (TVM v0.12's partition_graph.cc): lift every annotated
 * region into a global function called from where the region was.
 *
 * As TVM's sequence: compiler_end of a tuple becomes a tuple of compiler_ends
 * (FlattenTupleOutputs), and (not in TVM) compiler_begin of a tuple node a tuple of
 * compiler_begins, so that the tuple is built inside the region and every parameter is a tensor
 * (external functions take tensors); annotations of "default" go (RemoveDefaultAnnotations); the region set
 * is built again (byoc.h; ids count the remaining compiler_begins of the function from 0); each
 * region becomes
 *     def @tvmgen_<mod_name>_<target>_<function>_<id>(%<target>_<id>_i<k>: T, ..., Primitive=1,
 *         Inline=1, Compiler="<target>", global_symbol="<the same name>") { <region> }
 * (TVM's attrs, in the order its tests write them; names sanitized: [^A-Za-z0-9] -> '_'; k is the
 * position of the parameter's compiler_begin among the region's inputs; inputs that read the
 * same node share one parameter).  A region with several outputs returns a tuple (outputs in
 * the order of its compiler_ends, each distinct node once) and its users read get-items of the
 * call.  With PartitionGraph.bind_constants (TVM's default) a constant input (or a tuple of
 * constants) is bound into the function instead of passed.  The new functions follow the
 * existing ones in the module, in the order their calls are built; a name already taken gets
 * "_1", "_2", ... appended.  (Not done: TVM's relay.ext.<target>.optimize hook.)
 *
 * Linear: one rewrite for the annotations, one walk inside the regions and one explicit-stack
 * walk over the rest in which each region is a node whose inputs are its parameters' arguments. */
#include "byoc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASS_NAME "PartitionGraph"

typedef struct Part {
  const char *source;
  ByocOps ops;
  bool bind;
  const char *mod_name;
  GPModule *out; /* the module being built (sole reference) */
  const char *fname;
  ByocIndex ix;
  ByocRegions rs;
  int64_t created;
  bool untyped; /* a node built without its type: re-type the result */
} Part;

/* n (consumed) with checked type t; without t, n as it is and the module is re-typed. */
static GPExpr *with_type(Part *P, GPExpr *n, const GPType *t, uint32_t line, uint32_t col) {
  if (!n) return NULL;
  if (!t) {
    P->untyped = true;
    return n;
  }
  GPExpr *r = H->expr_annotate(n, t, line, col);
  gp_release(n);
  return r;
}

/* ---- FlattenTupleOutputs + RemoveDefaultAnnotations */

static GPExpr *pre_node(Part *P, GPExpr *orig, GPExpr *rebuilt);

/* Every result keeps the type of the node it replaces (the annotations are identities and the
 * flattening keeps the tuple's type). */
static GPExpr *pre_rewrite(void *user, GPExpr *orig, GPExpr *rebuilt) {
  Part *P = user;
  GPExpr *r = pre_node(P, orig, rebuilt);
  if (!r || r->checked_type || ekind(r) == GP_TI_OP) return r;
  return with_type(P, r, orig->checked_type, orig->line, orig->col);
}

static GPExpr *pre_node(Part *P, GPExpr *orig, GPExpr *rebuilt) {
  int ann = byoc_ann(&P->ops, orig);
  if (!ann) return gp_retain(rebuilt);
  const char *c = byoc_compiler(orig);
  GPExpr *arg = ((const GPCall *)rebuilt)->args[0];
  if (!strcmp(c, BYOC_DEFAULT)) return gp_retain(arg);
  if (ekind(arg) != GP_TI_TUPLE || (ann == 1 && ((const GPTuple *)arg)->n == 0))
    return ann == 1 ? H->expr_annotate(rebuilt, orig->checked_type, orig->line, orig->col) : gp_retain(rebuilt);
  /* end(tuple) -> tuple of ends (TVM's FlattenTupleOutputs); begin(tuple) -> tuple of begins:
   * the tuple moves into the region and its fields are the inputs (an external function takes
   * tensors: the evaluator's runners, GenIR) */
  const GPTuple *t = (const GPTuple *)arg;
  GPExpr **fs = malloc(sizeof(GPExpr *) * (size_t)(t->n ? t->n : 1));
  if (!fs) abort();
  const GPOp *aop = ann == 1 ? P->ops.begin : P->ops.end;
  int32_t k = 0;
  for (; k < t->n; k++)
    if (!(fs[k] = with_type(P, byoc_annotate(aop, t->fields[k], c), t->fields[k]->checked_type, 0, 0))) break;
  GPTuple *nt = k == t->n ? H->tuple_new(t->n, fs) : NULL;
  for (int32_t i = 0; i < k; i++) gp_release(fs[i]);
  free(fs);
  return nt ? &nt->base : NULL;
}

/* ---- one function */

typedef struct Param {
  GPVar *var;    /* NULL when bound */
  int32_t input; /* node index of the begin's argument */
} Param;

static bool is_constant(const GPExpr *e) {
  if (ekind(e) == GP_TI_CONSTANT) return true;
  if (ekind(e) != GP_TI_TUPLE) return false;
  const GPTuple *t = (const GPTuple *)e;
  for (int32_t i = 0; i < t->n; i++)
    if (ekind(t->fields[i]) != GP_TI_CONSTANT) return false;
  return true;
}

static void sanitize(char *s) {
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))) *s = '_';
}

typedef struct FnState {
  int32_t n;
  GPExpr **inside;  /* per node: its value inside its region's function (owned) */
  GPExpr **outv;    /* per virtual node (n nodes, then one per region): its value outside (owned) */
  uint8_t *reached; /* per node: met by the walk from its region's outputs */
  int32_t *field;   /* per node a region outputs: its field index */
  int32_t *nfields, *fields_start, *fields; /* per root: field count, start in `fields` */
  int32_t *pstart, *pcount;                 /* per root: its params in `params` */
  Param *params;
  int32_t nparams;
} FnState;

static int fail_outside(Part *P, int32_t i) {
  char loc[256];
  const GPExpr *e = P->ix.nodes[i];
  H->error_set(GP_ERR_PASS, "%s: %s at %s is inside a region of \"%s\" but used outside it without a compiler_end",
               PASS_NAME, std_kind_name(ekind(e)), std_where(P->source, e, loc, sizeof loc),
               P->rs.target[byoc_group(&P->rs, i)]);
  return -1;
}

/* A begin met by the walk of region g: its parameter (shared by begins reading one node). */
static int begin_param(Part *P, FnState *S, PMap *keyed, int32_t g, int32_t b, int32_t argidx) {
  GPExpr *e = P->ix.nodes[b];
  GPExpr *arg = ((const GPCall *)e)->args[0], *key = arg;
  while (byoc_ann(&P->ops, key)) key = ((const GPCall *)key)->args[0];
  uint64_t v = (uint64_t)(uintptr_t)pmap_get(keyed, key);
  if (v && (int32_t)(v >> 32) == g) {
    const Param *p = &S->params[(int32_t)(v & 0xffffffffu) - 1];
    S->inside[b] = gp_retain(p->var ? &p->var->base : P->ix.nodes[p->input]);
    return 0;
  }
  Param p = {.var = NULL, .input = byoc_kid(&P->ix, b, 1)};
  if (P->bind && is_constant(arg)) {
    S->inside[b] = gp_retain(arg);
  } else {
    char name[256];
    snprintf(name, sizeof name, "%s_%d_i%d", P->rs.target[g], (int)P->rs.label[g], (int)argidx);
    GPVar *nv = H->var_new(name, e->checked_type);
    p.var = (GPVar *)with_type(P, nv ? &nv->base : NULL, e->checked_type, 0, 0);
    if (!p.var) return -1;
    S->inside[b] = gp_retain(&p.var->base);
  }
  S->params[S->nparams++] = p;
  pmap_put(keyed, key, (void *)(uintptr_t)((uint64_t)g << 32 | (uint64_t)S->nparams));
  return 0;
}

/* Fields (outputs) and parameters of every region: parameters in the order TVM's rewrite meets
 * the begins, a depth-first walk from the outputs in order. */
static int analyse_regions(Part *P, FnState *S) {
  ByocRegions *r = &P->rs;
  int32_t n = S->n;
  int32_t *stamp = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  int32_t *argidx = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  int32_t *stack = malloc(sizeof(int32_t) * 2 * (size_t)(n ? n : 1));
  if (!stamp || !argidx || !stack) abort();
  for (int32_t i = 0; i < n; i++) stamp[i] = -1;
  PMap keyed = {0};
  int rc = 0;
  int32_t nf = 0;
  for (int32_t g = 0; g < r->nreg && rc == 0; g++) {
    if (byoc_find(r, g) != g) continue;
    int32_t k = 0;
    for (int32_t b = r->ins_head[g]; b >= 0; b = r->next[b]) argidx[b] = k++;
    S->fields_start[g] = nf;
    for (int32_t e = r->outs_head[g]; e >= 0; e = r->next[e]) {
      int32_t a = byoc_kid(&P->ix, e, 1);
      if (stamp[a] == g) continue;
      stamp[a] = g;
      S->field[a] = nf - S->fields_start[g];
      S->fields[nf++] = a;
    }
    S->nfields[g] = nf - S->fields_start[g];
    S->pstart[g] = S->nparams;
    for (int32_t f = S->fields_start[g]; f < nf && rc == 0; f++) {
      int32_t root = S->fields[f];
      if (S->reached[root]) continue;
      int32_t sp = 0;
      S->reached[root] = 1;
      stack[sp++] = root, stack[sp++] = 0;
      while (sp && rc == 0) {
        int32_t i = stack[sp - 2], c = stack[sp - 1];
        GPExpr *e = P->ix.nodes[i];
        if (byoc_ann(&P->ops, e) == 1) {
          sp -= 2;
          rc = begin_param(P, S, &keyed, g, i, argidx[i]);
          continue;
        }
        if (c < gp_expr_num_children(e)) {
          stack[sp - 1] = c + 1;
          int32_t ki = byoc_kid(&P->ix, i, c);
          if (ki < 0 || S->reached[ki] || byoc_ann(&P->ops, P->ix.nodes[ki]) == 2 || byoc_group(r, ki) != g) continue;
          S->reached[ki] = 1;
          stack[sp++] = ki, stack[sp++] = 0;
          continue;
        }
        sp -= 2;
      }
    }
    S->pcount[g] = S->nparams - S->pstart[g];
  }
  pmap_free(&keyed);
  free(stack);
  free(argidx);
  free(stamp);
  return rc;
}

#define KIDS_SMALL 16

/* Inside values of the region nodes (post order): a begin is its parameter, a node of the region
 * its inside value, anything else itself. */
static int inside_values(Part *P, FnState *S) {
  GPExpr *small[KIDS_SMALL];
  for (int32_t i = 0; i < S->n; i++) {
    GPExpr *e = P->ix.nodes[i];
    int32_t g = byoc_group(&P->rs, i);
    if (g < 0 || !S->reached[i] || byoc_ann(&P->ops, e)) continue;
    int32_t nk = gp_expr_num_children(e);
    GPExpr **kids = nk <= KIDS_SMALL ? small : malloc(sizeof(GPExpr *) * (size_t)nk);
    if (!kids) abort();
    for (int32_t c = 0; c < nk; c++) {
      int32_t ki = byoc_kid(&P->ix, i, c);
      kids[c] = ki >= 0 && S->inside[ki] && byoc_group(&P->rs, ki) == g ? S->inside[ki] : gp_expr_child_at(e, c);
    }
    S->inside[i] = byoc_rebuild(e, kids, true);
    if (kids != small) free(kids);
    if (!S->inside[i]) return -1;
  }
  return 0;
}

/* The global function of region g and the call of it (in S->outv[n + g]). */
static int make_region_call(Part *P, FnState *S, int32_t g) {
  int32_t np = S->pcount[g], nf = S->nfields[g];
  GPVar **vars = malloc(sizeof(GPVar *) * (size_t)(np ? np : 1));
  GPExpr **args = malloc(sizeof(GPExpr *) * (size_t)(np ? np : 1));
  GPExpr **fs = malloc(sizeof(GPExpr *) * (size_t)(nf ? nf : 1));
  if (!vars || !args || !fs) abort();
  int32_t nv = 0;
  for (int32_t k = 0; k < np; k++) {
    const Param *p = &S->params[S->pstart[g] + k];
    if (!p->var) continue;
    vars[nv] = p->var;
    args[nv++] = S->outv[p->input];
  }
  for (int32_t f = 0; f < nf; f++) fs[f] = S->inside[S->fields[S->fields_start[g] + f]];
  int rc = -1;
  GPExpr *body = NULL;
  GPAttrs *attrs = NULL;
  GPFunctionExpr *fn = NULL;
  GPGlobalVar *gv = NULL;
  const GPType **pts = malloc(sizeof(GPType *) * (size_t)(nv ? nv : 1));
  if (!pts) abort();
  bool typed = true;
  for (int32_t k = 0; k < nv; k++) typed = typed && (pts[k] = vars[k]->base.checked_type) != NULL;
  if (nf == 1) {
    body = gp_retain(fs[0]);
  } else {
    const GPType **fts = malloc(sizeof(GPType *) * (size_t)nf);
    if (!fts) abort();
    for (int32_t f = 0; f < nf; f++) typed = typed && (fts[f] = fs[f]->checked_type) != NULL;
    GPTuple *t = H->tuple_new(nf, fs);
    body = with_type(P, t ? &t->base : NULL, typed ? H->type_tuple(nf, fts) : NULL, 0, 0);
    free(fts);
  }
  const GPType *ret = body ? body->checked_type : NULL;
  const GPType *fty = typed && ret ? H->type_func(nv, pts, ret) : NULL;
  free(pts);
  if (!body) goto done;
  char base[512], name[560];
  snprintf(base, sizeof base, "tvmgen_%s_%s_%s_%d", P->mod_name, P->rs.target[g], P->fname, (int)P->rs.label[g]);
  sanitize(base);
  snprintf(name, sizeof name, "%s", base);
  for (int k = 1; H->module_lookup(P->out, name); k++) snprintf(name, sizeof name, "%s_%d", base, k);
  H->error_clear();
  static const char *const keys[] = {"Primitive", "Inline", "Compiler", "global_symbol"};
  GPAttrValue vals[4] = {{.kind = GP_ATTR_INT, .i = 1},
                         {.kind = GP_ATTR_INT, .i = 1},
                         {.kind = GP_ATTR_STR, .s = P->rs.target[g]},
                         {.kind = GP_ATTR_STR, .s = name}};
  attrs = H->attrs_new(4, keys, vals);
  fn = attrs ? H->function_new(nv, vars, body, ret, attrs) : NULL;
  fn = (GPFunctionExpr *)with_type(P, fn ? &fn->base : NULL, fty, 0, 0);
  if (!fn || H->module_add(P->out, name, fn, 0) != 0) goto done;
  gv = H->global_var_new(name);
  gv = (GPGlobalVar *)with_type(P, gv ? &gv->base : NULL, fty, 0, 0);
  GPCall *call = gv ? H->call_new(&gv->base, nv, args, NULL) : NULL;
  GPExpr *tc = with_type(P, call ? &call->base : NULL, ret, 0, 0);
  if (!tc) goto done;
  S->outv[S->n + g] = tc;
  P->created++;
  rc = 0;
done:
  gp_release(gv);
  gp_release(fn);
  gp_release(attrs);
  gp_release(body);
  free(fs);
  free(args);
  free(vars);
  return rc;
}

/* The value outside of virtual node v, its dependencies done. */
static int outside_value(Part *P, FnState *S, int32_t v) {
  int32_t n = S->n;
  if (v >= n) return make_region_call(P, S, v - n);
  GPExpr *e = P->ix.nodes[v];
  if (byoc_ann(&P->ops, e) == 2) {
    int32_t g = byoc_group(&P->rs, v);
    GPExpr *call = S->outv[n + g];
    if (S->nfields[g] == 1) {
      S->outv[v] = gp_retain(call);
      return 0;
    }
    int32_t a = byoc_kid(&P->ix, v, 1);
    /* one get-item per output node: cached in outv of the output node (never used outside) */
    if (!S->outv[a]) {
      GPTupleGetItem *gi = H->tuple_get_item_new(call, S->field[a]);
      GPExpr *tg = with_type(P, gi ? &gi->base : NULL, S->inside[a] ? S->inside[a]->checked_type : NULL, 0, 0);
      if (!tg) return -1;
      S->outv[a] = tg;
    }
    S->outv[v] = gp_retain(S->outv[a]);
    return 0;
  }
  int32_t nk = gp_expr_num_children(e);
  GPExpr *small[KIDS_SMALL];
  GPExpr **kids = nk <= KIDS_SMALL ? small : malloc(sizeof(GPExpr *) * (size_t)nk);
  if (!kids) abort();
  for (int32_t c = 0; c < nk; c++) kids[c] = S->outv[byoc_kid(&P->ix, v, c)];
  S->outv[v] = byoc_rebuild(e, kids, true);
  if (kids != small) free(kids);
  return S->outv[v] ? 0 : -1;
}

/* Dependencies of virtual node v: the index of dependency j, or -1 past the last; -2 + error
 * for a region node used outside its region. */
static int32_t dep_at(Part *P, FnState *S, int32_t v, int32_t j) {
  int32_t n = S->n;
  if (v >= n) {
    int32_t g = v - n;
    if (j >= S->pcount[g]) return -1;
    int32_t in = S->params[S->pstart[g] + j].input;
    if (byoc_group(&P->rs, in) >= 0 && byoc_ann(&P->ops, P->ix.nodes[in]) != 2) return fail_outside(P, in), -2;
    return in;
  }
  GPExpr *e = P->ix.nodes[v];
  if (byoc_ann(&P->ops, e) == 2) return j == 0 ? n + byoc_group(&P->rs, v) : -1;
  if (j >= gp_expr_num_children(e)) return -1;
  int32_t ki = byoc_kid(&P->ix, v, j);
  if (byoc_group(&P->rs, ki) >= 0 && byoc_ann(&P->ops, P->ix.nodes[ki]) != 2) return fail_outside(P, ki), -2;
  return ki;
}

static GPExpr *partition_body(Part *P, FnState *S, int32_t root) {
  int32_t total = S->n + P->rs.nreg;
  uint8_t *state = calloc((size_t)total, 1);
  int32_t *stack = malloc(sizeof(int32_t) * 2 * (size_t)total);
  if (!state || !stack) abort();
  int32_t sp = 0;
  GPExpr *res = NULL;
  if (byoc_group(&P->rs, root) >= 0 && byoc_ann(&P->ops, P->ix.nodes[root]) != 2) {
    fail_outside(P, root);
    goto done;
  }
  stack[sp++] = root, stack[sp++] = 0;
  state[root] = 1;
  while (sp) {
    int32_t v = stack[sp - 2], j = stack[sp - 1];
    int32_t d = dep_at(P, S, v, j);
    if (d == -2) goto done;
    if (d >= 0) {
      stack[sp - 1] = j + 1;
      if (state[d]) continue;
      state[d] = 1;
      stack[sp++] = d, stack[sp++] = 0;
      continue;
    }
    sp -= 2;
    if (outside_value(P, S, v) != 0) goto done;
  }
  res = gp_retain(S->outv[root]);
done:
  free(stack);
  free(state);
  return res;
}

static void fn_state_free(FnState *S, int32_t nreg) {
  int32_t total = S->n + nreg;
  for (int32_t i = 0; S->inside && i < S->n; i++) gp_release(S->inside[i]);
  for (int32_t i = 0; S->outv && i < total; i++) gp_release(S->outv[i]);
  for (int32_t i = 0; S->params && i < S->nparams; i++) gp_release(S->params[i].var);
  gp_scratch_free(S->inside);
  gp_scratch_free(S->outv);
  gp_scratch_free(S->reached);
  gp_scratch_free(S->field);
  gp_scratch_free(S->fields);
  gp_scratch_free(S->nfields);
  gp_scratch_free(S->fields_start);
  gp_scratch_free(S->pstart);
  gp_scratch_free(S->pcount);
  gp_scratch_free(S->params);
}

/* Every region's begins and inner nodes lie in one control scope (its ends may be read in
 * another: a branch reading the region's output); else an error naming the node. */
static int check_scopes(Part *P) {
  int32_t i;
  free(byoc_region_scopes(&P->rs, &P->ix, &P->ops, true, &i));
  if (i < 0) return 0;
  char loc[256];
  GPExpr *e = P->ix.nodes[i];
  H->error_set(GP_ERR_PASS,
               "%s: the region of \"%s\" holding %s at %s has nodes on both sides of an if, a function "
               "boundary or a let binding (MergeCompilerRegions keeps such regions apart)",
               PASS_NAME, P->rs.target[byoc_group(&P->rs, i)], std_kind_name(ekind(e)),
               std_where(P->source, e, loc, sizeof loc));
  return -1;
}

/* Partition function fi of the typed module `in` into P->out. */
static int partition_function(Part *P, const GPModule *in, int32_t fi) {
  GPFunctionExpr *f0 = in->funcs[fi];
  P->fname = in->gvars[fi]->name;
  GPExpr *pre = H->rewrite(&f0->base, pre_rewrite, P);
  if (!pre) return -1;
  int rc = -1;
  FnState S = {0};
  if (byoc_index_build(&P->ix, pre) != 0) goto out;
  if (byoc_regions_build(&P->rs, &P->ix, &P->ops, PASS_NAME, P->source) != 0 || check_scopes(P) != 0) goto out;
  if (P->rs.nreg == 0) { /* nothing to lift; default annotations may have gone */
    rc = pre == &f0->base ? 0 : H->module_add(P->out, P->fname, (GPFunctionExpr *)pre, 1);
    goto out;
  }
  int32_t n = (int32_t)P->ix.n, nr = P->rs.nreg;
  S.n = n;
  S.inside = gp_scratch_zalloc((size_t)n, sizeof(GPExpr *));
  S.outv = gp_scratch_zalloc((size_t)(n + nr), sizeof(GPExpr *));
  S.reached = gp_scratch_zalloc((size_t)n, 1);
  S.field = gp_scratch_zalloc((size_t)n, sizeof(int32_t));
  S.fields = gp_scratch_zalloc((size_t)n, sizeof(int32_t));
  S.nfields = gp_scratch_zalloc((size_t)nr, sizeof(int32_t));
  S.fields_start = gp_scratch_zalloc((size_t)nr, sizeof(int32_t));
  S.pstart = gp_scratch_zalloc((size_t)nr, sizeof(int32_t));
  S.pcount = gp_scratch_zalloc((size_t)nr, sizeof(int32_t));
  S.params = gp_scratch_zalloc((size_t)n, sizeof(Param));
  if (analyse_regions(P, &S) != 0 || inside_values(P, &S) != 0) goto out;
  const GPFunctionExpr *f = (const GPFunctionExpr *)pre;
  GPExpr *body = partition_body(P, &S, byoc_kid(&P->ix, n - 1, f->nparams));
  if (!body) goto out;
  GPFunctionExpr *nf = H->function_new(f->nparams, f->params, body, f->ret_type, f->attrs);
  gp_release(body);
  nf = (GPFunctionExpr *)with_type(P, nf ? &nf->base : NULL, pre->checked_type, pre->line, pre->col);
  if (!nf) goto out;
  rc = H->module_add(P->out, P->fname, nf, 1);
  gp_release(nf);
out:
  fn_state_free(&S, P->rs.nreg);
  byoc_regions_free(&P->rs);
  byoc_index_free(&P->ix);
  gp_release(pre);
  return rc;
}

static int partition_graph(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  Part P = {0};
  if (byoc_ops(&P.ops) != 0) return -1;
  P.bind = std_config_bool(ctx, "PartitionGraph.bind_constants", true);
  P.mod_name = std_config_str(ctx, "PartitionGraph.mod_name", "default");
  P.source = mod->source_name;
  GPModule *typed = std_module_typed(mod) ? gp_retain(mod) : H->infer_types(mod);
  if (!typed) return -1;
  P.out = H->module_copy(typed);
  int32_t nfuncs = typed->num_functions;
  for (int32_t fi = 0; P.out && fi < nfuncs; fi++) {
    if (std_function_skipped(typed->funcs[fi])) continue;
    if (partition_function(&P, typed, fi) != 0) {
      gp_release(P.out);
      P.out = NULL;
    }
  }
  gp_release(typed);
  if (!P.out) return -1;
  /* every node built carries its type unless P.untyped: then type the module again */
  GPModule *res = P.untyped ? H->infer_types(P.out) : gp_retain(P.out);
  gp_release(P.out);
  if (!res) return -1;
  std_note(ctx, "lifted %lld regions into external functions", (long long)P.created);
  return std_return_module(result, res);
}

int std_register_partition_graph(void) {
  static const char *const required[] = {"InferType"};
  static const GPConfigKey keys[] = {
      {.name = "mod_name",
       .type_index = GP_TI_RAW_STR,
       .default_value = {.type_index = GP_TI_RAW_STR, .v_c_str = "default"},
       .help = "module name in the external functions' names: tvmgen_<mod_name>_<target>_<function>_<id>"},
      {.name = "bind_constants",
       .type_index = GP_TI_BOOL,
       .default_value = {.type_index = GP_TI_BOOL, .v_int64 = 1},
       .help = "bind constant inputs into the external functions instead of passing them"},
  };
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .config_keys = keys,
      .num_config_keys = 2,
      .func = partition_graph,
      .help = "Lift each annotated region into a global function with a Compiler attribute (TVM's PartitionGraph).",
  };
  return H->pass_register(&info, 0);
}
