/* test_global_funcs.c -- global functions by name (registry/global_funcs.c): register, get,
 * the override rule, removal, argument checks, release of what the registry holds (on
 * override, removal and shutdown), threads, and the host-table path (GPHostAPI.func_register /
 * func_get, as a plugin reaches them). */
#include "../ir/ir.h"
#include "../registry/registry.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void teardown(void) { gp_registry_shutdown(); }

TestSuite(global_funcs, .fini = teardown);

/* A function that returns its `self` (an int64 tag) and counts its own release. */
typedef struct Tag {
  int64_t value;
  int *deleted; /* incremented by the deleter */
} Tag;

static int tag_call(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)args, (void)nargs;
  *result = gp_any_int(((Tag *)self)->value);
  return 0;
}

static void tag_delete(void *self) {
  Tag *t = self;
  (*t->deleted)++;
  gp_free(t);
}

static GPPackedFunc *tag_fn(int64_t value, int *deleted) {
  Tag *t = gp_malloc(sizeof *t);
  t->value = value;
  t->deleted = deleted;
  GPPackedFunc *f = gp_func_new(t, tag_call, tag_delete);
  cr_assert(f);
  return f;
}

static int64_t call_tag(GPPackedFunc *f) {
  GPAny r = {0};
  cr_assert_eq(gp_func_call(f, NULL, 0, &r), 0, "%s", gp_error_message());
  cr_assert_eq(r.type_index, GP_TI_INT);
  return r.v_int64;
}

static void expect_error(int32_t kind, const char *needle) {
  cr_assert_eq(gp_error_kind(), kind, "kind %d (%s)", gp_error_kind(), gp_error_message());
  cr_assert(strstr(gp_error_message(), needle), "\"%s\" lacks \"%s\"", gp_error_message(), needle);
  gp_error_clear();
}

Test(global_funcs, register_and_get) {
  int deleted = 0;
  GPPackedFunc *f = tag_fn(7, &deleted);
  cr_assert_null(gp_func_get("test.seven"), "a free name gives NULL");
  cr_assert_eq(gp_error_kind(), GP_OK, "a free name is not an error");
  cr_assert_eq(gp_func_register("test.seven", f, 0), 0, "%s", gp_error_message());
  gp_release(f); /* the registry keeps its own reference */
  cr_assert_eq(deleted, 0);
  GPPackedFunc *g = gp_func_get("test.seven");
  cr_assert_eq(g, f);
  cr_assert_eq(call_tag(g), 7);
  gp_release(g);
  cr_assert_null(gp_func_get("test.Seven"), "names are case-sensitive");
  cr_assert_eq(gp_func_count(), 1);
}

Test(global_funcs, names_are_copied) {
  int deleted = 0;
  char name[32];
  strcpy(name, "test.copied");
  GPPackedFunc *f = tag_fn(1, &deleted);
  cr_assert_eq(gp_func_register(name, f, 0), 0);
  gp_release(f);
  strcpy(name, "test.changed");
  GPPackedFunc *g = gp_func_get("test.copied");
  cr_assert_not_null(g);
  gp_release(g);
  cr_assert_null(gp_func_get("test.changed"));
}

Test(global_funcs, taken_name_needs_override) {
  int d1 = 0, d2 = 0;
  GPPackedFunc *f1 = tag_fn(1, &d1), *f2 = tag_fn(2, &d2);
  cr_assert_eq(gp_func_register("test.f", f1, 0), 0);
  cr_assert_eq(gp_func_register("test.f", f2, 0), -1);
  expect_error(GP_ERR_VALUE, "'test.f' is already registered");
  /* the failed registration kept nothing */
  gp_release(f2);
  cr_assert_eq(d2, 1, "a refused function is not retained");
  GPPackedFunc *g = gp_func_get("test.f");
  cr_assert_eq(call_tag(g), 1);
  gp_release(g);
  /* re-registering the same function without override is refused too */
  cr_assert_eq(gp_func_register("test.f", f1, 0), -1);
  gp_error_clear();
  gp_release(f1);
  cr_assert_eq(d1, 0);
}

Test(global_funcs, override_replaces_and_releases_the_old_function) {
  int d1 = 0, d2 = 0;
  GPPackedFunc *f1 = tag_fn(1, &d1), *f2 = tag_fn(2, &d2);
  cr_assert_eq(gp_func_register("test.f", f1, 0), 0);
  gp_release(f1);
  cr_assert_eq(gp_func_register("test.f", f2, 1), 0, "%s", gp_error_message());
  gp_release(f2);
  cr_assert_eq(d1, 1, "the replaced function is released");
  cr_assert_eq(d2, 0);
  GPPackedFunc *g = gp_func_get("test.f");
  cr_assert_eq(call_tag(g), 2);
  gp_release(g);
  /* override of a free name is a plain registration */
  int d3 = 0;
  GPPackedFunc *f3 = tag_fn(3, &d3);
  cr_assert_eq(gp_func_register("test.g", f3, 1), 0);
  gp_release(f3);
  cr_assert_eq(gp_func_count(), 2);
}

Test(global_funcs, get_keeps_a_function_alive_after_removal) {
  int deleted = 0;
  GPPackedFunc *f = tag_fn(5, &deleted);
  cr_assert_eq(gp_func_register("test.f", f, 0), 0);
  gp_release(f);
  GPPackedFunc *g = gp_func_get("test.f");
  cr_assert_eq(gp_func_register("test.f", NULL, 0), 0, "removal needs no override: %s", gp_error_message());
  cr_assert_null(gp_func_get("test.f"));
  cr_assert_eq(deleted, 0, "the caller still holds it");
  cr_assert_eq(call_tag(g), 5);
  gp_release(g);
  cr_assert_eq(deleted, 1);
  cr_assert_eq(gp_func_count(), 0);
}

Test(global_funcs, remove_a_free_name_is_not_found) {
  cr_assert_eq(gp_func_register("test.none", NULL, 1), -1);
  expect_error(GP_ERR_NOT_FOUND, "'test.none'");
}

Test(global_funcs, bad_arguments) {
  int deleted = 0;
  GPPackedFunc *f = tag_fn(1, &deleted);
  cr_assert_eq(gp_func_register(NULL, f, 0), -1);
  expect_error(GP_ERR_VALUE, "non-empty");
  cr_assert_eq(gp_func_register("", f, 0), -1);
  expect_error(GP_ERR_VALUE, "non-empty");
  GPString *s = gp_string_new("x", 1);
  cr_assert_eq(gp_func_register("test.s", (GPPackedFunc *)s, 0), -1);
  expect_error(GP_ERR_TYPE, "expected a function");
  gp_release(s);
  cr_assert_null(gp_func_get(NULL));
  gp_release(f);
  cr_assert_eq(deleted, 1);
  cr_assert_eq(gp_func_count(), 0);
}

Test(global_funcs, shutdown_releases_everything) {
  int deleted = 0;
  for (int i = 0; i < 40; i++) { /* enough to grow the table */
    char name[32];
    snprintf(name, sizeof name, "test.f%d", i);
    GPPackedFunc *f = tag_fn(i, &deleted);
    cr_assert_eq(gp_func_register(name, f, 0), 0);
    gp_release(f);
  }
  cr_assert_eq(gp_func_count(), 40);
  GPPackedFunc *g = gp_func_get("test.f33");
  cr_assert_eq(call_tag(g), 33);
  gp_release(g);
  gp_registry_shutdown();
  cr_assert_eq(deleted, 40);
  cr_assert_eq(gp_func_count(), 0);
  cr_assert_null(gp_func_get("test.f1"));
}

/* A deleter that calls back into the registry (it must not deadlock). */
static int reentrant_deleted;
static void reentrant_delete(void *self) {
  (void)self;
  GPPackedFunc *g = gp_func_get("test.other");
  gp_release(g);
  reentrant_deleted++;
}

Test(global_funcs, deleters_may_call_back_into_the_registry) {
  GPPackedFunc *f = gp_func_new(NULL, tag_call, reentrant_delete);
  cr_assert_eq(gp_func_register("test.r", f, 0), 0);
  gp_release(f);
  cr_assert_eq(gp_func_register("test.r", NULL, 0), 0);
  cr_assert_eq(reentrant_deleted, 1);
}

/* ---- the host table */

static int add_one(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs != 1 || args[0].type_index != GP_TI_INT) {
    gp_error_set(GP_ERR_TYPE, "add_one wants one int");
    return -1;
  }
  *result = gp_any_int(args[0].v_int64 + 1);
  return 0;
}

static int64_t c_twice(int64_t x) { return 2 * x; }

Test(global_funcs, host_table_path) {
  const GPHostAPI *h = graphpass_host_api();
  cr_assert(GP_HAS_FIELD(h, GPHostAPI, func_get));
  cr_assert_not_null(h->func_register);
  cr_assert_not_null(h->func_get);
  GPPackedFunc *f = h->func_new(NULL, add_one, NULL);
  cr_assert_eq(h->func_register("test.add_one", f, 0), 0, "%s", h->error_message());
  gp_release(f);
  GPPackedFunc *g = h->func_get("test.add_one");
  cr_assert_not_null(g);
  GPAny arg = gp_any_int(41), res = {0};
  cr_assert_eq(g->call(g->self, &arg, 1, &res), 0);
  cr_assert_eq(res.v_int64, 42);
  gp_release(g);
  /* a typed C function through the libffi bridge, registered by name */
  GPPackedFunc *w = h->ffi_wrap((void *)(uintptr_t)c_twice, "i64(i64)");
  cr_assert(w, "%s", h->error_message());
  cr_assert_eq(h->func_register("test.twice", w, 0), 0);
  gp_release(w);
  GPPackedFunc *t = h->func_get("test.twice");
  arg = gp_any_int(21);
  cr_assert_eq(t->call(t->self, &arg, 1, &res), 0);
  cr_assert_eq(res.v_int64, 42);
  gp_release(t);
  /* errors through the table */
  f = h->func_new(NULL, add_one, NULL);
  cr_assert_eq(h->func_register("test.add_one", f, 0), -1);
  cr_assert_eq(h->error_kind(), GP_ERR_VALUE);
  h->error_clear();
  gp_release(f);
  cr_assert_null(h->func_get("test.missing"));
  cr_assert_eq(h->error_kind(), GP_OK);
  cr_assert_eq(h->func_register("test.add_one", NULL, 0), 0);
  cr_assert_null(h->func_get("test.add_one"));
}

/* ---- threads */

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int i = 0; i < 2000; i++) {
    char name[32];
    snprintf(name, sizeof name, "test.t%d", (id + i) % 8);
    GPPackedFunc *f = gp_func_new(NULL, add_one, NULL);
    if (gp_func_register(name, f, 1) != 0) return (void *)1;
    gp_release(f);
    GPPackedFunc *g = gp_func_get(name);
    if (g) {
      GPAny a = gp_any_int(i), r = {0};
      if (g->call(g->self, &a, 1, &r) != 0 || r.v_int64 != i + 1) return (void *)1;
      gp_release(g);
    }
    if (i % 3 == 0 && gp_func_register(name, NULL, 0) != 0) gp_error_clear(); /* may race: fine */
  }
  return NULL;
}

Test(global_funcs, concurrent_register_get_remove) {
  pthread_t th[6];
  for (int i = 0; i < 6; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < 6; i++) {
    void *r;
    pthread_join(th[i], &r);
    cr_assert_null(r, "thread %d failed: %s", i, gp_error_message());
  }
  cr_assert(gp_func_count() <= 8);
}
