/* Config loading: the shipped configs and the seed format load unchanged; the resolved config
 * emitted as YAML loads back to the identical struct; --set overrides; shorthands and aliases;
 * configs/README.md lists every key; every optimizer folder documents its keys. */
#include <stdlib.h>

#include "../../optimizers/cadmm/cadmm.h"
#include "check.h"
#include "dt/config.h"
#include "dt/optimizer.h"

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
  CHECK_OK(dt_config_load(path, NULL, 0, &a));
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  CHECK_OK(dt_config_emit(&a, mem));
  fclose(mem);
  CHECK_OK(dt_config_load_string(text, len, path, NULL, 0, &b));
  CHECK(memcmp(&a, &b, sizeof a) == 0, "%s: the emitted config does not load back identically:\n%s", name, text);
  /* and emitting again gives the same text */
  char *text2 = NULL;
  size_t len2 = 0;
  mem = open_memstream(&text2, &len2);
  CHECK_OK(dt_config_emit(&b, mem));
  fclose(mem);
  CHECK(len == len2 && memcmp(text, text2, len) == 0, "%s: emitting is not stable", name);
  free(text);
  free(text2);
}

static void test_shipped(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/configs/dist_mnist_paper.yaml", root());
  CHECK_OK(dt_config_load(path, NULL, 0, &a));
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
}

static void test_overrides_and_shorthands(void) {
  const char *text =
      "experiment: {name: t, graph: {num_nodes: 3}}\n"
      "problem_configs:\n"
      "  p1: {optimizer_config: {alg_name: dinno, primal_lr: 0.01, persistant_primal_opt: True}}\n";
  const char *sets[] = {"experiment.graph.num_nodes=7", "experiment.seed=42", "problem_configs.p1.optimizer_config.rho_init=2",
                        "experiment.graph.mixing=uniform"};
  CHECK_OK(dt_config_load_string(text, strlen(text), "inline.yaml", sets, 4, &a));
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
  dt_config_visit_keys(in_readme, NULL);
  CHECK(missing == 0, "configs/README.md misses %d keys", missing);
  free(text);
  for (int i = 0; dt_optimizers[i] != NULL; i++) {
    const dt_optimizer_def *d = dt_optimizers[i];
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
}

int main(void) {
  test_shipped();
  test_overrides_and_shorthands();
  test_docs();
  return check_report("test_config");
}
