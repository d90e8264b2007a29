/* The CPU backend's NN elementwise ops (pooling, relu, dropout, log-softmax + NLL), the fused
 * SGD and Adam(W) steps, OpenBLAS kernel selection, and the op table. Loops are plain C that gcc
 * vectorises at -O3; vector and memory ops are in vec.c, node-batched model calls in model.c. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_impl.h"
#include "dt/nn.h"

/* OpenBLAS's own declarations; not in cblas.h on every distribution. */
extern void openblas_set_num_threads(int num_threads);
extern char *openblas_get_corename(void);

void dt_cpu_select_kernels(char **argv) {
  const char *keep = getenv("DT_BLAS_KERNELS");
  if (keep != NULL && strcmp(keep, "keep") == 0) return;
  if (getenv("DT_BLAS_KERNELS_SELECTED") != NULL) return; /* this is the restarted process */
  const char *core = openblas_get_corename();
  if (core == NULL || (strcmp(core, "Haswell") != 0 && strcmp(core, "Zen") != 0)) return;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl") ||
      !__builtin_cpu_supports("avx512cd"))
    return;
  /* OpenBLAS 0.3.21 takes AVX-512 AMD CPUs (Zen 4) for Haswell, and some environments pin
   * OPENBLAS_CORETYPE=Haswell: either way AVX2 kernels run at about half the sgemm rate of the
   * AVX-512 ones (117 vs 218 GFLOP/s measured here). The core type is read once, when the
   * library loads, so the process restarts itself with SkylakeX kernels. */
  setenv("OPENBLAS_CORETYPE", "SKYLAKEX", 1);
  setenv("DT_BLAS_KERNELS_SELECTED", "1", 1);
  execv("/proc/self/exe", argv);
  setenv("OPENBLAS_CORETYPE", core, 1); /* exec failed: go on with the kernels we have */
#else
  (void)argv;
#endif
}

const char *dt_cpu_kernel_name(void) {
  const char *core = openblas_get_corename();
  return core != NULL ? core : "unknown";
}

/* OpenBLAS runs on one thread: ranks and node threads give the parallelism (DESIGN.md). */
static void blas_single_thread(void) {
  static int done = 0;
  if (!done) {
    openblas_set_num_threads(1);
    done = 1;
  }
}

/* The common 2x2, stride-2 window, eight outputs at a time: even/odd columns are split with
 * shuffles and the window's maximum is taken with compare-and-select, branch-free. Ties keep
 * the first element and NaN wins, as in PyTorch. */
typedef float pv8 __attribute__((vector_size(32)));
typedef int32_t pi8 __attribute__((vector_size(32)));

#define POOL_TAKE(v, idx)                                  \
  do {                                                     \
    pi8 t_ = (v > bv) | (v != v);                          \
    bv = (pv8)(((pi8)v & t_) | ((pi8)bv & ~t_));           \
    best = (idx & t_) | (best & ~t_);                      \
  } while (0)

/* The even and odd lanes of the 16 floats a:b (gcc >= 12 and clang both have shufflevector). */
#define EVEN(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#define ODD(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15)

DT_CLONES
static void maxpool2x2_forward(const dt_pool_shape *s, int batch, const float *restrict x,
                               float *restrict y, int32_t *restrict argmax) {
  const int W = s->w, OW = s->ow;
  const size_t in_plane = (size_t)s->h * W, out_plane = (size_t)s->oh * OW;
  const pi8 lane2 = {0, 2, 4, 6, 8, 10, 12, 14};
  for (size_t plane = 0; plane < (size_t)batch * s->c; plane++) {
    for (int oh = 0; oh < s->oh; oh++) {
      const float *r0 = x + plane * in_plane + (size_t)(2 * oh) * W, *r1 = r0 + W;
      float *yr = y + plane * out_plane + (size_t)oh * OW;
      int32_t *ar = argmax + plane * out_plane + (size_t)oh * OW;
      /* The last block overlaps the previous one instead of falling to a scalar tail; the
       * overlapped outputs are recomputed to the same values. */
      const int blocks_end = OW >= 8 ? OW : 0;
      for (int next = 0; next < blocks_end; next += 8) {
        const int ow = next + 8 <= OW ? next : OW - 8;
        pv8 a0, a1, b0, b1;
        memcpy(&a0, r0 + 2 * ow, 32);
        memcpy(&a1, r0 + 2 * ow + 8, 32);
        memcpy(&b0, r1 + 2 * ow, 32);
        memcpy(&b1, r1 + 2 * ow + 8, 32);
        const pv8 v0 = EVEN(a0, a1), v1 = ODD(a0, a1), v2 = EVEN(b0, b1), v3 = ODD(b0, b1);
        const pi8 base = lane2 + (2 * oh * W + 2 * ow);
        pv8 bv = v0;
        pi8 best = base;
        POOL_TAKE(v1, (base + 1));
        POOL_TAKE(v2, (base + W));
        POOL_TAKE(v3, (base + W + 1));
        memcpy(yr + ow, &bv, 32);
        memcpy(ar + ow, &best, 32);
      }
      for (int ow = blocks_end; ow < OW; ow++) { /* rows narrower than 8 outputs */
        const int base = 2 * oh * W + 2 * ow;
        const float v[4] = {r0[2 * ow], r0[2 * ow + 1], r1[2 * ow], r1[2 * ow + 1]};
        const int off[4] = {0, 1, W, W + 1};
        float bv = v[0];
        int best = base;
        for (int k = 1; k < 4; k++) {
          const int t = (v[k] > bv) | (v[k] != v[k]);
          bv = t ? v[k] : bv;
          best = t ? base + off[k] : best;
        }
        yr[ow] = bv;
        ar[ow] = best;
      }
    }
  }
}

DT_CLONES
static void maxpool_forward_impl(const dt_pool_shape *s, int batch, const float *restrict x,
                                 float *restrict y, int32_t *restrict argmax) {
  if (s->k == 2 && s->stride == 2) {
    maxpool2x2_forward(s, batch, x, y, argmax);
    return;
  }
  const size_t in_plane = (size_t)s->h * s->w, out_plane = (size_t)s->oh * s->ow;
  for (size_t plane = 0; plane < (size_t)batch * s->c; plane++) {
    const float *xp = x + plane * in_plane;
    float *yp = y + plane * out_plane;
    int32_t *ap = argmax + plane * out_plane;
    for (int oh = 0; oh < s->oh; oh++)
      for (int ow = 0; ow < s->ow; ow++) {
        int h0 = oh * s->stride, w0 = ow * s->stride;
        int best = h0 * s->w + w0;
        float bv = xp[best];
        for (int i = 0; i < s->k; i++)
          for (int j = 0; j < s->k; j++) {
            int idx = (h0 + i) * s->w + (w0 + j);
            float v = xp[idx];
            /* PyTorch keeps the first maximum and lets NaN win; written branch-free, since
             * on real data the comparison is a coin flip for the branch predictor. */
            int take = (v > bv) | (v != v);
            bv = take ? v : bv;
            best = take ? idx : best;
          }
        yp[oh * s->ow + ow] = bv;
        ap[oh * s->ow + ow] = best;
      }
  }
}

static void maxpool_backward_impl(const dt_pool_shape *s, int batch, const float *dy,
                                  const int32_t *argmax, float *dx) {
  const size_t in_plane = (size_t)s->h * s->w, out_plane = (size_t)s->oh * s->ow;
  memset(dx, 0, sizeof(float) * (size_t)batch * s->c * in_plane);
  for (size_t plane = 0; plane < (size_t)batch * s->c; plane++)
    for (size_t o = 0; o < out_plane; o++)
      dx[plane * in_plane + (size_t)argmax[plane * out_plane + o]] += dy[plane * out_plane + o];
}

DT_CLONES
static void relu_forward_impl(size_t n, const float *restrict x, float *restrict y) {
  for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

DT_CLONES
static void relu_backward_impl(size_t n, const float *y, const float *dy, float *dx) {
  for (size_t i = 0; i < n; i++) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

static void dropout_forward_impl(size_t n, float p, const float *x, float *y, uint8_t *mask,
                            dt_rng *rng) {
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  for (size_t i = 0; i < n; i++) {
    mask[i] = dt_rng_float(rng) >= p;
    y[i] = mask[i] ? x[i] * scale : 0.0f;
  }
}

static void dropout_backward_impl(size_t n, float p, const uint8_t *mask, const float *dy,
                             float *dx) {
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  for (size_t i = 0; i < n; i++) dx[i] = mask[i] ? dy[i] * scale : 0.0f;
}

static double log_softmax_nll_impl(int batch, int classes, const float *logits, const int32_t *y,
                              float *dlogits, float scale, long *correct) {
  double total = 0.0;
  for (int n = 0; n < batch; n++) {
    const float *z = logits + (size_t)n * classes;
    float mx = z[0];
    int arg = 0;
    for (int c = 1; c < classes; c++)
      if (z[c] > mx) {
        mx = z[c];
        arg = c;
      }
    float sum = 0.0f;
    for (int c = 0; c < classes; c++) sum += expf(z[c] - mx);
    float lse = mx + logf(sum);
    total += (double)(lse - z[y[n]]);
    if (correct != NULL) *correct += arg == y[n];
    if (dlogits != NULL) {
      float *d = dlogits + (size_t)n * classes;
      for (int c = 0; c < classes; c++) d[c] = scale * expf(z[c] - lse);
      d[y[n]] -= scale;
    }
  }
  return total;
}

DT_CLONES
static void sgd_step_impl(size_t n, float *p, const float *g, float *buf, int first, float lr,
                     float momentum, float dampening, int nesterov, float wd, float extra_alpha,
                     const float *extra_b) {
  for (size_t i = 0; i < n; i++) {
    float d = g[i] + extra_alpha * p[i] + (extra_b ? extra_b[i] : 0.0f);
    if (wd != 0.0f) d += wd * p[i];
    if (momentum != 0.0f) {
      buf[i] = first ? d : momentum * buf[i] + (1.0f - dampening) * d;
      d = nesterov ? d + momentum * buf[i] : buf[i];
    }
    p[i] -= lr * d;
  }
}

DT_CLONES
static void adam_step_impl(size_t n, float *p, const float *g, float *m, float *v, long step,
                      float lr, float beta1, float beta2, float eps, float wd, int decoupled,
                      float extra_alpha, const float *extra_b) {
  /* As torch.optim.Adam/AdamW (1.13, single-tensor path): bias corrections in double, then
   * p -= (lr/bc1) · m / (sqrt(v)/sqrt(bc2) + eps). */
  const double bc1 = 1.0 - pow((double)beta1, (double)step);
  const double bc2 = 1.0 - pow((double)beta2, (double)step);
  const float step_size = (float)(lr / bc1);
  const float inv_bc2_sqrt = (float)(1.0 / sqrt(bc2));
  const float decay = decoupled ? 1.0f - lr * wd : 1.0f;
  const float l2 = decoupled ? 0.0f : wd;
  const float one_b1 = 1.0f - beta1, one_b2 = 1.0f - beta2;
  for (size_t i = 0; i < n; i++) {
    float d = g[i] + extra_alpha * p[i] + (extra_b ? extra_b[i] : 0.0f);
    d += l2 * p[i];
    float pi = p[i] * decay;
    float mi = beta1 * m[i] + one_b1 * d;
    float vi = beta2 * v[i] + one_b2 * d * d;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - step_size * (mi / (sqrtf(vi) * inv_bc2_sqrt + eps));
  }
}

DT_CLONES
static void rmsprop_step_impl(size_t n, float *p, const float *g, float *sq, float *buf, float lr, float alpha, float eps,
                              float wd, float momentum, float extra_alpha, const float *extra_b) {
  /* As torch.optim.RMSprop (centered=False): avg = sqrt(v) + eps */
  const float one_a = 1.0f - alpha;
  for (size_t i = 0; i < n; i++) {
    float d = g[i] + extra_alpha * p[i] + (extra_b ? extra_b[i] : 0.0f);
    d += wd * p[i];
    const float vi = alpha * sq[i] + one_a * d * d;
    sq[i] = vi;
    float u = d / (sqrtf(vi) + eps);
    if (momentum != 0.0f) u = buf[i] = momentum * buf[i] + u;
    p[i] -= lr * u;
  }
}

DT_CLONES
static void adadelta_step_impl(size_t n, float *p, const float *g, float *sq, float *acc, float lr, float rho, float eps,
                               float wd, float extra_alpha, const float *extra_b) {
  /* As torch.optim.Adadelta: std = sqrt(v + eps), delta = sqrt(acc + eps) / std * g */
  const float one_r = 1.0f - rho;
  for (size_t i = 0; i < n; i++) {
    float d = g[i] + extra_alpha * p[i] + (extra_b ? extra_b[i] : 0.0f);
    d += wd * p[i];
    const float vi = rho * sq[i] + one_r * d * d;
    sq[i] = vi;
    const float delta = sqrtf(acc[i] + eps) / sqrtf(vi + eps) * d;
    acc[i] = rho * acc[i] + one_r * delta * delta;
    p[i] -= lr * delta;
  }
}

DT_CLONES
static void nadam_step_impl(size_t n, float *p, const float *g, float *m, float *v, float c_grad, float c_m, float inv_bc2_sqrt,
                            float beta1, float beta2, float eps, float wd, float extra_alpha, const float *extra_b) {
  const float one_b1 = 1.0f - beta1, one_b2 = 1.0f - beta2;
  for (size_t i = 0; i < n; i++) {
    float d = g[i] + extra_alpha * p[i] + (extra_b ? extra_b[i] : 0.0f);
    d += wd * p[i];
    const float mi = beta1 * m[i] + one_b1 * d, vi = beta2 * v[i] + one_b2 * d * d;
    m[i] = mi;
    v[i] = vi;
    const float denom = sqrtf(vi) * inv_bc2_sqrt + eps;
    p[i] -= c_grad * d / denom + c_m * mi / denom;
  }
}

/* ---- the table: thin wrappers that give every op a status ---------------------------------- */

static dt_status conv2d_forward(dt_backend *be, const dt_conv_shape *s, int batch, const float *x, const float *w,
                                const float *b, float *y, float *col) {
  (void)be;
  dt_cpu_conv2d_forward(s, batch, x, w, b, y, col);
  return DT_OK;
}

static dt_status conv2d_backward(dt_backend *be, const dt_conv_shape *s, int batch, const float *x, const float *w,
                                 const float *dy, float *dw, float *db, float *dx, float *col, float *dcol) {
  (void)be;
  dt_cpu_conv2d_backward(s, batch, x, w, dy, dw, db, dx, col, dcol);
  return DT_OK;
}

static dt_status linear_forward(dt_backend *be, int batch, int in, int out, const float *x, const float *w,
                                const float *b, float *y) {
  (void)be;
  dt_cpu_linear_forward(batch, in, out, x, w, b, y);
  return DT_OK;
}

static dt_status linear_backward(dt_backend *be, int batch, int in, int out, const float *x, const float *w,
                                 const float *dy, float *dw, float *db, float *dx) {
  (void)be;
  dt_cpu_linear_backward(batch, in, out, x, w, dy, dw, db, dx);
  return DT_OK;
}

static dt_status maxpool_forward(dt_backend *be, const dt_pool_shape *s, int batch, const float *x, float *y,
                                 int32_t *argmax) {
  (void)be;
  maxpool_forward_impl(s, batch, x, y, argmax);
  return DT_OK;
}

static dt_status maxpool_backward(dt_backend *be, const dt_pool_shape *s, int batch, const float *dy,
                                  const int32_t *argmax, float *dx) {
  (void)be;
  maxpool_backward_impl(s, batch, dy, argmax, dx);
  return DT_OK;
}

static dt_status relu_forward(dt_backend *be, size_t n, const float *x, float *y) {
  (void)be;
  relu_forward_impl(n, x, y);
  return DT_OK;
}

static dt_status relu_backward(dt_backend *be, size_t n, const float *y, const float *dy, float *dx) {
  (void)be;
  relu_backward_impl(n, y, dy, dx);
  return DT_OK;
}

static dt_status dropout_forward(dt_backend *be, size_t n, float p, const float *x, float *y, uint8_t *mask,
                                 dt_rng *rng) {
  (void)be;
  dropout_forward_impl(n, p, x, y, mask, rng);
  return DT_OK;
}

static dt_status dropout_backward(dt_backend *be, size_t n, float p, const uint8_t *mask, const float *dy, float *dx) {
  (void)be;
  dropout_backward_impl(n, p, mask, dy, dx);
  return DT_OK;
}

static dt_status log_softmax_nll(dt_backend *be, int batch, int classes, const float *logits, const int32_t *y,
                                 float *dlogits, float scale, double *total, long *correct) {
  (void)be;
  *total = log_softmax_nll_impl(batch, classes, logits, y, dlogits, scale, correct);
  return DT_OK;
}

/* Elementwise steps over a whole slab are split over the backend's threads in large chunks
 * (every element is computed alike, so the bits do not depend on the split). */
enum { STEP_CHUNK = 1 << 15 };

/* Runs the statement after `o, len` for each chunk [o, o + len) of n elements, the chunks spread
 * over be's threads: one split for every step op. */
#define FOR_STEP_CHUNKS(be, n, o, len, ...)                                                             \
  do {                                                                                                  \
    const long chunks_ = (long)(((n) + STEP_CHUNK - 1) / STEP_CHUNK);                                   \
    const int threads_ = (be)->threads;                                                                 \
    _Pragma("omp parallel for schedule(static) num_threads(threads_) if (chunks_ > 1 && threads_ > 1)") \
    for (long c_ = 0; c_ < chunks_; c_++) {                                                             \
      const size_t o = (size_t)c_ * STEP_CHUNK, len = (n) - o < STEP_CHUNK ? (n) - o : STEP_CHUNK;      \
      __VA_ARGS__;                                                                                      \
    }                                                                                                   \
  } while (0)

static dt_status sgd_step(dt_backend *be, size_t n, float *p, const float *g, float *buf, int first, float lr,
                          float momentum, float dampening, int nesterov, float wd, float extra_alpha,
                          const float *extra_b) {
  FOR_STEP_CHUNKS(be, n, o, len,
                  sgd_step_impl(len, p + o, g + o, buf ? buf + o : NULL, first, lr, momentum, dampening, nesterov, wd,
                      extra_alpha, extra_b ? extra_b + o : NULL));
  return DT_OK;
}

static dt_status adam_step(dt_backend *be, size_t n, float *p, const float *g, float *m, float *v, long step,
                           float lr, float beta1, float beta2, float eps, float wd, int decoupled,
                           float extra_alpha, const float *extra_b) {
  FOR_STEP_CHUNKS(be, n, o, len,
                  adam_step_impl(len, p + o, g + o, m + o, v + o, step, lr, beta1, beta2, eps, wd, decoupled,
                      extra_alpha, extra_b ? extra_b + o : NULL));
  return DT_OK;
}

static dt_status rmsprop_step(dt_backend *be, size_t n, float *p, const float *g, float *sq, float *buf, float lr, float alpha,
                              float eps, float wd, float momentum, float extra_alpha, const float *extra_b) {
  FOR_STEP_CHUNKS(be, n, o, len,
                  rmsprop_step_impl(len, p + o, g + o, sq + o, buf ? buf + o : NULL, lr, alpha, eps, wd, momentum,
                      extra_alpha, extra_b ? extra_b + o : NULL));
  return DT_OK;
}

static dt_status adadelta_step(dt_backend *be, size_t n, float *p, const float *g, float *sq, float *acc, float lr, float rho,
                               float eps, float wd, float extra_alpha, const float *extra_b) {
  FOR_STEP_CHUNKS(be, n, o, len,
                  adadelta_step_impl(len, p + o, g + o, sq + o, acc + o, lr, rho, eps, wd, extra_alpha,
                      extra_b ? extra_b + o : NULL));
  return DT_OK;
}

static dt_status nadam_step(dt_backend *be, size_t n, float *p, const float *g, float *m, float *v, long step, float lr,
                            float beta1, float beta2, float eps, float wd, double mu, double mu_next, double prod,
                            float extra_alpha, const float *extra_b) {
  const float c_grad = (float)(lr * (1.0 - mu) / (1.0 - prod)), c_m = (float)(lr * mu_next / (1.0 - prod * mu_next));
  const float inv_bc2_sqrt = (float)(1.0 / sqrt(1.0 - pow((double)beta2, (double)step)));
  FOR_STEP_CHUNKS(be, n, o, len,
                  nadam_step_impl(len, p + o, g + o, m + o, v + o, c_grad, c_m, inv_bc2_sqrt, beta1, beta2, eps, wd,
                      extra_alpha, extra_b ? extra_b + o : NULL));
  return DT_OK;
}

static dt_status encode(dt_backend *be, const dt_codec *c, const float *x, uint64_t seed, uint64_t id, void *msg) {
  (void)be;
  return dt_codec_encode(c, x, seed, id, msg);
}

static dt_status decode_axpy(dt_backend *be, const dt_codec *c, const void *msg, uint64_t seed, uint64_t id, float a,
                             float *y) {
  (void)be;
  dt_codec_decode_axpy(c, msg, seed, id, a, y);
  return DT_OK;
}

static const dt_backend_ops cpu_ops = {
    .alloc = dt_cpu_alloc,
    .free = dt_cpu_free,
    .upload = dt_cpu_upload,
    .download = dt_cpu_download,
    .fill = dt_cpu_fill,
    .copy = dt_cpu_copy,
    .scale = dt_cpu_scale,
    .axpy = dt_cpu_axpy,
    .axpby = dt_cpu_axpby,
    .dot = dt_cpu_dot,
    .nrm2 = dt_cpu_nrm2,
    .div = dt_cpu_div,
    .mix = dt_cpu_mix,
    .sqdist = dt_cpu_sqdist,
    .sqdist_mean = dt_cpu_sqdist_mean,
    .mean_of_sum = dt_cpu_mean_of_sum,
    .sgd_step = sgd_step,
    .adam_step = adam_step,
    .rmsprop_step = rmsprop_step,
    .adadelta_step = adadelta_step,
    .nadam_step = nadam_step,
    .conv2d_forward = conv2d_forward,
    .conv2d_backward = conv2d_backward,
    .linear_forward = linear_forward,
    .linear_backward = linear_backward,
    .maxpool_forward = maxpool_forward,
    .maxpool_backward = maxpool_backward,
    .relu_forward = relu_forward,
    .relu_backward = relu_backward,
    .dropout_forward = dropout_forward,
    .dropout_backward = dropout_backward,
    .log_softmax_nll = log_softmax_nll,
    .encode = encode,
    .decode_axpy = decode_axpy,
    .plan_create = dt_cpu_plan_create,
    .plan_free = dt_cpu_plan_free,
    .model_gradients = dt_cpu_model_gradients,
    .model_evaluate = dt_cpu_model_evaluate,
};

static int cpu_usable(char *why, size_t size) {
  (void)why;
  (void)size;
  return 1;
}

dt_status dt_backend_cpu_create(int threads, dt_backend **out) {
  dt_status st = DT_OK;
  dt_backend *be = NULL;
  *out = NULL;
  blas_single_thread();
  DT_ALLOC_GOTO(be, 1, "backend");
  be->ops = &cpu_ops;
  be->name = "cpu";
  /* DT_CPU_STAGED=1 makes the CPU backend declare its memory not host-addressable, so every
   * path a device backend takes (batch uploads, exchange staging, host copies for writers and
   * ordered sums) runs and is tested on a machine without a GPU. */
  const char *staged = getenv("DT_CPU_STAGED");
  be->host_memory = !(staged != NULL && strcmp(staged, "1") == 0);
  be->threads = threads < 1 ? 1 : threads;
  *out = be;
cleanup:
  return st;
}

static dt_status cpu_create(int threads, dt_backend **out) { return dt_backend_cpu_create(threads, out); }
static void cpu_destroy(dt_backend *be) { dt_free(be); }

const dt_backend_def dt_backend_cpu_def = {
    .name = "cpu",
    .usable = cpu_usable,
    .create = cpu_create,
    .destroy = cpu_destroy,
};
