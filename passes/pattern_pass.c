/* pattern_pass.c -- see pattern_pass.h. */
#include "pattern_pass.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Declines noted one by one for --explain; the rest are counted. */
#define PP_MAX_DECLINE_NOTES 16

typedef struct PPFunc {
  PPRun *run;
  const GPPattern *const *pats;
} PPFunc;

static int pp_check(void *user, const GPMatch *m) {
  PPRun *r = user;
  const PPRule *rule = &r->rules[m->pattern_index];
  return rule->check ? rule->check(r, m) : 1;
}

static GPExpr *pp_rewrite(void *user, const GPMatch *m) {
  PPRun *r = user;
  const PPRule *rule = &r->rules[m->pattern_index];
  GPExpr *out = rule->rewrite(r, m);
  if (out) r->made[m->pattern_index]++;
  if (rule->rewrite != pp_composite) r->untyped = true; /* the driver types only its top node */
  return out;
}

static GPExpr *pp_function(void *user, const GPModule *mod, int32_t index) {
  PPFunc *f = user;
  f->run->source = mod->source_name;
  GPRewriteSpec spec = {.struct_size = sizeof spec, .abi_version = GP_ABI_VERSION, .num_patterns = f->run->n,
                        .patterns = f->pats, .check = pp_check, .rewrite = pp_rewrite, .user = f->run};
  return H->pattern_rewrite(&mod->funcs[index]->base, &spec);
}

static int run_rounds(const char *pass, const PPRule *rules, int32_t n, void *user, int32_t max_rounds,
                      const GPAny *args, int32_t nargs, GPAny *result) {
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(pass, args, nargs, &mod, &ctx) != 0) return -1;
  if (!GP_HAS_FIELD(H, GPHostAPI, pattern_table_get)) {
    H->error_set(GP_ERR_VERSION, "the host has no patterns (ABI 1.2 needed)");
    return -1;
  }
  if (n < 1 || n > PP_MAX_RULES) {
    H->error_set(GP_ERR_INTERNAL, "%d rules (1..%d)", (int)n, PP_MAX_RULES);
    return -1;
  }
  PPRun r = {.pass = pass, .ctx = ctx, .rules = rules, .n = n, .user = user};
  GPPattern *pats[PP_MAX_RULES] = {0};
  GPModule *out = NULL;
  for (int32_t i = 0; i < n; i++) {
    char src[128];
    snprintf(src, sizeof src, "%s rule '%s'", pass, rules[i].name);
    if (!(pats[i] = H->pattern_compile(rules[i].pattern, src, 1, 1))) goto done;
  }
  PPFunc f = {.run = &r, .pats = (const GPPattern *const *)pats};
  int32_t round = 0;
  int64_t total = 0;
  bool fixed = max_rounds <= 0;
  if (fixed) { /* pp_run: one round */
    out = std_function_pass_typed(mod, pp_function, &f, &r.untyped);
    round = 1;
  } else {
    out = gp_retain(mod);
    for (; round < max_rounds && out; round++) {
      int64_t before = total;
      GPModule *next = std_function_pass_typed(out, pp_function, &f, &r.untyped);
      gp_release(out);
      out = next;
      total = 0;
      for (int32_t i = 0; i < n; i++) total += r.made[i];
      if (total == before) {
        round++;
        fixed = true;
        break;
      }
    }
  }
  if (out) {
    char buf[480];
    size_t len = 0;
    buf[0] = 0;
    total = 0;
    for (int32_t i = 0; i < n; i++) {
      total += r.made[i];
      if (max_rounds > 0 && !r.made[i]) continue;
      if (len < sizeof buf)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s %lld", len ? ", " : "", rules[i].name,
                                (long long)r.made[i]);
    }
    if (r.declined > PP_MAX_DECLINE_NOTES)
      std_note(ctx, "... and %lld more left alone", (long long)(r.declined - PP_MAX_DECLINE_NOTES));
    if (max_rounds <= 0)
      std_note(ctx, "fused %lld (%s); left alone %lld", (long long)total, buf, (long long)r.declined);
    else
      std_note(ctx, "rewrote %lld in %d round%s%s (%s); left alone %lld", (long long)total, (int)round,
               round == 1 ? "" : "s", fixed ? "" : ", stopped at the bound before a fixed point", buf,
               (long long)r.declined);
  }
done:
  for (int32_t i = 0; i < n; i++) gp_release(pats[i]);
  std_seen_free(&r.declined_by);
  if (!out) return -1;
  return std_return_module(result, out);
}

int pp_run(const char *pass, const PPRule *rules, int32_t n, void *user, const GPAny *args, int32_t nargs,
           GPAny *result) {
  return run_rounds(pass, rules, n, user, 0, args, nargs, result);
}

int pp_run_fixed(const char *pass, const PPRule *rules, int32_t n, void *user, int32_t max_rounds,
                 const GPAny *args, int32_t nargs, GPAny *result) {
  if (max_rounds < 1) {
    H->error_set(GP_ERR_VALUE, "%s: max_rounds is %d; it must be >= 1", pass, (int)max_rounds);
    return -1;
  }
  return run_rounds(pass, rules, n, user, max_rounds, args, nargs, result);
}

GPExpr *pp_cap(const GPMatch *m, const char *name) {
  for (int32_t i = 0; i < m->num_captures && i < m->pattern->num_captures; i++)
    if (strcmp(m->pattern->capture_names[i], name) == 0) return m->captures[i];
  return NULL;
}

int pp_decline(PPRun *r, const GPMatch *m, const char *fmt, ...) {
  _Static_assert(PP_MAX_RULES <= 32, "a rule's bit in a pointer-sized mask");
  if (std_seen_mark(&r->declined_by, m->root, (uintptr_t)1 << m->pattern_index)) return 0; /* noted in an earlier round */
  if (++r->declined > PP_MAX_DECLINE_NOTES) return 0;
  char why[384], loc[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  std_note(r->ctx, "left alone %s at %s: %s", r->rules[m->pattern_index].name,
           std_where(r->source, m->root, loc, sizeof loc), why);
  return 0;
}

void pp_fail(PPRun *r, const GPMatch *m, const char *fmt, ...) {
  char why[384], loc[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  int32_t kind = H->error_kind();
  H->error_set(kind ? kind : GP_ERR_PASS, "%s at %s: %s", r->rules[m->pattern_index].name,
               std_where(r->source, m->root, loc, sizeof loc), why);
}

/* ------------------------------------------------------------------------------------------ */
/* Composites                                                                                  */

static int32_t find(GPExpr *const *a, int32_t n, const GPExpr *e) {
  for (int32_t i = 0; i < n; i++)
    if (a[i] == e) return i;
  return -1;
}

/* TVM's PartitionedFromPattern: the interior's calls in post-order as "<op>_" (tuples "Tuple_",
 * get-items "TupleGetItem<i>_"; embedded constants add nothing).  Iterative. */
static void pattern_name(const GPMatch *m, char *buf, size_t cap) {
  int32_t nn = m->num_nodes;
  size_t len = 0;
  buf[0] = 0;
  GPExpr **stack = gp_scratch_alloc(sizeof(GPExpr *) * (size_t)(nn + 1));
  int32_t *next = gp_scratch_alloc(sizeof(int32_t) * (size_t)(nn + 1));
  uint8_t *seen = gp_scratch_zalloc((size_t)(nn + 1), 1);
  int32_t sp = 0;
  stack[sp] = m->root;
  next[sp++] = 0;
  seen[0] = 1;
  while (sp) {
    GPExpr *e = stack[sp - 1];
    if (next[sp - 1] < gp_expr_num_children(e)) {
      GPExpr *c = gp_expr_child_at(e, next[sp - 1]++);
      int32_t idx = find(m->nodes, nn, c);
      if (idx >= 0 && !seen[idx]) {
        seen[idx] = 1;
        stack[sp] = c;
        next[sp++] = 0;
      }
      continue;
    }
    sp--;
    char part[160] = "";
    if (ekind(e) == GP_TI_CALL) snprintf(part, sizeof part, "%s_", sb_op_name(e) ? sb_op_name(e) : "Call");
    else if (ekind(e) == GP_TI_TUPLE) snprintf(part, sizeof part, "Tuple_");
    else if (ekind(e) == GP_TI_TUPLE_GET_ITEM)
      snprintf(part, sizeof part, "TupleGetItem%d_", (int)((const GPTupleGetItem *)e)->index);
    size_t pl = strlen(part);
    if (len + pl + 1 < cap) {
      memcpy(buf + len, part, pl + 1);
      len += pl;
    }
  }
  gp_scratch_free(stack);
  gp_scratch_free(next);
  gp_scratch_free(seen);
}

GPExpr *pp_composite(PPRun *r, const GPMatch *m) {
  GPExpr *result = pp_make_composite(m, r->rules[m->pattern_index].name, r->graphs[m->pattern_index]++, &r->untyped);
  if (!result) pp_fail(r, m, "building the composite failed");
  return result;
}

GPExpr *pp_make_composite(const GPMatch *m, const char *composite, int32_t g, bool *untyped) {
  int32_t ni = m->num_inputs, nn = m->num_nodes, np = 0;
  GPVar **params = gp_scratch_zalloc((size_t)(ni ? ni : 1), sizeof(GPVar *));
  GPExpr **made = gp_scratch_zalloc((size_t)(nn ? nn : 1), sizeof(GPExpr *));
  GPExpr *result = NULL;
  for (; np < ni; np++) {
    char name[64];
    snprintf(name, sizeof name, "FunctionVar_%d_%d", (int)g, (int)np);
    if (!(params[np] = H->var_new(name, m->inputs[np]->checked_type))) goto out;
    params[np]->base.checked_type = m->inputs[np]->checked_type; /* as InferType types a var */
  }
  /* the interior, descendants first (reverse pre-order); a node listed twice is built once */
  for (int32_t i = nn - 1; i >= 0; i--) {
    GPExpr *u = m->nodes[i];
    if (find(m->nodes, nn, u) != i) continue;
    if (ekind(u) == GP_TI_CONSTANT) {
      made[i] = gp_retain(u);
      continue;
    }
    int32_t nk = gp_expr_num_children(u);
    GPExpr *small[16];
    GPExpr **kids = nk > 16 ? gp_scratch_alloc(sizeof(GPExpr *) * (size_t)nk) : small;
    bool bad = false;
    for (int32_t k = 0; k < nk; k++) {
      GPExpr *c = gp_expr_child_at(u, k);
      int32_t pi = find(m->inputs, ni, c), ci = find(m->nodes, nn, c);
      if (ekind(c) == GP_TI_OP) kids[k] = c;
      else if (pi >= 0) kids[k] = &params[pi]->base;
      else if (ci >= 0 && made[ci]) kids[k] = made[ci];
      else bad = true;
    }
    if (bad) H->error_set(GP_ERR_INTERNAL, "a child of a matched node is neither matched nor an input");
    else if (ekind(u) == GP_TI_CALL)
      made[i] = (GPExpr *)H->call_new(kids[0], ((const GPCall *)u)->nargs, kids + 1, ((const GPCall *)u)->attrs);
    else if (ekind(u) == GP_TI_TUPLE) made[i] = (GPExpr *)H->tuple_new(nk, kids);
    else if (ekind(u) == GP_TI_TUPLE_GET_ITEM)
      made[i] = (GPExpr *)H->tuple_get_item_new(kids[0], ((const GPTupleGetItem *)u)->index);
    else H->error_set(GP_ERR_INTERNAL, "unexpected %s in a match", std_kind_name(ekind(u)));
    if (kids != small) gp_scratch_free(kids);
    if (!made[i]) goto out;
    /* Each new node computes what u computes, on parameters of its inputs' types: u's type
     * (the nodes are ours alone until returned). */
    made[i]->checked_type = u->checked_type;
  }
  {
    char pname[1024];
    pattern_name(m, pname, sizeof pname);
    const char *keys[2] = {"PartitionedFromPattern", "Composite"};
    GPAttrValue vals[2] = {{.kind = GP_ATTR_STR, .s = pname},
                           {.kind = GP_ATTR_STR, .s = composite}};
    GPAttrs *attrs = H->attrs_new(2, keys, vals);
    /* the return type as InferType annotates it */
    GPFunctionExpr *fn = attrs ? H->function_new(np, params, made[0], made[0]->checked_type, attrs) : NULL;
    gp_release(attrs);
    bool typed = fn && made[0]->checked_type;
    const GPType *small_t[16], **pt = np > 16 ? gp_scratch_alloc(sizeof(GPType *) * (size_t)np) : small_t;
    for (int32_t i = 0; typed && i < np; i++) typed = (pt[i] = params[i]->base.checked_type) != NULL;
    if (typed) fn->base.checked_type = H->type_func(np, pt, made[0]->checked_type);
    if (pt != small_t) gp_scratch_free(pt);
    if (fn) result = (GPExpr *)H->call_new(&fn->base, ni, m->inputs, NULL);
    if (result && typed && fn->base.checked_type) result->checked_type = m->root->checked_type;
    if (untyped && (!result || !result->checked_type)) *untyped = true;
    gp_release(fn);
  }
out:
  for (int32_t i = 0; i < np; i++) gp_release(params[i]);
  for (int32_t i = 0; i < nn; i++) gp_release(made[i]);
  gp_scratch_free(params);
  gp_scratch_free(made);
  return result;
}

/* ------------------------------------------------------------------------------------------ */
/* Attributes, constants, layouts                                                              */

const GPAttrValue *pp_attr(const GPExpr *call, const char *key) {
  if (ekind(call) != GP_TI_CALL || !((const GPCall *)call)->attrs) return NULL;
  return H->attrs_get(((const GPCall *)call)->attrs, key);
}

int64_t pp_attr_int(const GPExpr *call, const char *key, int64_t dflt) {
  const GPAttrValue *v = pp_attr(call, key);
  return v && (v->kind == GP_ATTR_INT || v->kind == GP_ATTR_BOOL) ? v->i : dflt;
}

double pp_attr_float(const GPExpr *call, const char *key, double dflt) {
  const GPAttrValue *v = pp_attr(call, key);
  if (v && v->kind == GP_ATTR_FLOAT) return v->f;
  return v && v->kind == GP_ATTR_INT ? (double)v->i : dflt;
}

const char *pp_attr_str(const GPExpr *call, const char *key, const char *dflt) {
  const GPAttrValue *v = pp_attr(call, key);
  return v && v->kind == GP_ATTR_STR && v->s ? v->s : dflt;
}

int64_t pp_numel(const GPTensor *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) n *= t->dl.shape[i];
  return n;
}

static bool compact(const DLTensor *t) {
  if (!t->strides) return true;
  int64_t s = 1;
  for (int32_t i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->strides[i] != s) return false;
    s *= t->shape[i];
  }
  return true;
}

const GPTensor *pp_float_data(const GPExpr *e) {
  if (!e || ekind(e) != GP_TI_CONSTANT) return NULL;
  const GPTensor *t = ((const GPConstant *)e)->data;
  if (!t || !t->dl.data || t->dl.device.device_type != kDLCPU || !compact(&t->dl)) return NULL;
  DLDataType d = t->dl.dtype;
  if (d.code != kDLFloat || d.lanes != 1 || (d.bits != 32 && d.bits != 64)) return NULL;
  return t;
}

double pp_get(const GPTensor *t, int64_t i) {
  const char *base = (const char *)t->dl.data + t->dl.byte_offset;
  if (t->dl.dtype.bits == 64) {
    double v;
    memcpy(&v, base + 8 * i, 8);
    return v;
  }
  float v;
  memcpy(&v, base + 4 * i, 4);
  return v;
}

void pp_set(GPTensor *t, int64_t i, double v) {
  char *base = (char *)t->dl.data + t->dl.byte_offset;
  if (t->dl.dtype.bits == 64) {
    memcpy(base + 8 * i, &v, 8);
  } else {
    float f = (float)v;
    memcpy(base + 4 * i, &f, 4);
  }
}

GPTensor *pp_tensor_new(DLDataType dtype, int32_t ndim, const int64_t *shape) {
  return H->tensor_alloc(dtype, ndim, shape, 1);
}

GPExpr *pp_constant(GPTensor *t) { return t ? (GPExpr *)H->constant_new(t) : NULL; }

int32_t pp_layout_axis(const char *layout, char c) {
  const char *p = layout ? strchr(layout, c) : NULL;
  return p ? (int32_t)(p - layout) : -1;
}

const char *pp_shape(const GPType *t, char *buf, size_t n) {
  if (!t || t->kind != GP_TYPE_TENSOR) {
    snprintf(buf, n, "(untyped)");
    return buf;
  }
  size_t len = (size_t)snprintf(buf, n, "(");
  for (int32_t i = 0; i < t->n && len < n; i++) {
    if (t->tensor.shape[i] < 0) len += (size_t)snprintf(buf + len, n - len, "%s?", i ? ", " : "");
    else len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? ", " : "", (long long)t->tensor.shape[i]);
  }
  if (len < n) snprintf(buf + len, n - len, ")");
  return buf;
}

bool pp_layout_plain(const char *layout, const char *letters) {
  if (!layout || strlen(layout) != strlen(letters)) return false;
  for (const char *c = letters; *c; c++)
    if (!strchr(layout, *c)) return false;
  return true;
}
