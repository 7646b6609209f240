/* test_bad_input.c -- the bad-input catalog (issue #18): one table of bad inputs of every kind
 * the library reads, each with the error kind and message it must give (never a crash or a
 * leak).  Kinds: ONNX model bytes (truncated, bit-flipped, raw_data / typed data / dims that
 * disagree, external data missing, shorter than declared or outside the model's directory),
 * .npy files with bad headers, DLPack tensors given through GPHostAPI.tensor_from_dlpack
 * (negative dims, overflowing strides, other devices: the deleter runs exactly once), pipeline
 * and config strings, and plugins whose entry table is wrong (tests/plugins/bad_entry_plugin.c).
 *
 * Covered elsewhere and not repeated here: plugin files that are missing, not a shared object,
 * without the entry symbol (tests/test_plugin.c missing_file_and_not_a_plugin), built for ABI
 * major 2 (major_2_refused, load_dir_sorted), whose initialize fails after registering things
 * (failed_initialize_unregisters, failed_initialize_removes_functions_attrs_kernels_sets); passes
 * that mutate their input or return ill-formed modules (tests/test_pass_check.c); the ONNX
 * reproducers and .npy allocation reproducers (tests/test_repro.c); every truncation of a small
 * model (tests/test_onnx.c malformed_and_truncated_files). */
#include "test_helpers.h"
#include "eval/eval.h"
#include "frontend/onnx/onnx.h"
#include "frontend/onnx/onnx.pb-c.h"

#include <unistd.h>

/* ------------------------------------------------------------------------------------------ */
/* Inputs                                                                                      */

enum { K_ONNX, K_NPY, K_DLPACK, K_PIPELINE, K_CONFIG, K_PLUGIN };

/* ONNX model variants: a Relu of x (1, 3) plus y = x + w with the initializer w (1, 3) float */
enum {
  OX_TRUNCATED,     /* the model cut 7 bytes short */
  OX_BITFLIP_TAG,   /* the graph field's tag byte has a bit flipped */
  OX_BITFLIP_LEN,   /* the graph field's length byte has its top bit set */
  OX_RAW_SHORT,     /* w: raw_data of 8 bytes for 3 floats */
  OX_RAW_LONG,      /* w: raw_data of 16 bytes */
  OX_TYPED_COUNT,   /* w: float_data with 2 values */
  OX_NEG_DIM,       /* w: dims (1, -3) */
  OX_HUGE_DIMS,     /* w: dims (2^40, 2^40) */
  OX_NO_DTYPE,      /* w: no data_type */
  OX_EXT_MISSING,   /* w: external data file that does not exist */
  OX_EXT_SHORT,     /* w: external data file of 8 bytes */
  OX_EXT_OFFSET,    /* w: external data offset past the end of the file */
  OX_EXT_LENGTH,    /* w: external data 'length' 8 that disagrees with the dims */
  OX_EXT_OUTSIDE,   /* w: external data location "../w.bin" */
  OX_EXT_BADNUM,    /* w: external data offset "-4" */
  OX_UNPOOL_STRIDE, /* MaxUnpool of x (1, 1, 3) with strides [2^62]: the output extent overflows */
};

typedef struct Case {
  int kind;
  const char *what;
  int variant;      /* ONNX variant, DLPack variant, plugin mode index */
  const char *text; /* npy header dict / pipeline / config key=value / GP_BAD_ENTRY */
  int32_t err;      /* expected error kind */
  const char *msg;  /* expected in the message */
} Case;

/* DLPack variants */
enum { DL_NEG_DIM, DL_STRIDE_OVERFLOW, DL_NEG_STRIDE, DL_CUDA, DL_NULL_DATA, DL_RANK, DL_DTYPE, DL_HUGE };

static const Case k_cases[] = {
    /* ONNX */
    {K_ONNX, "truncated model", OX_TRUNCATED, NULL, GP_ERR_PARSE, "bad.onnx: not an ONNX model"},
    {K_ONNX, "bit-flipped field tag", OX_BITFLIP_TAG, NULL, GP_ERR_PARSE, "bad.onnx:"},
    {K_ONNX, "bit-flipped length", OX_BITFLIP_LEN, NULL, GP_ERR_PARSE, "bad.onnx: not an ONNX model"},
    {K_ONNX, "raw_data shorter than dims", OX_RAW_SHORT, NULL, GP_ERR_VALUE, "tensor 'w': raw_data has 8 bytes, dims and dtype need 12"},
    {K_ONNX, "raw_data longer than dims", OX_RAW_LONG, NULL, GP_ERR_VALUE, "tensor 'w': raw_data has 16 bytes, dims and dtype need 12"},
    {K_ONNX, "float_data count", OX_TYPED_COUNT, NULL, GP_ERR_VALUE, "tensor 'w': float_data has 2 values, dims need 3"},
    {K_ONNX, "negative dim", OX_NEG_DIM, NULL, GP_ERR_VALUE, "tensor 'w': dimension 1 is negative (-3)"},
    {K_ONNX, "dims product overflow", OX_HUGE_DIMS, NULL, GP_ERR_VALUE, "tensor 'w': 2 dims of which the product is too large"},
    {K_ONNX, "no data_type", OX_NO_DTYPE, NULL, GP_ERR_VALUE, "tensor 'w': no data_type"},
    {K_ONNX, "external data missing", OX_EXT_MISSING, NULL, GP_ERR_IO, "tensor 'w': cannot open external data"},
    {K_ONNX, "external data shorter than declared", OX_EXT_SHORT, NULL, GP_ERR_VALUE, "w.bin has 8 bytes, the tensor needs bytes 0 to 12"},
    {K_ONNX, "external data offset past the end", OX_EXT_OFFSET, NULL, GP_ERR_VALUE, "w.bin has 12 bytes, the tensor needs bytes 100 to 112"},
    {K_ONNX, "external data length disagrees", OX_EXT_LENGTH, NULL, GP_ERR_VALUE, "tensor 'w': external data length 8 but dims need 12 bytes"},
    {K_ONNX, "external data outside the directory", OX_EXT_OUTSIDE, NULL, GP_ERR_VALUE, "must be a relative path inside the model's directory"},
    {K_ONNX, "external data offset not a number", OX_EXT_BADNUM, NULL, GP_ERR_VALUE, "external_data offset '-4' is not a non-negative integer"},
    /* .npy: the header dictionary (data: 12 bytes) */
    {K_NPY, "no descr", 0, "{'fortran_order': False, 'shape': (3,), }", GP_ERR_PARSE, "bad .npy header: no 'descr'"},
    {K_NPY, "unknown key", 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", GP_ERR_PARSE, "bad .npy header: unknown key 'x'"},
    {K_NPY, "negative dim", 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", GP_ERR_PARSE, "bad .npy header: bad dimension in 'shape'"},
    {K_NPY, "dim too large", 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", GP_ERR_PARSE, "bad .npy header: dimension too large"},
    {K_NPY, "shape overflow", 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", GP_ERR_PARSE, "shape (4294967296, 4294967296) has too many elements"},
    {K_NPY, "shape larger than the data", 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }", GP_ERR_PARSE, "truncated .npy data: 12 bytes, expected 4000000000"},
    {K_NPY, "data longer than the shape", 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", GP_ERR_PARSE, "4 bytes after the .npy data (expected 8)"},
    {K_NPY, "fortran_order not a bool", 0, "{'descr': '<f4', 'fortran_order': 1, 'shape': (3,), }", GP_ERR_PARSE, "'fortran_order' is not True or False"},
    {K_NPY, "structured dtype", 0, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", GP_ERR_UNSUPPORTED, "structured dtypes are not supported"},
    {K_NPY, "big-endian", 0, "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", GP_ERR_UNSUPPORTED, "big-endian dtype '>f4' is not supported"},
    {K_NPY, "unclosed dict", 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", GP_ERR_PARSE, "bad .npy header: expected ',' or '}'"},
    {K_NPY, "too many dims", 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,3), }", GP_ERR_PARSE, "too many dimensions"},
    /* DLPack through GPHostAPI.tensor_from_dlpack */
    {K_DLPACK, "negative dim", DL_NEG_DIM, NULL, GP_ERR_VALUE, "DLPack tensor: dimension 1 is negative (-2)"},
    {K_DLPACK, "strides overflowing the address space", DL_STRIDE_OVERFLOW, NULL, GP_ERR_VALUE, "DLPack tensor: strides (4611686018427387904, 1) over shape (3, 2) overflow the address space"},
    {K_DLPACK, "negative stride", DL_NEG_STRIDE, NULL, GP_ERR_UNSUPPORTED, "DLPack tensor: negative stride -1 on axis 0"},
    {K_DLPACK, "CUDA device", DL_CUDA, NULL, GP_ERR_UNSUPPORTED, "DLPack tensor: only CPU tensors are supported (device type 2"},
    {K_DLPACK, "NULL data", DL_NULL_DATA, NULL, GP_ERR_VALUE, "DLPack tensor: data is NULL for 6 elements"},
    {K_DLPACK, "rank 65", DL_RANK, NULL, GP_ERR_VALUE, "DLPack tensor: rank 65 is out of range (0 to 64)"},
    {K_DLPACK, "complex dtype", DL_DTYPE, NULL, GP_ERR_UNSUPPORTED, "DLPack tensor: unsupported dtype"},
    {K_DLPACK, "2^60 elements", DL_HUGE, NULL, GP_ERR_VALUE, "DLPack tensor: shape (1073741824, 1073741824) has more than 2^48 elements"},
    /* pipeline strings */
    {K_PIPELINE, "unknown pass", 0, "InferType,NoSuchPass", GP_ERR_NOT_FOUND, "NoSuchPass"},
    {K_PIPELINE, "empty item", 0, "InferType,,FuseOps", GP_ERR_PARSE, "pipeline:1:11: error:"},
    {K_PIPELINE, "unclosed config", 0, "FuseOps{max_depth=3", GP_ERR_PARSE, "pipeline:1:"},
    {K_PIPELINE, "config without value", 0, "FuseOps{max_depth}", GP_ERR_PARSE, "pipeline:1:"},
    {K_PIPELINE, "unknown config key", 0, "FuseOps{nope=1}", GP_ERR_NOT_FOUND, "nope"},
    {K_PIPELINE, "config value of the wrong type", 0, "FuseOps{max_depth=deep}", GP_ERR_VALUE, "max_depth"},
    {K_PIPELINE, "trailing comma", 0, "InferType,", GP_ERR_PARSE, "pipeline:1:"},
    /* config strings (--config key=value) */
    {K_CONFIG, "unknown key", 0, "Nope.key=1", GP_ERR_NOT_FOUND, "Nope.key"},
    {K_CONFIG, "int key with text", 0, "FuseOps.max_depth=deep", GP_ERR_VALUE, "FuseOps.max_depth"},
    {K_CONFIG, "int overflow", 0, "FuseOps.max_depth=99999999999999999999999", GP_ERR_VALUE, "FuseOps.max_depth"},
    {K_CONFIG, "bool key with text", 0, "DeadCodeElimination.inline_once=maybe", GP_ERR_VALUE, "bool"},
    /* plugins: GP_BAD_ENTRY modes of tests/plugins/bad_entry_plugin.c */
    {K_PLUGIN, "entry returns NULL", 0, "null", GP_ERR_VALUE, "graphpass_plugin_entry() returned NULL"},
    {K_PLUGIN, "table too small for a version", 0, "tiny", GP_ERR_VERSION, "its table is 4 bytes, too small to hold a version"},
    {K_PLUGIN, "table ends before finalize", 0, "short", GP_ERR_VERSION, "smaller than the"},
    {K_PLUGIN, "ABI 0.9", 0, "old", GP_ERR_VERSION, "was built for graphpass ABI 0.9"},
    {K_PLUGIN, "no name", 0, "noname", GP_ERR_VALUE, "its table has no name"},
    {K_PLUGIN, "reserved name", 0, "host", GP_ERR_VALUE, "the name 'host' is reserved"},
    {K_PLUGIN, "no initialize", 0, "noinit", GP_ERR_VALUE, "its table has no initialize function"},
    {K_PLUGIN, "initialize fails", 0, "fail", GP_ERR_VALUE, "initialize failed: bad_entry_plugin: refusing to start"},
    {K_ONNX, "MaxUnpool output extent overflow", OX_UNPOOL_STRIDE, NULL, GP_ERR_UNSUPPORTED,
     "(MaxUnpool, opset 13): the output extent of spatial axis 0 overflows (input 3, stride 4611686018427387904"},
    {K_PLUGIN, "initialize fails silently", 0, "silent", GP_ERR_VALUE, "initialize failed (returned -1 without an error)"},
    {K_PLUGIN, "pass without a function", 0, "badpass", GP_ERR_VALUE, "BadEntryNoFunc"},
};

/* ------------------------------------------------------------------------------------------ */
/* ONNX models (protobuf-c; every allocation in one arena)                                     */

static GPVec arena;
static void *A(size_t n) {
  void *p = gp_calloc(1, n);
  gp_vec_push(&arena, p);
  return p;
}

/* name: a tensor of ONNX dtype elem and shape dims[0..n) */
static Gponnx__ValueInfoProto *value_info_of(const char *name, int32_t elem, int n, const int64_t *dims) {
  Gponnx__TensorShapeProto *sh = A(sizeof *sh);
  gponnx__tensor_shape_proto__init(sh);
  sh->n_dim = (size_t)n;
  sh->dim = A((size_t)n * sizeof(void *));
  for (int i = 0; i < n; i++) {
    Gponnx__TensorShapeProto__Dimension *d = A(sizeof *d);
    gponnx__tensor_shape_proto__dimension__init(d);
    d->value_case = GPONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d->dim_value = dims[i];
    sh->dim[i] = d;
  }
  Gponnx__TypeProto__Tensor *tt = A(sizeof *tt);
  gponnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = elem;
  tt->shape = sh;
  Gponnx__TypeProto *tp = A(sizeof *tp);
  gponnx__type_proto__init(tp);
  tp->value_case = GPONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  Gponnx__ValueInfoProto *v = A(sizeof *v);
  gponnx__value_info_proto__init(v);
  v->name = (char *)name;
  v->type = tp;
  return v;
}

static Gponnx__ValueInfoProto *value_info(const char *name) {
  static const int64_t d13[2] = {1, 3};
  return value_info_of(name, 1, 2, d13);
}

/* An INTS attribute. */
static Gponnx__AttributeProto *ints_attr(const char *name, int n, int64_t *v) {
  Gponnx__AttributeProto *a = A(sizeof *a);
  gponnx__attribute_proto__init(a);
  a->name = (char *)name;
  a->has_type = 1;
  a->type = GPONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  a->n_ints = (size_t)n;
  a->ints = v;
  return a;
}

static Gponnx__NodeProto *node2(const char *op, const char *a, const char *b, const char *out) {
  Gponnx__NodeProto *n = A(sizeof *n);
  gponnx__node_proto__init(n);
  n->op_type = (char *)op;
  n->n_input = b ? 2 : 1;
  n->input = A(2 * sizeof(char *));
  n->input[0] = (char *)a;
  if (b) n->input[1] = (char *)b;
  n->n_output = 1;
  n->output = A(sizeof(char *));
  n->output[0] = (char *)out;
  return n;
}

static void ext(Gponnx__TensorProto *w, int n, const char *const kv[][2]) {
  w->has_raw_data = 0;
  w->has_data_location = 1;
  w->data_location = GPONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  w->n_external_data = (size_t)n;
  w->external_data = A((size_t)n * sizeof(void *));
  for (int i = 0; i < n; i++) {
    Gponnx__StringStringEntryProto *e = A(sizeof *e);
    gponnx__string_string_entry_proto__init(e);
    e->key = (char *)kv[i][0];
    e->value = (char *)kv[i][1];
    w->external_data[i] = e;
  }
}

/* The packed model of `variant` (gp_free it). */
static uint8_t *onnx_model(int variant, size_t *len) {
  static float wv[4] = {1, 2, 3, 4};
  static int64_t dims[2] = {1, 3}, neg[2] = {1, -3}, huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
  Gponnx__TensorProto *w = A(sizeof *w);
  gponnx__tensor_proto__init(w);
  w->name = "w";
  w->has_data_type = 1;
  w->data_type = 1;
  w->n_dims = 2;
  w->dims = variant == OX_NEG_DIM ? neg : variant == OX_HUGE_DIMS ? huge : dims;
  w->has_raw_data = 1;
  w->raw_data.data = (uint8_t *)wv;
  w->raw_data.len = variant == OX_RAW_SHORT ? 8 : variant == OX_RAW_LONG ? 16 : 12;
  if (variant == OX_NO_DTYPE) w->has_data_type = 0;
  if (variant == OX_TYPED_COUNT) {
    w->has_raw_data = 0;
    w->n_float_data = 2;
    w->float_data = wv;
  }
  static const char *const missing[][2] = {{"location", "nosuch.bin"}};
  static const char *const plain[][2] = {{"location", "w.bin"}};
  static const char *const offset[][2] = {{"location", "w.bin"}, {"offset", "100"}};
  static const char *const length[][2] = {{"location", "w.bin"}, {"length", "8"}};
  static const char *const outside[][2] = {{"location", "../w.bin"}};
  static const char *const badnum[][2] = {{"location", "w.bin"}, {"offset", "-4"}};
  switch (variant) {
  case OX_EXT_MISSING: ext(w, 1, missing); break;
  case OX_EXT_SHORT: ext(w, 1, plain); break;
  case OX_EXT_OFFSET: ext(w, 2, offset); break;
  case OX_EXT_LENGTH: ext(w, 2, length); break;
  case OX_EXT_OUTSIDE: ext(w, 1, outside); break;
  case OX_EXT_BADNUM: ext(w, 2, badnum); break;
  default: break;
  }
  Gponnx__GraphProto *g = A(sizeof *g);
  gponnx__graph_proto__init(g);
  g->name = "g";
  g->n_node = 2;
  g->node = A(2 * sizeof(void *));
  g->node[0] = node2("Relu", "x", NULL, "r");
  g->node[1] = node2("Add", "r", "w", "y");
  g->n_input = 1;
  g->input = A(2 * sizeof(void *));
  g->input[0] = value_info("x");
  if (variant == OX_UNPOOL_STRIDE) {
    static int64_t d113[3] = {1, 1, 3}, kernel[1] = {2}, stride[1] = {(int64_t)1 << 62};
    g->n_node = 1;
    g->node[0] = node2("MaxUnpool", "x", "i", "y");
    g->node[0]->n_attribute = 2;
    g->node[0]->attribute = A(2 * sizeof(void *));
    g->node[0]->attribute[0] = ints_attr("kernel_shape", 1, kernel);
    g->node[0]->attribute[1] = ints_attr("strides", 1, stride);
    g->n_input = 2;
    g->input[0] = value_info_of("x", 1, 3, d113);
    g->input[1] = value_info_of("i", 7, 3, d113);
  }
  g->n_output = 1;
  g->output = A(sizeof(void *));
  g->output[0] = value_info("y");
  g->n_initializer = 1;
  g->initializer = A(sizeof(void *));
  g->initializer[0] = w;
  Gponnx__OperatorSetIdProto *os = A(sizeof *os);
  gponnx__operator_set_id_proto__init(os);
  os->domain = "";
  os->has_version = 1;
  os->version = 13;
  Gponnx__ModelProto *m = A(sizeof *m);
  gponnx__model_proto__init(m);
  m->has_ir_version = 1;
  m->ir_version = 8;
  m->graph = g;
  m->n_opset_import = 1;
  m->opset_import = A(sizeof(void *));
  m->opset_import[0] = os;
  *len = gponnx__model_proto__get_packed_size(m);
  uint8_t *buf = gp_malloc(*len);
  gponnx__model_proto__pack(m, buf);
  return buf;
}

static GPModule *run_onnx(const Case *c, const char *dir) {
  size_t len;
  uint8_t *buf = onnx_model(c->variant, &len);
  if (c->variant == OX_TRUNCATED) len -= 7;
  /* the graph is field 7 of ModelProto (tag 0x3a), after ir_version (2 bytes) and opset_import */
  size_t gpos = 0;
  while (gpos < len && buf[gpos] != 0x3a) gpos++;
  cr_assert(gpos + 1 < len);
  if (c->variant == OX_BITFLIP_TAG) buf[gpos] ^= 0x04;
  if (c->variant == OX_BITFLIP_LEN) buf[gpos + 1] |= 0x80;
  GPBuf path = {0}, bin = {0};
  gp_buf_printf(&path, "%s/bad.onnx", dir);
  gp_buf_printf(&bin, "%s/w.bin", dir);
  FILE *f = fopen(bin.data, "wb");
  float wv[3] = {1, 2, 3};
  fwrite(wv, 4, c->variant == OX_EXT_SHORT ? 2 : 3, f);
  fclose(f);
  GPModule *m = gp_onnx_import(buf, len, path.data, NULL);
  gp_free(buf);
  gp_buf_free(&path);
  gp_buf_free(&bin);
  for (size_t i = 0; i < arena.len; i++) gp_free(arena.items[i]);
  gp_vec_free(&arena);
  return m;
}

/* ------------------------------------------------------------------------------------------ */
/* .npy, DLPack                                                                                */

static GPTensor *run_npy(const Case *c) {
  GPBuf b = {0};
  size_t hl = strlen(c->text) + 1, pad = (64 - (10 + hl) % 64) % 64;
  hl += pad;
  gp_buf_put(&b, "\x93NUMPY\x01\x00", 8);
  gp_buf_putc(&b, (char)(hl & 0xff));
  gp_buf_putc(&b, (char)(hl >> 8));
  gp_buf_puts(&b, c->text);
  for (size_t i = 0; i < pad; i++) gp_buf_putc(&b, ' ');
  gp_buf_putc(&b, '\n');
  float data[3] = {1, 2, 3};
  gp_buf_put(&b, (const char *)data, sizeof data);
  GPTensor *t = gp_npy_parse(b.data, b.len, "bad.npy");
  gp_buf_free(&b);
  return t;
}

static int deleted;
static void count_deleter(DLManagedTensor *m) {
  deleted++;
  free(m);
}

static GPTensor *run_dlpack(const Case *c) {
  static float data[6];
  static int64_t shape[2] = {3, 2}, strides[2] = {2, 1}, big[65];
  DLManagedTensor *m = calloc(1, sizeof *m);
  m->deleter = count_deleter;
  DLTensor *d = &m->dl_tensor;
  d->data = data;
  d->device = (DLDevice){kDLCPU, 0};
  d->ndim = 2;
  d->dtype = (DLDataType){kDLFloat, 32, 1};
  d->shape = shape;
  shape[0] = 3, shape[1] = 2, strides[0] = 2, strides[1] = 1;
  switch (c->variant) {
  case DL_NEG_DIM: shape[1] = -2; break;
  case DL_STRIDE_OVERFLOW: strides[0] = (int64_t)1 << 62, d->strides = strides; break;
  case DL_NEG_STRIDE: strides[0] = -1, d->strides = strides; break;
  case DL_CUDA: d->device = (DLDevice){kDLCUDA, 0}; break;
  case DL_NULL_DATA: d->data = NULL; break;
  case DL_RANK:
    for (int i = 0; i < 65; i++) big[i] = 1;
    d->ndim = 65, d->shape = big;
    break;
  case DL_DTYPE: d->dtype = (DLDataType){kDLComplex, 64, 1}; break;
  case DL_HUGE: shape[0] = shape[1] = (int64_t)1 << 30; break;
  }
  deleted = 0;
  GPTensor *t = gp_host_api()->tensor_from_dlpack(m);
  cr_assert_eq(deleted, t ? 0 : 1, "%s: the deleter ran %d times", c->what, deleted);
  return t;
}

/* ------------------------------------------------------------------------------------------ */
/* The catalog                                                                                 */

static void check_error(const Case *c, bool failed) {
  cr_assert(failed, "%s: %s was accepted", c->kind == K_ONNX ? "onnx" : "input", c->what);
  const char *m = gp_error_message();
  cr_assert(m && strstr(m, c->msg), "%s: message '%s' lacks '%s'", c->what, m ? m : "", c->msg);
  cr_assert_eq(gp_error_kind(), c->err, "%s: kind %d, want %d (%s)", c->what, (int)gp_error_kind(), (int)c->err, m);
  gp_error_clear();
}

static void run_case(const Case *c, const char *dir) {
  switch (c->kind) {
  case K_ONNX: {
    GPModule *m = run_onnx(c, dir);
    check_error(c, m == NULL);
    break;
  }
  case K_NPY: {
    GPTensor *t = run_npy(c);
    check_error(c, t == NULL);
    break;
  }
  case K_DLPACK: {
    GPTensor *t = run_dlpack(c);
    check_error(c, t == NULL);
    break;
  }
  case K_PIPELINE: {
    static const char text[] = "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(2), float32]) { negative(%x) }\n";
    GPModule *m = gp_parse(text, sizeof text - 1, "m");
    cr_assert(m, "%s", gp_error_message());
    GPModule *out = gp_run_pipeline(m, c->text, NULL);
    check_error(c, out == NULL);
    gp_release(m);
    break;
  }
  case K_CONFIG: {
    GPPassContext *ctx = gp_ctx_new();
    char *kv = gp_strdup(c->text), *eq = strchr(kv, '=');
    *eq = 0;
    check_error(c, gp_ctx_set_config(ctx, kv, eq + 1) != 0);
    gp_free(kv);
    gp_ctx_free(ctx);
    break;
  }
  case K_PLUGIN: {
    char *p = th_path("tests/plugins/libbad_entry_plugin.so");
    setenv("GP_BAD_ENTRY", c->text, 1);
    int rc = gp_plugin_load(p);
    unsetenv("GP_BAD_ENTRY");
    gp_free(p);
    check_error(c, rc != 0);
    GPPluginInfo *list;
    cr_assert_eq(gp_plugin_list(&list), 1u, "%s: a refused plugin stayed loaded", c->what); /* the std plugin */
    gp_free(list);
    break;
  }
  }
}

Test(bad_input, catalog) {
  gp_ops_init();
  th_load_std();
  char dir[] = "/tmp/gp_bad_input_XXXXXX";
  cr_assert(mkdtemp(dir));
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) run_case(&k_cases[i], dir);
  GPBuf rm = {0};
  gp_buf_printf(&rm, "rm -rf '%s'", dir);
  cr_assert_eq(system(rm.data), 0);
  gp_buf_free(&rm);
  /* the valid plugin of the same file loads (the catalog's refusals are about the table) */
  char *p = th_path("tests/plugins/libbad_entry_plugin.so");
  cr_assert_eq(gp_plugin_load(p), 0, "%s", gp_error_message());
  gp_free(p);
}
