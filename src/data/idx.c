/* IDX file reader (the MNIST format: a 4-byte magic, big-endian uint32 dimensions, then bytes).
 * zlib's gz* interface reads raw and gzip files alike, so one path handles both; every way a
 * file can be wrong gets its own message naming the file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nettle/sha2.h>
#include <zlib.h>

#include "data_impl.h"
#include "dt/data.h"
#include "dt/formulas.h"
#include "dt/timer.h"

/* Refuse anything larger than this: a corrupt header must not make us allocate terabytes. */
#define IDX_MAX_BYTES ((uint64_t)8 << 30)
/* Read in chunks of this size, growing the buffer as data arrive. */
#define IDX_CHUNK ((uint64_t)16 << 20)

static const char *gz_message(gzFile f) {
  int errnum = 0;
  const char *msg = gzerror(f, &errnum);
  return (msg != NULL && msg[0] != '\0') ? msg : "unknown read error";
}

/* Reads exactly n bytes; returns how many arrived (< n at end of file), or -1 on a read error. */
static int64_t read_full(gzFile f, uint8_t *buf, uint64_t n) {
  uint64_t got = 0;
  while (got < n) {
    uint64_t want = n - got;
    unsigned chunk = want > (1u << 30) ? (1u << 30) : (unsigned)want;
    int r = gzread(f, buf + got, chunk);
    if (r < 0) return -1;
    if (r == 0) break;
    got += (uint64_t)r;
  }
  return (int64_t)got;
}

/* Opens path for reading, raw or gzip, refusing what is missing or a folder; *fd is the open file
 * (gzclose closes it) and *sb what fstat said of it. */
static dt_status open_idx(const char *path, gzFile *out, int *fd, struct stat *sb) {
  *fd = open(path, O_RDONLY | O_CLOEXEC);
  DT_CHECK(*fd >= 0, DT_ERR_DATA, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(*fd, sb) != 0) {
    const int err = errno;
    close(*fd);
    return DT_ERROR(DT_ERR_DATA, "%s: cannot open: %s", path, strerror(err));
  }
  if (S_ISDIR(sb->st_mode)) {
    close(*fd);
    return DT_ERROR(DT_ERR_DATA, "%s: is a folder, expected an IDX file", path);
  }
  gzFile f = gzdopen(*fd, "rb");
  if (f == NULL) {
    close(*fd);
    return DT_ERROR(DT_ERR_DATA, "%s: cannot open: out of memory", path);
  }
  gzbuffer(f, 1u << 17);
  *out = f;
  return DT_OK;
}

/* The header: magic (unsigned bytes, ndims dimensions), then the dimensions into dims and their
 * product, the data's size, into *total (checked against IDX_MAX_BYTES as it grows). */
static dt_status read_header(gzFile f, const char *path, int ndims, uint32_t *dims, uint64_t *total) {
  uint8_t head[4];
  int64_t got = read_full(f, head, 4);
  DT_CHECK(got >= 0, DT_ERR_DATA, "%s: corrupt file: %s", path, gz_message(f));
  DT_CHECK(got == 4, DT_ERR_DATA,
           "%s: truncated: the file has %lld bytes, an IDX header needs at least 4", path,
           (long long)got);
  DT_CHECK(head[0] == 0 && head[1] == 0, DT_ERR_DATA,
           "%s: wrong magic number 0x%02x%02x%02x%02x: not an IDX file (expected "
           "0x000008%02x)",
           path, head[0], head[1], head[2], head[3], ndims);
  DT_CHECK(head[2] == 0x08, DT_ERR_DATA,
           "%s: IDX element type 0x%02x is not supported (expected 0x08, unsigned byte)",
           path, head[2]);
  DT_CHECK(head[3] == ndims, DT_ERR_DATA,
           "%s: IDX file has %d dimensions, expected %d (%s file)", path, head[3], ndims,
           ndims == 1 ? "a label" : "an image");

  uint8_t raw_dims[4 * 4];
  got = read_full(f, raw_dims, 4 * (uint64_t)ndims);
  DT_CHECK(got >= 0, DT_ERR_DATA, "%s: corrupt file: %s", path, gz_message(f));
  DT_CHECK(got == 4 * ndims, DT_ERR_DATA, "%s: truncated inside the header", path);
  *total = 1;
  for (int i = 0; i < ndims; i++) {
    const uint8_t *d = raw_dims + 4 * i;
    dims[i] = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3];
    DT_CHECK(dims[i] > 0, DT_ERR_DATA, "%s: dimension %d is zero", path, i);
    /* checked before multiplying: 65536 x 131072 x 2^31 wraps a uint64 to 0 (a fuzzer found it) */
    DT_CHECK(dims[i] <= IDX_MAX_BYTES / *total, DT_ERR_DATA,
             "%s: dimensions describe more than %llu bytes: corrupt header?", path,
             (unsigned long long)IDX_MAX_BYTES);
    *total *= dims[i];
    DT_CHECK(*total <= IDX_MAX_BYTES, DT_ERR_DATA,
             "%s: dimensions describe more than %llu bytes: corrupt header?", path,
             (unsigned long long)IDX_MAX_BYTES);
  }
  return DT_OK;
}

/* The total bytes of data into *buf (the caller frees it, also on failure). The buffer grows
 * with the data that really arrive, so a header that lies about the size cannot make us
 * allocate more than the file holds; a stop request ends a long load. */
static dt_status read_data(gzFile f, const char *path, uint64_t total, uint8_t **buf) {
  uint64_t have = 0, cap = total < IDX_CHUNK ? total : IDX_CHUNK;
  DT_ALLOC(*buf, cap, path);
  for (;;) {
    DT_CHECK(!dt_stop_requested(), DT_ERR_INTERRUPTED, "%s: loading interrupted by signal %d", path, dt_stop_requested());
    dt_heartbeat(); /* a long load is progress to the watchdog */
    int64_t got = read_full(f, *buf + have, cap - have);
    DT_CHECK(got >= 0, DT_ERR_DATA, "%s: corrupt file: %s", path, gz_message(f));
    have += (uint64_t)got;
    if (have < cap || cap == total) break;
    const uint64_t grown_cap = cap * 2 < total ? cap * 2 : total;
    uint8_t *grown = realloc(*buf, grown_cap);
    DT_CHECK(grown != NULL, DT_ERR_MEMORY, "out of memory reading %s (%llu bytes)", path, (unsigned long long)grown_cap);
    *buf = grown;
    cap = grown_cap;
  }
  DT_CHECK(have == total, DT_ERR_DATA,
           "%s: truncated: the header promises %llu bytes of data, the file holds %llu", path,
           (unsigned long long)total, (unsigned long long)have);
  return DT_OK;
}

/* Nothing after the data. Reading past the end also makes zlib verify the gzip trailer (CRC and
 * length). */
static dt_status check_end(gzFile f, const char *path, uint64_t total) {
  uint8_t extra[64];
  int64_t got = read_full(f, extra, sizeof extra);
  DT_CHECK(got >= 0, DT_ERR_DATA, "%s: corrupt file: %s", path, gz_message(f));
  DT_CHECK(got == 0, DT_ERR_DATA,
           "%s: %s%lld unexpected bytes after the %llu bytes the header describes", path,
           got == (int64_t)sizeof extra ? "at least " : "", (long long)got,
           (unsigned long long)total);
  return DT_OK;
}

/* dt_idx_read, and into *id the file's identity when it did not change while it was read. */
static dt_status idx_read(const char *path, int ndims, uint32_t *dims, uint8_t **data, dt_file_id *id) {
  dt_status st = DT_OK;
  uint8_t *buf = NULL;
  *data = NULL;
  memset(id, 0, sizeof *id);
  gzFile f = NULL;
  int fd = -1;
  struct stat before, after;
  uint64_t total = 0;
  DT_TRY_GOTO(open_idx(path, &f, &fd, &before));
  DT_TRY_GOTO(read_header(f, path, ndims, dims, &total));
  DT_TRY_GOTO(read_data(f, path, total, &buf));
  DT_TRY_GOTO(check_end(f, path, total));
  if (fstat(fd, &after) == 0) {
    dt_file_id a;
    data_file_id(&before, id);
    data_file_id(&after, &a);
    if (memcmp(id, &a, sizeof a) != 0) memset(id, 0, sizeof *id);
  }
  *data = buf;
  buf = NULL;

cleanup:
  if (f != NULL) gzclose(f);
  dt_free(buf);
  return st;
}

dt_status dt_idx_read(const char *path, int ndims, uint32_t *dims, uint8_t **data) {
  dt_file_id id;
  return idx_read(path, ndims, dims, data, &id);
}

void dt_image_set_free(dt_image_set *set) {
  if (set == NULL) return;
  dt_free(set->pixels);
  dt_free(set->labels);
  memset(set, 0, sizeof *set);
}

dt_status dt_image_set_read(const char *images_path, const char *labels_path, int num_classes,
                            dt_image_set *set) {
  dt_status st = DT_OK;
  uint32_t idims[3], ldims[1];
  uint8_t *pixels = NULL, *labels = NULL;
  memset(set, 0, sizeof *set);
  DT_TRY_GOTO(idx_read(images_path, 3, idims, &pixels, &set->images_file));
  DT_TRY_GOTO(idx_read(labels_path, 1, ldims, &labels, &set->labels_file));
  DT_CHECK_GOTO(idims[0] == ldims[0], DT_ERR_DATA,
                "%s holds %u images but %s holds %u labels: the files do not belong together",
                images_path, idims[0], labels_path, ldims[0]);
  for (uint32_t i = 0; i < ldims[0]; i++)
    DT_CHECK_GOTO(labels[i] < num_classes, DT_ERR_DATA,
                  "%s: label %u of sample %u is outside [0, %d)", labels_path, labels[i], i,
                  num_classes);
  set->count = idims[0];
  set->channels = 1;
  set->rows = (int)idims[1];
  set->cols = (int)idims[2];
  set->pixels = pixels;
  set->labels = labels;
  pixels = labels = NULL;
cleanup:
  dt_free(pixels);
  dt_free(labels);
  return st;
}

void dt_norm_lut(int C, const float *mean, const float *std, float *lut) {
  for (int c = 0; c < C; c++)
    for (int v = 0; v < 256; v++) lut[c * 256 + v] = ((float)v / 255.0f - mean[c]) / std[c];
}

void dt_samples_rows(const dt_samples *s, const uint32_t *idx, size_t n, float *x, int32_t *y) {
  if (s->u8 != NULL) {
    const int C = s->in_c > 0 ? s->in_c : 1;
    dt_image_set view = {.count = s->count, .channels = C, .rows = 1, .cols = (int)(s->dim / (size_t)C),
                         .pixels = (uint8_t *)s->u8, .labels = (uint8_t *)s->labels};
    dt_batch_build(&view, idx, n, s->mean, s->std, x, y);
    return;
  }
  for (size_t b = 0; b < n; b++) {
    memcpy(x + b * s->dim, s->f32 + (size_t)idx[b] * s->dim, sizeof(float) * s->dim);
    y[b] = s->labels[idx[b]];
  }
}

void dt_batch_build(const dt_image_set *set, const uint32_t *idx, size_t n, const float *mean, const float *std,
                    float *x, int32_t *y) {
  const int C = set->channels > 0 ? set->channels : 1;
  const size_t plane = (size_t)set->rows * (size_t)set->cols, d = (size_t)C * plane;
  /* (p/255 - mean)/std, precomputed per channel and byte value: exact and branch-free. */
  float lut[DT_MAX_CHANNELS][256];
  dt_norm_lut(C, mean, std, &lut[0][0]);
  for (size_t b = 0; b < n; b++) {
    const uint8_t *src = set->pixels + (size_t)idx[b] * d;
    float *dst = x + b * d;
    for (int c = 0; c < C; c++) {
      const float *t = lut[c];
      for (size_t p = 0; p < plane; p++) dst[c * plane + p] = t[src[c * plane + p]];
    }
    if (y != NULL) y[b] = set->labels[idx[b]];
  }
}

/* The IDX header of unsigned bytes with these dimensions, then the data, into hex: from the
 * digest cache when it knows the file `id` unchanged, else computed and stored there. */
static void idx_sha256(const dt_file_id *id, int ndims, const uint32_t *dims, const uint8_t *data, char hex[65]) {
  if (data_digest_cached(id, "idx", hex)) return;
  uint8_t head[4 + 4 * 3] = {0, 0, 0x08, (uint8_t)ndims};
  size_t total = 1;
  for (int i = 0; i < ndims; i++) {
    head[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
    head[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
    head[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
    head[7 + 4 * i] = (uint8_t)dims[i];
    total *= dims[i];
  }
  data_sha256_hex(head, 4 + 4 * (size_t)ndims, data, total, hex);
  data_digest_store(id, "idx", hex);
}

void data_sha256_hex(const uint8_t *head, size_t head_n, const uint8_t *data, size_t n, char hex[65]) {
  struct sha256_ctx ctx;
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_init(&ctx);
  if (head_n > 0) sha256_update(&ctx, head_n, head);
  sha256_update(&ctx, n, data);
  sha256_digest(&ctx, sizeof digest, digest);
  for (int i = 0; i < SHA256_DIGEST_SIZE; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}

void dt_image_set_sha256(const dt_image_set *set, char images_hex[65], char labels_hex[65]) {
  const uint32_t idims[3] = {(uint32_t)set->count, (uint32_t)set->rows, (uint32_t)set->cols}, ldims[1] = {(uint32_t)set->count};
  idx_sha256(&set->images_file, 3, idims, set->pixels, images_hex);
  idx_sha256(&set->labels_file, 1, ldims, set->labels, labels_hex);
}

void dt_augment_image(const float *in, float *out, int c, int h, int w, int dx, int dy, int flip, const float *fill) {
  for (int ch = 0; ch < c; ch++)
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        int sy, sx;
        const int inside = dt_f_augment_source(y, x, h, w, dy, dx, flip, &sy, &sx);
        out[((size_t)ch * h + y) * w + x] = inside ? in[((size_t)ch * h + sy) * w + sx] : fill[ch];
      }
}
