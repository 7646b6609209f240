/*
 * views.h -- seeing what the passes did (issue 17): text diffs, Graphviz DOT of a function, and
 * the self-contained HTML report of a run.  Part of the host library's core (compiled into
 * libgraphpass and the command); nothing here is in the ABI.  No recursion on graph depth or
 * input size: the diff's divide and conquer and every graph walk use explicit stacks.
 */
#ifndef GP_VIEWS_H
#define GP_VIEWS_H

#include "../ir/ir.h"

/* ---- views/diff.c: line diffs (Myers' O((N+M)D) algorithm in linear space)
 *
 * A unified diff ("--- name_a", "+++ name_b", "@@ -l,n +l,n @@" hunks with `context` lines
 * around changes) of two texts, appended to out.  Nothing is appended when they are equal.
 * The work is bounded: past about 4e8 line comparisons (or 1e4 edits in one subproblem), the
 * rest of a region is shown as removed and added whole, so huge or unrelated inputs still take
 * linear-ish time; the diff stays correct (applying it gives b), only maybe not minimal.
 * Returns the number of changed lines (removed + added). */
int64_t gp_diff_unified(GPBuf *out, const char *a, size_t alen, const char *b, size_t blen, const char *name_a,
                        const char *name_b, int context);

/* ---- views/dot.c: Graphviz DOT of one function
 *
 * Op calls are boxes labelled with the op and the output type (shape and dtype), parameters
 * ellipses, constants notes with shape, dtype and bytes; tuples and get-items small nodes;
 * functions inside the function (primitive, composite, external / Compiler) are clusters named
 * by their attributes, with their calls drawn as nodes of their own (labelled by the function
 * kind) inside the caller; global function calls name the callee.  Edges go from producers to
 * consumers.  `graph_name` becomes the digraph's id (quoted).  0, or -1 + error. */
int gp_dot_function(GPBuf *out, const GPFunctionExpr *fn, const char *graph_name);

/* ---- views/report.c: the HTML report
 *
 * The data of one run, filled by the caller; the report copies nothing and owns nothing. */
typedef struct GPReportOp {
  const char *name;
  int64_t before, after;
} GPReportOp;

typedef struct GPReportPass {
  const char *name;
  int64_t index;        /* run index across the pipeline (1-based), 0 when skipped */
  int32_t depth;        /* 0, or 1 + for a run a pass started itself (its time is in that pass's) */
  bool ran;
  bool changed;         /* the module changed */
  bool failed;          /* the pass, or a check after it, failed (the run stopped there) */
  const char *reason;   /* why it ran or was skipped; may be NULL */
  double ms;            /* time in the pass */
  const char *notes;    /* explain notes, one per line; may be NULL */
  const char *diff;     /* unified diff of the changed functions; may be NULL */
  const char *svg;      /* the graph after it (an <svg> element); may be NULL */
  const char *svg_note; /* why there is no graph (dot missing, too large); may be NULL */
} GPReportPass;

typedef struct GPReport {
  const char *title;    /* e.g. the input file */
  const char *pipeline; /* the pipeline as run */
  const char *target;
  int32_t opt_level;
  double total_ms;
  const char *status;   /* "ok" or the error message */
  int64_t npasses;
  const GPReportPass *passes;
  int64_t nops;
  const GPReportOp *ops; /* op histogram before and after */
} GPReport;

/* Write the page: one self-contained HTML document (inline CSS and a small inline script; no
 * network, fonts or external files).  Large diffs and graphs sit in <details> elements closed
 * by default, so the page opens quickly for ResNet-50-sized runs. */
void gp_report_html(GPBuf *out, const GPReport *r);
/* Append s with &, <, >, " and ' escaped. */
void gp_html_escape(GPBuf *out, const char *s, size_t n);

#endif /* GP_VIEWS_H */
