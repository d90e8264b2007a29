/* The CUDA backend's memory, vector, mixing and fused local-optimizer ops.
 *
 * Built without multiply-add contraction (-fmad=false, src/backend/cuda/meson.build) and with
 * IEEE division and square root, so every elementwise op here computes the CPU backend's
 * formula in the CPU backend's order and gives its bits exactly; the gpu suite checks that with
 * a tolerance of zero. Reductions accumulate in double over a fixed grid (RED_BLOCKS blocks,
 * then one block in index order): the bits depend on n alone, not on the call or the device. */
#include <math.h>

#include "cuda_impl.h"

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
__global__ void k_scale(size_t n, float a, float *y) { GRID_STRIDE(i, n) y[i] = a * y[i]; }
__global__ void k_axpy(size_t n, float a, const float *x, float *y) { GRID_STRIDE(i, n) y[i] += a * x[i]; }
__global__ void k_axpby(size_t n, float a, const float *x, float b, const float *y, float *z) {
  GRID_STRIDE(i, n) z[i] = a * x[i] + b * y[i];
}
__global__ void k_div(size_t n, const float *x, double d, float *y) { GRID_STRIDE(i, n) y[i] = (float)((double)x[i] / d); }
__global__ void k_mean_of_sum(size_t n, const double *sum, double count, float *y) {
  GRID_STRIDE(i, n) y[i] = (float)(sum[i] / count);
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
    for (int j = 0; j < a.k; j++) acc = j == 0 && a.first ? 0.0f + a.w[0] * a.x[0][i] : acc + a.w[j] * a.x[j][i];
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

/* ---- reductions ---------------------------------------------------------------------------- */

enum red_kind { RED_DOT, RED_SQ, RED_SQDIST, RED_SQDIST_MEAN };

template <int KIND>
__global__ void k_reduce(size_t n, const float *x, const float *y, const double *sum, double count, double *partial) {
  __shared__ double s[CU_THREADS];
  double acc = 0.0;
  GRID_STRIDE(i, n) {
    double t;
    if (KIND == RED_DOT) t = (double)x[i] * y[i];
    else if (KIND == RED_SQ) t = (double)x[i] * x[i];
    else if (KIND == RED_SQDIST) {
      const double d = (double)x[i] - y[i];
      t = d * d;
    } else {
      const double d = x[i] - sum[i] / count;
      t = d * d;
    }
    acc += t;
  }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int h = CU_THREADS / 2; h > 0; h /= 2) {
    if ((int)threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
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

/* ---- fused local-optimizer steps (dt/local_opt.h; the same statements as src/backend/cpu) ---- */

__device__ __forceinline__ float grad_term(const float *g, const float *p, float extra_alpha, const float *extra_b, size_t i) {
  return g[i] + extra_alpha * p[i] + (extra_b ? extra_b[i] : 0.0f);
}

__global__ void k_sgd(size_t n, float *p, const float *g, float *buf, int first, float lr, float momentum, float dampening,
                      int nesterov, float wd, float extra_alpha, const float *extra_b) {
  GRID_STRIDE(i, n) {
    float d = grad_term(g, p, extra_alpha, extra_b, i);
    if (wd != 0.0f) d += wd * p[i];
    if (momentum != 0.0f) {
      buf[i] = first ? d : momentum * buf[i] + (1.0f - dampening) * d;
      d = nesterov ? d + momentum * buf[i] : buf[i];
    }
    p[i] -= lr * d;
  }
}

dt_status cu_sgd_step(dt_backend *be, size_t n, float *p, const float *g, float *buf, int first, float lr, float momentum,
                      float dampening, int nesterov, float wd, float extra_alpha, const float *extra_b) {
  LAUNCH(k_sgd, be, n, p, g, buf, first, lr, momentum, dampening, nesterov, wd, extra_alpha, extra_b);
}

__global__ void k_adam(size_t n, float *p, const float *g, float *m, float *v, float step_size, float inv_bc2_sqrt,
                       float decay, float l2, float beta1, float beta2, float one_b1, float one_b2, float eps,
                       float extra_alpha, const float *extra_b) {
  GRID_STRIDE(i, n) {
    float d = grad_term(g, p, extra_alpha, extra_b, i);
    d += l2 * p[i];
    const float pi = p[i] * decay;
    const float mi = beta1 * m[i] + one_b1 * d;
    const float vi = beta2 * v[i] + one_b2 * d * d;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - step_size * (mi / (sqrtf(vi) * inv_bc2_sqrt + eps));
  }
}

dt_status cu_adam_step(dt_backend *be, size_t n, float *p, const float *g, float *m, float *v, long step, float lr,
                       float beta1, float beta2, float eps, float wd, int decoupled, float extra_alpha,
                       const float *extra_b) {
  const double bc1 = 1.0 - pow((double)beta1, (double)step);
  const double bc2 = 1.0 - pow((double)beta2, (double)step);
  const float step_size = (float)(lr / bc1), inv_bc2_sqrt = (float)(1.0 / sqrt(bc2));
  const float decay = decoupled ? 1.0f - lr * wd : 1.0f, l2 = decoupled ? 0.0f : wd;
  LAUNCH(k_adam, be, n, p, g, m, v, step_size, inv_bc2_sqrt, decay, l2, beta1, beta2, 1.0f - beta1, 1.0f - beta2, eps,
         extra_alpha, extra_b);
}

__global__ void k_rmsprop(size_t n, float *p, const float *g, float *sq, float *buf, float lr, float alpha, float one_a,
                          float eps, float wd, float momentum, float extra_alpha, const float *extra_b) {
  GRID_STRIDE(i, n) {
    float d = grad_term(g, p, extra_alpha, extra_b, i);
    d += wd * p[i];
    const float vi = alpha * sq[i] + one_a * d * d;
    sq[i] = vi;
    float u = d / (sqrtf(vi) + eps);
    if (momentum != 0.0f) u = buf[i] = momentum * buf[i] + u;
    p[i] -= lr * u;
  }
}

dt_status cu_rmsprop_step(dt_backend *be, size_t n, float *p, const float *g, float *sq, float *buf, float lr, float alpha,
                          float eps, float wd, float momentum, float extra_alpha, const float *extra_b) {
  LAUNCH(k_rmsprop, be, n, p, g, sq, buf, lr, alpha, 1.0f - alpha, eps, wd, momentum, extra_alpha, extra_b);
}

__global__ void k_adadelta(size_t n, float *p, const float *g, float *sq, float *acc, float lr, float rho, float one_r,
                           float eps, float wd, float extra_alpha, const float *extra_b) {
  GRID_STRIDE(i, n) {
    float d = grad_term(g, p, extra_alpha, extra_b, i);
    d += wd * p[i];
    const float vi = rho * sq[i] + one_r * d * d;
    sq[i] = vi;
    const float delta = sqrtf(acc[i] + eps) / sqrtf(vi + eps) * d;
    acc[i] = rho * acc[i] + one_r * delta * delta;
    p[i] -= lr * delta;
  }
}

dt_status cu_adadelta_step(dt_backend *be, size_t n, float *p, const float *g, float *sq, float *acc, float lr, float rho,
                           float eps, float wd, float extra_alpha, const float *extra_b) {
  LAUNCH(k_adadelta, be, n, p, g, sq, acc, lr, rho, 1.0f - rho, eps, wd, extra_alpha, extra_b);
}

__global__ void k_nadam(size_t n, float *p, const float *g, float *m, float *v, float c_grad, float c_m, float inv_bc2_sqrt,
                        float beta1, float beta2, float one_b1, float one_b2, float eps, float wd, float extra_alpha,
                        const float *extra_b) {
  GRID_STRIDE(i, n) {
    float d = grad_term(g, p, extra_alpha, extra_b, i);
    d += wd * p[i];
    const float mi = beta1 * m[i] + one_b1 * d, vi = beta2 * v[i] + one_b2 * d * d;
    m[i] = mi;
    v[i] = vi;
    const float denom = sqrtf(vi) * inv_bc2_sqrt + eps;
    p[i] -= c_grad * d / denom + c_m * mi / denom;
  }
}

dt_status cu_nadam_step(dt_backend *be, size_t n, float *p, const float *g, float *m, float *v, long step, float lr,
                        float beta1, float beta2, float eps, float wd, double mu, double mu_next, double prod,
                        float extra_alpha, const float *extra_b) {
  const float c_grad = (float)(lr * (1.0 - mu) / (1.0 - prod)), c_m = (float)(lr * mu_next / (1.0 - prod * mu_next));
  const float inv_bc2_sqrt = (float)(1.0 / sqrt(1.0 - pow((double)beta2, (double)step)));
  LAUNCH(k_nadam, be, n, p, g, m, v, c_grad, c_m, inv_bc2_sqrt, beta1, beta2, 1.0f - beta1, 1.0f - beta2, eps, wd,
         extra_alpha, extra_b);
}
