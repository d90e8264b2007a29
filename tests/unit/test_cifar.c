/* CIFAR-10 and CIFAR-100 binary readers on small files this test writes (no copy of CIFAR can be
 * downloaded here): both folder layouts, the channel-major image layout, per-channel
 * normalisation, fine and coarse labels, each file's SHA-256 against an independent digest of its
 * bytes, and every malformed file (truncated record, empty, label out of range, a folder, a missing
 * file) answered with a message naming the file and, for a record, its number and byte offset. */
#define _POSIX_C_SOURCE 200809L
#include <nettle/sha2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dt/data.h"

enum { IMG = 3 * 32 * 32 };

static char dir[256];

static const char *at(const char *name) {
  static char path[4][600];
  static int k = 0;
  k = (k + 1) % 4;
  snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
  return path[k];
}

/* The pixel byte of record r (of file `file`), channel c, position p: distinct across all three. */
static uint8_t pixel(int file, int r, int c, int p) { return (uint8_t)(file * 53 + r * 29 + c * 101 + p * 7); }

/* n records with `prefix` label bytes: label byte j of record r is labels[j](r); written to
 * name, whose bytes are returned in *bytes (caller frees) for the digest check. */
static size_t write_records(const char *name, int file, int n, int prefix, int (*label)(int r, int j), uint8_t **bytes) {
  const size_t rec = (size_t)prefix + IMG, size = rec * (size_t)n;
  uint8_t *b = malloc(size > 0 ? size : 1);
  for (int r = 0; r < n; r++) {
    uint8_t *p = b + rec * (size_t)r;
    for (int j = 0; j < prefix; j++) p[j] = (uint8_t)label(r, j);
    for (int c = 0; c < 3; c++)
      for (int q = 0; q < 1024; q++) p[prefix + c * 1024 + q] = pixel(file, r, c, q);
  }
  FILE *f = fopen(at(name), "wb");
  fwrite(b, 1, size, f);
  fclose(f);
  if (bytes != NULL) *bytes = b;
  else free(b);
  return size;
}

static int label10(int r, int j) { return (void)j, r % 10; }
static int label100(int r, int j) { return j == 0 ? r % 20 : (r * 7) % 100; } /* coarse, fine */

static void hex_of(const uint8_t *b, size_t n, char hex[65]) {
  struct sha256_ctx ctx;
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_init(&ctx);
  sha256_update(&ctx, n, b);
  sha256_digest(&ctx, sizeof d, d);
  for (int i = 0; i < SHA256_DIGEST_SIZE; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static void test_cifar10(void) {
  /* the official archive's layout: <dir>/cifar-10-batches-bin/ */
  mkdir(at("c10"), 0755);
  mkdir(at("c10/cifar-10-batches-bin"), 0755);
  uint8_t *bytes[6];
  size_t sizes[6];
  for (int b = 1; b <= 5; b++) {
    char name[96];
    snprintf(name, sizeof name, "c10/cifar-10-batches-bin/data_batch_%d.bin", b);
    sizes[b - 1] = write_records(name, b, 3 + b, 1, label10, &bytes[b - 1]);
  }
  sizes[5] = write_records("c10/cifar-10-batches-bin/test_batch.bin", 9, 4, 1, label10, &bytes[5]);
  dt_dataset *ds = NULL;
  CHECK_OK(dt_dataset_load(at("c10"), DT_DATASET_CIFAR10, 1, &ds));
  if (ds == NULL) return;
  CHECK(ds->train.count == 4 + 5 + 6 + 7 + 8 && ds->test.count == 4, "counts %zu %zu", ds->train.count, ds->test.count);
  CHECK(ds->train.channels == 3 && ds->train.rows == 32 && ds->train.cols == 32 && ds->num_classes == 10, "shape");
  /* record 2 of data_batch_2 is training image 4 + 2: its planes as written */
  CHECK(ds->train.labels[6] == 2, "label %u", ds->train.labels[6]);
  int same = 1;
  for (int c = 0; c < 3; c++)
    for (int q = 0; q < 1024; q++) same &= ds->train.pixels[6 * (size_t)IMG + (size_t)c * 1024 + (size_t)q] == pixel(2, 2, c, q);
  CHECK(same, "pixels of training image 6 are not data_batch_2's record 2, channel-major");

  /* per-channel normalisation */
  uint32_t idx[2] = {6, 0};
  float *x = malloc(sizeof(float) * 2 * IMG);
  int32_t y[2];
  dt_batch_build(&ds->train, idx, 2, ds->mean, ds->std, x, y);
  CHECK(y[0] == 2 && y[1] == 0, "labels %d %d", y[0], y[1]);
  for (int b = 0; b < 2; b++)
    for (int c = 0; c < 3; c++)
      for (int q = 0; q < 1024; q += 131) {
        const double v = ds->train.pixels[idx[b] * (size_t)IMG + (size_t)c * 1024 + (size_t)q];
        CHECK_CLOSE(x[(size_t)b * IMG + (size_t)c * 1024 + (size_t)q], (v / 255.0 - ds->mean[c]) / ds->std[c], 1e-5, 1e-6);
      }
  CHECK(ds->mean[0] != ds->mean[2] && ds->std[1] != ds->std[2], "per-channel statistics are distinct");
  free(x);

  /* the files and their digests, in order */
  char role[8][32], sha[8][65], want[65];
  int n = 0;
  dt_dataset_files(ds, role, sha, &n);
  CHECK(n == 6, "%d files", n);
  for (int f = 0; f < n && f < 6; f++) {
    hex_of(bytes[f], sizes[f], want);
    CHECK(strcmp(sha[f], want) == 0, "file %d digest %s, want %s", f, sha[f], want);
  }
  CHECK(n == 6 && strcmp(role[0], "train_batch_1") == 0 && strcmp(role[5], "test_batch") == 0, "roles %s %s", role[0], role[5]);
  for (int f = 0; f < 6; f++) free(bytes[f]);
  dt_dataset_free(ds);
}

static void test_cifar100(void) {
  /* flat layout: the files directly in data_dir */
  mkdir(at("c100"), 0755);
  write_records("c100/train.bin", 1, 30, 2, label100, NULL);
  write_records("c100/test.bin", 2, 5, 2, label100, NULL);
  dt_dataset *ds = NULL;
  CHECK_OK(dt_dataset_load(at("c100"), DT_DATASET_CIFAR100, 1, &ds));
  CHECK(ds != NULL && ds->num_classes == 100 && ds->train.count == 30 && ds->train.labels[3] == 21, "fine labels");
  dt_dataset_free(ds);
  ds = NULL;
  CHECK_OK(dt_dataset_load(at("c100"), DT_DATASET_CIFAR100, 0, &ds));
  CHECK(ds != NULL && ds->num_classes == 20 && ds->train.labels[23] == 3 && ds->test.count == 5, "coarse labels");
  dt_dataset_free(ds);
}

static int label_bad(int r, int j) { return (void)j, r == 2 ? 10 : 1; }
static int coarse_bad(int r, int j) { return j == 0 ? (r == 1 ? 20 : 3) : 42; } /* record 1's coarse label out of range */

static void test_bad_files(void) {
  dt_image_set set;
  char hex[65];
  memset(&set, 0, sizeof set);
  /* a truncated last record: 2 whole records and 100 bytes of the third */
  write_records("trunc.bin", 1, 3, 1, label10, NULL);
  CHECK(truncate(at("trunc.bin"), 2 * 3073 + 100) == 0, "truncate");
  CHECK_FAILS(dt_cifar_read(at("trunc.bin"), 1, 0, 10, &set, hex), DT_ERR_DATA,
              "trunc.bin: 6246 bytes is not a whole number of 3073-byte records: record 2 (from byte 6146) is truncated, "
              "100 of its 3073 bytes present");
  /* an empty file */
  write_records("empty.bin", 1, 0, 1, label10, NULL);
  CHECK_FAILS(dt_cifar_read(at("empty.bin"), 1, 0, 10, &set, hex), DT_ERR_DATA, "empty.bin: the file is empty");
  /* a label out of range, located */
  write_records("label.bin", 1, 4, 1, label_bad, NULL);
  CHECK_FAILS(dt_cifar_read(at("label.bin"), 1, 0, 10, &set, hex), DT_ERR_DATA,
              "label.bin: record 2 (byte 6146): label 10 outside 0..9");
  /* CIFAR-100 whose coarse label is out of range while the fine one is read (issue 58, item 8) */
  write_records("coarse.bin", 1, 3, 2, coarse_bad, NULL);
  CHECK_FAILS(dt_cifar_read(at("coarse.bin"), 2, 1, 100, &set, hex), DT_ERR_DATA,
              "coarse.bin: record 1 (byte 3074): coarse label 20 outside 0..19 (not a CIFAR-100 file?)");
  /* CIFAR-100 read as CIFAR-10 (2-byte prefix counted as 1): not a whole number of records */
  write_records("c100.bin", 1, 3, 2, label100, NULL);
  CHECK_FAILS(dt_cifar_read(at("c100.bin"), 1, 0, 10, &set, hex), DT_ERR_DATA, "is not a whole number of 3073-byte records");
  /* a folder, a missing file, /dev/zero (never ends: must be refused, not read) */
  mkdir(at("folder.bin"), 0755);
  CHECK_FAILS(dt_cifar_read(at("folder.bin"), 1, 0, 10, &set, hex), DT_ERR_DATA, "folder.bin: not a regular file");
  CHECK_FAILS(dt_cifar_read(at("missing.bin"), 1, 0, 10, &set, hex), DT_ERR_DATA, "missing.bin: cannot open");
  CHECK_FAILS(dt_cifar_read("/dev/zero", 1, 0, 10, &set, hex), DT_ERR_DATA, "/dev/zero: not a regular file");
  CHECK(set.count == 0 && set.pixels == NULL, "a failed read appended nothing");

  /* a dataset with one bad file fails naming it; one missing names the places searched */
  mkdir(at("bad10"), 0755);
  for (int b = 1; b <= 5; b++) {
    char name[64];
    snprintf(name, sizeof name, "bad10/data_batch_%d.bin", b);
    write_records(name, b, 3, 1, b == 4 ? label_bad : label10, NULL);
  }
  write_records("bad10/test_batch.bin", 9, 4, 1, label10, NULL);
  dt_dataset *ds = NULL;
  CHECK_FAILS(dt_dataset_load(at("bad10"), DT_DATASET_CIFAR10, 1, &ds), DT_ERR_DATA, "data_batch_4.bin: record");
  write_records("bad10/data_batch_4.bin", 4, 2, 1, label10, NULL);
  CHECK(unlink(at("bad10/test_batch.bin")) == 0, "unlink");
  /* a file missing beside the others: the folder's fault, at data_dir (a config error) */
  CHECK_FAILS(dt_dataset_load(at("bad10"), DT_DATASET_CIFAR10, 1, &ds), DT_ERR_CONFIG,
              "holds data_batch_1.bin but not test_batch.bin (no such file)");
  CHECK_FAILS(dt_dataset_load(at("c100"), DT_DATASET_CIFAR10, 1, &ds), DT_ERR_CONFIG,
              "cannot find data_batch_1.bin: looked for");
  CHECK_FAILS(dt_dataset_load(at("nowhere"), DT_DATASET_CIFAR100, 1, &ds), DT_ERR_CONFIG, "is not a folder");
  CHECK(ds == NULL, "dataset returned on failure");
}

/* Augmentation as torchvision's RandomCrop(padding) then RandomHorizontalFlip: a shift with the
 * fill value where the crop leaves the image, then a mirror. */
static void test_augment(void) {
  const float in[2 * 2 * 3] = {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60}, fill[2] = {-9, -8};
  float out[12];
  dt_augment_image(in, out, 2, 2, 3, 1, 0, 0, fill);
  const float shift[12] = {2, 3, -9, 5, 6, -9, 20, 30, -8, 50, 60, -8};
  CHECK(memcmp(out, shift, sizeof out) == 0, "crop one pixel right: %g %g %g / %g %g %g", out[0], out[1], out[2], out[3], out[4], out[5]);
  dt_augment_image(in, out, 2, 2, 3, 0, 0, 1, fill);
  const float mirror[12] = {3, 2, 1, 6, 5, 4, 30, 20, 10, 60, 50, 40};
  CHECK(memcmp(out, mirror, sizeof out) == 0, "flip: %g %g %g", out[0], out[1], out[2]);
  dt_augment_image(in, out, 2, 2, 3, 1, -1, 1, fill);
  const float both[12] = {-9, -9, -9, -9, 3, 2, -8, -8, -8, -8, 30, 20};
  CHECK(memcmp(out, both, sizeof out) == 0, "crop up-right then flip: %g %g %g / %g %g %g", out[0], out[1], out[2], out[3], out[4],
        out[5]);
  dt_augment_image(in, out, 2, 2, 3, 0, 0, 0, fill);
  CHECK(memcmp(out, in, sizeof out) == 0, "no crop, no flip: the image itself");
}

int main(void) {
  test_augment();
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/dt_cifar_XXXXXX", tmp ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  test_cifar10();
  test_cifar100();
  test_bad_files();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return check_report("test_cifar");
}
