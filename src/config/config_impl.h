/* Internal interface of the config module, shared by its files: the table-driven schema walker
 * (schema.c), the experiment's key tables (keys.c), the cross-key checks (validate.c) and the
 * seed reference's spellings (compat.c), all used by loading (load.c) and emitting (emit.c). */
#ifndef DT_CONFIG_IMPL_H
#define DT_CONFIG_IMPL_H

#include "dt/config.h"
#include "dt/yaml.h"

/* An experiment file's text, NUL-terminated (free() it); DT_ERR_CONFIG naming the file when it
 * is missing, not a regular file or larger than DT_YAML_MAX_BYTES. */
DT_MUST_USE dt_status config_read_file(const char *path, char **text, size_t *len);

/* ---- schema walker ---------------------------------------------------------------------- */

typedef struct schema_ctx {
  const char *file;
  const dt_registry *reg; /* the plug-ins whose keys the config may use */
  dt_config *warn;        /* where dt_key.applies warnings go (NULL: nowhere) */
  const dt_key *outer_keys; /* the table around the one being read, for applies' ^KEY (NULL: none) */
  const void *outer_base;
} schema_ctx;

/* Reads mapping `map` (may be NULL: all defaults) into `base` according to rows `keys`; `path`
 * is the key path of the map ("experiment.graph"). Keys of type DT_KEY_SPECIAL are left to the
 * caller (their nodes are marked used by it). Unknown keys fail with a suggestion. */
DT_MUST_USE dt_status schema_read(const schema_ctx *ctx, const dt_key *keys, const dt_ynode *map, const char *path, void *base);
/* Gives the current error the context of node n at key `path` (dt_error_where: the key, and
 * where n was read; "(top level)" names no key). Returns code. */
DT_MUST_USE dt_status schema_locate(dt_status code, const schema_ctx *ctx, const dt_ynode *n, const char *path);
/* Error for node n at `path`: "file:line:col: path: message", with that context as data.
 * Returns DT_ERR_CONFIG. */
DT_MUST_USE dt_status schema_error(const schema_ctx *ctx, const dt_ynode *n, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The closest of `n` candidates to `word` (edit distance), or NULL when none is close. */
const char *schema_nearest(const char *word, const char *const *cands, int n);
/* Parses scalar text as the row's type into dst (used for defaults and values). */
DT_MUST_USE dt_status schema_parse_scalar(const schema_ctx *ctx, const dt_key *key, const dt_ynode *n, const char *path,
                                          void *base);
/* Formats the value of row `key` in `base` as YAML scalar text. */
void schema_format(const dt_key *key, const void *base, char *buf, size_t size);

/* ---- the experiment's key tables (keys.c) -------------------------------------------------- */

extern const dt_key config_root_keys[];             /* experiment, problem_configs, sweep */
extern const dt_key config_model_keys[];            /* experiment.model (its `layers` row is special) */
extern const dt_key config_layer_keys[];            /* one item of experiment.model.layers */
extern const dt_key config_problem_keys[];          /* problem_configs.<name> */
extern const dt_key config_optimizer_common_keys[]; /* optimizer_config keys every algorithm has */
extern const char *const config_loss_names[];       /* experiment.loss values, by index */
extern const char *const config_layer_names[];      /* by dt_layer_kind */
extern const char *const config_metric_names[];     /* by dt_metric bit: DT_METRIC_COUNT_ names */

/* The experiment rows with the registry's parts filled in: the `dataset` row lists every problem
 * plug-in's dataset names, and each problem with keys gets its section among the rows, stored
 * in problem_opts[its index]. Every section is read and emitted whichever problem runs, so the
 * resolved config is complete. */
enum { CONFIG_MAX_DATASETS = 32 };
typedef struct experiment_table {
  dt_key rows[48];
  const char *datasets[CONFIG_MAX_DATASETS + 1];
  int dataset_problem[CONFIG_MAX_DATASETS]; /* registry index of the problem serving each name */
} experiment_table;

/* Fills t from reg; DT_ERR_INTERNAL when the registry holds more than the table can. */
DT_MUST_USE dt_status config_experiment_table_make(const dt_registry *reg, experiment_table *t);

/* The optimizer plug-in called `name` (or one of its aliases), or NULL. */
const dt_plugin *config_optimizer_named(const dt_registry *reg, const char *name);

/* ---- cross-key checks (validate.c) --------------------------------------------------------- */

/* What no single key can tell: names that would collide in the run folder, a graph type and its
 * schedule, each algorithm and a time-varying graph, the backend this build has, the metrics the
 * problem records. `root` is the tree cfg was read from; errors are positioned at its nodes. */
DT_MUST_USE dt_status config_validate(const schema_ctx *ctx, const dt_ynode *root, const dt_config *cfg);

/* ---- the seed reference's spellings (compat.c) --------------------------------------------- */

/* problem_configs.<name>.metrics_config.evaluate_frequency, the seed's spelling of
 * evaluate_frequency (problem is the problem's mapping; path its key path). */
DT_MUST_USE dt_status config_read_metrics_config(const schema_ctx *ctx, const dt_ynode *problem, const char *path,
                                                 dt_problem_config *pc);

/* Marks pc->seed_order_defaulted: a file in the seed's layout left update_order to its default,
 * so the run differs from the seed reference's (dt_config_order_note). */
void config_mark_seed_order(const schema_ctx *ctx, const dt_ynode *problem, dt_problem_config *pc);

/* ---- compose.c: include, extends, ${...}, ??? (on the tree, before the schema) ---- */

/* Merges root's include: files (relative to file, themselves composed) under its own keys. */
DT_MUST_USE dt_status config_compose_includes(dt_ynode *root, const char *file);
/* Problems' extends: (each problem's base's keys under its own). */
DT_MUST_USE dt_status config_compose_extends(dt_ynode *root, const char *file);
/* After --set: problems' extends:, then ${path} and ${oc.env:VAR[,default]}, then any ??? left
 * is an error naming its key. */
DT_MUST_USE dt_status config_compose_finish(dt_ynode *root, const char *file);

/* s as a message shows it: control, format and invisible code points (a zero-width space) as
 * <U+200B>; cut to fit size. */
void config_name_shown(const char *s, char *out, size_t size);

#endif
