/* synth_graph.h -- the synthetic CNN-like graphs of bench_synth and bench_patterns: blocks of
 * nn.conv2d -> nn.bias_add -> nn.batch_norm -> get-item 0 -> nn.relu, a residual add every
 * second block and a dropout every fourth; every block has its own weight, bias and batch-norm
 * constants (4 channels, 8x8 maps); every eighth block also computes its relu twice and adds the
 * two.  Built through the IR API.  Include once per program; define SYNTH_PROG (the program's
 * name for messages) first. */
#ifndef GP_SYNTH_GRAPH_H
#define GP_SYNTH_GRAPH_H

#include "../ir/ir.h"

#include <stdio.h>
#include <stdlib.h>

#define CH 4
#define HW 8

static void die(const char *what) {
  fprintf(stderr, "%s: %s: %s\n", SYNTH_PROG, what, gp_error_message());
  exit(1);
}

/* A float32 constant of the given shape filled with base + i * step. */
static GPExpr *constant(int32_t ndim, const int64_t *shape, float base, float step) {
  GPTensor *t = gp_tensor_alloc(GP_DT_F32, ndim, shape, true);
  if (!t) die("tensor");
  float *p = t->dl.data;
  int64_t n = 1;
  for (int32_t i = 0; i < ndim; i++) n *= shape[i];
  for (int64_t i = 0; i < n; i++) p[i] = base + step * (float)(i % 7);
  GPConstant *c = gp_constant_new(t);
  gp_release(t);
  return &c->base;
}

/* A call of op `name` taking over the references in args (attrs: keys[i] = vals[i]). */
static GPExpr *call(const char *name, int32_t nargs, GPExpr **args, int32_t nattrs, const char *const *keys,
                    const GPAttrValue *vals) {
  GPExpr *c = gp_call_op(name, nargs, args, nattrs, keys, vals);
  if (!c) die(name);
  for (int32_t i = 0; i < nargs; i++) gp_release(args[i]);
  return c;
}

/* The graph with about n op calls (a whole number of blocks); *calls gets the exact count. */
static GPModule *make_graph(long n, long *calls) {
  const int64_t xshape[4] = {1, CH, HW, HW}, wshape[4] = {CH, CH, 3, 3}, vshape[1] = {CH};
  GPVar *x = gp_var_new("x", gp_type_tensor(GP_DT_F32, 4, xshape));
  GPExpr *prev = gp_retain(&x->base), *skip = gp_retain(&x->base);
  const int64_t pad[4] = {1, 1, 1, 1}, ks[2] = {3, 3};
  const char *ckeys[3] = {"padding", "channels", "kernel_size"};
  GPAttrValue cvals[3] = {gp_attr_ints(4, pad), gp_attr_int(CH), gp_attr_ints(2, ks)};
  long count = 0;
  for (long block = 0; count < n; block++) {
    if (block % 2 == 0) {
      gp_release(skip);
      skip = gp_retain(prev);
    }
    GPExpr *a2[2] = {prev, constant(4, wshape, 0.01f, 0.001f)};
    GPExpr *y = call("nn.conv2d", 2, a2, 3, ckeys, cvals);
    GPExpr *b2[2] = {y, constant(1, vshape, 0.1f, 0.01f)};
    y = call("nn.bias_add", 2, b2, 0, NULL, NULL);
    GPExpr *bn[5] = {y, constant(1, vshape, 1.0f, 0.1f), constant(1, vshape, 0.0f, 0.1f),
                     constant(1, vshape, 0.5f, 0.01f), constant(1, vshape, 2.0f, 0.2f)};
    GPExpr *t = call("nn.batch_norm", 5, bn, 0, NULL, NULL);
    GPTupleGetItem *g = gp_tuple_get_item_new(t, 0);
    gp_release(t);
    GPExpr *r1[1] = {gp_retain(&g->base)};
    y = call("nn.relu", 1, r1, 0, NULL, NULL);
    count += 4;
    if (block % 8 == 7) { /* the same relu twice, added */
      GPExpr *r2[1] = {gp_retain(&g->base)};
      GPExpr *dup = call("nn.relu", 1, r2, 0, NULL, NULL);
      GPExpr *s2[2] = {y, dup};
      y = call("add", 2, s2, 0, NULL, NULL);
      count += 2;
    }
    gp_release(g);
    if (block % 4 == 3) {
      GPExpr *d1[1] = {y};
      GPExpr *d = call("nn.dropout", 1, d1, 0, NULL, NULL);
      GPTupleGetItem *d0 = gp_tuple_get_item_new(d, 0);
      gp_release(d);
      y = &d0->base;
      count++;
    }
    if (block % 2 == 1) {
      GPExpr *s2[2] = {y, gp_retain(skip)};
      y = call("add", 2, s2, 0, NULL, NULL);
      count++;
    }
    prev = y;
  }
  gp_release(skip);
  GPFunctionExpr *fn = gp_function_new(1, &x, prev, NULL, NULL);
  gp_release(prev);
  gp_release(x);
  GPModule *m = gp_module_new("synth");
  if (gp_module_add(m, "main", fn, false) != 0) die("module");
  gp_release(fn);
  *calls = count;
  return m;
}

#endif /* GP_SYNTH_GRAPH_H */
