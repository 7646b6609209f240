/*
 * registry_impl.h -- helpers shared by the files of registry/ (not part of registry.h).
 */
#ifndef GP_REGISTRY_IMPL_H
#define GP_REGISTRY_IMPL_H

#include "registry.h"

/* The global registry lock (passes and optimization sets).  Never held while a pass runs or
 * while a self_deleter runs. */
void gp_reg_lock(void);
void gp_reg_unlock(void);

/* [A-Za-z0-9_.-]+ */
bool gp_reg_name_valid(const char *name);

/* The registered pass name closest to `name` (edit distance, case-insensitive ties), or NULL;
 * gp_malloc'd.  Takes the lock. */
char *gp_reg_suggest(const char *name);

/* Set GP_ERR_NOT_FOUND "no such pass 'X'[ (<note>)][; did you mean 'Z'?]". */
void gp_reg_error_no_such_pass(const char *name, const char *note);

/* The full config key of `k` declared by pass `pass` ("Pass.key" unless key has a dot);
 * gp_malloc'd. */
char *gp_config_full_key(const char *pass, const GPConfigKey *k);

/* Find the pass declaring `full_key`: returns a new entry reference and the key index, or NULL
 * (no error). */
GPPassEntry *gp_config_find(const char *full_key, int32_t *key_index);

/* Every declared full key, sorted, joined with ", " (gp_malloc'd; "" when there are none). */
char *gp_config_all_keys(void);

/* Parse `text` as the type of `k`; a gp_malloc'd GPAny (a string value's bytes are stored in
 * the same allocation, so gp_free of the GPAny frees everything).  Errors GP_ERR_VALUE naming
 * `full_key` and the expected type. */
GPAny *gp_config_parse_value(const GPConfigKey *k, const char *full_key, const char *text);

/* Human name of a config type index: "int", "bool", "float", "string". */
const char *gp_config_type_name(int32_t type_index);

/* Edit distance (Levenshtein, case-sensitive). */
size_t gp_edit_distance(const char *a, const char *b);

/* The default pipeline of `target`: the selected set or "default" (gp_malloc'd), or NULL +
 * GP_ERR_NOT_FOUND naming the target and the known targets. */
char *gp_opt_set_default(const char *target);

/* Lock held: push a gp_strdup'd copy of every target name that has optimization sets. */
void gp_opt_set_targets_locked(GPVec *names);
/* Lock held: push target's set names and pipelines (borrowed, sorted by name); returns the
 * name of the set that runs by default (gp_malloc'd), or NULL when there is none. */
char *gp_opt_sets_of_locked(const char *target, GPVec *names, GPVec *pipelines);

/* Plan pipeline `p` for `target` as a run at the highest opt level would (registry/run.c
 * `plan`): 0, or -1 + error for an unregistered pass (GP_ERR_NOT_FOUND naming it), a
 * dependency cycle, a bad `{key=value}`. */
int gp_pipeline_check(const GPPipeline *p, const char *target);

/* The highest opt_level of any registered pass (0 when none).  Takes the lock. */
int32_t gp_pass_max_opt_level(void);

/* Drop every optimization set (gp_registry_shutdown). */
void gp_opt_sets_shutdown(void);

#endif /* GP_REGISTRY_IMPL_H */
