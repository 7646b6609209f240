/* ops_sort.c -- built-in ops: topk, argsort, cumsum, cumprod, reverse. */
#include "ops.h"

void gp_ops_register_sort(void) {}
