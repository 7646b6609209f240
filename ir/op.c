/* op.c -- the op registry.  Ops are immortal: IR nodes hold them by pointer.  Registering a
 * name again with allow_override makes a new op for later lookups; IR built before keeps the
 * old one, which stays valid for the process.
 *
 * Op attributes and kernels record the origin that set them (a plugin's name, or "host") so a
 * plugin that fails or is unloaded takes them along (gp_ops_unregister_origin):
 *  - an attribute set by the plugin is removed, even when it replaced another origin's value
 *    (that value is not restored);
 *  - kernels stack: each origin that sets an op's kernel holds one layer (setting again moves
 *    it to the top); the op runs the top layer's kernel, else the kernel it was registered
 *    with.  Removing an origin drops its layers, so the op falls back to the kernel it had
 *    before that plugin set one. */
#include "ir.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_rwlock_t op_lock = PTHREAD_RWLOCK_INITIALIZER;
static GPStrMap op_by_name;
static GPOp **op_list;
static int32_t op_len, op_cap;
static pthread_once_t op_once = PTHREAD_ONCE_INIT;

/* Per-op attributes (op_set_attr), indexed by GPOp.index; under op_lock. */
typedef struct {
  char *key;
  GPAny value; /* owns an object payload */
  int32_t plevel;
  char *origin;
} OpAttr;

typedef struct {
  OpAttr *items;
  int32_t n, cap;
} OpAttrList;

static OpAttrList *attr_tab; /* op_cap entries */

/* Kernel layers (op_set_kernel by origin), indexed by GPOp.index; under op_lock.  While n > 0
 * the op's kernel pair is the last layer's and base_* holds the pair it had before any. */
typedef struct {
  char *origin;
  GPOpKernelFn kernel;
  void *user;
} KernelLayer;

typedef struct {
  KernelLayer *items;
  int32_t n, cap;
  GPOpKernelFn base_kernel;
  void *base_user;
} KernelStack;

static KernelStack *kern_tab; /* op_cap entries */
static GPTypeFillFn *fill_tab; /* op_cap entries: backward inference hooks (gp_op_set_fill) */

static void op_never_freed(GPObject *o) { GP_UNUSED(o); }

static void init_builtin(void) { gp_ops_register_builtin(); }

void gp_ops_init(void) { pthread_once(&op_once, init_builtin); }

const GPOp *gp_op_find(const char *name) {
  gp_ops_init();
  pthread_rwlock_rdlock(&op_lock);
  const GPOp *op = gp_strmap_get(&op_by_name, name);
  pthread_rwlock_unlock(&op_lock);
  return op;
}

const GPOp *gp_op_get(const char *name) {
  const GPOp *op = gp_op_find(name);
  if (!op) gp_error_set(GP_ERR_NOT_FOUND, "no op named '%s'", name);
  return op;
}

int32_t gp_op_count(void) {
  gp_ops_init();
  pthread_rwlock_rdlock(&op_lock);
  int32_t n = op_len;
  pthread_rwlock_unlock(&op_lock);
  return n;
}

const GPOp *gp_op_at(int32_t index) {
  pthread_rwlock_rdlock(&op_lock);
  const GPOp *op = index >= 0 && index < op_len ? op_list[index] : NULL;
  pthread_rwlock_unlock(&op_lock);
  return op;
}

static bool valid_op_name(const char *s) {
  if (!s || !*s) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
          *s == '.'))
      return false;
  return true;
}

static GPAttrValue copy_value(const GPAttrValue *v) {
  GPAttrValue c = *v;
  if (v->kind == GP_ATTR_STR && v->s) c.s = gp_strdup(v->s);
  if ((v->kind == GP_ATTR_INTS || v->kind == GP_ATTR_FLOATS) && v->n > 0) {
    void *p = gp_malloc((size_t)v->n * 8);
    memcpy(p, v->ints, (size_t)v->n * 8);
    c.ints = p;
  }
  return c;
}

const GPOp *gp_op_register(const GPOpDef *def, bool allow_override) {
  if (!def || def->struct_size < GP_STRUCT_SIZE(GPOpDef, help)) {
    gp_error_set(GP_ERR_VERSION, "op_register: GPOpDef struct_size %zu is smaller than the 1.0 size %zu",
                 def ? def->struct_size : 0, GP_STRUCT_SIZE(GPOpDef, help));
    return NULL;
  }
  if (GP_ABI_MAJOR_OF(def->abi_version) != GP_ABI_VERSION_MAJOR) {
    gp_error_set(GP_ERR_VERSION, "op_register: op '%s' was built for ABI %u.%u, this host is %d.%d",
                 def->name ? def->name : "?", GP_ABI_MAJOR_OF(def->abi_version), GP_ABI_MINOR_OF(def->abi_version),
                 GP_ABI_VERSION_MAJOR, GP_ABI_VERSION_MINOR);
    return NULL;
  }
  if (!valid_op_name(def->name)) {
    gp_error_set(GP_ERR_VALUE, "op_register: invalid op name '%s'", def->name ? def->name : "(null)");
    return NULL;
  }
  if (!def->type_rel) {
    gp_error_set(GP_ERR_VALUE, "op_register: op '%s' has no type relation", def->name);
    return NULL;
  }
  if (def->num_attrs < 0 || (def->num_attrs && !def->attrs) || def->num_inputs < -1) {
    gp_error_set(GP_ERR_VALUE, "op_register: op '%s' has an invalid attribute schema or input count", def->name);
    return NULL;
  }
  if (def->pattern < 0 || def->pattern > GP_PATTERN_OPAQUE) {
    gp_error_set(GP_ERR_VALUE, "op_register: op '%s' has an invalid pattern %d", def->name, (int)def->pattern);
    return NULL;
  }
  for (int32_t i = 0; i < def->num_attrs; i++) {
    if (!def->attrs[i].name || !def->attrs[i].name[0]) {
      gp_error_set(GP_ERR_VALUE, "op_register: op '%s' attribute %d has no name", def->name, (int)i);
      return NULL;
    }
    for (int32_t j = 0; j < i; j++)
      if (strcmp(def->attrs[i].name, def->attrs[j].name) == 0) {
        gp_error_set(GP_ERR_VALUE, "op_register: op '%s' declares attribute '%s' twice", def->name,
                     def->attrs[i].name);
        return NULL;
      }
  }
  pthread_rwlock_wrlock(&op_lock);
  if (!allow_override && gp_strmap_has(&op_by_name, def->name)) {
    pthread_rwlock_unlock(&op_lock);
    gp_error_set(GP_ERR_VALUE, "op_register: op '%s' is already registered", def->name);
    return NULL;
  }
  GPOp *op = gp_calloc(1, sizeof *op);
  op->base.obj.ref_count = GP_REF_IMMORTAL;
  op->base.obj.type_index = GP_TI_OP;
  op->base.obj.deleter = op_never_freed;
  op->name = gp_strdup(def->name);
  op->num_inputs = def->num_inputs;
  op->pattern = def->pattern;
  op->flags = def->flags;
  op->num_attrs = def->num_attrs;
  GPAttrField *fields = def->num_attrs ? gp_calloc((size_t)def->num_attrs, sizeof *fields) : NULL;
  for (int32_t i = 0; i < def->num_attrs; i++) {
    fields[i].name = gp_strdup(def->attrs[i].name);
    fields[i].kind = def->attrs[i].kind;
    fields[i].required = def->attrs[i].required;
    fields[i].default_value = copy_value(&def->attrs[i].default_value);
    fields[i].help = def->attrs[i].help ? gp_strdup(def->attrs[i].help) : NULL;
  }
  op->attrs = fields;
  op->type_rel = def->type_rel;
  op->type_rel_user = def->type_rel_user;
  op->help = def->help ? gp_strdup(def->help) : NULL;
  if (GP_HAS_FIELD(def, GPOpDef, kernel_user)) {
    op->kernel = def->kernel;
    op->kernel_user = def->kernel_user;
  }
  if (op_len == op_cap) {
    op_cap = op_cap ? op_cap * 2 : 64;
    op_list = gp_realloc(op_list, (size_t)op_cap * sizeof *op_list);
    attr_tab = gp_realloc(attr_tab, (size_t)op_cap * sizeof *attr_tab);
    kern_tab = gp_realloc(kern_tab, (size_t)op_cap * sizeof *kern_tab);
    fill_tab = gp_realloc(fill_tab, (size_t)op_cap * sizeof *fill_tab);
  }
  op->index = op_len;
  attr_tab[op_len] = (OpAttrList){0};
  kern_tab[op_len] = (KernelStack){0};
  fill_tab[op_len] = NULL;
  op_list[op_len++] = op;
  gp_strmap_put(&op_by_name, def->name, op);
  pthread_rwlock_unlock(&op_lock);
  return op;
}

int gp_op_set_kernel(const GPOp *op, GPOpKernelFn kernel, void *user) {
  return gp_op_set_kernel_from(op, kernel, user, "host");
}

static bool is_host(const char *origin) { return !origin || strcmp(origin, "host") == 0; }

int gp_op_set_kernel_from(const GPOp *op, GPOpKernelFn kernel, void *user, const char *origin) {
  if (!op || gp_kind(op) != GP_TI_OP) {
    gp_error_set(GP_ERR_VALUE, "op_set_kernel: not an op");
    return -1;
  }
  char *dup = is_host(origin) ? NULL : gp_strdup(origin), *old_origin = NULL;
  pthread_rwlock_wrlock(&op_lock);
  GPOp *w = (GPOp *)op; /* ops are host-owned; the kernel pair is the one mutable part */
  KernelStack *ks = &kern_tab[op->index];
  if (!dup && ks->n == 0) { /* the host with no plugin layer: no bookkeeping */
    w->kernel = kernel;
    w->kernel_user = user;
  } else {
    const char *o = dup ? dup : "host";
    int32_t i = 0;
    while (i < ks->n && strcmp(ks->items[i].origin, o) != 0) i++;
    if (i < ks->n) { /* this origin's layer moves to the top */
      old_origin = ks->items[i].origin;
      memmove(&ks->items[i], &ks->items[i + 1], (size_t)(ks->n - 1 - i) * sizeof *ks->items);
      ks->n--;
    }
    if (ks->n == 0) {
      ks->base_kernel = w->kernel;
      ks->base_user = w->kernel_user;
    }
    if (ks->n == ks->cap) {
      ks->cap = ks->cap ? ks->cap * 2 : 2;
      ks->items = gp_realloc(ks->items, (size_t)ks->cap * sizeof *ks->items);
    }
    ks->items[ks->n++] = (KernelLayer){dup ? dup : gp_strdup("host"), kernel, user};
    dup = NULL;
    w->kernel = kernel;
    w->kernel_user = user;
  }
  pthread_rwlock_unlock(&op_lock);
  gp_free(dup);
  gp_free(old_origin);
  return 0;
}

int gp_op_set_attr(const GPOp *op, const char *key, const GPAny *value, int32_t plevel) {
  return gp_op_set_attr_from(op, key, value, plevel, "host");
}

int gp_op_set_attr_from(const GPOp *op, const char *key, const GPAny *value, int32_t plevel,
                        const char *origin) {
  if (!op || gp_kind(op) != GP_TI_OP || !key || !*key || !value) {
    gp_error_set(GP_ERR_VALUE, "op_set_attr: needs an op, a non-empty key and a value");
    return -1;
  }
  GPAny v = *value;
  if (v.type_index == GP_TI_RAW_STR) {
    const char *str = v.v_c_str ? v.v_c_str : "";
    v = gp_any_obj(gp_string_new(str, strlen(str)));
    v.type_index = GP_TI_STR;
  } else if (v.type_index >= GP_TI_OBJECT) {
    if (!v.v_obj) {
      gp_error_set(GP_ERR_VALUE, "op_set_attr: %s.%s: object value is NULL", op->name, key);
      return -1;
    }
    gp_retain(v.v_obj);
  }
  pthread_rwlock_wrlock(&op_lock);
  OpAttrList *l = &attr_tab[op->index];
  int32_t i = 0;
  while (i < l->n && strcmp(l->items[i].key, key) != 0) i++;
  if (i < l->n && plevel < l->items[i].plevel) {
    int32_t old = l->items[i].plevel;
    pthread_rwlock_unlock(&op_lock);
    gp_any_clear(&v);
    gp_error_set(GP_ERR_VALUE, "op_set_attr: %s.%s is already set at level %d (>= %d)", op->name, key, (int)old,
                 (int)plevel);
    return -1;
  }
  GPAny old = {0};
  char *old_origin = NULL, *dup = v.type_index != GP_TI_NONE ? gp_strdup(origin ? origin : "host") : NULL;
  if (i < l->n) {
    old = l->items[i].value;
    old_origin = l->items[i].origin;
    if (v.type_index == GP_TI_NONE) { /* remove */
      gp_free(l->items[i].key);
      l->items[i] = l->items[--l->n];
    } else {
      l->items[i].value = v;
      l->items[i].plevel = plevel;
      l->items[i].origin = dup;
    }
  } else if (v.type_index != GP_TI_NONE) {
    if (l->n == l->cap) {
      l->cap = l->cap ? l->cap * 2 : 4;
      l->items = gp_realloc(l->items, (size_t)l->cap * sizeof *l->items);
    }
    l->items[l->n++] = (OpAttr){gp_strdup(key), v, plevel, dup};
  }
  pthread_rwlock_unlock(&op_lock);
  gp_free(old_origin);
  gp_any_clear(&old); /* outside the lock: a deleter may call back into the registry */
  return 0;
}

int gp_op_get_attr(const GPOp *op, const char *key, GPAny *out) {
  *out = (GPAny){0};
  if (!op || gp_kind(op) != GP_TI_OP || !key) {
    gp_error_set(GP_ERR_VALUE, "op_get_attr: needs an op and a key");
    return -1;
  }
  pthread_rwlock_rdlock(&op_lock);
  const OpAttrList *l = &attr_tab[op->index];
  int found = 0;
  for (int32_t i = 0; i < l->n; i++)
    if (strcmp(l->items[i].key, key) == 0) {
      *out = l->items[i].value;
      if (out->type_index >= GP_TI_OBJECT) gp_retain(out->v_obj);
      found = 1;
      break;
    }
  pthread_rwlock_unlock(&op_lock);
  return found;
}

int32_t gp_op_list_with_attr(const char *key, const GPOp **out, int32_t cap) {
  if (!key || (cap > 0 && !out) || cap < 0) {
    gp_error_set(GP_ERR_VALUE, "op_list_with_attr: needs a key, and an array when cap > 0");
    return -1;
  }
  int32_t n = 0;
  pthread_rwlock_rdlock(&op_lock);
  for (int32_t o = 0; o < op_len; o++) {
    const OpAttrList *l = &attr_tab[o];
    for (int32_t i = 0; i < l->n; i++)
      if (strcmp(l->items[i].key, key) == 0) {
        if (n < cap) out[n] = op_list[o];
        n++;
        break;
      }
  }
  pthread_rwlock_unlock(&op_lock);
  return n;
}

void gp_op_attrs_clear(void) {
  pthread_rwlock_wrlock(&op_lock);
  for (int32_t o = 0; o < op_len; o++) {
    OpAttrList *l = &attr_tab[o];
    for (int32_t i = 0; i < l->n; i++) {
      gp_free(l->items[i].key);
      gp_free(l->items[i].origin);
      gp_any_clear(&l->items[i].value);
    }
    gp_free(l->items);
    *l = (OpAttrList){0};
  }
  pthread_rwlock_unlock(&op_lock);
}

void gp_ops_unregister_origin(const char *origin) {
  if (is_host(origin)) return;
  GPVec dead = {0}; /* GPAny* values to clear outside the lock */
  pthread_rwlock_wrlock(&op_lock);
  for (int32_t o = 0; o < op_len; o++) {
    OpAttrList *l = &attr_tab[o];
    for (int32_t i = l->n; i-- > 0;) {
      if (strcmp(l->items[i].origin, origin) != 0) continue;
      GPAny *v = gp_malloc(sizeof *v);
      *v = l->items[i].value;
      gp_vec_push(&dead, v);
      gp_free(l->items[i].key);
      gp_free(l->items[i].origin);
      l->items[i] = l->items[--l->n];
    }
    KernelStack *ks = &kern_tab[o];
    int32_t k = 0;
    for (int32_t i = 0; i < ks->n; i++) {
      if (strcmp(ks->items[i].origin, origin) == 0)
        gp_free(ks->items[i].origin);
      else
        ks->items[k++] = ks->items[i];
    }
    if (k != ks->n) {
      ks->n = k;
      GPOp *w = op_list[o];
      w->kernel = k ? ks->items[k - 1].kernel : ks->base_kernel;
      w->kernel_user = k ? ks->items[k - 1].user : ks->base_user;
    }
    if (ks->n == 0) {
      gp_free(ks->items);
      *ks = (KernelStack){0};
    }
  }
  pthread_rwlock_unlock(&op_lock);
  for (size_t i = 0; i < dead.len; i++) {
    gp_any_clear(dead.items[i]); /* outside the lock: a deleter may call back into the registry */
    gp_free(dead.items[i]);
  }
  gp_vec_free(&dead);
}

int gp_op_set_fill(const GPOp *op, GPTypeFillFn fill) {
  if (!op || gp_kind(op) != GP_TI_OP) {
    gp_error_set(GP_ERR_VALUE, "op_set_fill: not an op");
    return -1;
  }
  pthread_rwlock_wrlock(&op_lock);
  fill_tab[op->index] = fill;
  pthread_rwlock_unlock(&op_lock);
  return 0;
}

GPTypeFillFn gp_op_fill(const GPOp *op) {
  pthread_rwlock_rdlock(&op_lock);
  GPTypeFillFn f = fill_tab[op->index];
  pthread_rwlock_unlock(&op_lock);
  return f;
}

GPOpKernelFn gp_op_kernel(const GPOp *op, void **user) {
  pthread_rwlock_rdlock(&op_lock);
  GPOpKernelFn k = op->kernel;
  *user = op->kernel_user;
  pthread_rwlock_unlock(&op_lock);
  return k;
}

const GPType *gp_op_infer(const GPOp *op, const GPAttrs *attrs, const GPType *const *arg_types, int32_t nargs) {
  if (op->num_inputs >= 0 && nargs != op->num_inputs) {
    gp_error_set(GP_ERR_TYPE, "%s: expects %d argument%s, got %d", op->name, (int)op->num_inputs,
                 op->num_inputs == 1 ? "" : "s", (int)nargs);
    return NULL;
  }
  for (int32_t i = 0; i < nargs; i++)
    if (!arg_types[i]) {
      gp_error_set(GP_ERR_TYPE, "%s: argument %d has no type", op->name, (int)i);
      return NULL;
    }
  const GPType *out = NULL;
  if (op->type_rel(op, attrs, arg_types, nargs, &out, op->type_rel_user) != 0 || !out) {
    if (!gp_error_kind()) gp_error_set(GP_ERR_TYPE, "type relation failed without a message");
    gp_error_set_kind(GP_ERR_TYPE);
    gp_error_prefix("%s", op->name);
    return NULL;
  }
  return out;
}
