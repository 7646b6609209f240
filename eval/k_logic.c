/* k_logic.c -- kernels: comparisons, logical and bitwise ops, where. */
#include "kernel.h"

void gp_kernels_register_logic(void) {}
