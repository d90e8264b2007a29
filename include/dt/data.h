/* Datasets of labelled 8-bit images: MNIST and Fashion-MNIST read from IDX files, CIFAR-10 and
 * CIFAR-100 from their binary record files (src/data/cifar.c).
 *
 * Images stay uint8 in memory — one copy per process — and are normalised only when a batch is
 * built, which keeps a 60k-image training set at 47 MB instead of 188 MB of floats. An image is
 * C planes of rows × cols bytes (channel-major, as CIFAR stores it and as the models read it). */
#ifndef DT_DATA_H
#define DT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "dt/status.h"

enum { DT_MAX_CHANNELS = 4 };

/* A file as stat(2) saw it before and after it was read (known 0: not read from one file, or the
 * two differed, the file changing while it was read): the key of its digest in the cache
 * (src/data/digest_cache.c). */
typedef struct dt_file_id {
  uint64_t dev, ino, size;
  int64_t mtime_ns, ctime_ns;
  int known;
} dt_file_id;

typedef struct dt_image_set {
  size_t count;       /* number of images (== number of labels) */
  int channels;       /* planes per image: 1 (MNIST), 3 (CIFAR); 0 reads as 1 */
  int rows, cols;     /* plane size, e.g. 28 x 28 */
  uint8_t *pixels;    /* count * channels * rows * cols, plane after plane per image; owned */
  uint8_t *labels;    /* count class ids in [0, num_classes); owned */
  dt_file_id images_file, labels_file; /* the IDX files they were read from */
} dt_image_set;

/* SHA-256 (64 hex digits) of the IDX files the set was read from, as uncompressed IDX bytes: the
 * header that (count, rows, cols) determine, then the data; equal to `sha256sum` of the
 * uncompressed files (scripts/setup.sh checks the same digests). Taken from the digest cache when
 * it knows the file unchanged, and stored there otherwise. */
void dt_image_set_sha256(const dt_image_set *set, char images_hex[65], char labels_hex[65]);

typedef enum dt_dataset_kind {
  DT_DATASET_MNIST = 0,
  DT_DATASET_FASHION_MNIST,
  DT_DATASET_CIFAR10,
  DT_DATASET_CIFAR100,
} dt_dataset_kind;

typedef struct dt_dataset {
  dt_dataset_kind kind;
  int num_classes;
  /* per-channel normalisation applied when batches are built (channels = train.channels) */
  float mean[DT_MAX_CHANNELS], std[DT_MAX_CHANNELS];
  dt_image_set train, test;
  /* CIFAR: the files read, with their roles and SHA-256, taken while reading (IDX digests are
   * computed on demand from memory, dt_image_set_sha256) */
  int num_files;
  char file_role[8][32];
  char file_sha256[8][65];
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

/* CIFAR binary records: `prefix` label bytes (1 for CIFAR-10; 2 for CIFAR-100, coarse then
 * fine), then 3,072 bytes of R, G and B 32×32 planes. Reads every record of path and appends it
 * to set (3 × 32 × 32 images; labels from prefix byte label_byte, each checked to lie in
 * [0, num_classes)). Errors: DT_ERR_DATA naming the file and, for a bad record, its number and
 * byte offset: not a regular file, empty, not a whole number of records (the truncated last
 * record), a label out of range, more than 2^20 records. sha256_hex: the file's SHA-256.
 * Not collective. */
DT_MUST_USE dt_status dt_cifar_read(const char *path, int prefix, int label_byte, int num_classes, dt_image_set *set,
                                    char sha256_hex[65]);

/* Loads the train and test sets of `kind` from dir.
 *   MNIST, Fashion-MNIST: the four IDX files (optionally .gz) in dir, or a torchvision-style
 *     root with them under MNIST/raw/ (FashionMNIST/raw/).
 *   CIFAR-10: data_batch_1..5.bin and test_batch.bin in dir or in dir/cifar-10-batches-bin/
 *     (the official archive's folder). CIFAR-100: train.bin and test.bin in dir or in
 *     dir/cifar-100-binary/; cifar100_fine selects the fine labels (100 classes) over the coarse
 *     ones (20 superclasses).
 * On failure the message lists the places searched. Caller frees with dt_dataset_free. */
DT_MUST_USE dt_status dt_dataset_load(const char *dir, dt_dataset_kind kind, int cifar100_fine, dt_dataset **out);
void dt_dataset_free(dt_dataset *ds);
/* The files ds was read from: up to 8 roles (train_images, ..., or train_batch_1, ...) and the
 * SHA-256 of each as uncompressed bytes (equal to `sha256sum` of the uncompressed file). */
void dt_dataset_files(const dt_dataset *ds, char role[][32], char sha256[][65], int *n);

/* Builds a normalised float batch for the images idx[0..n): each byte v of channel c becomes
 * (v/255 − mean[c]) / std[c], written channel-major per sample (x[b·C·rows·cols + c·rows·cols +
 * p]), and y[b] = label. x and y are caller-owned; y may be NULL. */
void dt_batch_build(const dt_image_set *set, const uint32_t *idx, size_t n, const float *mean, const float *std,
                    float *x, int32_t *y);
/* The table dt_batch_build normalises with: lut[c·256 + v] = (v/255 − mean[c]) / std[c] for
 * channels c < C (the one formula: a device backend gathers batches with this table too). */
void dt_norm_lut(int C, const float *mean, const float *std, float *lut);

/* One image augmented as torchvision's RandomCrop(padding) then RandomHorizontalFlip does it:
 * in and out hold C×H×W floats (normalised); out[c][y][x] = in[c][y + dy][x' + dx] with
 * x' = W−1−x when flip, else x, and fill[c] where that falls outside the image (the normalised
 * value of a zero pixel, −mean/std, as the padding is black before normalisation). dx and dy
 * lie in [−padding, padding] (a crop at (padding + dy, padding + dx) of the padded image). */
void dt_augment_image(const float *in, float *out, int c, int h, int w, int dx, int dy, int flip, const float *fill);

/* ---- samples and splits -------------------------------------------------------------------- */

/* Samples: either uint8 images (normalised when batches are built) or float feature rows. */
typedef struct dt_samples {
  size_t count;
  size_t dim;            /* floats per sample */
  const uint8_t *u8;     /* count*dim bytes, or NULL */
  const float *f32;      /* count*dim floats, or NULL */
  const uint8_t *labels; /* count */
  float mean[DT_MAX_CHANNELS], std[DT_MAX_CHANNELS]; /* per-channel normalisation of u8 (in_c channels) */
  int in_c, in_h, in_w;  /* shape for the model */
  int num_classes;
} dt_samples;

/* The samples idx[0..n) as float rows (normalised images, or the features) into x (n·dim floats)
 * and their labels into y: what a batch holds. */
void dt_samples_rows(const dt_samples *s, const uint32_t *idx, size_t n, float *x, int32_t *y);

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

/* A minibatch order read from a file (experiment.batch_order): node i's steps, each a list of
 * training-set indices of its own part of the split. The file is a .npz with one int array
 * node_<i> per node, steps x width, a short step padded with -1 after its indices. */
typedef struct dt_batch_order {
  int num_nodes;
  size_t *steps;   /* [num_nodes] */
  size_t **start;  /* [num_nodes][steps + 1]: step s of node i is idx[i][start[i][s] .. start[i][s+1]) */
  uint32_t **idx;  /* [num_nodes] */
  int widest;      /* the largest step */
  char sha256[65]; /* of the file */
} dt_batch_order;

/* Reads path and checks it against split (train_count samples): one array per node and no other,
 * every index in its node's part. Errors name `key` (the config key, for its position), the file,
 * the node and the step. */
DT_MUST_USE dt_status dt_batch_order_read(const char *path, const dt_split *split, size_t train_count, const char *key,
                                          dt_batch_order *out);
void dt_batch_order_free(dt_batch_order *o);

#endif
