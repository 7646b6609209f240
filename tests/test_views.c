/* test_views.c -- views/: the unified diff (applies back to its target, is minimal against an
 * LCS table on small inputs, stays bounded on huge unrelated ones), the DOT writer (through
 * Graphviz's `dot -Tsvg` when installed) and the HTML report generator. */
#include "test_helpers.h"
#include "../views/views.h"

#include <time.h>
#include <unistd.h>

/* ---- diff */

typedef struct TLines {
  int64_t n;
  char **l;
} TLines;

static TLines tsplit(const char *s) {
  TLines t = {0};
  size_t cap = 16;
  t.l = gp_malloc(cap * sizeof(char *));
  while (*s) {
    const char *e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if ((size_t)t.n == cap) t.l = gp_realloc(t.l, (cap *= 2) * sizeof(char *));
    t.l[t.n++] = gp_strndup(s, len);
    s += len + (e ? 1 : 0);
  }
  return t;
}

static void tfree(TLines *t) {
  for (int64_t i = 0; i < t->n; i++) gp_free(t->l[i]);
  gp_free(t->l);
}

/* Apply a unified diff to a; the result must be b, and the hunks must agree with a. */
static void check_applies(const char *a, const char *b, const char *diff) {
  TLines A = tsplit(a), B = tsplit(b), Dl = tsplit(diff);
  GPBuf got = {0};
  int64_t ai = 0, k = 0;
  if (Dl.n) {
    cr_assert(strncmp(Dl.l[0], "--- ", 4) == 0 && strncmp(Dl.l[1], "+++ ", 4) == 0, "header: %s", diff);
    k = 2;
  }
  while (k < Dl.n) {
    long long as, ac = 1, bs, bc = 1;
    const char *h = Dl.l[k];
    cr_assert(strncmp(h, "@@ -", 4) == 0, "hunk header expected: '%s'", h);
    char *p = (char *)h + 4;
    as = strtoll(p, &p, 10);
    if (*p == ',') ac = strtoll(p + 1, &p, 10);
    cr_assert(strncmp(p, " +", 2) == 0);
    bs = strtoll(p + 2, &p, 10);
    if (*p == ',') bc = strtoll(p + 1, &p, 10);
    (void)bs;
    int64_t start = ac ? as - 1 : as;
    cr_assert(start >= ai, "hunks out of order");
    for (; ai < start; ai++) gp_buf_printf(&got, "%s\n", A.l[ai]);
    k++;
    long long seen_a = 0, seen_b = 0;
    while (k < Dl.n && Dl.l[k][0] != '@') {
      const char *l = Dl.l[k++];
      if (l[0] == ' ' || l[0] == '-') {
        cr_assert(ai < A.n && strcmp(A.l[ai], l + 1) == 0, "context/removed line '%s' is not line %lld of a", l + 1,
                  (long long)ai + 1);
        if (l[0] == ' ') gp_buf_printf(&got, "%s\n", l + 1);
        ai++;
        seen_a++;
      }
      if (l[0] == ' ' || l[0] == '+') seen_b++;
      if (l[0] == '+') gp_buf_printf(&got, "%s\n", l + 1);
    }
    cr_assert_eq(seen_a, ac, "hunk %s: %lld lines of a", h, seen_a);
    cr_assert_eq(seen_b, bc, "hunk %s: %lld lines of b", h, seen_b);
  }
  for (; ai < A.n; ai++) gp_buf_printf(&got, "%s\n", A.l[ai]);
  GPBuf want = {0};
  for (int64_t j = 0; j < B.n; j++) gp_buf_printf(&want, "%s\n", B.l[j]);
  cr_assert_str_eq(got.data ? got.data : "", want.data ? want.data : "", "diff does not give b:\n%s", diff);
  gp_buf_free(&got);
  gp_buf_free(&want);
  tfree(&A);
  tfree(&B);
  tfree(&Dl);
}

static int64_t lcs(const char *a, const char *b) {
  TLines A = tsplit(a), B = tsplit(b);
  int64_t *t = gp_calloc((size_t)((A.n + 1) * (B.n + 1)), sizeof(int64_t));
  for (int64_t i = 1; i <= A.n; i++)
    for (int64_t j = 1; j <= B.n; j++) {
      int64_t *c = &t[i * (B.n + 1) + j];
      if (strcmp(A.l[i - 1], B.l[j - 1]) == 0)
        *c = t[(i - 1) * (B.n + 1) + j - 1] + 1;
      else {
        int64_t u = t[(i - 1) * (B.n + 1) + j], l = t[i * (B.n + 1) + j - 1];
        *c = u > l ? u : l;
      }
    }
  int64_t r = t[A.n * (B.n + 1) + B.n];
  gp_free(t);
  int64_t na = A.n, nb = B.n;
  tfree(&A);
  tfree(&B);
  return na + nb - 2 * r; /* the minimal number of changed lines */
}

static char *random_text(uint64_t *seed, int lines, int alphabet) {
  GPBuf b = {0};
  for (int i = 0; i < lines; i++) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    gp_buf_printf(&b, "line %d\n", (int)((*seed >> 33) % (uint64_t)alphabet));
  }
  return gp_buf_take(&b);
}

Test(views, diff_small_examples) {
  GPBuf out = {0};
  cr_assert_eq(gp_diff_unified(&out, "a\nb\nc\n", 6, "a\nb\nc\n", 6, "x", "y", 3), 0);
  cr_assert_eq(out.len, 0, "equal texts give no diff");
  const char *a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n";
  const char *b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n12\n13\n";
  cr_assert_eq(gp_diff_unified(&out, a, strlen(a), b, strlen(b), "before", "after", 2), 3);
  cr_assert_str_eq(out.data, "--- before\n+++ after\n"
                             "@@ -3,5 +3,5 @@\n 3\n 4\n-5\n+five\n 6\n 7\n"
                             "@@ -11,2 +11,3 @@\n 11\n 12\n+13\n");
  check_applies(a, b, out.data);
  gp_buf_free(&out);
  /* from empty and to empty */
  cr_assert_eq(gp_diff_unified(&out, "", 0, "x\ny\n", 4, "a", "b", 3), 2);
  cr_assert_str_eq(out.data, "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n");
  gp_buf_free(&out);
}

Test(views, diff_is_correct_and_minimal_on_random_inputs) {
  uint64_t seed = 12345;
  for (int round = 0; round < 300; round++) {
    int na = (int)(seed >> 40) % 40, nb = (int)(seed >> 20) % 40;
    char *a = random_text(&seed, na, 2 + round % 7);
    char *b = random_text(&seed, nb, 2 + round % 7);
    GPBuf out = {0};
    int64_t ch = gp_diff_unified(&out, a, strlen(a), b, strlen(b), "a", "b", round % 4);
    check_applies(a, b, out.data ? out.data : "");
    cr_assert_eq(ch, lcs(a, b), "round %d: %lld changed lines, minimal is %lld", round, (long long)ch,
                 (long long)lcs(a, b));
    gp_buf_free(&out);
    gp_free(a);
    gp_free(b);
  }
}

Test(views, diff_of_huge_unrelated_texts_is_bounded_and_correct) {
  /* 200k lines against 200k other lines: Myers would need ~4e10 steps; the budget makes the
   * remainder one replacement */
  GPBuf a = {0}, b = {0};
  for (int i = 0; i < 200000; i++) {
    gp_buf_printf(&a, "a%d\n", i);
    gp_buf_printf(&b, "b%d\n", i);
  }
  GPBuf out = {0};
  int64_t ch = gp_diff_unified(&out, a.data, a.len, b.data, b.len, "a", "b", 3);
  cr_assert_eq(ch, 400000);
  check_applies(a.data, b.data, out.data);
  gp_buf_free(&out);
  gp_buf_free(&a);
  gp_buf_free(&b);
}

/* ---- dot */

static bool have_tool(const char *name) {
  GPBuf b = {0};
  gp_buf_printf(&b, "command -v %s >/dev/null 2>&1", name);
  int rc = system(b.data);
  gp_buf_free(&b);
  return rc == 0;
}

Test(views, dot_of_a_fused_module_renders_with_graphviz) {
  char *bin = th_path("bin/graphpass");
  char dir[] = "/tmp/gp_dot_XXXXXX";
  cr_assert(mkdtemp(dir));
  GPBuf cmd = {0};
  gp_buf_printf(&cmd, "%s dot examples/resnet_block.relay --pipeline FuseOps -o %s/g.dot", bin, dir);
  char *out;
  cr_assert_eq(th_run(cmd.data, &out), 0, "%s", out);
  gp_free(out);
  char p[300];
  snprintf(p, sizeof p, "%s/g.dot", dir);
  char *dot = th_read(p, NULL);
  cr_assert(strncmp(dot, "digraph \"main\" {", 16) == 0, "%s", dot);
  cr_assert(strstr(dot, "subgraph cluster_"), "primitive functions are clusters");
  cr_assert(strstr(dot, "label=\"Primitive\""), "%s", dot);
  cr_assert(strstr(dot, "nn.conv2d\\n(1, 16, 32, 32) float32"), "op nodes show output shape and dtype");
  cr_assert(strstr(dot, "const () float32 = 2"), "scalar constants show their value");
  cr_assert(strstr(dot, "call Primitive"), "calls of primitive functions");
  gp_free(dot);
  if (have_tool("dot")) {
    gp_buf_free(&cmd);
    gp_buf_printf(&cmd, "dot -Tsvg %s/g.dot -o %s/g.svg", dir, dir);
    cr_assert_eq(th_run(cmd.data, &out), 0, "dot -Tsvg failed: %s", out);
    cr_assert_eq(out[0], 0, "dot printed warnings: %s", out);
    gp_free(out);
    snprintf(p, sizeof p, "%s/g.svg", dir);
    char *svg = th_read(p, NULL);
    cr_assert(strstr(svg, "<svg") && strstr(svg, "nn.conv2d"), "svg");
    gp_free(svg);
  } else {
    cr_log_warn("Graphviz's dot is not installed (sh scripts/install-deps.sh): DOT not rendered");
  }
  /* constants with bytes, a composite cluster, a missing function */
  gp_buf_free(&cmd);
  gp_buf_printf(&cmd, "%s dot tests/data/params/consts.relay --pipeline FoldConstant", bin);
  cr_assert_eq(th_run(cmd.data, &out), 0, "%s", out);
  cr_assert(strstr(out, "const (4, 4) float32\\n64 bytes"), "%s", out);
  gp_free(out);
  gp_buf_free(&cmd);
  gp_buf_printf(&cmd, "%s dot tests/data/params/consts.relay --function nope", bin);
  cr_assert_eq(th_run(cmd.data, &out), 2, "%s", out);
  cr_assert(strstr(out, "no function @nope (the module has @main)"), "%s", out);
  gp_free(out);
  gp_buf_free(&cmd);
  gp_buf_printf(&cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd.data), 0);
  gp_buf_free(&cmd);
  gp_free(bin);
}

/* ---- the HTML report in a real browser */

/* Load `html` in headless chromium: the DOM after scripts ran into *dom, the console lines
 * (":CONSOLE" in chromium's log) into *console.  False when chromium is not installed. */
static bool th_chromium(const char *html, char **dom, char **console) {
  const char *names[] = {"chromium", "chromium-browser", "google-chrome"};
  const char *exe = NULL;
  for (size_t i = 0; i < GP_ARRAY_LEN(names) && !exe; i++)
    if (have_tool(names[i])) exe = names[i];
  if (!exe) return false;
  char dir[] = "/tmp/gp_chrome_XXXXXX";
  cr_assert(mkdtemp(dir));
  GPBuf cmd = {0};
  gp_buf_printf(&cmd,
                "timeout 60 %s --headless --disable-gpu --no-sandbox --no-first-run --disable-extensions "
                "--user-data-dir=%s/profile --enable-logging=stderr --v=0 --virtual-time-budget=2000 "
                "--dump-dom 'file://%s' >%s/dom.html 2>%s/log.txt",
                exe, dir, html, dir, dir);
  int rc = system(cmd.data);
  cr_assert_eq(rc, 0, "%s failed (%d)", cmd.data, rc);
  char p[256];
  snprintf(p, sizeof p, "%s/dom.html", dir);
  *dom = th_read(p, NULL);
  snprintf(p, sizeof p, "%s/log.txt", dir);
  char *log = th_read(p, NULL);
  GPBuf c = {0};
  for (char *l = log; *l;) {
    char *e = strchr(l, '\n');
    size_t n = e ? (size_t)(e - l) : strlen(l);
    if (memmem(l, n, ":CONSOLE", 8)) {
      gp_buf_put(&c, l, n);
      gp_buf_putc(&c, '\n');
    }
    l += n + (e ? 1 : 0);
  }
  *console = gp_buf_take(&c);
  gp_free(log);
  gp_buf_free(&cmd);
  gp_buf_printf(&cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd.data), 0);
  gp_buf_free(&cmd);
  return true;
}

static char *write_tmp(const char *text, const char *suffix) {
  char path[] = "/tmp/gp_page_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  GPBuf b = {0};
  gp_buf_printf(&b, "%s%s", path, suffix);
  cr_assert_eq(rename(path, b.data), 0);
  FILE *f = fopen(b.data, "wb");
  cr_assert(f);
  fputs(text, f);
  fclose(f);
  return gp_buf_take(&b);
}

Test(views, browser_check_sees_console_errors) {
  /* the detector itself: a page with a script error must be caught */
  char *page = write_tmp("<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>",
                         ".html");
  char *dom, *console;
  if (!th_chromium(page, &dom, &console)) {
    unlink(page);
    gp_free(page);
    cr_skip_test("chromium is not installed (sh scripts/install-deps.sh installs it)");
  }
  cr_assert(strstr(console, "undefinedFunction"), "the console error was not seen: '%s'", console);
  unlink(page);
  gp_free(page);
  gp_free(dom);
  gp_free(console);
}

Test(views, report_page_loads_without_console_errors) {
  GPReportPass passes[3] = {
      {.name = "InferType", .index = 1, .ran = true, .reason = "required by FoldConstant", .ms = 0.5},
      {.name = "FoldConstant", .index = 2, .ran = true, .changed = true, .ms = 1.25,
       .notes = "folded 3 calls (36 bytes materialized)",
       .diff = "--- @main before FoldConstant\n+++ @main after FoldConstant\n@@ -1,2 +1,2 @@\n-  %0 = full(1f);\n+  <x & 'y'>\n",
       .svg = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\">"
              "<text x=\"1\" y=\"9\">nn.conv2d</text></svg>\n"},
      {.name = "FuseOps", .ran = false, .reason = "opt-level 1 > context opt-level 0"},
  };
  GPReportOp ops[2] = {{"full", 3, 0}, {"nn.conv2d", 1, 1}};
  GPReport r = {.title = "model <1>.relay", .pipeline = "FoldConstant,FuseOps", .target = "llvm", .opt_level = 0,
                .total_ms = 2.0, .status = "ok", .npasses = 3, .passes = passes, .nops = 2, .ops = ops};
  GPBuf html = {0};
  gp_report_html(&html, &r);
  cr_assert(strstr(html.data, "model &lt;1&gt;.relay"), "titles are escaped");
  cr_assert(strstr(html.data, "&lt;x &amp; &#39;y&#39;&gt;"), "diff lines are escaped");
  cr_assert_null(strstr(html.data, "<?xml"), "the SVG's prolog is dropped");
  cr_assert_null(strstr(html.data, "src="), "nothing loaded from elsewhere");
  cr_assert_null(strstr(html.data, "href=\"http"), "no links out");
  char *page = write_tmp(html.data, ".html");
  gp_buf_free(&html);
  char *dom, *console;
  if (!th_chromium(page, &dom, &console)) {
    unlink(page);
    gp_free(page);
    cr_skip_test("chromium is not installed (sh scripts/install-deps.sh installs it)");
  }
  cr_assert_str_eq(console, "", "console messages while loading the report:\n%s", console);
  cr_assert(strstr(dom, "data-gp-ready=\"1\""), "the report's script did not run to its end");
  for (int i = 0; i < 3; i++) cr_assert(strstr(dom, passes[i].name), "the page does not name %s", passes[i].name);
  unlink(page);
  gp_free(page);
  gp_free(dom);
  gp_free(console);
}

/* ---- graphpass opt: bisection, print-changed, filtered prints, the report */

#define BROKEN_PIPE "SimplifyInference,TestCopy,FoldConstant,TestSkewRelu,FuseOps"

static int run_opt(const char *args, char **out) {
  char *bin = th_path("bin/graphpass");
  char *plugin = th_path("tests/plugins/libbroken_plugin.so");
  GPBuf cmd = {0};
  gp_buf_printf(&cmd, "%s opt --plugin %s %s", bin, plugin, args);
  int rc = th_run(cmd.data, out);
  gp_buf_free(&cmd);
  gp_free(bin);
  gp_free(plugin);
  return rc;
}

Test(views, opt_bisect_limit_numbers_runs_and_skips_after_the_limit) {
  char *out;
  int rc = run_opt("examples/resnet_block.relay --pipeline " BROKEN_PIPE " --opt-bisect-limit=3 -o /dev/null", &out);
  cr_assert_eq(rc, 0, "%s", out);
  /* InferType is required by SimplifyInference: it is run (1) */
  const char *want[] = {"BISECT: running pass (1) InferType on @main",
                        "BISECT: running pass (2) SimplifyInference on @main",
                        "BISECT: running pass (3) TestCopy on @main",
                        "BISECT: NOT running pass (4) FoldConstant on @main",
                        "BISECT: NOT running pass (5) TestSkewRelu on @main",
                        "BISECT: NOT running pass (7) FuseOps on @main"};
  const char *at = out;
  for (size_t i = 0; i < GP_ARRAY_LEN(want); i++) {
    const char *p = strstr(at, want[i]);
    cr_assert(p, "missing (in order) '%s' in:\n%s", want[i], out);
    at = p;
  }
  gp_free(out);
  /* limit 0 runs nothing: the output is the input, typed or not */
  rc = run_opt("examples/resnet_block.relay --pipeline " BROKEN_PIPE " --opt-bisect-limit 0 -o /dev/null --explain",
               &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "explain: TestSkewRelu: skipped (skipped by instrument 'graphpass.views')"), "%s", out);
  cr_assert_null(strstr(out, "BISECT: running"), "%s", out);
  gp_free(out);
  rc = run_opt("examples/resnet_block.relay --opt-bisect-limit -3", &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "--opt-bisect-limit '-3' is not a non-negative integer"), "%s", out);
  gp_free(out);
}

Test(views, bisect_numerics_names_the_broken_pass) {
  char *out;
  int rc = run_opt("examples/resnet_block.relay --pipeline " BROKEN_PIPE " --bisect-numerics -o /dev/null", &out);
  cr_assert_eq(rc, 3, "a bad run is exit 3: %s", out);
  cr_assert(strstr(out, "BISECT: the first bad run is (5) TestSkewRelu"), "%s", out);
  cr_assert(strstr(out, "error: --bisect-numerics: pass TestSkewRelu (run 5) changes the numbers of @main output 0"),
            "%s", out);
  gp_free(out);
  /* without the broken pass nothing is bad, and the run goes on to write its output */
  rc = run_opt("examples/resnet_block.relay --pipeline SimplifyInference,TestCopy,FoldConstant,FuseOps "
               "--bisect-numerics -o /dev/null",
               &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "BISECT: @main's outputs stay within tolerance after all 6 runs: no bad run"), "%s", out);
  gp_free(out);
}

Test(views, print_changed_prints_diffs_of_changed_functions_only) {
  char *out;
  int rc = run_opt("tests/data/params/consts.relay --pipeline FoldConstant,TestCopy,FuseOps --print-changed -o /dev/null",
                   &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "; IR changed by (1) FoldConstant:\n--- @main before (1) FoldConstant\n+++ @main after (1) "
                        "FoldConstant\n@@ "),
            "%s", out);
  cr_assert(strstr(out, "\n-  %0 = full(0.25f"), "%s", out);
  cr_assert(strstr(out, "\n+  %0 = nn.dense(%x, meta[relay.Constant]"), "%s", out);
  cr_assert_null(strstr(out, "TestCopy:"), "an unchanged module prints nothing: %s", out);
  cr_assert_null(strstr(out, "by (2) InferType"), "InferType only adds types: %s", out);
  cr_assert(strstr(out, "; IR changed by (4) FuseOps:"), "%s", out);
  gp_free(out);
}

Test(views, filter_print_funcs_limits_print_after) {
  /* a module with two functions; only @f is printed */
  const char *text = "#[version = \"0.0.5\"]\n"
                     "def @f(%a: Tensor[(2), float32]) { nn.relu(%a) }\n"
                     "def @main(%x: Tensor[(2), float32]) { %0 = @f(%x); negative(%0) }\n";
  char *path = write_tmp(text, ".relay");
  GPBuf a = {0};
  gp_buf_printf(&a, "%s --pipeline TestCopy,FuseOps --print-after=TestCopy,FuseOps --filter-print-funcs=@f -o /dev/null",
                path);
  char *out;
  int rc = run_opt(a.data, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "; IR after (1) TestCopy:\ndef @f("), "%s", out);
  cr_assert(strstr(out, "; IR after (3) FuseOps:\ndef @f("), "%s", out);
  cr_assert_null(strstr(out, "def @main"), "@main is filtered out: %s", out);
  gp_free(out);
  gp_buf_free(&a);
  gp_buf_printf(&a, "%s --pipeline TestCopy --print-before NoSuchPass --filter-print-funcs f", path);
  rc = run_opt(a.data, &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "--print-before: no pass named 'NoSuchPass'"), "%s", out);
  gp_free(out);
  gp_buf_free(&a);
  unlink(path);
  gp_free(path);
}

Test(views, report_of_a_run_loads_in_the_browser_and_names_every_pass) {
  char *html = write_tmp("", ".html");
  GPBuf a = {0};
  gp_buf_printf(&a, "examples/resnet_block.relay --pipeline " BROKEN_PIPE ",DeadCodeElimination --opt-level 2 "
                    "--report %s --explain -o /dev/null",
                html);
  char *out;
  int rc = run_opt(a.data, &out);
  cr_assert_eq(rc, 0, "%s", out);
  /* the passes that ran or were skipped, as --explain names them */
  GPVec names = {0};
  for (char *l = strstr(out, "explain: "); l; l = strstr(l + 1, "\nexplain: ")) {
    char *s = l[0] == '\n' ? l + 10 : l + 9;
    char *c = strchr(s, ':');
    if (c && (strncmp(c, ": ran", 5) == 0 || strncmp(c, ": skipped", 9) == 0))
      gp_vec_push(&names, gp_strndup(s, (size_t)(c - s)));
  }
  cr_assert(names.len >= 7, "explain lines: %s", out);
  gp_free(out);
  size_t len;
  char *page = th_read(html, &len);
  cr_assert(strstr(page, "<h3>(5) TestSkewRelu"), "the changed pass has a section");
  cr_assert(strstr(page, "<span class=\"d-add\">+"), "a diff");
  if (have_tool("dot")) cr_assert(strstr(page, "<template id=\"graph-"), "a graph");
  cr_assert_null(strstr(page, "src=\""), "nothing loaded from elsewhere");
  gp_free(page);
  GPBuf url = {0};
  gp_buf_printf(&url, "%s#all", html); /* every <details> opened: the graphs go into the page */
  char *dom, *console;
  if (!th_chromium(url.data, &dom, &console)) {
    unlink(html);
    cr_skip_test("chromium is not installed (sh scripts/install-deps.sh installs it)");
  }
  cr_assert_str_eq(console, "", "console messages while loading the report:\n%s", console);
  cr_assert(strstr(dom, "data-gp-ready=\"1\""), "the report's script did not run to its end");
  for (size_t i = 0; i < names.len; i++) {
    cr_assert(strstr(dom, names.items[i]), "the page does not name %s", (char *)names.items[i]);
    gp_free(names.items[i]);
  }
  if (have_tool("dot")) cr_assert(strstr(dom, "<div class=\"graph\"><svg"), "the opened graph was not inserted");
  gp_vec_free(&names);
  gp_free(dom);
  gp_free(console);
  gp_buf_free(&url);
  gp_buf_free(&a);
  unlink(html);
  gp_free(html);
}

Test(views, report_of_a_failed_run_names_the_failure) {
  char *html = write_tmp("", ".html");
  GPBuf a = {0};
  gp_buf_printf(&a, "examples/resnet_block.relay --pipeline SimplifyInference,TestSkewRelu,FuseOps --verify-numerics "
                    "--report %s -o /dev/null",
                html);
  char *out;
  int rc = run_opt(a.data, &out);
  cr_assert_eq(rc, 3, "%s", out);
  gp_free(out);
  char *page = th_read(html, NULL);
  cr_assert(strstr(page, "<span class=\"status-err\">pass TestSkewRelu changed the numbers of @main output 0"),
            "the run's error is the status");
  cr_assert(strstr(page, "<tr class=\"ran failed\"><td class=\"num\">3</td><td class=\"name\">TestSkewRelu</td><td><b>failed"),
            "the failed pass is marked");
  gp_free(page);
  gp_buf_free(&a);
  unlink(html);
  gp_free(html);
}
