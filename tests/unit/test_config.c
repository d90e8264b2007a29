/* Config loading: the shipped configs and the seed format load unchanged; the resolved config
 * emitted as YAML loads back to the identical struct; --set overrides; shorthands and aliases;
 * configs/README.md lists every key; every optimizer folder documents its keys. */
#include <stdlib.h>

#include "../../optimizers/cadmm/cadmm.h"
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

int main(void) {
  test_shipped();
  test_overrides_and_shorthands();
  test_override_forms();
  test_docs();
  test_custom_registry();
  return check_report("test_config");
}
