/*
 * report.c -- the self-contained HTML page of one run (`graphpass opt --report FILE.html`).
 *
 * Everything is inline: CSS, one small script, the diffs and the SVG graphs.  A Content
 * Security Policy forbids every network load.  What makes it usable for ResNet-50-sized runs:
 * the pass table and the op histogram are plain tables; each changed pass's diff sits in a
 * closed <details> (not laid out until opened), and each graph sits in a <template> (parsed
 * but inert: not rendered, no layout) that the script moves into the page when its <details>
 * is opened.  The script also filters the pass table, opens everything when the address ends
 * in #all (to print the page, and for the browser test) and marks the page ready
 * (data-gp-ready="1" on <html>), which the browser test reads back.
 */
#include "views.h"

#include <string.h>

void gp_html_escape(GPBuf *out, const char *s, size_t n) {
  size_t start = 0;
  for (size_t i = 0; i < n; i++) {
    const char *rep = NULL;
    switch (s[i]) {
    case '&': rep = "&amp;"; break;
    case '<': rep = "&lt;"; break;
    case '>': rep = "&gt;"; break;
    case '"': rep = "&quot;"; break;
    case '\'': rep = "&#39;"; break;
    default: continue;
    }
    gp_buf_put(out, s + start, i - start);
    gp_buf_puts(out, rep);
    start = i + 1;
  }
  gp_buf_put(out, s + start, n - start);
}

static void esc(GPBuf *out, const char *s) {
  if (s) gp_html_escape(out, s, strlen(s));
}

static const char css[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d1d28;background:#fafafc}"
    "header{background:#2b2d42;color:#fff;padding:14px 24px}header h1{margin:0 0 4px;font-size:20px}"
    "header .meta{opacity:.85;font-size:13px;word-break:break-all}main{padding:12px 24px 40px}"
    "h2{font-size:17px;margin:24px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}"
    "table{border-collapse:collapse;background:#fff;font-size:13px}"
    "th,td{border:1px solid #e0e0e8;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f0f0f6}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "td.note details{border:0;padding:0;margin:0}td.note summary{font-weight:400;color:#446}"
    "tr.skipped td{color:#8a8a99}tr.failed td{background:#fff0f0}tr.changed td.name{font-weight:600}"
    ".bar{display:inline-block;height:9px;background:#6c7ae0;vertical-align:middle;margin-right:6px}"
    ".status-ok{color:#8fe39a}.status-err{color:#ffb4b4}"
    "pre{background:#fff;border:1px solid #e0e0e8;padding:8px;overflow:auto;max-height:70vh;font-size:12px}"
    ".d-add{background:#e6ffec;display:block}.d-del{background:#ffebe9;display:block}"
    ".d-hunk{color:#6f42c1;display:block}.d-file{font-weight:700;display:block}"
    "details{margin:6px 0;background:#fff;border:1px solid #e0e0e8;padding:4px 10px}"
    "summary{cursor:pointer;font-weight:600}.graph{overflow:auto;max-height:85vh;border:1px solid #eee}"
    ".up{color:#1a7f37}.down{color:#cf222e}.note{color:#555;font-size:12px;white-space:pre-wrap}"
    "#filter{margin:4px 0 8px;padding:3px 6px;width:260px}";

/* No external anything; the graphs are moved in from inert templates on first open. */
static const char script[] =
    "(function(){\n"
    "  var f=document.getElementById('filter');\n"
    "  if(f){f.addEventListener('input',function(){\n"
    "    var q=f.value.toLowerCase();\n"
    "    var rows=document.querySelectorAll('#passes tbody tr');\n"
    "    for(var i=0;i<rows.length;i++){rows[i].style.display=rows[i].textContent.toLowerCase().indexOf(q)>=0?'':'none';}\n"
    "  });}\n"
    "  var ds=document.querySelectorAll('details[data-graph]');\n"
    "  for(var i=0;i<ds.length;i++){ds[i].addEventListener('toggle',function(ev){\n"
    "    var d=ev.target;if(!d.open||d.getAttribute('data-done'))return;\n"
    "    var t=document.getElementById(d.getAttribute('data-graph'));\n"
    "    var box=d.querySelector('.graph');\n"
    "    if(t&&box){box.appendChild(document.importNode(t.content,true));d.setAttribute('data-done','1');}\n"
    "  });}\n"
    "  if(location.hash==='#all'){var all=document.querySelectorAll('details');for(var j=0;j<all.length;j++)all[j].open=true;}\n"
    "  document.documentElement.setAttribute('data-gp-ready','1');\n"
    "})();\n";

/* A unified diff with one span per line, coloured by its first character. */
static void put_diff(GPBuf *out, const char *d) {
  gp_buf_puts(out, "<pre class=\"diff\">");
  while (*d) {
    const char *e = strchr(d, '\n');
    size_t n = e ? (size_t)(e - d) : strlen(d);
    const char *cls = NULL;
    if (n >= 3 && (strncmp(d, "---", 3) == 0 || strncmp(d, "+++", 3) == 0)) cls = "d-file";
    else if (n >= 2 && strncmp(d, "@@", 2) == 0) cls = "d-hunk";
    else if (n && d[0] == '+') cls = "d-add";
    else if (n && d[0] == '-') cls = "d-del";
    if (cls) gp_buf_printf(out, "<span class=\"%s\">", cls);
    gp_html_escape(out, d, n);
    gp_buf_puts(out, cls ? "</span>" : "\n");
    d += n + (e ? 1 : 0);
  }
  gp_buf_puts(out, "</pre>\n");
}

/* Notes in a table cell: the first three lines, the rest behind a <details>. */
static void put_notes(GPBuf *out, const char *notes) {
  if (!notes) return;
  const char *p = notes;
  for (int i = 0; i < 3 && p; i++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (!p || !*p) {
    esc(out, notes);
    return;
  }
  size_t more = 1;
  for (const char *q = p; *q; q++) more += *q == '\n';
  gp_html_escape(out, notes, (size_t)(p - notes));
  gp_buf_printf(out, "<details><summary>%zu more</summary>", more);
  esc(out, p);
  gp_buf_puts(out, "</details>");
}

/* The <svg> element of Graphviz's output (without its XML prolog and doctype). */
static void put_svg(GPBuf *out, const char *svg) {
  const char *s = strstr(svg, "<svg");
  if (s) gp_buf_puts(out, s);
}

void gp_report_html(GPBuf *out, const GPReport *r) {
  gp_buf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                   "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                   "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>graphpass: ");
  esc(out, r->title);
  gp_buf_printf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<header><h1>graphpass report: ", css);
  esc(out, r->title);
  gp_buf_puts(out, "</h1><div class=\"meta\">target <b>");
  esc(out, r->target);
  double pass_ms = 0;
  for (int64_t i = 0; i < r->npasses; i++) pass_ms += r->passes[i].depth ? 0 : r->passes[i].ms;
  gp_buf_printf(out, "</b> &middot; opt-level <b>%d</b> &middot; passes <b>%.3f ms</b> (the run with this report's "
                "instruments %.3f ms) &middot; ", (int)r->opt_level, pass_ms, r->total_ms);
  bool ok = r->status && strcmp(r->status, "ok") == 0;
  gp_buf_printf(out, "<span class=\"%s\">", ok ? "status-ok" : "status-err");
  esc(out, r->status ? r->status : "?");
  gp_buf_puts(out, "</span></div><div class=\"meta\">pipeline: <code>");
  esc(out, r->pipeline);
  gp_buf_puts(out, "</code></div></header>\n<main>\n");

  /* passes */
  double max_ms = 0;
  int64_t nran = 0, nchanged = 0;
  for (int64_t i = 0; i < r->npasses; i++) {
    if (r->passes[i].ms > max_ms) max_ms = r->passes[i].ms;
    nran += r->passes[i].ran;
    nchanged += r->passes[i].changed;
  }
  gp_buf_printf(out, "<h2>Pipeline: %lld passes, %lld ran, %lld changed the module</h2>\n", (long long)r->npasses,
                (long long)nran, (long long)nchanged);
  gp_buf_puts(out, "<input id=\"filter\" type=\"search\" placeholder=\"filter passes\" aria-label=\"filter passes\">\n"
                   "<table id=\"passes\"><thead><tr><th>run</th><th>pass</th><th>status</th><th>time (ms)</th>"
                   "<th>changed</th><th>notes</th></tr></thead><tbody>\n");
  for (int64_t i = 0; i < r->npasses; i++) {
    const GPReportPass *p = &r->passes[i];
    gp_buf_printf(out, "<tr class=\"%s%s\"><td class=\"num\">", p->ran ? "ran" : "skipped",
                  p->changed ? " changed" : p->failed ? " failed" : "");
    if (p->ran) gp_buf_printf(out, "%lld", (long long)p->index);
    gp_buf_puts(out, "</td><td class=\"name\">");
    if (p->changed) gp_buf_printf(out, "<a href=\"#pass-%lld\">", (long long)i);
    esc(out, p->name);
    if (p->changed) gp_buf_puts(out, "</a>");
    gp_buf_printf(out, "</td><td>%s", p->failed ? "<b>failed</b>" : p->ran ? "ran" : "skipped");
    if (p->reason) {
      gp_buf_puts(out, " (");
      esc(out, p->reason);
      gp_buf_puts(out, ")");
    }
    gp_buf_puts(out, "</td><td class=\"num\">");
    if (p->ran) {
      int w = max_ms > 0 ? (int)(120.0 * p->ms / max_ms) : 0;
      gp_buf_printf(out, "<span class=\"bar\" style=\"width:%dpx\"></span>%.3f", w, p->ms);
    }
    gp_buf_printf(out, "</td><td>%s</td><td class=\"note\">", p->changed ? "yes" : p->ran ? "no" : "");
    put_notes(out, p->notes);
    gp_buf_puts(out, "</td></tr>\n");
  }
  gp_buf_puts(out, "</tbody></table>\n");

  /* op histogram */
  gp_buf_puts(out, "<h2>Ops before and after</h2>\n<table id=\"ops\"><thead><tr><th>op</th><th>before</th>"
                   "<th>after</th><th>change</th></tr></thead><tbody>\n");
  int64_t tb = 0, ta = 0;
  for (int64_t i = 0; i < r->nops; i++) {
    const GPReportOp *o = &r->ops[i];
    tb += o->before;
    ta += o->after;
    int64_t d = o->after - o->before;
    gp_buf_puts(out, "<tr><td>");
    esc(out, o->name);
    gp_buf_printf(out, "</td><td class=\"num\">%lld</td><td class=\"num\">%lld</td><td class=\"num %s\">", (long long)o->before,
                  (long long)o->after, d > 0 ? "up" : d < 0 ? "down" : "");
    if (d) gp_buf_printf(out, "%+lld", (long long)d);
    gp_buf_puts(out, "</td></tr>\n");
  }
  gp_buf_printf(out, "</tbody><tfoot><tr><th>all ops</th><th class=\"num\">%lld</th><th class=\"num\">%lld</th><th class=\"num\">",
                (long long)tb, (long long)ta);
  if (ta != tb) gp_buf_printf(out, "%+lld", (long long)(ta - tb));
  gp_buf_puts(out, "</th></tr></tfoot></table>\n");

  /* changed passes */
  gp_buf_puts(out, "<h2>Changes, pass by pass</h2>\n");
  if (!nchanged) gp_buf_puts(out, "<p>No pass changed the module.</p>\n");
  for (int64_t i = 0; i < r->npasses; i++) {
    const GPReportPass *p = &r->passes[i];
    if (!p->changed) continue;
    gp_buf_printf(out, "<section id=\"pass-%lld\"><h3>(%lld) ", (long long)i, (long long)p->index);
    esc(out, p->name);
    gp_buf_printf(out, " &middot; %.3f ms</h3>\n", p->ms);
    if (p->notes && *p->notes) {
      gp_buf_puts(out, "<div class=\"note\">");
      esc(out, p->notes);
      gp_buf_puts(out, "</div>\n");
    }
    if (p->diff && *p->diff) {
      size_t lines = 0;
      for (const char *q = p->diff; *q; q++) lines += *q == '\n';
      gp_buf_printf(out, "<details><summary>diff of the changed functions (%zu lines)</summary>\n", lines);
      put_diff(out, p->diff);
      gp_buf_puts(out, "</details>\n");
    }
    if (p->svg) {
      gp_buf_printf(out, "<details data-graph=\"graph-%lld\"><summary>graph after ", (long long)i);
      esc(out, p->name);
      gp_buf_printf(out, "</summary><div class=\"graph\"></div></details>\n<template id=\"graph-%lld\">", (long long)i);
      put_svg(out, p->svg);
      gp_buf_puts(out, "</template>\n");
    } else if (p->svg_note) {
      gp_buf_puts(out, "<p class=\"note\">graph: ");
      esc(out, p->svg_note);
      gp_buf_puts(out, "</p>\n");
    }
    gp_buf_puts(out, "</section>\n");
  }
  gp_buf_printf(out, "</main>\n<script>\n%s</script>\n</body>\n</html>\n", script);
}
