/* targets_cmd.c -- `graphpass targets`: every target, one block each: who registered it, its
 * optimization sets with their pipelines, and its kernels (ops and composites). */
#include "../plugin/plugin.h"
#include "../registry/registry.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* The kernels of v that are (want_ops) or are not (!want_ops) registered ops, ", "-joined. */
static void print_kernels(const GPTargetView *v, bool want_ops) {
  int printed = 0;
  for (int32_t k = 0; k < v->num_kernels; k++) {
    bool is_op = gp_op_find(v->kernels[k]) != NULL;
    if (is_op != want_ops) continue;
    printf("%s%s", printed++ ? ", " : "", v->kernels[k]);
  }
  if (!printed) fputs("none", stdout);
}

static void print_target(const GPTargetView *v) {
  if (v->registered)
    printf("target %s (%s%s)\n", v->name, strcmp(v->origin, "host") == 0 ? "" : "plugin ",
           strcmp(v->origin, "host") == 0 ? "host" : v->origin);
  else
    printf("target %s (not registered: optimization sets only, no kernels)\n", v->name);
  if (v->help) printf("  %s\n", v->help);
  if (!v->num_sets) {
    printf("  optimization sets: none\n");
  } else {
    printf("  optimization sets:\n");
    for (int32_t s = 0; s < v->num_sets; s++) {
      bool def = v->default_set && strcmp(v->default_set, v->set_names[s]) == 0;
      printf("    %s%s: %s\n", v->set_names[s], def ? " (runs by default)" : "", v->set_pipelines[s]);
    }
  }
  if (!v->registered) return;
  printf("  kernels:\n    ops: ");
  if (v->flags & GP_TARGET_ALL_OPS)
    fputs("all ops", stdout);
  else
    print_kernels(v, true);
  printf("\n    composites: ");
  print_kernels(v, false);
  putchar('\n');
}

int cmd_targets(int argc, char **argv) {
  PluginOpts po = {0};
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc) {
      if (po.nplugins == (int)(sizeof po.plugins / sizeof po.plugins[0])) {
        die_usage("targets: too many --plugin options (at most %s)", "64");
        return 2;
      }
      po.plugins[po.nplugins++] = argv[++i];
    } else if (strcmp(argv[i], "--no-default-plugins") == 0) {
      po.no_default_plugins = true;
    } else {
      die_usage(strcmp(argv[i], "--plugin") == 0 ? "targets: %s needs a value" : "targets: unexpected argument '%s'",
                argv[i]);
      return 2;
    }
  }
  if (load_plugins(&po) != 0) return report(1);
  GPTargetView *v;
  size_t n = gp_target_views(&v);
  if (!n) printf("no targets (load a plugin that registers one)\n");
  for (size_t i = 0; i < n; i++) {
    if (i) putchar('\n');
    print_target(&v[i]);
  }
  gp_target_views_free(v, n);
  return 0;
}
