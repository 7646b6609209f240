/* cv_tensor.c -- ONNX converters: shape ops, slice, gather, scatter, pad, .... */
#include "frontend/onnx/onnx_impl.h"

const OxConverter ox_cv_tensor[] = {
    {NULL, NULL, 0, NULL},
};
