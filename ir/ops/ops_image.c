/* ops_image.c -- built-in ops: image.resize2d and other image ops. */
#include "ops.h"

void gp_ops_register_image(void) {}
