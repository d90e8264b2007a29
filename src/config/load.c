/* Loading an experiment: the file, the `--set` overrides applied to its tree, then the tree read
 * through the key tables (keys.c) into a dt_config. The keys the tables cannot describe are read
 * here: the problems, each with its metrics list and optimizer_config (the algorithm's keys come
 * from its plug-in), and the model's layer list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_impl.h"

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
      if (strcmp(it->text, config_metric_names[b]) == 0) bit = b;
    if (bit < 0) {
      char sub[600];
      snprintf(sub, sizeof sub, "%s[%d]", path, i);
      const char *near = it->kind == DT_YN_SCALAR ? schema_nearest(it->text, config_metric_names, DT_METRIC_COUNT_) : NULL;
      if (near) return schema_error(ctx, it, sub, "unknown metric '%s'; did you mean '%s'?", it->text, near);
      return schema_error(ctx, it, sub, "expected one of forward_pass_count, validation_loss, consensus_error, top1_accuracy, "
                          "current_epoch, consensus_matrix, found '%s'", it->kind == DT_YN_SCALAR ? it->text : "(not a name)");
    }
    *out |= 1u << bit;
  }
  return DT_OK;
}

/* One layer entry at path: its type, then the type's own keys (the definition's table, with
 * `type`), keys of other types refused by name; a residual's block follows it in m->layers. */
static dt_status read_layer_list(const schema_ctx *ctx, const dt_ynode *n, const char *path, dt_model_config *m);

static dt_status read_layer(const schema_ctx *ctx, const dt_ynode *it, const char *sub, dt_model_config *m) {
  if (m->num_layers >= DT_MAX_LAYERS)
    return schema_error(ctx, it, sub, "more than %d layers, blocks' layers included; at most %d are supported", DT_MAX_LAYERS,
                        DT_MAX_LAYERS);
  const int at = m->num_layers++;
  dt_layer_spec *ls = &m->layers[at];
  memset(ls, 0, sizeof *ls);
  const dt_ynode *type = it != NULL && it->kind == DT_YN_MAP ? dt_ynode_get(it, "type") : NULL;
  if (type == NULL) return schema_read(ctx, config_layer_keys, it, sub, ls); /* not a map, or no type: its error */
  char ksub[700];
  snprintf(ksub, sizeof ksub, "%s.type", sub);
  DT_TRY(schema_parse_scalar(ctx, &config_layer_keys[0], type, ksub, ls));
  const dt_layer_def *def = dt_layer_def_of(ls->kind);
  const char *name = config_layer_names[ls->kind];
  dt_key rows[24] = {config_layer_keys[0]};
  int nrows = 1;
  for (int r = 0; def->keys[r].name != NULL && nrows < 23; r++) rows[nrows++] = def->keys[r];
  for (int k = 0; k < it->n; k++) {
    const char *key = it->keys[k]->text;
    int ok = 0;
    for (int r = 0; r < nrows && !ok; r++) ok = strcmp(rows[r].name, key) == 0;
    snprintf(ksub, sizeof ksub, "%s.%s", sub, key);
    if (!ok) return schema_error(ctx, it->keys[k], ksub, "does not apply to a %s layer", name);
  }
  for (int r = 1; r < nrows; r++)
    if ((rows[r].flags & DT_KEY_REQUIRED) && dt_ynode_get(it, rows[r].name) == NULL)
      return schema_error(ctx, it, sub, "a %s layer needs '%s'", name, rows[r].name);
  DT_TRY(schema_read(ctx, rows, it, sub, ls));
  if ((ls->kind == DT_LAYER_MAXPOOL2D || ls->kind == DT_LAYER_AVGPOOL2D) && ls->stride == 0) ls->stride = ls->kernel_size;
  if (ls->kind == DT_LAYER_RESIDUAL) {
    snprintf(ksub, sizeof ksub, "%s.layers", sub);
    DT_TRY(read_layer_list(ctx, dt_ynode_get(it, "layers"), ksub, m));
    m->layers[at].children = m->num_layers - at - 1;
  }
  return DT_OK;
}

static dt_status read_layer_list(const schema_ctx *ctx, const dt_ynode *n, const char *path, dt_model_config *m) {
  char sub[600];
  if (n->kind != DT_YN_SEQ || n->n == 0)
    return schema_error(ctx, n, path, "expected a non-empty list of layers ({type: conv2d, ...})");
  if (n->n > DT_MAX_LAYERS) return schema_error(ctx, n, path, "%d layers; at most %d are supported", n->n, DT_MAX_LAYERS);
  for (int i = 0; i < n->n; i++) {
    snprintf(sub, sizeof sub, "%s[%d]", path, i);
    DT_TRY(read_layer(ctx, n->items[i], sub, m));
  }
  return DT_OK;
}

static dt_status read_layers(const schema_ctx *ctx, const dt_ynode *n, const char *path, dt_model_config *m) {
  m->num_layers = 0;
  if (n == NULL) return DT_OK;
  return read_layer_list(ctx, n, path, m);
}

/* Every algorithm's name and aliases, for messages: the "did you mean" candidates and the list
 * "dsgd, cadmm (dinno), ...". */
typedef struct alg_names {
  const char *names[64];
  int count;
  char list[512];
} alg_names;

/* The plug-in that scalar node alg (may be NULL) names, or NULL; fills an with every name. */
static const dt_plugin *find_algorithm(const dt_plugin *const *opts, const dt_ynode *alg, alg_names *an) {
  const dt_plugin *def = NULL;
  size_t used = 0;
  an->count = 0;
  an->list[0] = '\0';
  for (int i = 0; opts[i] != NULL; i++) {
    if (alg != NULL && alg->kind == DT_YN_SCALAR && dt_plugin_named(opts[i], alg->text)) def = opts[i];
    if (an->count < 64) an->names[an->count++] = opts[i]->name;
    used += (size_t)snprintf(an->list + used, used < sizeof an->list ? sizeof an->list - used : 0, "%s%s", i ? ", " : "", opts[i]->name);
    for (int a = 0; opts[i]->aliases && opts[i]->aliases[a]; a++) {
      if (an->count < 64) an->names[an->count++] = opts[i]->aliases[a];
      used += (size_t)snprintf(an->list + used, used < sizeof an->list ? sizeof an->list - used : 0, " (%s)", opts[i]->aliases[a]);
    }
  }
  return def;
}

/* The common keys and the algorithm's keys share one mapping, so each of the two reads checks
 * names against both: the common keys into pc, then the algorithm's into pc->alg_opts. */
static dt_status read_algorithm_keys(const schema_ctx *ctx, const dt_plugin *def, const dt_ynode *n, const char *path,
                                     dt_problem_config *pc) {
  dt_key merged[64];
  int m = 0;
  for (int i = 0; config_optimizer_common_keys[i].name; i++) merged[m++] = config_optimizer_common_keys[i];
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
  for (int i = 0; config_optimizer_common_keys[i].name; i++) {
    algk[m] = config_optimizer_common_keys[i];
    algk[m].type = DT_KEY_SPECIAL;
    algk[m].flags = 0;
    m++;
  }
  memset(&algk[m], 0, sizeof algk[m]);
  DT_ASSERT(def->opts_size <= DT_OPTS_MAX);
  memset(pc->alg_opts, 0, sizeof pc->alg_opts);
  return schema_read(ctx, algk, n, path, pc->alg_opts);
}

static dt_status read_optimizer(const schema_ctx *ctx, const dt_ynode *n, const char *path, dt_problem_config *pc) {
  char sub[600], found[96];
  if (n == NULL || n->kind != DT_YN_MAP)
    return schema_error(ctx, n, path, "expected a mapping with alg_name and the algorithm's keys, found %s",
                        n == NULL ? "nothing" : n->kind == DT_YN_SEQ ? "a list" : (snprintf(found, sizeof found, "'%s'", n->text), found));
  const dt_ynode *alg = dt_ynode_get(n, "alg_name");
  snprintf(sub, sizeof sub, "%s.alg_name", path);
  alg_names an;
  const dt_plugin *def = find_algorithm(ctx->reg->optimizers, alg, &an);
  if (alg == NULL) {
    char where[1200];
    dt_ynode_where(n, ctx->file, where, sizeof where);
    return schema_locate(DT_ERROR(DT_ERR_CONFIG, "%s: %s: missing required key (the algorithm: %s)", where, sub, an.list), ctx, n, sub);
  }
  if (def == NULL) {
    const char *near = alg->kind == DT_YN_SCALAR ? schema_nearest(alg->text, an.names, an.count) : NULL;
    return schema_error(ctx, alg, sub, "unknown algorithm %s; available: %s%s%s%s", alg->kind == DT_YN_SCALAR ? alg->text : "(not a name)",
                        an.list, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
  }
  snprintf(pc->alg_name, sizeof pc->alg_name, "%s", def->name);
  DT_TRY(read_algorithm_keys(ctx, def, n, path, pc));
  if (def->finalize != NULL) {
    char err[512];
    if (!def->finalize(pc->alg_opts, pc->outer_iterations, err, sizeof err)) return schema_error(ctx, n, path, "%s", err);
  }
  return DT_OK;
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
  DT_TRY(schema_read(ctx, config_problem_keys, n, path, pc));
  if (pc->problem_name[0] == '\0') snprintf(pc->problem_name, sizeof pc->problem_name, "%s", key);
  if (!dt_config_file_name_ok(pc->problem_name)) {
    const dt_ynode *at = dt_ynode_get(n, "problem_name");
    char shown[4 * DT_NAME_MAX];
    config_name_shown(pc->problem_name, shown, sizeof shown);
    return schema_error(ctx, at != NULL ? at : n, path, "problem_name '%s' must be a file name: not empty, '.' or '..', UTF-8 without "
                        "'/', '\\', control or invisible characters (it names result files)", shown);
  }
  DT_TRY(config_read_metrics_config(ctx, n, path, pc));
  snprintf(sub, sizeof sub, "%s.metrics", path);
  DT_TRY(read_metrics(ctx, dt_ynode_get(n, "metrics"), sub, &pc->metrics));
  snprintf(sub, sizeof sub, "%s.optimizer_config", path);
  DT_TRY(read_optimizer(ctx, dt_ynode_get(n, "optimizer_config"), sub, pc));
  config_mark_seed_order(ctx, n, pc);
  return DT_OK;
}

/* ---- the tree ---------------------------------------------------------------------------- */

/* The problem plug-in serving experiment.dataset, and what depends on it (the loss, data_dir). */
static dt_status choose_problem(const schema_ctx *ctx, const experiment_table *t, const dt_ynode *exp, dt_experiment_config *e) {
  const int p = t->dataset_problem[e->dataset];
  const dt_problem_plugin *prob = ctx->reg->problems[p];
  snprintf(e->dataset_name, sizeof e->dataset_name, "%s", t->datasets[e->dataset]);
  snprintf(e->problem, sizeof e->problem, "%s", prob->plugin.name);
  e->problem_index = p;
  if (strcmp(config_loss_names[e->loss], prob->loss) != 0) {
    const dt_ynode *loss = dt_ynode_get(exp, "loss");
    return schema_error(ctx, loss != NULL ? loss : exp, "experiment.loss", "dataset %s (problem %s) trains with %s, not %s",
                        e->dataset_name, prob->plugin.name, prob->loss, config_loss_names[e->loss]);
  }
  if (e->data_dir[0] == '\0' && prob->reads_data_dir) snprintf(e->data_dir, sizeof e->data_dir, "data/%s", e->dataset_name);
  return DT_OK;
}

/* The experiment mapping: its rows (with the registry's sections), the problem it implies, and
 * the layer list. */
static dt_status read_experiment(const schema_ctx *ctx, const dt_ynode *exp, dt_experiment_config *e) {
  experiment_table t;
  DT_TRY(config_experiment_table_make(ctx->reg, &t));
  DT_TRY(schema_read(ctx, t.rows, exp, "experiment", e));
  DT_TRY(choose_problem(ctx, &t, exp, e));
  const dt_ynode *model = dt_ynode_get(exp, "model");
  return read_layers(ctx, dt_ynode_get(model, "layers"), "experiment.model.layers", &e->model);
}

static dt_status read_problems(const schema_ctx *ctx, const dt_ynode *pcs, dt_config *cfg) {
  if (pcs->kind != DT_YN_MAP || pcs->n == 0)
    return schema_error(ctx, pcs, "problem_configs", "expected a mapping of named problems (problem1: {...}), found %s",
                        pcs->kind == DT_YN_SEQ ? "a list" : pcs->kind == DT_YN_MAP ? "an empty mapping" : "a single value");
  if (pcs->n > DT_MAX_PROBLEMS) return schema_error(ctx, pcs, "problem_configs", "%d problems; at most %d", pcs->n, DT_MAX_PROBLEMS);
  cfg->num_problems = pcs->n;
  for (int i = 0; i < pcs->n; i++) DT_TRY(read_problem(ctx, pcs->keys[i]->text, pcs->items[i], &cfg->problems[i]));
  return DT_OK;
}

/* ---- paths ------------------------------------------------------------------------------- */

/* dir/rel with "." and "name/.." folded away lexically ("configs/../data/mnist" is
 * "data/mnist"); leading ".." of a relative result are kept. false when it does not fit. */
static bool join_folded(const char *dir, const char *rel, char *out, size_t size) {
  char buf[2 * DT_PATH_MAX + 2];
  const int n = snprintf(buf, sizeof buf, "%s/%s", dir, rel);
  if (n < 0 || (size_t)n >= sizeof buf) return false;
  const bool abs = buf[0] == '/';
  char *parts[DT_PATH_MAX / 2];
  int np = 0, ups = 0; /* ups: leading ".." of a relative path */
  for (char *save = NULL, *t = strtok_r(buf, "/", &save); t != NULL; t = strtok_r(NULL, "/", &save)) {
    if (strcmp(t, ".") == 0) continue;
    if (strcmp(t, "..") == 0 && np > ups) {
      np--;
      continue;
    }
    if (strcmp(t, "..") == 0 && abs) continue; /* "/.." is "/" */
    if (np == (int)(sizeof parts / sizeof *parts)) return false;
    ups += strcmp(t, "..") == 0;
    parts[np++] = t;
  }
  size_t used = 0;
  out[0] = '\0';
  if (abs) used = (size_t)snprintf(out, size, "/");
  for (int i = 0; i < np && used < size; i++) used += (size_t)snprintf(out + used, size - used, "%s%s", i ? "/" : "", parts[i]);
  if (used >= size) return false;
  if (np == 0 && !abs) snprintf(out, size, ".");
  return true;
}

/* The one rule for a relative path that names an input file or folder: it is relative to the
 * folder of the file that wrote it (an include:d file's for its keys), and a value given on the
 * command line (--set, --sweep) to the working directory. The value becomes a path from the
 * working directory, so everything after loading opens it as it is. */
static dt_status resolve_input(const schema_ctx *ctx, const dt_ynode *n, const char *key, char *path, size_t size) {
  if (n == NULL || path[0] == '\0' || path[0] == '/') return DT_OK;
  if (n->origin != NULL && strncmp(n->origin, "--", 2) == 0) return DT_OK;
  char dir[DT_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", n->file != NULL ? n->file : ctx->file);
  char *slash = strrchr(dir, '/');
  if (slash == NULL) return DT_OK; /* a file in the working directory */
  *slash = '\0';
  char out[DT_PATH_MAX];
  if (!join_folded(slash == dir ? "/" : dir, path, out, sizeof out) || strlen(out) >= size)
    return schema_error(ctx, n, key, "'%s' relative to the folder of %s is longer than %zu characters", path, dir, size - 1);
  snprintf(path, size, "%s", out);
  return DT_OK;
}

/* A file in the seed reference's layout (a problem with metrics_config or problem_name). */
static bool seed_layout(const dt_ynode *root) {
  const dt_ynode *pcs = dt_ynode_get(root, "problem_configs");
  for (int i = 0; pcs != NULL && pcs->kind == DT_YN_MAP && i < pcs->n; i++)
    if (dt_ynode_get(pcs->items[i], "metrics_config") != NULL || dt_ynode_get(pcs->items[i], "problem_name") != NULL) return true;
  return false;
}

static dt_status resolve_paths(const schema_ctx *ctx, const dt_ynode *root, dt_experiment_config *e) {
  const dt_ynode *exp = dt_ynode_get(root, "experiment");
  DT_TRY(resolve_input(ctx, dt_ynode_get(dt_ynode_get(exp, "graph"), "edge_file"), "experiment.graph.edge_file", e->graph.edge_file,
                       sizeof e->graph.edge_file));
  DT_TRY(resolve_input(ctx, dt_ynode_get(dt_ynode_get(exp, "model"), "init_file"), "experiment.model.init_file", e->model.init_file,
                       sizeof e->model.init_file));
  DT_TRY(resolve_input(ctx, dt_ynode_get(exp, "batch_order"), "experiment.batch_order", e->batch_order, sizeof e->batch_order));
  /* the seed's files name data_dir from the working directory they were run in (its repository) */
  if (!seed_layout(root)) DT_TRY(resolve_input(ctx, dt_ynode_get(exp, "data_dir"), "experiment.data_dir", e->data_dir, sizeof e->data_dir));
  return DT_OK;
}

static dt_status load_tree(const schema_ctx *ctx, dt_ynode *root, dt_config *cfg) {
  char found[96];
  if (root->kind != DT_YN_MAP)
    return schema_error(ctx, root, "(top level)", "expected a mapping with 'experiment' and 'problem_configs', found %s",
                        root->kind == DT_YN_SEQ ? "a list" : (snprintf(found, sizeof found, "'%.60s'", root->text), found));
  DT_TRY(schema_read(ctx, config_root_keys, root, "", cfg));
  DT_TRY(read_experiment(ctx, dt_ynode_get(root, "experiment"), &cfg->experiment));
  DT_TRY(read_problems(ctx, dt_ynode_get(root, "problem_configs"), cfg));
  DT_TRY(resolve_paths(ctx, root, &cfg->experiment));
  return config_validate(ctx, root, cfg);
}

/* ---- loading ------------------------------------------------------------------------------ */

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
  schema_ctx ctx = {.file = name, .reg = reg, .warn = out};
  DT_TRY_GOTO(dt_yaml_parse(text, len, name, &root));
  DT_TRY_GOTO(config_compose_includes(root, name)); /* include: first, so that --set overrides what they give */
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
    DT_CHECK_GOTO(strcmp(path, "sweep") != 0 && strncmp(path, "sweep.", 6) != 0, DT_ERR_USAGE,
                  "%s: a sweep's axes are not set with --set (it would be ignored): give them with --sweep KEY=V1,V2,... or the "
                  "file's sweep: key", origin);
    DT_CHECK_GOTO(root->kind == DT_YN_MAP, DT_ERR_CONFIG, "%s: the file's top level is not a mapping", name);
    DT_TRY_GOTO(check_problem_key(&ctx, root, path, origin));
    DT_TRY_GOTO(dt_ynode_set_path(root, path, eq + 1, origin));
  }
  DT_TRY_GOTO(config_compose_finish(root, name)); /* extends, ${...}, ??? */
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
  /* fewer bytes than the size said: a file changed under us, or a kernel file (/proc, /sys)
   * whose size is a page; what was read is the file, and a read that failed is bad input */
  const size_t got = fread(buf, 1, (size_t)size, f);
  DT_CHECK_GOTO(got == (size_t)size || !ferror(f), DT_ERR_CONFIG, "%s: cannot read the experiment file: %s", path, strerror(errno));
  size = (long)got;
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

dt_status dt_config_keep_problems(dt_config *cfg, const char *list) {
  char names[1024];
  DT_CHECK(list[0] != '\0' && strlen(list) < sizeof names, DT_ERR_USAGE, "--problem: expected NAME[,NAME...], found '%.80s'", list);
  snprintf(names, sizeof names, "%s", list);
  int keep[DT_MAX_PROBLEMS] = {0};
  const char *keys[DT_MAX_PROBLEMS];
  char all[1024] = "";
  for (int i = 0; i < cfg->num_problems; i++) {
    keys[i] = cfg->problems[i].key;
    snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? ", " : "", keys[i]);
  }
  char *save = NULL;
  for (char *n = strtok_r(names, ",", &save); n != NULL; n = strtok_r(NULL, ",", &save)) {
    int found = -1;
    for (int i = 0; i < cfg->num_problems && found < 0; i++)
      if (strcmp(keys[i], n) == 0) found = i;
    if (found < 0) {
      const char *near = schema_nearest(n, keys, cfg->num_problems);
      return DT_ERROR(DT_ERR_USAGE, "--problem %s: %s has no such problem; its problems are %s%s%s%s", n, cfg->source, all,
                      near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    }
    keep[found] = 1;
  }
  int kept = 0;
  for (int i = 0; i < cfg->num_problems; i++)
    if (keep[i]) {
      if (kept != i) memcpy(&cfg->problems[kept], &cfg->problems[i], sizeof cfg->problems[i]);
      kept++;
    }
  for (int i = kept; i < cfg->num_problems; i++) memset(&cfg->problems[i], 0, sizeof cfg->problems[i]);
  cfg->num_problems = kept;
  return DT_OK;
}
