/* ops_annotation.c -- TVM's BYOC region annotations, annotation.compiler_begin and
 * annotation.compiler_end (attr compiler: the external compiler's name).  AnnotateTarget inserts
 * them on the edges of a region, MergeCompilerRegions removes those inside merged regions and
 * PartitionGraph lifts each region into a global function.  Both are identities for type
 * inference (any type, tuples included, as TVM's ForwardRel) and for the evaluator (their kernel
 * copies each input, k_transform.c); opaque and non-computational, so FuseOps and FoldConstant
 * leave them where they are. */
#include "ir/ops/ops.h"

static int annotation_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                          const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  *out = args[0];
  return 0;
}

static const GPAttrField k_compiler_attrs[] = {
    GP_F_REQ("compiler", GP_ATTR_STR),
};

void gp_ops_register_annotation(void) {
  gp_ops_def("annotation.compiler_begin", 1, GP_PATTERN_OPAQUE, GP_OP_NON_COMPUTATIONAL, k_compiler_attrs,
             (int32_t)GP_ARRAY_LEN(k_compiler_attrs), annotation_rel,
             "The start of a region offloaded to an external compiler (BYOC); an identity.");
  gp_ops_def("annotation.compiler_end", 1, GP_PATTERN_OPAQUE, GP_OP_NON_COMPUTATIONAL, k_compiler_attrs,
             (int32_t)GP_ARRAY_LEN(k_compiler_attrs), annotation_rel,
             "The end of a region offloaded to an external compiler (BYOC); an identity.");
}
