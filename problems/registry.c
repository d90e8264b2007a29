/* The problem registry: one line per plug-in in DT_PROBLEM_LIST, and what every problem shares
 * (finding the experiment's problem, loading its data, choosing its model). */
#include <string.h>

#include "dt/problem.h"

#define DT_PROBLEM_LIST(X) \
  X(mnist)                 \
  X(logreg)                \
  X(cifar)

#define DECLARE(name) extern const dt_problem_def dt_problem_##name;
#define DEF(name) &dt_problem_##name,
#define SCHEMA(name) &dt_problem_##name.schema,
DT_PROBLEM_LIST(DECLARE)
const dt_problem_def *const dt_problems[] = {DT_PROBLEM_LIST(DEF) NULL};
const dt_problem_plugin *const dt_problem_plugins[] = {DT_PROBLEM_LIST(SCHEMA) NULL};

const dt_problem_def *dt_problem_find(const char *name) {
  for (int i = 0; dt_problems[i] != NULL; i++)
    if (strcmp(dt_problems[i]->schema.plugin.name, name) == 0) return dt_problems[i];
  return NULL;
}

dt_status dt_problem_of(const dt_experiment_config *e, const dt_problem_def **def, const void **opts) {
  const int i = e->problem_index;
  int n = 0;
  while (dt_problems[n] != NULL) n++;
  DT_CHECK(i >= 0 && i < n && dt_problem_find(e->problem) == dt_problems[i], DT_ERR_INTERNAL, "the config names problem '%s' at %d, which this build's registry does not hold", e->problem, i);
  *def = dt_problems[i];
  *opts = e->problem_opts[i];
  return DT_OK;
}

/* experiment.normalize: the per-channel mean and std that replace the dataset's, one per channel
 * of images (both or neither given). */
static dt_status normalize(const dt_experiment_config *e, dt_data *d) {
  const dt_floats *mean = &e->normalize.mean, *std = &e->normalize.std;
  if (mean->n == 0 && std->n == 0) return DT_OK;
  const char *key = mean->n > 0 ? "experiment.normalize.mean" : "experiment.normalize.std";
  dt_samples *sets[2] = {&d->train, &d->test};
  DT_CHECK_KEY(d->train.u8 != NULL, DT_ERR_CONFIG, key, "%s: normalisation applies to images; this dataset's samples are "
               "%zu-float vectors", key, d->train.dim);
  const int c = d->train.in_c;
  DT_CHECK_KEY(mean->n == c && std->n == c, DT_ERR_CONFIG, key, "%s: expected %d number%s (one per channel) for mean and for std, "
               "found %d and %d", key, c, c == 1 ? "" : "s", mean->n, std->n);
  for (int s = 0; s < 2; s++)
    for (int k = 0; k < c; k++) sets[s]->mean[k] = (float)mean->v[k], sets[s]->std[k] = (float)std->v[k];
  return DT_OK;
}

dt_status dt_data_load(const dt_experiment_config *e, dt_data *out) {
  const dt_problem_def *def;
  const void *opts;
  memset(out, 0, sizeof *out);
  DT_TRY(dt_problem_of(e, &def, &opts));
  DT_TRY(def->load(e, opts, out));
  return normalize(e, out);
}

void dt_data_free(dt_data *d) {
  if (d->release != NULL) d->release(d->owner);
  memset(d, 0, sizeof *d);
}

dt_status dt_problem_model(const dt_config *cfg, const dt_samples *shape, dt_model_spec *spec) {
  const dt_problem_def *def;
  const void *opts;
  DT_TRY(dt_problem_of(&cfg->experiment, &def, &opts));
  const dt_model_config *m = &cfg->experiment.model;
  if (m->num_layers > 0) {
    memset(spec, 0, sizeof *spec);
    spec->num_layers = m->num_layers;
    memcpy(spec->layers, m->layers, sizeof(dt_layer_spec) * (size_t)m->num_layers);
  } else if (m->name != DT_MODEL_DEFAULT) {
    dt_model_spec_named(spec, (dt_model_name)m->name, (dt_model_norm)m->norm, m->groups, m->linear_width, shape->in_c, shape->in_h,
                        shape->in_w, shape->num_classes);
  } else {
    def->default_model(&cfg->experiment, shape, spec);
  }
  spec->in_channels = shape->in_c;
  spec->in_height = shape->in_h;
  spec->in_width = shape->in_w;
  spec->num_classes = shape->num_classes;
  return DT_OK;
}

dt_status dt_problem_model_unloaded(const dt_config *cfg, dt_model_spec *spec) {
  const dt_problem_def *def;
  const void *opts;
  DT_TRY(dt_problem_of(&cfg->experiment, &def, &opts));
  dt_samples shape;
  def->shape(&cfg->experiment, opts, &shape);
  return dt_problem_model(cfg, &shape, spec);
}
