/* The gpu suite's op test (ggml's test-backend-ops in spirit): every op of the backend op list
 * (dt/backend.h) on the CUDA backend against the CPU backend, on the same fresh random inputs.
 * The cases are iterated from the op list itself: an op without a case_<op> here does not build,
 * and an op a backend declares unsupported (a NULL table entry) is reported and skipped.
 *
 * - Elementwise vector, mixing and local-step ops must give the CPU's bits exactly (both
 *   backends compile dt/formulas.h without contraction).
 * - Reductions (double accumulation in another order) agree to 1e-12 relative.
 * - Node-batched model calls (cuBLAS GEMMs, expf/logf of the device) agree to a tolerance scaled
 *   to the values: |gpu − cpu| ≤ 2e-4 · (max |cpu| + 1e-3) per array; dropout masks are the
 *   same Philox words, so the same samples are dropped.
 * - Model calls are deterministic (two calls, same bits) and do not depend on how the nodes are
 *   split between calls (7 nodes at once = 3 + 4), which is what makes results P-invariant.
 * - Buffers (batch norm's running statistics) moved by training calls agree to the same
 *   tolerance, and a node with batch 0 keeps its own; the models cover every layer type (batch
 *   and group norm, average pools, bias-free layers, residual blocks with identity and projection
 *   skips, blocks on a sample-major input), ResNet-20 and VGG-11, with partial batches whose
 *   padding must not enter batch statistics.
 * - A finite-difference check of the GPU gradient (train mode where batch statistics make
 *   evaluation's forward another function).
 * Exits 77 (skipped) where this dtrun has no CUDA backend or no GPU is usable. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "../unit/models.h"
#include "dt/backend.h"
#include "dt/data.h"
#include "dt/local_opt.h"
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
  CHECK_OK(dt_be_alloc(gpu, bytes, &p));
  if (host != NULL) CHECK_OK(dt_be_upload(gpu, p, host, bytes));
  return p;
}

static float *down(const float *d, size_t n) {
  float *h = calloc(n ? n : 1, sizeof(float));
  CHECK_OK(dt_be_download(gpu, h, d, sizeof(float) * n));
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

/* For deep networks (ResNet-20, VGG-11 in train mode): ‖gpu − cpu‖₂ ≤ 1e-2 · ‖cpu‖₂ over the
 * array. Element by element they can differ by far more than rounding: a max pool's near-tie or
 * a ReLU's input near 0 decided the other way by a last-bit difference upstream sends a sample's
 * gradient elsewhere, and batch statistics spread it. Measured on the CPU alone: moving VGG-11's
 * input by one ulp moved its gradient by 2e-6 (relative norm) in 11 of 12 draws and by 9.2e-4 in
 * one; on the H200 one node of four differed from the CPU by 1.8e-3. A wrong layer is off by
 * order 1. */
static void check_close_norm(const char *what, const float *cpu_v, const float *gpu_dev, size_t n) {
  float *g = down(gpu_dev, n);
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = (double)g[i] - cpu_v[i];
    num += d * d, den += (double)cpu_v[i] * cpu_v[i];
  }
  const double rel = sqrt(num) / (sqrt(den) + 1e-30);
  CHECK(rel <= 1e-2, "%s: ||gpu - cpu|| / ||cpu|| = %.3g, tolerance 1e-2", what, rel);
  free(g);
}

/* ---- memory ---------------------------------------------------------------------------------- */

static void case_alloc(void) {
  const size_t n = 4099;
  float *d = dev(NULL, sizeof(float) * n), *h = down(d, n);
  size_t nonzero = 0;
  for (size_t i = 0; i < n; i++) nonzero += h[i] != 0.0f;
  CHECK(nonzero == 0, "alloc: %zu of %zu floats of fresh memory are not zero", nonzero, n);
  free(h);
  dt_be_free(gpu, d);
}

static void case_upload(void) {
  const size_t n = 3001;
  unsigned char *a = malloc(n), *b = calloc(n, 1);
  for (size_t i = 0; i < n; i++) a[i] = (unsigned char)dt_rng_u32(&rng);
  void *d = dev(a, n);
  CHECK_OK(dt_be_download(gpu, b, d, n));
  CHECK(memcmp(a, b, n) == 0, "upload: the bytes read back differ from those written");
  /* a part, at an offset */
  CHECK_OK(dt_be_upload(gpu, (unsigned char *)d + 17, a + 100, 200));
  CHECK_OK(dt_be_download(gpu, b, d, n));
  CHECK(memcmp(b + 17, a + 100, 200) == 0 && memcmp(b, a, 17) == 0 && memcmp(b + 217, a + 217, n - 217) == 0,
        "upload: a partial upload at an offset wrote elsewhere");
  dt_be_free(gpu, d);
  free(a), free(b);
}

static void case_download(void) {
  const size_t n = 2048;
  float *h = malloc(sizeof(float) * n), *d = dev(NULL, sizeof(float) * n);
  CHECK_OK(dt_be_fill(gpu, n, -2.5f, d));
  CHECK_OK(dt_be_download(gpu, h, d + 5, sizeof(float) * (n - 5)));
  size_t bad = 0;
  for (size_t i = 0; i < n - 5; i++) bad += h[i] != -2.5f;
  CHECK(bad == 0, "download: %zu values read back wrong after a fill", bad);
  free(h);
  dt_be_free(gpu, d);
}

static void case_free(void) {
  dt_be_free(gpu, NULL); /* accepted */
  void *d = dev(NULL, 1 << 20);
  dt_be_free(gpu, d);
}

/* ---- vectors, mixing, reductions: x, y random, z the output ------------------------------------ */

enum { VN = 100003 };
static float *vx, *vy, *vz, *gvx, *gvy, *gvz;

static void vectors_setup(void) {
  vx = malloc(sizeof(float) * VN), vy = malloc(sizeof(float) * VN), vz = malloc(sizeof(float) * VN);
  fill_random(vx, VN, 3.0f);
  fill_random(vy, VN, 2.0f);
  gvx = dev(vx, sizeof(float) * VN), gvy = dev(vy, sizeof(float) * VN), gvz = dev(NULL, sizeof(float) * VN);
}

static void vectors_free(void) {
  dt_be_free(gpu, gvx), dt_be_free(gpu, gvy), dt_be_free(gpu, gvz);
  free(vx), free(vy), free(vz);
}

/* z starts as y on both sides */
static void z_from_y(void) {
  memcpy(vz, vy, sizeof(float) * VN);
  CHECK_OK(dt_be_upload(gpu, gvz, vy, sizeof(float) * VN));
}

static void case_fill(void) {
  CHECK_OK(dt_be_fill(cpu, VN, 1.5f, vz));
  CHECK_OK(dt_be_fill(gpu, VN, 1.5f, gvz));
  check_exact("fill", vz, gvz, VN);
}

static void case_copy(void) {
  CHECK_OK(dt_be_copy(cpu, VN, vx, vz));
  CHECK_OK(dt_be_copy(gpu, VN, gvx, gvz));
  check_exact("copy", vz, gvz, VN);
}

static void case_scale(void) {
  z_from_y();
  CHECK_OK(dt_be_scale(cpu, VN, 0.3f, vz));
  CHECK_OK(dt_be_scale(gpu, VN, 0.3f, gvz));
  check_exact("scale", vz, gvz, VN);
}

static void case_axpy(void) {
  z_from_y();
  CHECK_OK(dt_be_axpy(cpu, VN, 0.37f, vx, vz));
  CHECK_OK(dt_be_axpy(gpu, VN, 0.37f, gvx, gvz));
  check_exact("axpy", vz, gvz, VN);
}

static void case_axpby(void) {
  CHECK_OK(dt_be_axpby(cpu, VN, -1.25f, vx, 0.5f, vy, vz));
  CHECK_OK(dt_be_axpby(gpu, VN, -1.25f, gvx, 0.5f, gvy, gvz));
  check_exact("axpby", vz, gvz, VN);
  /* z aliasing y */
  z_from_y();
  CHECK_OK(dt_be_axpby(cpu, VN, 2.0f, vx, -0.75f, vz, vz));
  CHECK_OK(dt_be_axpby(gpu, VN, 2.0f, gvx, -0.75f, gvz, gvz));
  check_exact("axpby in place", vz, gvz, VN);
}

static void case_div(void) {
  CHECK_OK(dt_be_div(cpu, VN, vx, 7.0, vz));
  CHECK_OK(dt_be_div(gpu, VN, gvx, 7.0, gvz));
  check_exact("div", vz, gvz, VN);
}

static void case_dot(void) {
  double a, b;
  CHECK_OK(dt_be_dot(cpu, VN, vx, vy, &a));
  CHECK_OK(dt_be_dot(gpu, VN, gvx, gvy, &b));
  CHECK_CLOSE(b, a, 1e-12, 0);
}

static void case_nrm2(void) {
  double a, b;
  CHECK_OK(dt_be_nrm2(cpu, VN, vx, &a));
  CHECK_OK(dt_be_nrm2(gpu, VN, gvx, &b));
  CHECK_CLOSE(b, a, 1e-12, 0);
}

static void case_sqdist(void) {
  double a, b, b2;
  CHECK_OK(dt_be_sqdist(cpu, VN, vx, vy, &a));
  CHECK_OK(dt_be_sqdist(gpu, VN, gvx, gvy, &b));
  CHECK_CLOSE(b, a, 1e-12, 0);
  CHECK_OK(dt_be_sqdist(gpu, VN, gvx, gvy, &b2));
  CHECK(memcmp(&b, &b2, sizeof b) == 0, "a reduction gave other bits on a second call");
}

/* sum = 3x + y/8 in double, on both sides */
static double *sum_of(double **dsum) {
  double *sum = malloc(sizeof(double) * VN);
  for (size_t i = 0; i < VN; i++) sum[i] = 3.0 * vx[i] + 0.125 * vy[i];
  *dsum = dev(sum, sizeof(double) * VN);
  return sum;
}

static void case_sqdist_mean(void) {
  double *dsum, *sum = sum_of(&dsum), a, b;
  CHECK_OK(dt_be_sqdist_mean(cpu, VN, vy, sum, 3.0, &a));
  CHECK_OK(dt_be_sqdist_mean(gpu, VN, gvy, dsum, 3.0, &b));
  CHECK_CLOSE(b, a, 1e-12, 0);
  dt_be_free(gpu, dsum);
  free(sum);
}

static void case_mean_of_sum(void) {
  double *dsum, *sum = sum_of(&dsum);
  CHECK_OK(dt_be_mean_of_sum(cpu, VN, sum, 3.0, vz));
  CHECK_OK(dt_be_mean_of_sum(gpu, VN, dsum, 3.0, gvz));
  check_exact("mean_of_sum", vz, gvz, VN);
  dt_be_free(gpu, dsum);
  free(sum);
}

/* mixing over more vectors than one launch takes */
static void case_mix(void) {
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
    CHECK_OK(dt_be_mix(cpu, m, k, (const float *const *)hx, w, vz));
    CHECK_OK(dt_be_mix(gpu, m, k, (const float *const *)gx, w, gvz));
    char what[32];
    snprintf(what, sizeof what, "mix of %d", k);
    check_exact(what, vz, gvz, m);
  }
  for (int j = 0; j < K; j++) {
    free(hx[j]);
    dt_be_free(gpu, gx[j]);
  }
}

/* many nodes in one call, nodes with 0 to 20 terms (more than one k_mix launch takes), called
 * twice with the same table (the second reuses the uploaded one) and once with another */
static void case_mix_nodes(void) {
  enum { NODES = 40, K = 20 };
  const size_t m = 3001;
  float *hx[K], *gx[K], *hy[NODES], *gy[NODES];
  const float *tx[NODES * K], *tgx[NODES * K];
  float tw[NODES * K];
  int k[NODES];
  for (int j = 0; j < K; j++) {
    hx[j] = malloc(sizeof(float) * m);
    fill_random(hx[j], m, 1.0f);
    gx[j] = dev(hx[j], sizeof(float) * m);
  }
  for (int round = 0; round < 3; round++) {
    int at = 0;
    for (int c = 0; c < NODES; c++) {
      k[c] = round < 2 ? c % (K + 1) : (c * 7 + round) % (K + 1);
      for (int j = 0; j < k[c]; j++) {
        const int v = (c + 3 * j) % K;
        tx[at] = hx[v], tgx[at] = gx[v], tw[at++] = dt_rng_float(&rng) - 0.3f;
      }
      if (round == 0) {
        hy[c] = malloc(sizeof(float) * m);
        gy[c] = dev(NULL, sizeof(float) * m);
      }
    }
    CHECK_OK(dt_be_mix_nodes(cpu, m, NODES, k, tx, tw, hy));
    CHECK_OK(dt_be_mix_nodes(gpu, m, NODES, k, tgx, tw, gy));
    for (int c = 0; c < NODES; c++) {
      char what[48];
      snprintf(what, sizeof what, "mix_nodes call %d, node %d (%d terms)", round, c, k[c]);
      check_exact(what, hy[c], gy[c], m);
    }
  }
  for (int j = 0; j < K; j++) {
    free(hx[j]);
    dt_be_free(gpu, gx[j]);
  }
  for (int c = 0; c < NODES; c++) {
    free(hy[c]);
    dt_be_free(gpu, gy[c]);
  }
}

/* ---- resident samples and gathering: the CPU's rows bit for bit, augmentation included ------- */

static void gather_case(const char *name, const dt_samples *s, int augment) {
  enum { NODES = 5, B = 9 };
  void *cres = NULL, *gres = NULL;
  CHECK_OK(dt_be_samples_create(cpu, s, &cres));
  CHECK_OK(dt_be_samples_create(gpu, s, &gres));
  const size_t xs = dt_slab_stride((size_t)B * s->dim), ys = 16;
  float *hx = calloc(xs * NODES, sizeof(float)), *gx = dev(NULL, sizeof(float) * xs * NODES);
  int32_t *hy = calloc(ys * NODES, sizeof(int32_t)), *gy = dev(NULL, sizeof(int32_t) * ys * NODES), *gyh = calloc(ys * NODES, sizeof(int32_t));
  uint32_t idx[NODES][B];
  int16_t aug[NODES][3 * B];
  const uint32_t *idx_of[NODES];
  const int16_t *aug_of[NODES];
  float fill[DT_MAX_CHANNELS];
  int n[NODES];
  for (int c = 0; c < s->in_c && c < DT_MAX_CHANNELS; c++) fill[c] = -0.25f - (float)c;
  /* the third call pads to 7 rows over a sentinel: zeros (label 0) from n[l] to 7, the sentinel after */
  for (int call = 0; call < 3; call++) {
    const int pad = call == 2 ? B - 2 : 0;
    if (pad > 0) {
      for (size_t i = 0; i < xs * NODES; i++) hx[i] = 7.5f;
      for (size_t i = 0; i < ys * NODES; i++) hy[i] = 7;
      CHECK_OK(dt_be_upload(gpu, gx, hx, sizeof(float) * xs * NODES));
      CHECK_OK(dt_be_upload(gpu, gy, hy, sizeof(int32_t) * ys * NODES));
    }
    for (int l = 0; l < NODES; l++) {
      n[l] = (l + call) % 3 == 0 ? 0 : 1 + (int)dt_rng_below(&rng, pad > 0 ? pad : B);
      for (int b = 0; b < B; b++) {
        idx[l][b] = (uint32_t)dt_rng_below(&rng, s->count);
        aug[l][3 * b] = (int16_t)((int)dt_rng_below(&rng, 9) - 4);
        aug[l][3 * b + 1] = (int16_t)((int)dt_rng_below(&rng, 9) - 4);
        aug[l][3 * b + 2] = (int16_t)dt_rng_below(&rng, 2);
      }
      idx_of[l] = idx[l], aug_of[l] = aug[l];
    }
    const dt_gather gc = {.count = NODES, .n = n, .idx = idx_of, .aug = augment ? aug_of : NULL, .fill = fill,
                          .x = hx, .x_stride = xs, .y = hy, .y_stride = ys, .pad = pad};
    dt_gather gg = gc;
    gg.x = gx, gg.y = gy;
    CHECK_OK(dt_be_samples_gather(cpu, cres, &gc));
    CHECK_OK(dt_be_samples_gather(gpu, gres, &gg));
    CHECK_OK(dt_be_download(gpu, gyh, gy, sizeof(int32_t) * ys * NODES));
    for (int l = 0; l < NODES; l++) {
      char what[96];
      snprintf(what, sizeof what, "%s gather call %d node %d (%d samples)", name, call, l, n[l]);
      if (n[l] == 0 && pad == 0) continue;
      const size_t rows = (size_t)(pad > 0 ? B : n[l]); /* with pad: the zeros and the sentinel after them too */
      check_exact(what, hx + (size_t)l * xs, gx + (size_t)l * xs, rows * s->dim);
      CHECK(memcmp(hy + (size_t)l * ys, gyh + (size_t)l * ys, sizeof(int32_t) * rows) == 0, "%s: labels differ", what);
      for (size_t r = (size_t)n[l]; pad > 0 && r < (size_t)B; r++) {
        const float want = n[l] > 0 && r < (size_t)pad ? 0.0f : 7.5f;
        CHECK(hx[(size_t)l * xs + r * s->dim] == want && hx[(size_t)l * xs + (r + 1) * s->dim - 1] == want &&
                  hy[(size_t)l * ys + r] == (want == 0.0f ? 0 : 7),
              "%s: row %zu should be %s", what, r, want == 0.0f ? "zeros (padding)" : "left as it was");
      }
    }
  }
  free(hx);
  free(hy);
  free(gyh);
  dt_be_free(gpu, gx);
  dt_be_free(gpu, gy);
  dt_be_samples_free(cpu, cres);
  dt_be_samples_free(gpu, gres);
}

/* 3-channel 6×5 images (u8, per-channel normalisation) and float feature rows */
static void each_sample_set(void (*fn)(const char *, const dt_samples *, int)) {
  enum { COUNT = 37 };
  uint8_t *px = malloc(COUNT * 90), *lab = malloc(COUNT);
  float *f = malloc(sizeof(float) * COUNT * 11);
  for (int i = 0; i < COUNT * 90; i++) px[i] = (uint8_t)dt_rng_below(&rng, 256);
  for (int i = 0; i < COUNT; i++) lab[i] = (uint8_t)dt_rng_below(&rng, 10);
  fill_random(f, COUNT * 11, 2.0f);
  dt_samples img = {.count = COUNT, .dim = 90, .u8 = px, .labels = lab, .in_c = 3, .in_h = 6, .in_w = 5, .num_classes = 10};
  for (int c = 0; c < 3; c++) img.mean[c] = 0.1f + 0.2f * (float)c, img.std[c] = 0.3f + 0.05f * (float)c;
  dt_samples rows = {.count = COUNT, .dim = 11, .f32 = f, .labels = lab, .in_c = 1, .in_h = 1, .in_w = 11, .num_classes = 10};
  fn("images", &img, 0);
  fn("augmented images", &img, 1);
  fn("feature rows", &rows, 0);
  free(px);
  free(lab);
  free(f);
}

static void case_samples_create(void) { each_sample_set(gather_case); }
static void case_samples_gather(void) { each_sample_set(gather_case); }
static void case_samples_free(void) { dt_be_samples_free(gpu, NULL); }

/* a mark charges the time since the last one to its phase, after the device's queued work */
static void case_profile_mark(void) {
  dt_profile p;
  CHECK_OK(dt_be_profile_mark(gpu, DT_PHASE_MIX)); /* no profile: nothing */
  dt_backend_profile(gpu, &p);
  CHECK_OK(dt_be_fill(gpu, 5003, 1.0f, gvz));
  CHECK_OK(dt_be_profile_mark(gpu, DT_PHASE_MIX));
  CHECK_OK(dt_be_profile_mark(gpu, DT_PHASE_EVAL));
  dt_backend_profile(gpu, NULL);
  CHECK(p.seconds[DT_PHASE_MIX] > 0 && p.seconds[DT_PHASE_EVAL] >= 0 && p.seconds[DT_PHASE_BATCH] == 0,
        "profile marks: mix %g s, evaluation %g s, batch %g s", p.seconds[DT_PHASE_MIX], p.seconds[DT_PHASE_EVAL],
        p.seconds[DT_PHASE_BATCH]);
}

/* ---- the fused local step: five steps of every local optimizer, every state array compared ----- */

typedef struct step_variant {
  const char *name;
  dt_local_opt_spec spec;
  int extra; /* with the extra-gradient hook g + 0.2·p + b */
} step_variant;

/* Steps node 0 of o (state of n floats) t times with the gradients g[t] (host), on be. */
static void run_steps(dt_backend *be, const step_variant *sv, size_t n, float *p, float *const *g, const float *eb,
                      dt_local_opt **out) {
  dt_local_opt *o = NULL;
  CHECK_OK(dt_local_opt_create(be, &sv->spec, 1, n, &o));
  if (o == NULL) return;
  const dt_grad_extra extra = {.alpha = 0.2f, .b = eb};
  for (int t = 0; t < 5; t++) CHECK_OK(dt_local_opt_step(o, 0, p, g[t], -1.0f, sv->extra ? &extra : NULL));
  *out = o;
}

static void compare_state(const char *name, const char *what, const dt_slab *c, const dt_slab *g) {
  if (c->data == NULL || g->data == NULL) {
    CHECK(c->data == g->data, "%s: one backend keeps %s, the other not", name, what);
    return;
  }
  char label[96];
  snprintf(label, sizeof label, "%s %s", name, what);
  check_exact(label, c->data, g->data, c->dim);
}

static void case_local_step(void) {
  step_variant v[DT_LOCAL_KIND_COUNT + 2];
  int nv = 0;
  for (int k = 0; k < DT_LOCAL_KIND_COUNT; k++) {
    v[nv] = (step_variant){.name = dt_local_opt_names[k], .spec = dt_local_opt_spec_default(k), .extra = k % 2};
    v[nv].spec.weight_decay = 1e-3f;
    if (k == DT_LOCAL_RMSPROP) v[nv].spec.momentum = 0.5f;
    nv++;
  }
  v[nv] = (step_variant){.name = "sgd momentum dampening", .spec = dt_local_opt_spec_default(DT_LOCAL_SGD), .extra = 1};
  v[nv].spec.momentum = 0.9f, v[nv].spec.dampening = 0.1f, v[nv].spec.weight_decay = 1e-3f;
  nv++;
  v[nv] = (step_variant){.name = "sgd nesterov", .spec = dt_local_opt_spec_default(DT_LOCAL_SGD)};
  v[nv].spec.momentum = 0.9f, v[nv].spec.nesterov = 1;
  nv++;
  const size_t n = 40007;
  for (int i = 0; i < nv; i++) {
    float *p = malloc(sizeof(float) * n), *eb = malloc(sizeof(float) * n), *g[5], *gg[5];
    fill_random(p, n, 1.0f);
    fill_random(eb, n, 0.1f);
    for (int t = 0; t < 5; t++) {
      g[t] = malloc(sizeof(float) * n);
      fill_random(g[t], n, 0.5f);
      gg[t] = dev(g[t], sizeof(float) * n);
    }
    float *dp = dev(p, sizeof(float) * n), *deb = dev(eb, sizeof(float) * n);
    dt_local_opt *oc = NULL, *og = NULL;
    run_steps(cpu, &v[i], n, p, g, eb, &oc);
    run_steps(gpu, &v[i], n, dp, gg, deb, &og);
    char what[96];
    snprintf(what, sizeof what, "%s parameters", v[i].name);
    check_exact(what, p, dp, n);
    if (oc != NULL && og != NULL) {
      dt_slab *mc, *vc, *mg, *vg;
      long *sc, *sg;
      dt_local_opt_state(oc, &mc, &vc, &sc);
      dt_local_opt_state(og, &mg, &vg, &sg);
      compare_state(v[i].name, "state m", mc, mg);
      compare_state(v[i].name, "state v", vc, vg);
    }
    dt_local_opt_free(oc);
    dt_local_opt_free(og);
    for (int t = 0; t < 5; t++) free(g[t]), dt_be_free(gpu, gg[t]);
    dt_be_free(gpu, dp), dt_be_free(gpu, deb);
    free(p), free(eb);
  }
}

/* ---- many rows at once: the bits of a loop of single-row calls ----------------------------------
 * 300 rows (more than one launch's 256) of 1,001 floats at three different strides. */

enum { RN = 1001, RCOUNT = 300, RXS = 1008, RYS = 1024, RZS = 1040 };

static void case_rows(void) {
  float *x = malloc(sizeof(float) * RXS * RCOUNT), *y = malloc(sizeof(float) * RYS * RCOUNT);
  float *z = malloc(sizeof(float) * RZS * RCOUNT), *z0 = malloc(sizeof(float) * RZS * RCOUNT);
  float av[RCOUNT], bv[RCOUNT];
  double dv[RCOUNT];
  fill_random(x, (size_t)RXS * RCOUNT, 2.0f);
  fill_random(y, (size_t)RYS * RCOUNT, 1.5f);
  fill_random(z0, (size_t)RZS * RCOUNT, 1.0f);
  for (int l = 0; l < RCOUNT; l++) av[l] = dt_rng_float(&rng) * 4.0f - 2.0f, bv[l] = dt_rng_float(&rng) - 0.5f, dv[l] = 0.5 + l;
  float *gx = dev(x, sizeof(float) * RXS * RCOUNT), *gy = dev(y, sizeof(float) * RYS * RCOUNT);
  float *gz = dev(NULL, sizeof(float) * RZS * RCOUNT);
  static const char *const names[] = {"copy", "fill", "scale", "axpy", "axpby", "div"};
  for (int kind = DT_ROWS_COPY; kind <= DT_ROWS_DIV; kind++)
    for (int per_row = 0; per_row < 2; per_row++) {
      memcpy(z, z0, sizeof(float) * RZS * RCOUNT);
      CHECK_OK(dt_be_upload(gpu, gz, z0, sizeof(float) * RZS * RCOUNT));
      const int no_x = kind == DT_ROWS_FILL || kind == DT_ROWS_SCALE; /* operands an op does not read may be NULL */
      dt_rows r = {.kind = (dt_rows_kind)kind, .n = RN, .count = RCOUNT, .x = no_x ? NULL : gx, .y = no_x ? NULL : gy, .z = gz,
                   .xs = RXS, .ys = RYS, .zs = RZS, .a = -0.75f, .b = 1.25f, .av = per_row ? av : NULL, .bv = per_row ? bv : NULL,
                   .dv = dv};
      CHECK_OK(dt_be_rows(gpu, &r));
      /* the CPU's single-row ops, row by row */
      for (int l = 0; l < RCOUNT; l++) {
        const float a = per_row ? av[l] : r.a, b = per_row ? bv[l] : r.b;
        const float *xr = x + (size_t)l * RXS, *yr = y + (size_t)l * RYS;
        float *zr = z + (size_t)l * RZS;
        if (kind == DT_ROWS_COPY) CHECK_OK(dt_be_copy(cpu, RN, xr, zr));
        else if (kind == DT_ROWS_FILL) CHECK_OK(dt_be_fill(cpu, RN, a, zr));
        else if (kind == DT_ROWS_SCALE) CHECK_OK(dt_be_scale(cpu, RN, a, zr));
        else if (kind == DT_ROWS_AXPY) CHECK_OK(dt_be_axpy(cpu, RN, a, xr, zr));
        else if (kind == DT_ROWS_AXPBY) CHECK_OK(dt_be_axpby(cpu, RN, a, xr, b, yr, zr));
        else CHECK_OK(dt_be_div(cpu, RN, xr, dv[l], zr));
      }
      char what[64];
      snprintf(what, sizeof what, "rows %s%s", names[kind], per_row ? " (per-row scalars)" : "");
      check_exact(what, z, gz, (size_t)RZS * RCOUNT); /* the padding between rows untouched too */
      /* the CPU's rows op gives the same */
      float *zc = malloc(sizeof(float) * RZS * RCOUNT);
      memcpy(zc, z0, sizeof(float) * RZS * RCOUNT);
      dt_rows rc = r;
      rc.x = no_x ? NULL : x, rc.y = no_x ? NULL : y, rc.z = zc;
      CHECK_OK(dt_be_rows(cpu, &rc));
      CHECK(memcmp(zc, z, sizeof(float) * RZS * RCOUNT) == 0, "%s: the CPU's rows op differs from its single-row ops", what);
      free(zc);
    }
  dt_be_free(gpu, gx), dt_be_free(gpu, gy), dt_be_free(gpu, gz);
  free(x), free(y), free(z), free(z0);
}

static void case_reduce_rows(void) {
  float *x = malloc(sizeof(float) * RXS * RCOUNT);
  double *sum = malloc(sizeof(double) * RN), a[RCOUNT], b[RCOUNT], single;
  fill_random(x, (size_t)RXS * RCOUNT, 2.0f);
  for (int i = 0; i < RN; i++) sum[i] = 3.0 * x[i] + 0.5;
  float *gx = dev(x, sizeof(float) * RXS * RCOUNT);
  double *gsum = dev(sum, sizeof(double) * RN);
  for (int kind = DT_REDUCE_NRM2; kind <= DT_REDUCE_SQDIST_MEAN; kind++) {
    CHECK_OK(dt_be_reduce_rows(cpu, (dt_reduce_kind)kind, RN, RCOUNT, x, RXS, sum, 7.0, a));
    CHECK_OK(dt_be_reduce_rows(gpu, (dt_reduce_kind)kind, RN, RCOUNT, gx, RXS, gsum, 7.0, b));
    for (int l = 0; l < RCOUNT; l++) {
      CHECK_CLOSE(b[l], a[l], 1e-12, 0);
      const float *row = gx + (size_t)l * RXS;
      if (kind == DT_REDUCE_NRM2) CHECK_OK(dt_be_nrm2(gpu, RN, row, &single));
      else CHECK_OK(dt_be_sqdist_mean(gpu, RN, row, gsum, 7.0, &single));
      CHECK(memcmp(&single, &b[l], sizeof single) == 0, "reduce_rows %d row %d: %.17g, the single-row op %.17g", kind, l, b[l],
            single);
      double c1;
      if (kind == DT_REDUCE_NRM2) CHECK_OK(dt_be_nrm2(cpu, RN, x + (size_t)l * RXS, &c1));
      else CHECK_OK(dt_be_sqdist_mean(cpu, RN, x + (size_t)l * RXS, sum, 7.0, &c1));
      CHECK(memcmp(&c1, &a[l], sizeof c1) == 0, "the CPU's reduce_rows %d row %d differs from its single-row op", kind, l);
    }
  }
  /* more rows than one launch of the reduction takes (4,096), each against the single-row op */
  enum { MANY = 5000, MN = 37, MS = 40 };
  float *mx = malloc(sizeof(float) * MANY * MS);
  double *mr = malloc(sizeof(double) * MANY);
  fill_random(mx, (size_t)MANY * MS, 1.0f);
  float *gmx = dev(mx, sizeof(float) * MANY * MS);
  CHECK_OK(dt_be_reduce_rows(gpu, DT_REDUCE_NRM2, MN, MANY, gmx, MS, NULL, 1.0, mr));
  for (int l = 0; l < MANY; l += 997) {
    CHECK_OK(dt_be_nrm2(gpu, MN, gmx + (size_t)l * MS, &single));
    CHECK(memcmp(&single, &mr[l], sizeof single) == 0, "reduce_rows over %d rows, row %d: %.17g, the single-row op %.17g", MANY, l,
          mr[l], single);
  }
  CHECK_OK(dt_be_nrm2(gpu, MN, gmx + (size_t)(MANY - 1) * MS, &single));
  CHECK(memcmp(&single, &mr[MANY - 1], sizeof single) == 0, "reduce_rows over %d rows: the last row differs", MANY);
  dt_be_free(gpu, gx), dt_be_free(gpu, gsum), dt_be_free(gpu, gmx);
  free(x), free(sum), free(mx), free(mr);
}

/* Adam rows: every row at one step count with its own extra_alpha (one launch per 256 rows), then
 * rows at different step counts (row by row) */
static void case_local_step_rows(void) {
  const size_t P = (size_t)RXS * RCOUNT;
  float *p = malloc(sizeof(float) * P), *g = malloc(sizeof(float) * P), *eb = malloc(sizeof(float) * P);
  float *m = calloc(P, sizeof(float)), *v = calloc(P, sizeof(float));
  fill_random(p, P, 1.0f);
  fill_random(g, P, 0.5f);
  fill_random(eb, P, 0.1f);
  float *gp = dev(p, sizeof(float) * P), *gg = dev(g, sizeof(float) * P), *geb = dev(eb, sizeof(float) * P);
  float *gm = dev(NULL, sizeof(float) * P), *gv = dev(NULL, sizeof(float) * P);
  dt_step *st = calloc(RCOUNT, sizeof(dt_step));
  for (int call = 0; call < 3; call++) {
    for (int l = 0; l < RCOUNT; l++) {
      const int step = call + 1 + (call == 2 ? l % 3 : 0);
      const double bc1 = 1.0 - pow(0.9, step), bc2 = 1.0 - pow(0.999, step);
      st[l].kind = DT_STEP_adam;
      st[l].extra_alpha = 0.01f * (float)(l % 7);
      st[l].c.adam = (dt_adam_coef){.step_size = (float)(1e-3 / bc1), .inv_bc2_sqrt = (float)(1.0 / sqrt(bc2)), .decay = 1.0f,
                                    .l2 = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .one_b1 = 0.1f, .one_b2 = 0.001f, .eps = 1e-8f};
    }
    CHECK_OK(dt_be_local_step_rows(cpu, RN, RCOUNT, st, p, RXS, g, RXS, m, v, RXS, call == 1 ? NULL : eb, RXS));
    CHECK_OK(dt_be_local_step_rows(gpu, RN, RCOUNT, st, gp, RXS, gg, RXS, gm, gv, RXS, call == 1 ? NULL : geb, RXS));
    char what[64];
    snprintf(what, sizeof what, "local_step_rows call %d parameters", call);
    check_exact(what, p, gp, P);
    snprintf(what, sizeof what, "local_step_rows call %d state m", call);
    check_exact(what, m, gm, P);
    snprintf(what, sizeof what, "local_step_rows call %d state v", call);
    check_exact(what, v, gv, P);
  }
  /* the rows op against single-row steps on the CPU */
  float *p1 = malloc(sizeof(float) * P), *m1 = malloc(sizeof(float) * P), *v1 = malloc(sizeof(float) * P);
  memcpy(p1, p, sizeof(float) * P), memcpy(m1, m, sizeof(float) * P), memcpy(v1, v, sizeof(float) * P);
  CHECK_OK(dt_be_local_step_rows(cpu, RN, RCOUNT, st, p, RXS, g, RXS, m, v, RXS, eb, RXS));
  for (int l = 0; l < RCOUNT; l++) {
    const size_t o = (size_t)l * RXS;
    CHECK_OK(dt_be_local_step(cpu, RN, &st[l], p1 + o, g + o, m1 + o, v1 + o, eb + o));
  }
  CHECK(memcmp(p, p1, sizeof(float) * P) == 0 && memcmp(m, m1, sizeof(float) * P) == 0 && memcmp(v, v1, sizeof(float) * P) == 0,
        "the CPU's local_step_rows differs from its single-row steps");
  dt_be_free(gpu, gp), dt_be_free(gpu, gg), dt_be_free(gpu, geb), dt_be_free(gpu, gm), dt_be_free(gpu, gv);
  free(p), free(g), free(eb), free(m), free(v), free(p1), free(m1), free(v1), free(st);
}

/* ---- compressed messages: the same bytes as the CPU's, and the same decoded sums ---------------- */

enum { CN = 5003 };

static void case_encode(void) {
  float *x = calloc(CN, sizeof(float));
  unsigned char *msg = calloc(8 * CN, 1), *gmsg = calloc(8 * CN, 1);
  fill_random(x, CN, 1.0f);
  float *dx = dev(x, sizeof(float) * CN);
  void *dm = dev(NULL, 8 * CN);
  for (int op = 0; op < DT_CODEC_COUNT; op++) {
    dt_codec c;
    CHECK_OK(dt_codec_init(&c, op, CN, 0.02, 16));
    CHECK_OK(dt_be_encode(cpu, &c, x, 5, 77, msg));
    CHECK_OK(dt_be_encode(gpu, &c, dx, 5, 77, dm));
    CHECK_OK(dt_be_download(gpu, gmsg, dm, c.bytes));
    CHECK(memcmp(msg, gmsg, c.bytes) == 0, "%s: the GPU's message differs from the CPU's", dt_codec_names[op]);
  }
  dt_be_free(gpu, dx), dt_be_free(gpu, dm);
  free(x), free(msg), free(gmsg);
}

static void case_decode_axpy(void) {
  float *x = calloc(CN, sizeof(float)), *y = calloc(CN, sizeof(float));
  unsigned char *msg = calloc(8 * CN, 1);
  fill_random(x, CN, 1.0f);
  fill_random(y, CN, 1.0f);
  float *dy = dev(y, sizeof(float) * CN);
  void *dm = dev(NULL, 8 * CN);
  for (int op = 0; op < DT_CODEC_COUNT; op++) {
    dt_codec c;
    CHECK_OK(dt_codec_init(&c, op, CN, 0.02, 16));
    CHECK_OK(dt_be_encode(cpu, &c, x, 5, 77, msg));
    CHECK_OK(dt_be_upload(gpu, dm, msg, c.bytes)); /* the same message on both sides */
    CHECK_OK(dt_be_decode_axpy(cpu, &c, msg, 5, 77, 0.25f, y));
    CHECK_OK(dt_be_decode_axpy(gpu, &c, dm, 5, 77, 0.25f, dy));
    check_exact(dt_codec_names[op], y, dy, CN);
  }
  dt_be_free(gpu, dy), dt_be_free(gpu, dm);
  free(x), free(y), free(msg);
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

/* convolutions through im2col + GEMM (more than 16 filters of more than 32 taps), with padding
 * and stride, the second needing its input's gradient */
static void gemm_conv_model(dt_model_spec *s) {
  memset(s, 0, sizeof *s);
  *s = (dt_model_spec){.in_channels = 4, .in_height = 9, .in_width = 9, .num_classes = 3, .num_layers = 6};
  s->layers[0] = (dt_layer_spec){.kind = DT_LAYER_CONV2D, .out_channels = 20, .kernel_size = 3, .stride = 1, .padding = 1};
  s->layers[1] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s->layers[2] = (dt_layer_spec){.kind = DT_LAYER_CONV2D, .out_channels = 18, .kernel_size = 2, .stride = 2, .padding = 1};
  s->layers[3] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s->layers[4] = (dt_layer_spec){.kind = DT_LAYER_FLATTEN};
  s->layers[5] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 3};
}

/* Normalisation, average pooling, bias-free layers and residual blocks on 3×10×10 inputs:
 * conv(→4, bias false) → batchnorm → relu → [conv → groupnorm(2) → relu → conv] + identity →
 * [conv(→8, stride 2, bias false) → batchnorm → relu → conv] + projection (1×1 conv + batchnorm)
 * → avgpool 2 → relu → dropout → global_avgpool → flatten → linear(→6, bias false) → relu →
 * linear(→5). */
static void norm_model(dt_model_spec *s) {
  memset(s, 0, sizeof *s);
  *s = (dt_model_spec){.in_channels = 3, .in_height = 10, .in_width = 10, .num_classes = 5};
  const dt_layer_spec ls[] = {
      {.kind = DT_LAYER_CONV2D, .out_channels = 4, .kernel_size = 3, .stride = 1, .padding = 1, .no_bias = 1},
      {.kind = DT_LAYER_BATCHNORM2D},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_RESIDUAL, .children = 4},
      {.kind = DT_LAYER_CONV2D, .out_channels = 4, .kernel_size = 3, .stride = 1, .padding = 1},
      {.kind = DT_LAYER_GROUPNORM, .groups = 2},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_CONV2D, .out_channels = 4, .kernel_size = 3, .stride = 1, .padding = 1},
      {.kind = DT_LAYER_RESIDUAL, .children = 4},
      {.kind = DT_LAYER_CONV2D, .out_channels = 8, .kernel_size = 3, .stride = 2, .padding = 1, .no_bias = 1},
      {.kind = DT_LAYER_BATCHNORM2D, .momentum = 0.2},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_CONV2D, .out_channels = 8, .kernel_size = 3, .stride = 1, .padding = 1},
      {.kind = DT_LAYER_AVGPOOL2D, .kernel_size = 2},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_DROPOUT, .p = 0.2},
      {.kind = DT_LAYER_GLOBAL_AVGPOOL},
      {.kind = DT_LAYER_FLATTEN},
      {.kind = DT_LAYER_LINEAR, .out_features = 6, .no_bias = 1},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_LINEAR, .out_features = 5},
  };
  s->num_layers = (int)(sizeof ls / sizeof *ls);
  memcpy(s->layers, ls, sizeof ls);
}

/* Residual blocks on the input itself (sample-major, while the blocks' convolutions write
 * channel-major): an identity skip around conv → groupnorm(3), then a stride-2 projection with
 * group norm; overlapping average pools (k 3, stride 2 over 5×5), and no batch statistics, so
 * evaluation's forward is training's (the finite-difference check uses it). */
static void layout_model(dt_model_spec *s) {
  memset(s, 0, sizeof *s);
  *s = (dt_model_spec){.in_channels = 3, .in_height = 9, .in_width = 9, .num_classes = 4};
  const dt_layer_spec ls[] = {
      {.kind = DT_LAYER_RESIDUAL, .children = 2},
      {.kind = DT_LAYER_CONV2D, .out_channels = 3, .kernel_size = 3, .stride = 1, .padding = 1, .no_bias = 1},
      {.kind = DT_LAYER_GROUPNORM, .groups = 3},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_RESIDUAL, .children = 3},
      {.kind = DT_LAYER_CONV2D, .out_channels = 6, .kernel_size = 3, .stride = 2, .padding = 1},
      {.kind = DT_LAYER_GROUPNORM, .groups = 2},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_AVGPOOL2D, .kernel_size = 3, .stride = 2},
      {.kind = DT_LAYER_FLATTEN},
      {.kind = DT_LAYER_LINEAR, .out_features = 4},
  };
  s->num_layers = (int)(sizeof ls / sizeof *ls);
  memcpy(s->layers, ls, sizeof ls);
}

/* Direct convolutions of every kernel the shape picks (layer_conv2d.cu): a 3×3 over one channel
 * with 9 filters (3 per thread forward), then 1×1 convolutions over 9 and 25 channels (as many
 * taps as a one-channel 3×3 or 5×5, which must not take those shapes' weight-gradient path),
 * relus fused into the convolutions and into a tiling max pool's backward. */
static void direct_model(dt_model_spec *s) {
  memset(s, 0, sizeof *s);
  *s = (dt_model_spec){.in_channels = 1, .in_height = 12, .in_width = 12, .num_classes = 4};
  const dt_layer_spec ls[] = {
      {.kind = DT_LAYER_CONV2D, .out_channels = 9, .kernel_size = 3, .stride = 1},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_CONV2D, .out_channels = 25, .kernel_size = 1, .stride = 1},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_CONV2D, .out_channels = 3, .kernel_size = 1, .stride = 1},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_MAXPOOL2D, .kernel_size = 2},
      {.kind = DT_LAYER_FLATTEN},
      {.kind = DT_LAYER_LINEAR, .out_features = 4},
  };
  s->num_layers = (int)(sizeof ls / sizeof *ls);
  memcpy(s->layers, ls, sizeof ls);
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
  size_t P, d, ps, xs, ys, B, bs; /* B: buffers per node, bs their stride (0: none) */
  float *theta, *x;
  int32_t *y, *ey;
  float *ex;
} model_case;

/* gradients (and losses) of nodes [first, first + count) on backend be, moving the nodes' buffers
 * (NULL: none); dropout streams fresh (or from `states` where not NULL), or none with `dropout` 0 */
static int x_padded_calls; /* gradients_from's calls say their batches are zero-padded (dt_node_batch.x_padded) */

static void gradients_from(dt_backend *be, model_case *mc, int first, int count, const float *theta, float *bufs, const float *x,
                           const int32_t *y, float *grad, float *loss, const int *batch, int dropout, const dt_rng *states) {
  void *plan = NULL;
  CHECK_OK(dt_be_plan_create(be, mc->m, MAXB, count, NODES, &plan));
  dt_rng drop[NODES];
  for (int l = 0; l < count; l++)
    if (states != NULL) drop[l] = states[first + l];
    else dt_rng_init(&drop[l], 17, DT_RNG_DROPOUT, (uint64_t)(first + l));
  const dt_node_batch nb = {.count = count, .theta = theta + first * mc->ps, .theta_stride = mc->ps,
                            .buffers = bufs != NULL ? bufs + first * mc->bs : NULL, .buffers_stride = mc->bs,
                            .grad = grad + first * mc->ps, .grad_stride = mc->ps, .x = x + first * mc->xs,
                            .x_stride = mc->xs, .y = y + first * mc->ys, .y_stride = mc->ys, .batch = batch + first,
                            .loss = loss + first, .dropout = dropout ? drop : NULL, .x_padded = x_padded_calls};
  CHECK_OK(dt_be_model_gradients(be, plan, &nb));
  dt_be_plan_free(be, plan);
}

static void gradients_ex(dt_backend *be, model_case *mc, int first, int count, const float *theta, float *bufs, const float *x,
                         const int32_t *y, float *grad, float *loss, const int *batch, int dropout) {
  gradients_from(be, mc, first, count, theta, bufs, x, y, grad, loss, batch, dropout, NULL);
}

static void gradients(dt_backend *be, model_case *mc, int first, int count, const float *theta, float *bufs, const float *x,
                      const int32_t *y, float *grad, float *loss, const int *batch) {
  gradients_ex(be, mc, first, count, theta, bufs, x, y, grad, loss, batch, 1);
}

static size_t differing(const float *ga, const float *gb, size_t n);

/* One plan's later calls replay a CUDA graph captured of an earlier one (nn.cu's run_captured):
 * five calls with one set of pointers (the plan's first call and a new key's first call run
 * directly, the third is captured, the fourth and fifth replay it, the fifth with other batch
 * sizes), the nodes' dropout streams moving on from call to call as a run's do: each call gives
 * the bits of a fresh plan's direct call from the same states. */
static void check_replays(model_case *mc, const char *name, const float *gtheta, const float *bufs0, const float *gx, const int32_t *gy,
                          const int *batch) {
  const size_t np = NODES * mc->ps, nb = NODES * mc->bs;
  float *g0 = dev(NULL, sizeof(float) * np), *g1 = dev(NULL, sizeof(float) * np);
  float *gb = mc->B > 0 ? dev(bufs0, sizeof(float) * nb) : NULL, *gb2 = mc->B > 0 ? dev(bufs0, sizeof(float) * nb) : NULL;
  static const int other[NODES] = {9, 9, 3, 0, 9, 2, 9};
  float loss0[NODES] = {0}, loss1[NODES] = {0};
  void *plan = NULL;
  CHECK_OK(dt_be_plan_create(gpu, mc->m, MAXB, NODES, NODES, &plan));
  dt_rng drop[NODES];
  for (int l = 0; l < NODES; l++) dt_rng_init(&drop[l], 17, DT_RNG_DROPOUT, (uint64_t)l);
  for (int call = 0; call < 5; call++) {
    dt_rng start[NODES];
    memcpy(start, drop, sizeof start);
    const int *bt = call == 4 ? other : batch;
    if (gb != NULL) CHECK_OK(dt_be_upload(gpu, gb, bufs0, sizeof(float) * nb));
    const dt_node_batch b = {.count = NODES, .theta = gtheta, .theta_stride = mc->ps, .buffers = gb, .buffers_stride = mc->bs,
                             .grad = call == 0 ? g0 : g1, .grad_stride = mc->ps, .x = gx, .x_stride = mc->xs, .y = gy,
                             .y_stride = mc->ys, .batch = bt, .loss = loss1, .dropout = drop};
    CHECK_OK(dt_be_model_gradients(gpu, plan, &b));
    if (gb2 != NULL) CHECK_OK(dt_be_upload(gpu, gb2, bufs0, sizeof(float) * nb));
    float *ref = call == 0 ? g1 : g0;
    gradients_from(gpu, mc, 0, NODES, gtheta, gb2, gx, gy, ref, loss0, bt, 1, start);
    const size_t differ = differing(call == 0 ? g0 : g1, ref, np);
    CHECK(differ == 0, "%s: call %d of one plan gave %zu gradient values other than a fresh plan's", name, call, differ);
    CHECK(memcmp(loss0, loss1, sizeof loss0) == 0, "%s: call %d of one plan gave losses other than a fresh plan's", name, call);
    if (mc->B > 0) {
      const size_t moved = differing(gb, gb2, nb);
      CHECK(moved == 0, "%s: call %d of one plan moved %zu running statistics otherwise than a fresh plan", name, call, moved);
    }
  }
  dt_be_plan_free(gpu, plan);
  dt_be_free(gpu, g0), dt_be_free(gpu, g1), dt_be_free(gpu, gb), dt_be_free(gpu, gb2);
}

/* Buffers as a trained model has them: running means near 0, variances near 1, not exactly. */
static float *fresh_buffers(const model_case *mc) {
  if (mc->B == 0) return NULL;
  float *b = calloc(NODES * mc->bs, sizeof(float));
  for (int l = 0; l < NODES; l++) {
    dt_model_init_buffers(mc->m, b + l * mc->bs);
    for (size_t i = 0; i < mc->B; i++) b[l * mc->bs + i] += 0.2f * (dt_rng_float(&rng) - 0.5f);
  }
  return b;
}

/* The mean training loss of node 0's full batch at the GPU's current parameters: evaluation's
 * forward (eval mode), or with `train` a training call without dropout (batch statistics; the
 * buffers it moves are a scratch copy). */
static double loss_at(model_case *mc, const float *gtheta, const float *gbufs, const float *gx, const int32_t *gy, int train,
                      void *plan_eval) {
  if (train) {
    const int full = MAXB;
    float loss = 0.0f, *gb = NULL, *gg = dev(NULL, sizeof(float) * mc->ps);
    if (mc->B > 0) {
      gb = dev(NULL, sizeof(float) * mc->bs);
      CHECK_OK(dt_be_copy(gpu, mc->bs, gbufs, gb));
    }
    gradients_ex(gpu, mc, 0, 1, gtheta, gb, gx, gy, gg, &loss, &full, 0);
    dt_be_free(gpu, gb), dt_be_free(gpu, gg);
    return loss;
  }
  double ls = 0;
  long c = 0;
  const dt_node_eval e = {.count = 1, .theta = gtheta, .theta_stride = mc->ps, .buffers = gbufs, .buffers_stride = mc->bs,
                          .x = gx, .y = gy, .n = MAXB, .loss_sum = &ls, .correct = &c};
  CHECK_OK(dt_be_model_evaluate(gpu, plan_eval, &e));
  return ls / MAXB;
}

/* Finite differences of the GPU's loss against its gradient (no dropout), on node 0's full batch:
 * d/dθ_i of the mean NLL over the batch, at 12 random parameters. A network of relus, pools and
 * norms is piecewise smooth with kinks everywhere at small scales (measured on the layouts model,
 * one parameter: central differences of 0.0029, -0.00075, 0.0016, 0.0022, 0.0014, 0.0008 and
 * -0.0003 at steps 1e-1 down to 1.4e-4, its gradient -0.0003), so the check takes the step h,
 * h/3 and h/9 and passes where one of them agrees: a wrong gradient agrees with none. Below h/9
 * the loss's float32 rounding (about 1e-7 of it) outgrows the tolerance. */
static void fd_check(model_case *mc, float *gtheta, const float *gbufs, const float *gx, const int32_t *gy, int train, float step) {
  void *pe = NULL;
  CHECK_OK(dt_be_plan_create(gpu, mc->m, MAXB, 1, 1, &pe));
  float l0, *gg = dev(NULL, sizeof(float) * mc->ps), *gb = NULL;
  if (mc->B > 0) {
    gb = dev(NULL, sizeof(float) * mc->bs);
    CHECK_OK(dt_be_copy(gpu, mc->bs, gbufs, gb));
  }
  const int full = MAXB;
  gradients_ex(gpu, mc, 0, 1, gtheta, gb, gx, gy, gg, &l0, &full, 0);
  float *g = down(gg, mc->P), *th = down(gtheta, mc->P);
  for (int t = 0; t < 12; t++) {
    const size_t i = dt_rng_below(&rng, (uint32_t)mc->P);
    const double tol = 2e-3 + 2e-2 * fabs(g[i]);
    double fd[3];
    int agrees = 0;
    for (int k = 0; k < 3; k++) {
      const float h = step * fmaxf(1.0f, fabsf(th[i])) / (k == 0 ? 1.0f : k == 1 ? 3.0f : 9.0f);
      double f[2];
      for (int sgn = 0; sgn < 2; sgn++) {
        const float v = th[i] + (sgn ? -h : h);
        CHECK_OK(dt_be_upload(gpu, gtheta + i, &v, sizeof v));
        f[sgn] = loss_at(mc, gtheta, gbufs, gx, gy, train, pe);
      }
      fd[k] = (f[0] - f[1]) / (2.0 * h);
      agrees |= fabs(fd[k] - g[i]) <= tol;
    }
    CHECK_OK(dt_be_upload(gpu, gtheta + i, &th[i], sizeof th[i]));
    CHECK(agrees, "%s: parameter %zu: finite differences %.6g, %.6g, %.6g (steps h, h/3, h/9), gradient %.6g", mc->name, i, fd[0],
          fd[1], fd[2], g[i]);
  }
  free(g), free(th);
  dt_be_free(gpu, gg), dt_be_free(gpu, gb);
  dt_be_plan_free(gpu, pe);
}

/* Compares two device arrays of every node's buffers bit for bit; returns the differing count. */
static size_t differing(const float *ga, const float *gb, size_t n) {
  float *a = down(ga, n), *b = down(gb, n);
  size_t d = 0;
  for (size_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], sizeof(float)) != 0;
  free(a), free(b);
  return d;
}

static void test_model(const char *name, const dt_model_spec *spec) {
  model_case mc = {.name = name};
  CHECK_OK(dt_model_create(spec, &mc.m));
  if (mc.m == NULL) return;
  mc.P = dt_model_num_params(mc.m);
  mc.d = dt_model_input_size(mc.m);
  mc.ps = dt_slab_stride(mc.P);
  mc.B = dt_model_num_buffers(mc.m);
  mc.bs = mc.B > 0 ? dt_slab_stride(mc.B) : 0;
  mc.xs = dt_slab_stride(MAXB * mc.d);
  mc.ys = 16;
  const size_t np = NODES * mc.ps, nx = NODES * mc.xs, ny = NODES * mc.ys, nb = NODES * mc.bs;
  float *theta = calloc(np, sizeof(float)), *x = calloc(nx, sizeof(float)), *grad = calloc(np, sizeof(float));
  int32_t *y = calloc(ny, sizeof(int32_t));
  for (int l = 0; l < NODES; l++) {
    dt_model_init_params(mc.m, 100 + (uint64_t)l, theta + l * mc.ps);
    fill_random(x + l * mc.xs, MAXB * mc.d, 1.0f);
    for (int s = 0; s < MAXB; s++) y[l * mc.ys + s] = (int32_t)dt_rng_below(&rng, (uint32_t)spec->num_classes);
  }
  float *bufs0 = fresh_buffers(&mc), *bufc = NULL;
  if (mc.B > 0) {
    bufc = malloc(sizeof(float) * nb);
    memcpy(bufc, bufs0, sizeof(float) * nb);
  }
  const int batch[NODES] = {9, 4, 0, 9, 1, 7, 9}; /* partial batches (one of a single sample) and an idle node */
  float loss_c[NODES] = {0}, loss_g[NODES] = {0}, loss_g2[NODES] = {0};
  gradients(cpu, &mc, 0, NODES, theta, bufc, x, y, grad, loss_c, batch);

  float *gtheta = dev(theta, sizeof(float) * np), *gx = dev(x, sizeof(float) * nx), *ggrad = dev(NULL, sizeof(float) * np);
  float *ggrad2 = dev(NULL, sizeof(float) * np);
  float *gbufs = mc.B > 0 ? dev(bufs0, sizeof(float) * nb) : NULL, *gbufs2 = mc.B > 0 ? dev(bufs0, sizeof(float) * nb) : NULL;
  int32_t *gy = dev(y, sizeof(int32_t) * ny);
  gradients(gpu, &mc, 0, NODES, gtheta, gbufs, gx, gy, ggrad, loss_g, batch);
  const int deep = strncmp(name, "resnet", 6) == 0 || strncmp(name, "vgg", 3) == 0;
  char what[96];
  for (int l = 0; l < NODES; l++) {
    if (batch[l] == 0) continue;
    snprintf(what, sizeof what, "%s: node %d gradient", name, l);
    (deep ? check_close_norm : check_close)(what, grad + l * mc.ps, ggrad + l * mc.ps, mc.P);
    CHECK_CLOSE(loss_g[l], loss_c[l], 1e-5, 1e-6);
    if (mc.B > 0) {
      snprintf(what, sizeof what, "%s: node %d running statistics", name, l);
      (deep ? check_close_norm : check_close)(what, bufc + l * mc.bs, gbufs + l * mc.bs, mc.B);
    }
  }
  float *untouched = down(ggrad + 2 * mc.ps, mc.P);
  int zero = 1;
  for (size_t i = 0; i < mc.P; i++) zero &= untouched[i] == 0.0f;
  CHECK(zero, "%s: the gradient of a node with batch 0 was written", name);
  free(untouched);
  if (mc.B > 0) {
    snprintf(what, sizeof what, "%s: the running statistics of a node with batch 0", name);
    check_exact(what, bufs0 + 2 * mc.bs, gbufs + 2 * mc.bs, mc.B);
  }

  /* the same nodes as two calls (3 + 4): the same bits, so results do not depend on placement */
  gradients(gpu, &mc, 0, 3, gtheta, gbufs2, gx, gy, ggrad2, loss_g2, batch);
  gradients(gpu, &mc, 3, 4, gtheta, gbufs2, gx, gy, ggrad2, loss_g2, batch);
  size_t differ = differing(ggrad, ggrad2, np);
  CHECK(differ == 0, "%s: %zu gradient values change when the nodes are split 3 + 4", name, differ);
  CHECK(memcmp(loss_g, loss_g2, sizeof loss_g) == 0, "%s: losses change when the nodes are split 3 + 4", name);
  if (mc.B > 0) {
    differ = differing(gbufs, gbufs2, nb);
    CHECK(differ == 0, "%s: %zu running statistics change when the nodes are split 3 + 4", name, differ);
    CHECK_OK(dt_be_upload(gpu, gbufs2, bufs0, sizeof(float) * nb));
  }
  /* and again: the same bits */
  gradients(gpu, &mc, 0, NODES, gtheta, gbufs2, gx, gy, ggrad2, loss_g2, batch);
  differ = differing(ggrad, ggrad2, np);
  CHECK(differ == 0, "%s: a second call gave %zu other gradient values", name, differ);
  if (mc.B > 0) {
    differ = differing(gbufs, gbufs2, nb);
    CHECK(differ == 0, "%s: a second call gave %zu other running statistics", name, differ);
  }

  /* batches padded with zeros, read in place (x_padded): the bits of the copying call */
  {
    float *xz = malloc(sizeof(float) * nx);
    int32_t *yz = malloc(sizeof(int32_t) * ny);
    memcpy(xz, x, sizeof(float) * nx), memcpy(yz, y, sizeof(int32_t) * ny);
    for (int l = 0; l < NODES; l++) {
      if (batch[l] == 0) continue;
      memset(xz + l * mc.xs + (size_t)batch[l] * mc.d, 0, sizeof(float) * (size_t)(MAXB - batch[l]) * mc.d);
      memset(yz + l * mc.ys + batch[l], 0, sizeof(int32_t) * (size_t)(MAXB - batch[l]));
    }
    float *gxz = dev(xz, sizeof(float) * nx);
    int32_t *gyz = dev(yz, sizeof(int32_t) * ny);
    if (mc.B > 0) CHECK_OK(dt_be_upload(gpu, gbufs2, bufs0, sizeof(float) * nb));
    x_padded_calls = 1;
    gradients(gpu, &mc, 0, NODES, gtheta, gbufs2, gxz, gyz, ggrad2, loss_g2, batch);
    x_padded_calls = 0;
    differ = differing(ggrad, ggrad2, np);
    CHECK(differ == 0, "%s: %zu gradient values change when the padded batches are read in place", name, differ);
    CHECK(memcmp(loss_g, loss_g2, sizeof loss_g) == 0, "%s: losses change when the padded batches are read in place", name);
    if (mc.B > 0) {
      differ = differing(gbufs, gbufs2, nb);
      CHECK(differ == 0, "%s: %zu running statistics change when the padded batches are read in place", name, differ);
    }
    free(xz), free(yz);
    dt_be_free(gpu, gxz), dt_be_free(gpu, gyz);
  }

  check_replays(&mc, name, gtheta, bufs0, gx, gy, batch);

  /* finite differences: the small models (deep ones cross ReLU kinks at any useful step); a
   * normalisation couples a whole group, so a step moves many ReLU inputs: a smaller one there */
  const int batch_stats = strcmp(name, "norms") == 0, normed = batch_stats || strcmp(name, "layouts") == 0;
  if (strcmp(name, "logreg") == 0 || strcmp(name, "seed cnn") == 0 || normed) {
    if (mc.B > 0) CHECK_OK(dt_be_upload(gpu, gbufs, bufs0, sizeof(float) * nb));
    fd_check(&mc, gtheta, gbufs, gx, gy, batch_stats, normed ? 2e-3f : 1e-2f);
  }

  void *all[] = {gtheta, gx, ggrad, ggrad2, gy, gbufs, gbufs2};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) dt_be_free(gpu, all[i]);
  free(theta), free(x), free(grad), free(y), free(bufs0), free(bufc);
  dt_model_free(mc.m);
}

/* Evaluation: every node on one shared set, in chunks of 10 (a partial last chunk). */
static void test_evaluate(const char *name, const dt_model_spec *spec) {
  model_case mc = {.name = name};
  CHECK_OK(dt_model_create(spec, &mc.m));
  if (mc.m == NULL) return;
  mc.P = dt_model_num_params(mc.m);
  mc.d = dt_model_input_size(mc.m);
  mc.ps = dt_slab_stride(mc.P);
  mc.B = dt_model_num_buffers(mc.m);
  mc.bs = mc.B > 0 ? dt_slab_stride(mc.B) : 0;
  const size_t np = NODES * mc.ps;
  float *theta = calloc(np, sizeof(float)), *bufs = fresh_buffers(&mc);
  for (int l = 0; l < NODES; l++) dt_model_init_params(mc.m, 200 + (uint64_t)l, theta + l * mc.ps);
  float *gtheta = dev(theta, sizeof(float) * np), *gbufs = mc.B > 0 ? dev(bufs, sizeof(float) * NODES * mc.bs) : NULL;
  float *ex = malloc(sizeof(float) * EVAL_N * mc.d);
  int32_t ey[EVAL_N];
  fill_random(ex, EVAL_N * mc.d, 1.0f);
  for (int i = 0; i < EVAL_N; i++) ey[i] = (int32_t)dt_rng_below(&rng, (uint32_t)spec->num_classes);
  float *gex = dev(ex, sizeof(float) * EVAL_N * mc.d);
  int32_t *gey = dev(ey, sizeof ey);
  double ls_c[NODES] = {0}, ls_g[NODES] = {0};
  long cor_c[NODES] = {0}, cor_g[NODES] = {0};
  void *pc = NULL, *pg = NULL;
  CHECK_OK(dt_be_plan_create(cpu, mc.m, 10, NODES, NODES, &pc));
  CHECK_OK(dt_be_plan_create(gpu, mc.m, 10, NODES, NODES, &pg));
  const dt_node_eval ec = {.count = NODES, .theta = theta, .theta_stride = mc.ps, .buffers = bufs, .buffers_stride = mc.bs,
                           .x = ex, .y = ey, .n = EVAL_N, .loss_sum = ls_c, .correct = cor_c};
  const dt_node_eval eg = {.count = NODES, .theta = gtheta, .theta_stride = mc.ps, .buffers = gbufs, .buffers_stride = mc.bs,
                           .x = gex, .y = gey, .n = EVAL_N, .loss_sum = ls_g, .correct = cor_g};
  CHECK_OK(dt_be_model_evaluate(cpu, pc, &ec));
  CHECK_OK(dt_be_model_evaluate(gpu, pg, &eg));
  for (int l = 0; l < NODES; l++) {
    CHECK_CLOSE(ls_g[l], ls_c[l], 1e-5, 1e-6);
    CHECK(cor_g[l] == cor_c[l], "%s: node %d evaluation hits gpu %ld cpu %ld", name, l, cor_g[l], cor_c[l]);
  }
  /* the same plan's later calls (the third captured as a graph, the fourth replaying it) add the
   * first call's bits again */
  for (int call = 1; call < 4; call++) {
    double ls_r[NODES] = {0};
    long cor_r[NODES] = {0};
    dt_node_eval er = eg;
    er.loss_sum = ls_r, er.correct = cor_r;
    CHECK_OK(dt_be_model_evaluate(gpu, pg, &er));
    CHECK(memcmp(ls_r, ls_g, sizeof ls_r) == 0 && memcmp(cor_r, cor_g, sizeof cor_r) == 0,
          "%s: evaluation call %d of one plan differs from its first", name, call);
  }
  dt_be_plan_free(cpu, pc);
  dt_be_plan_free(gpu, pg);

  dt_be_free(gpu, gtheta), dt_be_free(gpu, gex), dt_be_free(gpu, gey), dt_be_free(gpu, gbufs);
  free(theta), free(ex), free(bufs);
  dt_model_free(mc.m);
}

/* Every model case: the seed CNN, every layer kind and layout, softmax regression (the shared
 * input path), the larger CNN and the zoo's named models (ResNet-20 with both norms, VGG-11,
 * LeNet-5, the MLP). */
static void each_model(void (*fn)(const char *, const dt_model_spec *)) {
  dt_model_spec spec;
  dt_model_spec_seed_cnn(&spec, 3, 5, 64);
  fn("seed cnn", &spec);
  mixed_model(&spec);
  fn("mixed", &spec);
  logreg_model(&spec);
  fn("logreg", &spec);
  large_cnn(&spec);
  fn("large cnn", &spec);
  gemm_conv_model(&spec);
  fn("gemm conv", &spec);
  direct_model(&spec);
  fn("direct shapes", &spec);
  norm_model(&spec);
  fn("norms", &spec);
  layout_model(&spec);
  fn("layouts", &spec);
  dt_model_spec_named(&spec, DT_MODEL_RESNET20, DT_NORM_BATCH, 2, 0, 3, 16, 16, 10);
  fn("resnet20 batch norm", &spec);
  dt_model_spec_named(&spec, DT_MODEL_RESNET20, DT_NORM_GROUP, 2, 0, 3, 16, 16, 10);
  fn("resnet20 group norm", &spec);
  dt_model_spec_named(&spec, DT_MODEL_VGG11, DT_NORM_BATCH, 2, 0, 3, 32, 32, 10);
  fn("vgg11 batch norm", &spec);
  dt_model_spec_named(&spec, DT_MODEL_LENET5, DT_NORM_BATCH, 2, 0, 3, 32, 32, 10);
  fn("lenet5", &spec);
  dt_model_spec_named(&spec, DT_MODEL_MLP, DT_NORM_BATCH, 2, 48, 1, 12, 12, 10);
  fn("mlp", &spec);
}

/* Plans of every size the runner asks for: one node, a group's worth, and more nodes in the run
 * than on this rank. */
static void plans(const char *name, const dt_model_spec *spec) {
  dt_model *m = NULL;
  CHECK_OK(dt_model_create(spec, &m));
  if (m == NULL) return;
  const int shapes[][3] = {{1, 1, 1}, {64, 3, 3}, {9, 7, 1000}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    void *plan = NULL;
    dt_status st = dt_be_plan_create(gpu, m, shapes[i][0], shapes[i][1], shapes[i][2], &plan);
    CHECK(st == DT_OK && plan != NULL, "%s: plan_create(max_batch %d, nodes %d, run_nodes %d) failed: %s", name,
          shapes[i][0], shapes[i][1], shapes[i][2], dt_error_message());
    dt_error_clear();
    dt_be_plan_free(gpu, plan);
  }
  dt_model_free(m);
}

static void case_plan_create(void) { each_model(plans); }
static void case_plan_free(void) { dt_be_plan_free(gpu, NULL); }
/* gradients against the CPU, split-invariance, repeatability, finite differences (test_model) */
static void case_model_gradients(void) { each_model(test_model); }
static void case_model_evaluate(void) { each_model(test_evaluate); }

/* ---- the case list, generated from the op list ---------------------------------------------- */

#define CASE_ROW(name, params, args) {#name, offsetof(dt_backend_ops, name), case_##name},
static const struct op_case {
  const char *name;
  size_t offset; /* of the op in dt_backend_ops */
  void (*run)(void);
} op_cases[] = {DT_BACKEND_OPS(CASE_ROW) DT_BACKEND_VOID_OPS(CASE_ROW)};

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
  vectors_setup();
  for (size_t i = 0; i < sizeof op_cases / sizeof *op_cases; i++) {
    const struct op_case *c = &op_cases[i];
    void *const *entry = (void *const *)((const char *)gpu->ops + c->offset);
    if (*entry == NULL) {
      printf("op %-16s unsupported by the %s backend: skipped\n", c->name, gpu->name);
      continue;
    }
    const int before = check_failures;
    c->run();
    printf("op %-16s %s\n", c->name, check_failures == before ? "ok" : "FAILED");
  }
  vectors_free();
  dt_backend_free(gpu);
  dt_backend_free(cpu);
  return check_report("test_gpu_ops");
}
