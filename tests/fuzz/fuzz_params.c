/* fuzz_params.c -- parameter files in TVM's save_param_dict format (ir/params.c): read from
 * memory; an accepted file is written back and read again, and must give the same names, types
 * and bytes. */
#include "fuzz_common.h"

static void same_or_abort(const GPParams *a, const GPParams *b) {
  if (a->n != b->n) abort();
  for (int64_t i = 0; i < a->n; i++) {
    if (strcmp(a->names[i], b->names[i]) != 0) abort();
    if (gp_tensor_type(a->tensors[i]) != gp_tensor_type(b->tensors[i])) abort();
    size_t nb = gp_tensor_nbytes(a->tensors[i]);
    const char *x = (const char *)a->tensors[i]->dl.data + a->tensors[i]->dl.byte_offset;
    const char *y = (const char *)b->tensors[i]->dl.data + b->tensors[i]->dl.byte_offset;
    if (nb && memcmp(x, y, nb) != 0) abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  gp_ops_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0; /* fmemopen needs a buffer */
  FILE *f = fmemopen((void *)data, size, "rb");
  if (!f) return 0;
  GPParams p = {0};
  int rc = gp_params_read(f, size, "fuzz.params", &p);
  fclose(f);
  if (rc != 0) {
    fz_expect_error("read");
    return 0;
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *w = open_memstream(&buf, &len);
  if (!w) abort();
  if (gp_params_write(w, "memory", p.n, (const char *const *)p.names, p.tensors) != 0) {
    fprintf(stderr, "fuzz: cannot write back an accepted file: %s\n", gp_error_message());
    abort();
  }
  fclose(w);
  FILE *r = fmemopen(buf, len, "rb");
  if (!r) abort();
  GPParams q = {0};
  if (gp_params_read(r, len, "memory", &q) != 0) {
    fprintf(stderr, "fuzz: cannot read back what was written: %s\n", gp_error_message());
    abort();
  }
  fclose(r);
  same_or_abort(&p, &q);
  gp_params_free(&q);
  gp_params_free(&p);
  free(buf);
  return 0;
}
