/* The CUDA backend's memory, vector, mixing and fused local-optimizer ops.
 *
 * Built without multiply-add contraction (-fmad=false, src/backend/cuda/meson.build) and with
 * IEEE division and square root, so every elementwise op here computes dt/formulas.h's formula,
 * which the CPU backend compiles too, and gives its bits exactly; the gpu suite checks that with
 * a tolerance of zero. Reductions accumulate in double over a fixed grid (RED_BLOCKS blocks,
 * then one block in index order): the bits depend on n alone, not on the call or the device. */
#include <math.h>
#include <string.h>

#include "cuda_impl.h"

extern "C" {
#include "dt/formulas.h"
}

dt_status cu_alloc(dt_backend *be, size_t bytes, void **out) {
  *out = NULL;
  const size_t rounded = ((bytes > 0 ? bytes : 1) + 255) & ~(size_t)255;
  cudaError_t err = cudaMalloc(out, rounded);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    *out = NULL;
    return DT_ERROR(DT_ERR_MEMORY, "out of GPU memory allocating %zu bytes: %s", bytes, cudaGetErrorString(err));
  }
  CU_CALL(cudaMemsetAsync(*out, 0, rounded, ctx_of(be)->stream));
  return DT_OK;
}

void cu_free(dt_backend *be, void *p) {
  if (p == NULL) return;
  (void)cudaStreamSynchronize(ctx_of(be)->stream); /* no queued op may still use it */
  (void)cudaFree(p);
}

/* Pageable host memory: the call returns once the source has been read, so the caller may reuse
 * it at once; the copy itself stays in stream order. */
dt_status cu_upload(dt_backend *be, void *dst, const void *src, size_t bytes) {
  if (bytes == 0) return DT_OK;
  CU_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx_of(be)->stream));
  return DT_OK;
}

dt_status cu_download(dt_backend *be, void *dst, const void *src, size_t bytes) {
  if (bytes == 0) return DT_OK;
  CU_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx_of(be)->stream));
  CU_CALL(cudaStreamSynchronize(ctx_of(be)->stream));
  return DT_OK;
}

#define LAUNCH(kernel, be, n, ...) \
  do {                             \
    KERNEL(kernel, be, n, __VA_ARGS__); \
    return DT_OK;                  \
  } while (0)

__global__ void k_fill(size_t n, float a, float *y) { GRID_STRIDE(i, n) y[i] = a; }
__global__ void k_scale(size_t n, float a, float *y) { GRID_STRIDE(i, n) y[i] = dt_f_scale(a, y[i]); }
__global__ void k_axpy(size_t n, float a, const float *x, float *y) { GRID_STRIDE(i, n) y[i] = dt_f_axpy(a, x[i], y[i]); }
__global__ void k_axpby(size_t n, float a, const float *x, float b, const float *y, float *z) {
  GRID_STRIDE(i, n) z[i] = dt_f_axpby(a, x[i], b, y[i]);
}
__global__ void k_div(size_t n, const float *x, double d, float *y) { GRID_STRIDE(i, n) y[i] = dt_f_div(x[i], d); }
__global__ void k_mean_of_sum(size_t n, const double *sum, double count, float *y) {
  GRID_STRIDE(i, n) y[i] = dt_f_mean_of_sum(sum[i], count);
}

dt_status cu_fill(dt_backend *be, size_t n, float a, float *y) { LAUNCH(k_fill, be, n, a, y); }
dt_status cu_copy(dt_backend *be, size_t n, const float *x, float *y) {
  if (x == y || n == 0) return DT_OK;
  CU_CALL(cudaMemcpyAsync(y, x, sizeof(float) * n, cudaMemcpyDeviceToDevice, ctx_of(be)->stream));
  return DT_OK;
}
dt_status cu_scale(dt_backend *be, size_t n, float a, float *y) { LAUNCH(k_scale, be, n, a, y); }
dt_status cu_axpy(dt_backend *be, size_t n, float a, const float *x, float *y) { LAUNCH(k_axpy, be, n, a, x, y); }
dt_status cu_axpby(dt_backend *be, size_t n, float a, const float *x, float b, const float *y, float *z) {
  LAUNCH(k_axpby, be, n, a, x, b, y, z);
}
dt_status cu_div(dt_backend *be, size_t n, const float *x, double d, float *y) { LAUNCH(k_div, be, n, x, d, y); }
dt_status cu_mean_of_sum(dt_backend *be, size_t n, const double *sum, double count, float *y) {
  LAUNCH(k_mean_of_sum, be, n, sum, count, y);
}

/* ---- mixing: y = 0 + w0·x0 + w1·x1 + ..., in that order, MIX_ARGS vectors per launch ------- */

enum { MIX_ARGS = 16 };
struct mix_args {
  const float *x[MIX_ARGS];
  float w[MIX_ARGS];
  int k, first;
};

__global__ void k_mix(size_t n, mix_args a, float *y) {
  GRID_STRIDE(i, n) {
    float acc = a.first ? 0.0f : y[i];
    for (int j = 0; j < a.k; j++) acc = j == 0 && a.first ? dt_f_mix_first(a.w[0], a.x[0][i]) : dt_f_axpy(a.w[j], a.x[j][i], acc);
    y[i] = acc;
  }
}

dt_status cu_mix(dt_backend *be, size_t n, int k, const float *const *x, const float *w, float *y) {
  if (n == 0) return DT_OK;
  if (k == 0) return cu_fill(be, n, 0.0f, y);
  for (int j0 = 0; j0 < k; j0 += MIX_ARGS) {
    mix_args a;
    a.k = k - j0 < MIX_ARGS ? k - j0 : MIX_ARGS;
    a.first = j0 == 0;
    for (int j = 0; j < a.k; j++) {
      a.x[j] = x[j0 + j];
      a.w[j] = w[j0 + j];
    }
    KERNEL(k_mix, be, n, a, y);
  }
  return DT_OK;
}

/* ---- mixing many nodes in one launch: output c is the mix of terms [at[c], at[c+1]) --------- */

struct mix_table {
  const long long *at;    /* count + 1 */
  float *const *y;        /* count */
  const float *const *x;  /* terms */
  const float *w;         /* terms */
};

__global__ void k_mix_nodes(size_t n, int count, mix_table t) {
  for (int c = blockIdx.y; c < count; c += gridDim.y) {
    const long long a = t.at[c], k = t.at[c + 1] - a;
    float *y = t.y[c];
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
      float acc = 0.0f;
      for (long long j = 0; j < k; j++) acc = j == 0 ? dt_f_mix_first(t.w[a], t.x[a][i]) : dt_f_axpy(t.w[a + j], t.x[a + j][i], acc);
      y[i] = acc;
    }
  }
}

dt_status cu_mix_nodes(dt_backend *be, size_t n, int count, const int *k, const float *const *x, const float *w,
                       float *const *y) {
  if (n == 0 || count <= 0) return DT_OK;
  size_t terms = 0;
  for (int c = 0; c < count; c++) terms += (size_t)k[c];
  /* the table: offsets, outputs, term pointers, then weights (8-byte fields first) */
  const size_t o_y = sizeof(long long) * ((size_t)count + 1), o_x = o_y + sizeof(float *) * (size_t)count;
  const size_t o_w = o_x + sizeof(float *) * terms, bytes = o_w + sizeof(float) * terms;
  unsigned char *h = (unsigned char *)dt_calloc_(bytes, 1);
  if (h == NULL) return DT_ERROR(DT_ERR_MEMORY, "out of memory for the mixing table of %d nodes", count);
  long long *at = (long long *)h;
  float **ys = (float **)(h + o_y);
  const float **xs = (const float **)(h + o_x);
  float *ws = (float *)(h + o_w);
  at[0] = 0;
  for (int c = 0; c < count; c++) at[c + 1] = at[c] + k[c], ys[c] = y[c];
  for (size_t j = 0; j < terms; j++) xs[j] = x[j], ws[j] = w[j];
  void *dev = NULL;
  const dt_status st = cu_table_put(be, &ctx_of(be)->mix, h, bytes, 1, &dev);
  dt_free(h);
  DT_TRY(st);
  unsigned char *d = (unsigned char *)dev;
  mix_table t;
  t.at = (const long long *)d;
  t.y = (float *const *)(d + o_y);
  t.x = (const float *const *)(d + o_x);
  t.w = (const float *)(d + o_w);
  const unsigned bx = cu_blocks(n) < 1024u ? cu_blocks(n) : 1024u;
  const dim3 grid(bx, count < 65535 ? (unsigned)count : 65535u);
  k_mix_nodes<<<grid, CU_THREADS, 0, ctx_of(be)->stream>>>(n, count, t);
  CU_LAUNCHED();
  return DT_OK;
}

/* ---- reductions ---------------------------------------------------------------------------- */

enum red_kind { RED_DOT, RED_SQ, RED_SQDIST, RED_SQDIST_MEAN };

/* One block's share of a reduction over n elements: thread t of block b sums elements t + b·T,
 * t + (b + grid)·T, ... in order (T threads per block, grid blocks), then the block's threads in a
 * fixed tree; the block's sum is returned to thread 0. */
template <int KIND>
__device__ double reduce_block(size_t n, const float *x, const float *y, const double *sum, double count) {
  __shared__ double s[CU_THREADS];
  double acc = 0.0;
  GRID_STRIDE(i, n) {
    double t;
    if (KIND == RED_DOT) t = dt_f_dot_term(x[i], y[i]);
    else if (KIND == RED_SQ) t = dt_f_dot_term(x[i], x[i]);
    else if (KIND == RED_SQDIST) t = dt_f_sqdist_term(x[i], y[i]);
    else t = dt_f_sqdist_mean_term(x[i], sum[i], count);
    acc += t;
  }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int h = CU_THREADS / 2; h > 0; h /= 2) {
    if ((int)threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
    __syncthreads();
  }
  return s[0];
}

template <int KIND>
__global__ void k_reduce(size_t n, const float *x, const float *y, const double *sum, double count, double *partial) {
  const double b = reduce_block<KIND>(n, x, y, sum, count);
  if (threadIdx.x == 0) partial[blockIdx.x] = b;
}

__global__ void k_reduce_final(const double *partial, double *out) {
  double acc = 0.0;
  for (int b = 0; b < RED_BLOCKS; b++) acc += partial[b];
  *out = acc;
}

template <int KIND>
static dt_status reduce(dt_backend *be, size_t n, const float *x, const float *y, const double *sum, double count,
                        double *out) {
  cuda_ctx *c = ctx_of(be);
  k_reduce<KIND><<<RED_BLOCKS, CU_THREADS, 0, c->stream>>>(n, x, y, sum, count, c->red);
  CU_LAUNCHED();
  k_reduce_final<<<1, 1, 0, c->stream>>>(c->red, c->red + RED_BLOCKS);
  CU_LAUNCHED();
  CU_CALL(cudaMemcpyAsync(c->red_host, c->red + RED_BLOCKS, sizeof(double), cudaMemcpyDeviceToHost, c->stream));
  CU_CALL(cudaStreamSynchronize(c->stream));
  *out = *c->red_host;
  return DT_OK;
}

dt_status cu_dot(dt_backend *be, size_t n, const float *x, const float *y, double *out) {
  return reduce<RED_DOT>(be, n, x, y, NULL, 1.0, out);
}
dt_status cu_nrm2(dt_backend *be, size_t n, const float *x, double *out) {
  DT_TRY(reduce<RED_SQ>(be, n, x, NULL, NULL, 1.0, out));
  *out = sqrt(*out);
  return DT_OK;
}
dt_status cu_sqdist(dt_backend *be, size_t n, const float *x, const float *y, double *out) {
  return reduce<RED_SQDIST>(be, n, x, y, NULL, 1.0, out);
}
dt_status cu_sqdist_mean(dt_backend *be, size_t n, const float *x, const double *sum, double count, double *out) {
  return reduce<RED_SQDIST_MEAN>(be, n, x, NULL, sum, count, out);
}


/* ---- many rows (dt_rows, reduce_rows, local_step_rows) --------------------------------------------
 * Each row's elements get the single-row op's formula, so the bits are those of a loop of calls.
 * The rows' scalars travel in the launch's parameters, ROWS_PER_LAUNCH rows a launch: nothing to
 * upload, nothing to wait for. */

enum { ROWS_PER_LAUNCH = 256 };
struct rows_scalars {
  union {
    struct {
      float a[ROWS_PER_LAUNCH], b[ROWS_PER_LAUNCH];
    } ab;
    double d[ROWS_PER_LAUNCH];
  } u;
};

template <int KIND>
__global__ void k_rows(int count, unsigned per, const float *x, size_t xs, const float *y, size_t ys, float *z, size_t zs,
                       rows_scalars sc) {
  NODE_LOOP(l, i, count, per) {
    float *zr = z + l * zs;
    if (KIND == DT_ROWS_FILL) zr[i] = sc.u.ab.a[l];
    else if (KIND == DT_ROWS_SCALE) zr[i] = dt_f_scale(sc.u.ab.a[l], zr[i]);
    else if (KIND == DT_ROWS_AXPY) zr[i] = dt_f_axpy(sc.u.ab.a[l], x[l * xs + i], zr[i]);
    else if (KIND == DT_ROWS_AXPBY) zr[i] = dt_f_axpby(sc.u.ab.a[l], x[l * xs + i], sc.u.ab.b[l], y[l * ys + i]);
    else zr[i] = dt_f_div(x[l * xs + i], sc.u.d[l]);
  }
}

dt_status cu_rows(dt_backend *be, const dt_rows *r) {
  if (r->n == 0 || r->count <= 0) return DT_OK;
  if (r->n > 0xffffffffu) { /* past NODE_LOOP's 32-bit index: the single-row ops, row by row */
    for (int l = 0; l < r->count; l++) DT_TRY(dt_rows_row(be, r, l));
    return DT_OK;
  }
  if (r->kind == DT_ROWS_COPY) { /* one 2-D copy for every row */
    CU_CALL(cudaMemcpy2DAsync(r->z, sizeof(float) * r->zs, r->x, sizeof(float) * r->xs, sizeof(float) * r->n, (size_t)r->count,
                              cudaMemcpyDeviceToDevice, ctx_of(be)->stream));
    return DT_OK;
  }
  for (int l0 = 0; l0 < r->count; l0 += ROWS_PER_LAUNCH) {
    const int cnt = r->count - l0 < ROWS_PER_LAUNCH ? r->count - l0 : ROWS_PER_LAUNCH;
    rows_scalars sc;
    for (int l = 0; l < cnt; l++) {
      if (r->kind == DT_ROWS_DIV) {
        sc.u.d[l] = r->dv[l0 + l];
      } else {
        sc.u.ab.a[l] = dt_rows_a(r, l0 + l);
        sc.u.ab.b[l] = dt_rows_b(r, l0 + l);
      }
    }
    const float *x = r->x != NULL ? r->x + (size_t)l0 * r->xs : NULL, *y = r->y != NULL ? r->y + (size_t)l0 * r->ys : NULL;
    float *z = r->z + (size_t)l0 * r->zs;
    switch (r->kind) {
#define ROWS_CASE(k) \
  case k: NODE_KERNEL(k_rows<k>, be, cnt, r->n, x, r->xs, y, r->ys, z, r->zs, sc); break;
      ROWS_CASE(DT_ROWS_FILL)
      ROWS_CASE(DT_ROWS_SCALE)
      ROWS_CASE(DT_ROWS_AXPY)
      ROWS_CASE(DT_ROWS_AXPBY)
      ROWS_CASE(DT_ROWS_DIV)
#undef ROWS_CASE
      default: return DT_ERROR(DT_ERR_INTERNAL, "unknown rows op %d", (int)r->kind);
    }
  }
  return DT_OK;
}

/* Row blockIdx.y's reduction as k_reduce computes it (RED_BLOCKS blocks along x), then each
 * row's blocks summed in order, as k_reduce_final does. */
template <int KIND>
__global__ void k_reduce_rows(size_t n, const float *x, size_t xs, const double *sum, double count, double *partial) {
  const double b = reduce_block<KIND>(n, x + blockIdx.y * xs, NULL, sum, count);
  if (threadIdx.x == 0) partial[(size_t)blockIdx.y * RED_BLOCKS + blockIdx.x] = b;
}

__global__ void k_reduce_rows_final(int count, const double *partial, double *out) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= count) return;
  double acc = 0.0;
  for (int b = 0; b < RED_BLOCKS; b++) acc += partial[(size_t)row * RED_BLOCKS + b];
  out[row] = acc;
}

enum { REDUCE_ROWS_PER_LAUNCH = 4096 };

dt_status cu_reduce_rows(dt_backend *be, dt_reduce_kind kind, size_t n, int count, const float *x, size_t xs, const double *sum,
                         double div, double *out) {
  cuda_ctx *c = ctx_of(be);
  if (count <= 0) return DT_OK;
  const int per = count < REDUCE_ROWS_PER_LAUNCH ? count : REDUCE_ROWS_PER_LAUNCH;
  const size_t need = (size_t)per * (RED_BLOCKS + 1);
  if (need > c->rows_cap) { /* partials, then the rows' sums; a pinned copy of the sums */
    cu_free(be, c->rows_red);
    if (c->rows_host != NULL) (void)cudaFreeHost(c->rows_host);
    c->rows_red = NULL, c->rows_host = NULL, c->rows_cap = 0;
    DT_TRY(cu_alloc(be, sizeof(double) * need, (void **)&c->rows_red));
    CU_CALL(cudaMallocHost((void **)&c->rows_host, sizeof(double) * per));
    c->rows_cap = need;
  }
  for (int l0 = 0; l0 < count; l0 += per) {
    const int cnt = count - l0 < per ? count - l0 : per;
    const float *xr = x + (size_t)l0 * xs;
    double *sums = c->rows_red + (size_t)per * RED_BLOCKS;
    if (kind == DT_REDUCE_NRM2)
      k_reduce_rows<RED_SQ><<<dim3(RED_BLOCKS, (unsigned)cnt), CU_THREADS, 0, c->stream>>>(n, xr, xs, NULL, 1.0, c->rows_red);
    else
      k_reduce_rows<RED_SQDIST_MEAN><<<dim3(RED_BLOCKS, (unsigned)cnt), CU_THREADS, 0, c->stream>>>(n, xr, xs, sum, div, c->rows_red);
    CU_LAUNCHED();
    k_reduce_rows_final<<<(cnt + CU_THREADS - 1) / CU_THREADS, CU_THREADS, 0, c->stream>>>(cnt, c->rows_red, sums);
    CU_LAUNCHED();
    CU_CALL(cudaMemcpyAsync(c->rows_host, sums, sizeof(double) * cnt, cudaMemcpyDeviceToHost, c->stream));
    CU_CALL(cudaStreamSynchronize(c->stream));
    for (int l = 0; l < cnt; l++) out[l0 + l] = kind == DT_REDUCE_NRM2 ? sqrt(c->rows_host[l]) : c->rows_host[l];
  }
  return DT_OK;
}

/* ---- the fused local-optimizer step: one kernel per kind over dt/formulas.h's element ------- */

#define STEP_KERNEL(name)                                                                                  \
  __global__ void k_step_##name(size_t n, dt_##name##_coef c, float ea, float *p, const float *g, float *m, \
                                float *v, const float *eb) {                                               \
    GRID_STRIDE(i, n) dt_##name##_elem(&c, ea, p, g, m, v, eb, i);                                         \
  }
DT_STEP_KINDS(STEP_KERNEL)
#undef STEP_KERNEL

dt_status cu_local_step(dt_backend *be, size_t n, const dt_step *s, float *p, const float *g, float *m, float *v,
                        const float *extra_b) {
  switch (s->kind) {
#define STEP_CASE(name)                                                                  \
  case DT_STEP_##name:                                                                   \
    KERNEL(k_step_##name, be, n, s->c.name, s->extra_alpha, p, g, m, v, extra_b);        \
    return DT_OK;
    DT_STEP_KINDS(STEP_CASE)
#undef STEP_CASE
    default: break;
  }
  return DT_ERROR(DT_ERR_INTERNAL, "unknown local step kind %d", (int)s->kind);
}

/* Many rows whose steps differ at most in extra_alpha (the usual case: every node at the same
 * step count): one launch per ROWS_PER_LAUNCH rows, the rows' extra_alpha in its parameters;
 * otherwise row by row. */
struct step_alphas {
  float a[ROWS_PER_LAUNCH];
};

#define STEP_ROWS_KERNEL(name)                                                                                                   \
  __global__ void k_step_rows_##name(int count, unsigned per, dt_##name##_coef c, step_alphas ea, float *p, size_t ps,        \
                                     const float *g, size_t gs, float *m, float *v, size_t mvs, const float *eb, size_t ebs) { \
    NODE_LOOP(l, i, count, per)                                                                                                  \
    dt_##name##_elem(&c, ea.a[l], p + l * ps, g + l * gs, m != NULL ? m + l * mvs : NULL, v != NULL ? v + l * mvs : NULL,       \
                     eb != NULL ? eb + l * ebs : NULL, i);                                                                       \
  }
DT_STEP_KINDS(STEP_ROWS_KERNEL)
#undef STEP_ROWS_KERNEL

static int same_step_but_alpha(const dt_step *a, const dt_step *b) {
  dt_step t = *b;
  t.extra_alpha = a->extra_alpha;
  return memcmp(a, &t, sizeof t) == 0;
}

dt_status cu_local_step_rows(dt_backend *be, size_t n, int count, const dt_step *s, float *p, size_t ps, const float *g, size_t gs,
                             float *m, float *v, size_t mvs, const float *extra_b, size_t ebs) {
  if (n == 0 || count <= 0) return DT_OK;
  int uniform = n <= 0xffffffffu; /* past NODE_LOOP's 32-bit index: row by row */
  for (int l = 1; l < count && uniform; l++) uniform = same_step_but_alpha(&s[0], &s[l]);
  if (!uniform) {
    for (int l = 0; l < count; l++)
      DT_TRY(cu_local_step(be, n, &s[l], p + (size_t)l * ps, g + (size_t)l * gs, m != NULL ? m + (size_t)l * mvs : NULL,
                           v != NULL ? v + (size_t)l * mvs : NULL, extra_b != NULL ? extra_b + (size_t)l * ebs : NULL));
    return DT_OK;
  }
  for (int l0 = 0; l0 < count; l0 += ROWS_PER_LAUNCH) {
    const int cnt = count - l0 < ROWS_PER_LAUNCH ? count - l0 : ROWS_PER_LAUNCH;
    step_alphas ea;
    for (int l = 0; l < cnt; l++) ea.a[l] = s[l0 + l].extra_alpha;
    float *pr = p + (size_t)l0 * ps, *mr = m != NULL ? m + (size_t)l0 * mvs : NULL, *vr = v != NULL ? v + (size_t)l0 * mvs : NULL;
    const float *gr = g + (size_t)l0 * gs, *er = extra_b != NULL ? extra_b + (size_t)l0 * ebs : NULL;
    switch (s[0].kind) {
#define STEP_ROWS_CASE(name)                                                                                           \
  case DT_STEP_##name:                                                                                                 \
    NODE_KERNEL(k_step_rows_##name, be, cnt, n, s[0].c.name, ea, pr, ps, gr, gs, mr, vr, mvs, er, ebs);                 \
    break;
      DT_STEP_KINDS(STEP_ROWS_CASE)
#undef STEP_ROWS_CASE
      default: return DT_ERROR(DT_ERR_INTERNAL, "unknown local step kind %d", (int)s[0].kind);
    }
  }
  return DT_OK;
}
