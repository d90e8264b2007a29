/* The gpu suite's op test (ggml's test-backend-ops in spirit): every op of the CUDA backend
 * against the CPU backend on the same fresh random inputs.
 *
 * - Elementwise vector, mixing and optimizer ops must give the CPU's bits exactly (both
 *   backends compute the same float statements without contraction).
 * - Reductions (double accumulation in another order) agree to 1e-12 relative.
 * - Layer ops and node-batched model calls (cuBLAS GEMMs, expf/logf of the device) agree to a
 *   tolerance scaled to the values: |gpu − cpu| ≤ 2e-4 · (max |cpu| + 1e-3) per array.
 * - Dropout masks are equal bit for bit (the same Philox words).
 * - Model calls are deterministic (two calls, same bits) and do not depend on how the nodes are
 *   split between calls (7 nodes at once = 3 + 4), which is what makes results P-invariant.
 * - A finite-difference check of the GPU gradient.
 * Exits 77 (skipped) where this dtrun has no CUDA backend or no GPU is usable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "../unit/models.h"
#include "dt/backend.h"
#include "dt/nn.h"
#include "dt/rng.h"
#include "dt_config.h"

static dt_backend *cpu, *gpu;
static dt_rng rng;

static void fill_random(float *x, size_t n, float scale) {
  for (size_t i = 0; i < n; i++) x[i] = (2.0f * dt_rng_float(&rng) - 1.0f) * scale;
}

/* A device copy of a host array. */
static void *dev(const void *host, size_t bytes) {
  void *p = NULL;
  CHECK_OK(gpu->ops->alloc(gpu, bytes, &p));
  if (host != NULL) CHECK_OK(gpu->ops->upload(gpu, p, host, bytes));
  return p;
}

static float *down(const float *d, size_t n) {
  float *h = calloc(n ? n : 1, sizeof(float));
  CHECK_OK(gpu->ops->download(gpu, h, d, sizeof(float) * n));
  return h;
}

static void check_exact(const char *what, const float *cpu_v, const float *gpu_dev, size_t n) {
  float *g = down(gpu_dev, n);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(&cpu_v[i], &g[i], sizeof(float)) != 0 && bad++ == 0) first = i;
  CHECK(bad == 0, "%s: %zu of %zu values differ from the CPU's bits (first at %zu: cpu %.9g gpu %.9g)", what, bad, n,
        first, cpu_v[first], g[first]);
  free(g);
}

static void check_close(const char *what, const float *cpu_v, const float *gpu_dev, size_t n) {
  float *g = down(gpu_dev, n);
  double scale = 0, worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(cpu_v[i]));
  for (size_t i = 0; i < n; i++) {
    const double d = fabs((double)g[i] - cpu_v[i]);
    if (!(d <= worst)) worst = d, at = i; /* NaN is worst */
  }
  const double tol = 2e-4 * (scale + 1e-3);
  CHECK(worst <= tol, "%s: |gpu - cpu| up to %.3g at %zu (cpu %.9g gpu %.9g), tolerance %.3g", what, worst, at,
        n ? cpu_v[at] : 0.0, n ? g[at] : 0.0, tol);
  free(g);
}

/* ---- vectors, mixing, reductions ------------------------------------------------------------- */

static void test_vectors(void) {
  const size_t n = 100003;
  float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *z = malloc(sizeof(float) * n);
  fill_random(x, n, 3.0f);
  fill_random(y, n, 2.0f);
  float *dx = dev(x, sizeof(float) * n), *dy = dev(y, sizeof(float) * n), *dz = dev(NULL, sizeof(float) * n);

  memcpy(z, y, sizeof(float) * n);
  CHECK_OK(cpu->ops->axpy(cpu, n, 0.37f, x, z));
  CHECK_OK(gpu->ops->copy(gpu, n, dy, dz));
  CHECK_OK(gpu->ops->axpy(gpu, n, 0.37f, dx, dz));
  check_exact("axpy", z, dz, n);

  CHECK_OK(cpu->ops->axpby(cpu, n, -1.25f, x, 0.5f, y, z));
  CHECK_OK(gpu->ops->axpby(gpu, n, -1.25f, dx, 0.5f, dy, dz));
  check_exact("axpby", z, dz, n);

  CHECK_OK(cpu->ops->scale(cpu, n, 0.3f, z));
  CHECK_OK(gpu->ops->scale(gpu, n, 0.3f, dz));
  check_exact("scale", z, dz, n);

  CHECK_OK(cpu->ops->div(cpu, n, x, 7.0, z));
  CHECK_OK(gpu->ops->div(gpu, n, dx, 7.0, dz));
  check_exact("div", z, dz, n);

  CHECK_OK(cpu->ops->fill(cpu, n, 1.5f, z));
  CHECK_OK(gpu->ops->fill(gpu, n, 1.5f, dz));
  check_exact("fill", z, dz, n);

  double a, b;
  CHECK_OK(cpu->ops->dot(cpu, n, x, y, &a));
  CHECK_OK(gpu->ops->dot(gpu, n, dx, dy, &b));
  CHECK_CLOSE(b, a, 1e-12, 0);
  CHECK_OK(cpu->ops->nrm2(cpu, n, x, &a));
  CHECK_OK(gpu->ops->nrm2(gpu, n, dx, &b));
  CHECK_CLOSE(b, a, 1e-12, 0);
  CHECK_OK(cpu->ops->sqdist(cpu, n, x, y, &a));
  CHECK_OK(gpu->ops->sqdist(gpu, n, dx, dy, &b));
  CHECK_CLOSE(b, a, 1e-12, 0);
  double b2;
  CHECK_OK(gpu->ops->sqdist(gpu, n, dx, dy, &b2));
  CHECK(memcmp(&b, &b2, sizeof b) == 0, "a reduction gave other bits on a second call");

  double *sum = malloc(sizeof(double) * n);
  for (size_t i = 0; i < n; i++) sum[i] = 3.0 * x[i] + 0.125 * y[i];
  double *dsum = dev(sum, sizeof(double) * n);
  CHECK_OK(cpu->ops->sqdist_mean(cpu, n, y, sum, 3.0, &a));
  CHECK_OK(gpu->ops->sqdist_mean(gpu, n, dy, dsum, 3.0, &b));
  CHECK_CLOSE(b, a, 1e-12, 0);
  CHECK_OK(cpu->ops->mean_of_sum(cpu, n, sum, 3.0, z));
  CHECK_OK(gpu->ops->mean_of_sum(gpu, n, dsum, 3.0, dz));
  check_exact("mean_of_sum", z, dz, n);

  /* mixing over more vectors than one launch takes */
  enum { K = 21 };
  const size_t m = 5003;
  float *hx[K], *gx[K], w[K];
  for (int j = 0; j < K; j++) {
    hx[j] = malloc(sizeof(float) * m);
    fill_random(hx[j], m, 1.0f);
    gx[j] = dev(hx[j], sizeof(float) * m);
    w[j] = dt_rng_float(&rng);
  }
  for (int k = 0; k <= K; k += 7) {
    CHECK_OK(cpu->ops->mix(cpu, m, k, (const float *const *)hx, w, z));
    CHECK_OK(gpu->ops->mix(gpu, m, k, (const float *const *)gx, w, dz));
    char what[32];
    snprintf(what, sizeof what, "mix of %d", k);
    check_exact(what, z, dz, m);
  }
  for (int j = 0; j < K; j++) {
    free(hx[j]);
    gpu->ops->free(gpu, gx[j]);
  }
  gpu->ops->free(gpu, dsum);
  free(sum);
  gpu->ops->free(gpu, dx);
  gpu->ops->free(gpu, dy);
  gpu->ops->free(gpu, dz);
  free(x);
  free(y);
  free(z);
}

/* ---- fused optimizer steps: five steps of each, every state array compared ------------------ */

enum { OPT_SGD, OPT_SGD_NESTEROV, OPT_ADAM, OPT_ADAMW, OPT_RMSPROP, OPT_ADADELTA, OPT_NADAM, OPT_COUNT };

static dt_status step(dt_backend *be, int opt, int t, size_t n, float *p, const float *g, float *s1, float *s2,
                      const float *eb) {
  switch (opt) {
    case OPT_SGD: return be->ops->sgd_step(be, n, p, g, s1, t == 1, 0.05f, 0.9f, 0.1f, 0, 1e-3f, 0.2f, eb);
    case OPT_SGD_NESTEROV: return be->ops->sgd_step(be, n, p, g, s1, t == 1, 0.05f, 0.9f, 0.0f, 1, 0.0f, 0.0f, NULL);
    case OPT_ADAM: return be->ops->adam_step(be, n, p, g, s1, s2, t, 1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, 0, 0.5f, eb);
    case OPT_ADAMW: return be->ops->adam_step(be, n, p, g, s1, s2, t, 1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, 1, 0.0f, NULL);
    case OPT_RMSPROP: return be->ops->rmsprop_step(be, n, p, g, s1, s2, 1e-2f, 0.99f, 1e-8f, 1e-3f, 0.5f, 0.1f, eb);
    case OPT_ADADELTA: return be->ops->adadelta_step(be, n, p, g, s1, s2, 1.0f, 0.9f, 1e-6f, 0.0f, 0.0f, eb);
    default: {
      const double mu = 0.9 * (1.0 - 0.5 * pow(0.96, t * 0.004)), mu_next = 0.9 * (1.0 - 0.5 * pow(0.96, (t + 1) * 0.004));
      double prod = 1.0;
      for (int i = 1; i <= t; i++) prod *= 0.9 * (1.0 - 0.5 * pow(0.96, i * 0.004));
      return be->ops->nadam_step(be, n, p, g, s1, s2, t, 2e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, mu, mu_next, prod, 0.3f, eb);
    }
  }
}

/* Compressed messages: the same bytes as the CPU's, and the same decoded sums. */
static void test_codec(void) {
  const size_t n = 5003;
  float *x = calloc(n, sizeof(float)), *y = calloc(n, sizeof(float));
  unsigned char *msg = calloc(8 * n, 1), *gmsg = calloc(8 * n, 1);
  fill_random(x, n, 1.0f);
  fill_random(y, n, 1.0f);
  float *dx = dev(x, sizeof(float) * n), *dy = dev(y, sizeof(float) * n);
  void *dm = dev(NULL, 8 * n);
  for (int op = 0; op < DT_CODEC_COUNT; op++) {
    dt_codec c;
    CHECK_OK(dt_codec_init(&c, op, n, 0.02, 16));
    CHECK_OK(cpu->ops->encode(cpu, &c, x, 5, 77, msg));
    CHECK_OK(gpu->ops->encode(gpu, &c, dx, 5, 77, dm));
    CHECK_OK(gpu->ops->download(gpu, gmsg, dm, c.bytes));
    CHECK(memcmp(msg, gmsg, c.bytes) == 0, "%s: the GPU's message differs from the CPU's", dt_codec_names[op]);
    CHECK_OK(cpu->ops->decode_axpy(cpu, &c, msg, 5, 77, 0.25f, y));
    CHECK_OK(gpu->ops->decode_axpy(gpu, &c, dm, 5, 77, 0.25f, dy));
    check_exact(dt_codec_names[op], y, dy, n);
  }
  gpu->ops->free(gpu, dx);
  gpu->ops->free(gpu, dy);
  gpu->ops->free(gpu, dm);
  free(x), free(y), free(msg), free(gmsg);
}

static void test_steps(void) {
  static const char *const names[OPT_COUNT] = {"sgd", "sgd nesterov", "adam", "adamw", "rmsprop", "adadelta", "nadam"};
  const size_t n = 40007;
  for (int opt = 0; opt < OPT_COUNT; opt++) {
    float *p = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n), *eb = malloc(sizeof(float) * n);
    float *s1 = calloc(n, sizeof(float)), *s2 = calloc(n, sizeof(float));
    fill_random(p, n, 1.0f);
    fill_random(eb, n, 0.1f);
    float *dp = dev(p, sizeof(float) * n), *dg = dev(NULL, sizeof(float) * n), *deb = dev(eb, sizeof(float) * n);
    float *d1 = dev(NULL, sizeof(float) * n), *d2 = dev(NULL, sizeof(float) * n);
    for (int t = 1; t <= 5; t++) {
      fill_random(g, n, 0.5f);
      CHECK_OK(gpu->ops->upload(gpu, dg, g, sizeof(float) * n));
      CHECK_OK(step(cpu, opt, t, n, p, g, s1, s2, eb));
      CHECK_OK(step(gpu, opt, t, n, dp, dg, d1, d2, deb));
    }
    char what[64];
    snprintf(what, sizeof what, "%s parameters", names[opt]);
    check_exact(what, p, dp, n);
    snprintf(what, sizeof what, "%s state 1", names[opt]);
    check_exact(what, s1, d1, n);
    snprintf(what, sizeof what, "%s state 2", names[opt]);
    check_exact(what, s2, d2, n);
    gpu->ops->free(gpu, dp);
    gpu->ops->free(gpu, dg);
    gpu->ops->free(gpu, deb);
    gpu->ops->free(gpu, d1);
    gpu->ops->free(gpu, d2);
    free(p), free(g), free(eb), free(s1), free(s2);
  }
}

/* ---- layer ops -------------------------------------------------------------------------------- */

static void test_conv(const dt_conv_shape *s, int batch) {
  const size_t in = (size_t)batch * s->c * s->h * s->w, out = (size_t)batch * s->f * s->oh * s->ow;
  const size_t nw = (size_t)s->f * s->c * s->k * s->k, col = (size_t)s->c * s->k * s->k * s->oh * s->ow;
  float *x = malloc(sizeof(float) * in), *w = malloc(sizeof(float) * nw), *b = malloc(sizeof(float) * s->f);
  float *y = malloc(sizeof(float) * out), *dy = malloc(sizeof(float) * out), *dx = malloc(sizeof(float) * in);
  float *dw = malloc(sizeof(float) * nw), *db = malloc(sizeof(float) * s->f);
  float *c1 = malloc(sizeof(float) * col), *c2 = malloc(sizeof(float) * col);
  fill_random(x, in, 1.0f), fill_random(w, nw, 0.5f), fill_random(b, s->f, 0.5f), fill_random(dy, out, 1.0f);
  float *gx = dev(x, sizeof(float) * in), *gw = dev(w, sizeof(float) * nw), *gb = dev(b, sizeof(float) * s->f);
  float *gy = dev(NULL, sizeof(float) * out), *gdy = dev(dy, sizeof(float) * out), *gdx = dev(NULL, sizeof(float) * in);
  float *gdw = dev(NULL, sizeof(float) * nw), *gdb = dev(NULL, sizeof(float) * s->f);
  float *gc1 = dev(NULL, sizeof(float) * col), *gc2 = dev(NULL, sizeof(float) * col);
  CHECK_OK(cpu->ops->conv2d_forward(cpu, s, batch, x, w, b, y, c1));
  CHECK_OK(gpu->ops->conv2d_forward(gpu, s, batch, gx, gw, gb, gy, gc1));
  char what[96];
  snprintf(what, sizeof what, "conv2d %d->%d k%d s%d p%d forward", s->c, s->f, s->k, s->stride, s->pad);
  check_close(what, y, gy, out);
  CHECK_OK(cpu->ops->conv2d_backward(cpu, s, batch, x, w, dy, dw, db, dx, c1, c2));
  CHECK_OK(gpu->ops->conv2d_backward(gpu, s, batch, gx, gw, gdy, gdw, gdb, gdx, gc1, gc2));
  snprintf(what, sizeof what, "conv2d %d->%d k%d s%d p%d dw", s->c, s->f, s->k, s->stride, s->pad);
  check_close(what, dw, gdw, nw);
  snprintf(what, sizeof what, "conv2d %d->%d k%d s%d p%d db", s->c, s->f, s->k, s->stride, s->pad);
  check_close(what, db, gdb, (size_t)s->f);
  snprintf(what, sizeof what, "conv2d %d->%d k%d s%d p%d dx", s->c, s->f, s->k, s->stride, s->pad);
  check_close(what, dx, gdx, in);
  void *all[] = {gx, gw, gb, gy, gdy, gdx, gdw, gdb, gc1, gc2};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gpu->ops->free(gpu, all[i]);
  free(x), free(w), free(b), free(y), free(dy), free(dx), free(dw), free(db), free(c1), free(c2);
}

static dt_conv_shape conv_shape(int c, int h, int f, int k, int stride, int pad) {
  const int o = (h + 2 * pad - k) / stride + 1;
  return (dt_conv_shape){.c = c, .h = h, .w = h, .f = f, .k = k, .stride = stride, .pad = pad, .oh = o, .ow = o};
}

static void test_layers(void) {
  dt_conv_shape s1 = conv_shape(1, 28, 3, 5, 1, 0), s2 = conv_shape(3, 12, 8, 3, 2, 1), s3 = conv_shape(4, 9, 5, 3, 1, 1);
  test_conv(&s1, 5);
  test_conv(&s2, 3);
  test_conv(&s3, 2);

  /* linear */
  const int B = 37, in = 300, out = 23;
  float *x = malloc(sizeof(float) * B * in), *w = malloc(sizeof(float) * out * in), *b = malloc(sizeof(float) * out);
  float *y = malloc(sizeof(float) * B * out), *dy = malloc(sizeof(float) * B * out), *dx = malloc(sizeof(float) * B * in);
  float *dw = malloc(sizeof(float) * out * in), *db = malloc(sizeof(float) * out);
  fill_random(x, (size_t)B * in, 1.0f), fill_random(w, (size_t)out * in, 0.1f), fill_random(b, out, 0.1f);
  fill_random(dy, (size_t)B * out, 1.0f);
  float *gx = dev(x, sizeof(float) * B * in), *gw = dev(w, sizeof(float) * out * in), *gb = dev(b, sizeof(float) * out);
  float *gy = dev(NULL, sizeof(float) * B * out), *gdy = dev(dy, sizeof(float) * B * out);
  float *gdx = dev(NULL, sizeof(float) * B * in), *gdw = dev(NULL, sizeof(float) * out * in), *gdb = dev(NULL, sizeof(float) * out);
  CHECK_OK(cpu->ops->linear_forward(cpu, B, in, out, x, w, b, y));
  CHECK_OK(gpu->ops->linear_forward(gpu, B, in, out, gx, gw, gb, gy));
  check_close("linear forward", y, gy, (size_t)B * out);
  CHECK_OK(cpu->ops->linear_backward(cpu, B, in, out, x, w, dy, dw, db, dx));
  CHECK_OK(gpu->ops->linear_backward(gpu, B, in, out, gx, gw, gdy, gdw, gdb, gdx));
  check_close("linear dw", dw, gdw, (size_t)out * in);
  check_close("linear db", db, gdb, (size_t)out);
  check_close("linear dx", dx, gdx, (size_t)B * in);

  /* log-softmax + NLL on the linear output */
  int32_t lab[37];
  for (int i = 0; i < B; i++) lab[i] = (int32_t)dt_rng_below(&rng, (uint32_t)out);
  int32_t *glab = dev(lab, sizeof lab);
  double tc, tg;
  long cc = 0, cg = 0;
  CHECK_OK(cpu->ops->log_softmax_nll(cpu, B, out, y, lab, dy, 1.0f / B, &tc, &cc));
  CHECK_OK(gpu->ops->log_softmax_nll(gpu, B, out, gy, glab, gdy, 1.0f / B, &tg, &cg));
  CHECK_CLOSE(tg, tc, 1e-5, 1e-6);
  CHECK(cg == cc, "top-1 hits: gpu %ld, cpu %ld", cg, cc);
  check_close("log_softmax_nll dlogits", dy, gdy, (size_t)B * out);

  /* relu, maxpool (2x2 and overlapping 3x3 stride 2), dropout */
  const size_t n = (size_t)B * in;
  CHECK_OK(cpu->ops->relu_forward(cpu, n, x, dx));
  CHECK_OK(gpu->ops->relu_forward(gpu, n, gx, gdx));
  check_exact("relu forward", dx, gdx, n);
  CHECK_OK(cpu->ops->relu_backward(cpu, n, dx, x, dx));
  CHECK_OK(gpu->ops->relu_backward(gpu, n, gdx, gx, gdx));
  check_exact("relu backward", dx, gdx, n);
  const dt_pool_shape pools[2] = {{.c = 3, .h = 12, .w = 12, .k = 2, .stride = 2, .oh = 6, .ow = 6},
                                  {.c = 3, .h = 11, .w = 11, .k = 3, .stride = 2, .oh = 5, .ow = 5}};
  CHECK_OK(gpu->ops->upload(gpu, gdy, dy, sizeof(float) * B * out)); /* the same incoming gradient */
  for (int p = 0; p < 2; p++) {
    const dt_pool_shape *ps = &pools[p];
    const int pb = 4;
    const size_t pin = (size_t)pb * ps->c * ps->h * ps->w, pout = (size_t)pb * ps->c * ps->oh * ps->ow;
    int32_t *am = malloc(sizeof(int32_t) * pout);
    int32_t *gam = dev(NULL, sizeof(int32_t) * pout);
    CHECK_OK(cpu->ops->maxpool_forward(cpu, ps, pb, x, y, am));
    CHECK_OK(gpu->ops->maxpool_forward(gpu, ps, pb, gx, gy, gam));
    check_exact(p ? "maxpool 3x3/2 forward" : "maxpool 2x2 forward", y, gy, pout);
    CHECK_OK(cpu->ops->maxpool_backward(cpu, ps, pb, dy, am, dx));
    CHECK_OK(gpu->ops->maxpool_backward(gpu, ps, pb, gdy, gam, gdx));
    check_exact(p ? "maxpool 3x3/2 backward" : "maxpool 2x2 backward", dx, gdx, pin);
    gpu->ops->free(gpu, gam);
    free(am);
  }
  {
    uint8_t *mask = malloc(n), *gmask = dev(NULL, n);
    dt_rng r1, r2;
    dt_rng_init(&r1, 5, DT_RNG_DROPOUT, 3);
    (void)dt_rng_u32(&r1); /* start inside a block */
    r2 = r1;
    CHECK_OK(cpu->ops->dropout_forward(cpu, n, 0.3f, x, dx, mask, &r1));
    CHECK_OK(gpu->ops->dropout_forward(gpu, n, 0.3f, gx, gdx, gmask, &r2));
    check_exact("dropout forward", dx, gdx, n);
    CHECK(dt_rng_u32(&r1) == dt_rng_u32(&r2), "dropout left the streams at different places");
    CHECK_OK(cpu->ops->dropout_backward(cpu, n, 0.3f, mask, x, dx));
    CHECK_OK(gpu->ops->dropout_backward(gpu, n, 0.3f, gmask, gx, gdx));
    check_exact("dropout backward", dx, gdx, n);
    gpu->ops->free(gpu, gmask);
    free(mask);
  }
  void *all[] = {gx, gw, gb, gy, gdy, gdx, gdw, gdb, glab};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gpu->ops->free(gpu, all[i]);
  free(x), free(w), free(b), free(y), free(dy), free(dx), free(dw), free(db);
}

/* ---- node-batched model calls ------------------------------------------------------------------ */

/* conv(3→4, k3, pad 1) → relu → maxpool 2 → conv(4→6, k3, stride 2) → relu → dropout → flatten →
 * linear(→16) → relu → dropout → linear(→5) on 3×10×10 inputs: every layer kind and layout. */
static void mixed_model(dt_model_spec *s) {
  memset(s, 0, sizeof *s);
  *s = (dt_model_spec){.in_channels = 3, .in_height = 10, .in_width = 10, .num_classes = 5, .num_layers = 11};
  s->layers[0] = (dt_layer_spec){.kind = DT_LAYER_CONV2D, .out_channels = 4, .kernel_size = 3, .stride = 1, .padding = 1};
  s->layers[1] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s->layers[2] = (dt_layer_spec){.kind = DT_LAYER_MAXPOOL2D, .kernel_size = 2};
  s->layers[3] = (dt_layer_spec){.kind = DT_LAYER_CONV2D, .out_channels = 6, .kernel_size = 3, .stride = 2};
  s->layers[4] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s->layers[5] = (dt_layer_spec){.kind = DT_LAYER_DROPOUT, .p = 0.25f};
  s->layers[6] = (dt_layer_spec){.kind = DT_LAYER_FLATTEN};
  s->layers[7] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 16};
  s->layers[8] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s->layers[9] = (dt_layer_spec){.kind = DT_LAYER_DROPOUT, .p = 0.5f};
  s->layers[10] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 5};
}

/* softmax regression: flatten → linear, the shared-input path of evaluation */
static void logreg_model(dt_model_spec *s) {
  memset(s, 0, sizeof *s);
  *s = (dt_model_spec){.in_channels = 1, .in_height = 6, .in_width = 7, .num_classes = 4, .num_layers = 2};
  s->layers[0] = (dt_layer_spec){.kind = DT_LAYER_FLATTEN};
  s->layers[1] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 4};
}

enum { NODES = 7, MAXB = 9, EVAL_N = 23 };

typedef struct model_case {
  const char *name;
  dt_model *m;
  size_t P, d, ps, xs, ys;
  float *theta, *x;
  int32_t *y, *ey;
  float *ex;
} model_case;

/* gradients (and losses) of nodes [first, first + count) on backend be; dropout streams fresh */
static void gradients(dt_backend *be, model_case *mc, int first, int count, const float *theta, const float *x,
                      const int32_t *y, float *grad, float *loss, const int *batch) {
  void *plan = NULL;
  CHECK_OK(be->ops->plan_create(be, mc->m, MAXB, count, NODES, &plan));
  dt_rng drop[NODES];
  for (int l = 0; l < count; l++) dt_rng_init(&drop[l], 17, DT_RNG_DROPOUT, (uint64_t)(first + l));
  const dt_node_batch nb = {.count = count, .theta = theta + first * mc->ps, .theta_stride = mc->ps,
                            .grad = grad + first * mc->ps, .grad_stride = mc->ps, .x = x + first * mc->xs,
                            .x_stride = mc->xs, .y = y + first * mc->ys, .y_stride = mc->ys, .batch = batch + first,
                            .loss = loss + first, .dropout = drop};
  CHECK_OK(be->ops->model_gradients(be, plan, &nb));
  be->ops->plan_free(be, plan);
}

static void test_model(const char *name, const dt_model_spec *spec) {
  model_case mc = {.name = name};
  CHECK_OK(dt_model_create(spec, &mc.m));
  mc.P = dt_model_num_params(mc.m);
  mc.d = dt_model_input_size(mc.m);
  mc.ps = dt_slab_stride(mc.P);
  mc.xs = dt_slab_stride(MAXB * mc.d);
  mc.ys = 16;
  const size_t np = NODES * mc.ps, nx = NODES * mc.xs, ny = NODES * mc.ys;
  float *theta = calloc(np, sizeof(float)), *x = calloc(nx, sizeof(float)), *grad = calloc(np, sizeof(float));
  int32_t *y = calloc(ny, sizeof(int32_t));
  for (int l = 0; l < NODES; l++) {
    dt_model_init_params(mc.m, 100 + (uint64_t)l, theta + l * mc.ps);
    fill_random(x + l * mc.xs, MAXB * mc.d, 1.0f);
    for (int s = 0; s < MAXB; s++) y[l * mc.ys + s] = (int32_t)dt_rng_below(&rng, (uint32_t)spec->num_classes);
  }
  const int batch[NODES] = {9, 4, 0, 9, 1, 7, 9}; /* partial batches and an idle node */
  float loss_c[NODES] = {0}, loss_g[NODES] = {0}, loss_g2[NODES] = {0};
  gradients(cpu, &mc, 0, NODES, theta, x, y, grad, loss_c, batch);

  float *gtheta = dev(theta, sizeof(float) * np), *gx = dev(x, sizeof(float) * nx), *ggrad = dev(NULL, sizeof(float) * np);
  float *ggrad2 = dev(NULL, sizeof(float) * np);
  int32_t *gy = dev(y, sizeof(int32_t) * ny);
  gradients(gpu, &mc, 0, NODES, gtheta, gx, gy, ggrad, loss_g, batch);
  char what[96];
  for (int l = 0; l < NODES; l++) {
    if (batch[l] == 0) continue;
    snprintf(what, sizeof what, "%s: node %d gradient", name, l);
    check_close(what, grad + l * mc.ps, ggrad + l * mc.ps, mc.P);
    CHECK_CLOSE(loss_g[l], loss_c[l], 1e-5, 1e-6);
  }
  float *untouched = down(ggrad + 2 * mc.ps, mc.P);
  int zero = 1;
  for (size_t i = 0; i < mc.P; i++) zero &= untouched[i] == 0.0f;
  CHECK(zero, "%s: the gradient of a node with batch 0 was written", name);
  free(untouched);

  /* the same nodes as two calls (3 + 4): the same bits, so results do not depend on placement */
  gradients(gpu, &mc, 0, 3, gtheta, gx, gy, ggrad2, loss_g2, batch);
  gradients(gpu, &mc, 3, 4, gtheta, gx, gy, ggrad2, loss_g2, batch);
  float *a = down(ggrad, np), *b = down(ggrad2, np);
  size_t differ = 0;
  for (int l = 0; l < NODES; l++)
    for (size_t i = 0; i < mc.P; i++) differ += memcmp(&a[l * mc.ps + i], &b[l * mc.ps + i], sizeof(float)) != 0;
  CHECK(differ == 0, "%s: %zu gradient values change when the nodes are split 3 + 4", name, differ);
  CHECK(memcmp(loss_g, loss_g2, sizeof loss_g) == 0, "%s: losses change when the nodes are split 3 + 4", name);
  /* and again: the same bits */
  gradients(gpu, &mc, 0, NODES, gtheta, gx, gy, ggrad2, loss_g2, batch);
  free(b);
  b = down(ggrad2, np);
  differ = 0;
  for (size_t i = 0; i < np; i++) differ += memcmp(&a[i], &b[i], sizeof(float)) != 0;
  CHECK(differ == 0, "%s: a second call gave %zu other gradient values", name, differ);
  free(a), free(b);

  /* evaluation: every node on one shared set, in chunks of 10 (a partial last chunk) */
  float *ex = malloc(sizeof(float) * EVAL_N * mc.d);
  int32_t ey[EVAL_N];
  fill_random(ex, EVAL_N * mc.d, 1.0f);
  for (int i = 0; i < EVAL_N; i++) ey[i] = (int32_t)dt_rng_below(&rng, (uint32_t)spec->num_classes);
  float *gex = dev(ex, sizeof(float) * EVAL_N * mc.d);
  int32_t *gey = dev(ey, sizeof ey);
  double ls_c[NODES] = {0}, ls_g[NODES] = {0};
  long cor_c[NODES] = {0}, cor_g[NODES] = {0};
  void *pc = NULL, *pg = NULL;
  CHECK_OK(cpu->ops->plan_create(cpu, mc.m, 10, NODES, NODES, &pc));
  CHECK_OK(gpu->ops->plan_create(gpu, mc.m, 10, NODES, NODES, &pg));
  const dt_node_eval ec = {.count = NODES, .theta = theta, .theta_stride = mc.ps, .x = ex, .y = ey, .n = EVAL_N,
                           .loss_sum = ls_c, .correct = cor_c};
  const dt_node_eval eg = {.count = NODES, .theta = gtheta, .theta_stride = mc.ps, .x = gex, .y = gey, .n = EVAL_N,
                           .loss_sum = ls_g, .correct = cor_g};
  CHECK_OK(cpu->ops->model_evaluate(cpu, pc, &ec));
  CHECK_OK(gpu->ops->model_evaluate(gpu, pg, &eg));
  for (int l = 0; l < NODES; l++) {
    CHECK_CLOSE(ls_g[l], ls_c[l], 1e-5, 1e-6);
    CHECK(cor_g[l] == cor_c[l], "%s: node %d evaluation hits gpu %ld cpu %ld", name, l, cor_g[l], cor_c[l]);
  }
  cpu->ops->plan_free(cpu, pc);
  gpu->ops->plan_free(gpu, pg);

  /* finite differences of the GPU's loss (no dropout: evaluation's forward) against its
   * gradient, on node 0's full batch: d/dθ_i of the mean NLL over the batch */
  if (strcmp(name, "logreg") == 0 || strcmp(name, "seed cnn") == 0) {
    void *pe = NULL, *pt = NULL;
    CHECK_OK(gpu->ops->plan_create(gpu, mc.m, MAXB, 1, 1, &pe));
    CHECK_OK(gpu->ops->plan_create(gpu, mc.m, MAXB, 1, 1, &pt));
    float l0;
    const int full = MAXB;
    const dt_node_batch nb = {.count = 1, .theta = gtheta, .theta_stride = mc.ps, .grad = ggrad, .grad_stride = mc.ps,
                              .x = gx, .x_stride = mc.xs, .y = gy, .y_stride = mc.ys, .batch = &full, .loss = &l0,
                              .dropout = NULL};
    CHECK_OK(gpu->ops->model_gradients(gpu, pt, &nb));
    float *g = down(ggrad, mc.P), *th = down(gtheta, mc.P);
    for (int t = 0; t < 12; t++) {
      const size_t i = dt_rng_below(&rng, (uint32_t)mc.P);
      const float h = 1e-2f * fmaxf(1.0f, fabsf(th[i]));
      double f[2];
      for (int sgn = 0; sgn < 2; sgn++) {
        const float v = th[i] + (sgn ? -h : h);
        CHECK_OK(gpu->ops->upload(gpu, gtheta + i, &v, sizeof v));
        double ls = 0;
        long c = 0;
        const dt_node_eval e = {.count = 1, .theta = gtheta, .theta_stride = mc.ps, .x = gx, .y = gy, .n = MAXB,
                                .loss_sum = &ls, .correct = &c};
        CHECK_OK(gpu->ops->model_evaluate(gpu, pe, &e));
        f[sgn] = ls / MAXB;
      }
      CHECK_OK(gpu->ops->upload(gpu, gtheta + i, &th[i], sizeof th[i]));
      const double fd = (f[0] - f[1]) / (2.0 * h);
      CHECK(fabs(fd - g[i]) <= 2e-3 + 2e-2 * fabs(g[i]), "%s: parameter %zu: finite difference %.6g, gradient %.6g", name, i,
            fd, g[i]);
    }
    free(g), free(th);
    gpu->ops->plan_free(gpu, pe);
    gpu->ops->plan_free(gpu, pt);
  }

  void *all[] = {gtheta, gx, ggrad, ggrad2, gy, gex, gey};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gpu->ops->free(gpu, all[i]);
  free(theta), free(x), free(grad), free(y), free(ex);
  dt_model_free(mc.m);
}

int main(void) {
  if (!DT_HAVE_CUDA) {
    printf("SKIP: this dtrun was built without the CUDA backend\n");
    return 77;
  }
  const dt_backend_def *def = dt_backend_find("cuda");
  char why[256] = "";
  if (def == NULL || !def->usable(why, sizeof why)) {
    printf("SKIP: no usable GPU (%s)\n", why);
    return 77;
  }
  CHECK_OK(dt_backend_cpu_create(1, &cpu));
  CHECK_OK(def->create(1, &gpu));
  if (cpu == NULL || gpu == NULL) return check_report("test_gpu_ops");
  dt_rng_init(&rng, 2026, DT_RNG_TEST, 11);
  test_vectors();
  test_codec();
  test_steps();
  test_layers();
  dt_model_spec spec;
  dt_model_spec_seed_cnn(&spec, 3, 5, 64);
  test_model("seed cnn", &spec);
  mixed_model(&spec);
  test_model("mixed", &spec);
  logreg_model(&spec);
  test_model("logreg", &spec);
  large_cnn(&spec);
  test_model("large cnn", &spec);
  dt_backend_free(gpu);
  dt_backend_free(cpu);
  return check_report("test_gpu_ops");
}
