/* k_sort.c -- kernels: topk, argsort, cumsum, cumprod, reverse. */
#include "kernel.h"

void gp_kernels_register_sort(void) {}
