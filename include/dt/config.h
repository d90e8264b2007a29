/* Experiment configuration: the YAML schema (as tables), loading with precise errors, overrides
 * from the command line, and the resolved config emitted back as YAML.
 *
 * Every key is described by a dt_key row (name, type, default, range, help); the same rows drive
 * parsing, validation, defaults, the emitted resolved config, `dtrun check` and
 * configs/README.md. Plug-ins (optimizers, problems) contribute their own rows through the
 * dt_registry handed to the loader; the core knows none of them by name. A loaded dt_config is
 * plain data (no pointers), so rank 0 can broadcast it as bytes. */
#ifndef DT_CONFIG_H
#define DT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dt/network.h"
#include "dt/nn.h"
#include "dt/status.h"

/* ---- schema rows ------------------------------------------------------------------------- */

typedef enum dt_key_type {
  DT_KEY_BOOL,    /* bool */
  DT_KEY_INT,     /* int, within [min, max] */
  DT_KEY_FLOAT,   /* double, within [min, max] */
  DT_KEY_SEED,    /* uint64_t */
  DT_KEY_STRING,  /* char[size] */
  DT_KEY_ENUM,    /* int index into values[] */
  DT_KEY_SECTION, /* nested mapping described by sub[] (stored at offset) */
  DT_KEY_SPECIAL, /* parsed by the owning module (metrics list, layers, problems, optimizer) */
  DT_KEY_FLOATS,  /* dt_floats: numbers within [min, max], at most size of them (0: DT_FLOATS_MAX); a
                     YAML list, or one scalar of comma-separated numbers (what --set and sweeps give);
                     no default but the empty list */
} dt_key_type;

enum { DT_FLOATS_MAX = 8 };
typedef struct dt_floats {
  int n;
  double v[DT_FLOATS_MAX];
} dt_floats;

enum {
  DT_KEY_REQUIRED = 1u << 0, /* no default: must be given */
  DT_KEY_NO_EMIT = 1u << 1,  /* input-only spelling (e.g. a shorthand); not in the resolved YAML */
  DT_KEY_MIN_OPEN = 1u << 2, /* DT_KEY_FLOAT: min itself is excluded, (min, max] */
  DT_KEY_PROBLEM_SECTION = 1u << 3, /* a problem plug-in's section: written out only for the problem that runs */
  DT_KEY_EMIT_IF_SET = 1u << 4, /* written out only when its value differs from its default (a model layer's
                                   optional keys, so that configs without them read back byte for byte) */
};

typedef struct dt_key {
  const char *name;
  dt_key_type type;
  size_t offset;             /* of the field in the struct the table describes */
  size_t size;               /* DT_KEY_STRING: capacity including the NUL; DT_KEY_FLOATS: most values */
  const char *def;           /* default, written as YAML text; NULL with DT_KEY_REQUIRED */
  double min, max;           /* DT_KEY_INT, DT_KEY_FLOAT: inclusive range */
  const char *const *values; /* DT_KEY_ENUM: NULL-terminated names */
  const char *const *value_aliases; /* DT_KEY_ENUM: NULL-terminated pairs "alias", "name" */
  const struct dt_key *sub;  /* DT_KEY_SECTION: rows of the nested mapping, ended by {0} */
  const char *alias_of;      /* another spelling of the key `alias_of` in the same table */
  const char *const *excludes; /* keys that may not be given together with this one */
  /* When the key has an effect (NULL: always): terms joined by ',' (all must hold), each
   * KEY=V1|V2, KEY!=V or KEY>X on a key of the same table (a dotted path into its sections) or,
   * as ^KEY, of the table around it. A key given a value other than its default where it has no
   * effect is warned about at its position (dt_config.warnings): inert, not wrong, so a sweep
   * may vary the key it depends on. */
  const char *applies;
  unsigned flags;
  const char *help;
} dt_key;

/* ---- resolved configuration ------------------------------------------------------------------ */

enum { DT_NAME_MAX = 128, DT_PATH_MAX = 1024, DT_MAX_PROBLEMS = 32, DT_OPTS_MAX = 256 };

typedef enum dt_split_type { DT_SPLIT_RANDOM = 0, DT_SPLIT_HETERO, DT_SPLIT_DIRICHLET } dt_split_type;
typedef enum dt_backend_kind { DT_BACKEND_CPU = 0, DT_BACKEND_CUDA, DT_BACKEND_AUTO } dt_backend_kind;
/* "cpu", "cuda" or "auto": the backend registry's name for the config's choice. */
const char *dt_backend_kind_name(int kind);
enum { DT_MAX_PROBLEM_PLUGINS = 8, DT_PROBLEM_OPTS_MAX = 64 };

/* Metrics a problem records (bit flags). */
typedef enum dt_metric {
  DT_METRIC_FORWARD_PASS_COUNT = 1u << 0,
  DT_METRIC_VALIDATION_LOSS = 1u << 1,
  DT_METRIC_CONSENSUS_ERROR = 1u << 2,
  DT_METRIC_TOP1_ACCURACY = 1u << 3,
  DT_METRIC_CURRENT_EPOCH = 1u << 4,
  DT_METRIC_CONSENSUS_MATRIX = 1u << 5, /* pairwise distances to <problem>_consensus.csv */
  DT_METRIC_COUNT_ = 6
} dt_metric;
const char *dt_metric_name(int bit);

typedef struct dt_graph_config {
  int num_nodes;
  int type; /* dt_graph_type */
  double p;
  int gen_attempts;
  int rows, cols, degree;
  double radius;
  double fiedler, fiedler_tolerance; /* random, geometric: target algebraic connectivity (0: off) */
  char edge_file[DT_PATH_MAX];
  int mixing; /* dt_mixing */
  int schedule;       /* dt_schedule_kind */
  int resample_every; /* resample: rounds per graph */
  bool directed;      /* arcs, push weights (dt_graph) */
} dt_graph_config;

/* Training-image augmentation (experiment.augment). */
typedef struct dt_augment_config {
  int crop_padding; /* random crop of the zero-padded image; 0: none */
  bool flip;        /* random horizontal flip */
} dt_augment_config;

/* The per-channel normalisation of images (experiment.normalize): empty lists keep the dataset's. */
typedef struct dt_normalize_config {
  dt_floats mean, std;
} dt_normalize_config;

typedef struct dt_model_config {
  int num_filters, kernel_size, linear_width; /* the seed CNN, used when layers is empty */
  int num_layers;                             /* > 0: the `layers:` list replaces the seed CNN */
  int name, norm, groups;                     /* a model by name (dt_model_name, dt_model_norm) */
  char init_file[DT_PATH_MAX];                /* initial weights from this file ("" : drawn from the seed) */
  int init_row;                               /* a models file's row (node) */
  dt_layer_spec layers[DT_MAX_LAYERS];
} dt_model_config;

typedef struct dt_solo_config {
  bool train_solo;
  int optimizer; /* dt_local_opt_kind */
  double lr;
  int epochs;
  int train_batch_size, val_batch_size;
  bool verbose;
} dt_solo_config;

typedef struct dt_experiment_config {
  char name[DT_NAME_MAX];
  char data_dir[DT_PATH_MAX];
  char output_metadir[DT_PATH_MAX];
  char batch_order[DT_PATH_MAX]; /* every node's minibatches from this file ("" : drawn from the seed) */
  bool writeout;
  bool use_cuda;
  int backend;         /* dt_backend_kind */
  bool tf32;           /* cuda: TF32 tensor-core GEMMs */
  int dataset;         /* index into the registry's dataset names, as the loader lists them */
  char dataset_name[DT_NAME_MAX]; /* experiment.dataset: mnist, fashion_mnist, synthetic, ... */
  char problem[DT_NAME_MAX];      /* the problem plug-in serving it (mnist, logreg) */
  int problem_index;              /* its place in the registry the config was loaded with */
  int data_split_type; /* dt_split_type */
  double dirichlet_alpha;
  int min_per_node;
  int loss;            /* 0 = NLL, the only loss */
  uint64_t seed;
  bool save_models;
  bool tensorboard;      /* stream TensorBoard event files under <run>/tensorboard/ */
  int tensorboard_train_loss_every; /* rounds between TensorBoard's train_loss_recent (0: none) */
  dt_augment_config augment;
  dt_network_spec network; /* the simulated clock; speed 0 (default): none */
  dt_normalize_config normalize;
  int checkpoint_every;      /* rounds; 0: by time only */
  double checkpoint_minutes; /* 0: not by time */
  /* Every registered problem's keys, in registry order (each its plug-in's options struct);
   * problem_opts[problem_index] are the chosen problem's. */
  _Alignas(16) unsigned char problem_opts[DT_MAX_PROBLEM_PLUGINS][DT_PROBLEM_OPTS_MAX];
  dt_graph_config graph;
  dt_model_config model;
  dt_solo_config individual_training;
} dt_experiment_config;

/* What an evaluation measures (problem_configs.<name>.evaluation). */
typedef enum dt_eval_nodes { DT_EVAL_ALL = 0, DT_EVAL_MEAN } dt_eval_nodes;
typedef struct dt_eval_config {
  int nodes;        /* dt_eval_nodes: every node's model, or the average model x̄ once */
  int test_samples; /* a fixed seeded subset of the test set; 0 = all of it */
  int sample;       /* > 0: only this many nodes, drawn once from the seed (dt_eval_sampled) */
} dt_eval_config;

/* How algorithms treat model buffers (problem_configs.<name>.buffers). */
typedef enum dt_buffers_mode { DT_BUFFERS_LOCAL = 0, DT_BUFFERS_MIX } dt_buffers_mode;

typedef struct dt_problem_config {
  char key[DT_NAME_MAX];          /* the entry's name under problem_configs */
  char problem_name[DT_NAME_MAX];
  int train_batch_size, val_batch_size;
  bool verbose_evals;
  int evaluate_frequency;
  unsigned metrics;               /* dt_metric bits */
  dt_eval_config evaluation;
  int buffers;                    /* dt_buffers_mode */
  bool full_batch;                /* gradients on the node's whole data set (convex problems) */
  double l2;                      /* λ of the λ/2‖θ‖² term added to every node's loss */
  char alg_name[32];              /* canonical optimizer name (aliases resolved) */
  int outer_iterations;           /* rounds */
  bool profile;
  /* Written in the seed's layout (metrics_config or problem_name) for an algorithm with an
   * update_order key that the file leaves out: the run says which order it takes (once). */
  bool seed_order_defaulted;
  _Alignas(16) unsigned char alg_opts[DT_OPTS_MAX]; /* the optimizer's own options struct */
} dt_problem_config;

enum { DT_CONFIG_WARNINGS_MAX = 4096 };

typedef struct dt_config {
  char source[DT_PATH_MAX]; /* file it was loaded from */
  dt_experiment_config experiment;
  int num_problems;
  dt_problem_config problems[DT_MAX_PROBLEMS];
  /* What loading found inert or doubtful, one "FILE:LINE:COL: key: what" per line (dt_key's
   * applies; dt_warning_add); printed by check and run. */
  char warnings[DT_CONFIG_WARNINGS_MAX];
} dt_config;

/* Keeps only the problems named in `list` ("dsgd,dsgt": entry names under problem_configs), in
 * the file's order (`--problem`): the run is then that config with those problems, as if the file
 * held only them (each problem starts from the same weights and streams either way). Errors
 * (DT_ERR_USAGE): a name that is not a problem, with the nearest and the list. */
DT_MUST_USE dt_status dt_config_keep_problems(dt_config *cfg, const char *list);

/* Adds a line to the warning lines in lines[size] (cfg->warnings, or set-up's own): a line already
 * there is not repeated, and one that does not fit is said in a last line. */
void dt_warning_add(char *lines, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The text of a key's applies condition ("type is random and fiedler is 0"; a|b|c as "a, b or c",
 * ^KEY as KEY) into buf: for the docs' key table and the warnings. */
void dt_key_applies_text(const char *applies, char *buf, size_t size);
/* The position of key `path` in cfg's file (as composed: includes, extends) into buf:
 * "FILE:LINE:COL", or "FILE:LINE:COL (KEY is not in the file: its default)" at its nearest
 * enclosing key. Not collective. */
void dt_config_key_where(const dt_config *cfg, const char *path, char *buf, size_t size);

/* The note a config with seed_order_defaulted problems gets (empty when none has): the seed
 * reference swept the nodes in place, dtrun's default is the synchronous update, and
 * `update_order: sequential` reproduces the reference. Lines of at most 100 columns (besides
 * the list of problems), each starting with prefix and ending in a newline. Returns whether
 * there is one. */
bool dt_config_order_note(const dt_config *cfg, const char *prefix, char *buf, size_t size);

/* ---- plug-ins, as the loader sees them ------------------------------------------------------ */

/* The config face of a plug-in: its names and the keys it adds. Optimizers (dt/optimizer.h) and
 * problems (dt/problem.h) each embed one; their registries are handed to the loader
 * (dt_registry), which is how the core reads and checks their keys without knowing them. */
typedef struct dt_plugin {
  const char *name;
  const char *const *aliases; /* other accepted names, NULL-terminated, or NULL */
  const char *summary;        /* one line for `dtrun check` and the docs */
  const dt_key *keys;         /* its keys, ended by {0} */
  size_t opts_size;           /* size of the struct the keys fill */
  /* Cross-key rules and shorthands after parsing (e.g. primal_lr); writes a message to err
   * (naming the keys) and returns false when the combination is invalid. May be NULL. */
  int (*finalize)(void *opts, int outer_iterations, char *err, size_t err_size);
} dt_plugin;

/* Whether s can name a file in a folder: not empty, "." or "..", without '/', '\\' or control
 * characters (experiment and problem names become file and folder names). */
bool dt_config_file_name_ok(const char *s);

/* The closest of n candidates to word (a likely typo or a unique abbreviation), or NULL: the
 * "did you mean" of config errors, also used by `dtrun compare`. */
const char *dt_nearest(const char *word, const char *const *cands, int n);

/* Whether `name` is p's name or one of its aliases. */
bool dt_plugin_named(const dt_plugin *p, const char *name);
/* p's options struct built in code (opts: size bytes, at least p->opts_size): every key at its
 * documented default; then dt_plugin_opts_set sets one numeric key (bool, int, enum index or
 * float) by name. DT_ERR_INTERNAL for a key p does not have. For code that runs a plug-in no
 * config names (the runner's individual training runs solo). */
/* "cadmm (dinno), dsgd, ...": the names of a NULL-ended plug-in list, aliases in parentheses
 * (config messages and `dtrun --version` print it). Truncated to size. */
void dt_plugin_list(const dt_plugin *const *plugins, char *buf, size_t size);
DT_MUST_USE dt_status dt_plugin_opts_init(const dt_plugin *p, void *opts, size_t size);
DT_MUST_USE dt_status dt_plugin_opts_set(const dt_plugin *p, void *opts, const char *key, double value);

/* A problem plug-in adds what the experiment section needs to know of it. */
typedef struct dt_problem_plugin {
  dt_plugin plugin;            /* name (mnist, logreg), summary, and its keys */
  const char *section;         /* the experiment key that holds its keys (synthetic), or NULL */
  const char *const *datasets; /* the experiment.dataset values it serves, NULL-terminated */
  bool reads_data_dir;         /* data_dir defaults to data/<dataset> */
  const char *loss;            /* the loss it trains: experiment.loss must name it */
  unsigned metrics;            /* dt_metric bits it can record */
} dt_problem_plugin;

/* What the loader is handed: the registered optimizers and problems, NULL-terminated. */
typedef struct dt_registry {
  const dt_plugin *const *optimizers;
  const dt_problem_plugin *const *problems;
} dt_registry;

/* ---- loading ------------------------------------------------------------------------------ */

/* Loads and validates path, applies the `--set key.path=value` overrides (num_overrides strings
 * "key.path=value"), fills every default. Errors are DT_ERR_CONFIG with a message
 * "FILE:LINE:COL: KEY.PATH: expected ..., found ...[; did you mean ...?]" (or naming the
 * override). Not collective: rank 0 loads, then broadcasts the struct. */
DT_MUST_USE dt_status dt_config_load(const char *path, const dt_registry *reg, const char *const *overrides,
                                     int num_overrides, dt_config *out);

/* The same from a string (tests); `name` stands for the file name in messages. */
DT_MUST_USE dt_status dt_config_load_string(const char *text, size_t len, const char *name, const dt_registry *reg,
                                            const char *const *overrides, int num_overrides, dt_config *out);

/* The same with a text for each override in messages (origins[i]; NULL, or a NULL entry:
 * "--set OVERRIDE"): a sweep names the line of the value it sets. */
DT_MUST_USE dt_status dt_config_load_overrides(const char *text, size_t len, const char *name, const dt_registry *reg, const char *const *overrides,
                                               const char *const *origins, int num_overrides, dt_config *out);

/* For an error found after loading (a graph, model or split the keys make impossible): re-reads
 * cfg's file and returns `code` with the current error message prefixed by FILE:LINE:COL of
 * key `path` ("experiment.model.layers[2]"), or of its nearest enclosing key when the key was
 * left to its default; the new error's context holds path and that position. Not collective. */
DT_MUST_USE dt_status dt_config_error_at(const dt_config *cfg, dt_status code, const char *path);

/* A config error found after loading (graph, data, split, model, output folder), placed at the
 * key its context names (dt_error_where()->key) with dt_config_error_at; any other status, an
 * error about no key and an error placed already are returned as they are. Not collective. */
DT_MUST_USE dt_status dt_config_positioned(const dt_config *cfg, dt_status st);

/* Emits the resolved config as YAML (libyaml emitter): every key, defaults included; loading it
 * again gives an identical dt_config. */
DT_MUST_USE dt_status dt_config_emit(const dt_config *cfg, const dt_registry *reg, FILE *f);

/* The same for a run folder's config.yaml: data_dir, output_metadir and edge_file made
 * absolute (the edge file against the config file's folder), so that the archived config runs
 * the same from any working directory. */
DT_MUST_USE dt_status dt_config_emit_archive(const dt_config *cfg, const dt_registry *reg, FILE *f);

/* Visits every documented key path ("experiment.graph.num_nodes",
 * "problem_configs.<name>.optimizer_config.<alg>.rho_init", ...) with its row; for
 * configs/README.md and the test that keeps it complete. */
typedef void (*dt_config_key_visitor)(const char *path, const dt_key *key, void *ctx);
void dt_config_visit_keys(const dt_registry *reg, dt_config_key_visitor visit, void *ctx);

#endif
