/* What the image problems (mnist, cifar) share: a loaded dt_dataset seen as the problem's data,
 * its samples kept as uint8 and normalised per channel when batches are built. */
#include <string.h>

#include "images_impl.h"

static void release(void *owner) { dt_dataset_free(owner); }

static void files(const void *owner, dt_data_file *f, int *n) {
  char role[8][32], sha[8][65];
  dt_dataset_files(owner, role, sha, n);
  for (int i = 0; i < *n; i++) {
    memcpy(f[i].role, role[i], sizeof f[i].role);
    memcpy(f[i].sha256, sha[i], sizeof f[i].sha256);
  }
}

static void image_samples(const dt_dataset *ds, const dt_image_set *s, dt_samples *out) {
  memset(out, 0, sizeof *out);
  out->count = s->count;
  out->in_c = s->channels;
  out->in_h = s->rows;
  out->in_w = s->cols;
  out->dim = (size_t)s->channels * (size_t)s->rows * (size_t)s->cols;
  out->u8 = s->pixels;
  out->labels = s->labels;
  memcpy(out->mean, ds->mean, sizeof out->mean);
  memcpy(out->std, ds->std, sizeof out->std);
  out->num_classes = ds->num_classes;
}

void problem_image_data(dt_dataset *ds, dt_data *out) {
  image_samples(ds, &ds->train, &out->train);
  image_samples(ds, &ds->test, &out->test);
  out->owner = ds;
  out->release = release;
  out->files = files;
  out->files_digest_of = ds->num_files > 0 ? "bytes" : "uncompressed IDX content";
}
