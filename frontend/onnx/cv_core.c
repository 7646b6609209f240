/* cv_core.c -- ONNX converters: the ops of the CNN models. */
#include "frontend/onnx/onnx_impl.h"

const OxConverter ox_cv_core[] = {
    {NULL, NULL, 0, NULL},
};
