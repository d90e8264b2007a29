/* Locating and loading MNIST-style datasets. Users point data_dir at either the folder holding
 * the IDX files (what scripts/setup.sh makes) or a torchvision root (what the seed reference and
 * most PyTorch code download), so both layouts are searched, raw and .gz. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
                        "experiment.data_dir: '%s' is not a folder; run scripts/setup.sh to fetch the datasets "
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

dt_status dt_dataset_load(const char *dir, dt_dataset_kind kind, dt_dataset **out) {
  dt_status st = DT_OK;
  dt_dataset *ds = NULL;
  char path[4][4200];
  *out = NULL;
  const char *torch_sub = kind == DT_DATASET_FASHION_MNIST ? "FashionMNIST" : "MNIST";
  for (int i = 0; i < 4; i++) DT_TRY_GOTO(find_file(dir, torch_sub, file_stem[i], path[i], sizeof path[i]));

  DT_ALLOC_GOTO(ds, 1, "dataset");
  ds->kind = kind;
  ds->num_classes = 10;
  if (kind == DT_DATASET_FASHION_MNIST) {
    ds->mean = 0.2860f; /* torchvision's customary Fashion-MNIST statistics */
    ds->std = 0.3530f;
  } else {
    ds->mean = 0.1307f;
    ds->std = 0.3081f;
  }
  DT_TRY_GOTO(dt_image_set_read(path[0], path[1], ds->num_classes, &ds->train));
  DT_TRY_GOTO(dt_image_set_read(path[2], path[3], ds->num_classes, &ds->test));
  DT_CHECK_GOTO(ds->train.rows == ds->test.rows && ds->train.cols == ds->test.cols, DT_ERR_DATA,
                "%s has %dx%d images but %s has %dx%d: the files do not belong together",
                path[0], ds->train.rows, ds->train.cols, path[2], ds->test.rows, ds->test.cols);
  *out = ds;
  ds = NULL;
cleanup:
  dt_dataset_free(ds);
  return st;
}
