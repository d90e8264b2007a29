/* The CUDA backend's shared internals: the context every op runs on, the error checks that turn
 * CUDA and cuBLAS failures into dt_status, and the entry points its files give each other.
 *
 * Everything runs in order on one stream per backend; an op returns once its work is queued,
 * except where it hands a value to the host (reductions, download), which waits for it. */
#ifndef DT_CUDA_IMPL_H
#define DT_CUDA_IMPL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" {
#include "dt/backend.h"
#include "dt/nn.h"
#include "dt/status.h"
}

typedef struct cuda_ctx {
  int device;
  cudaStream_t stream;
  cublasHandle_t blas;
  double *red;        /* reduction partials, RED_BLOCKS doubles, and the result after them */
  double *red_host;   /* pinned: the result */
  cudaDeviceProp prop;
} cuda_ctx;

/* dt_calloc_ for C++ (DT_ALLOC_GOTO assigns a void *, which C++ does not convert). */
#define CU_HOST_NEW(ptr, what)                                                                   \
  do {                                                                                           \
    (ptr) = static_cast<decltype(ptr)>(dt_calloc_(1, sizeof(*(ptr))));                           \
    if ((ptr) == NULL) {                                                                         \
      st = DT_ERROR(DT_ERR_MEMORY, "out of memory allocating %zu bytes for %s", sizeof(*(ptr)), (what)); \
      goto cleanup;                                                                              \
    }                                                                                            \
  } while (0)

static inline cuda_ctx *ctx_of(dt_backend *be) { return (cuda_ctx *)be->ctx; }

/* Threads per block of the elementwise kernels, and the fixed grid of the reductions: a
 * reduction's summation order depends on n only, never on the device or the call. */
enum { CU_THREADS = 256, RED_BLOCKS = 264 };

static inline unsigned cu_blocks(size_t n) {
  size_t b = (n + CU_THREADS - 1) / CU_THREADS;
  if (b < 1) b = 1;
  return b > 65535u * 32u ? 65535u * 32u : (unsigned)b;
}

#define CU_CALL(expr)                                                                                     \
  do {                                                                                                    \
    cudaError_t cu_err_ = (expr);                                                                         \
    if (cu_err_ != cudaSuccess)                                                                           \
      return DT_ERROR(DT_ERR_CUDA, "CUDA: %s failed: %s", #expr, cudaGetErrorString(cu_err_));            \
  } while (0)

/* After a launch: a bad configuration shows here; faults inside the kernel show at the next
 * synchronising call, which reports them through CU_CALL. The function form serves code that
 * must clean up before it returns. */
static inline dt_status cu_launch_status(void) {
  cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? DT_OK : DT_ERROR(DT_ERR_CUDA, "CUDA: kernel launch failed: %s", cudaGetErrorString(err));
}
#define CU_LAUNCHED() DT_TRY(cu_launch_status())

/* Grid-stride loop over [0, n), and a launch of it over n elements on the backend's stream. */
#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)
#define KERNEL(kernel, be, n, ...)                                                           \
  do {                                                                                       \
    if ((n) > 0) {                                                                           \
      kernel<<<cu_blocks(n), CU_THREADS, 0, ctx_of(be)->stream>>>((size_t)(n), __VA_ARGS__); \
      CU_LAUNCHED();                                                                         \
    }                                                                                        \
  } while (0)

#define BLAS_CALL(expr)                                                                                   \
  do {                                                                                                    \
    cublasStatus_t bl_err_ = (expr);                                                                      \
    if (bl_err_ != CUBLAS_STATUS_SUCCESS)                                                                 \
      return DT_ERROR(DT_ERR_CUDA, "cuBLAS: %s failed: %s", #expr, cublasGetStatusString(bl_err_));       \
  } while (0)

/* vec.cu */
dt_status cu_alloc(dt_backend *be, size_t bytes, void **out);
void cu_free(dt_backend *be, void *p);
dt_status cu_upload(dt_backend *be, void *dst, const void *src, size_t bytes);
dt_status cu_download(dt_backend *be, void *dst, const void *src, size_t bytes);
dt_status cu_fill(dt_backend *be, size_t n, float a, float *y);
dt_status cu_copy(dt_backend *be, size_t n, const float *x, float *y);
dt_status cu_scale(dt_backend *be, size_t n, float a, float *y);
dt_status cu_axpy(dt_backend *be, size_t n, float a, const float *x, float *y);
dt_status cu_axpby(dt_backend *be, size_t n, float a, const float *x, float b, const float *y, float *z);
dt_status cu_dot(dt_backend *be, size_t n, const float *x, const float *y, double *out);
dt_status cu_nrm2(dt_backend *be, size_t n, const float *x, double *out);
dt_status cu_div(dt_backend *be, size_t n, const float *x, double d, float *y);
dt_status cu_mix(dt_backend *be, size_t n, int k, const float *const *x, const float *w, float *y);
dt_status cu_sqdist(dt_backend *be, size_t n, const float *x, const float *y, double *out);
dt_status cu_sqdist_mean(dt_backend *be, size_t n, const float *x, const double *sum, double count, double *out);
dt_status cu_mean_of_sum(dt_backend *be, size_t n, const double *sum, double count, float *y);
dt_status cu_sgd_step(dt_backend *be, size_t n, float *p, const float *g, float *buf, int first, float lr, float momentum,
                      float dampening, int nesterov, float wd, float extra_alpha, const float *extra_b);
dt_status cu_adam_step(dt_backend *be, size_t n, float *p, const float *g, float *m, float *v, long step, float lr,
                       float beta1, float beta2, float eps, float wd, int decoupled, float extra_alpha,
                       const float *extra_b);
dt_status cu_rmsprop_step(dt_backend *be, size_t n, float *p, const float *g, float *sq, float *buf, float lr, float alpha,
                          float eps, float wd, float momentum, float extra_alpha, const float *extra_b);
dt_status cu_adadelta_step(dt_backend *be, size_t n, float *p, const float *g, float *sq, float *acc, float lr, float rho,
                           float eps, float wd, float extra_alpha, const float *extra_b);
dt_status cu_nadam_step(dt_backend *be, size_t n, float *p, const float *g, float *m, float *v, long step, float lr,
                        float beta1, float beta2, float eps, float wd, double mu, double mu_next, double mu_product,
                        float extra_alpha, const float *extra_b);

/* nn.cu */
dt_status cu_conv2d_forward(dt_backend *be, const dt_conv_shape *s, int batch, const float *x, const float *w,
                            const float *b, float *y, float *col);
dt_status cu_conv2d_backward(dt_backend *be, const dt_conv_shape *s, int batch, const float *x, const float *w,
                             const float *dy, float *dw, float *db, float *dx, float *col, float *dcol);
dt_status cu_linear_forward(dt_backend *be, int batch, int in, int out, const float *x, const float *w, const float *b,
                            float *y);
dt_status cu_linear_backward(dt_backend *be, int batch, int in, int out, const float *x, const float *w,
                             const float *dy, float *dw, float *db, float *dx);
dt_status cu_maxpool_forward(dt_backend *be, const dt_pool_shape *s, int batch, const float *x, float *y,
                             int32_t *argmax);
dt_status cu_maxpool_backward(dt_backend *be, const dt_pool_shape *s, int batch, const float *dy, const int32_t *argmax,
                              float *dx);
dt_status cu_relu_forward(dt_backend *be, size_t n, const float *x, float *y);
dt_status cu_relu_backward(dt_backend *be, size_t n, const float *y, const float *dy, float *dx);
dt_status cu_dropout_forward(dt_backend *be, size_t n, float p, const float *x, float *y, uint8_t *mask, dt_rng *rng);
dt_status cu_dropout_backward(dt_backend *be, size_t n, float p, const uint8_t *mask, const float *dy, float *dx);
/* Compressed messages: the host codec (src/backend/codec.c) on host copies. */
dt_status cu_encode(dt_backend *be, const dt_codec *c, const float *x, uint64_t seed, uint64_t id, void *msg);
dt_status cu_decode_axpy(dt_backend *be, const dt_codec *c, const void *msg, uint64_t seed, uint64_t id, float a,
                         float *y);
dt_status cu_log_softmax_nll(dt_backend *be, int batch, int classes, const float *logits, const int32_t *y,
                             float *dlogits, float scale, double *total, long *correct);
dt_status cu_plan_create(dt_backend *be, const dt_model *m, int max_batch, int nodes, int run_nodes, void **plan);
void cu_plan_free(dt_backend *be, void *plan);
dt_status cu_model_gradients(dt_backend *be, void *plan, const dt_node_batch *nb);
dt_status cu_model_evaluate(dt_backend *be, void *plan, const dt_node_eval *ne);

#endif
