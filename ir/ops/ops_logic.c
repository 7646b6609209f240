/* ops_logic.c -- built-in ops: comparisons, logical and bitwise ops, where. */
#include "ops.h"

void gp_ops_register_logic(void) {}
