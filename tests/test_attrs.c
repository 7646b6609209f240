/* test_attrs.c -- attribute sets are interned (ir/attrs.c): equal sets are one object, sets that
 * differ in any key, order, kind or bit of a value are not, a set freed and asked for again is
 * made anew, and threads that make and drop the same sets concurrently never get a freed one
 * (also run under ThreadSanitizer by tests/tsan/run_tsan.sh). */
#include "test_helpers.h"

#include <math.h>
#include <pthread.h>

TestSuite(attrs);

static GPAttrs *mk(int32_t n, const char *const *k, const GPAttrValue *v) {
  GPAttrs *a = gp_attrs_new(n, k, v);
  cr_assert(a, "%s", gp_error_message());
  return a;
}

Test(attrs, equal_sets_are_one_object) {
  const char *k[] = {"axis", "scale", "name", "shape", "dtype", "keep"};
  int64_t shape[] = {1, 2, 3};
  GPAttrValue v[] = {gp_attr_int(1), gp_attr_float(0.5), gp_attr_str("x"), gp_attr_ints(3, shape),
                     gp_attr_dtype((DLDataType){kDLFloat, 32, 1}), gp_attr_bool(true)};
  GPAttrs *a = mk(6, k, v);
  char name[] = {'x', 0}; /* an equal string at another address */
  int64_t shape2[] = {1, 2, 3};
  GPAttrValue v2[] = {gp_attr_int(1), gp_attr_float(0.5), gp_attr_str(name), gp_attr_ints(3, shape2),
                      gp_attr_dtype((DLDataType){kDLFloat, 32, 1}), gp_attr_bool(true)};
  GPAttrs *b = mk(6, k, v2);
  cr_expect_eq(a, b, "equal sets are two objects");
  cr_expect_eq(a->obj.ref_count, 2u);
  gp_release(b);
  gp_release(a);
  GPAttrs *none1 = mk(0, NULL, NULL), *none2 = mk(0, NULL, NULL);
  cr_expect_eq(none1, none2);
  gp_release(none1);
  gp_release(none2);
}

Test(attrs, sets_that_differ_are_not_shared) {
  const char *k[] = {"a", "b"}, *k_swapped[] = {"b", "a"}, *k_other[] = {"a", "c"};
  GPAttrValue v[] = {gp_attr_int(1), gp_attr_int(2)};
  GPAttrs *base = mk(2, k, v);
  GPAttrs *others[8];
  int n = 0;
  others[n++] = mk(2, k_swapped, (GPAttrValue[]){gp_attr_int(2), gp_attr_int(1)}); /* order matters */
  others[n++] = mk(2, k_other, v);                                                  /* a key */
  others[n++] = mk(2, k, (GPAttrValue[]){gp_attr_int(1), gp_attr_int(3)});           /* a value */
  others[n++] = mk(2, k, (GPAttrValue[]){gp_attr_int(1), gp_attr_float(2.0)});       /* a kind */
  others[n++] = mk(2, k, (GPAttrValue[]){gp_attr_int(1), gp_attr_bool(true)});
  others[n++] = mk(1, k, v);                                                         /* the count */
  for (int i = 0; i < n; i++) cr_expect_neq(others[i], base, "set %d is shared with a different one", i);
  /* Floats compare by their bits: 0.0 and -0.0 differ, and a NaN equals itself. */
  GPAttrs *pz = mk(1, k, (GPAttrValue[]){gp_attr_float(0.0)});
  GPAttrs *nz = mk(1, k, (GPAttrValue[]){gp_attr_float(-0.0)});
  GPAttrs *nan1 = mk(1, k, (GPAttrValue[]){gp_attr_float(NAN)});
  GPAttrs *nan2 = mk(1, k, (GPAttrValue[]){gp_attr_float(NAN)});
  cr_expect_neq(pz, nz);
  cr_expect_eq(nan1, nan2);
  int64_t i3[] = {1, 2, 3}, i2[] = {1, 2};
  GPAttrs *a3 = mk(1, k, (GPAttrValue[]){gp_attr_ints(3, i3)});
  GPAttrs *a2 = mk(1, k, (GPAttrValue[]){gp_attr_ints(2, i2)});
  cr_expect_neq(a3, a2);
  GPAttrs *s1 = mk(1, k, (GPAttrValue[]){gp_attr_str("ab")});
  GPAttrs *s2 = mk(1, k, (GPAttrValue[]){gp_attr_str("abc")});
  cr_expect_neq(s1, s2);
  GPAttrs *all[] = {base, pz, nz, nan1, nan2, a3, a2, s1, s2};
  for (size_t i = 0; i < GP_ARRAY_LEN(all); i++) gp_release(all[i]);
  for (int i = 0; i < n; i++) gp_release(others[i]);
}

Test(attrs, a_freed_set_is_made_anew_and_reads_back) {
  const char *k[] = {"padding"};
  int64_t pad[] = {1, 1, 1, 1};
  for (int round = 0; round < 3; round++) {
    GPAttrs *a = mk(1, k, (GPAttrValue[]){gp_attr_ints(4, pad)});
    cr_expect_eq(a->obj.ref_count, 1u, "round %d: a set nobody holds was handed out again with %u refs", round,
                 a->obj.ref_count);
    const GPAttrValue *p = gp_attrs_get(a, "padding");
    cr_assert(p && p->kind == GP_ATTR_INTS && p->n == 4 && p->ints[3] == 1);
    gp_release(a);
  }
}

Test(attrs, op_calls_share_their_schema_filled_sets) {
  const GPOp *conv = gp_op_get("nn.conv2d");
  cr_assert(conv);
  const char *k[] = {"channels"};
  GPAttrValue v[] = {gp_attr_int(4)};
  GPAttrs *a = gp_op_attrs_new(conv, 1, k, v), *b = gp_op_attrs_new(conv, 1, k, v);
  cr_assert(a && b, "%s", gp_error_message());
  cr_expect_eq(a, b);
  cr_expect_eq(gp_attrs_int(a, "groups", 0), 1, "defaults are filled in");
  gp_release(a);
  gp_release(b);
}

/* Threads make and drop sets from a small family, so each set is often freed by one thread
 * while another asks for an equal one: a lookup must never retain a set being freed. */
enum { THREADS = 4, ITERS = 20000, FAMILY = 5 };

static void *churn(void *arg) {
  uint64_t rng = 0x2545F4914F6CDD1Dull * (uint64_t)((intptr_t)arg + 1);
  const char *k[] = {"axis", "name"};
  GPAttrs *held[4] = {0};
  for (int i = 0; i < ITERS; i++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    int64_t which = (int64_t)(rng % FAMILY);
    GPAttrs *a = gp_attrs_new(2, k, (GPAttrValue[]){gp_attr_int(which), gp_attr_str("shared")});
    if (!a || a->values[0].i != which || strcmp(a->values[1].s, "shared") != 0) return (void *)1;
    int slot = (int)((rng >> 20) % 4);
    gp_release(held[slot]);
    held[slot] = a;
  }
  for (int i = 0; i < 4; i++) gp_release(held[i]);
  return NULL;
}

Test(attrs, threads_make_and_drop_equal_sets) {
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) cr_assert_eq(pthread_create(&t[i], NULL, churn, (void *)(intptr_t)i), 0);
  int bad = 0;
  for (int i = 0; i < THREADS; i++) {
    void *r;
    pthread_join(t[i], &r);
    bad += r != NULL;
  }
  cr_assert_eq(bad, 0, "a thread got a wrong attribute set");
}
