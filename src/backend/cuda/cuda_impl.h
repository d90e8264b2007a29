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

/* A table the host writes and a kernel reads (pointers and weights of a mix, a gather's
 * indices): device memory, the pinned source of its asynchronous upload, and the event after
 * that upload, waited for before the source is written again. With `cache`, a table equal to the
 * last one uploaded is not uploaded again (a static graph's mixing table). */
typedef struct cu_table {
  void *dev, *pin;
  unsigned char *last;
  size_t cap, bytes;
  cudaEvent_t done;
  int pending;
} cu_table;

typedef struct cuda_ctx {
  int device;
  cudaStream_t stream;
  cublasHandle_t blas;
  double *red;        /* reduction partials, RED_BLOCKS doubles, and the result after them */
  double *red_host;   /* pinned: the result */
  cudaDeviceProp prop;
  cu_table mix;       /* mix_nodes' table */
  double *rows_red;   /* reduce_rows: partial sums, then each row's sum (rows_cap doubles) */
  double *rows_host;  /* pinned: the rows' sums */
  size_t rows_cap;
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

/* A launch over `count` nodes of `per` elements each: grid.y walks the nodes and grid.x a node's
 * elements, so a kernel finds its node without a 64-bit division and splits the index inside the
 * node in 32 bits (callers keep `per` under 2^31: the model plan checks its buffers). The kernel's
 * first two parameters are (int count, unsigned per); NODE_LOOP is its loop. */
#define NODE_LOOP(g, i, count, per)                                    \
  for (size_t g = blockIdx.y; g < (size_t)(count); g += gridDim.y)     \
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (per); i += gridDim.x * blockDim.x)
static inline unsigned cu_node_blocks(size_t per) {
  const size_t b = (per + CU_THREADS - 1) / CU_THREADS;
  return b < 1 ? 1u : b > 4096 ? 4096u : (unsigned)b;
}
#define NODE_KERNEL(kernel, be, count, per, ...)                                                              \
  do {                                                                                                        \
    if ((count) > 0 && (per) > 0) {                                                                           \
      const dim3 grid_(cu_node_blocks(per), (size_t)(count) < 65535 ? (unsigned)(count) : 65535u);            \
      kernel<<<grid_, CU_THREADS, 0, ctx_of(be)->stream>>>((int)(count), (unsigned)(per), __VA_ARGS__);       \
      CU_LAUNCHED();                                                                                          \
    }                                                                                                         \
  } while (0)

/* cuBLAS's entry points, opened by cu_blas_open (blas.cu) when a backend is created. */
typedef struct cu_blas_api {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSetAtomicsMode) set_atomics_mode;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                                            const void *, cudaDataType, int, long long, const void *, cudaDataType, int,
                                            long long, const void *, void *, cudaDataType, int, long long, int,
                                            cublasComputeType_t, cublasGemmAlgo_t); /* the exported one, not the C++ overload */
  decltype(&cublasGetStatusString) status_string;
} cu_blas_api;
extern cu_blas_api cu_blas;
/* Opens cuBLAS once; 0 with the reason in why where it cannot. */
int cu_blas_open(char *why, size_t size);

#define BLAS_CALL(expr)                                                                                   \
  do {                                                                                                    \
    cublasStatus_t bl_err_ = (expr);                                                                      \
    if (bl_err_ != CUBLAS_STATUS_SUCCESS)                                                                 \
      return DT_ERROR(DT_ERR_CUDA, "cuBLAS: %s failed: %s", #expr, cu_blas.status_string(bl_err_));       \
  } while (0)

/* Puts `bytes` of host data into table t's device memory (in stream order), growing it as
 * needed; *dev is where it lies. With cache, an unchanged table is not uploaded again. */
DT_MUST_USE dt_status cu_table_put(dt_backend *be, cu_table *t, const void *host, size_t bytes, int cache, void **dev);
void cu_table_free(dt_backend *be, cu_table *t);

/* Every op of the list (dt/backend.h), defined in vec.cu (memory, vectors, mixing, steps),
 * cuda.cu (compressed messages, staged through the host codec; profile marks), samples.cu
 * (resident sample sets and batch gathering), nn_plan.cu and nn.cu (node-batched model calls:
 * the plan, and the calls themselves). */
#define CU_DECLARE(name, params, args) DT_MUST_USE dt_status cu_##name DT_OP_PARAMS params;
#define CU_DECLARE_VOID(name, params, args) void cu_##name DT_OP_PARAMS params;
DT_BACKEND_OPS(CU_DECLARE)
DT_BACKEND_VOID_OPS(CU_DECLARE_VOID)
#undef CU_DECLARE
#undef CU_DECLARE_VOID

#endif
