/* The CPU backend: OpenBLAS kernel selection, the op table, and creation. Its ops live in files
 * of one concern each: vec.c (memory and vectors), step.c (fused local-optimizer steps),
 * model.c and net.c (node-batched and per-node model calls), layers.c, conv2d.c and linear.c
 * (the layer kernels). The CPU backend is always built and is the reference for every other. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_impl.h"
#include "dt/io.h"
#include "dt/nn.h"

/* OpenBLAS's own declarations; not in cblas.h on every distribution. */
extern void openblas_set_num_threads(int num_threads);
extern char *openblas_get_corename(void);

/* Why OpenBLAS runs the kernels it runs: summary.yaml's blas_kernels_why. */
static char kernel_reason[160] = "OpenBLAS's own choice for this CPU";

void dt_cpu_select_kernels(char **argv) {
  const char *keep = getenv("DT_BLAS_KERNELS"), *restarted = getenv("DT_BLAS_KERNELS_SELECTED");
  const char *user = getenv("OPENBLAS_CORETYPE");
  if (restarted != NULL) { /* this is the restarted process: its OPENBLAS_CORETYPE is dtrun's */
    snprintf(kernel_reason, sizeof kernel_reason, "dtrun's choice: an AVX-512 CPU that OpenBLAS took for %s", restarted);
    return;
  }
  if (keep != NULL && strcmp(keep, "keep") == 0) {
    snprintf(kernel_reason, sizeof kernel_reason, "OpenBLAS's own choice (DT_BLAS_KERNELS=keep)%s%s", user ? "; OPENBLAS_CORETYPE=" : "",
             user ? user : "");
    return;
  }
  if (user != NULL && user[0] != '\0') { /* the user's or the cluster's choice, not dtrun's to override */
    snprintf(kernel_reason, sizeof kernel_reason, "OPENBLAS_CORETYPE=%s, as the environment sets it", user);
    return;
  }
  const char *core = openblas_get_corename();
  if (core == NULL || (strcmp(core, "Haswell") != 0 && strcmp(core, "Zen") != 0)) return;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl") ||
      !__builtin_cpu_supports("avx512cd"))
    return;
  /* OpenBLAS 0.3.21 takes AVX-512 AMD CPUs (Zen 4) for Haswell: its AVX2 kernels run at about
   * half the sgemm rate of the AVX-512 ones (117 vs 218 GFLOP/s measured here). The core type is
   * read once, when the library loads, so the process restarts itself with SkylakeX kernels,
   * under its own path (so it keeps its name: ps -C dtrun). */
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  setenv("OPENBLAS_CORETYPE", "SKYLAKEX", 1);
  setenv("DT_BLAS_KERNELS_SELECTED", core, 1);
  execv(self, argv);
  unsetenv("OPENBLAS_CORETYPE"); /* exec failed: go on with the kernels we have */
  unsetenv("DT_BLAS_KERNELS_SELECTED");
#else
  (void)argv;
#endif
}

const char *dt_cpu_kernel_name(void) {
  const char *core = openblas_get_corename();
  return core != NULL ? core : "unknown";
}

const char *dt_cpu_kernel_reason(void) { return kernel_reason; }

/* OpenBLAS runs on one thread: ranks and node threads give the parallelism (DESIGN.md). */
static void blas_single_thread(void) {
  static int done = 0;
  if (!done) {
    openblas_set_num_threads(1);
    done = 1;
  }
}

dt_status dt_cpu_encode(dt_backend *be, const dt_codec *c, const float *x, uint64_t seed, uint64_t id, void *msg) {
  (void)be;
  return dt_codec_encode(c, x, seed, id, msg);
}

dt_status dt_cpu_decode_axpy(dt_backend *be, const dt_codec *c, const void *msg, uint64_t seed, uint64_t id, float a,
                             float *y) {
  (void)be;
  dt_codec_decode_axpy(c, msg, seed, id, a, y);
  return DT_OK;
}

static const dt_backend_ops cpu_ops = {
#define CPU_OP(name, params, args) .name = dt_cpu_##name,
    DT_BACKEND_OPS(CPU_OP) DT_BACKEND_VOID_OPS(CPU_OP)
#undef CPU_OP
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
  if (!be->host_memory) be->device_memory = dt_host_memory_bytes(), be->device_count = 1; /* a "device" of the host's size */
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
