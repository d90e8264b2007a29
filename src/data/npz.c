/* NumPy's .npy and .npz files, read (dt/npz.h). The file is read whole (it is bounded), then a zip
 * archive is walked through its central directory, each member inflated by zlib and its CRC-32
 * checked, and each .npy header parsed as the literal dict numpy writes. */
#include "dt/npz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "data_impl.h"
#include "dt/io.h"

static uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t u32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t u64(const uint8_t *p) { return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32; }

void dt_arrays_free(dt_arrays *a) {
  if (a == NULL) return;
  for (int i = 0; i < a->n; i++) dt_free(a->a[i].v);
  dt_free(a->a);
  a->a = NULL;
  a->n = 0;
}

const dt_array *dt_arrays_find(const dt_arrays *a, const char *name) {
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->a[i].name, name) == 0) return &a->a[i];
  return NULL;
}

void dt_array_shape_text(const dt_array *a, char *buf, size_t size) {
  size_t used = 0;
  if (size > 0) buf[0] = '\0';
  if (a->rank == 0) snprintf(buf, size, "scalar");
  for (int d = 0; d < a->rank && used < size; d++) {
    const int n = snprintf(buf + used, size - used, "%s%lld", d ? "x" : "", (long long)a->shape[d]);
    used += n > 0 ? (size_t)n : 0;
  }
}

/* The value of 'key' in numpy's header dict: the text after "'key':", spaces skipped. */
static const char *dict_value(const char *h, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(h, pat);
  if (p == NULL) return NULL;
  p += strlen(pat);
  while (*p == ' ') p++;
  if (*p++ != ':') return NULL;
  while (*p == ' ') p++;
  return p;
}

/* One .npy image (bytes [0, n)) into a; where names the file and member for errors. */
static dt_status parse_npy(const uint8_t *b, size_t n, const char *where, size_t max_bytes, dt_array *a) {
  DT_CHECK(n >= 10 && memcmp(b, "\x93NUMPY", 6) == 0, DT_ERR_DATA, "%s: not a .npy array (no \\x93NUMPY magic)", where);
  const int major = b[6];
  DT_CHECK(major >= 1 && major <= 3, DT_ERR_DATA, "%s: .npy format version %d.%d, expected 1.0 to 3.0", where, major, b[7]);
  const size_t hl = major == 1 ? u16(b + 8) : (n >= 12 ? u32(b + 8) : SIZE_MAX), h0 = major == 1 ? 10 : 12;
  DT_CHECK(hl <= n - h0 && hl < 65536, DT_ERR_DATA, "%s: truncated: the header needs %zu bytes, %zu follow", where, hl, n - h0);
  char head[65536];
  memcpy(head, b + h0, hl);
  head[hl] = '\0';
  const char *d = dict_value(head, "descr"), *fo = dict_value(head, "fortran_order"), *sh = dict_value(head, "shape");
  DT_CHECK(d != NULL && fo != NULL && sh != NULL, DT_ERR_DATA,
           "%s: the header lacks 'descr', 'fortran_order' or 'shape' (found \"%.80s\")", where, head);
  char order = 0, kind = 0;
  int size = 0, used = 0;
  DT_CHECK(sscanf(d, "'%c%c%d'%n", &order, &kind, &size, &used) == 3 && used > 0, DT_ERR_DATA,
           "%s: element type %.20s: expected a simple type such as '<f4' (no structured, object or string arrays)", where, d);
  const int valid_size = kind == 'f' ? size == 4 || size == 8
                         : kind == 'i' || kind == 'u' ? size == 1 || size == 2 || size == 4 || size == 8
                         : kind == 'b' ? size == 1
                                       : 0;
  DT_CHECK(valid_size, DT_ERR_DATA, "%s: element type '%c%c%d': expected float32/64, an integer or bool", where, order, kind, size);
  DT_CHECK(order == '<' || order == '|' || order == '=' || size == 1, DT_ERR_DATA,
           "%s: element type '%c%c%d' is big-endian; save it little-endian (x.astype('<%c%d'))", where, order, kind, size, kind, size);
  const int fortran = strncmp(fo, "True", 4) == 0;
  DT_CHECK(fortran || strncmp(fo, "False", 5) == 0, DT_ERR_DATA, "%s: fortran_order is neither True nor False", where);
  DT_CHECK(*sh == '(', DT_ERR_DATA, "%s: shape: expected a tuple, found \"%.20s\"", where, sh);
  a->rank = 0;
  a->count = 1;
  const char *p = sh + 1;
  for (;;) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ')') break;
    char *end = NULL;
    const long long v = strtoll(p, &end, 10);
    DT_CHECK(end != p && v >= 0 && a->rank < DT_NPY_MAX_RANK, DT_ERR_DATA, "%s: shape \"%.40s\": expected at most %d sizes >= 0",
             where, sh, DT_NPY_MAX_RANK);
    DT_CHECK(v == 0 || a->count <= max_bytes / (size_t)v, DT_ERR_DATA, "%s: shape \"%.40s\" is over %zu bytes", where, sh, max_bytes);
    a->shape[a->rank++] = v;
    a->count *= (size_t)v;
    p = end;
  }
  DT_CHECK(!fortran || a->rank <= 1, DT_ERR_DATA, "%s: Fortran order; save it in C order (np.ascontiguousarray)", where);
  const size_t body = n - h0 - hl;
  DT_CHECK(a->count <= body / (size_t)size && body == a->count * (size_t)size, DT_ERR_DATA,
           "%s: %s: the shape needs %zu bytes of data, %zu follow", where, body < a->count * (size_t)size ? "truncated" : "too long",
           a->count * (size_t)size, body);
  a->kind = kind;
  DT_ALLOC(a->v, a->count + 1, "array values");
  const uint8_t *q = b + h0 + hl;
  for (size_t i = 0; i < a->count; i++, q += size) {
    if (kind == 'f' && size == 4) {
      float f;
      memcpy(&f, q, 4);
      a->v[i] = f;
    } else if (kind == 'f') {
      memcpy(&a->v[i], q, 8);
    } else {
      uint64_t u = 0;
      for (int k = 0; k < size; k++) u |= (uint64_t)q[k] << (8 * k);
      if (kind == 'i' && size < 8 && (u >> (8 * size - 1)) & 1) u |= ~(uint64_t)0 << (8 * size); /* sign-extend */
      a->v[i] = kind == 'i' ? (double)(int64_t)u : (double)u;
    }
  }
  return DT_OK;
}

/* The member whose central directory entry starts at c (end: the directory's end), into a. */
static dt_status read_member(const char *path, const uint8_t *f, size_t n, const uint8_t *c, const uint8_t *end, size_t max_bytes,
                             dt_array *a, const uint8_t **next) {
  DT_CHECK(end - c >= 46 && u32(c) == 0x02014b50, DT_ERR_DATA, "%s: the zip's central directory is damaged", path);
  const unsigned flags = u16(c + 8), method = u16(c + 10), name_len = u16(c + 28), extra_len = u16(c + 30), comment_len = u16(c + 32);
  const uint32_t crc = u32(c + 16);
  uint64_t csize = u32(c + 20), usize = u32(c + 24), off = u32(c + 42);
  DT_CHECK((size_t)(end - c) >= 46u + name_len + extra_len + comment_len, DT_ERR_DATA, "%s: the zip's central directory is damaged", path);
  char name[sizeof a->name + 8];
  DT_CHECK(name_len < sizeof a->name + 4, DT_ERR_DATA, "%s: a member's name is over %zu bytes", path, sizeof a->name);
  memcpy(name, c + 46, name_len);
  name[name_len] = '\0';
  for (const uint8_t *e = c + 46 + name_len; e + 4 <= c + 46 + name_len + extra_len;) { /* zip64 sizes */
    const unsigned id = u16(e), len = u16(e + 2);
    const uint8_t *v = e + 4, *vend = e + 4 + len;
    if (vend > c + 46 + name_len + extra_len) break;
    if (id == 0x0001) {
      if (usize == 0xFFFFFFFFu && v + 8 <= vend) usize = u64(v), v += 8;
      if (csize == 0xFFFFFFFFu && v + 8 <= vend) csize = u64(v), v += 8;
      if (off == 0xFFFFFFFFu && v + 8 <= vend) off = u64(v);
    }
    e = vend;
  }
  *next = c + 46 + name_len + extra_len + comment_len;
  const size_t nl = strlen(name);
  DT_CHECK(nl > 4 && strcmp(name + nl - 4, ".npy") == 0, DT_ERR_DATA, "%s: member '%s' is not a .npy array", path, name);
  char where[sizeof name + 4200];
  snprintf(where, sizeof where, "%s: member '%s'", path, name);
  DT_CHECK(!(flags & 1), DT_ERR_DATA, "%s is encrypted", where);
  DT_CHECK(method == 0 || method == 8, DT_ERR_DATA, "%s: compression method %u, expected stored (0) or deflate (8)", where, method);
  DT_CHECK(usize <= max_bytes, DT_ERR_DATA, "%s: %llu bytes, over the %zu this file may hold", where, (unsigned long long)usize, max_bytes);
  DT_CHECK(off <= n && n - off >= 30 && u32(f + off) == 0x04034b50, DT_ERR_DATA, "%s: no local header at byte %llu", where,
           (unsigned long long)off);
  const uint64_t data = off + 30 + u16(f + off + 26) + u16(f + off + 28);
  DT_CHECK(data <= n && csize <= n - data, DT_ERR_DATA, "%s: truncated: its header says %llu bytes, %llu follow", where,
           (unsigned long long)csize, (unsigned long long)(data <= n ? n - data : 0));
  /* before any allocation: what the header claims must fit what follows (deflate packs at most
   * 1032 bytes into one) */
  DT_CHECK(method == 8 || csize == usize, DT_ERR_DATA, "%s: stored with %llu bytes, unpacked %llu", where, (unsigned long long)csize,
           (unsigned long long)usize);
  DT_CHECK(method == 0 || usize / 1032 <= csize, DT_ERR_DATA, "%s: %llu compressed bytes cannot unpack to the %llu its header says",
           where, (unsigned long long)csize, (unsigned long long)usize);
  uint8_t *buf = NULL;
  dt_status st = DT_OK;
  DT_ALLOC(buf, usize + 1, "archive member");
  if (method == 0) {
    memcpy(buf, f + data, usize);
  } else {
    z_stream z;
    memset(&z, 0, sizeof z);
    DT_CHECK_GOTO(inflateInit2(&z, -MAX_WBITS) == Z_OK, DT_ERR_MEMORY, "%s: zlib cannot start", where);
    z.next_in = (Bytef *)(uintptr_t)(f + data);
    z.avail_in = (uInt)csize;
    z.next_out = buf;
    z.avail_out = (uInt)usize + 1;
    const int r = inflate(&z, Z_FINISH);
    const uint64_t got = z.total_out;
    inflateEnd(&z);
    DT_CHECK_GOTO(r == Z_STREAM_END && got == usize, DT_ERR_DATA, "%s: damaged compressed data (%s)", where,
                  r == Z_STREAM_END ? "another size than its header's" : z.msg != NULL ? z.msg : "truncated");
  }
  DT_CHECK_GOTO(crc32(0L, buf, (uInt)usize) == crc, DT_ERR_DATA, "%s: damaged: its CRC-32 does not match", where);
  snprintf(a->name, sizeof a->name, "%.*s", (int)(nl - 4), name);
  st = parse_npy(buf, usize, where, max_bytes, a);
cleanup:
  dt_free(buf);
  return st;
}

static dt_status read_zip(const char *path, const uint8_t *f, size_t n, size_t max_bytes, dt_arrays *out) {
  size_t e = n >= 22 ? n - 22 : 0; /* the end record, searched back over a comment of at most 64 KiB */
  while (n >= 22 && e > 0 && n - e < 22 + 65536 && u32(f + e) != 0x06054b50) e--;
  DT_CHECK(n >= 22 && u32(f + e) == 0x06054b50, DT_ERR_DATA, "%s: not a .npz archive: no zip end record (truncated?)", path);
  uint64_t entries = u16(f + e + 10), cd_size = u32(f + e + 12), cd_off = u32(f + e + 16);
  if ((entries == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu) && e >= 20 && u32(f + e - 20) == 0x07064b50) {
    const uint64_t z = u64(f + e - 12);
    DT_CHECK(z <= n && n - z >= 56 && u32(f + z) == 0x06064b50, DT_ERR_DATA, "%s: the zip64 end record is damaged", path);
    entries = u64(f + z + 32), cd_size = u64(f + z + 40), cd_off = u64(f + z + 48);
  }
  DT_CHECK(cd_off <= n && cd_size <= n - cd_off, DT_ERR_DATA, "%s: the zip's central directory lies past the file's end (truncated?)",
           path);
  DT_CHECK(entries <= DT_NPZ_MAX_ARRAYS, DT_ERR_DATA, "%s: %llu members, at most %d are read", path, (unsigned long long)entries,
           DT_NPZ_MAX_ARRAYS);
  DT_ALLOC(out->a, entries + 1, "arrays");
  const uint8_t *c = f + cd_off, *end = f + cd_off + cd_size;
  for (uint64_t k = 0; k < entries; k++) {
    DT_TRY(read_member(path, f, n, c, end, max_bytes, &out->a[out->n], &c));
    out->n++;
    for (int j = 0; j < out->n - 1; j++)
      DT_CHECK(strcmp(out->a[j].name, out->a[out->n - 1].name) != 0, DT_ERR_DATA, "%s: two members named '%s.npy'", path,
               out->a[j].name);
  }
  return DT_OK;
}

dt_status dt_npz_read(const char *path, size_t max_bytes, dt_arrays *out) {
  memset(out, 0, sizeof *out);
  struct stat sb;
  FILE *fp = dt_open_regular(path, &sb);
  DT_CHECK(fp != NULL, errno == ENOENT ? DT_ERR_DATA : DT_ERR_IO, "cannot read %s: %s", path,
           errno == EINVAL && S_ISDIR(sb.st_mode) ? "a folder, not a file" : errno == EINVAL ? "not a regular file" : strerror(errno));
  uint8_t *f = NULL;
  dt_status st = DT_OK;
  const size_t n = (size_t)sb.st_size;
  DT_CHECK_GOTO(sb.st_size >= 0 && n <= max_bytes, DT_ERR_DATA, "%s: %lld bytes, over the %zu this file may hold", path,
                (long long)sb.st_size, max_bytes);
  DT_ALLOC_GOTO(f, n + 1, "file");
  DT_CHECK_GOTO(fread(f, 1, n, fp) == n, DT_ERR_IO, "cannot read %s: %s", path, ferror(fp) ? strerror(errno) : "it shrank");
  data_sha256_hex(NULL, 0, f, n, out->sha256);
  if (n >= 4 && u32(f) == 0x04034b50) {
    st = read_zip(path, f, n, max_bytes, out);
  } else if (n == 22 && u32(f) == 0x06054b50) {
    st = DT_ERROR(DT_ERR_DATA, "%s: an empty .npz archive (no arrays)", path);
  } else {
    DT_ALLOC_GOTO(out->a, 1, "arrays");
    st = parse_npy(f, n, path, max_bytes, &out->a[0]);
    if (st == DT_OK) out->n = 1;
  }
cleanup:
  fclose(fp);
  dt_free(f);
  if (st != DT_OK) dt_arrays_free(out);
  return st;
}
