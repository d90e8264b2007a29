/* The CPU backend: OpenBLAS kernel selection, the op table, and creation. Its ops live in files
 * of one concern each: vec.c (memory and vectors), step.c (fused local-optimizer steps),
 * model.c and net.c (node-batched and per-node model calls), layers.c, conv2d.c and linear.c
 * (the layer kernels). The CPU backend is always built and is the reference for every other. */
#include <cblas.h>
#include <ctype.h>
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cpu_impl.h"
#include "dt/io.h"
#include "dt/nn.h"

/* OpenBLAS's own declarations; not in cblas.h on every distribution. */
extern void openblas_set_num_threads(int num_threads);
extern char *openblas_get_corename(void);

/* Why OpenBLAS runs the kernels it runs: summary.yaml's blas_kernels_why. */
static char kernel_reason[160] = "OpenBLAS's own choice for this CPU";

/* Whether this OpenBLAS can switch to core's kernels: it is built for many CPUs (DYNAMIC_ARCH, as
 * Debian's: gotoblas_dynamic_init exists) and has core's table (gotoblas_CORE; a core it does not
 * know would make it exit). */
static int blas_known(const char *core) {
  char table[48] = "gotoblas_";
  size_t n = strlen(table);
  for (const char *c = core; *c != '\0' && n + 1 < sizeof table; c++) table[n++] = (char)toupper((unsigned char)*c);
  table[n] = '\0';
  return dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init") != NULL && dlsym(RTLD_DEFAULT, table) != NULL;
}

/* Whether this CPU has the instructions core's kernels use (else they would die of SIGILL). */
static int cpu_runs(const char *core) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (strcasecmp(core, "SkylakeX") == 0 || strcasecmp(core, "Cooperlake") == 0 || strcasecmp(core, "SapphireRapids") == 0)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd");
  if (strcasecmp(core, "Haswell") == 0 || strcasecmp(core, "Zen") == 0)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (strcasecmp(core, "Sandybridge") == 0) return __builtin_cpu_supports("avx");
  if (strcasecmp(core, "Nehalem") == 0) return __builtin_cpu_supports("sse4.2");
  if (strcasecmp(core, "Core2") == 0) return __builtin_cpu_supports("ssse3");
  if (strcasecmp(core, "Prescott") == 0) return __builtin_cpu_supports("sse3");
#endif
  (void)core;
  return 0; /* a core dtrun does not know the needs of: not switched to */
}

/* gotoblas_dynamic_quit and gotoblas_dynamic_init pick OpenBLAS's kernels again, in this process,
 * which is what loading it with OPENBLAS_CORETYPE=core set does (the same kernels, the same bits).
 * Only before any BLAS call; looked up at run time (an OpenBLAS built for one CPU keeps its
 * kernels). Returns whether the kernels are now core's. */
static int blas_switch(const char *core) {
  void *q = dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"), *i = dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
  if (q == NULL || i == NULL || !blas_known(core) || !cpu_runs(core)) return 0;
  void (*quit)(void), (*init)(void);
  memcpy(&quit, &q, sizeof quit); /* POSIX: a function's address, as dlsym returns it */
  memcpy(&init, &i, sizeof init);
  const char *was = getenv("OPENBLAS_CORETYPE");
  char *saved = was != NULL ? strdup(was) : NULL;
  setenv("OPENBLAS_CORETYPE", core, 1);
  quit();
  init();
  if (saved != NULL) setenv("OPENBLAS_CORETYPE", saved, 1); /* the environment stays the user's */
  else unsetenv("OPENBLAS_CORETYPE");
  free(saved);
  const char *now = openblas_get_corename();
  return now != NULL && strcasecmp(now, core) == 0;
}

static void blas_single_thread(void);

int dt_cpu_select_kernels(char *why, size_t why_size) {
  blas_single_thread(); /* first: the pool's workers spin from the moment the library loads */
  const char *want = getenv("DT_BLAS_KERNELS"), *user = getenv("OPENBLAS_CORETYPE");
  if (want != NULL && strcmp(want, "keep") == 0) {
    snprintf(kernel_reason, sizeof kernel_reason, "OpenBLAS's own choice (DT_BLAS_KERNELS=keep)%s%s", user ? "; OPENBLAS_CORETYPE=" : "",
             user ? user : "");
    return 1;
  }
  if (want != NULL && want[0] != '\0') { /* a core named by the user: pinned kernels, the same on every machine that runs them */
    if (blas_switch(want)) {
      snprintf(kernel_reason, sizeof kernel_reason, "DT_BLAS_KERNELS=%s", want);
      return 1;
    }
    /* OpenBLAS's x86-64 kernel sets, oldest first, that this OpenBLAS has */
    static const char *const cores[] = {"Prescott", "Core2", "Nehalem", "Sandybridge", "Haswell", "Zen", "SkylakeX", "Cooperlake",
                                        "SapphireRapids"};
    const char *reason = !blas_known(want) ? "this OpenBLAS has no such kernels"
                         : !cpu_runs(want) ? "this CPU lacks the instructions they use"
                                           : "OpenBLAS could not switch to them";
    size_t used = (size_t)snprintf(why, why_size, "DT_BLAS_KERNELS=%s: %s (it runs %s); use keep, or one of:", want, reason,
                                   openblas_get_corename());
    for (size_t c = 0; c < sizeof cores / sizeof *cores && used < why_size; c++)
      if (blas_known(cores[c]) && cpu_runs(cores[c])) used += (size_t)snprintf(why + used, why_size - used, " %s", cores[c]);
    return 0;
  }
  if (user != NULL && user[0] != '\0') { /* the user's or the cluster's choice, not dtrun's to override */
    snprintf(kernel_reason, sizeof kernel_reason, "OPENBLAS_CORETYPE=%s, as the environment sets it", user);
    return 1;
  }
  const char *core = openblas_get_corename();
  if (core == NULL || (strcmp(core, "Haswell") != 0 && strcmp(core, "Zen") != 0)) return 1;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl") ||
      !__builtin_cpu_supports("avx512cd"))
    return 1;
  /* OpenBLAS 0.3.21 takes AVX-512 AMD CPUs (Zen 4) for Haswell: its AVX2 kernels run at about
   * half the sgemm rate of the AVX-512 ones (117 vs 218 GFLOP/s measured here) */
  char taken[32];
  snprintf(taken, sizeof taken, "%s", core);
  if (blas_switch("SkylakeX"))
    snprintf(kernel_reason, sizeof kernel_reason, "dtrun's choice: an AVX-512 CPU that OpenBLAS took for %s", taken);
#endif
  return 1;
}

const char *dt_cpu_kernel_name(void) {
  const char *core = openblas_get_corename();
  return core != NULL ? core : "unknown";
}

const char *dt_cpu_kernel_reason(void) { return kernel_reason; }

/* OpenBLAS runs on one thread: ranks and node threads give the parallelism (DESIGN.md). Its pool
 * of workers, which the library starts when it loads, is shut down as well: an idle worker spins
 * on sched_yield for about 2^28 cycles before it sleeps, and took a core from the first tenth of a
 * second of every process (a fifth of a 1-node, 1-round run's CPU time on two cores). OpenBLAS
 * restarts the pool by itself if anything asks it for threads again. Looked up at run time: the
 * OpenMP and serial builds of OpenBLAS have no pool. */
static void blas_single_thread(void) {
  static int done = 0;
  if (done) return;
  done = 1;
  openblas_set_num_threads(1);
  void *shutdown = dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
  if (shutdown != NULL) {
    int (*fn)(void);
    memcpy(&fn, &shutdown, sizeof fn);
    (void)fn();
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
