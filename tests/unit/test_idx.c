/* IDX reader on fixtures this test writes: raw and gzip files that load, and every malformed
 * variant (truncated, wrong magic, wrong type or rank, trailing bytes, corrupt gzip, count
 * mismatch, bad labels, missing files) rejected with a message naming the file and the problem.
 * Also dataset discovery in both layouts and batch normalisation. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "dt/data.h"

static char dir[256];

static void be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

/* Serialises an IDX file: n images of r x c (ndims 3) or n labels (ndims 1). */
static size_t make_idx(uint8_t *out, int ndims, uint32_t n, uint32_t r, uint32_t c, int seed) {
  out[0] = out[1] = 0;
  out[2] = 0x08;
  out[3] = (uint8_t)ndims;
  be32(out + 4, n);
  size_t pos = 8, count = n;
  if (ndims == 3) {
    be32(out + 8, r);
    be32(out + 12, c);
    pos = 16;
    count = (size_t)n * r * c;
  }
  for (size_t i = 0; i < count; i++)
    out[pos + i] = ndims == 1 ? (uint8_t)((i * 7 + (size_t)seed) % 10) : (uint8_t)(i * 31 + (size_t)seed);
  return pos + count;
}

static void write_file(const char *name, const uint8_t *p, size_t n, int gz) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (gz) {
    gzFile f = gzopen(path, "wb9");
    gzwrite(f, p, (unsigned)n);
    gzclose(f);
  } else {
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
  }
}

static const char *at(const char *name) {
  static char path[4][512];
  static int k = 0;
  k = (k + 1) % 4;
  snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
  return path[k];
}

static void test_good_files(void) {
  static uint8_t img[16 + 5 * 4 * 3], lab[8 + 5];
  size_t ni = make_idx(img, 3, 5, 4, 3, 1), nl = make_idx(lab, 1, 5, 0, 0, 2);
  write_file("img", img, ni, 0);
  write_file("lab", lab, nl, 0);
  write_file("img.gz", img, ni, 1);
  write_file("lab.gz", lab, nl, 1);
  for (int gz = 0; gz < 2; gz++) {
    dt_image_set s;
    CHECK_OK(dt_image_set_read(at(gz ? "img.gz" : "img"), at(gz ? "lab.gz" : "lab"), 10, &s));
    CHECK(s.count == 5 && s.rows == 4 && s.cols == 3, "dims %zu %d %d", s.count, s.rows, s.cols);
    CHECK(s.pixels && memcmp(s.pixels, img + 16, 60) == 0, "pixels differ (gz=%d)", gz);
    CHECK(s.labels && memcmp(s.labels, lab + 8, 5) == 0, "labels differ (gz=%d)", gz);
    dt_image_set_free(&s);
  }
}

static void test_bad_files(void) {
  static uint8_t img[16 + 5 * 4 * 3], buf[256];
  size_t n = make_idx(img, 3, 5, 4, 3, 1);
  uint32_t dims[3];
  uint8_t *data = NULL;

  write_file("trunc", img, n - 7, 0);
  CHECK_FAILS(dt_idx_read(at("trunc"), 3, dims, &data), DT_ERR_DATA, "truncated: the header promises 60 bytes");
  write_file("trunc.gz", img, n - 7, 1);
  CHECK_FAILS(dt_idx_read(at("trunc.gz"), 3, dims, &data), DT_ERR_DATA, "trunc.gz: truncated");
  write_file("tiny", img, 2, 0);
  CHECK_FAILS(dt_idx_read(at("tiny"), 3, dims, &data), DT_ERR_DATA, "needs at least 4");
  write_file("hdr", img, 10, 0);
  CHECK_FAILS(dt_idx_read(at("hdr"), 3, dims, &data), DT_ERR_DATA, "truncated inside the header");
  write_file("empty", img, 0, 0);
  CHECK_FAILS(dt_idx_read(at("empty"), 3, dims, &data), DT_ERR_DATA, "empty: truncated");

  memcpy(buf, img, n);
  buf[0] = 0x1f;
  write_file("magic", buf, n, 0);
  CHECK_FAILS(dt_idx_read(at("magic"), 3, dims, &data), DT_ERR_DATA, "wrong magic number 0x1f000803");
  memcpy(buf, img, n);
  buf[2] = 0x0d; /* float elements */
  write_file("type", buf, n, 0);
  CHECK_FAILS(dt_idx_read(at("type"), 3, dims, &data), DT_ERR_DATA, "element type 0x0d");
  CHECK_FAILS(dt_idx_read(at("img"), 1, dims, &data), DT_ERR_DATA, "has 3 dimensions, expected 1");

  memcpy(buf, img, n);
  buf[n] = 1;
  buf[n + 1] = 2;
  write_file("long", buf, n + 2, 0);
  CHECK_FAILS(dt_idx_read(at("long"), 3, dims, &data), DT_ERR_DATA, "2 unexpected bytes after");

  memcpy(buf, img, n);
  be32(buf + 4, 0);
  write_file("zero", buf, n, 0);
  CHECK_FAILS(dt_idx_read(at("zero"), 3, dims, &data), DT_ERR_DATA, "dimension 0 is zero");
  memcpy(buf, img, n);
  be32(buf + 4, 0xffffffffu);
  be32(buf + 8, 0xffffffffu);
  write_file("huge", buf, n, 0);
  CHECK_FAILS(dt_idx_read(at("huge"), 3, dims, &data), DT_ERR_DATA, "corrupt header?");

  /* Flip bytes inside a gzip stream: zlib must report the corruption (data or CRC error). */
  write_file("good.gz", img, n, 1);
  FILE *f = fopen(at("good.gz"), "rb");
  size_t gzn = fread(buf, 1, sizeof buf, f);
  fclose(f);
  for (size_t i = 20; i < gzn - 8; i++) buf[i] ^= 0x5a;
  write_file("corrupt.gz", buf, gzn, 0);
  CHECK_FAILS(dt_idx_read(at("corrupt.gz"), 3, dims, &data), DT_ERR_DATA, "corrupt.gz: ");
  /* Only the CRC trailer changed: the content decodes, the checksum must not match. */
  f = fopen(at("good.gz"), "rb");
  gzn = fread(buf, 1, sizeof buf, f);
  fclose(f);
  buf[gzn - 6] ^= 0xff;
  write_file("crc.gz", buf, gzn, 0);
  CHECK_FAILS(dt_idx_read(at("crc.gz"), 3, dims, &data), DT_ERR_DATA, "crc.gz: corrupt file");

  CHECK_FAILS(dt_idx_read(at("does-not-exist"), 3, dims, &data), DT_ERR_DATA, "does-not-exist: cannot open: No such file");
  CHECK_FAILS(dt_idx_read(dir, 3, dims, &data), DT_ERR_DATA, "is a folder, expected an IDX file");
  CHECK(dt_status_exit_code(DT_ERR_DATA) == 2, "bad input data must exit 2");
  CHECK(data == NULL, "data set on failure");

  /* Label/image count mismatch and labels out of range. */
  static uint8_t lab[8 + 6];
  size_t nl = make_idx(lab, 1, 6, 0, 0, 0);
  write_file("lab6", lab, nl, 0);
  dt_image_set s;
  CHECK_FAILS(dt_image_set_read(at("img"), at("lab6"), 10, &s), DT_ERR_DATA, "holds 5 images but");
  CHECK(s.pixels == NULL && s.labels == NULL, "set not left empty");
  nl = make_idx(lab, 1, 5, 0, 0, 0);
  lab[8 + 3] = 12;
  write_file("lab12", lab, nl, 0);
  CHECK_FAILS(dt_image_set_read(at("img"), at("lab12"), 10, &s), DT_ERR_DATA, "label 12 of sample 3");
}

static void test_dataset_layouts(void) {
  static uint8_t img[16 + 6 * 28 * 28], lab[8 + 6];
  size_t ni = make_idx(img, 3, 6, 28, 28, 3), nl = make_idx(lab, 1, 6, 0, 0, 1);
  char sub[512];
  /* torchvision layout, gzip */
  snprintf(sub, sizeof sub, "%s/tv", dir);
  mkdir(sub, 0755);
  snprintf(sub, sizeof sub, "%s/tv/MNIST", dir);
  mkdir(sub, 0755);
  snprintf(sub, sizeof sub, "%s/tv/MNIST/raw", dir);
  mkdir(sub, 0755);
  write_file("tv/MNIST/raw/train-images-idx3-ubyte.gz", img, ni, 1);
  write_file("tv/MNIST/raw/train-labels-idx1-ubyte.gz", lab, nl, 1);
  write_file("tv/MNIST/raw/t10k-images-idx3-ubyte.gz", img, ni, 1);
  write_file("tv/MNIST/raw/t10k-labels-idx1-ubyte.gz", lab, nl, 1);
  dt_dataset *ds = NULL;
  CHECK_OK(dt_dataset_load(at("tv"), DT_DATASET_MNIST, 0, &ds));
  CHECK(ds && ds->train.count == 6 && ds->test.count == 6 && ds->train.rows == 28, "tv layout");

  /* Normalisation: (p/255 - mean)/std, computed when the batch is built. */
  if (ds != NULL) {
    uint32_t idx[2] = {4, 1};
    float x[2 * 784];
    int32_t y[2];
    dt_batch_build(&ds->train, idx, 2, ds->mean, ds->std, x, y);
    for (int b = 0; b < 2; b++) {
      CHECK(y[b] == ds->train.labels[idx[b]], "label %d", b);
      for (int p = 0; p < 784; p += 97) {
        double want = (ds->train.pixels[idx[b] * 784 + p] / 255.0 - 0.1307) / 0.3081;
        CHECK_CLOSE(x[b * 784 + p], want, 1e-5, 1e-6);
      }
    }
  }
  dt_dataset_free(ds);
  ds = NULL;

  /* Fashion-MNIST looks under FashionMNIST/raw, so the MNIST root must not satisfy it. */
  CHECK_FAILS(dt_dataset_load(at("tv"), DT_DATASET_FASHION_MNIST, 0, &ds), DT_ERR_CONFIG,
              "FashionMNIST/raw/train-images-idx3-ubyte[.gz]");

  /* Flat layout, raw files, with a mismatched test label file. */
  snprintf(sub, sizeof sub, "%s/flat", dir);
  mkdir(sub, 0755);
  write_file("flat/train-images-idx3-ubyte", img, ni, 0);
  write_file("flat/train-labels-idx1-ubyte", lab, nl, 0);
  write_file("flat/t10k-images-idx3-ubyte", img, ni, 0);
  nl = make_idx(lab, 1, 5, 0, 0, 1);
  write_file("flat/t10k-labels-idx1-ubyte", lab, nl, 0);
  CHECK_FAILS(dt_dataset_load(at("flat"), DT_DATASET_MNIST, 0, &ds), DT_ERR_DATA,
              "t10k-images-idx3-ubyte holds 6 images but");
  CHECK(ds == NULL, "dataset returned on failure");
  CHECK_FAILS(dt_dataset_load(at("nowhere"), DT_DATASET_MNIST, 0, &ds), DT_ERR_CONFIG, "is not a folder");
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/dt_idx_XXXXXX", tmp ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  test_good_files();
  test_bad_files();
  test_dataset_layouts();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return check_report("test_idx");
}
