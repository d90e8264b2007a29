/* The CUDA backend: its op table, and finding and opening the GPU.
 *
 * One device (CUDA_VISIBLE_DEVICES picks it; with several ranks on one machine, each rank takes
 * device rank mod count), one stream and one cuBLAS handle per backend. cuBLAS runs in its
 * default FP32 math, so results stay within float rounding of the CPU backend (nn.cu's gemm uses
 * TF32 tensor cores only where experiment.tf32 asks), and with
 * atomics disallowed, so its sums are deterministic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

/* The codec stages through the host: it is sequential bit packing and selection, run once per
 * node and round on a vector the size of the model, next to which the copies are small. */
dt_status cu_encode(dt_backend *be, const dt_codec *c, const float *x, uint64_t seed, uint64_t id, void *msg) {
  dt_status st = DT_OK;
  float *hx = (float *)dt_calloc_(c->n, sizeof(float));
  unsigned char *hm = (unsigned char *)dt_calloc_(c->bytes, 1);
  DT_CHECK_GOTO(hx != NULL && hm != NULL, DT_ERR_MEMORY, "out of memory staging a compressed message");
  DT_TRY_GOTO(cu_download(be, hx, x, sizeof(float) * c->n));
  DT_TRY_GOTO(dt_codec_encode(c, hx, seed, id, hm));
  DT_TRY_GOTO(cu_upload(be, msg, hm, c->bytes));
cleanup:
  dt_free(hx);
  dt_free(hm);
  return st;
}

dt_status cu_decode_axpy(dt_backend *be, const dt_codec *c, const void *msg, uint64_t seed, uint64_t id, float a,
                         float *y) {
  dt_status st = DT_OK;
  float *hy = (float *)dt_calloc_(c->n, sizeof(float));
  unsigned char *hm = (unsigned char *)dt_calloc_(c->bytes, 1);
  DT_CHECK_GOTO(hy != NULL && hm != NULL, DT_ERR_MEMORY, "out of memory staging a compressed message");
  DT_TRY_GOTO(cu_download(be, hm, msg, c->bytes));
  DT_TRY_GOTO(cu_download(be, hy, y, sizeof(float) * c->n));
  dt_codec_decode_axpy(c, hm, seed, id, a, hy);
  DT_TRY_GOTO(cu_upload(be, y, hy, sizeof(float) * c->n));
cleanup:
  dt_free(hy);
  dt_free(hm);
  return st;
}

dt_status cu_profile_mark(dt_backend *be, int phase) {
  if (be->profile == NULL) return DT_OK;
  CU_CALL(cudaStreamSynchronize(ctx_of(be)->stream));
  dt_profile_charge(be, phase);
  return DT_OK;
}

dt_status cu_table_put(dt_backend *be, cu_table *t, const void *host, size_t bytes, int cache, void **dev) {
  cudaStream_t stream = ctx_of(be)->stream;
  if (cache && t->dev != NULL && bytes == t->bytes && memcmp(t->last, host, bytes) == 0) {
    *dev = t->dev;
    return DT_OK;
  }
  if (t->pending) CU_CALL(cudaEventSynchronize(t->done)); /* the pinned source is free again */
  t->pending = 0;
  if (bytes > t->cap) {
    const size_t cap = bytes + bytes / 2 + 256;
    unsigned char *last = (unsigned char *)dt_calloc_(cap, 1);
    if (last == NULL) return DT_ERROR(DT_ERR_MEMORY, "out of memory for a %zu-byte device table", bytes);
    cu_table_free(be, t);
    t->last = last;
    CU_CALL(cudaMallocHost(&t->pin, cap));
    DT_TRY(cu_alloc(be, cap, &t->dev));
    t->cap = cap;
  }
  if (t->done == NULL) CU_CALL(cudaEventCreateWithFlags(&t->done, cudaEventDisableTiming));
  memcpy(t->pin, host, bytes);
  t->bytes = 0; /* the device copy is unknown until the upload is queued and recorded */
  CU_CALL(cudaMemcpyAsync(t->dev, t->pin, bytes, cudaMemcpyHostToDevice, stream));
  CU_CALL(cudaEventRecord(t->done, stream));
  t->pending = 1;
  if (cache) memcpy(t->last, host, bytes);
  t->bytes = cache ? bytes : 0;
  *dev = t->dev;
  return DT_OK;
}

void cu_table_free(dt_backend *be, cu_table *t) {
  if (t->pending) (void)cudaEventSynchronize(t->done);
  cu_free(be, t->dev);
  if (t->pin != NULL) (void)cudaFreeHost(t->pin);
  if (t->done != NULL) (void)cudaEventDestroy(t->done);
  dt_free(t->last);
  memset(t, 0, sizeof *t);
}

/* Generated from the op list, so in the declaration order of dt_backend_ops (C++20 designated
 * initializers need it). */
static const dt_backend_ops cuda_ops = {
#define CU_OP(name, params, args) .name = cu_##name,
    DT_BACKEND_OPS(CU_OP) DT_BACKEND_VOID_OPS(CU_OP)
#undef CU_OP
};

/* The rank's device: local rank (OpenMPI's, where set) mod the number of devices. */
static int pick_device(int count) {
  const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const int rank = lr != NULL ? atoi(lr) : 0;
  return count > 0 ? (rank >= 0 ? rank : 0) % count : 0;
}

static int cuda_usable(char *why, size_t size) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    snprintf(why, size, "CUDA: %s", cudaGetErrorString(err));
    (void)cudaGetLastError();
    return 0;
  }
  if (count == 0) {
    snprintf(why, size, "no GPU found");
    return 0;
  }
  return cu_blas_open(why, size);
}

static void cuda_destroy(dt_backend *be) {
  if (be == NULL) return;
  cuda_ctx *c = ctx_of(be);
  if (c != NULL) {
    if (c->stream != NULL) (void)cudaStreamSynchronize(c->stream);
    cu_table_free(be, &c->mix);
    if (c->red != NULL) (void)cudaFree(c->red);
    if (c->red_host != NULL) (void)cudaFreeHost(c->red_host);
    if (c->rows_red != NULL) (void)cudaFree(c->rows_red);
    if (c->rows_host != NULL) (void)cudaFreeHost(c->rows_host);
    if (c->blas != NULL) (void)cu_blas.destroy(c->blas);
    if (c->stream != NULL) (void)cudaStreamDestroy(c->stream);
    dt_free(c);
  }
  dt_free(be);
}

static dt_status setup(dt_backend *be, cuda_ctx *c) {
  int count = 0;
  CU_CALL(cudaGetDeviceCount(&count));
  c->device = pick_device(count);
  CU_CALL(cudaSetDevice(c->device));
  CU_CALL(cudaGetDeviceProperties(&c->prop, c->device));
  be->device_memory = c->prop.totalGlobalMem;
  be->device_count = count;
  CU_CALL(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  char why[320];
  DT_CHECK(cu_blas_open(why, sizeof why), DT_ERR_CUDA, "CUDA backend: %s", why);
  BLAS_CALL(cu_blas.create(&c->blas));
  BLAS_CALL(cu_blas.set_stream(c->blas, c->stream));
  BLAS_CALL(cu_blas.set_math_mode(c->blas, CUBLAS_DEFAULT_MATH));
  BLAS_CALL(cu_blas.set_atomics_mode(c->blas, CUBLAS_ATOMICS_NOT_ALLOWED));
  CU_CALL(cudaMalloc((void **)&c->red, sizeof(double) * (RED_BLOCKS + 1)));
  CU_CALL(cudaMallocHost((void **)&c->red_host, sizeof(double)));
  (void)be;
  return DT_OK;
}

static dt_status cuda_create(int threads, dt_backend **out) {
  dt_status st = DT_OK;
  dt_backend *be = NULL;
  cuda_ctx *c = NULL;
  *out = NULL;
  CU_HOST_NEW(be, "backend");
  CU_HOST_NEW(c, "CUDA backend");
  be->ops = &cuda_ops;
  be->name = "cuda";
  be->host_memory = 0;
  be->threads = threads < 1 ? 1 : threads;
  be->ctx = c;
  c = NULL;
  DT_TRY_GOTO(setup(be, ctx_of(be)));
  *out = be;
  be = NULL;
cleanup:
  dt_free(c);
  cuda_destroy(be);
  return st;
}

/* The GPU's name, for summary.yaml and the run banner. */
extern "C" const char *dt_cuda_device_name(const dt_backend *be) { return ((const cuda_ctx *)be->ctx)->prop.name; }

extern "C" const dt_backend_def dt_backend_cuda_def = {"cuda", cuda_usable, cuda_create, cuda_destroy};
