/* The experiment schema (seed format plus dtrun's extensions), loading, overrides, the special
 * keys (problem_configs, metrics, layers, optimizer_config) and the resolved-config emitter.
 * Reference for every key: configs/README.md, generated from these tables. */
#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "config_impl.h"
#include "dt/graph.h"
#include "dt/local_opt.h"
#include "dt/schedule.h"
#include "dt_config.h"

#define INF 1e308
#define OFF(field) offsetof(dt_experiment_config, field)

static const char *const graph_types[] = {"wheel", "cycle", "complete", "star", "path", "random", "grid",
                                          "torus", "regular", "geometric", "exponential", "file", NULL};
static const char *const graph_type_aliases[] = {"ring", "cycle", "erdos_renyi", "random", NULL};
static const char *const mixing_names[] = {"metropolis", "uniform", NULL};
static const char *const split_names[] = {"random", "hetero", "dirichlet", NULL};
static const char *const backend_names[] = {"cpu", "cuda", "auto", NULL};
static const char *const loss_names[] = {"NLL", NULL};
static const char *const loss_aliases[] = {"nll", "NLL", NULL};
static const char *const layer_names[] = {"conv2d", "maxpool2d", "linear", "relu", "flatten", "dropout", NULL};
static const char *const metric_names[] = {"forward_pass_count", "validation_loss", "consensus_error",
                                           "top1_accuracy", "current_epoch", "consensus_matrix"};

const char *dt_backend_kind_name(int kind) { return kind >= 0 && kind <= DT_BACKEND_AUTO ? backend_names[kind] : "unknown"; }

const char *dt_metric_name(int bit) { return bit >= 0 && bit < DT_METRIC_COUNT_ ? metric_names[bit] : "unknown"; }

static const dt_key graph_keys[] = {
    {.name = "num_nodes", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, num_nodes), .def = "5", .min = 1, .max = 4096,
     .help = "number of graph nodes (agents)"},
    {.name = "type", .type = DT_KEY_ENUM, .offset = offsetof(dt_graph_config, type), .def = "cycle", .values = graph_types,
     .value_aliases = graph_type_aliases, .help = "topology; ring = cycle, erdos_renyi = random"},
    {.name = "p", .type = DT_KEY_FLOAT, .offset = offsetof(dt_graph_config, p), .def = "0.3", .min = 0, .max = 1, .flags = DT_KEY_MIN_OPEN,
     .help = "random: edge probability"},
    {.name = "gen_attempts", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, gen_attempts), .def = "100", .min = 1, .max = 1e6,
     .help = "random, regular, geometric: draws until a connected graph"},
    {.name = "rows", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, rows), .def = "0", .min = 0, .max = 4096,
     .help = "grid, torus: rows (0 = most square factorisation of num_nodes)"},
    {.name = "cols", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, cols), .def = "0", .min = 0, .max = 4096,
     .help = "grid, torus: columns (0 = num_nodes / rows)"},
    {.name = "degree", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, degree), .def = "3", .min = 1, .max = 4095,
     .help = "regular: degree k"},
    {.name = "radius", .type = DT_KEY_FLOAT, .offset = offsetof(dt_graph_config, radius), .def = "0.5", .min = 0, .max = 2,
     .flags = DT_KEY_MIN_OPEN,
     .help = "geometric: connection radius in the unit square"},
    {.name = "fiedler", .type = DT_KEY_FLOAT, .offset = offsetof(dt_graph_config, fiedler), .def = "0", .min = 0, .max = 4096,
     .help = "random, geometric: a target Fiedler value (algebraic connectivity); p or the radius is bisected to reach it, "
             "and the p or radius keys are not used (0: off)"},
    {.name = "fiedler_tolerance", .type = DT_KEY_FLOAT, .offset = offsetof(dt_graph_config, fiedler_tolerance), .def = "0.01",
     .min = 0, .max = 4096, .flags = DT_KEY_MIN_OPEN,
     .help = "with fiedler: accepted distance from the target; draws are redrawn (gen_attempts) until one is this close"},
    {.name = "edge_file", .type = DT_KEY_STRING, .offset = offsetof(dt_graph_config, edge_file), .size = DT_PATH_MAX, .def = "",
     .help = "file: path of an edge list, one 'u v' per line (relative to the config file)"},
    {.name = "mixing", .type = DT_KEY_ENUM, .offset = offsetof(dt_graph_config, mixing), .def = "metropolis", .values = mixing_names,
     .help = "mixing weights: metropolis (1/(1+max(deg_i,deg_j))) or uniform (1/(1+max degree))"},
    {.name = "schedule", .type = DT_KEY_ENUM, .offset = offsetof(dt_graph_config, schedule), .def = "static", .values = dt_schedule_names,
     .help = "time-varying graphs: static, one_peer_exponential (type exponential), random_matching (of the graph's edges) or "
             "resample (a new random/regular/geometric graph every resample_every rounds)"},
    {.name = "resample_every", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, resample_every), .def = "10", .min = 1, .max = 1e9,
     .help = "schedule resample: rounds between new graphs"},
    {0},
};

static const dt_key model_keys[] = {
    {.name = "num_filters", .type = DT_KEY_INT, .offset = offsetof(dt_model_config, num_filters), .def = "3", .min = 1, .max = 4096,
     .help = "seed CNN: convolution filters"},
    {.name = "kernel_size", .type = DT_KEY_INT, .offset = offsetof(dt_model_config, kernel_size), .def = "5", .min = 1, .max = 27,
     .help = "seed CNN: convolution kernel size"},
    {.name = "linear_width", .type = DT_KEY_INT, .offset = offsetof(dt_model_config, linear_width), .def = "64", .min = 1, .max = 1 << 20,
     .help = "seed CNN: hidden linear width"},
    {.name = "layers", .type = DT_KEY_SPECIAL,
     .help = "list of layers replacing the seed CNN: {type: conv2d|maxpool2d|linear|relu|flatten|dropout, ...}"},
    {0},
};

static const dt_key solo_keys[] = {
    {.name = "train_solo", .type = DT_KEY_BOOL, .offset = offsetof(dt_solo_config, train_solo), .def = "false",
     .help = "train every node alone on its own data first (the no-communication baseline)"},
    {.name = "optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_solo_config, optimizer), .def = "adam", .values = dt_local_opt_names,
     .help = "local optimizer"},
    {.name = "lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_solo_config, lr), .def = "0.005", .min = 0, .max = INF, .help = "learning rate"},
    {.name = "epochs", .type = DT_KEY_INT, .offset = offsetof(dt_solo_config, epochs), .def = "1", .min = 1, .max = 1e6,
     .help = "passes over the node's data"},
    {.name = "train_batch_size", .type = DT_KEY_INT, .offset = offsetof(dt_solo_config, train_batch_size), .def = "64", .min = 1, .max = 65536,
     .help = "training minibatch size"},
    {.name = "val_batch_size", .type = DT_KEY_INT, .offset = offsetof(dt_solo_config, val_batch_size), .def = "128", .min = 1, .max = 65536,
     .help = "evaluation batch size"},
    {.name = "verbose", .type = DT_KEY_BOOL, .offset = offsetof(dt_solo_config, verbose), .def = "true", .help = "print each node's result"},
    {0},
};

static const dt_key split_keys[] = {
    {.name = "alpha", .type = DT_KEY_FLOAT, .offset = OFF(dirichlet_alpha), .def = "0.5", .min = 1e-6, .max = 1e6,
     .help = "dirichlet: concentration; small = each node sees few classes"},
    {.name = "min_per_node", .type = DT_KEY_INT, .offset = OFF(min_per_node), .def = "10", .min = 1, .max = 1 << 30,
     .help = "dirichlet: redraw until every node holds at least this many samples"},
    {0},
};

#define PROBLEM_SECTIONS "(problem sections)"
static const dt_key experiment_keys[] = {
    {.name = "name", .type = DT_KEY_STRING, .offset = OFF(name), .size = DT_NAME_MAX, .def = "experiment",
     .help = "experiment name; part of the output folder name"},
    {.name = "data_dir", .type = DT_KEY_STRING, .offset = OFF(data_dir), .size = DT_PATH_MAX, .def = "",
     .help = "folder with the IDX files, or a torchvision root; empty = data/<dataset> of the working directory"},
    {.name = "output_metadir", .type = DT_KEY_STRING, .offset = OFF(output_metadir), .size = DT_PATH_MAX, .def = "outputs",
     .help = "where run folders are created"},
    {.name = "writeout", .type = DT_KEY_BOOL, .offset = OFF(writeout), .def = "true", .help = "write result files (false: write nothing)"},
    {.name = "use_cuda", .type = DT_KEY_BOOL, .offset = OFF(use_cuda), .def = "false",
     .help = "seed key: true with backend cpu only warns that the run stays on the CPU; choose the device with backend"},
    {.name = "backend", .type = DT_KEY_ENUM, .offset = OFF(backend), .def = "cpu", .values = backend_names,
     .help = "compute backend: cpu, cuda, or auto (the first backend of this build that can run here, else cpu)"},
    /* .values: every problem plug-in's dataset names (experiment_table) */
    {.name = "dataset", .type = DT_KEY_ENUM, .offset = OFF(dataset), .def = "mnist",
     .help = "the data, and so the problem plug-in: mnist, fashion_mnist (problem mnist), synthetic (problem logreg)"},
    {.name = "data_split_type", .type = DT_KEY_ENUM, .offset = OFF(data_split_type), .def = "random", .values = split_names,
     .help = "how training data is split over nodes: random, hetero (by class), dirichlet"},
    {.name = "split", .type = DT_KEY_SECTION, .offset = 0, .sub = split_keys, .help = "split parameters"},
    {.name = "loss", .type = DT_KEY_ENUM, .offset = OFF(loss), .def = "NLL", .values = loss_names, .value_aliases = loss_aliases,
     .help = "loss: NLL of log-softmax outputs"},
    {.name = "seed", .type = DT_KEY_SEED, .offset = OFF(seed), .def = "0",
     .help = "seed of every random choice (graph, split, weights, minibatches, gossip)"},
    {.name = "save_models", .type = DT_KEY_BOOL, .offset = OFF(save_models), .def = "false",
     .help = "write each problem's final parameters as <problem_name>_models.npy (N x d float32)"},
    {.name = "checkpoint_every", .type = DT_KEY_INT, .offset = OFF(checkpoint_every), .def = "0", .min = 0, .max = 1e9,
     .help = "checkpoint every node's state every K rounds (0: by time only, see checkpoint_minutes); dtrun resume continues from it"},
    {.name = "checkpoint_minutes", .type = DT_KEY_FLOAT, .offset = OFF(checkpoint_minutes), .def = "5", .min = 0, .max = 1e6,
     .help = "also checkpoint when this many minutes passed since the last one (0: off); a checkpoint never changes results"},
    /* here: one section per problem plug-in with keys (experiment_table) */
    {.name = PROBLEM_SECTIONS, .type = DT_KEY_SPECIAL},
    {.name = "graph", .type = DT_KEY_SECTION, .offset = OFF(graph), .sub = graph_keys, .help = "communication graph"},
    {.name = "model", .type = DT_KEY_SECTION, .offset = OFF(model), .sub = model_keys, .help = "model"},
    {.name = "individual_training", .type = DT_KEY_SECTION, .offset = OFF(individual_training), .sub = solo_keys,
     .help = "the solo baseline run before the problems"},
    {0},
};

/* The experiment rows with the registry's parts filled in: the `dataset` row lists every problem
 * plug-in's dataset names, and each problem with keys gets its section where PROBLEM_SECTIONS
 * stands, stored in problem_opts[its index]. Every section is read and emitted whichever
 * problem runs, so the resolved config is complete. */
enum { MAX_DATASETS = 32 };
typedef struct experiment_table {
  dt_key rows[48];
  const char *datasets[MAX_DATASETS + 1];
  int dataset_problem[MAX_DATASETS]; /* registry index of the problem serving each name */
} experiment_table;

static dt_status experiment_table_make(const dt_registry *reg, experiment_table *t) {
  memset(t, 0, sizeof *t);
  int nd = 0, nr = 0;
  for (int i = 0; experiment_keys[i].name != NULL; i++) {
    const dt_key *k = &experiment_keys[i];
    if (strcmp(k->name, PROBLEM_SECTIONS) != 0) {
      DT_ASSERT(nr + 1 < (int)(sizeof t->rows / sizeof t->rows[0]));
      t->rows[nr++] = *k;
      continue;
    }
    for (int p = 0; reg->problems[p] != NULL; p++) {
      const dt_problem_plugin *pp = reg->problems[p];
      DT_CHECK(p < DT_MAX_PROBLEM_PLUGINS && pp->plugin.opts_size <= DT_PROBLEM_OPTS_MAX, DT_ERR_INTERNAL,
               "problem plug-in %s: more than %d plug-ins or options over %d bytes", pp->plugin.name, DT_MAX_PROBLEM_PLUGINS,
               DT_PROBLEM_OPTS_MAX);
      if (pp->section == NULL) continue;
      DT_ASSERT(nr + 1 < (int)(sizeof t->rows / sizeof t->rows[0]));
      t->rows[nr++] = (dt_key){.name = pp->section, .type = DT_KEY_SECTION, .sub = pp->plugin.keys, .help = pp->plugin.summary,
                               .offset = offsetof(dt_experiment_config, problem_opts) + (size_t)p * DT_PROBLEM_OPTS_MAX};
    }
  }
  for (int p = 0; reg->problems[p] != NULL; p++)
    for (int d = 0; reg->problems[p]->datasets[d] != NULL; d++) {
      DT_CHECK(nd < MAX_DATASETS, DT_ERR_INTERNAL, "more than %d dataset names registered", MAX_DATASETS);
      t->dataset_problem[nd] = p;
      t->datasets[nd++] = reg->problems[p]->datasets[d];
    }
  for (int i = 0; i < nr; i++)
    if (strcmp(t->rows[i].name, "dataset") == 0) t->rows[i].values = t->datasets;
  return DT_OK;
}

#define POFF(field) offsetof(dt_problem_config, field)
static const dt_key problem_keys[] = {
    {.name = "problem_name", .type = DT_KEY_STRING, .offset = POFF(problem_name), .size = DT_NAME_MAX,
     .help = "name used in result file names; default: the entry's key"},
    {.name = "train_batch_size", .type = DT_KEY_INT, .offset = POFF(train_batch_size), .def = "64", .min = 1, .max = 65536,
     .help = "training minibatch size per node"},
    {.name = "val_batch_size", .type = DT_KEY_INT, .offset = POFF(val_batch_size), .def = "128", .min = 1, .max = 65536,
     .help = "evaluation batch size"},
    {.name = "verbose_evals", .type = DT_KEY_BOOL, .offset = POFF(verbose_evals), .def = "true", .help = "print a line per evaluation"},
    {.name = "evaluate_frequency", .type = DT_KEY_INT, .offset = POFF(evaluate_frequency), .def = "20", .min = 1, .max = 1e9,
     .help = "evaluate every this many rounds (also at round 0 and after the last)"},
    {.name = "metrics_config", .type = DT_KEY_SPECIAL, .help = "seed spelling: {evaluate_frequency: N}"},
    {.name = "metrics", .type = DT_KEY_SPECIAL,
     .help = "list of metrics: forward_pass_count, validation_loss, consensus_error, top1_accuracy, current_epoch, consensus_matrix"},
    {.name = "full_batch", .type = DT_KEY_BOOL, .offset = POFF(full_batch), .def = "false",
     .help = "gradients on each node's whole data set instead of minibatches"},
    {.name = "l2", .type = DT_KEY_FLOAT, .offset = POFF(l2), .def = "0.0", .min = 0, .max = INF,
     .help = "L2 regularisation: lambda/2 ||theta||^2 added to every node's loss"},
    {.name = "optimizer_config", .type = DT_KEY_SPECIAL, .flags = DT_KEY_REQUIRED, .help = "the algorithm and its keys"},
    {0},
};

static const dt_key optimizer_common_keys[] = {
    {.name = "alg_name", .type = DT_KEY_SPECIAL, .flags = DT_KEY_REQUIRED,
     .help = "the algorithm: the name of an optimizer plug-in (their keys follow)"},
    {.name = "outer_iterations", .type = DT_KEY_INT, .offset = POFF(outer_iterations), .def = "100", .min = 1, .max = 1e9,
     .help = "communication rounds"},
    {.name = "profile", .type = DT_KEY_BOOL, .offset = POFF(profile), .def = "false", .help = "print a per-round time breakdown at the end"},
    {0},
};

/* ---- special keys ------------------------------------------------------------------------- */

static dt_status read_metrics(const schema_ctx *ctx, const dt_ynode *n, const char *path, unsigned *out) {
  char found[96];
  if (n == NULL) {
    *out = DT_METRIC_FORWARD_PASS_COUNT | DT_METRIC_VALIDATION_LOSS | DT_METRIC_CONSENSUS_ERROR | DT_METRIC_TOP1_ACCURACY |
           DT_METRIC_CURRENT_EPOCH;
    return DT_OK;
  }
  if (n->kind != DT_YN_SEQ)
    return schema_error(ctx, n, path, "expected a list of metric names, found %s",
                        n->kind == DT_YN_MAP ? "a mapping" : (snprintf(found, sizeof found, "'%s'", n->text), found));
  *out = 0;
  for (int i = 0; i < n->n; i++) {
    const dt_ynode *it = n->items[i];
    int bit = -1;
    for (int b = 0; it->kind == DT_YN_SCALAR && b < DT_METRIC_COUNT_; b++)
      if (strcmp(it->text, metric_names[b]) == 0) bit = b;
    if (bit < 0) {
      char sub[600];
      snprintf(sub, sizeof sub, "%s[%d]", path, i);
      const char *near = it->kind == DT_YN_SCALAR ? schema_nearest(it->text, metric_names, DT_METRIC_COUNT_) : NULL;
      if (near) return schema_error(ctx, it, sub, "unknown metric '%s'; did you mean '%s'?", it->text, near);
      return schema_error(ctx, it, sub, "expected one of forward_pass_count, validation_loss, consensus_error, top1_accuracy, "
                          "current_epoch, consensus_matrix, found '%s'", it->kind == DT_YN_SCALAR ? it->text : "(not a name)");
    }
    *out |= 1u << bit;
  }
  return DT_OK;
}

static const dt_key layer_keys[] = {
    {.name = "type", .type = DT_KEY_ENUM, .offset = offsetof(dt_layer_spec, kind), .flags = DT_KEY_REQUIRED, .values = layer_names,
     .help = "conv2d, maxpool2d, linear, relu, flatten, dropout"},
    {.name = "out_channels", .type = DT_KEY_INT, .offset = offsetof(dt_layer_spec, out_channels), .min = 1, .max = 65536, .help = "conv2d: filters"},
    {.name = "kernel_size", .type = DT_KEY_INT, .offset = offsetof(dt_layer_spec, kernel_size), .min = 1, .max = 1024,
     .help = "conv2d, maxpool2d: window size"},
    {.name = "stride", .type = DT_KEY_INT, .offset = offsetof(dt_layer_spec, stride), .min = 1, .max = 1024,
     .help = "conv2d (default 1), maxpool2d (default kernel_size)"},
    {.name = "padding", .type = DT_KEY_INT, .offset = offsetof(dt_layer_spec, padding), .min = 0, .max = 1024, .help = "conv2d: zero padding"},
    {.name = "out_features", .type = DT_KEY_INT, .offset = offsetof(dt_layer_spec, out_features), .min = 1, .max = 1 << 24, .help = "linear: outputs"},
    {.name = "p", .type = DT_KEY_FLOAT, .offset = offsetof(dt_layer_spec, p), .min = 0, .max = 0.999999, .help = "dropout: probability"},
    {0},
};

static dt_status read_layers(const schema_ctx *ctx, const dt_ynode *n, const char *path, dt_model_config *m) {
  char sub[600];
  if (n == NULL) return DT_OK;
  if (n->kind != DT_YN_SEQ || n->n == 0)
    return schema_error(ctx, n, path, "expected a non-empty list of layers ({type: conv2d, ...})");
  if (n->n > DT_MAX_LAYERS) return schema_error(ctx, n, path, "%d layers; at most %d are supported", n->n, DT_MAX_LAYERS);
  m->num_layers = n->n;
  /* which keys each type needs (R) or allows (A) */
  static const char *const needs[][8] = {
      [DT_LAYER_CONV2D] = {"R", "out_channels", "kernel_size", "A", "stride", "padding", NULL},
      [DT_LAYER_MAXPOOL2D] = {"R", "kernel_size", "A", "stride", NULL},
      [DT_LAYER_LINEAR] = {"R", "out_features", NULL},
      [DT_LAYER_RELU] = {NULL},
      [DT_LAYER_FLATTEN] = {NULL},
      [DT_LAYER_DROPOUT] = {"R", "p", NULL},
  };
  for (int i = 0; i < n->n; i++) {
    const dt_ynode *it = n->items[i];
    dt_layer_spec *ls = &m->layers[i];
    memset(ls, 0, sizeof *ls);
    snprintf(sub, sizeof sub, "%s[%d]", path, i);
    DT_TRY(schema_read(ctx, layer_keys, it, sub, ls));
    const char *const *rule = needs[ls->kind];
    for (int k = 0; k < it->n; k++) {
      const char *key = it->keys[k]->text;
      if (strcmp(key, "type") == 0) continue;
      int ok = 0;
      for (int r = 0; rule[r] != NULL && !ok; r++) ok = strcmp(rule[r], key) == 0;
      if (!ok) {
        char ksub[700];
        snprintf(ksub, sizeof ksub, "%s.%s", sub, key);
        return schema_error(ctx, it->keys[k], ksub, "does not apply to a %s layer", layer_names[ls->kind]);
      }
    }
    int required = 0;
    for (int r = 0; rule[r] != NULL; r++) {
      if (strcmp(rule[r], "R") == 0) required = 1;
      else if (strcmp(rule[r], "A") == 0) required = 0;
      else if (required && dt_ynode_get(it, rule[r]) == NULL)
        return schema_error(ctx, it, sub, "a %s layer needs '%s'", layer_names[ls->kind], rule[r]);
    }
    if (ls->kind == DT_LAYER_CONV2D && ls->stride == 0) ls->stride = 1;
    if (ls->kind == DT_LAYER_MAXPOOL2D && ls->stride == 0) ls->stride = ls->kernel_size;
  }
  return DT_OK;
}

bool dt_plugin_named(const dt_plugin *p, const char *name) {
  if (strcmp(p->name, name) == 0) return true;
  for (int a = 0; p->aliases != NULL && p->aliases[a] != NULL; a++)
    if (strcmp(p->aliases[a], name) == 0) return true;
  return false;
}

static const dt_plugin *optimizer_named(const dt_registry *reg, const char *name) {
  for (int i = 0; reg->optimizers[i] != NULL; i++)
    if (dt_plugin_named(reg->optimizers[i], name)) return reg->optimizers[i];
  return NULL;
}

static dt_status read_optimizer(const schema_ctx *ctx, const dt_ynode *n, const char *path, dt_problem_config *pc) {
  char sub[600], found[96];
  if (n == NULL || n->kind != DT_YN_MAP)
    return schema_error(ctx, n, path, "expected a mapping with alg_name and the algorithm's keys, found %s",
                        n == NULL ? "nothing" : n->kind == DT_YN_SEQ ? "a list" : (snprintf(found, sizeof found, "'%s'", n->text), found));
  const dt_ynode *alg = dt_ynode_get(n, "alg_name");
  snprintf(sub, sizeof sub, "%s.alg_name", path);
  const dt_plugin *const *opts = ctx->reg->optimizers;
  const dt_plugin *def = NULL;
  const char *names[64];
  int nn = 0;
  char list[512] = "";
  size_t used = 0;
  for (int i = 0; opts[i] != NULL; i++) {
    if (alg != NULL && alg->kind == DT_YN_SCALAR && dt_plugin_named(opts[i], alg->text)) def = opts[i];
    if (nn < 64) names[nn++] = opts[i]->name;
    used += (size_t)snprintf(list + used, used < sizeof list ? sizeof list - used : 0, "%s%s", i ? ", " : "", opts[i]->name);
    for (int a = 0; opts[i]->aliases && opts[i]->aliases[a]; a++) {
      if (nn < 64) names[nn++] = opts[i]->aliases[a];
      used += (size_t)snprintf(list + used, used < sizeof list ? sizeof list - used : 0, " (%s)", opts[i]->aliases[a]);
    }
  }
  if (alg == NULL) {
    char where[1200];
    dt_ynode_where(n, ctx->file, where, sizeof where);
    return schema_locate(DT_ERROR(DT_ERR_CONFIG, "%s: %s: missing required key (the algorithm: %s)", where, sub, list), ctx, n, sub);
  }
  if (def == NULL) {
    const char *near = alg->kind == DT_YN_SCALAR ? schema_nearest(alg->text, names, nn) : NULL;
    return schema_error(ctx, alg, sub, "unknown algorithm %s; available: %s%s%s%s", alg->kind == DT_YN_SCALAR ? alg->text : "(not a name)",
                        list, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
  }
  snprintf(pc->alg_name, sizeof pc->alg_name, "%s", def->name);
  /* Common keys and the algorithm's keys share one mapping: check names against both. */
  dt_key merged[64];
  int m = 0;
  for (int i = 0; optimizer_common_keys[i].name; i++) merged[m++] = optimizer_common_keys[i];
  for (int i = 0; def->keys[i].name; i++) {
    merged[m] = def->keys[i];
    merged[m].type = DT_KEY_SPECIAL; /* read below into alg_opts */
    m++;
  }
  memset(&merged[m], 0, sizeof merged[m]);
  DT_TRY(schema_read(ctx, merged, n, path, pc));
  /* now the algorithm's keys alone, into its options struct (common keys marked as special) */
  dt_key algk[64];
  m = 0;
  for (int i = 0; def->keys[i].name; i++) algk[m++] = def->keys[i];
  for (int i = 0; optimizer_common_keys[i].name; i++) {
    algk[m] = optimizer_common_keys[i];
    algk[m].type = DT_KEY_SPECIAL;
    algk[m].flags = 0;
    m++;
  }
  memset(&algk[m], 0, sizeof algk[m]);
  DT_ASSERT(def->opts_size <= DT_OPTS_MAX);
  memset(pc->alg_opts, 0, sizeof pc->alg_opts);
  DT_TRY(schema_read(ctx, algk, n, path, pc->alg_opts));
  if (def->finalize != NULL) {
    char err[512];
    if (!def->finalize(pc->alg_opts, pc->outer_iterations, err, sizeof err)) return schema_error(ctx, n, path, "%s", err);
  }
  for (int i = 0; def->keys[i].name; i++)
    if (strcmp(def->keys[i].name, "update_order") == 0 && dt_ynode_get(n, "update_order") == NULL) pc->seed_order_defaulted = true;
  return DT_OK;
}

bool dt_config_order_note(const dt_config *cfg, const char *prefix, char *buf, size_t size) {
  size_t used = 0;
  int k = 0;
  buf[0] = '\0';
  used += (size_t)snprintf(buf, size, "%snote: ", prefix);
  for (int p = 0; p < cfg->num_problems; p++) {
    if (!cfg->problems[p].seed_order_defaulted) continue;
    used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s (%s)", k++ ? ", " : "", cfg->problems[p].problem_name,
                             cfg->problems[p].alg_name);
  }
  if (k == 0) {
    buf[0] = '\0';
    return false;
  }
  snprintf(buf + used, used < size ? size - used : 0,
           " run%s the synchronous update: every node mixes the round's values.\n"
           "%s  The seed reference swept the nodes in place, one after another; update_order: sequential\n"
           "%s  in optimizer_config reproduces it.\n",
           k > 1 ? "" : "s", prefix, prefix);
  return true;
}

bool dt_config_file_name_ok(const char *s) {
  if (s[0] == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) return false;
  for (; *s; s++)
    if (*s == '/' || *s == '\\' || (unsigned char)*s < 32 || *s == 127) return false;
  return true;
}

static dt_status read_problem(const schema_ctx *ctx, const char *key, const dt_ynode *n, dt_problem_config *pc) {
  char path[600], sub[700];
  snprintf(path, sizeof path, "problem_configs.%.*s", DT_NAME_MAX, key);
  memset(pc, 0, sizeof *pc);
  if (key[0] == '\0' || strlen(key) >= sizeof pc->key)
    return schema_error(ctx, n, "problem_configs", "a problem's name must have 1 to %zu characters, found %zu", sizeof pc->key - 1,
                        strlen(key));
  snprintf(pc->key, sizeof pc->key, "%s", key);
  if (n->kind != DT_YN_MAP) return schema_error(ctx, n, path, "expected a mapping (problem_name, optimizer_config, ...)");
  DT_TRY(schema_read(ctx, problem_keys, n, path, pc));
  if (pc->problem_name[0] == '\0') snprintf(pc->problem_name, sizeof pc->problem_name, "%s", key);
  if (!dt_config_file_name_ok(pc->problem_name)) {
    const dt_ynode *at = dt_ynode_get(n, "problem_name");
    return schema_error(ctx, at != NULL ? at : n, path, "problem_name '%s' must be a file name: not empty, '.' or '..', without '/', "
                        "'\\' or control characters (it names result files)", pc->problem_name);
  }
  const dt_ynode *mc = dt_ynode_get(n, "metrics_config");
  if (mc != NULL) {
    snprintf(sub, sizeof sub, "%s.metrics_config", path);
    static const dt_key mc_keys[] = {
        {.name = "evaluate_frequency", .type = DT_KEY_INT, .offset = POFF(evaluate_frequency), .min = 1, .max = 1e9,
         .help = "evaluate every this many rounds"},
        {0},
    };
    const dt_ynode *top = dt_ynode_get(n, "evaluate_frequency"), *inner = dt_ynode_get(mc, "evaluate_frequency");
    /* an override in either spelling replaces the file's value in the other */
    const int top_wins = top != NULL && inner != NULL && top->origin != NULL && inner->origin == NULL;
    const int inner_wins = top != NULL && inner != NULL && inner->origin != NULL && top->origin == NULL;
    if (top != NULL && inner != NULL && !top_wins && !inner_wins)
      return schema_error(ctx, top, path, "evaluate_frequency is given twice, here and in metrics_config; keep one");
    const int keep = pc->evaluate_frequency; /* read from `top` (or the default) */
    DT_TRY(schema_read(ctx, mc_keys, mc, sub, pc)); /* checked even when the override replaces it */
    if (top_wins) pc->evaluate_frequency = keep;
  }
  snprintf(sub, sizeof sub, "%s.metrics", path);
  DT_TRY(read_metrics(ctx, dt_ynode_get(n, "metrics"), sub, &pc->metrics));
  snprintf(sub, sizeof sub, "%s.optimizer_config", path);
  DT_TRY(read_optimizer(ctx, dt_ynode_get(n, "optimizer_config"), sub, pc));
  /* only a file in the seed's layout is a seed config; dtrun's own (and archived) files are not */
  if (mc == NULL && dt_ynode_get(n, "problem_name") == NULL) pc->seed_order_defaulted = false;
  return DT_OK;
}

/* ---- loading ------------------------------------------------------------------------------ */

/* The problem plug-in serving experiment.dataset, and what depends on it (the loss, data_dir). */
static dt_status choose_problem(const schema_ctx *ctx, const experiment_table *t, const dt_ynode *exp, dt_experiment_config *e) {
  const int p = t->dataset_problem[e->dataset];
  const dt_problem_plugin *prob = ctx->reg->problems[p];
  snprintf(e->dataset_name, sizeof e->dataset_name, "%s", t->datasets[e->dataset]);
  snprintf(e->problem, sizeof e->problem, "%s", prob->plugin.name);
  e->problem_index = p;
  if (strcmp(loss_names[e->loss], prob->loss) != 0) {
    const dt_ynode *loss = dt_ynode_get(exp, "loss");
    return schema_error(ctx, loss != NULL ? loss : exp, "experiment.loss", "dataset %s (problem %s) trains with %s, not %s",
                        e->dataset_name, prob->plugin.name, prob->loss, loss_names[e->loss]);
  }
  if (e->data_dir[0] == '\0' && prob->reads_data_dir) snprintf(e->data_dir, sizeof e->data_dir, "data/%s", e->dataset_name);
  return DT_OK;
}

static const dt_key root_keys[] = {
    {.name = "experiment", .type = DT_KEY_SPECIAL, .flags = DT_KEY_REQUIRED, .help = "the experiment"},
    {.name = "problem_configs", .type = DT_KEY_SPECIAL, .flags = DT_KEY_REQUIRED, .help = "the (problem, optimizer) pairs"},
    /* read by dt_sweep_load (src/config/sweep.c); a single run ignores it */
    {.name = "sweep", .type = DT_KEY_SPECIAL, .help = "a grid of experiments over config keys (README \"Sweeps\")"},
    {0},
};

static dt_status load_tree(const schema_ctx *ctx, dt_ynode *root, dt_config *cfg) {
  char found[96];
  if (root->kind != DT_YN_MAP)
    return schema_error(ctx, root, "(top level)", "expected a mapping with 'experiment' and 'problem_configs', found %s",
                        root->kind == DT_YN_SEQ ? "a list" : (snprintf(found, sizeof found, "'%.60s'", root->text), found));
  DT_TRY(schema_read(ctx, root_keys, root, "", cfg));
  const dt_ynode *exp = dt_ynode_get(root, "experiment");
  experiment_table t;
  DT_TRY(experiment_table_make(ctx->reg, &t));
  DT_TRY(schema_read(ctx, t.rows, exp, "experiment", &cfg->experiment));
  DT_TRY(choose_problem(ctx, &t, exp, &cfg->experiment));
  const dt_ynode *model = dt_ynode_get(dt_ynode_get(root, "experiment"), "model");
  DT_TRY(read_layers(ctx, dt_ynode_get(model, "layers"), "experiment.model.layers", &cfg->experiment.model));
  const dt_ynode *pcs = dt_ynode_get(root, "problem_configs");
  if (pcs->kind != DT_YN_MAP || pcs->n == 0)
    return schema_error(ctx, pcs, "problem_configs", "expected a mapping of named problems (problem1: {...}), found %s",
                        pcs->kind == DT_YN_SEQ ? "a list" : pcs->kind == DT_YN_MAP ? "an empty mapping" : "a single value");
  if (pcs->n > DT_MAX_PROBLEMS) return schema_error(ctx, pcs, "problem_configs", "%d problems; at most %d", pcs->n, DT_MAX_PROBLEMS);
  cfg->num_problems = pcs->n;
  for (int i = 0; i < pcs->n; i++) DT_TRY(read_problem(ctx, pcs->keys[i]->text, pcs->items[i], &cfg->problems[i]));
  for (int i = 0; i < cfg->num_problems; i++)
    for (int j = 0; j < i; j++)
      if (strcmp(cfg->problems[i].problem_name, cfg->problems[j].problem_name) == 0)
        return schema_error(ctx, pcs->items[i], "problem_configs", "problems '%s' and '%s' share problem_name '%s'; result files "
                            "would collide", cfg->problems[j].key, cfg->problems[i].key, cfg->problems[i].problem_name);
  /* Cross-key checks that need the whole experiment. */
  dt_experiment_config *e = &cfg->experiment;
  if (!dt_config_file_name_ok(e->name)) {
    const dt_ynode *at = dt_ynode_get(exp, "name");
    return schema_error(ctx, at != NULL ? at : exp, "experiment.name",
                        "'%s' must be a file name: not empty, '.' or '..', without '/', '\\' or control characters (it names "
                        "the output folder)", e->name);
  }
  /* every file name unique in the run folder: individual_training writes solo_results.csv */
  for (int i = 0; i < cfg->num_problems && e->individual_training.train_solo; i++)
    if (strcmp(cfg->problems[i].problem_name, "solo") == 0)
      return schema_error(ctx, pcs->items[i], "problem_configs", "problem '%s' is named solo, so its results would overwrite "
                          "solo_results.csv, which individual_training (train_solo: true) writes; give it another problem_name",
                          cfg->problems[i].key);
  const dt_ynode *graph = dt_ynode_get(exp, "graph");
  if (e->graph.type == DT_GRAPH_FILE && e->graph.edge_file[0] == '\0')
    return schema_error(ctx, graph, "experiment.graph.edge_file", "graph.type file needs an edge_file");
  if (e->graph.schedule == DT_SCHEDULE_ONE_PEER_EXPONENTIAL && e->graph.type != DT_GRAPH_EXPONENTIAL)
    return schema_error(ctx, dt_ynode_get(graph, "schedule"), "experiment.graph.schedule",
                        "one_peer_exponential runs on type exponential (the union of its round graphs), found type %s",
                        dt_graph_type_name(e->graph.type));
  if (e->graph.schedule == DT_SCHEDULE_RESAMPLE && e->graph.type != DT_GRAPH_RANDOM && e->graph.type != DT_GRAPH_REGULAR &&
      e->graph.type != DT_GRAPH_GEOMETRIC)
    return schema_error(ctx, dt_ynode_get(graph, "schedule"), "experiment.graph.schedule",
                        "resample draws new graphs of a random type (random, regular or geometric), found type %s",
                        dt_graph_type_name(e->graph.type));
  for (int i = 0; i < cfg->num_problems && e->graph.schedule != DT_SCHEDULE_STATIC; i++) {
    const dt_plugin *def = optimizer_named(ctx->reg, cfg->problems[i].alg_name);
    char err[512] = "", sub[700], list[256] = "";
    if (def->schedule_ok != NULL && def->schedule_ok(cfg->problems[i].alg_opts, err, sizeof err)) continue;
    for (int j = 0; ctx->reg->optimizers[j] != NULL; j++)
      if (ctx->reg->optimizers[j]->schedule_ok != NULL)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "", ctx->reg->optimizers[j]->name);
    snprintf(sub, sizeof sub, "problem_configs.%s.optimizer_config", cfg->problems[i].key);
    const dt_ynode *oc = dt_ynode_get(pcs->items[i], "optimizer_config");
    if (def->schedule_ok != NULL)
      return schema_error(ctx, oc != NULL ? oc : pcs->items[i], sub, "experiment.graph.schedule is %s: %s",
                          dt_schedule_names[e->graph.schedule], err);
    return schema_error(ctx, oc != NULL ? oc : pcs->items[i], sub,
                        "%s needs a static graph, and experiment.graph.schedule is %s (time-varying graphs run %s)",
                        def->name, dt_schedule_names[e->graph.schedule], list);
  }
  if (e->backend == DT_BACKEND_CUDA && !DT_HAVE_CUDA)
    return schema_error(ctx, dt_ynode_get(exp, "backend"), "experiment.backend",
                        "cuda, but this dtrun was built without the CUDA backend; use cpu or auto "
                        "(auto picks cuda only where it is built and a GPU is usable)");
  const dt_problem_plugin *prob = ctx->reg->problems[e->problem_index];
  for (int i = 0; i < cfg->num_problems; i++) {
    const unsigned extra = cfg->problems[i].metrics & ~prob->metrics;
    if (extra == 0) continue;
    char sub[700];
    snprintf(sub, sizeof sub, "problem_configs.%s.metrics", cfg->problems[i].key);
    const dt_ynode *m = dt_ynode_get(pcs->items[i], "metrics");
    return schema_error(ctx, m != NULL ? m : pcs->items[i], sub, "the %s problem cannot record %s", prob->plugin.name,
                        metric_names[__builtin_ctz(extra)]);
  }
  return DT_OK;
}

/* An override may change a problem's keys, not make a new problem: a misspelled problem key
 * would otherwise run an extra problem with every default. */
static dt_status check_problem_key(const schema_ctx *ctx, const dt_ynode *root, const char *path, const char *origin) {
  const size_t pre = strlen("problem_configs.");
  if (strncmp(path, "problem_configs.", pre) != 0) return DT_OK;
  char key[DT_NAME_MAX + 1];
  const char *dot = strchr(path + pre, '.');
  const size_t len = dot != NULL ? (size_t)(dot - (path + pre)) : strlen(path + pre);
  snprintf(key, sizeof key, "%.*s", (int)(len < sizeof key ? len : sizeof key - 1), path + pre);
  const dt_ynode *pcs = dt_ynode_get(root, "problem_configs");
  if (strcmp(key, "*") == 0 || pcs == NULL || pcs->kind != DT_YN_MAP || dt_ynode_get(pcs, key) != NULL) return DT_OK;
  const char *names[DT_MAX_PROBLEMS];
  char list[1024] = "";
  int n = 0;
  for (int i = 0; i < pcs->n && n < DT_MAX_PROBLEMS; i++) {
    names[n++] = pcs->keys[i]->text;
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", pcs->keys[i]->text);
  }
  const char *near = schema_nearest(key, names, n);
  (void)ctx;
  const dt_status st = DT_ERROR(DT_ERR_CONFIG, "%s: problem_configs.%s: no such problem (an override cannot add one); the problems are %s%s%s%s",
                                origin, key, list, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
  return dt_error_set_where(dt_error_set_key(st, "problem_configs.%s", key), origin, 0, 0);
}

dt_status dt_config_load_overrides(const char *text, size_t len, const char *name, const dt_registry *reg, const char *const *overrides,
                                   const char *const *origins, int num_overrides, dt_config *out) {
  dt_status st = DT_OK;
  dt_ynode *root = NULL;
  char **made = NULL; /* "--set KEY=VALUE": where the nodes an override makes come from */
  memset(out, 0, sizeof *out);
  snprintf(out->source, sizeof out->source, "%s", name);
  schema_ctx ctx = {.file = name, .reg = reg};
  DT_TRY_GOTO(dt_yaml_parse(text, len, name, &root));
  if (num_overrides > 0) DT_CHECK_GOTO((made = calloc((size_t)num_overrides, sizeof *made)) != NULL, DT_ERR_MEMORY, "out of memory");
  for (int i = 0; i < num_overrides; i++) {
    const char *origin = origins != NULL && origins[i] != NULL ? origins[i] : NULL;
    if (origin == NULL) {
      DT_CHECK_GOTO(asprintf(&made[i], "--set %s", overrides[i]) >= 0, DT_ERR_MEMORY, "out of memory");
      origin = made[i];
    }
    const char *eq = strchr(overrides[i], '=');
    DT_CHECK_GOTO(eq != NULL && eq != overrides[i], DT_ERR_USAGE, "%s: expected key.path=value, e.g. --set experiment.graph.num_nodes=10",
                  origin);
    char path[512];
    DT_CHECK_GOTO((size_t)(eq - overrides[i]) < sizeof path, DT_ERR_USAGE, "%.80s...: the key path is longer than %zu characters", origin,
                  sizeof path - 1);
    snprintf(path, sizeof path, "%.*s", (int)(eq - overrides[i]), overrides[i]);
    DT_CHECK_GOTO(root->kind == DT_YN_MAP, DT_ERR_CONFIG, "%s: the file's top level is not a mapping", name);
    DT_TRY_GOTO(check_problem_key(&ctx, root, path, origin));
    DT_TRY_GOTO(dt_ynode_set_path(root, path, eq + 1, origin));
  }
  DT_TRY_GOTO(load_tree(&ctx, root, out));
cleanup:
  dt_ynode_free(root);
  for (int i = 0; made != NULL && i < num_overrides; i++) free(made[i]);
  free(made);
  return st;
}

dt_status dt_config_load_string(const char *text, size_t len, const char *name, const dt_registry *reg,
                                const char *const *overrides, int num_overrides, dt_config *out) {
  return dt_config_load_overrides(text, len, name, reg, overrides, NULL, num_overrides, out);
}

dt_status config_read_file(const char *path, char **text, size_t *len) {
  dt_status st = DT_OK;
  char *buf = NULL;
  struct stat sb;
  *text = NULL;
  DT_CHECK(stat(path, &sb) == 0, DT_ERR_CONFIG, "%s: cannot open the experiment file: %s", path, strerror(errno));
  DT_CHECK(S_ISREG(sb.st_mode), DT_ERR_CONFIG, "%s: not a regular file; expected an experiment YAML file", path);
  FILE *f = fopen(path, "rb");
  DT_CHECK(f != NULL, DT_ERR_CONFIG, "%s: cannot open the experiment file: %s", path, strerror(errno));
  DT_CHECK_GOTO(fseek(f, 0, SEEK_END) == 0, DT_ERR_IO, "%s: cannot read", path);
  long size = ftell(f);
  DT_CHECK_GOTO(size >= 0, DT_ERR_CONFIG, "%s: not a regular file", path);
  DT_CHECK_GOTO(size <= DT_YAML_MAX_BYTES, DT_ERR_CONFIG, "%s: the file is %ld bytes; an experiment file may hold at most %d bytes",
                path, size, DT_YAML_MAX_BYTES);
  rewind(f);
  buf = malloc((size_t)size + 1);
  DT_CHECK_GOTO(buf != NULL, DT_ERR_MEMORY, "out of memory reading %s", path);
  DT_CHECK_GOTO(fread(buf, 1, (size_t)size, f) == (size_t)size, DT_ERR_IO, "%s: read error", path);
  buf[size] = '\0';
  *text = buf;
  *len = (size_t)size;
  buf = NULL;
cleanup:
  fclose(f);
  free(buf);
  return st;
}

dt_status dt_config_load(const char *path, const dt_registry *reg, const char *const *overrides, int num_overrides,
                         dt_config *out) {
  char *text = NULL;
  size_t len = 0;
  DT_TRY(config_read_file(path, &text, &len));
  dt_status st = dt_config_load_string(text, len, path, reg, overrides, num_overrides, out);
  free(text);
  return st;
}

/* path made absolute: against `base` (a folder, itself made absolute against the working
 * directory), unless it is absolute or empty already. */
static void absolute(char *path, size_t size, const char *base) {
  if (path[0] == '\0' || path[0] == '/') return;
  char cwd[DT_PATH_MAX], out[3 * DT_PATH_MAX + 8];
  if (getcwd(cwd, sizeof cwd) == NULL) return; /* left as it is: it still works from here */
  if (base == NULL || base[0] == '\0' || strcmp(base, ".") == 0) snprintf(out, sizeof out, "%s/%s", cwd, path);
  else if (base[0] == '/') snprintf(out, sizeof out, "%s/%s", base, path);
  else snprintf(out, sizeof out, "%s/%s/%s", cwd, base, path);
  const char *p = out;
  while (strncmp(p, "./", 2) == 0) p += 2;
  if (strlen(p) < size) snprintf(path, size, "%s", p);
}

dt_status dt_config_emit_archive(const dt_config *cfg, const dt_registry *reg, FILE *f) {
  dt_config *a = malloc(sizeof *a);
  DT_CHECK(a != NULL, DT_ERR_MEMORY, "out of memory");
  *a = *cfg;
  char dir[DT_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", cfg->source);
  char *slash = strrchr(dir, '/');
  if (slash != NULL) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  absolute(a->experiment.data_dir, sizeof a->experiment.data_dir, NULL);
  absolute(a->experiment.output_metadir, sizeof a->experiment.output_metadir, NULL);
  absolute(a->experiment.graph.edge_file, sizeof a->experiment.graph.edge_file, dir); /* relative to the config file */
  dt_status st = dt_config_emit(a, reg, f);
  free(a);
  return st;
}

/* ---- emitting ------------------------------------------------------------------------------ */

typedef struct emitter {
  yaml_emitter_t e;
  int ok;
} emitter;

static void ev_scalar(emitter *em, const char *text, int quoted) {
  yaml_event_t ev;
  if (!em->ok) return;
  yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), !quoted, quoted,
                               quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE);
  em->ok = yaml_emitter_emit(&em->e, &ev);
}

static void ev_map(emitter *em, int start, int flow) {
  yaml_event_t ev;
  if (!em->ok) return;
  if (start) yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
  else yaml_mapping_end_event_initialize(&ev);
  em->ok = yaml_emitter_emit(&em->e, &ev);
}

static void ev_seq(emitter *em, int start, int flow) {
  yaml_event_t ev;
  if (!em->ok) return;
  if (start) yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
  else yaml_sequence_end_event_initialize(&ev);
  em->ok = yaml_emitter_emit(&em->e, &ev);
}

static void emit_layers(emitter *em, const dt_model_config *m) {
  char buf[64];
  ev_scalar(em, "layers", 0);
  ev_seq(em, 1, 0);
  for (int i = 0; i < m->num_layers; i++) {
    const dt_layer_spec *ls = &m->layers[i];
    ev_map(em, 1, 1);
    ev_scalar(em, "type", 0);
    ev_scalar(em, layer_names[ls->kind], 0);
#define FIELD(name, fmt, value)              \
  do {                                       \
    ev_scalar(em, name, 0);                  \
    snprintf(buf, sizeof buf, fmt, value);   \
    ev_scalar(em, buf, 0);                   \
  } while (0)
    switch (ls->kind) {
      case DT_LAYER_CONV2D:
        FIELD("out_channels", "%d", ls->out_channels);
        FIELD("kernel_size", "%d", ls->kernel_size);
        FIELD("stride", "%d", ls->stride);
        FIELD("padding", "%d", ls->padding);
        break;
      case DT_LAYER_MAXPOOL2D:
        FIELD("kernel_size", "%d", ls->kernel_size);
        FIELD("stride", "%d", ls->stride);
        break;
      case DT_LAYER_LINEAR: FIELD("out_features", "%d", ls->out_features); break;
      case DT_LAYER_DROPOUT: FIELD("p", "%.9g", (double)ls->p); break;
      default: break;
    }
#undef FIELD
    ev_map(em, 0, 1);
  }
  ev_seq(em, 0, 0);
}

static void emit_rows(emitter *em, const dt_key *keys, const void *base) {
  char buf[DT_PATH_MAX + 64];
  for (int i = 0; keys[i].name != NULL; i++) {
    const dt_key *k = &keys[i];
    if (keys == model_keys && k->type == DT_KEY_SPECIAL && ((const dt_model_config *)base)->num_layers > 0) {
      emit_layers(em, base);
      continue;
    }
    if ((k->flags & DT_KEY_NO_EMIT) || k->alias_of != NULL || k->type == DT_KEY_SPECIAL) continue;
    ev_scalar(em, k->name, 0);
    if (k->type == DT_KEY_SECTION) {
      ev_map(em, 1, 0);
      emit_rows(em, k->sub, (const char *)base + k->offset);
      ev_map(em, 0, 0);
      continue;
    }
    schema_format(k, base, buf, sizeof buf);
    ev_scalar(em, buf, k->type == DT_KEY_STRING);
  }
}

static int write_handler(void *data, unsigned char *buffer, size_t size) {
  return fwrite(buffer, 1, size, (FILE *)data) == size;
}

/* A relative edge_file is relative to the config file's folder: the emitted config (a run's
 * archived config.yaml, which re-runs and resumes from the run folder) names it absolutely. */
static dt_status absolute_edge_file(const dt_config *cfg, dt_config **copy) {
  const char *ef = cfg->experiment.graph.edge_file;
  *copy = NULL;
  if (ef[0] == '\0' || ef[0] == '/') return DT_OK;
  char dir[DT_PATH_MAX], abs[2 * DT_PATH_MAX + 2];
  snprintf(dir, sizeof dir, "%s", cfg->source);
  char *slash = strrchr(dir, '/');
  if (slash != NULL) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  char *real = realpath(dir, NULL);
  const int n = snprintf(abs, sizeof abs, "%s/%s", real != NULL ? real : dir, ef);
  free(real);
  if (n < 0 || (size_t)n >= sizeof cfg->experiment.graph.edge_file) {
    const dt_status st = DT_ERROR(DT_ERR_CONFIG, "%s: experiment.graph.edge_file '%s' is longer than %zu characters as an absolute path",
                                  cfg->source, ef, sizeof cfg->experiment.graph.edge_file - 1);
    return dt_error_set_where(dt_error_set_key(st, "experiment.graph.edge_file"), cfg->source, 0, 0);
  }
  *copy = malloc(sizeof **copy);
  DT_CHECK(*copy != NULL, DT_ERR_MEMORY, "out of memory");
  memcpy(*copy, cfg, sizeof **copy);
  snprintf((*copy)->experiment.graph.edge_file, sizeof (*copy)->experiment.graph.edge_file, "%s", abs);
  return DT_OK;
}

static dt_status emit_config(const dt_config *cfg, const dt_registry *reg, FILE *f);

dt_status dt_config_emit(const dt_config *cfg, const dt_registry *reg, FILE *f) {
  dt_config *copy;
  DT_TRY(absolute_edge_file(cfg, &copy));
  const dt_status st = emit_config(copy != NULL ? copy : cfg, reg, f);
  free(copy);
  return st;
}

static dt_status emit_config(const dt_config *cfg, const dt_registry *reg, FILE *f) {
  emitter em = {.ok = 1};
  experiment_table t;
  DT_TRY(experiment_table_make(reg, &t));
  yaml_event_t ev;
  DT_CHECK(yaml_emitter_initialize(&em.e), DT_ERR_MEMORY, "cannot initialise the YAML emitter");
  yaml_emitter_set_output(&em.e, write_handler, f);
  yaml_emitter_set_width(&em.e, 100);
  yaml_emitter_set_unicode(&em.e, 1);
  yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
  em.ok = yaml_emitter_emit(&em.e, &ev);
  if (em.ok) {
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    em.ok = yaml_emitter_emit(&em.e, &ev);
  }
  ev_map(&em, 1, 0);
  ev_scalar(&em, "experiment", 0);
  ev_map(&em, 1, 0);
  const dt_experiment_config *e = &cfg->experiment;
  emit_rows(&em, t.rows, e);
  ev_map(&em, 0, 0);
  ev_scalar(&em, "problem_configs", 0);
  ev_map(&em, 1, 0);
  for (int p = 0; p < cfg->num_problems; p++) {
    const dt_problem_config *pc = &cfg->problems[p];
    const dt_plugin *def = optimizer_named(reg, pc->alg_name);
    ev_scalar(&em, pc->key, 1);
    ev_map(&em, 1, 0);
    emit_rows(&em, problem_keys, pc);
    ev_scalar(&em, "metrics", 0);
    ev_seq(&em, 1, 1);
    for (int b = 0; b < DT_METRIC_COUNT_; b++)
      if (pc->metrics & (1u << b)) ev_scalar(&em, metric_names[b], 0);
    ev_seq(&em, 0, 1);
    ev_scalar(&em, "optimizer_config", 0);
    ev_map(&em, 1, 0);
    ev_scalar(&em, "alg_name", 0);
    ev_scalar(&em, pc->alg_name, 0);
    emit_rows(&em, optimizer_common_keys, pc);
    if (def != NULL) emit_rows(&em, def->keys, pc->alg_opts);
    ev_map(&em, 0, 0);
    ev_map(&em, 0, 0);
  }
  ev_map(&em, 0, 0);
  ev_map(&em, 0, 0);
  if (em.ok) {
    yaml_document_end_event_initialize(&ev, 1);
    em.ok = yaml_emitter_emit(&em.e, &ev);
  }
  if (em.ok) {
    yaml_stream_end_event_initialize(&ev);
    em.ok = yaml_emitter_emit(&em.e, &ev);
  }
  int ok = em.ok && yaml_emitter_flush(&em.e);
  yaml_emitter_delete(&em.e);
  DT_CHECK(ok && !ferror(f), DT_ERR_IO, "error writing the resolved config");
  return DT_OK;
}

/* ---- documentation walk -------------------------------------------------------------------- */

static void visit_rows(const dt_key *keys, const char *prefix, dt_config_key_visitor visit, void *ctx) {
  for (int i = 0; keys[i].name != NULL; i++) {
    char path[512];
    int len = snprintf(path, sizeof path, "%s%s.", prefix, keys[i].name);
    if (len < 0 || (size_t)len >= sizeof path) continue; /* no schema nests that deep */
    if (keys[i].type == DT_KEY_SECTION) visit_rows(keys[i].sub, path, visit, ctx);
    path[len - 1] = '\0';
    visit(path, &keys[i], ctx);
  }
}

void dt_config_visit_keys(const dt_registry *reg, dt_config_key_visitor visit, void *ctx) {
  experiment_table t;
  if (experiment_table_make(reg, &t) != DT_OK) return; /* a broken registry fails every load first */
  visit_rows(t.rows, "experiment.", visit, ctx);
  visit_rows(layer_keys, "experiment.model.layers[].", visit, ctx);
  visit_rows(problem_keys, "problem_configs.<name>.", visit, ctx);
  static const dt_key mc = {.name = "evaluate_frequency", .type = DT_KEY_INT, .help = "seed spelling of evaluate_frequency"};
  visit("problem_configs.<name>.metrics_config.evaluate_frequency", &mc, ctx);
  visit_rows(optimizer_common_keys, "problem_configs.<name>.optimizer_config.", visit, ctx);
  for (int i = 0; reg->optimizers[i] != NULL; i++) {
    char prefix[256];
    snprintf(prefix, sizeof prefix, "problem_configs.<name>.optimizer_config.(%s).", reg->optimizers[i]->name);
    visit_rows(reg->optimizers[i]->keys, prefix, visit, ctx);
  }
}
