/*
 * bridge.c -- the libffi bridge (see bridge.h for the signature language and conventions).
 *
 * libffi 3.4.4: one ffi_cif per signature, prepared once, living in the same heap block as its
 * ffi_type* array (the cif keeps pointers to both).  Integral returns narrower than a register
 * are widened to ffi_arg, so every return buffer is at least sizeof(ffi_arg) bytes, and a
 * closure writes narrow integral results as a whole ffi_arg.
 */
#include "bridge.h"

#include <ffi.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Signatures                                                                                  */

typedef enum {
  FT_VOID,
  FT_BOOL,
  FT_I32,
  FT_I64,
  FT_U32,
  FT_U64,
  FT_F32,
  FT_F64,
  FT_PTR,
  FT_STR,
  FT_OBJ
} FfiCode;

static const struct {
  const char *code;
  const char *c_type;
} k_codes[] = {
    [FT_VOID] = {"v", "void"},   [FT_BOOL] = {"b", "bool"},        [FT_I32] = {"i32", "int32_t"},
    [FT_I64] = {"i64", "int64_t"}, [FT_U32] = {"u32", "uint32_t"}, [FT_U64] = {"u64", "uint64_t"},
    [FT_F32] = {"f32", "float"}, [FT_F64] = {"f64", "double"},     [FT_PTR] = {"p", "void *"},
    [FT_STR] = {"s", "const char *"}, [FT_OBJ] = {"o", "GPObject *"},
};

static ffi_type *ffi_type_of(FfiCode c) {
  switch (c) {
  case FT_VOID: return &ffi_type_void;
  case FT_BOOL: return &ffi_type_uint8; /* C11 _Bool: one byte, 0 or 1 */
  case FT_I32: return &ffi_type_sint32;
  case FT_I64: return &ffi_type_sint64;
  case FT_U32: return &ffi_type_uint32;
  case FT_U64: return &ffi_type_uint64;
  case FT_F32: return &ffi_type_float;
  case FT_F64: return &ffi_type_double;
  case FT_PTR:
  case FT_STR:
  case FT_OBJ: return &ffi_type_pointer;
  }
  return &ffi_type_void;
}

_Static_assert(sizeof(bool) == 1, "bool is passed as ffi_type_uint8");

/* A parsed signature with its prepared cif.  Never moved once prepared (the cif points into
 * `atypes`). */
typedef struct FfiSig {
  char *text;
  FfiCode ret;
  int32_t nargs;
  FfiCode args[GP_FFI_MAX_ARGS];
  ffi_type *atypes[GP_FFI_MAX_ARGS];
  ffi_cif cif;
} FfiSig;

static void sig_error(const char *text, size_t pos, const char *what) {
  gp_error_set(GP_ERR_VALUE, "signature:1:%zu: error: %s in \"%s\"", pos + 1, what, text);
}

static bool is_space(char c) { return c == ' ' || c == '\t'; }

/* Parse one type code at text[*pos] (after skipping blanks); returns 0 or -1 with an error. */
static int parse_code(const char *text, size_t *pos, FfiCode *out, const char *expected) {
  size_t i = *pos;
  while (is_space(text[i])) i++;
  size_t start = i;
  while ((text[i] >= 'a' && text[i] <= 'z') || (text[i] >= '0' && text[i] <= '9')) i++;
  if (i == start) {
    char what[160];
    if (text[i] == '\0')
      snprintf(what, sizeof what, "expected %s, got the end of the signature", expected);
    else
      snprintf(what, sizeof what, "expected %s, got '%c'", expected, text[i]);
    sig_error(text, start, what);
    return -1;
  }
  size_t n = i - start;
  for (size_t c = 0; c < GP_ARRAY_LEN(k_codes); c++) {
    if (strlen(k_codes[c].code) == n && memcmp(k_codes[c].code, text + start, n) == 0) {
      *out = (FfiCode)c;
      *pos = i;
      return 0;
    }
  }
  char what[200];
  snprintf(what, sizeof what,
           "unknown type code '%.*s' (expected one of v, b, i32, i64, u32, u64, f32, f64, p, s, o)",
           (int)(n > 32 ? 32 : n), text + start);
  sig_error(text, start, what);
  return -1;
}

static FfiSig *sig_parse(const char *text) {
  if (!text) {
    gp_error_set(GP_ERR_VALUE, "signature: NULL signature");
    return NULL;
  }
  FfiSig *s = gp_calloc(1, sizeof *s);
  size_t pos = 0;
  if (parse_code(text, &pos, &s->ret, "a return type code") < 0) goto fail;
  while (is_space(text[pos])) pos++;
  if (text[pos] != '(') {
    sig_error(text, pos, text[pos] ? "expected '(' after the return type" :
                                     "expected '(' after the return type, got the end of the signature");
    goto fail;
  }
  pos++;
  while (is_space(text[pos])) pos++;
  if (text[pos] == ')') {
    pos++;
  } else {
    for (;;) {
      while (is_space(text[pos])) pos++;
      size_t at = pos;
      if (s->nargs == GP_FFI_MAX_ARGS) {
        char what[96];
        snprintf(what, sizeof what, "too many parameters (at most %d)", GP_FFI_MAX_ARGS);
        sig_error(text, at, what);
        goto fail;
      }
      FfiCode c;
      if (parse_code(text, &pos, &c,
                     s->nargs ? "a parameter type code" : "a parameter type code or ')'") < 0)
        goto fail;
      if (c == FT_VOID) {
        sig_error(text, at, "'v' (void) is only valid as a return type");
        goto fail;
      }
      s->args[s->nargs++] = c;
      while (is_space(text[pos])) pos++;
      if (text[pos] == ',') {
        pos++;
        continue;
      }
      if (text[pos] == ')') {
        pos++;
        break;
      }
      sig_error(text, pos, text[pos] ? "expected ',' or ')' after a parameter" :
                                       "expected ',' or ')', got the end of the signature");
      goto fail;
    }
  }
  while (is_space(text[pos])) pos++;
  if (text[pos] != '\0') {
    sig_error(text, pos, "unexpected text after ')'");
    goto fail;
  }
  for (int32_t i = 0; i < s->nargs; i++) s->atypes[i] = ffi_type_of(s->args[i]);
  ffi_status st = ffi_prep_cif(&s->cif, FFI_DEFAULT_ABI, (unsigned)s->nargs, ffi_type_of(s->ret),
                               s->nargs ? s->atypes : NULL);
  if (st != FFI_OK) {
    gp_error_set(GP_ERR_INTERNAL, "signature \"%s\": ffi_prep_cif failed (status %d)", text,
                 (int)st);
    goto fail;
  }
  s->text = gp_strdup(text);
  return s;
fail:
  gp_free(s);
  return NULL;
}

static void sig_free(FfiSig *s) {
  if (!s) return;
  gp_free(s->text);
  gp_free(s);
}

/* ------------------------------------------------------------------------------------------ */
/* GPAny <-> C values                                                                          */

/* Storage for one C value of any code; ffi reads/writes through a pointer to it. */
typedef union FfiVal {
  bool b;
  int32_t i32;
  int64_t i64;
  uint32_t u32;
  uint64_t u64;
  float f32;
  double f64;
  void *p;
  const char *s;
  GPObject *o;
  ffi_arg widened; /* return buffers: at least sizeof(ffi_arg) */
  ffi_sarg swidened;
} FfiVal;

static bool is_object_index(int32_t ti) { return ti >= GP_TI_OBJECT; }

static const char *any_type_name(const GPAny *a) {
  const char *n = gp_type_index_name(a->type_index);
  return n ? n : "?";
}

/* Convert `a` to the C value of code `c`.  `what` names the value in errors ("argument 2",
 * "result").  Returns 0, or -1 with GP_ERR_TYPE / GP_ERR_VALUE. */
static int any_to_c(const GPAny *a, FfiCode c, FfiVal *out, const char *ctx, const char *what) {
  int32_t ti = a->type_index;
  bool is_int = ti == GP_TI_INT || ti == GP_TI_BOOL;
  switch (c) {
  case FT_VOID: return 0;
  case FT_BOOL:
    if (!is_int) break;
    out->b = a->v_int64 != 0;
    return 0;
  case FT_I32:
    if (!is_int) break;
    if (a->v_int64 < INT32_MIN || a->v_int64 > INT32_MAX) {
      gp_error_set(GP_ERR_VALUE, "%s: %s: value %" PRId64 " out of range for i32 (int32_t)", ctx,
                   what, a->v_int64);
      return -1;
    }
    out->i32 = (int32_t)a->v_int64;
    return 0;
  case FT_I64:
    if (!is_int) break;
    out->i64 = a->v_int64;
    return 0;
  case FT_U32:
    if (!is_int) break;
    if (a->v_int64 < 0 || a->v_int64 > (int64_t)UINT32_MAX) {
      gp_error_set(GP_ERR_VALUE, "%s: %s: value %" PRId64 " out of range for u32 (uint32_t)", ctx,
                   what, a->v_int64);
      return -1;
    }
    out->u32 = (uint32_t)a->v_int64;
    return 0;
  case FT_U64:
    if (!is_int) break;
    out->u64 = (uint64_t)a->v_int64; /* same bits: u64 values above INT64_MAX travel negative */
    return 0;
  case FT_F32:
    if (ti == GP_TI_FLOAT) out->f32 = (float)a->v_float64;
    else if (ti == GP_TI_INT) out->f32 = (float)a->v_int64;
    else break;
    return 0;
  case FT_F64:
    if (ti == GP_TI_FLOAT) out->f64 = a->v_float64;
    else if (ti == GP_TI_INT) out->f64 = (double)a->v_int64;
    else break;
    return 0;
  case FT_PTR:
    if (ti == GP_TI_NONE) out->p = NULL;
    else if (ti == GP_TI_OPAQUE_PTR || ti == GP_TI_DLTENSOR_PTR) out->p = a->v_ptr;
    else break;
    return 0;
  case FT_STR:
    if (ti == GP_TI_NONE) out->s = NULL;
    else if (ti == GP_TI_RAW_STR) out->s = a->v_c_str;
    else if (ti == GP_TI_STR && a->v_obj) out->s = ((const GPString *)a->v_obj)->data;
    else break;
    return 0;
  case FT_OBJ:
    if (ti == GP_TI_NONE) out->o = NULL;
    else if (is_object_index(ti)) out->o = a->v_obj;
    else break;
    return 0;
  }
  gp_error_set(GP_ERR_TYPE, "%s: %s: expected %s (%s), got %s", ctx, what, k_codes[c].code,
               k_codes[c].c_type, any_type_name(a));
  return -1;
}

static GPAny any_none(void) {
  GPAny a;
  memset(&a, 0, sizeof a);
  return a;
}

/* Pack a C value (borrowed for p/s/o) into a GPAny. */
static GPAny c_to_any(FfiCode c, const void *p) {
  GPAny a = any_none();
  switch (c) {
  case FT_VOID: break;
  case FT_BOOL:
    a.type_index = GP_TI_BOOL;
    a.v_int64 = *(const uint8_t *)p != 0;
    break;
  case FT_I32:
    a.type_index = GP_TI_INT;
    a.v_int64 = *(const int32_t *)p;
    break;
  case FT_I64:
    a.type_index = GP_TI_INT;
    a.v_int64 = *(const int64_t *)p;
    break;
  case FT_U32:
    a.type_index = GP_TI_INT;
    a.v_int64 = *(const uint32_t *)p;
    break;
  case FT_U64:
    a.type_index = GP_TI_INT;
    a.v_int64 = (int64_t) * (const uint64_t *)p;
    break;
  case FT_F32:
    a.type_index = GP_TI_FLOAT;
    a.v_float64 = *(const float *)p;
    break;
  case FT_F64:
    a.type_index = GP_TI_FLOAT;
    a.v_float64 = *(const double *)p;
    break;
  case FT_PTR: {
    void *v = *(void *const *)p;
    if (v) {
      a.type_index = GP_TI_OPAQUE_PTR;
      a.v_ptr = v;
    }
    break;
  }
  case FT_STR: {
    const char *v = *(const char *const *)p;
    if (v) {
      a.type_index = GP_TI_RAW_STR;
      a.v_c_str = v;
    }
    break;
  }
  case FT_OBJ: {
    GPObject *v = *(GPObject *const *)p;
    if (v) {
      a.type_index = v->type_index;
      a.v_obj = v;
    }
    break;
  }
  }
  return a;
}

/* ------------------------------------------------------------------------------------------ */
/* Packed function from a C function                                                           */

typedef struct WrapSelf {
  void (*fn)(void);
  FfiSig *sig;
} WrapSelf;

static void wrap_self_free(void *p) {
  WrapSelf *w = p;
  sig_free(w->sig);
  gp_free(w);
}

static int wrap_call(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  WrapSelf *w = self;
  FfiSig *s = w->sig;
  char ctx[96];
  snprintf(ctx, sizeof ctx, "ffi call %.80s", s->text);
  if (nargs != s->nargs) {
    gp_error_set(GP_ERR_VALUE, "%s: expected %d argument%s, got %d", ctx, s->nargs,
                 s->nargs == 1 ? "" : "s", nargs);
    return -1;
  }
  FfiVal vals[GP_FFI_MAX_ARGS];
  void *avalues[GP_FFI_MAX_ARGS];
  for (int32_t i = 0; i < nargs; i++) {
    char what[32];
    snprintf(what, sizeof what, "argument %d", i);
    memset(&vals[i], 0, sizeof vals[i]);
    if (any_to_c(&args[i], s->args[i], &vals[i], ctx, what) < 0) return -1;
    avalues[i] = &vals[i];
  }

  /* Pointer-like returns may report failure as NULL + error: put a pending error aside. */
  bool can_fail = s->ret == FT_PTR || s->ret == FT_STR || s->ret == FT_OBJ;
  int32_t saved_kind = GP_OK;
  char *saved_msg = NULL;
  if (can_fail && (saved_kind = gp_error_kind()) != GP_OK) {
    saved_msg = gp_strdup(gp_error_message());
    gp_error_clear();
  }

  FfiVal rv;
  memset(&rv, 0, sizeof rv);
  ffi_call(&s->cif, w->fn, &rv, nargs ? avalues : NULL);

  GPAny out = any_none();
  switch (s->ret) {
  case FT_VOID: break;
  case FT_BOOL:
    out.type_index = GP_TI_BOOL;
    out.v_int64 = (uint8_t)rv.widened != 0;
    break;
  case FT_I32:
    out.type_index = GP_TI_INT;
    out.v_int64 = (int32_t)rv.swidened;
    break;
  case FT_U32:
    out.type_index = GP_TI_INT;
    out.v_int64 = (uint32_t)rv.widened;
    break;
  case FT_I64:
  case FT_U64:
  case FT_F32:
  case FT_F64: out = c_to_any(s->ret, &rv); break;
  case FT_PTR:
  case FT_STR:
  case FT_OBJ:
    if (rv.p == NULL && gp_error_kind() != GP_OK) {
      gp_error_prefix("%s", ctx);
      gp_free(saved_msg);
      return -1;
    }
    if (s->ret == FT_STR) {
      if (rv.s) {
        GPString *str = gp_string_new(rv.s, strlen(rv.s));
        out.type_index = GP_TI_STR;
        out.v_obj = &str->obj;
      }
    } else {
      out = c_to_any(s->ret, &rv); /* 'o': takes the new reference the function returned */
    }
    break;
  }
  if (saved_msg) {
    gp_error_set(saved_kind, "%s", saved_msg);
    gp_free(saved_msg);
  }
  *result = out;
  return 0;
}

GPPackedFunc *gp_ffi_wrap(void *fnptr, const char *signature) {
  if (!fnptr) {
    gp_error_set(GP_ERR_VALUE, "ffi wrap: NULL function pointer");
    return NULL;
  }
  FfiSig *s = sig_parse(signature);
  if (!s) return NULL;
  WrapSelf *w = gp_malloc(sizeof *w);
  /* Object pointer to function pointer: POSIX guarantees this works (as for dlsym). */
  memcpy(&w->fn, &fnptr, sizeof w->fn);
  w->sig = s;
  return gp_func_new(w, wrap_call, wrap_self_free);
}

/* ------------------------------------------------------------------------------------------ */
/* C function pointer from a packed function                                                   */

struct GPFfiClosure {
  ffi_closure *closure;
  void *code;
  FfiSig *sig;
  GPPackedFunc *f;       /* retained */
  pthread_mutex_t mu;    /* guards last_str */
  GPObject *last_str;    /* keeps the last 's' result alive */
};

static void closure_zero(FfiCode ret, void *retp) {
  switch (ret) {
  case FT_VOID: break;
  case FT_F32: *(float *)retp = 0.0f; break;
  case FT_F64: *(double *)retp = 0.0; break;
  case FT_PTR:
  case FT_STR:
  case FT_OBJ: *(void **)retp = NULL; break;
  default: *(ffi_arg *)retp = 0; break; /* integral: a whole ffi_arg (and 64-bit types) */
  }
}

static void closure_handler(ffi_cif *cif, void *retp, void **cargs, void *user) {
  GP_UNUSED(cif);
  GPFfiClosure *c = user;
  FfiSig *s = c->sig;
  GPAny args[GP_FFI_MAX_ARGS];
  for (int32_t i = 0; i < s->nargs; i++) args[i] = c_to_any(s->args[i], cargs[i]);
  GPAny res = any_none();
  closure_zero(s->ret, retp);
  if (gp_func_call(c->f, args, s->nargs, &res) != 0) {
    gp_any_clear(&res);
    return;
  }
  if (s->ret == FT_VOID) {
    gp_any_clear(&res);
    return;
  }
  char ctx[96];
  snprintf(ctx, sizeof ctx, "ffi closure %.80s", s->text);
  FfiVal v;
  memset(&v, 0, sizeof v);
  if (any_to_c(&res, s->ret, &v, ctx, "result") < 0) {
    gp_any_clear(&res);
    return;
  }
  switch (s->ret) {
  case FT_VOID: break;
  case FT_BOOL: *(ffi_arg *)retp = v.b ? 1u : 0u; break;
  case FT_I32: *(ffi_sarg *)retp = v.i32; break;
  case FT_U32: *(ffi_arg *)retp = v.u32; break;
  case FT_I64: *(int64_t *)retp = v.i64; break;
  case FT_U64: *(uint64_t *)retp = v.u64; break;
  case FT_F32: *(float *)retp = v.f32; break;
  case FT_F64: *(double *)retp = v.f64; break;
  case FT_PTR: *(void **)retp = v.p; break;
  case FT_STR:
    *(const char **)retp = v.s;
    if (res.type_index == GP_TI_STR) {
      /* Keep the string object alive until the next call or free. */
      pthread_mutex_lock(&c->mu);
      GPObject *old = c->last_str;
      c->last_str = res.v_obj;
      pthread_mutex_unlock(&c->mu);
      gp_release(old);
      return; /* ownership moved to last_str */
    }
    break;
  case FT_OBJ:
    *(GPObject **)retp = v.o;
    return; /* the C caller takes the result's reference */
  }
  gp_any_clear(&res);
}

void *gp_ffi_closure(GPPackedFunc *f, const char *signature, GPFfiClosure **out_handle) {
  if (out_handle) *out_handle = NULL;
  if (!f || !out_handle) {
    gp_error_set(GP_ERR_VALUE, "ffi closure: %s is NULL", f ? "out_handle" : "the function");
    return NULL;
  }
  FfiSig *s = sig_parse(signature);
  if (!s) return NULL;
  GPFfiClosure *c = gp_calloc(1, sizeof *c);
  c->sig = s;
  c->closure = ffi_closure_alloc(sizeof(ffi_closure), &c->code);
  if (!c->closure) {
    gp_error_set(GP_ERR_MEMORY, "ffi closure %s: ffi_closure_alloc failed", s->text);
    sig_free(s);
    gp_free(c);
    return NULL;
  }
  ffi_status st = ffi_prep_closure_loc(c->closure, &s->cif, closure_handler, c, c->code);
  if (st != FFI_OK) {
    gp_error_set(GP_ERR_INTERNAL, "ffi closure %s: ffi_prep_closure_loc failed (status %d)",
                 s->text, (int)st);
    ffi_closure_free(c->closure);
    sig_free(s);
    gp_free(c);
    return NULL;
  }
  pthread_mutex_init(&c->mu, NULL);
  c->f = gp_retain(f);
  *out_handle = c;
  return c->code;
}

void gp_ffi_closure_free(GPFfiClosure *c) {
  if (!c) return;
  ffi_closure_free(c->closure);
  gp_release(c->last_str);
  gp_release(c->f);
  pthread_mutex_destroy(&c->mu);
  sig_free(c->sig);
  gp_free(c);
}
