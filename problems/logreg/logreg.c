/* The logreg problem: multinomial logistic regression (a single linear layer under log-softmax
 * and NLL, plus the problem's L2 term) on synthetic data drawn here (dataset: synthetic). The data
 * come from a known logistic model, so the optimum is finite and unique (with L2 > 0, strictly).
 * (Logistic regression on MNIST pixels is the mnist problem with layers [flatten, linear].) */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "dt/problem.h"
#include "dt/rng.h"

dt_status dt_synthetic_make(uint64_t seed, int n, int features, int classes, uint64_t stream,
                            float **x, uint8_t **labels) {
  dt_status st = DT_OK;
  double *w = NULL, *z = NULL;
  *x = NULL;
  *labels = NULL;
  DT_ALLOC_GOTO(w, (size_t)classes * features, "synthetic model");
  DT_ALLOC_GOTO(z, classes, "synthetic model");
  DT_ALLOC_GOTO(*x, (size_t)n * features, "synthetic data");
  DT_ALLOC_GOTO(*labels, n, "synthetic labels");
  dt_rng r;
  dt_rng_init(&r, seed, DT_RNG_DATA, 1000); /* the true model: the same for train and test */
  for (int i = 0; i < classes * features; i++) w[i] = dt_rng_normal(&r) / sqrt((double)features);
  dt_rng_init(&r, seed, DT_RNG_DATA, stream);
  for (int s = 0; s < n; s++) {
    float *xs = *x + (size_t)s * features;
    for (int f = 0; f < features; f++) xs[f] = (float)dt_rng_normal(&r);
    double mx = -INFINITY, sum = 0;
    for (int c = 0; c < classes; c++) {
      z[c] = 0;
      for (int f = 0; f < features; f++) z[c] += 3.0 * w[c * features + f] * xs[f];
      mx = z[c] > mx ? z[c] : mx;
    }
    for (int c = 0; c < classes; c++) sum += z[c] = exp(z[c] - mx);
    double u = dt_rng_double(&r) * sum, acc = 0;
    int label = classes - 1;
    for (int c = 0; c < classes; c++) {
      acc += z[c];
      if (u < acc) {
        label = c;
        break;
      }
    }
    (*labels)[s] = (uint8_t)label;
  }
cleanup:
  dt_free(w);
  dt_free(z);
  if (st != DT_OK) {
    dt_free(*x);
    dt_free(*labels);
    *x = NULL;
    *labels = NULL;
  }
  return st;
}

enum { CLASSES = 4 };

typedef struct logreg_opts {
  int samples, features;
} logreg_opts;

static const char *const datasets[] = {"synthetic", NULL};
static const dt_key keys[] = {
    {.name = "samples", .applies = "^dataset=synthetic", .type = DT_KEY_INT, .offset = offsetof(logreg_opts, samples), .def = "2000", .min = 10, .max = 1 << 24,
     .help = "synthetic: training samples (a test set of a quarter of that is drawn too)"},
    {.name = "features", .applies = "^dataset=synthetic", .type = DT_KEY_INT, .offset = offsetof(logreg_opts, features), .def = "20", .min = 1, .max = 100000,
     .help = "synthetic: features per sample"},
    {0},
};

typedef struct owner {
  float *xtr, *xte;
  uint8_t *ytr, *yte;
} owner;

static void release(void *p) {
  owner *o = p;
  if (o == NULL) return;
  dt_free(o->xtr);
  dt_free(o->xte);
  dt_free(o->ytr);
  dt_free(o->yte);
  dt_free(o);
}

static void shape(const dt_experiment_config *e, const void *opts, dt_samples *s) {
  (void)e;
  const logreg_opts *o = opts;
  *s = (dt_samples){.dim = (size_t)o->features, .in_c = 1, .in_h = 1, .in_w = o->features, .num_classes = CLASSES};
}

static dt_status load(const dt_experiment_config *e, const void *opts, dt_data *out) {
  const logreg_opts *lo = opts;
  const int n = lo->samples, f = lo->features, nt = n / 4 > 0 ? n / 4 : 1;
  dt_status st = DT_OK;
  owner *o = NULL;
  DT_ALLOC_GOTO(o, 1, "synthetic data");
  DT_TRY_GOTO(dt_synthetic_make(e->seed, n, f, CLASSES, 0, &o->xtr, &o->ytr));
  DT_TRY_GOTO(dt_synthetic_make(e->seed, nt, f, CLASSES, 1, &o->xte, &o->yte));
  shape(e, opts, &out->train);
  out->train.count = (size_t)n;
  out->train.f32 = o->xtr;
  out->train.labels = o->ytr;
  shape(e, opts, &out->test);
  out->test.count = (size_t)nt;
  out->test.f32 = o->xte;
  out->test.labels = o->yte;
  out->owner = o;
  out->release = release;
  o = NULL;
cleanup:
  release(o);
  return st;
}

static void default_model(const dt_experiment_config *e, const dt_samples *s, dt_model_spec *spec) {
  (void)e;
  memset(spec, 0, sizeof *spec);
  spec->num_layers = 2;
  spec->layers[0] = (dt_layer_spec){.kind = DT_LAYER_FLATTEN};
  spec->layers[1] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = s->num_classes};
}

const dt_problem_def dt_problem_logreg = {
    .schema =
        {
            .plugin = {.name = "logreg", .summary = "synthetic dataset size", .keys = keys, .opts_size = sizeof(logreg_opts)},
            .section = "synthetic",
            .datasets = datasets,
            .loss = "NLL",
            .metrics = (1u << DT_METRIC_COUNT_) - 1,
        },
    .load = load,
    .shape = shape,
    .default_model = default_model,
};
