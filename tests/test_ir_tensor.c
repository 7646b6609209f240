/* test_ir_tensor.c -- tensors that own their buffer (gp_tensor_alloc): the data is 64-byte
 * aligned and zero-filled at every size, also when the allocator hands back memory that an
 * earlier tensor wrote (calloc zeroes a reused block; fresh pages come zeroed). */
#include "test_helpers.h"

#include <stdint.h>

TestSuite(ir_tensor);

static void expect_zero_aligned(const GPTensor *t, size_t nbytes) {
  cr_assert(t, "%s", gp_error_message());
  cr_assert_not_null(t->dl.data);
  cr_expect_eq((uintptr_t)t->dl.data % 64, 0, "data at %p is not 64-byte aligned", t->dl.data);
  cr_expect_eq(t->dl.byte_offset, 0);
  cr_assert_eq(gp_tensor_nbytes(t), nbytes);
  const unsigned char *p = t->dl.data;
  size_t bad = nbytes;
  for (size_t i = 0; i < nbytes && bad == nbytes; i++)
    if (p[i]) bad = i;
  cr_expect_eq(bad, nbytes, "byte %zu of %zu is not zero", bad, nbytes);
}

Test(ir_tensor, owned_buffers_aligned_and_zero_at_every_size) {
  static const int64_t sizes[] = {0, 1, 3, 63, 64, 65, 1000, 32768, 131071, 131072, 1 << 20, (3 << 20) + 5};
  DLDataType u8 = {kDLUInt, 8, 1};
  for (int round = 0; round < 3; round++) { /* later rounds reuse the blocks the first wrote */
    GPTensor *ts[GP_ARRAY_LEN(sizes)];
    for (size_t i = 0; i < GP_ARRAY_LEN(sizes); i++) {
      ts[i] = gp_tensor_alloc(u8, 1, &sizes[i], true);
      expect_zero_aligned(ts[i], (size_t)sizes[i]);
      memset(ts[i]->dl.data, 0xa5, (size_t)sizes[i]); /* dirty it for the next round */
    }
    for (size_t i = 0; i < GP_ARRAY_LEN(sizes); i++) gp_release(ts[i]);
  }
}

Test(ir_tensor, scalar_and_float_tensors) {
  GPTensor *s = gp_tensor_alloc((DLDataType){kDLFloat, 32, 1}, 0, NULL, true);
  expect_zero_aligned(s, 4);
  gp_release(s);
  int64_t shape[3] = {7, 5, 3};
  GPTensor *t = gp_tensor_alloc((DLDataType){kDLFloat, 64, 1}, 3, shape, true);
  expect_zero_aligned(t, 7 * 5 * 3 * 8);
  gp_release(t);
}

/* Buffers from 2 MiB are mappings of their own (2 MiB-aligned, huge pages on request): zeroed,
 * aligned, writable to the last byte, and unmapped with the tensor. */
Test(ir_tensor, large_buffers_are_zeroed_aligned_mappings) {
  const int64_t shapes[][2] = {{1024, 513}, {2048, 1024}, {100, 100}};
  for (int k = 0; k < 3; k++) {
    GPTensor *t = gp_tensor_alloc(GP_DT_F32, 2, shapes[k], true);
    cr_assert_not_null(t);
    size_t n = gp_tensor_nbytes(t);
    unsigned char *p = t->dl.data;
    cr_assert_eq((uintptr_t)p % 64, 0);
    for (size_t i = 0; i < n; i += 4093) cr_assert_eq(p[i], 0);
    cr_assert_eq(p[n - 1], 0);
    memset(p, 0x5a, n);
    cr_assert_eq(p[n - 1], 0x5a);
    gp_release(t);
  }
}
