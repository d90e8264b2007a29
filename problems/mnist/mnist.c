/* The mnist problem: 10-class image classification on MNIST or Fashion-MNIST, read from the IDX
 * files in data_dir and kept as uint8 (normalised per batch), trained with NLL; by default the
 * seed CNN of experiment.model. */
#include <stdio.h>
#include <string.h>

#include "dt/problem.h"

static const char *const datasets[] = {"mnist", "fashion_mnist", NULL};
static const dt_key keys[] = {{0}};

static void release(void *owner) { dt_dataset_free(owner); }

static void files(const void *owner, dt_data_file *f, int *n) {
  const dt_dataset *ds = owner;
  dt_image_set_sha256(&ds->train, f[0].sha256, f[1].sha256);
  dt_image_set_sha256(&ds->test, f[2].sha256, f[3].sha256);
  snprintf(f[0].role, sizeof f[0].role, "train_images");
  snprintf(f[1].role, sizeof f[1].role, "train_labels");
  snprintf(f[2].role, sizeof f[2].role, "test_images");
  snprintf(f[3].role, sizeof f[3].role, "test_labels");
  *n = 4;
}

static void image_samples(const dt_dataset *ds, const dt_image_set *s, dt_samples *out) {
  memset(out, 0, sizeof *out);
  out->count = s->count;
  out->dim = (size_t)s->rows * (size_t)s->cols;
  out->u8 = s->pixels;
  out->labels = s->labels;
  out->mean = ds->mean;
  out->std = ds->std;
  out->in_c = 1;
  out->in_h = s->rows;
  out->in_w = s->cols;
  out->num_classes = ds->num_classes;
}

static dt_dataset_kind kind_of(const dt_experiment_config *e) {
  return strcmp(e->dataset_name, "fashion_mnist") == 0 ? DT_DATASET_FASHION_MNIST : DT_DATASET_MNIST;
}

static dt_status load(const dt_experiment_config *e, const void *opts, dt_data *out) {
  (void)opts;
  dt_dataset *ds = NULL;
  DT_TRY(dt_dataset_load(e->data_dir, kind_of(e), &ds));
  image_samples(ds, &ds->train, &out->train);
  image_samples(ds, &ds->test, &out->test);
  out->owner = ds;
  out->release = release;
  out->files = files;
  return DT_OK;
}

static void shape(const dt_experiment_config *e, const void *opts, dt_samples *s) {
  (void)e, (void)opts;
  *s = (dt_samples){.dim = 28 * 28, .in_c = 1, .in_h = 28, .in_w = 28, .num_classes = 10};
}

static void default_model(const dt_experiment_config *e, const dt_samples *s, dt_model_spec *spec) {
  (void)s;
  dt_model_spec_seed_cnn(spec, e->model.num_filters, e->model.kernel_size, e->model.linear_width);
}

const dt_problem_def dt_problem_mnist = {
    .schema =
        {
            .plugin = {.name = "mnist", .summary = "MNIST / Fashion-MNIST digit and clothing images, 10 classes", .keys = keys},
            .datasets = datasets,
            .reads_data_dir = true,
            .loss = "NLL",
            .metrics = (1u << DT_METRIC_COUNT_) - 1,
        },
    .load = load,
    .shape = shape,
    .default_model = default_model,
};
