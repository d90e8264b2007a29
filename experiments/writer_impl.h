/* Result-file helpers of the runner: a growable text buffer and atomic writes. */
#ifndef DT_WRITER_IMPL_H
#define DT_WRITER_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dt/io.h"
#include "dt/status.h"

typedef struct strbuf {
  char *data;
  size_t len, cap;
  int failed; /* an allocation failed; the content is incomplete */
} strbuf;

void sb_printf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends n bytes (text or binary; a NUL follows them). */
void sb_put(strbuf *sb, const void *data, size_t n);
void sb_free(strbuf *sb);
/* Appends s as a YAML double-quoted string (" and \ escaped, control characters as \uXXXX), which
 * is also a JSON string. */
void sb_yaml_string(strbuf *sb, const char *s);

/* Writes dir/name through a temporary file and rename(2): readers see the old file or the
 * complete new one, never a part. */
DT_MUST_USE dt_status dt_write_atomic(const char *dir, const char *name, const void *data, size_t len);
/* Writes what emit(obj, f) prints as dir/name, atomically. */
DT_MUST_USE dt_status dt_write_emitted(const char *dir, const char *name, dt_status (*emit)(const void *obj, FILE *f), const void *obj);
/* A whole file, NUL-terminated, its length (without the NUL) in *len; NULL with errno set when
 * it cannot be read. Free with free(). */
char *dt_read_file(const char *path, size_t *len);
/* dt_read_file for a regular file of at most max bytes: NULL with errno EINVAL (not a regular
 * file), EFBIG (larger) or ESTALE (it changed size while being read). */
char *dt_read_file_bounded(const char *path, size_t max, size_t *len);
/* CRC-32C (Castagnoli, as iSCSI and ext4 use it) of n bytes, continuing from crc (0 to start). */
uint32_t dt_crc32c(uint32_t crc, const void *data, size_t n);
/* v printed with fmt into buf, or "nan" (printf may write -nan); returns buf. */
const char *fmt_number(char *buf, size_t size, const char *fmt, double v);
/* Writes an n × d float32 matrix in NumPy's .npy format (version 1.0), atomically. */
DT_MUST_USE dt_status dt_write_npy(const char *dir, const char *name, const float *data, int n, size_t d);

#endif
