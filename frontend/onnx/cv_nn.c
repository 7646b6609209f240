/* cv_nn.c -- ONNX converters: conv/pool variants, matmul, norms, softmax family. */
#include "frontend/onnx/onnx_impl.h"

const OxConverter ox_cv_nn[] = {
    {NULL, NULL, 0, NULL},
};
