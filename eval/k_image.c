/* k_image.c -- kernels: image.resize2d and other image ops. */
#include "kernel.h"

void gp_kernels_register_image(void) {}
