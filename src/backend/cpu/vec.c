/* The CPU backend's memory (aligned host memory) and vector ops, on dt/formulas.h's per-element
 * formulas. Reductions accumulate in double in index order, so they give the same bits whatever
 * the thread count; elementwise loops are vectorised by gcc and, over whole slabs, split over the
 * backend's threads. */
#include <malloc.h>
#include <math.h>
#include <string.h>

#include "cpu_impl.h"
#include "dt/formulas.h"

/* Large elementwise ops are split over threads in chunks of this many floats. */
enum { CHUNK = 1 << 15 };
#define CHUNKS(n) ((long)(((n) + CHUNK - 1) / CHUNK))
#define CHUNK_LEN(n, c) ((n) - (size_t)(c) * CHUNK < CHUNK ? (n) - (size_t)(c) * CHUNK : (size_t)CHUNK)

/* `for (long c = 0; c < CHUNKS(n); c++) BODY`, on the caller's `be`'s threads when there is more
 * than one chunk. The serial case does not enter OpenMP at all: a `parallel for` whose `if` is
 * false still builds libgomp a team of one (an allocation and a barrier, 0.5-1 us here), which was
 * most of a small model's round (issue 61). The chunks are the same either way. */
#define FOR_CHUNKS(be, n, c, ...)                                                                   \
  do {                                                                                              \
    if (CHUNKS(n) > 1 && (be)->threads > 1) {                                                       \
      _Pragma("omp parallel for schedule(static) num_threads(be->threads)") for (long c = 0; c < CHUNKS(n); c++) { \
        __VA_ARGS__;                                                                                \
      }                                                                                             \
    } else {                                                                                        \
      for (long c = 0; c < CHUNKS(n); c++) {                                                        \
        __VA_ARGS__;                                                                                \
      }                                                                                             \
    }                                                                                               \
  } while (0)

dt_status dt_cpu_alloc(dt_backend *be, size_t bytes, void **out) {
  *out = dt_calloc_(bytes > 0 ? bytes : 1, 1);
  if (*out == NULL) return DT_ERROR(DT_ERR_MEMORY, "out of memory allocating %zu bytes", bytes);
  /* counted as the allocator holds it (its usable size, the same at free) */
  const size_t live = __atomic_add_fetch(&be->mem_live, malloc_usable_size(*out), __ATOMIC_RELAXED);
  size_t peak = __atomic_load_n(&be->mem_peak, __ATOMIC_RELAXED);
  while (live > peak && !__atomic_compare_exchange_n(&be->mem_peak, &peak, live, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return DT_OK;
}

void dt_cpu_free(dt_backend *be, void *p) {
  if (p == NULL) return;
  __atomic_sub_fetch(&be->mem_live, malloc_usable_size(p), __ATOMIC_RELAXED);
  dt_free(p);
}

dt_status dt_cpu_upload(dt_backend *be, void *dst, const void *src, size_t bytes) {
  (void)be;
  if (dst != src && bytes > 0) memcpy(dst, src, bytes);
  return DT_OK;
}

dt_status dt_cpu_download(dt_backend *be, void *dst, const void *src, size_t bytes) {
  (void)be;
  if (dst != src && bytes > 0) memcpy(dst, src, bytes);
  return DT_OK;
}

DT_CLONES
static void fill_impl(size_t n, float a, float *y) {
  for (size_t i = 0; i < n; i++) y[i] = a;
}

dt_status dt_cpu_fill(dt_backend *be, size_t n, float a, float *y) {
  FOR_CHUNKS(be, n, c, fill_impl(CHUNK_LEN(n, c), a, y + (size_t)c * CHUNK));
  return DT_OK;
}

dt_status dt_cpu_copy(dt_backend *be, size_t n, const float *x, float *y) {
  if (x == y) return DT_OK;
  FOR_CHUNKS(be, n, c, memcpy(y + (size_t)c * CHUNK, x + (size_t)c * CHUNK, sizeof(float) * CHUNK_LEN(n, c)));
  return DT_OK;
}

DT_CLONES
static void scale_impl(size_t n, float a, float *y) {
  for (size_t i = 0; i < n; i++) y[i] = dt_f_scale(a, y[i]);
}

dt_status dt_cpu_scale(dt_backend *be, size_t n, float a, float *y) {
  FOR_CHUNKS(be, n, c, scale_impl(CHUNK_LEN(n, c), a, y + (size_t)c * CHUNK));
  return DT_OK;
}

DT_CLONES
static void axpy_impl(size_t n, float a, const float *restrict x, float *restrict y) {
  for (size_t i = 0; i < n; i++) y[i] = dt_f_axpy(a, x[i], y[i]);
}

dt_status dt_cpu_axpy(dt_backend *be, size_t n, float a, const float *x, float *y) {
  FOR_CHUNKS(be, n, c, axpy_impl(CHUNK_LEN(n, c), a, x + (size_t)c * CHUNK, y + (size_t)c * CHUNK));
  return DT_OK;
}

DT_CLONES
static void axpby_impl(size_t n, float a, const float *x, float b, const float *y, float *z) {
  for (size_t i = 0; i < n; i++) z[i] = dt_f_axpby(a, x[i], b, y[i]);
}

dt_status dt_cpu_axpby(dt_backend *be, size_t n, float a, const float *x, float b, const float *y, float *z) {
  FOR_CHUNKS(be, n, c, const size_t o = (size_t)c * CHUNK; axpby_impl(CHUNK_LEN(n, c), a, x + o, b, y + o, z + o));
  return DT_OK;
}

dt_status dt_cpu_dot(dt_backend *be, size_t n, const float *x, const float *y, double *out) {
  (void)be;
  double s = 0;
  for (size_t i = 0; i < n; i++) s += dt_f_dot_term(x[i], y[i]);
  *out = s;
  return DT_OK;
}

dt_status dt_cpu_nrm2(dt_backend *be, size_t n, const float *x, double *out) {
  (void)be;
  double s = 0;
  for (size_t i = 0; i < n; i++) s += dt_f_dot_term(x[i], x[i]);
  *out = sqrt(s);
  return DT_OK;
}

dt_status dt_cpu_div(dt_backend *be, size_t n, const float *x, double d, float *y) {
  (void)be;
  for (size_t i = 0; i < n; i++) y[i] = dt_f_div(x[i], d);
  return DT_OK;
}

DT_CLONES
static void mix_first(size_t n, float w, const float *restrict x, float *restrict y) {
  for (size_t i = 0; i < n; i++) y[i] = dt_f_mix_first(w, x[i]);
}

/* Elements [o, o + len) of one mix: y = 0 + w[0]·x[0] + w[1]·x[1] + ... in that order, a block of
 * y at a time so that it stays in L1 while every term is added to it (a term at a time over the
 * whole range streamed y through L2 once per term). */
static void mix_range(size_t o, size_t len, int k, const float *const *x, const float *w, float *y) {
  enum { BLOCK = 2048 };
  if (k == 0) fill_impl(len, 0.0f, y + o);
  for (size_t b = o; b < o + len; b += BLOCK) {
    const size_t m = o + len - b < BLOCK ? o + len - b : BLOCK;
    for (int j = 0; j < k; j++) {
      if (j == 0) mix_first(m, w[0], x[0] + b, y + b);
      else axpy_impl(m, w[j], x[j] + b, y + b);
    }
  }
}

dt_status dt_cpu_mix(dt_backend *be, size_t n, int k, const float *const *x, const float *w, float *y) {
  FOR_CHUNKS(be, n, c, mix_range((size_t)c * CHUNK, CHUNK_LEN(n, c), k, x, w, y));
  return DT_OK;
}

dt_status dt_cpu_mix_nodes(dt_backend *be, size_t n, int count, const int *k, const float *const *x, const float *w,
                           float *const *y) {
  /* where each output's terms start: outputs run in parallel, each one as dt_cpu_mix computes it */
  size_t *at = dt_calloc_((size_t)(count > 0 ? count : 1), sizeof(size_t));
  if (at == NULL) return DT_ERROR(DT_ERR_MEMORY, "out of memory mixing %d nodes", count);
  for (int c = 1; c < count; c++) at[c] = at[c - 1] + (size_t)k[c - 1];
  if (be->threads > 1 && count > 1) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(be->threads)
    for (int c = 0; c < count; c++) mix_range(0, n, k[c], x + at[c], w + at[c], y[c]);
  } else {
    for (int c = 0; c < count; c++) mix_range(0, n, k[c], x + at[c], w + at[c], y[c]);
  }
  dt_free(at);
  return DT_OK;
}

dt_status dt_cpu_sqdist(dt_backend *be, size_t n, const float *x, const float *y, double *out) {
  (void)be;
  double s = 0;
  for (size_t i = 0; i < n; i++) s += dt_f_sqdist_term(x[i], y[i]);
  *out = s;
  return DT_OK;
}

dt_status dt_cpu_sqdist_mean(dt_backend *be, size_t n, const float *x, const double *sum, double count, double *out) {
  (void)be;
  double s = 0;
  for (size_t i = 0; i < n; i++) s += dt_f_sqdist_mean_term(x[i], sum[i], count);
  *out = s;
  return DT_OK;
}

dt_status dt_cpu_mean_of_sum(dt_backend *be, size_t n, const double *sum, double count, float *y) {
  (void)be;
  for (size_t i = 0; i < n; i++) y[i] = dt_f_mean_of_sum(sum[i], count);
  return DT_OK;
}

/* ---- many rows: each row by its single-row op, so the bits are those of a loop of calls. With
 * at least as many rows as threads the rows run on the threads (each row's op then on one:
 * nested regions do not fork); fewer rows run in turn, each row's op on every thread. None of
 * these single-row ops fails once the kind is known (checked first). */

/* `for (int l = 0; l < count; l++) BODY` over the caller's `be` and `count`, on the threads only
 * where it forks (see FOR_CHUNKS). */
#define FOR_ROWS(l, ...)                                                                    \
  do {                                                                                      \
    if (count >= be->threads && be->threads > 1) {                                          \
      _Pragma("omp parallel for schedule(static) num_threads(be->threads)") for (int l = 0; l < count; l++) { \
        __VA_ARGS__;                                                                        \
      }                                                                                     \
    } else {                                                                                \
      for (int l = 0; l < count; l++) {                                                     \
        __VA_ARGS__;                                                                        \
      }                                                                                     \
    }                                                                                       \
  } while (0)

dt_status dt_cpu_rows(dt_backend *be, const dt_rows *r) {
  DT_CHECK(r->kind >= DT_ROWS_COPY && r->kind <= DT_ROWS_DIV, DT_ERR_INTERNAL, "unknown rows op %d", (int)r->kind);
  int failed = 0;
  const int count = r->count;
  FOR_ROWS(l, if (dt_rows_row(be, r, l) != DT_OK) __atomic_store_n(&failed, 1, __ATOMIC_RELAXED));
  return failed ? DT_ERROR(DT_ERR_INTERNAL, "a rows op failed") : DT_OK;
}

dt_status dt_cpu_reduce_rows(dt_backend *be, dt_reduce_kind kind, size_t n, int count, const float *x, size_t xs, const double *sum,
                             double div, double *out) {
  DT_CHECK(kind == DT_REDUCE_NRM2 || kind == DT_REDUCE_SQDIST_MEAN, DT_ERR_INTERNAL, "unknown reduce_rows kind %d", (int)kind);
  int failed = 0;
  FOR_ROWS(l, const float *row = x + (size_t)l * xs;
           if ((kind == DT_REDUCE_NRM2 ? dt_cpu_nrm2(be, n, row, &out[l]) : dt_cpu_sqdist_mean(be, n, row, sum, div, &out[l])) != DT_OK)
               __atomic_store_n(&failed, 1, __ATOMIC_RELAXED));
  return failed ? DT_ERROR(DT_ERR_INTERNAL, "a reduce_rows op failed") : DT_OK;
}

dt_status dt_cpu_local_step_rows(dt_backend *be, size_t n, int count, const dt_step *s, float *p, size_t ps, const float *g, size_t gs,
                                 float *m, float *v, size_t mvs, const float *extra_b, size_t ebs) {
  for (int l = 0; l < count; l++)
    DT_CHECK((unsigned)s[l].kind < DT_STEP_KIND_COUNT, DT_ERR_INTERNAL, "unknown local step kind %d", (int)s[l].kind);
  int failed = 0;
  FOR_ROWS(l, if (dt_cpu_local_step(be, n, &s[l], p + (size_t)l * ps, g + (size_t)l * gs, m != NULL ? m + (size_t)l * mvs : NULL,
                                    v != NULL ? v + (size_t)l * mvs : NULL, extra_b != NULL ? extra_b + (size_t)l * ebs : NULL) != DT_OK)
                 __atomic_store_n(&failed, 1, __ATOMIC_RELAXED));
  return failed ? DT_ERROR(DT_ERR_INTERNAL, "a local_step_rows op failed") : DT_OK;
}
