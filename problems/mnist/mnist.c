/* The mnist problem: 10-class image classification on MNIST or Fashion-MNIST, read from the IDX
 * files in data_dir and kept as uint8 (normalised per batch), trained with NLL; by default the
 * seed CNN of experiment.model. */
#include <stdio.h>
#include <string.h>

#include "../images_impl.h"

static const char *const datasets[] = {"mnist", "fashion_mnist", NULL};
static const dt_key keys[] = {{0}};

static dt_dataset_kind kind_of(const dt_experiment_config *e) {
  return strcmp(e->dataset_name, "fashion_mnist") == 0 ? DT_DATASET_FASHION_MNIST : DT_DATASET_MNIST;
}

static dt_status load(const dt_experiment_config *e, const void *opts, dt_data *out) {
  (void)opts;
  dt_dataset *ds = NULL;
  DT_TRY(dt_dataset_load(e->data_dir, kind_of(e), 0, &ds));
  problem_image_data(ds, out);
  return DT_OK;
}

static void shape(const dt_experiment_config *e, const void *opts, dt_samples *s) {
  (void)e, (void)opts;
  enum { SIDE = 28 }; /* both datasets' images: 28 × 28, one channel */
  *s = (dt_samples){.dim = SIDE * SIDE, .in_c = 1, .in_h = SIDE, .in_w = SIDE, .num_classes = 10};
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
