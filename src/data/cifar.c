/* The CIFAR-10 and CIFAR-100 binary formats (https://www.cs.toronto.edu/~kriz/cifar.html): a file
 * is a sequence of fixed-size records, each one or two label bytes followed by the image as three
 * 32×32 planes (red, green, blue), row-major. There is no header, so the only checks a file
 * allows are its size (a whole number of records) and its labels; each failure names the file
 * and, for a record, its number and byte offset. The file's SHA-256 is taken while it is read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data_impl.h"
#include "dt/data.h"

enum { CIFAR_PLANE = 32 * 32, CIFAR_IMAGE = 3 * CIFAR_PLANE, CIFAR_MAX_RECORDS = 1 << 20 };

/* Reads the whole regular file at path (its size checked first) into a malloc'd buffer. */
static dt_status read_file(const char *path, size_t record, uint8_t **out, size_t *records) {
  struct stat sb;
  DT_CHECK(stat(path, &sb) == 0, DT_ERR_DATA, "%s: cannot open: %s", path, strerror(errno));
  DT_CHECK(S_ISREG(sb.st_mode), DT_ERR_DATA, "%s: not a regular file, expected CIFAR binary records", path);
  const uint64_t size = (uint64_t)sb.st_size;
  DT_CHECK(size > 0, DT_ERR_DATA, "%s: the file is empty, expected CIFAR binary records of %zu bytes", path, record);
  DT_CHECK(size % record == 0, DT_ERR_DATA,
           "%s: %llu bytes is not a whole number of %zu-byte records: record %llu (from byte %llu) is truncated, "
           "%llu of its %zu bytes present",
           path, (unsigned long long)size, record, (unsigned long long)(size / record),
           (unsigned long long)(size / record * record), (unsigned long long)(size % record), record);
  DT_CHECK(size / record <= CIFAR_MAX_RECORDS, DT_ERR_DATA, "%s: %llu records, more than the %d a CIFAR file can hold", path,
           (unsigned long long)(size / record), CIFAR_MAX_RECORDS);
  uint8_t *buf = malloc(size);
  DT_CHECK(buf != NULL, DT_ERR_MEMORY, "%s: cannot hold its %llu bytes in memory", path, (unsigned long long)size);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    free(buf);
    return DT_ERROR(DT_ERR_DATA, "%s: cannot open: %s", path, strerror(errno));
  }
  const size_t got = fread(buf, 1, size, f);
  const int more = fgetc(f) != EOF; /* the file grew while read: not the file that was measured */
  fclose(f);
  if (got != size || more) {
    free(buf);
    return DT_ERROR(DT_ERR_DATA, "%s: read %zu bytes of the %llu its size says; the file changed or cannot be read", path, got,
                    (unsigned long long)size);
  }
  *out = buf;
  *records = size / record;
  return DT_OK;
}

dt_status dt_cifar_read(const char *path, int prefix, int label_byte, int num_classes, dt_image_set *set,
                        char sha256_hex_out[65]) {
  DT_CHECK(prefix >= 1 && prefix <= 2 && label_byte >= 0 && label_byte < prefix, DT_ERR_INTERNAL,
           "CIFAR records have 1 or 2 label bytes, asked for byte %d of %d", label_byte, prefix);
  const size_t record = (size_t)prefix + CIFAR_IMAGE;
  uint8_t *buf = NULL;
  size_t n = 0;
  DT_TRY(read_file(path, record, &buf, &n));
  dt_status st = DT_OK;
  for (size_t r = 0; r < n; r++) {
    const uint8_t label = buf[r * record + (size_t)label_byte];
    DT_CHECK_GOTO(label < num_classes, DT_ERR_DATA, "%s: record %zu (byte %zu): label %u outside 0..%d", path, r,
                  r * record + (size_t)label_byte, label, num_classes - 1);
    /* CIFAR-100's other label (coarse 0..19, fine 0..99) out of range: not a CIFAR-100 file,
     * though the label in use reads */
    if (prefix == 2) {
      const size_t at = r * record + (size_t)(1 - label_byte);
      const int range = label_byte == 1 ? 20 : 100;
      DT_CHECK_GOTO(buf[at] < range, DT_ERR_DATA, "%s: record %zu (byte %zu): %s label %u outside 0..%d (not a CIFAR-100 file?)", path, r,
                    at, label_byte == 1 ? "coarse" : "fine", buf[at], range - 1);
    }
  }
  DT_CHECK_GOTO(set->count == 0 || (set->channels == 3 && set->rows == 32 && set->cols == 32), DT_ERR_INTERNAL,
                "%s: CIFAR records appended to a set of other images", path);
  DT_CHECK_GOTO(set->count + n <= CIFAR_MAX_RECORDS * (size_t)8, DT_ERR_DATA, "%s: more records than a CIFAR set holds", path);
  /* the set grows by copy into fresh aligned arrays (dt_calloc_ memory is not realloc'd) */
  uint8_t *pixels, *labels;
  DT_ALLOC_GOTO(pixels, (set->count + n) * CIFAR_IMAGE, "CIFAR images");
  labels = dt_calloc_(set->count + n, 1);
  if (labels == NULL) dt_free(pixels);
  DT_CHECK_GOTO(labels != NULL, DT_ERR_MEMORY, "%s: out of memory for its labels", path);
  if (set->count > 0) {
    memcpy(pixels, set->pixels, set->count * CIFAR_IMAGE);
    memcpy(labels, set->labels, set->count);
  }
  dt_free(set->pixels);
  dt_free(set->labels);
  set->pixels = pixels;
  set->labels = labels;
  for (size_t r = 0; r < n; r++) {
    memcpy(set->pixels + (set->count + r) * CIFAR_IMAGE, buf + r * record + (size_t)prefix, CIFAR_IMAGE);
    set->labels[set->count + r] = buf[r * record + (size_t)label_byte];
  }
  set->count += n;
  set->channels = 3;
  set->rows = set->cols = 32;
  data_sha256_hex(NULL, 0, buf, n * record, sha256_hex_out);
cleanup:
  free(buf);
  return st;
}
