/* cv_reduce.c -- ONNX converters: reductions, arg max/min, cumsum, topk. */
#include "frontend/onnx/onnx_impl.h"

const OxConverter ox_cv_reduce[] = {
    {NULL, NULL, 0, NULL},
};
