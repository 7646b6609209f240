/*
 * pattern_tables.c -- pattern tables (GPPatternTable: TVM's MergeComposite table) and their
 * registry by name (GPHostAPI.pattern_table_*), and pattern files.
 *
 * A pattern file holds one `name: pattern` entry per line; a line that starts with a space or a
 * tab continues the entry above it; '#' starts a comment; blank lines are skipped.  Names are
 * [A-Za-z0-9_.-]+ and distinct.  Errors read "<file>:<line>:<col>: error: <what>".
 *
 * The registry follows global_funcs.c: one rwlock; tables retained; a taken name is GP_ERR_VALUE
 * unless allow_override; NULL removes; get returns a new reference or NULL without an error.
 * Each table records the plugin that registered it, and goes when that plugin is unloaded or
 * fails its initialize (plugin/loader.c), whether or not its finalize removes it.
 */
#include "../ir/pattern.h"
#include "registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void table_free(GPObject *o) {
  GPPatternTable *t = (GPPatternTable *)o;
  for (int32_t i = 0; i < t->n; i++) {
    GPPatternEntry *e = (GPPatternEntry *)&t->entries[i];
    gp_free((char *)e->name);
    gp_release(e->pattern);
    gp_release(e->check);
  }
  gp_free((void *)t->entries);
  gp_free((char *)t->source_name);
  gp_free(t);
}

static bool name_ok(const char *s) {
  if (!s || !*s) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
          *s == '.' || *s == '-'))
      return false;
  return true;
}

GPPatternTable *gp_pattern_table_new(int32_t n, const char *const *names, GPPattern *const *patterns,
                                     GPPackedFunc *const *checks) {
  if (n < 0 || (n && (!names || !patterns))) {
    gp_error_set(GP_ERR_VALUE, "pattern_table_new: expected n >= 0 names and patterns");
    return NULL;
  }
  for (int32_t i = 0; i < n; i++) {
    if (!name_ok(names[i])) {
      gp_error_set(GP_ERR_VALUE, "pattern_table_new: entry %d: invalid name '%s' (expected [A-Za-z0-9_.-]+)",
                   (int)i, names[i] ? names[i] : "(null)");
      return NULL;
    }
    for (int32_t j = 0; j < i; j++)
      if (!strcmp(names[i], names[j])) {
        gp_error_set(GP_ERR_VALUE, "pattern_table_new: entries %d and %d are both named '%s'", (int)j, (int)i,
                     names[i]);
        return NULL;
      }
    if (!patterns[i] || gp_kind(patterns[i]) != GP_TI_PATTERN) {
      gp_error_set(GP_ERR_VALUE, "pattern_table_new: entry '%s': not a compiled pattern", names[i]);
      return NULL;
    }
    if (checks && checks[i] && gp_kind(checks[i]) != GP_TI_FUNCTION) {
      gp_error_set(GP_ERR_VALUE, "pattern_table_new: entry '%s': the check is not a packed function", names[i]);
      return NULL;
    }
  }
  GPPatternTable *t = gp_object_alloc(sizeof *t, GP_TI_PATTERN_TABLE, table_free);
  GPPatternEntry *es = gp_calloc(n ? (size_t)n : 1, sizeof *es);
  for (int32_t i = 0; i < n; i++) {
    es[i].name = gp_strdup(names[i]);
    es[i].pattern = gp_retain(patterns[i]);
    es[i].check = checks && checks[i] ? gp_retain(checks[i]) : NULL;
  }
  t->n = n;
  t->entries = es;
  return t;
}

GPPatternTable *gp_pattern_table_parse(const char *text, size_t len, const char *source) {
  const char *src = source ? source : "<patterns>";
  GPVec names = {0}, pats = {0};
  GPPatternTable *t = NULL;
  const char *p = text, *end = text + len;
  uint32_t line = 1;
  bool failed = false;
  while (p < end && !failed) {
    const char *ls = p, *le = memchr(p, '\n', (size_t)(end - p));
    if (!le) le = end;
    const char *q = ls;
    while (q < le && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
    if (q == le || *q == '#') {
      p = le < end ? le + 1 : end;
      line++;
      continue;
    }
    if (q != ls) {
      gp_error_set(GP_ERR_PARSE, "%s:%u:%u: error: an indented line continues an entry, but no entry starts above it",
                   src, (unsigned)line, (unsigned)(q - ls + 1));
      failed = true;
      break;
    }
    const char *ns = q;
    while (q < le && *q != ':' && *q != ' ' && *q != '\t') q++;
    const char *ne = q;
    while (q < le && (*q == ' ' || *q == '\t')) q++;
    char *name = gp_strndup(ns, (size_t)(ne - ns));
    if (ne == ns || q >= le || *q != ':' || !name_ok(name)) {
      gp_error_set(GP_ERR_PARSE, "%s:%u:%u: error: expected 'name: pattern' (a name of [A-Za-z0-9_.-])", src,
                   (unsigned)line, (unsigned)(ne == ns || !name_ok(name) ? 1 : q - ls + 1));
      gp_free(name);
      failed = true;
      break;
    }
    for (size_t i = 0; i < names.len && !failed; i++)
      if (!strcmp(names.items[i], name)) {
        gp_error_set(GP_ERR_PARSE, "%s:%u:1: error: a second pattern named '%s'", src, (unsigned)line, name);
        failed = true;
      }
    if (failed) {
      gp_free(name);
      break;
    }
    const char *ps = q + 1; /* after ':' */
    uint32_t pline = line, pcol = (uint32_t)(ps - ls + 1);
    /* continuation lines */
    const char *pe = le;
    p = le < end ? le + 1 : end;
    line++;
    while (p < end && (*p == ' ' || *p == '\t')) {
      const char *ce = memchr(p, '\n', (size_t)(end - p));
      if (!ce) ce = end;
      pe = ce;
      p = ce < end ? ce + 1 : end;
      line++;
    }
    char *ptext = gp_strndup(ps, (size_t)(pe - ps));
    GPPattern *pat = gp_pattern_compile(ptext, src, pline, pcol);
    gp_free(ptext);
    if (!pat) {
      gp_free(name);
      failed = true;
      break;
    }
    gp_vec_push(&names, name);
    gp_vec_push(&pats, pat);
  }
  if (!failed && names.len == 0) {
    gp_error_set(GP_ERR_PARSE, "%s: error: no patterns (expected lines 'name: pattern')", src);
    failed = true;
  }
  if (!failed) {
    t = gp_pattern_table_new((int32_t)names.len, (const char *const *)names.items, (GPPattern *const *)pats.items,
                             NULL);
    if (t && source) t->source_name = gp_strdup(source);
  }
  for (size_t i = 0; i < names.len; i++) {
    gp_free(names.items[i]);
    gp_release(pats.items[i]);
  }
  gp_vec_free(&names);
  gp_vec_free(&pats);
  return t;
}

GPPatternTable *gp_pattern_table_read(const char *path) {
  if (!path) {
    gp_error_set(GP_ERR_VALUE, "pattern_table_read: the path is NULL");
    return NULL;
  }
  size_t len;
  char *text = gp_read_file(path, &len);
  if (!text) {
    gp_error_prefix("cannot read the pattern file");
    return NULL;
  }
  GPPatternTable *t = NULL;
  if (memchr(text, 0, len))
    gp_error_set(GP_ERR_PARSE, "%s: error: the file holds a NUL byte (not a pattern file)", path);
  else
    t = gp_pattern_table_parse(text, len, path);
  gp_free(text);
  return t;
}

/* ---- the registry */

typedef struct TEnt {
  GPPatternTable *table; /* one reference */
  char *origin;          /* the registering plugin, or "host" */
} TEnt;

static pthread_rwlock_t g_lock = PTHREAD_RWLOCK_INITIALIZER;
static GPStrMap g_tables; /* name -> TEnt* */

static void tent_free(TEnt *e) {
  if (!e) return;
  gp_release(e->table);
  gp_free(e->origin);
  gp_free(e);
}

int gp_pattern_table_register(const char *name, GPPatternTable *table, int allow_override) {
  if (!name_ok(name)) {
    gp_error_set(GP_ERR_VALUE, "pattern_table_register: invalid table name '%s' (expected [A-Za-z0-9_.-]+)",
                 name ? name : "(null)");
    return -1;
  }
  if (table && gp_kind(table) != GP_TI_PATTERN_TABLE) {
    gp_error_set(GP_ERR_TYPE, "pattern_table_register: '%s': not a pattern table", name);
    return -1;
  }
  TEnt *old = NULL, *neu = NULL;
  if (table) {
    neu = gp_malloc(sizeof *neu);
    neu->table = gp_retain(table);
    neu->origin = gp_strdup(gp_registry_origin());
  }
  int rc = 0;
  pthread_rwlock_wrlock(&g_lock);
  if (!table) {
    old = gp_strmap_remove(&g_tables, name);
    if (!old) rc = -1;
  } else if (gp_strmap_has(&g_tables, name) && !allow_override) {
    rc = -2;
  } else {
    old = gp_strmap_remove(&g_tables, name);
    gp_strmap_put(&g_tables, name, neu);
    neu = NULL;
  }
  pthread_rwlock_unlock(&g_lock);
  tent_free(old);
  tent_free(neu);
  if (rc == -1)
    gp_error_set(GP_ERR_NOT_FOUND, "pattern_table_register: cannot remove '%s': no pattern table has that name", name);
  if (rc == -2)
    gp_error_set(GP_ERR_VALUE, "pattern_table_register: a pattern table named '%s' is already registered (pass "
                 "allow_override to replace it)", name);
  return rc ? -1 : 0;
}

GPPatternTable *gp_pattern_table_get(const char *name) {
  if (!name) return NULL;
  pthread_rwlock_rdlock(&g_lock);
  TEnt *e = gp_strmap_get(&g_tables, name);
  GPPatternTable *t = e ? gp_retain(e->table) : NULL;
  pthread_rwlock_unlock(&g_lock);
  return t;
}

void gp_pattern_tables_unregister_origin(const char *origin) {
  GPVec dead = {0};
  pthread_rwlock_wrlock(&g_lock);
  for (size_t i = 0; i < g_tables.cap; i++) {
    if (!g_tables.keys || !g_tables.keys[i]) continue;
    TEnt *e = g_tables.vals[i];
    if (strcmp(e->origin, origin) == 0) gp_vec_push(&dead, gp_strdup(g_tables.keys[i]));
  }
  for (size_t i = 0; i < dead.len; i++) {
    TEnt *e = gp_strmap_remove(&g_tables, dead.items[i]);
    gp_free(dead.items[i]);
    dead.items[i] = e;
  }
  pthread_rwlock_unlock(&g_lock);
  for (size_t i = 0; i < dead.len; i++) tent_free(dead.items[i]);
  gp_vec_free(&dead);
}

void gp_pattern_tables_shutdown(void) {
  pthread_rwlock_wrlock(&g_lock);
  GPStrMap all = g_tables;
  g_tables = (GPStrMap){0};
  pthread_rwlock_unlock(&g_lock);
  for (size_t i = 0; i < all.cap; i++)
    if (all.keys && all.keys[i]) tent_free(all.vals[i]);
  gp_strmap_free(&all);
}
