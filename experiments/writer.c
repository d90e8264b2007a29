/* Text buffers and atomic file writes for result files (see writer_impl.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "writer_impl.h"

/* Room for need more bytes and a NUL after them; sets failed when memory runs out. */
static int sb_reserve(strbuf *sb, size_t need) {
  if (sb->failed) return 0;
  if (sb->data != NULL && sb->len + need < sb->cap) return 1;
  size_t cap = sb->cap ? sb->cap : 4096;
  while (cap <= sb->len + need) cap *= 2;
  char *grown = realloc(sb->data, cap);
  if (grown == NULL) {
    sb->failed = 1;
    return 0;
  }
  sb->data = grown;
  sb->cap = cap;
  return 1;
}

void sb_put(strbuf *sb, const void *data, size_t n) {
  if (n == 0 || !sb_reserve(sb, n)) return;
  memcpy(sb->data + sb->len, data, n);
  sb->len += n;
  sb->data[sb->len] = '\0';
}

const char *fmt_number(char *buf, size_t size, const char *fmt, double v) {
  if (isnan(v)) snprintf(buf, size, "nan");
  else snprintf(buf, size, fmt, v);
  return buf;
}

char *dt_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  strbuf sb = {0};
  char chunk[65536];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) sb_put(&sb, chunk, got);
  const int e = ferror(f) ? EIO : 0;
  fclose(f);
  if (e != 0 || sb.failed || !sb_reserve(&sb, 0)) {
    sb_free(&sb);
    errno = e != 0 ? e : ENOMEM;
    return NULL;
  }
  sb.data[sb.len] = '\0';
  *len = sb.len;
  return sb.data;
}

char *dt_read_file_bounded(const char *path, size_t max, size_t *len) {
  struct stat st;
  FILE *f = dt_open_regular(path, &st);
  if (f == NULL) return NULL;
  int e = 0;
  if ((uintmax_t)st.st_size > (uintmax_t)max) e = EFBIG;
  char *data = NULL;
  size_t got = 0;
  if (e == 0) {
    const size_t size = (size_t)st.st_size;
    data = malloc(size + 1);
    if (data == NULL) e = ENOMEM;
    else {
      got = fread(data, 1, size + 1, f); /* one byte more: a file that grew is refused */
      if (ferror(f)) e = EIO;
      else if (got != size) e = ESTALE; /* it changed size while being read */
    }
  }
  fclose(f);
  if (e != 0) {
    free(data);
    errno = e;
    return NULL;
  }
  data[got] = '\0';
  *len = got;
  return data;
}

uint32_t dt_crc32c(uint32_t crc, const void *data, size_t n) {
  static uint32_t table[256];
  static int ready;
  if (!ready) { /* reflected polynomial 0x82F63B78; filled at the first use (checkpoints are one thread's) */
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
      table[i] = c;
    }
    ready = 1;
  }
  const unsigned char *p = data;
  crc = ~crc;
  for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

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
    if (!sb_reserve(sb, (size_t)n)) return;
  }
}

void sb_yaml_string(strbuf *sb, const char *s) {
  sb_printf(sb, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') sb_printf(sb, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) sb_printf(sb, "\\u%04x", (unsigned char)*s);
    else sb_printf(sb, "%c", *s);
  }
  sb_printf(sb, "\"");
}

dt_status dt_write_emitted(const char *dir, const char *name, dt_status (*emit)(const void *obj, FILE *f), const void *obj) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  DT_CHECK(mem != NULL, DT_ERR_MEMORY, "out of memory");
  dt_status st = emit(obj, mem);
  fclose(mem);
  if (st == DT_OK) st = dt_write_atomic(dir, name, text, len);
  free(text);
  return st;
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
