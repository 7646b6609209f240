/* test_builders.h -- small IR builders and error assertions shared by the unit tests.
 * Every builder fails the test (with the pending error) instead of returning NULL; results are
 * new references owned by the test.  A file may define TH_SOURCE_NAME before including this
 * to name the source of the modules module1() builds. */
#ifndef GP_TEST_BUILDERS_H
#define GP_TEST_BUILDERS_H

#include "../ir/ir.h"

#include <criterion/criterion.h>
#include <string.h>

#ifndef TH_SOURCE_NAME
#define TH_SOURCE_NAME "model.relay"
#endif

/* Assert the pending error has `kind` and contains `needle`, then clear it. */
static inline void expect_error(int32_t kind, const char *needle) {
  cr_assert_eq(gp_error_kind(), kind, "error kind %d, expected %d (%s)", gp_error_kind(), kind,
               gp_error_message());
  cr_assert(strstr(gp_error_message(), needle), "message \"%s\" lacks \"%s\"", gp_error_message(),
            needle);
  gp_error_clear();
}

static inline const GPType *T2(int64_t a, int64_t b) {
  int64_t s[2] = {a, b};
  return gp_type_tensor(GP_DT_F32, 2, s);
}

static inline GPExpr *E(void *e) {
  cr_assert(e, "constructor failed: %s", gp_error_message());
  return (GPExpr *)e;
}

/* Set the location of a node the test just built (sole owner). */
static inline GPExpr *at(GPExpr *e, uint32_t line, uint32_t col) {
  e->line = line;
  e->col = col;
  return e;
}

static inline GPExpr *call1(const char *op, GPExpr *a) {
  GPExpr *args[1] = {a};
  return E(gp_call_new((GPExpr *)gp_op_get(op), 1, args, NULL));
}

static inline GPExpr *call2(const char *op, GPExpr *a, GPExpr *b) {
  GPExpr *args[2] = {a, b};
  return E(gp_call_new((GPExpr *)gp_op_get(op), 2, args, NULL));
}

static inline GPFunctionExpr *fn1(GPVar *p, GPExpr *body, const GPType *ret) {
  return (GPFunctionExpr *)E(gp_function_new(p ? 1 : 0, p ? &p : NULL, body, ret, NULL));
}

static inline GPModule *module1(const char *name, GPFunctionExpr *fn) {
  GPModule *m = gp_module_new(TH_SOURCE_NAME);
  cr_assert_eq(gp_module_add(m, name, fn, false), 0);
  return m;
}

#endif
