/* Benchmark of the NN core, one thread: training throughput and evaluation throughput (forward
 * only, eval mode) for the seed CNN and the larger CNN (1×28×28, batch 64, Adam; evaluation in
 * batches of 1000) and for ResNet-20 and VGG-11 with batch norm (3×32×32, batch 32, SGD with
 * momentum 0.9; evaluation in batches of 200), plus the GEMM floor: the model's training FLOPs
 * (convolutions and linear layers, forward and two backward products) at this machine's
 * single-core sgemm rate.
 * usage: bench_nn [SECONDS] [MODEL]   — one "result:" line per model (MODEL: that one alone).
 * DT_BENCH_STEPS=N: N training steps per model instead of SECONDS, and one evaluation; with
 * `perf stat -e cycles:u`, the difference of two such counts is the cycles of the steps between
 * them, which neighbours on a shared machine do not disturb as they disturb time. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt/backend.h"
#include "dt/nn.h"
#include "../unit/models.h"
#include "dt/local_opt.h"
#include "dt/timer.h"

/* FLOPs of one forward pass's products (convolutions, projection shortcuts, linear layers), per
 * sample. */
static double forward_flops(const dt_model *m) {
  double flops = 0;
  for (int l = 0; l < dt_model_num_layers(m); l++) {
    const dt_layer_info *li = dt_model_layer(m, l);
    const dt_conv_shape *c = &li->conv;
    if (li->kind == DT_LAYER_CONV2D || (li->kind == DT_LAYER_RESIDUAL_END && li->projection))
      flops += 2.0 * c->f * c->c * c->k * c->k * c->oh * c->ow;
    else if (li->kind == DT_LAYER_LINEAR)
      flops += 2.0 * (double)li->in_size * (double)li->out_size;
  }
  return flops;
}

static double sgemm_gflops(double seconds) {
  const int n = 1024;
  float *a = calloc((size_t)n * n, 4), *b = calloc((size_t)n * n, 4), *c = calloc((size_t)n * n, 4);
  for (int i = 0; i < n * n; i++) a[i] = b[i] = 1.0f / (1 + i % 7);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
  int reps = 0;
  double t0 = dt_time_now(), t;
  do {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    reps++;
  } while ((t = dt_time_now() - t0) < seconds);
  free(a), free(b), free(c);
  return 2.0 * n * n * n * reps / t / 1e9;
}

static dt_backend *be; /* the CPU backend, one thread */

#define MUST(call)                                  \
  do {                                              \
    if ((call) != DT_OK) {                          \
      fprintf(stderr, "%s\n", dt_error_message()); \
      exit(1);                                      \
    }                                               \
  } while (0)

typedef struct bench_case {
  const char *name;
  int batch, eval_batch;
  dt_local_opt_kind opt;
} bench_case;

static const char *only; /* argv[2]: bench this model alone (for profiling) */
static long fixed_steps;  /* DT_BENCH_STEPS: this many training steps, one evaluation (for perf stat) */

static void bench(const bench_case *bc, const dt_model_spec *spec, double seconds, double peak_gflops) {
  enum { SAMPLES = 1000 };
  if (only != NULL && strcmp(only, bc->name) != 0) return;
  dt_model *m = NULL;
  dt_workspace *ws = NULL, *ews = NULL;
  dt_local_opt *opt = NULL;
  const int B = bc->batch, E = bc->eval_batch;
  if (dt_model_create(spec, &m) != DT_OK || dt_workspace_create(be, m, B, &ws) != DT_OK ||
      dt_workspace_create(be, m, E, &ews) != DT_OK) {
    fprintf(stderr, "%s\n", dt_error_message());
    exit(1);
  }
  const size_t P = dt_model_num_params(m), NB = dt_model_num_buffers(m), D = dt_model_input_size(m);
  dt_local_opt_spec os = dt_local_opt_spec_default(bc->opt);
  if (bc->opt == DT_LOCAL_SGD) os.lr = 0.01f, os.momentum = 0.9f;
  if (dt_local_opt_create(be, &os, 1, P, &opt) != DT_OK) exit(1);
  float *p = calloc(P, 4), *g = calloc(P, 4), *bf = calloc(NB + 1, 4), *x = calloc((size_t)SAMPLES * D, 4);
  int32_t y[SAMPLES];
  dt_rng r;
  dt_rng_init(&r, 1, DT_RNG_TEST, 0);
  for (size_t i = 0; i < (size_t)SAMPLES * D; i++) x[i] = (float)dt_rng_normal(&r);
  for (int i = 0; i < SAMPLES; i++) y[i] = (int32_t)dt_rng_below(&r, 10);
  dt_model_init_params(m, 0, p);
  dt_model_init_buffers(m, bf);
  float *buffers = NB > 0 ? bf : NULL, loss;
  /* three warm-up steps, then the evaluation (one untimed pass first) of the model they leave, so
   * that what is evaluated does not depend on how many steps the window holds, then training:
   * bench_torch.py does the same */
  for (int w = 0; w < 3; w++) {
    MUST(dt_model_forward_backward(be, m, ws, p, buffers, x + (size_t)w * B * D, y + w * B, B, g, &loss, NULL));
    MUST(dt_local_opt_step(opt, 0, p, g, -1.0f, NULL));
  }
  double ls = 0, t0, t;
  long correct = 0, evals = 0;
  MUST(dt_model_evaluate(be, m, ews, p, buffers, x, y, E, &ls, &correct));
  t0 = dt_time_now();
  const double eval_seconds = fixed_steps > 0 ? 0 : seconds; /* a fixed count: for counting cycles (perf stat), training only */
  do {
    MUST(dt_model_evaluate(be, m, ews, p, buffers, x, y, SAMPLES, &ls, &correct));
    evals++;
  } while ((t = dt_time_now() - t0) < eval_seconds);
  const double eval = (double)SAMPLES * evals / t;
  /* train: batches cycle through the samples */
  const int cycle = SAMPLES / B;
  long steps = 0;
  t0 = dt_time_now();
  do {
    int off = (int)(steps % cycle) * B;
    MUST(dt_model_forward_backward(be, m, ws, p, buffers, x + (size_t)off * D, y + off, B, g, &loss, NULL));
    MUST(dt_local_opt_step(opt, 0, p, g, -1.0f, NULL));
    steps++;
  } while (fixed_steps > 0 ? steps < fixed_steps : (t = dt_time_now() - t0) < seconds);
  t = dt_time_now() - t0;
  const double train = (double)B * steps / t;
  double train_flops = 3.0 * forward_flops(m); /* forward + two backward GEMMs */
  double floor = peak_gflops * 1e9 / train_flops;
  printf("result: %s params=%zu train=%.0f eval=%.0f floor=%.0f fraction=%.3f gflops=%.1f\n", bc->name, P, train, eval, floor,
         train / floor, train * train_flops / 1e9);
  fflush(stdout);
  free(p), free(g), free(bf), free(x);
  dt_local_opt_free(opt);
  dt_workspace_free(be, ws);
  dt_workspace_free(be, ews);
  dt_model_free(m);
}

int main(int argc, char **argv) {
  char why[512];
  if (!dt_cpu_select_kernels(why, sizeof why)) {
    fprintf(stderr, "bench_nn: %s\n", why);
    return 2;
  }
  double seconds = argc > 1 ? atof(argv[1]) : 2.0;
  only = argc > 2 ? argv[2] : NULL;
  if (getenv("DT_BENCH_STEPS") != NULL) fixed_steps = atol(getenv("DT_BENCH_STEPS"));
  if (dt_backend_cpu_create(1, &be) != DT_OK) return 1;
  double peak = sgemm_gflops(seconds);
  printf("result: sgemm_1024 gflops=%.1f kernels=%s\n", peak, dt_cpu_kernel_name());
  dt_model_spec s;
  dt_model_spec_seed_cnn(&s, 3, 5, 64);
  bench(&(bench_case){"seed_cnn", 64, 1000, DT_LOCAL_ADAM}, &s, seconds, peak);
  large_cnn(&s);
  bench(&(bench_case){"large_cnn", 64, 1000, DT_LOCAL_ADAM}, &s, seconds, peak);
  dt_model_spec_named(&s, DT_MODEL_RESNET20, DT_NORM_BATCH, 2, 0, 3, 32, 32, 10);
  bench(&(bench_case){"resnet20", 32, 200, DT_LOCAL_SGD}, &s, seconds, peak);
  dt_model_spec_named(&s, DT_MODEL_VGG11, DT_NORM_BATCH, 2, 0, 3, 32, 32, 10);
  bench(&(bench_case){"vgg11", 32, 200, DT_LOCAL_SGD}, &s, seconds, peak);
  return 0;
}
