/* test_ffi.c -- the libffi bridge: wrap (C -> packed), closure (packed -> C), round trips,
 * argument checks, malformed signatures, and the host table's entries. */
#include "test_builders.h"
#include "ffi/bridge.h"
#include "ir/ir.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers */

static GPAny A_int(int64_t v) { return gp_any_int(v); }
static GPAny A_f(double v) { return gp_any_float(v); }

/* Call a packed function; the result is owned by the caller. */
static int call(GPPackedFunc *f, GPAny *res, int32_t n, ...) {
  GPAny args[GP_FFI_MAX_ARGS + 2];
  va_list ap;
  va_start(ap, n);
  for (int32_t i = 0; i < n; i++) args[i] = va_arg(ap, GPAny);
  va_end(ap);
  return gp_func_call(f, args, n, res);
}

/* ---- C functions of every type code */

static int64_t c_all(int32_t a, double b, void *p, const char *s, GPObject *o) {
  int64_t r = a + (int64_t)(b * 10);
  if (p) r += *(int *)p;
  if (s) r += (int64_t)strlen(s) * 1000;
  if (o) r += o->type_index * 100000;
  return r;
}
static bool c_not(bool x) { return !x; }
static int32_t c_sub32(int32_t a, int32_t b) { return a - b; }
static int64_t c_neg64(int64_t a) { return -a; }
static uint32_t c_inc_u32(uint32_t a) { return a + 1u; }
static uint64_t c_dec_u64(uint64_t a) { return a - 1u; }
static float c_mul_f32(float a, float b) { return a * b; }
static double c_scale_f64(double a, int32_t k) { return a * k; }
static void *c_next_ptr(void *p) { return (char *)p + 1; }
static const char *c_pick(const char *s, bool upper) {
  if (!s) return "null";
  return upper ? "UPPER" : s;
}
static GPObject *c_retain(GPObject *o) { return gp_retain(o); }
static void c_store(void *p, int64_t v) { *(int64_t *)p = v; }
static int32_t c_seven(void) { return 7; }
static double c_many(int32_t a0, double a1, int64_t a2, float a3, int32_t a4, double a5, int64_t a6,
                     float a7, int32_t a8, double a9, int64_t a10, float a11, int32_t a12,
                     double a13, uint64_t a14, bool a15) {
  return a0 + a1 + (double)a2 + a3 + a4 + a5 + (double)a6 + a7 + a8 + a9 + (double)a10 + a11 +
         a12 + a13 + (double)a14 + (a15 ? 1000.0 : 0.0);
}
static GPObject *c_fail_obj(int32_t fail) {
  if (fail) {
    gp_error_set(GP_ERR_VALUE, "c_fail_obj was asked to fail");
    return NULL;
  }
  return NULL; /* a plain NULL: None */
}
static void *c_fail_ptr(void) {
  gp_error_set(GP_ERR_NOT_FOUND, "nothing here");
  return NULL;
}

#define FN(f) ((void *)(uintptr_t)(f))

Test(ffi_wrap, all_param_codes) {
  GPPackedFunc *f = gp_ffi_wrap(FN(c_all), "i64(i32,f64,p,s,o)");
  cr_assert_not_null(f, "%s", gp_error_message());
  int three = 3;
  GPString *str = gp_string_new("xy", 2);
  GPAny res;
  cr_assert_eq(call(f, &res, 5, A_int(-2), A_f(1.5), gp_any_ptr(&three), gp_any_str("abcd"),
                    gp_any_obj(str)),
               0, "%s", gp_error_message());
  cr_assert_eq(res.type_index, GP_TI_INT);
  cr_assert_eq(res.v_int64, -2 + 15 + 3 + 4000 + GP_TI_STR * 100000);
  /* None for p, s, o -> NULL; a Str object for s; Int for f64 */
  cr_assert_eq(call(f, &res, 5, A_int(1), A_int(2), (GPAny){0}, gp_any_obj(str), (GPAny){0}), 0,
               "%s", gp_error_message());
  cr_assert_eq(res.v_int64, 1 + 20 + 2000);
  gp_release(str);
  gp_release(f);
}

Test(ffi_wrap, every_return_code) {
  GPAny res;
  GPPackedFunc *f;

  f = gp_ffi_wrap(FN(c_not), "b(b)");
  cr_assert_eq(call(f, &res, 1, gp_any_bool(false)), 0);
  cr_assert(res.type_index == GP_TI_BOOL && res.v_int64 == 1);
  cr_assert_eq(call(f, &res, 1, A_int(5)), 0); /* Int accepted for bool */
  cr_assert(res.type_index == GP_TI_BOOL && res.v_int64 == 0);
  gp_release(f);

  f = gp_ffi_wrap(FN(c_sub32), "i32(i32, i32)");
  cr_assert_eq(call(f, &res, 2, A_int(3), A_int(10)), 0);
  cr_assert(res.type_index == GP_TI_INT && res.v_int64 == -7, "got %lld", (long long)res.v_int64);
  cr_assert_eq(call(f, &res, 2, A_int(INT32_MIN), A_int(0)), 0);
  cr_assert_eq(res.v_int64, INT32_MIN);
  gp_release(f);

  f = gp_ffi_wrap(FN(c_neg64), "i64(i64)");
  cr_assert_eq(call(f, &res, 1, A_int(INT64_MAX)), 0);
  cr_assert_eq(res.v_int64, -INT64_MAX);
  gp_release(f);

  f = gp_ffi_wrap(FN(c_inc_u32), "u32(u32)");
  cr_assert_eq(call(f, &res, 1, A_int(0xfffffffe)), 0);
  cr_assert(res.type_index == GP_TI_INT && res.v_int64 == 0xffffffffll);
  gp_release(f);

  f = gp_ffi_wrap(FN(c_dec_u64), "u64(u64)");
  cr_assert_eq(call(f, &res, 1, A_int(0)), 0); /* 0 - 1 = UINT64_MAX, carried as -1 */
  cr_assert(res.type_index == GP_TI_INT && res.v_int64 == -1);
  cr_assert_eq(call(f, &res, 1, A_int(-1)), 0);
  cr_assert_eq((uint64_t)res.v_int64, UINT64_MAX - 1);
  gp_release(f);

  f = gp_ffi_wrap(FN(c_mul_f32), "f32(f32,f32)");
  cr_assert_eq(call(f, &res, 2, A_f(1.5), A_int(4)), 0);
  cr_assert(res.type_index == GP_TI_FLOAT && res.v_float64 == 6.0);
  gp_release(f);

  f = gp_ffi_wrap(FN(c_scale_f64), "f64(f64,i32)");
  cr_assert_eq(call(f, &res, 2, A_f(0.25), A_int(-3)), 0);
  cr_assert(res.type_index == GP_TI_FLOAT && res.v_float64 == -0.75);
  gp_release(f);

  char buf[4];
  f = gp_ffi_wrap(FN(c_next_ptr), "p(p)");
  cr_assert_eq(call(f, &res, 1, gp_any_ptr(buf)), 0);
  cr_assert(res.type_index == GP_TI_OPAQUE_PTR && res.v_ptr == buf + 1);
  gp_release(f);

  f = gp_ffi_wrap(FN(c_pick), "s(s,b)");
  cr_assert_eq(call(f, &res, 2, gp_any_str("abc"), gp_any_bool(false)), 0);
  cr_assert_eq(res.type_index, GP_TI_STR);
  cr_assert_str_eq(((GPString *)res.v_obj)->data, "abc");
  gp_any_clear(&res);
  cr_assert_eq(call(f, &res, 2, (GPAny){0}, gp_any_bool(true)), 0);
  cr_assert_str_eq(((GPString *)res.v_obj)->data, "null");
  gp_any_clear(&res);
  gp_release(f);

  GPString *s = gp_string_new("obj", 3);
  f = gp_ffi_wrap(FN(c_retain), "o(o)");
  cr_assert_eq(call(f, &res, 1, gp_any_obj(s)), 0);
  cr_assert(res.type_index == GP_TI_STR && res.v_obj == &s->obj);
  cr_assert_eq(s->obj.ref_count, 2u);
  gp_any_clear(&res);
  cr_assert_eq(s->obj.ref_count, 1u);
  gp_release(s);
  gp_release(f);

  int64_t cell = 0;
  f = gp_ffi_wrap(FN(c_store), "v(p,i64)");
  cr_assert_eq(call(f, &res, 2, gp_any_ptr(&cell), A_int(42)), 0);
  cr_assert_eq(res.type_index, GP_TI_NONE);
  cr_assert_eq(cell, 42);
  gp_release(f);

  f = gp_ffi_wrap(FN(c_seven), "i32()");
  cr_assert_eq(call(f, &res, 0), 0);
  cr_assert_eq(res.v_int64, 7);
  gp_release(f);
}

Test(ffi_wrap, sixteen_args_on_the_stack) {
  const char *sig = "f64(i32,f64,i64,f32,i32,f64,i64,f32,i32,f64,i64,f32,i32,f64,u64,b)";
  GPPackedFunc *f = gp_ffi_wrap(FN(c_many), sig);
  cr_assert_not_null(f, "%s", gp_error_message());
  GPAny args[16];
  double expect = 0;
  for (int i = 0; i < 15; i++) {
    bool fl = i % 2 == 1;
    args[i] = fl ? A_f(i + 0.5) : A_int(i);
    expect += fl ? i + 0.5 : i;
  }
  args[15] = gp_any_bool(true);
  expect += 1000;
  GPAny res;
  cr_assert_eq(gp_func_call(f, args, 16, &res), 0, "%s", gp_error_message());
  cr_assert_float_eq(res.v_float64, expect, 1e-9);
  gp_release(f);
}

Test(ffi_wrap, argument_errors) {
  GPPackedFunc *f = gp_ffi_wrap(FN(c_scale_f64), "f64(f64,i32)");
  GPAny res;
  cr_assert_eq(call(f, &res, 1, A_f(1)), -1);
  expect_error(GP_ERR_VALUE, "expected 2 arguments, got 1");
  cr_assert_eq(res.type_index, GP_TI_NONE);
  cr_assert_eq(call(f, &res, 3, A_f(1), A_int(1), A_int(1)), -1);
  expect_error(GP_ERR_VALUE, "expected 2 arguments, got 3");
  cr_assert_eq(call(f, &res, 2, gp_any_str("x"), A_int(1)), -1);
  expect_error(GP_ERR_TYPE, "argument 0: expected f64 (double), got string");
  cr_assert_eq(call(f, &res, 2, A_f(1), A_f(2)), -1);
  expect_error(GP_ERR_TYPE, "argument 1: expected i32 (int32_t), got float");
  cr_assert_eq(call(f, &res, 2, A_f(1), A_int(1ll << 40)), -1);
  expect_error(GP_ERR_VALUE, "argument 1: value 1099511627776 out of range for i32");
  gp_release(f);

  f = gp_ffi_wrap(FN(c_inc_u32), "u32(u32)");
  cr_assert_eq(call(f, &res, 1, A_int(-1)), -1);
  expect_error(GP_ERR_VALUE, "out of range for u32");
  gp_release(f);

  f = gp_ffi_wrap(FN(c_retain), "o(o)");
  cr_assert_eq(call(f, &res, 1, A_int(3)), -1);
  expect_error(GP_ERR_TYPE, "argument 0: expected o (GPObject *), got int");
  gp_release(f);

  f = gp_ffi_wrap(FN(c_next_ptr), "p(p)");
  cr_assert_eq(call(f, &res, 1, gp_any_str("s")), -1);
  expect_error(GP_ERR_TYPE, "ffi call p(p): argument 0: expected p (void *), got string");
  gp_release(f);

  f = gp_ffi_wrap(FN(c_pick), "s(s,b)");
  cr_assert_eq(call(f, &res, 2, A_int(1), gp_any_bool(true)), -1);
  expect_error(GP_ERR_TYPE, "argument 0: expected s (const char *), got int");
  cr_assert_eq(call(f, &res, 2, gp_any_str("a"), A_f(1)), -1);
  expect_error(GP_ERR_TYPE, "argument 1: expected b (bool), got float");
  gp_release(f);
}

Test(ffi_wrap, null_returns_and_errors) {
  GPAny res;
  GPPackedFunc *f = gp_ffi_wrap(FN(c_fail_obj), "o(i32)");
  cr_assert_eq(call(f, &res, 1, A_int(1)), -1);
  expect_error(GP_ERR_VALUE, "c_fail_obj was asked to fail");
  /* A plain NULL is None. */
  cr_assert_eq(call(f, &res, 1, A_int(0)), 0);
  cr_assert_eq(res.type_index, GP_TI_NONE);
  /* An error pending before the call is not mistaken for a failure, and is kept. */
  gp_error_set(GP_ERR_IO, "stale");
  cr_assert_eq(call(f, &res, 1, A_int(0)), 0);
  cr_assert_eq(res.type_index, GP_TI_NONE);
  expect_error(GP_ERR_IO, "stale");
  gp_release(f);

  f = gp_ffi_wrap(FN(c_fail_ptr), "p()");
  cr_assert_eq(call(f, &res, 0), -1);
  expect_error(GP_ERR_NOT_FOUND, "nothing here");
  gp_release(f);

  cr_assert_null(gp_ffi_wrap(NULL, "v()"));
  expect_error(GP_ERR_VALUE, "NULL function pointer");
}

/* ---- packed functions for closures */

static int pf_add(void *self, const GPAny *args, int32_t nargs, GPAny *res) {
  (void)self;
  int64_t s = 0;
  for (int32_t i = 0; i < nargs; i++) {
    if (args[i].type_index == GP_TI_FLOAT) s += (int64_t)args[i].v_float64;
    else s += args[i].v_int64;
  }
  *res = gp_any_int(s);
  return 0;
}

/* Returns its first argument (retained when an object), or None. */
static int pf_echo(void *self, const GPAny *args, int32_t nargs, GPAny *res) {
  (void)self;
  if (nargs == 0) return 0;
  *res = args[0];
  if (res->type_index >= GP_TI_OBJECT) gp_retain(res->v_obj);
  return 0;
}

static int pf_fail(void *self, const GPAny *args, int32_t nargs, GPAny *res) {
  (void)self, (void)args, (void)nargs, (void)res;
  gp_error_set(GP_ERR_PASS, "pf_fail failed");
  return -1;
}

static int pf_new_string(void *self, const GPAny *args, int32_t nargs, GPAny *res) {
  (void)self;
  char buf[64];
  snprintf(buf, sizeof buf, "n=%lld", nargs ? (long long)args[0].v_int64 : -1ll);
  GPString *s = gp_string_new(buf, strlen(buf));
  res->type_index = GP_TI_STR;
  res->v_obj = &s->obj;
  return 0;
}

static int pf_sum_f64(void *self, const GPAny *args, int32_t nargs, GPAny *res) {
  (void)self;
  double s = 0;
  for (int32_t i = 0; i < nargs; i++) {
    switch (args[i].type_index) {
    case GP_TI_FLOAT: s += args[i].v_float64; break;
    case GP_TI_INT:
    case GP_TI_BOOL: s += (double)args[i].v_int64; break;
    default: gp_error_set(GP_ERR_TYPE, "arg %d: bad type", i); return -1;
    }
  }
  *res = gp_any_float(s);
  return 0;
}

static int pf_store(void *self, const GPAny *args, int32_t nargs, GPAny *res) {
  (void)self, (void)res;
  cr_assert_eq(nargs, 2);
  cr_assert_eq(args[0].type_index, GP_TI_OPAQUE_PTR);
  *(int64_t *)args[0].v_ptr = args[1].v_int64;
  return 0;
}

static GPPackedFunc *pf(GPPackedCFunc fn) { return gp_func_new(NULL, fn, NULL); }

Test(ffi_closure, integer_codes) {
  GPPackedFunc *add = pf(pf_add);
  GPFfiClosure *h;

  int64_t (*add64)(int64_t, int64_t) = (int64_t(*)(int64_t, int64_t))gp_ffi_closure(add, "i64(i64,i64)", &h);
  cr_assert_not_null(add64, "%s", gp_error_message());
  cr_assert_eq(add64(40, 2), 42);
  cr_assert_eq(add64(INT64_MIN + 1, -1), INT64_MIN);
  gp_ffi_closure_free(h);

  int32_t (*add32)(int32_t, int32_t) = (int32_t(*)(int32_t, int32_t))gp_ffi_closure(add, "i32(i32,i32)", &h);
  cr_assert_eq(add32(-5, 2), -3);
  /* result out of range: zero, error set */
  cr_assert_eq(add32(INT32_MAX, 1), 0);
  expect_error(GP_ERR_VALUE, "ffi closure i32(i32,i32): result: value 2147483648 out of range");
  gp_ffi_closure_free(h);

  uint32_t (*addu32)(uint32_t) = (uint32_t(*)(uint32_t))gp_ffi_closure(add, "u32(u32)", &h);
  cr_assert_eq(addu32(0xffffffffu), 0xffffffffu);
  gp_ffi_closure_free(h);

  uint64_t (*addu64)(uint64_t, uint64_t) = (uint64_t(*)(uint64_t, uint64_t))gp_ffi_closure(add, "u64(u64,u64)", &h);
  cr_assert_eq(addu64(UINT64_MAX - 5, 2), UINT64_MAX - 3);
  gp_ffi_closure_free(h);

  GPPackedFunc *echo = pf(pf_echo);
  bool (*echob)(bool) = (bool (*)(bool))gp_ffi_closure(echo, "b(b)", &h);
  cr_assert_eq(echob(true), true);
  cr_assert_eq(echob(false), false);
  gp_ffi_closure_free(h);
  gp_release(echo);
  gp_release(add);
  cr_assert_eq(gp_error_kind(), GP_OK);
}

Test(ffi_closure, float_pointer_string_object_void) {
  GPPackedFunc *echo = pf(pf_echo);
  GPFfiClosure *h;

  float (*ef)(float) = (float (*)(float))gp_ffi_closure(echo, "f32(f32)", &h);
  cr_assert_eq(ef(2.5f), 2.5f);
  gp_ffi_closure_free(h);

  double (*ed)(double) = (double (*)(double))gp_ffi_closure(echo, "f64(f64)", &h);
  cr_assert_eq(ed(-1e300), -1e300);
  gp_ffi_closure_free(h);

  void *(*ep)(void *) = (void *(*)(void *))gp_ffi_closure(echo, "p(p)", &h);
  int x;
  cr_assert_eq(ep(&x), &x);
  cr_assert_null(ep(NULL)); /* NULL -> None -> NULL */
  gp_ffi_closure_free(h);

  const char *(*es)(const char *) = (const char *(*)(const char *))gp_ffi_closure(echo, "s(s)", &h);
  const char *lit = "literal";
  cr_assert_eq(es(lit), lit); /* a RawStr passes through */
  cr_assert_null(es(NULL));
  gp_ffi_closure_free(h);

  GPObject *(*eo)(GPObject *) = (GPObject * (*)(GPObject *)) gp_ffi_closure(echo, "o(o)", &h);
  GPString *s = gp_string_new("o", 1);
  GPObject *r = eo(&s->obj);
  cr_assert_eq(r, &s->obj);
  cr_assert_eq(s->obj.ref_count, 2u); /* the closure returned a new reference */
  gp_release(r);
  cr_assert_null(eo(NULL));
  gp_release(s);
  gp_ffi_closure_free(h);

  GPPackedFunc *ns = pf(pf_new_string);
  const char *(*mk)(int64_t) = (const char *(*)(int64_t))gp_ffi_closure(ns, "s(i64)", &h);
  const char *a = mk(5);
  cr_assert_str_eq(a, "n=5"); /* kept alive by the closure until the next call */
  cr_assert_str_eq(mk(6), "n=6");
  gp_ffi_closure_free(h); /* releases the last string */
  gp_release(ns);

  GPPackedFunc *st = pf(pf_store);
  void (*store)(void *, int64_t) = (void (*)(void *, int64_t))gp_ffi_closure(st, "v(p,i64)", &h);
  int64_t cell = 0;
  store(&cell, -9);
  cr_assert_eq(cell, -9);
  gp_ffi_closure_free(h);
  gp_release(st);
  gp_release(echo);
  cr_assert_eq(gp_error_kind(), GP_OK);
}

Test(ffi_closure, sixteen_args) {
  GPPackedFunc *sum = pf(pf_sum_f64);
  GPFfiClosure *h;
  const char *sig = "f64(i32,f64,i64,f32,i32,f64,i64,f32,i32,f64,i64,f32,i32,f64,u64,b)";
  double (*fn)(int32_t, double, int64_t, float, int32_t, double, int64_t, float, int32_t, double,
               int64_t, float, int32_t, double, uint64_t, bool) =
      (double (*)(int32_t, double, int64_t, float, int32_t, double, int64_t, float, int32_t,
                  double, int64_t, float, int32_t, double, uint64_t, bool))gp_ffi_closure(sum, sig, &h);
  cr_assert_not_null(fn, "%s", gp_error_message());
  double r = fn(1, 2.5, 3, 4.5f, 5, 6.5, 7, 8.5f, 9, 10.5, 11, 12.5f, 13, 14.5, 15, true);
  cr_assert_float_eq(r, 1 + 2.5 + 3 + 4.5 + 5 + 6.5 + 7 + 8.5 + 9 + 10.5 + 11 + 12.5 + 13 + 14.5 + 15 + 1, 1e-9);
  gp_ffi_closure_free(h);
  gp_release(sum);
}

Test(ffi_closure, errors) {
  GPPackedFunc *fail = pf(pf_fail);
  GPFfiClosure *h;
  int64_t (*f)(int64_t) = (int64_t(*)(int64_t))gp_ffi_closure(fail, "i64(i64)", &h);
  cr_assert_eq(f(3), 0);
  expect_error(GP_ERR_PASS, "pf_fail failed");
  gp_ffi_closure_free(h);

  GPObject *(*g)(void) = (GPObject * (*)(void)) gp_ffi_closure(fail, "o()", &h);
  cr_assert_null(g());
  expect_error(GP_ERR_PASS, "pf_fail failed");
  gp_ffi_closure_free(h);

  double (*d)(void) = (double (*)(void))gp_ffi_closure(fail, "f64()", &h);
  cr_assert_eq(d(), 0.0);
  expect_error(GP_ERR_PASS, "pf_fail failed");
  gp_ffi_closure_free(h);
  gp_release(fail);

  /* a result of the wrong type */
  GPPackedFunc *ns = pf(pf_new_string);
  int64_t (*k)(int64_t) = (int64_t(*)(int64_t))gp_ffi_closure(ns, "i64(i64)", &h);
  cr_assert_eq(k(1), 0);
  expect_error(GP_ERR_TYPE, "ffi closure i64(i64): result: expected i64 (int64_t), got str");
  gp_ffi_closure_free(h);

  cr_assert_null(gp_ffi_closure(ns, "i64(", &h));
  cr_assert_null(h);
  expect_error(GP_ERR_VALUE, "signature:1:5");
  cr_assert_null(gp_ffi_closure(ns, "v()", NULL));
  expect_error(GP_ERR_VALUE, "out_handle");
  gp_release(ns);
  gp_ffi_closure_free(NULL);
}

Test(ffi, round_trip) {
  /* C function -> packed -> C function pointer -> call */
  GPPackedFunc *w = gp_ffi_wrap(FN(c_all), "i64(i32,f64,p,s,o)");
  GPFfiClosure *h;
  int64_t (*fn)(int32_t, double, void *, const char *, GPObject *) =
      (int64_t(*)(int32_t, double, void *, const char *, GPObject *))gp_ffi_closure(w, "i64(i32,f64,p,s,o)", &h);
  cr_assert_not_null(fn, "%s", gp_error_message());
  int nine = 9;
  GPString *s = gp_string_new("zz", 2);
  cr_assert_eq(fn(-7, 2.5, &nine, "hello", &s->obj), c_all(-7, 2.5, &nine, "hello", &s->obj));
  cr_assert_eq(fn(1, 0, NULL, NULL, NULL), c_all(1, 0, NULL, NULL, NULL));
  cr_assert_eq(s->obj.ref_count, 1u);
  gp_release(s);
  gp_release(w); /* the closure still holds the packed function */
  cr_assert_eq(fn(2, 0.1, NULL, "ab", NULL), c_all(2, 0.1, NULL, "ab", NULL));
  gp_ffi_closure_free(h);

  /* every scalar code round-trips with its extremes */
  struct {
    void *fn;
    const char *sig;
  } cases[] = {{FN(c_sub32), "i32(i32,i32)"}, {FN(c_neg64), "i64(i64)"},
               {FN(c_inc_u32), "u32(u32)"},   {FN(c_dec_u64), "u64(u64)"},
               {FN(c_not), "b(b)"},           {FN(c_mul_f32), "f32(f32,f32)"},
               {FN(c_pick), "s(s,b)"},        {FN(c_next_ptr), "p(p)"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    GPPackedFunc *p = gp_ffi_wrap(cases[i].fn, cases[i].sig);
    cr_assert_not_null(p);
    void *code = gp_ffi_closure(p, cases[i].sig, &h);
    cr_assert_not_null(code);
    switch (i) {
    case 0: cr_assert_eq(((int32_t(*)(int32_t, int32_t))code)(INT32_MIN + 1, 1), INT32_MIN); break;
    case 1: cr_assert_eq(((int64_t(*)(int64_t))code)(-INT64_MAX), INT64_MAX); break;
    case 2: cr_assert_eq(((uint32_t(*)(uint32_t))code)(UINT32_MAX - 1), UINT32_MAX); break;
    case 3: cr_assert_eq(((uint64_t(*)(uint64_t))code)(0), UINT64_MAX); break;
    case 4: cr_assert_eq(((bool (*)(bool))code)(false), true); break;
    case 5: cr_assert_eq(((float (*)(float, float))code)(FLT_MAX, 0.5f), FLT_MAX * 0.5f); break;
    case 6: {
      const char *(*pick)(const char *, bool) = (const char *(*)(const char *, bool))code;
      cr_assert_str_eq(pick("keep", false), "keep"); /* copied into a GPString, kept alive */
      cr_assert_str_eq(pick("keep", true), "UPPER");
      break;
    }
    case 7: {
      char b[2];
      cr_assert_eq(((void *(*)(void *))code)(b), b + 1);
      break;
    }
    }
    cr_assert_eq(gp_error_kind(), GP_OK, "%s", gp_error_message());
    gp_ffi_closure_free(h);
    gp_release(p);
  }
}

Test(ffi, malformed_signatures) {
  struct {
    const char *sig;
    const char *needle;
  } bad[] = {
      {"i64(", "signature:1:5: error: expected a parameter type code or ')', got the end"},
      {"x()", "signature:1:1: error: unknown type code 'x'"},
      {"i32(i32,,)", "signature:1:9: error: expected a parameter type code, got ','"},
      {"i32(i32,)", "signature:1:9: error: expected a parameter type code, got ')'"},
      {"", "signature:1:1: error: expected a return type code, got the end"},
      {"i32", "signature:1:4: error: expected '(' after the return type"},
      {"i32 i32()", "signature:1:5: error: expected '('"},
      {"i32(i32", "signature:1:8: error: expected ',' or ')', got the end"},
      {"i32(i32 f64)", "signature:1:9: error: expected ',' or ')' after a parameter"},
      {"i32(i32)x", "signature:1:9: error: unexpected text after ')'"},
      {"v(v)", "signature:1:3: error: 'v' (void) is only valid as a return type"},
      {"i16(i32)", "signature:1:1: error: unknown type code 'i16'"},
      {"i32(i32,q64)", "signature:1:9: error: unknown type code 'q64'"},
      {"(i32)", "signature:1:1: error: expected a return type code, got '('"},
      {"v(i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32)",
       "signature:1:67: error: too many parameters (at most 16)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_assert_null(gp_ffi_wrap(FN(c_seven), bad[i].sig), "%s accepted", bad[i].sig);
    cr_assert_eq(gp_error_kind(), GP_ERR_VALUE, "%s", bad[i].sig);
    cr_assert(strstr(gp_error_message(), bad[i].needle), "%s: \"%s\" lacks \"%s\"", bad[i].sig,
              gp_error_message(), bad[i].needle);
    cr_assert(strstr(gp_error_message(), bad[i].sig), "message names the signature");
    gp_error_clear();
  }
  cr_assert_null(gp_ffi_wrap(FN(c_seven), NULL));
  expect_error(GP_ERR_VALUE, "NULL signature");
  /* 16 is fine; blanks are fine */
  GPPackedFunc *ok = gp_ffi_wrap(FN(c_seven),
                                 " v ( i32 , i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32 ) ");
  cr_assert_not_null(ok, "%s", gp_error_message());
  gp_release(ok);
}

Test(ffi, through_the_host_table) {
  const GPHostAPI *host = gp_host_api();
  cr_assert(GP_HAS_FIELD(host, GPHostAPI, ffi_closure_free));
  GPPackedFunc *f = host->ffi_wrap(FN(c_sub32), "i32(i32,i32)");
  cr_assert_not_null(f);
  void *handle = NULL;
  int32_t (*sub)(int32_t, int32_t) = (int32_t(*)(int32_t, int32_t))host->ffi_closure(f, "i32(i32,i32)", &handle);
  cr_assert_not_null(sub);
  cr_assert_not_null(handle);
  cr_assert_eq(sub(1, 3), -2);
  host->ffi_closure_free(handle);
  host->ffi_closure_free(NULL);
  gp_release(f);
  cr_assert_null(host->ffi_wrap(FN(c_sub32), "i32(i32,,)"));
  expect_error(GP_ERR_VALUE, "signature:1:9");
}
