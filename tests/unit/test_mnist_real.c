/* The real datasets as scripts/setup.sh installs them: sizes, the known first labels, the
 * published class counts, and MNIST's pixel mean/std (0.1307/0.3081) that normalisation uses.
 * Skipped (77) when data/ has not been fetched; a folder that is there but does not load (a
 * corrupt or truncated file) fails. */
#include <stdlib.h>
#include <sys/stat.h>

#include "check.h"
#include "dt/data.h"

static int load(const char *sub, dt_dataset_kind kind, dt_dataset **ds) {
  const char *root = getenv("DT_SOURCE_ROOT");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/data/%s", root ? root : ".", sub);
  struct stat sb;
  *ds = NULL;
  if (stat(dir, &sb) != 0) {
    fprintf(stderr, "skipping %s: %s is not there (scripts/setup.sh fetches it)\n", sub, dir);
    return 0;
  }
  CHECK_OK(dt_dataset_load(dir, kind, 0, ds));
  return *ds != NULL;
}

int main(void) {
  dt_dataset *ds = NULL;
  int loaded = 0;
  if (load("mnist", DT_DATASET_MNIST, &ds)) {
    loaded++;
    CHECK(ds->train.count == 60000 && ds->test.count == 10000, "counts %zu %zu", ds->train.count,
          ds->test.count);
    CHECK(ds->train.rows == 28 && ds->train.cols == 28, "size");
    const uint8_t first_train[5] = {5, 0, 4, 1, 9}, first_test[3] = {7, 2, 1};
    CHECK(memcmp(ds->train.labels, first_train, 5) == 0, "first train labels");
    CHECK(memcmp(ds->test.labels, first_test, 3) == 0, "first test labels");
    const int per_class[10] = {5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949};
    int hist[10] = {0};
    for (size_t i = 0; i < ds->train.count; i++) hist[ds->train.labels[i]]++;
    for (int c = 0; c < 10; c++) CHECK(hist[c] == per_class[c], "class %d: %d", c, hist[c]);
    double s = 0, s2 = 0;
    size_t n = ds->train.count * 784;
    for (size_t i = 0; i < n; i++) {
      double v = ds->train.pixels[i] / 255.0;
      s += v;
      s2 += v * v;
    }
    double mean = s / n, std = sqrt(s2 / n - mean * mean);
    CHECK_CLOSE(mean, 0.1307, 0, 5e-5);
    CHECK_CLOSE(std, 0.3081, 0, 5e-5);
    dt_dataset_free(ds);
  }
  if (load("fashion_mnist", DT_DATASET_FASHION_MNIST, &ds)) {
    loaded++;
    CHECK(ds->train.count == 60000 && ds->test.count == 10000, "fashion counts");
    int hist[10] = {0};
    for (size_t i = 0; i < ds->train.count; i++) hist[ds->train.labels[i]]++;
    for (int c = 0; c < 10; c++) CHECK(hist[c] == 6000, "fashion class %d: %d", c, hist[c]);
    dt_dataset_free(ds);
  }
  if (loaded == 0 && check_failures == 0) return 77;
  return check_report("test_mnist_real");
}
