/* Locating and loading the image datasets. Users point data_dir at either the folder holding the
 * files (what scripts/setup.sh makes) or the folder an official archive or torchvision unpacks
 * into, so both layouts are searched (IDX files raw and .gz). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dt/data.h"

static const char *const file_stem[4] = {
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
};

static int is_regular_file(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Finds `stem` (or stem.gz) under one of the candidate folders; writes the path to out. */
static dt_status find_file(const char *dir, const char *torch_sub, const char *stem, char *out,
                           size_t size) {
  char sub[4096];
  snprintf(sub, sizeof sub, "%s/%s/raw", dir, torch_sub);
  const char *folders[2] = {dir, sub};
  for (int f = 0; f < 2; f++) {
    for (int gz = 0; gz < 2; gz++) {
      snprintf(out, size, "%s/%s%s", folders[f], stem, gz ? ".gz" : "");
      if (is_regular_file(out)) return DT_OK;
    }
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.data_dir",
                        "experiment.data_dir: '%s' is not a folder (a relative data_dir is relative to its config file's folder); "
                        "run scripts/setup.sh to fetch the datasets "
                        "or set experiment.data_dir",
                        dir);
  return DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.data_dir",
                      "experiment.data_dir: cannot find %s: looked for %s/%s[.gz] and %s/%s[.gz]; run scripts/setup.sh "
                      "or point experiment.data_dir at the folder holding the IDX files",
                      stem, dir, stem, sub, stem);
}

void dt_dataset_free(dt_dataset *ds) {
  if (ds == NULL) return;
  dt_image_set_free(&ds->train);
  dt_image_set_free(&ds->test);
  dt_free(ds);
}

/* MNIST or Fashion-MNIST: the four IDX files. */
static dt_status load_idx(const char *dir, dt_dataset *ds) {
  char path[4][4200];
  const char *torch_sub = ds->kind == DT_DATASET_FASHION_MNIST ? "FashionMNIST" : "MNIST";
  for (int i = 0; i < 4; i++) DT_TRY(find_file(dir, torch_sub, file_stem[i], path[i], sizeof path[i]));
  ds->num_classes = 10;
  if (ds->kind == DT_DATASET_FASHION_MNIST) {
    ds->mean[0] = 0.2860f; /* torchvision's customary Fashion-MNIST statistics */
    ds->std[0] = 0.3530f;
  } else {
    ds->mean[0] = 0.1307f;
    ds->std[0] = 0.3081f;
  }
  DT_TRY(dt_image_set_read(path[0], path[1], ds->num_classes, &ds->train));
  DT_TRY(dt_image_set_read(path[2], path[3], ds->num_classes, &ds->test));
  DT_CHECK(ds->train.rows == ds->test.rows && ds->train.cols == ds->test.cols, DT_ERR_DATA,
           "%s has %dx%d images but %s has %dx%d: the files do not belong together", path[0], ds->train.rows,
           ds->train.cols, path[2], ds->test.rows, ds->test.cols);
  return DT_OK;
}

/* The folder holding CIFAR file `first`: dir itself or the archive's folder `sub` inside it. */
static dt_status find_cifar_dir(const char *dir, const char *name, const char *sub, const char *first, char *out,
                                size_t size) {
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", dir, first);
  if (is_regular_file(path)) {
    snprintf(out, size, "%s", dir);
    return DT_OK;
  }
  snprintf(path, sizeof path, "%s/%s/%s", dir, sub, first);
  if (is_regular_file(path)) {
    snprintf(out, size, "%s/%s", dir, sub);
    return DT_OK;
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.data_dir",
                        "experiment.data_dir: '%s' is not a folder (a relative data_dir is relative to its config file's folder); "
                        "run scripts/setup.sh --dataset %s or set "
                        "experiment.data_dir",
                        dir, name);
  return DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.data_dir",
                      "experiment.data_dir: cannot find %s: looked for %s/%s and %s/%s/%s; run scripts/setup.sh --dataset %s, "
                      "or point experiment.data_dir at the folder holding the CIFAR binary files",
                      first, dir, first, dir, sub, first, name);
}

/* One CIFAR file into set, recorded in ds's file list under role. */
static dt_status load_cifar_file(dt_dataset *ds, const char *folder, const char *name, const char *role, int prefix,
                                 int label_byte, dt_image_set *set) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", folder, name);
  const int f = ds->num_files;
  DT_CHECK(f < 8, DT_ERR_INTERNAL, "more than 8 files in one dataset");
  /* a file missing beside the others is the folder's fault, refused at data_dir like the first */
  if (!is_regular_file(path))
    return DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.data_dir",
                        "experiment.data_dir: %s holds %s but not %s (%s); the %s binary version has %s; run scripts/setup.sh "
                        "--dataset %s",
                        folder, ds->kind == DT_DATASET_CIFAR10 ? "data_batch_1.bin" : "train.bin", name,
                        access(path, F_OK) == 0 ? "not a regular file" : "no such file",
                        ds->kind == DT_DATASET_CIFAR10 ? "CIFAR-10" : "CIFAR-100",
                        ds->kind == DT_DATASET_CIFAR10 ? "data_batch_1.bin to data_batch_5.bin and test_batch.bin" : "train.bin and test.bin",
                        ds->kind == DT_DATASET_CIFAR10 ? "cifar10" : "cifar100");
  DT_TRY(dt_cifar_read(path, prefix, label_byte, ds->num_classes, set, ds->file_sha256[f]));
  snprintf(ds->file_role[f], sizeof ds->file_role[f], "%s", role);
  ds->num_files++;
  return DT_OK;
}

/* CIFAR-10 (five training batches and one test batch) or CIFAR-100 (train.bin, test.bin), with
 * the per-channel statistics of their training sets that the field normalises with. */
static dt_status load_cifar(const char *dir, int fine, dt_dataset *ds) {
  char folder[4200];
  if (ds->kind == DT_DATASET_CIFAR10) {
    static const float mean[3] = {0.4914f, 0.4822f, 0.4465f}, std[3] = {0.2470f, 0.2435f, 0.2616f};
    memcpy(ds->mean, mean, sizeof mean);
    memcpy(ds->std, std, sizeof std);
    ds->num_classes = 10;
    DT_TRY(find_cifar_dir(dir, "cifar10", "cifar-10-batches-bin", "data_batch_1.bin", folder, sizeof folder));
    for (int b = 1; b <= 5; b++) {
      char name[32], role[32];
      snprintf(name, sizeof name, "data_batch_%d.bin", b);
      snprintf(role, sizeof role, "train_batch_%d", b);
      DT_TRY(load_cifar_file(ds, folder, name, role, 1, 0, &ds->train));
    }
    return load_cifar_file(ds, folder, "test_batch.bin", "test_batch", 1, 0, &ds->test);
  }
  static const float mean[3] = {0.5071f, 0.4865f, 0.4409f}, std[3] = {0.2673f, 0.2564f, 0.2762f};
  memcpy(ds->mean, mean, sizeof mean);
  memcpy(ds->std, std, sizeof std);
  ds->num_classes = fine ? 100 : 20;
  DT_TRY(find_cifar_dir(dir, "cifar100", "cifar-100-binary", "train.bin", folder, sizeof folder));
  DT_TRY(load_cifar_file(ds, folder, "train.bin", "train", 2, fine, &ds->train));
  return load_cifar_file(ds, folder, "test.bin", "test", 2, fine, &ds->test);
}

dt_status dt_dataset_load(const char *dir, dt_dataset_kind kind, int cifar100_fine, dt_dataset **out) {
  dt_status st = DT_OK;
  dt_dataset *ds = NULL;
  *out = NULL;
  DT_ALLOC_GOTO(ds, 1, "dataset");
  ds->kind = kind;
  if (kind == DT_DATASET_CIFAR10 || kind == DT_DATASET_CIFAR100) DT_TRY_GOTO(load_cifar(dir, cifar100_fine, ds));
  else DT_TRY_GOTO(load_idx(dir, ds));
  *out = ds;
  ds = NULL;
cleanup:
  dt_dataset_free(ds);
  return st;
}

void dt_dataset_files(const dt_dataset *ds, char role[][32], char sha256[][65], int *n) {
  if (ds->num_files > 0) { /* CIFAR: taken while reading */
    for (int f = 0; f < ds->num_files; f++) {
      memcpy(role[f], ds->file_role[f], sizeof role[f]);
      memcpy(sha256[f], ds->file_sha256[f], sizeof sha256[f]);
    }
    *n = ds->num_files;
    return;
  }
  static const char *const roles[4] = {"train_images", "train_labels", "test_images", "test_labels"};
  dt_image_set_sha256(&ds->train, sha256[0], sha256[1]);
  dt_image_set_sha256(&ds->test, sha256[2], sha256[3]);
  for (int f = 0; f < 4; f++) snprintf(role[f], sizeof role[f], "%s", roles[f]);
  *n = 4;
}
