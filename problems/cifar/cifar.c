/* The cifar problem: image classification on CIFAR-10 (10 classes) or CIFAR-100 (100 fine classes,
 * or 20 coarse superclasses), read from the official binary files in data_dir and kept as uint8
 * 3×32×32 images, normalised per channel when batches are built; trained with NLL. The default
 * model is LeNet-5. */
#include <stddef.h>
#include <string.h>

#include "../images_impl.h"

static const char *const datasets[] = {"cifar10", "cifar100", NULL};

typedef struct cifar_opts {
  int label; /* CIFAR-100: 0 fine, 1 coarse */
} cifar_opts;

static const char *const label_names[] = {"fine", "coarse", NULL};
static const dt_key keys[] = {
    {.name = "label", .applies = "^dataset=cifar100", .type = DT_KEY_ENUM, .offset = offsetof(cifar_opts, label), .def = "fine", .values = label_names,
     .help = "cifar100: fine (100 classes) or coarse (20 superclasses) labels; cifar10 has one label"},
    {0},
};

static int is_cifar100(const dt_experiment_config *e) { return strcmp(e->dataset_name, "cifar100") == 0; }

static int classes(const dt_experiment_config *e, const cifar_opts *o) {
  if (!is_cifar100(e)) return 10;
  return o->label == 0 ? 100 : 20;
}

static dt_status load(const dt_experiment_config *e, const void *opts, dt_data *out) {
  const cifar_opts *o = opts;
  dt_dataset *ds = NULL;
  DT_TRY(dt_dataset_load(e->data_dir, is_cifar100(e) ? DT_DATASET_CIFAR100 : DT_DATASET_CIFAR10, o->label == 0, &ds));
  problem_image_data(ds, out);
  return DT_OK;
}

static void shape(const dt_experiment_config *e, const void *opts, dt_samples *s) {
  enum { SIDE = 32 };
  *s = (dt_samples){.dim = 3 * SIDE * SIDE, .in_c = 3, .in_h = SIDE, .in_w = SIDE, .num_classes = classes(e, opts)};
}

static void default_model(const dt_experiment_config *e, const dt_samples *s, dt_model_spec *spec) {
  (void)e;
  dt_model_spec_lenet5(spec, s->in_c, s->in_h, s->in_w, s->num_classes);
}

const dt_problem_def dt_problem_cifar = {
    .schema =
        {
            .plugin = {.name = "cifar",
                       .summary = "CIFAR-10 / CIFAR-100 colour images, 10, 100 or 20 classes",
                       .keys = keys,
                       .opts_size = sizeof(cifar_opts)},
            .section = "cifar",
            .datasets = datasets,
            .reads_data_dir = true,
            .loss = "NLL",
            .metrics = (1u << DT_METRIC_COUNT_) - 1,
        },
    .load = load,
    .shape = shape,
    .default_model = default_model,
};
