/* The MNIST problem family's data: MNIST and Fashion-MNIST images from IDX files, kept as uint8
 * and normalised per batch. */
#include <string.h>

#include "dt/problem.h"

struct dt_data {
  dt_dataset *images;     /* MNIST / Fashion-MNIST */
  float *xtr, *xte;       /* synthetic features */
  uint8_t *ytr, *yte;
};

void dt_data_free(dt_data *d) {
  if (d == NULL) return;
  dt_dataset_free(d->images);
  dt_free(d->xtr);
  dt_free(d->xte);
  dt_free(d->ytr);
  dt_free(d->yte);
  dt_free(d);
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

enum { SYNTHETIC_CLASSES = 4 };

dt_status dt_data_load(const dt_experiment_config *e, dt_data **out, dt_samples *train, dt_samples *test) {
  dt_status st = DT_OK;
  dt_data *d = NULL;
  *out = NULL;
  DT_ALLOC_GOTO(d, 1, "data");
  if (e->dataset == DT_DATA_SYNTHETIC) {
    const int n = e->synthetic_samples, f = e->synthetic_features;
    DT_TRY_GOTO(dt_synthetic_make(e->seed, n, f, SYNTHETIC_CLASSES, 0, &d->xtr, &d->ytr));
    DT_TRY_GOTO(dt_synthetic_make(e->seed, n / 4 > 0 ? n / 4 : 1, f, SYNTHETIC_CLASSES, 1, &d->xte, &d->yte));
    const dt_samples base = {.dim = (size_t)f, .in_c = 1, .in_h = 1, .in_w = f, .num_classes = SYNTHETIC_CLASSES};
    *train = base;
    train->count = (size_t)n;
    train->f32 = d->xtr;
    train->labels = d->ytr;
    *test = base;
    test->count = (size_t)(n / 4 > 0 ? n / 4 : 1);
    test->f32 = d->xte;
    test->labels = d->yte;
  } else {
    DT_TRY_GOTO(dt_dataset_load(e->data_dir, e->dataset == DT_DATA_FASHION_MNIST ? DT_DATASET_FASHION_MNIST : DT_DATASET_MNIST,
                                &d->images));
    image_samples(d->images, &d->images->train, train);
    image_samples(d->images, &d->images->test, test);
  }
  *out = d;
  d = NULL;
cleanup:
  dt_data_free(d);
  return st;
}
