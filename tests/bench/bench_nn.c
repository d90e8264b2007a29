/* Benchmark of the NN core: training throughput (batch 64, Adam, one thread) and evaluation
 * throughput (forward only, batches of 1000) for the seed CNN and the larger CNN, plus the GEMM
 * floor: the model's training FLOPs at this machine's single-core sgemm rate.
 * usage: bench_nn [seconds per measurement]   — prints one "result:" line per model. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt/backend.h"
#include "dt/nn.h"
#include "../unit/models.h"
#include "dt/local_opt.h"
#include "dt/timer.h"

/* Multiply-add FLOPs of one forward pass (conv and linear layers), per sample. */
static double forward_flops(const dt_model_spec *s) {
  int c = s->in_channels, h = s->in_height, w = s->in_width;
  double flops = 0;
  for (int l = 0; l < s->num_layers; l++) {
    const dt_layer_spec *ly = &s->layers[l];
    if (ly->kind == DT_LAYER_CONV2D) {
      int oh = (h + 2 * ly->padding - ly->kernel_size) / ly->stride + 1, ow = (w + 2 * ly->padding - ly->kernel_size) / ly->stride + 1;
      flops += 2.0 * oh * ow * ly->out_channels * c * ly->kernel_size * ly->kernel_size;
      c = ly->out_channels, h = oh, w = ow;
    } else if (ly->kind == DT_LAYER_MAXPOOL2D) {
      h /= ly->kernel_size, w /= ly->kernel_size;
    } else if (ly->kind == DT_LAYER_FLATTEN) {
      c = c * h * w, h = w = 1;
    } else if (ly->kind == DT_LAYER_LINEAR) {
      flops += 2.0 * c * ly->out_features;
      c = ly->out_features;
    }
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

static void bench(const char *name, const dt_model_spec *spec, double seconds, double peak_gflops) {
  dt_model *m = NULL;
  dt_workspace *ws = NULL, *ews = NULL;
  dt_local_opt *opt = NULL;
  if (dt_model_create(spec, &m) != DT_OK || dt_workspace_create(be, m, 64, &ws) != DT_OK ||
      dt_workspace_create(be, m, 1000, &ews) != DT_OK) {
    fprintf(stderr, "%s\n", dt_error_message());
    exit(1);
  }
  const size_t P = dt_model_num_params(m);
  dt_local_opt_spec os = dt_local_opt_spec_default(DT_LOCAL_ADAM);
  if (dt_local_opt_create(be, &os, 1, P, &opt) != DT_OK) exit(1);
  float *p = calloc(P, 4), *g = calloc(P, 4), *x = calloc(1000 * 784, 4);
  int32_t y[1000];
  dt_rng r;
  dt_rng_init(&r, 1, DT_RNG_TEST, 0);
  for (int i = 0; i < 1000 * 784; i++) x[i] = (float)dt_rng_normal(&r);
  for (int i = 0; i < 1000; i++) y[i] = (int32_t)dt_rng_below(&r, 10);
  dt_model_init_params(m, 0, p);
  float loss;
  /* train: batches cycle through the 1000 samples */
  for (int w = 0; w < 3; w++) MUST(dt_model_forward_backward(be, m, ws, p, NULL, x, y, 64, g, &loss, NULL));
  long steps = 0;
  double t0 = dt_time_now(), t;
  do {
    int off = (int)(steps % 15) * 64;
    MUST(dt_model_forward_backward(be, m, ws, p, NULL, x + (size_t)off * 784, y + off, 64, g, &loss, NULL));
    MUST(dt_local_opt_step(opt, 0, p, g, -1.0f, NULL));
    steps++;
  } while ((t = dt_time_now() - t0) < seconds);
  double train = 64.0 * steps / t;
  long evals = 0;
  t0 = dt_time_now();
  do {
    double ls = 0;
    long correct = 0;
    MUST(dt_model_evaluate(be, m, ews, p, NULL, x, y, 1000, &ls, &correct));
    evals++;
  } while ((t = dt_time_now() - t0) < seconds);
  double eval = 1000.0 * evals / t;
  double train_flops = 3.0 * forward_flops(spec); /* forward + two backward GEMMs */
  double floor = peak_gflops * 1e9 / train_flops;
  printf("result: %s params=%zu train=%.0f eval=%.0f floor=%.0f fraction=%.3f gflops=%.1f\n", name, P, train, eval, floor,
         train / floor, train * train_flops / 1e9);
  free(p), free(g), free(x);
  dt_local_opt_free(opt);
  dt_workspace_free(be, ws);
  dt_workspace_free(be, ews);
  dt_model_free(m);
}

int main(int argc, char **argv) {
  dt_cpu_select_kernels(argv);
  double seconds = argc > 1 ? atof(argv[1]) : 2.0;
  if (dt_backend_cpu_create(1, &be) != DT_OK) return 1;
  double peak = sgemm_gflops(seconds);
  printf("result: sgemm_1024 gflops=%.1f kernels=%s\n", peak, dt_cpu_kernel_name());
  dt_model_spec s;
  dt_model_spec_seed_cnn(&s, 3, 5, 64);
  bench("seed_cnn", &s, seconds, peak);
  large_cnn(&s);
  bench("large_cnn", &s, seconds, peak);
  return 0;
}
