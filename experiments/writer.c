/* Text buffers and atomic file writes for result files (see writer_impl.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "writer_impl.h"

void sb_printf(strbuf *sb, const char *fmt, ...) {
  if (sb->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(sb->data ? sb->data + sb->len : NULL, sb->data ? sb->cap - sb->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      sb->failed = 1;
      return;
    }
    if (sb->data != NULL && sb->len + (size_t)n < sb->cap) {
      sb->len += (size_t)n;
      return;
    }
    size_t cap = sb->cap ? sb->cap : 4096;
    while (cap <= sb->len + (size_t)n) cap *= 2;
    char *grown = realloc(sb->data, cap);
    if (grown == NULL) {
      sb->failed = 1;
      return;
    }
    sb->data = grown;
    sb->cap = cap;
  }
}

void sb_free(strbuf *sb) {
  free(sb->data);
  sb->data = NULL;
  sb->len = sb->cap = 0;
  sb->failed = 0;
}

dt_status dt_write_atomic(const char *dir, const char *name, const void *data, size_t len) {
  char path[4300], tmp[4400];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  DT_CHECK(f != NULL, DT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
  int ok = len == 0 || fwrite(data, 1, len, f) == len;
  ok = fflush(f) == 0 && ok;
  ok = fsync(fileno(f)) == 0 && ok;
  ok = fclose(f) == 0 && ok;
  if (!ok) {
    unlink(tmp);
    return DT_ERROR(DT_ERR_IO, "cannot write %s (disk full?)", path);
  }
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return DT_ERROR(DT_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
  }
  return DT_OK;
}

dt_status dt_write_npy(const char *dir, const char *name, const float *data, int n, size_t d) {
  char header[128];
  int hl = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %zu), }", n, d);
  /* magic(6) + version(2) + header length(2) + header, padded with spaces and '\n' to 64 bytes */
  size_t total = 10 + (size_t)hl + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = (size_t)hl + pad + 1, bytes = 10 + hlen + sizeof(float) * (size_t)n * d;
  unsigned char *buf = malloc(bytes);
  DT_CHECK(buf != NULL, DT_ERR_MEMORY, "out of memory writing %s", name);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (unsigned char)(hlen & 0xff);
  buf[9] = (unsigned char)(hlen >> 8);
  memcpy(buf + 10, header, (size_t)hl);
  memset(buf + 10 + hl, ' ', pad);
  buf[10 + hl + pad] = '\n';
  memcpy(buf + 10 + hlen, data, sizeof(float) * (size_t)n * d); /* x86-64 is little-endian, as '<f4' says */
  dt_status st = dt_write_atomic(dir, name, buf, bytes);
  free(buf);
  return st;
}
