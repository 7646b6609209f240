/* error.c -- the per-thread error slot (kind + message).
 * The message lives in a fixed thread-local buffer, so a thread that exits with an error
 * pending leaks nothing; messages longer than the buffer are cut with "...". */
#include "ir.h"

#include <stdio.h>
#include <string.h>

#define GP_ERROR_CAP 8192

typedef struct {
  int32_t kind;
  char msg[GP_ERROR_CAP];
} ErrorSlot;

static _Thread_local ErrorSlot slot;

static void mark_truncated(int n) {
  if (n >= GP_ERROR_CAP) memcpy(slot.msg + GP_ERROR_CAP - 4, "...", 4);
}

void gp_error_setv(int32_t kind, const char *fmt, va_list ap) {
  int n = vsnprintf(slot.msg, GP_ERROR_CAP, fmt, ap);
  if (n < 0) snprintf(slot.msg, GP_ERROR_CAP, "(unformattable error message)");
  mark_truncated(n);
  slot.kind = kind ? kind : GP_ERR_INTERNAL;
}

void gp_error_set(int32_t kind, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gp_error_setv(kind, fmt, ap);
  va_end(ap);
}

int32_t gp_error_kind(void) { return slot.kind; }

const char *gp_error_message(void) { return slot.kind ? slot.msg : ""; }

void gp_error_clear(void) {
  slot.kind = GP_OK;
  slot.msg[0] = 0;
}

void gp_error_prefix(const char *fmt, ...) {
  char old[GP_ERROR_CAP];
  if (slot.kind)
    memcpy(old, slot.msg, sizeof old);
  else
    old[0] = 0;
  old[GP_ERROR_CAP - 1] = 0;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(slot.msg, GP_ERROR_CAP, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if (n < GP_ERROR_CAP) {
    int m = snprintf(slot.msg + n, (size_t)(GP_ERROR_CAP - n), ": %s", old);
    mark_truncated(n + m);
  } else {
    mark_truncated(n);
  }
  if (!slot.kind) slot.kind = GP_ERR_INTERNAL;
}

void gp_error_set_kind(int32_t kind) {
  if (slot.kind) slot.kind = kind;
}
