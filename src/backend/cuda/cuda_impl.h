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
DT_MUST_USE static inline dt_status cu_launch_status(void) {
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

/* Every op of the list (dt/backend.h), defined in vec.cu (memory, vectors, steps), cuda.cu
 * (compressed messages, staged through the host codec), nn_plan.cu and nn.cu (node-batched model
 * calls: the plan, and the calls themselves). */
#define CU_DECLARE(name, params, args) DT_MUST_USE dt_status cu_##name DT_OP_PARAMS params;
#define CU_DECLARE_VOID(name, params, args) void cu_##name DT_OP_PARAMS params;
DT_BACKEND_OPS(CU_DECLARE)
DT_BACKEND_VOID_OPS(CU_DECLARE_VOID)
#undef CU_DECLARE
#undef CU_DECLARE_VOID

#endif
