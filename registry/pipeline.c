/* pipeline.c -- the pipeline string: "A, B{key=value, key2=\"text, with comma\"}, C".
 *   pipeline := ws [item (ws ',' ws item)*] ws
 *   item     := name ws ['{' ws [kv (ws ',' ws kv)*] ws '}']
 *   kv       := key ws '=' ws value
 *   value    := '"' chars '"' (\" and \\ escapes) | a run of chars other than space , { } "
 *   name/key := [A-Za-z0-9_.-]+
 * Errors: GP_ERR_PARSE "pipeline:<line>:<col>: error: <what>" (1-based byte columns). */
#include "registry_impl.h"

#include <stdarg.h>
#include <string.h>

typedef struct P {
  const char *s;
  size_t i;
  uint32_t line;
  size_t line_start;
} P;

static bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

static uint32_t col_of(const P *p, size_t at) { return (uint32_t)(at - p->line_start + 1); }

static void skip_ws(P *p) {
  for (;;) {
    char c = p->s[p->i];
    if (c == '\n') {
      p->i++;
      p->line++;
      p->line_start = p->i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      p->i++;
    } else {
      return;
    }
  }
}

GP_FMT(3, 4) static int perr(const P *p, size_t at, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  gp_error_set(GP_ERR_PARSE, "pipeline:%u:%u: error: %s", p->line, col_of(p, at), msg);
  return -1;
}

/* A description of the character at p->i for messages: "end of input", "'x'". */
static const char *found(const P *p, char *buf) {
  unsigned char c = (unsigned char)p->s[p->i];
  if (!c) return "end of input";
  if (c == '\n') return "a newline";
  if (c < 32 || c >= 127) {
    snprintf(buf, 16, "byte 0x%02x", c);
    return buf;
  }
  snprintf(buf, 16, "'%c'", c);
  return buf;
}

static char *take_name(P *p) {
  size_t st = p->i;
  while (is_name_char(p->s[p->i])) p->i++;
  return gp_strndup(p->s + st, p->i - st);
}

static int parse_value(P *p, const char *key, char **out) {
  char fb[16];
  if (p->s[p->i] == '"') {
    size_t open = p->i++;
    GPBuf b = {0};
    gp_buf_puts(&b, "");
    for (;;) {
      char c = p->s[p->i];
      if (!c || c == '\n') {
        gp_buf_free(&b);
        return perr(p, open, "unterminated string for '%s'", key);
      }
      p->i++;
      if (c == '"') break;
      if (c == '\\' && (p->s[p->i] == '"' || p->s[p->i] == '\\')) c = p->s[p->i++];
      gp_buf_putc(&b, c);
    }
    *out = gp_buf_take(&b);
    return 0;
  }
  size_t st = p->i;
  for (char c; (c = p->s[p->i]) && !strchr(" \t\r\n\f\v,{}\"", c);) p->i++;
  if (p->i == st) return perr(p, st, "expected a value for '%s', found %s", key, found(p, fb));
  *out = gp_strndup(p->s + st, p->i - st);
  return 0;
}

static void item_free(GPPipelineItem *it) {
  gp_free(it->name);
  for (int32_t k = 0; k < it->nconfig; k++) {
    gp_free(it->keys[k]);
    gp_free(it->values[k]);
  }
  gp_free(it->keys);
  gp_free(it->values);
}

static int parse_config(P *p, GPPipelineItem *it) {
  char fb[16];
  size_t open = p->i++; /* '{' */
  skip_ws(p);
  if (p->s[p->i] == '}') {
    p->i++;
    return 0;
  }
  GPVec keys = {0}, vals = {0};
  for (;;) {
    skip_ws(p);
    size_t kat = p->i;
    if (!is_name_char(p->s[p->i])) {
      if (!p->s[p->i]) perr(p, open, "unterminated '{' (expected '}')");
      else perr(p, kat, "expected a config key, found %s", found(p, fb));
      goto fail;
    }
    char *key = take_name(p);
    for (size_t k = 0; k < keys.len; k++) {
      if (strcmp(keys.items[k], key) == 0) {
        perr(p, kat, "duplicate config key '%s'", key);
        gp_free(key);
        goto fail;
      }
    }
    gp_vec_push(&keys, key);
    skip_ws(p);
    if (p->s[p->i] != '=') {
      perr(p, p->i, "expected '=' after '%s', found %s", key, found(p, fb));
      goto fail;
    }
    p->i++;
    skip_ws(p);
    char *val = NULL;
    if (parse_value(p, key, &val) != 0) goto fail;
    gp_vec_push(&vals, val);
    skip_ws(p);
    if (p->s[p->i] == ',') {
      p->i++;
      continue;
    }
    if (p->s[p->i] == '}') {
      p->i++;
      break;
    }
    if (!p->s[p->i]) perr(p, open, "unterminated '{' (expected '}')");
    else perr(p, p->i, "expected ',' or '}', found %s", found(p, fb));
    goto fail;
  }
  it->nconfig = (int32_t)keys.len;
  it->keys = (char **)keys.items;
  it->values = (char **)vals.items;
  return 0;
fail:
  for (size_t k = 0; k < keys.len; k++) gp_free(keys.items[k]);
  for (size_t k = 0; k < vals.len; k++) gp_free(vals.items[k]);
  gp_vec_free(&keys);
  gp_vec_free(&vals);
  return -1;
}

int gp_pipeline_parse(const char *text, GPPipeline *out) {
  out->n = 0;
  out->items = NULL;
  if (!text) {
    gp_error_set(GP_ERR_VALUE, "pipeline is NULL");
    return -1;
  }
  P p = {.s = text, .i = 0, .line = 1, .line_start = 0};
  GPPipelineItem *items = NULL;
  size_t n = 0, cap = 0;
  char fb[16];
  skip_ws(&p);
  if (!text[p.i]) return 0; /* empty pipeline */
  for (;;) {
    skip_ws(&p);
    if (!is_name_char(text[p.i])) {
      perr(&p, p.i, "expected a pass name, found %s", found(&p, fb));
      goto fail;
    }
    GPPipelineItem it = {0};
    it.col = col_of(&p, p.i);
    it.name = take_name(&p);
    skip_ws(&p);
    if (text[p.i] == '{' && parse_config(&p, &it) != 0) {
      item_free(&it);
      goto fail;
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 8;
      items = gp_realloc(items, cap * sizeof *items);
    }
    items[n++] = it;
    skip_ws(&p);
    if (!text[p.i]) break;
    if (text[p.i] != ',') {
      perr(&p, p.i, "expected ',' between passes, found %s", found(&p, fb));
      goto fail;
    }
    p.i++;
  }
  out->n = (int32_t)n;
  out->items = items;
  return 0;
fail:
  for (size_t k = 0; k < n; k++) item_free(&items[k]);
  gp_free(items);
  return -1;
}

void gp_pipeline_free(GPPipeline *p) {
  if (!p) return;
  for (int32_t i = 0; i < p->n; i++) item_free(&p->items[i]);
  gp_free(p->items);
  p->items = NULL;
  p->n = 0;
}
