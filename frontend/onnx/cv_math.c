/* cv_math.c -- ONNX converters: elementwise math, logic, comparison, cast. */
#include "frontend/onnx/onnx_impl.h"

const OxConverter ox_cv_math[] = {
    {NULL, NULL, 0, NULL},
};
