/* Datasets of labelled 8-bit images (MNIST, Fashion-MNIST) read from IDX files.
 *
 * Images stay uint8 in memory — one copy per process — and are normalised only when a batch is
 * built, which keeps a 60k-image training set at 47 MB instead of 188 MB of floats. */
#ifndef DT_DATA_H
#define DT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "dt/status.h"

typedef struct dt_image_set {
  size_t count;    /* number of images (== number of labels) */
  int rows, cols;  /* image size, e.g. 28 x 28 */
  uint8_t *pixels; /* count * rows * cols, row-major per image; owned */
  uint8_t *labels; /* count class ids in [0, num_classes); owned */
} dt_image_set;

/* SHA-256 (64 hex digits) of the IDX files the set was read from, as uncompressed IDX bytes: the
 * header that (count, rows, cols) determine, then the data; equal to `sha256sum` of the
 * uncompressed files (scripts/setup.sh checks the same digests). */
void dt_image_set_sha256(const dt_image_set *set, char images_hex[65], char labels_hex[65]);

typedef enum dt_dataset_kind {
  DT_DATASET_MNIST = 0,
  DT_DATASET_FASHION_MNIST,
} dt_dataset_kind;

typedef struct dt_dataset {
  dt_dataset_kind kind;
  int num_classes;
  float mean, std; /* normalisation applied when batches are built */
  dt_image_set train, test;
} dt_dataset;

/* Reads an IDX file of unsigned bytes, raw or gzip-compressed (detected from the content).
 * `ndims` must match the file (3 for images, 1 for labels). On success *dims holds the ndims
 * dimensions and *data a malloc'd buffer of their product (caller frees with dt_free).
 * Errors: DT_ERR_IO (cannot open/read), DT_ERR_DATA (wrong magic, type or rank; truncated,
 * corrupt or over-long file), each naming the file. Not collective. */
DT_MUST_USE dt_status dt_idx_read(const char *path, int ndims, uint32_t *dims, uint8_t **data);

/* Reads an image file and a label file into one set; checks that the counts match and labels
 * lie in [0, num_classes). Frees nothing on failure (set is left empty). */
DT_MUST_USE dt_status dt_image_set_read(const char *images_path, const char *labels_path, int num_classes,
                                        dt_image_set *set);
void dt_image_set_free(dt_image_set *set);

/* Loads the train and test sets of `kind` from dir. dir may hold the four IDX files (optionally
 * .gz) directly, or be a torchvision-style root with them under MNIST/raw/ (FashionMNIST/raw/).
 * On failure the message lists the places searched. Caller frees with dt_dataset_free. */
DT_MUST_USE dt_status dt_dataset_load(const char *dir, dt_dataset_kind kind, dt_dataset **out);
void dt_dataset_free(dt_dataset *ds);

/* Builds a normalised float batch: x[b*rows*cols + p] = (pixel/255 - mean) / std for the images
 * idx[0..n), and y[b] = label. x and y are caller-owned; y may be NULL. */
void dt_batch_build(const dt_image_set *set, const uint32_t *idx, size_t n, float mean,
                    float std, float *x, int32_t *y);

/* ---- samples and splits -------------------------------------------------------------------- */

/* Samples: either uint8 images (normalised when batches are built) or float feature rows. */
typedef struct dt_samples {
  size_t count;
  size_t dim;            /* floats per sample */
  const uint8_t *u8;     /* count*dim bytes, or NULL */
  const float *f32;      /* count*dim floats, or NULL */
  const uint8_t *labels; /* count */
  float mean, std;       /* normalisation of u8 */
  int in_c, in_h, in_w;  /* shape for the model */
  int num_classes;
} dt_samples;

/* ---- splits ------------------------------------------------------------------------------- */

typedef struct dt_split {
  int num_nodes;
  size_t *start;   /* num_nodes + 1 offsets into idx */
  uint32_t *idx;   /* sample indices of node i: idx[start[i] .. start[i+1]) */
} dt_split;

/* Splits `train` over the experiment's nodes as configured (random, hetero, dirichlet), drawing
 * from (seed, DT_RNG_SPLIT). Errors: DT_ERR_CONFIG when a node would get no sample. */
struct dt_experiment_config;
DT_MUST_USE dt_status dt_split_make(const dt_samples *train, const struct dt_experiment_config *e, dt_split *out);
void dt_split_free(dt_split *s);
static inline size_t dt_split_size(const dt_split *s, int node) { return s->start[node + 1] - s->start[node]; }

#endif
