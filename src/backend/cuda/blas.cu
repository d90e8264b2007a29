/* cuBLAS, opened when a CUDA backend is first created rather than linked: libcublas and
 * libcublasLt are over 500 MB, and a dtrun that never touches the GPU (--version, help, check,
 * every CPU run) should not map them. The handful of entry points the backend calls are looked up
 * once, by the names the library exports (cublas_v2.h's macros name the _v2 ones), and typed from
 * the header's own declarations. */
#include <dlfcn.h>
#include <stdio.h>

#include "cuda_impl.h"

cu_blas_api cu_blas;

#define CU_STR_(x) #x
#define CU_STR(x) CU_STR_(x)

/* The soname of the cuBLAS this build was compiled against, then its file in the toolkit it was
 * found in (DT_CUDA_LIBDIR, the link's rpath too) */
static void *open_cublas(char *why, size_t size) {
  const char *soname = "libcublas.so." CU_STR(CUBLAS_VER_MAJOR);
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
#ifdef DT_CUDA_LIBDIR
  if (h == NULL) h = dlopen(DT_CUDA_LIBDIR "/libcublas.so." CU_STR(CUBLAS_VER_MAJOR), RTLD_NOW | RTLD_LOCAL);
#endif
  if (h == NULL) snprintf(why, size, "cannot open %s (cuBLAS %d): %s", soname, CUBLAS_VER_MAJOR, dlerror());
  return h;
}

int cu_blas_open(char *why, size_t size) {
  static int state = 0; /* 0: not tried, 1: open, -1: failed (why kept) */
  static char failed[256];
  if (state == 0) {
    void *h = open_cublas(failed, sizeof failed);
    const char *missing = NULL;
#define CU_BLAS_SYM(field, name)                                                      \
  if (h != NULL && missing == NULL) {                                                 \
    *(void **)&cu_blas.field = dlsym(h, #name);                                       \
    if (cu_blas.field == NULL) missing = #name;                                       \
  }
    CU_BLAS_SYM(create, cublasCreate_v2)
    CU_BLAS_SYM(destroy, cublasDestroy_v2)
    CU_BLAS_SYM(set_stream, cublasSetStream_v2)
    CU_BLAS_SYM(set_math_mode, cublasSetMathMode)
    CU_BLAS_SYM(set_atomics_mode, cublasSetAtomicsMode)
    CU_BLAS_SYM(sgemm_strided_batched, cublasSgemmStridedBatched)
    CU_BLAS_SYM(gemm_strided_batched_ex, cublasGemmStridedBatchedEx)
    CU_BLAS_SYM(status_string, cublasGetStatusString)
#undef CU_BLAS_SYM
    if (h != NULL && missing != NULL) snprintf(failed, sizeof failed, "cuBLAS lacks %s", missing);
    state = h != NULL && missing == NULL ? 1 : -1;
  }
  if (state < 0) snprintf(why, size, "%s", failed);
  return state > 0;
}

extern "C" int dt_cuda_blas_open(char *why, size_t size) { return cu_blas_open(why, size); }
