/* instruments.c -- instruments on a pass context (ABI 1.3, GPInstrument): registration, and the
 * command's --explain and --time-passes built as instruments, so the command uses what an
 * embedding host gets.  registry/run.c calls the callbacks. */
#include "registry_impl.h"

#include <string.h>

/* ---- registration */

static GPInstrumentEntry *find(const GPPassContext *c, const char *name, size_t *at) {
  for (size_t i = 0; i < c->instruments.len; i++) {
    GPInstrumentEntry *e = c->instruments.items[i];
    if (strcmp(e->name, name) == 0) {
      if (at) *at = i;
      return e;
    }
  }
  return NULL;
}

int gp_ctx_instrument_register(GPPassContext *c, const GPInstrument *ins) {
  if (!c || !ins) {
    gp_error_set(GP_ERR_VALUE, "ctx_instrument_register: NULL %s", c ? "instrument" : "context");
    return -1;
  }
  if (GP_ABI_MAJOR_OF(ins->abi_version) != GP_ABI_VERSION_MAJOR ||
      ins->struct_size < GP_STRUCT_SIZE(GPInstrument, run_end)) {
    gp_error_set(GP_ERR_VERSION,
                 "ctx_instrument_register: the instrument table is ABI %u.%u with struct_size %zu; this host "
                 "needs ABI %d.x with at least %zu bytes (1.3's GPInstrument)",
                 GP_ABI_MAJOR_OF(ins->abi_version), GP_ABI_MINOR_OF(ins->abi_version), ins->struct_size,
                 GP_ABI_VERSION_MAJOR, GP_STRUCT_SIZE(GPInstrument, run_end));
    return -1;
  }
  if (!gp_reg_name_valid(ins->name)) {
    gp_error_set(GP_ERR_VALUE, "ctx_instrument_register: invalid instrument name '%s' (expected [A-Za-z0-9_.-]+)",
                 ins->name ? ins->name : "(null)");
    return -1;
  }
  if (c->run_depth) {
    gp_error_set(GP_ERR_VALUE, "ctx_instrument_register: instrument '%s': the context is running a pipeline",
                 ins->name);
    return -1;
  }
  if (find(c, ins->name, NULL)) {
    gp_error_set(GP_ERR_VALUE, "ctx_instrument_register: the context already has an instrument named '%s'",
                 ins->name);
    return -1;
  }
  GPInstrumentEntry *e = gp_calloc(1, sizeof *e);
  size_t n = ins->struct_size < sizeof e->ins ? ins->struct_size : sizeof e->ins;
  memcpy(&e->ins, ins, n); /* a later minor's larger table: the fields this host knows */
  e->ins.struct_size = sizeof e->ins;
  e->name = gp_strdup(ins->name);
  e->ins.name = e->name;
  gp_vec_push(&c->instruments, e);
  return 0;
}

static void entry_free(GPInstrumentEntry *e) {
  if (e->ins.user_deleter) e->ins.user_deleter(e->ins.user);
  gp_free(e->name);
  gp_free(e);
}

int gp_ctx_instrument_unregister(GPPassContext *c, const char *name) {
  if (!c || !name) {
    gp_error_set(GP_ERR_VALUE, "ctx_instrument_unregister: NULL %s", c ? "name" : "context");
    return -1;
  }
  if (c->run_depth) {
    gp_error_set(GP_ERR_VALUE, "ctx_instrument_unregister: instrument '%s': the context is running a pipeline", name);
    return -1;
  }
  size_t at = 0;
  GPInstrumentEntry *e = find(c, name, &at);
  if (!e) {
    GPBuf b = {0};
    for (size_t i = 0; i < c->instruments.len; i++)
      gp_buf_printf(&b, "%s%s", i ? ", " : "", ((GPInstrumentEntry *)c->instruments.items[i])->name);
    gp_error_set(GP_ERR_NOT_FOUND, "ctx_instrument_unregister: no instrument named '%s' (the context has: %s)", name,
                 b.len ? b.data : "none");
    gp_buf_free(&b);
    return -1;
  }
  memmove(&c->instruments.items[at], &c->instruments.items[at + 1],
          (c->instruments.len - at - 1) * sizeof c->instruments.items[0]);
  c->instruments.len--;
  entry_free(e);
  return 0;
}

void gp_ctx_instruments_clear(GPPassContext *c) {
  for (size_t i = 0; i < c->instruments.len; i++) entry_free(c->instruments.items[i]);
  gp_vec_free(&c->instruments);
}

/* ---- --explain */

static int explain_after(void *user, const GPPassEvent *ev) {
  FILE *f = user;
  if (!f) return 0;
  fprintf(f, "explain: %s: %s%s%s%s\n", ev->pass_name, ev->ran ? "ran" : "skipped", ev->reason ? " (" : "",
          ev->reason ? ev->reason : "", ev->reason ? ")" : "");
  for (int32_t i = 0; i < ev->num_notes; i++) fprintf(f, "explain: %s: note: %s\n", ev->pass_name, ev->notes[i]);
  if (ev->checks) fprintf(f, "explain: %s: %s\n", ev->pass_name, ev->checks);
  fflush(f);
  return 0;
}

GPInstrument gp_instrument_explain(FILE *out) {
  return (GPInstrument){
      .struct_size = sizeof(GPInstrument),
      .abi_version = GP_ABI_VERSION,
      .name = "explain",
      .user = out,
      .after_pass = explain_after,
  };
}

/* ---- --time-passes */

typedef struct Timing {
  FILE *out;
  char **slot;
  GPVec names; /* char* (owned), one per pass that ran */
  GPVec ns;    /* uint64_t stored in the pointer */
} Timing;

static void timing_reset(Timing *t) {
  for (size_t i = 0; i < t->names.len; i++) gp_free(t->names.items[i]);
  t->names.len = 0;
  t->ns.len = 0;
}

/* Only the run the host started is timed: a pipeline that a pass runs is inside its time. */
static int timing_begin(void *user, const GPRunEvent *ev) {
  if (ev->depth) return 0;
  timing_reset(user);
  return 0;
}

static int timing_after(void *user, const GPPassEvent *ev) {
  Timing *t = user;
  if (!ev->ran || ev->depth) return 0;
  gp_vec_push(&t->names, gp_strdup(ev->pass_name));
  gp_vec_push(&t->ns, (void *)(uintptr_t)ev->elapsed_ns);
  return 0;
}

static void timing_end(void *user, const GPRunEvent *ev) {
  Timing *t = user;
  if (ev->depth) return;
  uint64_t total = ev->elapsed_ns, sum = 0;
  for (size_t i = 0; i < t->ns.len; i++) sum += (uint64_t)(uintptr_t)t->ns.items[i];
  double tot = (double)total / 1000.0;
  double self = (double)(total > sum ? total - sum : 0) / 1000.0;
  GPBuf b = {0};
  gp_buf_printf(&b, "pipeline: %.0fus [%.0fus] (%.2f%%; %.2f%%)\n", tot, self, 100.0, 100.0);
  for (size_t i = 0; i < t->names.len; i++) {
    uint64_t ns = (uint64_t)(uintptr_t)t->ns.items[i];
    double us = (double)ns / 1000.0;
    double pct = total ? 100.0 * (double)ns / (double)total : 0.0;
    gp_buf_printf(&b, "\t%s: %.0fus [%.0fus] (%.2f%%; %.2f%%)\n", (const char *)t->names.items[i], us, us, pct, pct);
  }
  char *report = gp_buf_take(&b);
  if (t->out) {
    fputs(report, t->out);
    fflush(t->out);
  }
  if (t->slot) {
    gp_free(*t->slot);
    *t->slot = report;
  } else {
    gp_free(report);
  }
  timing_reset(t);
}

static void timing_free(void *user) {
  Timing *t = user;
  timing_reset(t);
  gp_vec_free(&t->names);
  gp_vec_free(&t->ns);
  gp_free(t);
}

GPInstrument gp_instrument_timing(FILE *out, char **report_slot) {
  Timing *t = gp_calloc(1, sizeof *t);
  t->out = out;
  t->slot = report_slot;
  return (GPInstrument){
      .struct_size = sizeof(GPInstrument),
      .abi_version = GP_ABI_VERSION,
      .name = "time-passes",
      .user = t,
      .user_deleter = timing_free,
      .run_begin = timing_begin,
      .after_pass = timing_after,
      .run_end = timing_end,
  };
}
