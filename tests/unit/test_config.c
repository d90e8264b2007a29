/* Config loading: the shipped configs and the seed format load unchanged; the resolved config
 * emitted as YAML loads back to the identical struct; --set overrides; shorthands and aliases;
 * configs/README.md lists every key; every optimizer folder documents its keys; config errors
 * carry their key and position as data, and errors found after loading are placed by it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../optimizers/cadmm/cadmm.h"
#include "../../optimizers/options_impl.h"
#include "check.h"
#include "dt/config.h"
#include "dt/optimizer.h"
#include "dt/run.h"

static const char *root(void) {
  const char *r = getenv("DT_SOURCE_ROOT");
  return r ? r : ".";
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) buf[n] = '\0';
  fclose(f);
  return buf;
}

static dt_config a, b;

static void round_trip(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/configs/%s", root(), name);
  CHECK_OK(dt_config_load(path, &dt_builtin, NULL, 0, &a));
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  CHECK_OK(dt_config_emit(&a, &dt_builtin, mem));
  fclose(mem);
  CHECK_OK(dt_config_load_string(text, len, path, &dt_builtin, NULL, 0, &b));
  /* how the file was written is not config: the emitted file spells update_order out, so a seed
   * file's note is not repeated when its archive reruns (tests/e2e/run_e2e.sh) */
  for (int p = 0; p < a.num_problems; p++) a.problems[p].seed_order_defaulted = b.problems[p].seed_order_defaulted = false;
  CHECK(memcmp(&a, &b, sizeof a) == 0, "%s: the emitted config does not load back identically:\n%s", name, text);
  /* and emitting again gives the same text */
  char *text2 = NULL;
  size_t len2 = 0;
  mem = open_memstream(&text2, &len2);
  CHECK_OK(dt_config_emit(&b, &dt_builtin, mem));
  fclose(mem);
  CHECK(len == len2 && memcmp(text, text2, len) == 0, "%s: emitting is not stable", name);
  free(text);
  free(text2);
}

static void test_shipped(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/configs/dist_mnist_paper.yaml", root());
  CHECK_OK(dt_config_load(path, &dt_builtin, NULL, 0, &a));
  CHECK(a.experiment.graph.num_nodes == 10 && a.experiment.graph.type == 1, "paper graph");
  CHECK(a.experiment.data_split_type == DT_SPLIT_HETERO, "paper split");
  CHECK(a.num_problems == 3, "paper problems %d", a.num_problems);
  CHECK(strcmp(a.problems[0].alg_name, "cadmm") == 0, "dinno alias resolves to cadmm: %s", a.problems[0].alg_name);
  CHECK(a.problems[0].outer_iterations == 2000 && a.problems[0].evaluate_frequency == 20, "paper rounds");
  CHECK(a.problems[0].train_batch_size == 64 && a.problems[0].val_batch_size == 128, "paper batches");
  CHECK(strcmp(a.problems[1].alg_name, "dsgt") == 0 && strcmp(a.problems[2].alg_name, "dsgd") == 0, "paper algs");
  CHECK(a.experiment.individual_training.epochs == 6, "individual_training.epochs");
  round_trip("dist_mnist.yaml");
  round_trip("dist_mnist_paper.yaml");
  round_trip("easgd_mnist.yaml");
  round_trip("downpour_mnist.yaml");
  round_trip("logreg_mnist.yaml");
}

static void test_overrides_and_shorthands(void) {
  const char *text =
      "experiment: {name: t, graph: {num_nodes: 3}}\n"
      "problem_configs:\n"
      "  p1: {optimizer_config: {alg_name: dinno, primal_lr: 0.01, persistant_primal_opt: True}}\n";
  const char *sets[] = {"experiment.graph.num_nodes=7", "experiment.seed=42", "problem_configs.p1.optimizer_config.rho_init=2",
                        "experiment.graph.mixing=uniform"};
  CHECK_OK(dt_config_load_string(text, strlen(text), "inline.yaml", &dt_builtin, sets, 4, &a));
  CHECK(a.experiment.graph.num_nodes == 7 && a.experiment.seed == 42, "overrides");
  CHECK(a.experiment.graph.mixing == 1, "override of an absent key");
  CHECK(strcmp(a.problems[0].problem_name, "p1") == 0, "problem_name defaults to the key");
  const dt_cadmm_opts *o = (const dt_cadmm_opts *)a.problems[0].alg_opts;
  CHECK(o->rho_init == 2.0, "rho_init override %g", o->rho_init);
  CHECK(o->primal_lr_start == 0.01 && o->primal_lr_finish == 0.01 && o->lr_decay_type == DT_CADMM_LR_CONSTANT,
        "primal_lr shorthand: %g %g %d", o->primal_lr_start, o->primal_lr_finish, o->lr_decay_type);
  CHECK(o->persistent_primal_opt, "persistant_primal_opt alias");
  CHECK(strcmp(a.experiment.data_dir, "data/mnist") == 0, "data_dir default %s", a.experiment.data_dir);
}

/* --set with a list value, a '*' over every problem, evaluate_frequency in either spelling. */
static void test_override_forms(void) {
  const char *text =
      "experiment: {name: t, graph: {num_nodes: 3}}\n"
      "problem_configs:\n"
      "  p1: {metrics_config: {evaluate_frequency: 20}, optimizer_config: {alg_name: dsgd, outer_iterations: 10}}\n"
      "  p2: {evaluate_frequency: 20, optimizer_config: {alg_name: dsgt, outer_iterations: 10}}\n";
  const char *sets[] = {"problem_configs.*.optimizer_config.outer_iterations=50", "problem_configs.p1.metrics=[top1_accuracy]",
                        "problem_configs.p1.evaluate_frequency=3", "problem_configs.p2.metrics_config.evaluate_frequency=4"};
  CHECK_OK(dt_config_load_string(text, strlen(text), "inline.yaml", &dt_builtin, sets, 4, &a));
  CHECK(a.problems[0].outer_iterations == 50 && a.problems[1].outer_iterations == 50, "wildcard: %d %d", a.problems[0].outer_iterations,
        a.problems[1].outer_iterations);
  CHECK(a.problems[0].metrics == DT_METRIC_TOP1_ACCURACY, "list override: metrics %#x", a.problems[0].metrics);
  CHECK(a.problems[0].evaluate_frequency == 3 && a.problems[1].evaluate_frequency == 4, "evaluate_frequency overrides: %d %d",
        a.problems[0].evaluate_frequency, a.problems[1].evaluate_frequency);
  /* a new problem cannot come from an override */
  const char *typo[] = {"problem_configs.p3.optimizer_config.alpha0=1"};
  CHECK(dt_config_load_string(text, strlen(text), "inline.yaml", &dt_builtin, typo, 1, &a) == DT_ERR_CONFIG, "new problem refused");
  CHECK(strstr(dt_error_message(), "no such problem") != NULL, "message: %s", dt_error_message());
}

static const char *readme;
static int missing;

static void in_readme(const char *path, const dt_key *k, void *ctx) {
  (void)k;
  (void)ctx;
  char needle[600];
  snprintf(needle, sizeof needle, "`%s`", path);
  if (strstr(readme, needle) == NULL) {
    fprintf(stderr, "configs/README.md does not document %s\n", needle);
    missing++;
  }
}

static void test_docs(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/configs/README.md", root());
  char *text = slurp(path);
  CHECK(text != NULL, "cannot read %s", path);
  if (text == NULL) return;
  readme = text;
  dt_config_visit_keys(&dt_builtin, in_readme, NULL);
  CHECK(missing == 0, "configs/README.md misses %d keys", missing);
  free(text);
  for (int i = 0; dt_optimizers[i] != NULL; i++) {
    const dt_plugin *d = &dt_optimizers[i]->plugin;
    snprintf(path, sizeof path, "%s/optimizers/%s/README.md", root(), d->name);
    text = slurp(path);
    CHECK(text != NULL, "optimizer %s has no README.md", d->name);
    for (int k = 0; text && d->keys[k].name; k++) {
      char needle[128];
      snprintf(needle, sizeof needle, "`%s`", d->keys[k].name);
      CHECK(strstr(text, needle) != NULL, "optimizers/%s/README.md does not document %s", d->name, needle);
    }
    free(text);
  }
  for (int i = 0; dt_problems[i] != NULL; i++) {
    const dt_problem_plugin *d = &dt_problems[i]->schema;
    snprintf(path, sizeof path, "%s/problems/%s/README.md", root(), d->plugin.name);
    text = slurp(path);
    CHECK(text != NULL, "problem %s has no README.md", d->plugin.name);
    for (int k = 0; text && d->plugin.keys[k].name; k++) {
      char needle[128];
      snprintf(needle, sizeof needle, "`%s`", d->plugin.keys[k].name);
      CHECK(strstr(text, needle) != NULL, "problems/%s/README.md does not document %s", d->plugin.name, needle);
    }
    for (int k = 0; text && d->datasets[k]; k++) {
      char needle[128];
      snprintf(needle, sizeof needle, "`%s`", d->datasets[k]);
      CHECK(strstr(text, needle) != NULL, "problems/%s/README.md does not name dataset %s", d->plugin.name, needle);
    }
    free(text);
  }
}

/* The loader knows plug-ins only through the registry it is handed: a registry with other
 * problems and optimizers changes which datasets, sections, algorithms, losses and metrics a
 * config may use, with the usual positioned messages. */
typedef struct toy_opts {
  int width;
} toy_opts;
static const dt_key toy_keys[] = {
    {.name = "width", .type = DT_KEY_INT, .offset = offsetof(toy_opts, width), .def = "7", .min = 1, .max = 100, .help = "toy width"},
    {0},
};
static const char *const toy_sets[] = {"toy_a", "toy_b", NULL};
static const char *const mse_sets[] = {"toy_mse", NULL};
static const dt_problem_plugin toy_problem = {
    .plugin = {.name = "toy", .summary = "toy problem", .keys = toy_keys, .opts_size = sizeof(toy_opts)},
    .section = "toy",
    .datasets = toy_sets,
    .loss = "NLL",
    .metrics = DT_METRIC_VALIDATION_LOSS,
};
static const dt_problem_plugin mse_problem = {
    .plugin = {.name = "toy_regression", .summary = "a loss the core does not have", .keys = toy_keys},
    .datasets = mse_sets,
    .loss = "MSE",
    .metrics = DT_METRIC_VALIDATION_LOSS,
};
static const dt_problem_plugin *const toy_problems[] = {&toy_problem, &mse_problem, NULL};

static void expect_error(const dt_registry *reg, const char *text, const char *message) {
  static dt_config c;
  dt_status st = dt_config_load_string(text, strlen(text), "toy.yaml", reg, NULL, 0, &c);
  CHECK(st == DT_ERR_CONFIG, "accepted: %s", text);
  CHECK(strstr(dt_error_message(), message) != NULL, "expected '%s', got '%s'", message, dt_error_message());
}

static void test_custom_registry(void) {
  const dt_plugin *only_dsgd[] = {&dt_optimizer_find("dsgd")->plugin, NULL};
  const dt_registry reg = {.optimizers = only_dsgd, .problems = toy_problems};
  static dt_config c;
  const char *ok = "experiment: {dataset: toy_b, toy: {width: 9}}\n"
                   "problem_configs: {p: {metrics: [validation_loss], optimizer_config: {alg_name: dsgd}}}\n";
  CHECK_OK(dt_config_load_string(ok, strlen(ok), "toy.yaml", &reg, NULL, 0, &c));
  CHECK(strcmp(c.experiment.dataset_name, "toy_b") == 0 && strcmp(c.experiment.problem, "toy") == 0 &&
            c.experiment.problem_index == 0,
        "dataset %s problem %s", c.experiment.dataset_name, c.experiment.problem);
  CHECK(((const toy_opts *)c.experiment.problem_opts[0])->width == 9, "toy width not read");
  CHECK(c.experiment.data_dir[0] == '\0', "a problem that reads no files got data_dir %s", c.experiment.data_dir);
  /* the emitted config holds the toy section and reloads to the same struct */
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  CHECK_OK(dt_config_emit(&c, &reg, mem));
  fclose(mem);
  CHECK(strstr(text, "  toy:\n    width: 9\n") != NULL, "emitted:\n%s", text);
  static dt_config d;
  CHECK_OK(dt_config_load_string(text, len, "toy.yaml", &reg, NULL, 0, &d));
  memcpy(d.source, c.source, sizeof d.source);
  CHECK(memcmp(&c, &d, sizeof c) == 0, "toy config does not round-trip");
  free(text);
  expect_error(&reg, "experiment: {dataset: toy_a}\nproblem_configs: {p: {metrics: [top1_accuracy], optimizer_config: {alg_name: dsgd}}}\n",
               "toy.yaml:2:32: problem_configs.p.metrics: the toy problem cannot record top1_accuracy");
  expect_error(&reg, "experiment: {dataset: toy_a}\nproblem_configs: {p: {optimizer_config: {alg_name: cadmm}}}\n",
               "unknown algorithm cadmm; available: dsgd");
  expect_error(&reg, "experiment: {dataset: mnist}\nproblem_configs: {p: {optimizer_config: {alg_name: dsgd}}}\n",
               "experiment.dataset: expected one of toy_a, toy_b, toy_mse, found 'mnist'");
  expect_error(&reg, "experiment: {dataset: toy_a, synthetic: {samples: 10}}\nproblem_configs: {p: {optimizer_config: {alg_name: dsgd}}}\n",
               "experiment.synthetic: unknown key");
  expect_error(&reg, "experiment: {dataset: toy_mse}\nproblem_configs: {p: {optimizer_config: {alg_name: dsgd}}}\n",
               "experiment.loss: dataset toy_mse (problem toy_regression) trains with MSE, not NLL");
}

/* The context of the current error is (key, file, line, column). */
static void expect_context(const char *what, const char *key, const char *file, int line, int column) {
  const dt_error_context *c = dt_error_where();
  CHECK(strcmp(c->key, key) == 0 && strcmp(c->file, file) == 0 && c->line == line && c->column == column,
        "%s: context %s @ %s:%d:%d, expected %s @ %s:%d:%d (message: %s)", what, c->key, c->file, c->line, c->column, key, file, line,
        column, dt_error_message());
}

static void test_error_context(void) {
  static dt_config c;
  const char *text = "experiment:\n  graph: {num_nodes: 0}\nproblem_configs: {p: {optimizer_config: {alg_name: dsgd}}}\n";
  CHECK(dt_config_load_string(text, strlen(text), "ctx.yaml", &dt_builtin, NULL, 0, &c) == DT_ERR_CONFIG, "num_nodes 0 accepted");
  CHECK(strstr(dt_error_message(), "ctx.yaml:2:22: experiment.graph.num_nodes: ") == dt_error_message(), "message: %s", dt_error_message());
  expect_context("a value out of range", "experiment.graph.num_nodes", "ctx.yaml", 2, 22);
  const char *good = "experiment: {graph: {num_nodes: 5}}\nproblem_configs: {p: {optimizer_config: {alg_name: dsgd}}}\n";
  const char *set[] = {"experiment.graph.num_nodes=0"};
  CHECK(dt_config_load_string(good, strlen(good), "ctx.yaml", &dt_builtin, set, 1, &c) == DT_ERR_CONFIG, "override accepted");
  expect_context("an override", "experiment.graph.num_nodes", "--set experiment.graph.num_nodes=0", 0, 0);
  const char *no_problems = "experiment: {}\n";
  CHECK(dt_config_load_string(no_problems, strlen(no_problems), "ctx.yaml", &dt_builtin, NULL, 0, &c) == DT_ERR_CONFIG, "no problems accepted");
  expect_context("a missing key", "problem_configs", "ctx.yaml", 1, 1);
  const char *tab = "experiment:\n\tname: x\n";
  CHECK(dt_config_load_string(tab, strlen(tab), "ctx.yaml", &dt_builtin, NULL, 0, &c) == DT_ERR_CONFIG, "a tab accepted");
  expect_context("a YAML error", "", "ctx.yaml", 2, 1);
  dt_error_clear();

  /* after loading: a graph the keys make impossible is placed at the key it names */
  char path[] = "/tmp/dt_test_config_XXXXXX";
  const int fd = mkstemp(path);
  const char *file = "experiment:\n  graph: {type: regular, num_nodes: 5, degree: 7}\n"
                     "problem_configs: {p: {optimizer_config: {alg_name: dsgd}}}\n";
  CHECK(fd >= 0 && write(fd, file, strlen(file)) == (ssize_t)strlen(file), "cannot write %s", path);
  if (fd >= 0) close(fd);
  CHECK_OK(dt_config_load(path, &dt_builtin, NULL, 0, &c));
  dt_graph *g = NULL;
  char expect[256];
  CHECK(dt_graph_from_config(&c, &g) == DT_ERR_CONFIG, "degree 7 on 5 nodes accepted");
  snprintf(expect, sizeof expect, "%s:2:48: graph.degree must lie in [1, num_nodes - 1] = [1, 4], found 7", path);
  CHECK(strcmp(dt_error_message(), expect) == 0, "placed: %s", dt_error_message());
  expect_context("a placed graph error", "experiment.graph.degree", path, 2, 48);
  CHECK(dt_config_positioned(&c, DT_ERR_CONFIG) == DT_ERR_CONFIG && strcmp(dt_error_message(), expect) == 0, "placed twice: %s",
        dt_error_message());
  /* a key left to its default is placed at its nearest enclosing key */
  dt_status st = DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.graph.fiedler_tolerance", "graph.fiedler_tolerance: x");
  CHECK(dt_config_positioned(&c, st) == DT_ERR_CONFIG, "code kept");
  snprintf(expect, sizeof expect, "%s:2:10: graph.fiedler_tolerance: x (experiment.graph.fiedler_tolerance is not in the file: its default)",
           path);
  CHECK(strcmp(dt_error_message(), expect) == 0, "default: %s", dt_error_message());
  expect_context("a default", "experiment.graph.fiedler_tolerance", path, 2, 10);
  /* an error about no key, or of another kind, is left as it is */
  st = DT_ERROR(DT_ERR_CONFIG, "graph.degree: a message that names a key is not read");
  CHECK(dt_config_positioned(&c, st) == DT_ERR_CONFIG && strcmp(dt_error_message(), "graph.degree: a message that names a key is not read") == 0,
        "an unkeyed error was placed: %s", dt_error_message());
  st = DT_ERROR_KEY(DT_ERR_IO, "experiment.graph.degree", "disk");
  CHECK(dt_config_positioned(&c, st) == DT_ERR_IO && strcmp(dt_error_message(), "disk") == 0, "an I/O error was placed: %s",
        dt_error_message());
  dt_error_clear();
  unlink(path);
}

/* The admission rule (dt_optimizer_accepts): every algorithm with its defaults runs on a static,
 * undirected graph without faults; on a directed or time-varying graph, under faults or without
 * the clock exactly where its declarations say; option-dependent refusals blame their key. */
static void test_admission(void) {
  dt_graph g = {.n = 5, .lambda_min = 0.0}; /* the complete graph's W = 11ᵀ/5: all that accepts reads */
  for (int i = 0; dt_optimizers[i] != NULL; i++) {
    const dt_optimizer_def *d = dt_optimizers[i];
    _Alignas(16) unsigned char opts[DT_OPTS_MAX];
    CHECK_OK(dt_plugin_opts_init(&d->plugin, opts, sizeof opts));
    const int async = dt_optimizer_asynchronous(d, opts);
    dt_refusal why = {0};
    const dt_run_env plain = {.graph = &g, .clock = 1};
    CHECK(dt_optimizer_accepts(d, opts, &plain, &why), "%s refuses a static graph: %s", d->plugin.name, why.msg);
    dt_run_env e = plain;
    e.directed = 1;
    CHECK(dt_optimizer_accepts(d, opts, &e, &why) == !!(d->runs_on & DT_RUNS_DIRECTED), "%s on a directed graph", d->plugin.name);
    e = plain;
    e.schedule = DT_SCHEDULE_RANDOM_MATCHING;
    CHECK(dt_optimizer_accepts(d, opts, &e, &why) == !!(d->runs_on & DT_RUNS_TIME_VARYING), "%s on a time-varying graph",
          d->plugin.name);
    e = plain;
    e.faults = 1;
    CHECK(dt_optimizer_accepts(d, opts, &e, &why) == (d->on_missing != DT_MISSING_REFUSED), "%s under faults", d->plugin.name);
    e = plain;
    e.clock = 0;
    CHECK(dt_optimizer_accepts(d, opts, &e, &why) == !async, "%s without the clock", d->plugin.name);
    if (!async) continue;
    CHECK(strcmp(why.key, "optimizer_config.alg_name") == 0, "%s: asynchrony refused at %s", d->plugin.name, why.key);
  }
  /* an option's refusal names it; the default refusal of faults names the algorithm */
  const dt_optimizer_def *dsgd = dt_optimizer_find("dsgd");
  _Alignas(16) unsigned char opts[DT_OPTS_MAX];
  CHECK_OK(dt_plugin_opts_init(&dsgd->plugin, opts, sizeof opts));
  CHECK_OK(dt_plugin_opts_set(&dsgd->plugin, opts, "update_order", DT_ORDER_SEQUENTIAL));
  dt_refusal why = {0};
  const dt_run_env faulty = {.graph = &g, .clock = 1, .faults = 1};
  CHECK(!dt_optimizer_accepts(dsgd, opts, &faulty, &why) && strcmp(why.key, "optimizer_config.update_order") == 0 &&
            strstr(why.msg, "sequential cannot run under") != NULL,
        "sequential dsgd under faults: %s: %s", why.key, why.msg);
  dt_optimizer_def silent = *dsgd;
  silent.on_missing = DT_MISSING_REFUSED;
  CHECK(!dt_optimizer_accepts(&silent, opts, &faulty, &why) && strcmp(why.key, "optimizer_config.alg_name") == 0 &&
            strstr(why.msg, "has no rule for a message that does not arrive") != NULL,
        "a plug-in without on_missing under faults: %s: %s", why.key, why.msg);
}

/* Keys without effect (dt_key.applies): warned about at their position, only when given a value
 * other than their default, with the key they depend on and its value; every condition of every
 * table names a key that exists; the shipped configs have none. */
static char key_paths[1 << 17];
static void collect_path(const char *path, const dt_key *key, void *ctx) {
  (void)key, (void)ctx;
  const size_t used = strlen(key_paths);
  snprintf(key_paths + used, sizeof key_paths - used, "|%s|", path);
}
static void check_condition(const char *path, const dt_key *key, void *ctx) {
  (void)ctx;
  if (key->applies == NULL) return;
  char terms[256];
  snprintf(terms, sizeof terms, "%s", key->applies);
  char *save = NULL;
  for (char *t = strtok_r(terms, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
    const size_t name_len = strcspn(t, "=!>");
    CHECK(t[name_len] != '\0', "%s: applies term '%s' has no =, != or >", path, t);
    char table[512], want[700];
    snprintf(table, sizeof table, "%s", path);
    for (int up = t[0] == '^' ? 2 : 1; up > 0; up--) *strrchr(table, '.') = '\0'; /* the key's table, or the one around it */
    snprintf(want, sizeof want, "|%s.%.*s|", table, (int)(name_len - (t[0] == '^')), t + (t[0] == '^'));
    CHECK(strstr(key_paths, want) != NULL, "%s: applies names %s, which is not a key", path, want);
  }
}

static void test_inert_keys(void) {
  const char *text =
      "experiment:\n"
      "  writeout: false\n"
      "  tensorboard: true\n"
      "  graph: {num_nodes: 4, type: cycle, p: 0.5, gen_attempts: 100, degree: 5}\n"
      "  network: {loss: 0.1, jitter: 0.3}\n"
      "problem_configs:\n"
      "  c: {optimizer_config: {alg_name: choco, compression: {operator: top_k, levels: 4}}}\n";
  CHECK_OK(dt_config_load_string(text, strlen(text), "inert.yaml", &dt_builtin, NULL, 0, &a));
  const char *want[] = {
      "inert.yaml:3:16: experiment.tensorboard: has no effect: it applies when writeout is true (here: false)\n",
      "inert.yaml:4:41: experiment.graph.p: has no effect: it applies when type is random (here: cycle)\n",
      "inert.yaml:4:73: experiment.graph.degree: has no effect: it applies when type is regular (here: cycle)\n",
      "inert.yaml:5:32: experiment.network.jitter: has no effect: it applies when speed is above 0 (here: 0.0)\n",
      ("inert.yaml:7:82: problem_configs.c.optimizer_config.compression.levels: has no effect: it applies when operator is "
       "qsgd (here: top_k)\n")};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) CHECK(strstr(a.warnings, want[i]) != NULL, "missing: %swarnings:\n%s", want[i], a.warnings);
  CHECK(strstr(a.warnings, "gen_attempts") == NULL, "a key at its default is not warned about:\n%s", a.warnings);
  int lines = 0;
  for (const char *c = a.warnings; *c != '\0'; c++) lines += *c == '\n';
  CHECK(lines == 5, "%d warnings:\n%s", lines, a.warnings);
  /* where the key they depend on says they apply, silence */
  const char *sets[] = {"experiment.writeout=true", "experiment.graph.type=random", "experiment.network.speed=100",
                        "experiment.graph.degree=3", "problem_configs.c.optimizer_config.compression.operator=qsgd"};
  CHECK_OK(dt_config_load_string(text, strlen(text), "inert.yaml", &dt_builtin, sets, 5, &a));
  CHECK(a.warnings[0] == '\0', "warnings where every key applies:\n%s", a.warnings);
  /* every condition names a key */
  key_paths[0] = '\0';
  dt_config_visit_keys(&dt_builtin, collect_path, NULL);
  dt_config_visit_keys(&dt_builtin, check_condition, NULL);
  /* the shipped configs (sweeps aside: a sweep keeps what every point has, tests/e2e/sweep.sh) */
  static const char *const shipped[] = {"dist_mnist.yaml", "dist_mnist_paper.yaml", "choco_mnist.yaml", "easgd_mnist.yaml",
                                        "downpour_mnist.yaml", "logreg_mnist.yaml", "network_mnist.yaml", "time_varying_mnist.yaml",
                                        "directed_mnist.yaml", "heterogeneity_mnist.yaml", "fashion_resnet.yaml", "cifar10_resnet20.yaml"};
  for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/configs/%s", root(), shipped[i]);
    if (dt_config_load(path, &dt_builtin, NULL, 0, &a) != DT_OK) { /* a sweep file: not loadable as one experiment */
      dt_error_clear();
      continue;
    }
    CHECK(a.warnings[0] == '\0', "%s warns:\n%s", shipped[i], a.warnings);
  }
}

int main(void) {
  test_shipped();
  test_inert_keys();
  test_overrides_and_shorthands();
  test_override_forms();
  test_docs();
  test_custom_registry();
  test_error_context();
  test_admission();
  return check_report("test_config");
}
