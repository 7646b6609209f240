/* convert_layout.c -- ConvertLayout (opt-level 3, requires InferType and CanonicalizeOps), TVM
 * v0.12's convert_layout.cc on the layout rewriter of layout.c.
 *
 * Config `ConvertLayout.desired_layouts`: "op=data_layout[:kernel_layout],op2=..." (TVM's
 * {"nn.conv2d": ["NCHW", "default"]}); quote it inside a pipeline:
 * ConvertLayout{desired_layouts="nn.conv2d=NCHW:default,nn.max_pool2d=NCHW"}.  The ops with a
 * conversion (TVM's FTVMConvertOpLayout, python/tvm/relay/op/nn/_nn.py and image/_image.py):
 *  - nn.conv2d: data_layout = the first layout; kernel_layout = the second, or for "default"
 *    (or none): NCHW -> OIHW, NHWC -> HWIO (HWOI when depthwise: channels == groups on both
 *    sides), HWNC -> HWOI;
 *  - nn.conv2d_transpose: default kernel NCHW -> IOHW, NHWC -> HWIO;
 *  - nn.conv3d: default kernel NCDHW -> OIDHW, NDHWC -> DHWIO;
 *  - nn.max_pool2d, nn.avg_pool2d, nn.global_max_pool2d, nn.global_avg_pool2d: layout and
 *    out_layout = the one layout; image.resize2d: layout.
 * Plain layouts only (blocked layouts such as NCHW4c, which TVM turns into
 * contrib_conv2d_nchwc, are refused).  Every other op follows its producers through its layout
 * relation (layout.c), and layout_transforms appear only where a consumer needs another layout
 * than its producer gives: at the function's inputs, weights and outputs and around ops
 * without a relation. */
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASS_NAME "ConvertLayout"
#define KEY PASS_NAME ".desired_layouts"
#define MAX_WANT 16

typedef enum { C_CONV2D, C_CONV2D_T, C_CONV3D, C_POOL, C_RESIZE } ConvKind;

static const struct {
  const char *name;
  ConvKind kind;
  int32_t nlay;      /* layouts it takes: 2 (data, kernel) or 1 */
  const char *axes;  /* the axes of the data layout */
  const char *kaxes; /* the axes of the kernel layout */
} k_convertible[] = {
    {"nn.conv2d", C_CONV2D, 2, "NCHW", "OIHW"},
    {"nn.conv2d_transpose", C_CONV2D_T, 2, "NCHW", "OIHW"},
    {"nn.conv3d", C_CONV3D, 2, "NCDHW", "OIDHW"},
    {"nn.max_pool2d", C_POOL, 1, "NCHW", NULL},
    {"nn.avg_pool2d", C_POOL, 1, "NCHW", NULL},
    {"nn.global_max_pool2d", C_POOL, 1, "NCHW", NULL},
    {"nn.global_avg_pool2d", C_POOL, 1, "NCHW", NULL},
    {"image.resize2d", C_RESIZE, 1, "NCHW", NULL},
};
#define N_CONVERTIBLE ((int)(sizeof k_convertible / sizeof k_convertible[0]))

typedef struct Want {
  const GPOp *op;
  int32_t conv; /* index into k_convertible */
  Lay data, kernel; /* kernel.n < 0: default */
} Want;

typedef struct Conv {
  Want want[MAX_WANT];
  int32_t n;
  LayStats stats;
  int64_t kept_other_axes; /* calls whose layout names other axes than the desired one */
} Conv;

static bool same_axes(const Lay *l, const char *axes) {
  if (l->n != (int32_t)strlen(axes)) return false;
  for (const char *p = axes; *p; p++)
    if (!memchr(l->a, *p, (size_t)l->n)) return false;
  return true;
}

static int bad(const char *part, const char *fmt, const char *a, const char *b) {
  char why[256];
  snprintf(why, sizeof why, fmt, a, b);
  H->error_set(GP_ERR_VALUE, "config " KEY ": \"%s\": %s", part, why);
  return -1;
}

/* Parse and check the config value into c. */
static int parse_desired(const char *text, Conv *c) {
  c->n = 0;
  const char *p = text;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char part[256];
    if (len >= sizeof part) len = sizeof part - 1;
    memcpy(part, p, len);
    part[len] = 0;
    p = end ? end + 1 : p + len;
    /* trim */
    char *s = part;
    while (*s == ' ') s++;
    for (size_t n = strlen(s); n && s[n - 1] == ' '; n--) s[n - 1] = 0;
    if (!*s) {
      if (!end) break;
      return bad(s, "an empty entry (expected op=data_layout[:kernel_layout])", "", "");
    }
    char whole[256];
    snprintf(whole, sizeof whole, "%s", s);
    char *eq = strchr(s, '=');
    if (!eq || eq == s || !eq[1]) return bad(whole, "expected op=data_layout[:kernel_layout]", "", "");
    *eq = 0;
    char *lays = eq + 1, *colon = strchr(lays, ':');
    if (colon) *colon = 0;
    char *klay = colon ? colon + 1 : NULL;
    if (klay && strchr(klay, ':')) return bad(whole, "at most two layouts (data:kernel)", "", "");
    int32_t ci = -1;
    for (int32_t i = 0; i < N_CONVERTIBLE; i++)
      if (!strcmp(k_convertible[i].name, s)) ci = i;
    if (ci < 0) {
      char list[512] = "";
      for (int32_t i = 0; i < N_CONVERTIBLE; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", k_convertible[i].name);
      return bad(whole, "op %s has no layout conversion (ops with one: %s)", s, list);
    }
    for (int32_t i = 0; i < c->n; i++)
      if (c->want[i].conv == ci) return bad(whole, "op %s is given twice", s, "");
    if (c->n == MAX_WANT) return bad(whole, "too many entries", "", "");
    Want *w = &c->want[c->n];
    w->conv = ci;
    w->op = H->op_get(s);
    if (!w->op) {
      H->error_clear();
      return bad(whole, "op %s is not registered", s, "");
    }
    if (!strcmp(lays, "default")) return bad(whole, "the data layout cannot be \"default\"", "", "");
    if (!lay_parse(lays, &w->data))
      return bad(whole, "%s is not a plain layout (upper-case axes, each once; blocked layouts are not supported)",
                 lays, "");
    if (!same_axes(&w->data, k_convertible[ci].axes))
      return bad(whole, "data layout %s does not have the axes %s", lays, k_convertible[ci].axes);
    w->kernel.n = -1;
    if (klay && k_convertible[ci].nlay == 1) return bad(whole, "op %s takes one layout", s, "");
    if (klay && strcmp(klay, "default") != 0) {
      if (!lay_parse(klay, &w->kernel))
        return bad(whole, "%s is not a plain layout (upper-case axes, each once; blocked layouts are not supported)",
                   klay, "");
      if (!same_axes(&w->kernel, k_convertible[ci].kaxes))
        return bad(whole, "kernel layout %s does not have the axes %s", klay, k_convertible[ci].kaxes);
    } else if (k_convertible[ci].nlay == 2) {
      static const char *const ok2[] = {"NCHW", "NHWC", "HWNC"}, *const ok2t[] = {"NCHW", "NHWC"},
                               *const ok3[] = {"NCDHW", "NDHWC"};
      ConvKind k = k_convertible[ci].kind;
      const char *const *ok = k == C_CONV2D ? ok2 : k == C_CONV2D_T ? ok2t : ok3;
      int32_t nok = k == C_CONV2D ? 3 : 2;
      bool found = false;
      for (int32_t i = 0; i < nok; i++) found = found || !strcmp(ok[i], w->data.a);
      if (!found)
        return bad(whole, "a default kernel layout needs data layout %s (give the kernel layout)",
                   k == C_CONV2D ? "NCHW, NHWC or HWNC" : k == C_CONV2D_T ? "NCHW or NHWC" : "NCDHW or NDHWC", "");
    }
    c->n++;
  }
  return 0;
}

static int64_t dim_of(const GPType *t, const char *layout, char axis) {
  const char *p = strchr(layout, axis);
  if (!p || !t || t->kind != GP_TYPE_TENSOR || (int32_t)(p - layout) >= t->n) return -2;
  return t->tensor.shape[p - layout];
}

/* TVM's convert functions.  A call whose layout names other axes than the desired one (a pool
 * reading HNBW) keeps its layout: there is no conversion between them (TVM writes the desired
 * layout over it, an op that no longer types). */
static int convert(void *user, const GPCall *orig, GPAttrs *attrs, GPExpr *const *args, GPExpr **out) {
  Conv *c = user;
  const GPOp *op = (const GPOp *)orig->op;
  const Want *w = NULL;
  for (int32_t i = 0; i < c->n; i++)
    if (c->want[i].op == op) w = &c->want[i];
  if (!w) return 0;
  ConvKind ck = k_convertible[w->conv].kind;
  const char *cur = lay_attr_str(orig->attrs, ck == C_POOL || ck == C_RESIZE ? "layout" : "data_layout");
  if (!same_axes(&w->data, cur[0] ? cur : k_convertible[w->conv].axes)) {
    c->kept_other_axes++;
    return 0;
  }
  const char *keys[2];
  GPAttrValue vals[2];
  int32_t n = 0;
  switch (k_convertible[w->conv].kind) {
  case C_CONV2D:
  case C_CONV2D_T:
  case C_CONV3D: {
    const char *kl = w->kernel.a;
    if (w->kernel.n < 0) {
      const char *d = w->data.a;
      ConvKind k = k_convertible[w->conv].kind;
      if (k == C_CONV2D_T) kl = !strcmp(d, "NCHW") ? "IOHW" : "HWIO";
      else if (k == C_CONV3D) kl = !strcmp(d, "NCDHW") ? "OIDHW" : "DHWIO";
      else if (!strcmp(d, "NCHW")) kl = "OIHW";
      else if (!strcmp(d, "HWNC")) kl = "HWOI";
      else { /* NHWC: HWOI for a depthwise conv (is_depthwise_conv2d) */
        const GPAttrValue *g = H->attrs_get(orig->attrs, "groups");
        int64_t groups = g ? g->i : 1;
        int64_t ic = dim_of(orig->args[0]->checked_type, lay_attr_str(orig->attrs, "data_layout"), 'C');
        int64_t oc = dim_of(orig->args[1]->checked_type, lay_attr_str(orig->attrs, "kernel_layout"), 'O');
        kl = ic == groups && oc == groups ? "HWOI" : "HWIO";
      }
    }
    keys[0] = "data_layout", vals[0] = (GPAttrValue){.kind = GP_ATTR_STR, .s = w->data.a};
    keys[1] = "kernel_layout", vals[1] = (GPAttrValue){.kind = GP_ATTR_STR, .s = kl};
    n = 2;
    break;
  }
  case C_POOL:
    keys[0] = "layout", vals[0] = (GPAttrValue){.kind = GP_ATTR_STR, .s = w->data.a};
    keys[1] = "out_layout", vals[1] = vals[0];
    n = 2;
    break;
  case C_RESIZE:
    keys[0] = "layout", vals[0] = (GPAttrValue){.kind = GP_ATTR_STR, .s = w->data.a};
    n = 1;
    break;
  }
  GPAttrs *na = lay_attrs_set(op, attrs, n, keys, vals);
  if (!na) return -1;
  if (na == attrs) {
    gp_release(na);
    return 0;
  }
  *out = (GPExpr *)H->call_new(orig->op, orig->nargs, args, na);
  gp_release(na);
  return *out ? 0 : -1;
}

static GPExpr *cl_function(void *user, const GPModule *mod, int32_t index) {
  Conv *c = user;
  return lay_rewrite_function(PASS_NAME, mod, index, convert, c, &c->stats);
}

static int convert_layout(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  Conv c = {0};
  const char *text = std_config_str(ctx, KEY, "");
  if (parse_desired(text, &c) != 0) return -1;
  if (c.n == 0) {
    std_note(ctx, "no desired layouts (config " KEY "): layouts unchanged");
    return std_return_module(result, gp_retain(mod));
  }
  GPModule *out = std_function_pass(mod, cl_function, &c);
  if (!out) return -1;
  std_note(ctx, "%lld calls rebuilt in new layouts, %lld layout_transforms inserted", (long long)c.stats.altered,
           (long long)c.stats.transforms);
  if (c.kept_other_axes)
    std_note(ctx, "%lld calls kept their layout: it names other axes than the desired one", (long long)c.kept_other_axes);
  return std_return_module(result, out);
}

int std_register_convert_layout(void) {
  static const char *const required[] = {"InferType", "CanonicalizeOps"};
  static const GPConfigKey keys[] = {
      {.name = "desired_layouts",
       .type_index = GP_TI_RAW_STR,
       .default_value = {.type_index = GP_TI_RAW_STR, .v_c_str = ""},
       .help = "op=data_layout[:kernel_layout],... e.g. nn.conv2d=NCHW:default (kernel: a layout or default)"},
  };
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 3,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 2,
      .config_keys = keys,
      .num_config_keys = 1,
      .func = convert_layout,
      .help = "Convert the layouts of convolutions, poolings and resizes to the desired ones, inserting "
              "layout_transforms only at the boundaries (TVM's ConvertLayout).",
  };
  return H->pass_register(&info, 0);
}
