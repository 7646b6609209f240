/*
 * criterion_shim.h -- a minimal stand-in for <criterion/criterion.h> so a test file can be built
 * with -fsanitize=thread (Criterion itself aborts under TSan: "Could not initialize inheritable
 * arena", Snaipe/Criterion#274).  Force-included with `-include`; it claims Criterion's include
 * guard, registers each Test() in a list, and its main() runs the tests whose "suite/name"
 * contains argv[1] (all when absent) in-process, one after another, calling the suite's .fini.
 * Only what our tests use: Test, TestSuite(.init/.fini), cr_assert*, cr_log_info.
 */
#ifndef GP_CRITERION_SHIM_H
#define GP_CRITERION_SHIM_H
#define CRITERION_H_
#define CRITERION_CRITERION_H_

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ShimTest {
  const char *suite, *name;
  void (*fn)(void);
  struct ShimTest *next;
} ShimTest;
typedef struct ShimSuite {
  const char *name;
  void (*init)(void), (*fini)(void);
  struct ShimSuite *next;
} ShimSuite;
struct shim_suite_opts { void (*init)(void); void (*fini)(void); };
static ShimTest *shim_tests;
static ShimSuite *shim_suites;

#define Test(suite, name, ...)                                                                  \
  static void suite##_##name(void);                                                             \
  __attribute__((constructor)) static void shim_reg_##suite##_##name(void) {                    \
    static ShimTest t = {#suite, #name, suite##_##name, NULL};                                  \
    ShimTest **p = &shim_tests;                                                                  \
    while (*p) p = &(*p)->next;                                                                 \
    *p = &t;                                                                                    \
  }                                                                                             \
  static void suite##_##name(void)

#define TestSuite(suite, ...)                                                                   \
  __attribute__((constructor)) static void shim_suite_##suite(void) {                           \
    static ShimSuite s;                                                                         \
    struct shim_suite_opts o = {__VA_ARGS__};                                                   \
    s.name = #suite, s.init = o.init, s.fini = o.fini, s.next = shim_suites;                    \
    shim_suites = &s;                                                                           \
  }                                                                                             \
  struct shim_dummy_##suite

#define SHIM_FAIL(...)                                                                          \
  do {                                                                                          \
    fprintf(stderr, "%s:%d: assertion failed: ", __FILE__, __LINE__);                          \
    fprintf(stderr, "" __VA_ARGS__);                                                            \
    fprintf(stderr, "\n");                                                                      \
    abort();                                                                                    \
  } while (0)
#define cr_assert(c, ...) do { if (!(c)) SHIM_FAIL(#c " " __VA_ARGS__); } while (0)
#define cr_assert_not(c, ...) cr_assert(!(c), __VA_ARGS__)
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_neq(a, b, ...) cr_assert((a) != (b), __VA_ARGS__)
#define cr_assert_null(a, ...) cr_assert((a) == NULL, __VA_ARGS__)
#define cr_assert_not_null(a, ...) cr_assert((a) != NULL, __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) cr_assert(strcmp((a), (b)) == 0, __VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...) cr_assert(fabs((double)(a) - (double)(b)) <= (eps), __VA_ARGS__)
#define cr_assert_fail(...) SHIM_FAIL(__VA_ARGS__)
#define cr_log_info(...) fprintf(stderr, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) cr_assert((a) >= (b), __VA_ARGS__)
#define cr_assert_leq(a, b, ...) cr_assert((a) <= (b), __VA_ARGS__)
/* Expectations stop the test here, like assertions. */
#define cr_expect(c, ...) cr_assert(c, __VA_ARGS__)
#define cr_expect_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_expect_neq(a, b, ...) cr_assert((a) != (b), __VA_ARGS__)
#define cr_expect_geq(a, b, ...) cr_assert((a) >= (b), __VA_ARGS__)
#define cr_expect_leq(a, b, ...) cr_assert((a) <= (b), __VA_ARGS__)
#define cr_skip_test(...) do { fprintf(stderr, "skipped: " __VA_ARGS__); fprintf(stderr, "\n"); return; } while (0)

int main(int argc, char **argv) {
  int n = 0;
  for (ShimTest *t = shim_tests; t; t = t->next) {
    char full[256];
    snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
    if (argc > 1 && !strstr(full, argv[1])) continue;
    ShimSuite *s = shim_suites;
    while (s && strcmp(s->name, t->suite) != 0) s = s->next;
    if (s && s->init) s->init();
    t->fn();
    if (s && s->fini) s->fini();
    fprintf(stderr, "[PASS] %s\n", full);
    n++;
  }
  fprintf(stderr, "shim: %d test(s) passed\n", n);
  return 0;
}
#endif
