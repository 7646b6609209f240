/* cv_extra.c -- ONNX converters: resize, image ops, quantization, the rest. */
#include "frontend/onnx/onnx_impl.h"

const OxConverter ox_cv_extra[] = {
    {NULL, NULL, 0, NULL},
};
