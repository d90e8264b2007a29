/* Batch and group normalisation on one node's batch (NCHW). Statistics are summed in double in
 * a fixed order (mean first, then the centred second moment; eight lanes per plane, added up
 * last), so they do not depend on threads and stay accurate over large planes; the per-element
 * arithmetic is dt/formulas.h's. */
#include <math.h>
#include <string.h>

#include "cpu_impl.h"
#include "dt/formulas.h"

/* Statistic groups: batchnorm2d one per channel, groupnorm one per (sample, group). */
static size_t stat_groups(const dt_norm_shape *s, int batch) {
  return s->kind == DT_LAYER_BATCHNORM2D ? (size_t)s->c : (size_t)batch * s->groups;
}

size_t dt_cpu_norm_stats(const dt_norm_shape *s, int batch) { return 2 * stat_groups(s, batch); }

/* Group q's elements: `runs` runs of `len` floats, run r at base + r·step; each run is whole
 * planes (a channel per plane), channel c0 first. */
typedef struct span {
  size_t base, step, len;
  int runs, c0;
} span;

static span group_span(const dt_norm_shape *s, int batch, size_t q) {
  const size_t chw = (size_t)s->c * s->plane;
  if (s->kind == DT_LAYER_BATCHNORM2D) return (span){.base = q * s->plane, .step = chw, .len = s->plane, .runs = batch, .c0 = (int)q};
  const int per_group = s->c / s->groups;
  const size_t n = q / (size_t)s->groups, g = q % (size_t)s->groups;
  return (span){.base = n * chw + g * per_group * s->plane, .step = 0, .len = per_group * s->plane, .runs = 1,
                .c0 = (int)g * per_group};
}

/* Double sums in LANES independent lanes (element i of a plane goes to lane i mod LANES), added
 * up in one fixed order: the same bits on every run, and vectorised. */
enum { LANES = 8 };
typedef struct lanes {
  double v[LANES];
} lanes;

static double total(const lanes *l) {
  return ((l->v[0] + l->v[1]) + (l->v[2] + l->v[3])) + ((l->v[4] + l->v[5]) + (l->v[6] + l->v[7]));
}

/* sum += Σ x; with centre: Σ (x − centre)² instead */
DT_CLONES
static void plane_moment(lanes *acc, const float *restrict x, size_t n, int centred, double centre) {
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int l = 0; l < LANES; l++) {
      const double d = centred ? x[i + l] - centre : x[i + l];
      acc->v[l] += centred ? d * d : d;
    }
  for (int l = 0; i < n; i++, l++) {
    const double d = centred ? x[i] - centre : x[i];
    acc->v[l] += centred ? d * d : d;
  }
}

/* a += Σ dy·gamma, b += Σ (dy·gamma)·x̂ over one plane (gamma 1 for the affine gradients) */
DT_CLONES
static void plane_grad_sums(lanes *a, lanes *b, const float *restrict x, const float *restrict dy, size_t n, float mean,
                            float invstd, float gamma) {
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int l = 0; l < LANES; l++) {
      const double dyg = (double)dy[i + l] * gamma;
      a->v[l] += dyg, b->v[l] += dyg * dt_f_norm_hat(x[i + l], mean, invstd);
    }
  for (int l = 0; i < n; i++, l++) {
    const double dyg = (double)dy[i] * gamma;
    a->v[l] += dyg, b->v[l] += dyg * dt_f_norm_hat(x[i], mean, invstd);
  }
}

DT_CLONES
static void plane_apply(float *restrict y, const float *restrict x, size_t n, float mean, float invstd, float gamma, float beta) {
  for (size_t i = 0; i < n; i++) y[i] = dt_f_norm_apply(dt_f_norm_hat(x[i], mean, invstd), gamma, beta);
}

DT_CLONES
static void plane_back(float *restrict dx, const float *restrict x, const float *restrict dy, size_t n, float gamma, float mean,
                       float invstd, float m1, float m2) {
  for (size_t i = 0; i < n; i++) dx[i] = dt_f_norm_back(dy[i] * gamma, dt_f_norm_hat(x[i], mean, invstd), invstd, m1, m2);
}

/* The planes of group q's span: plane p of run r starts at at(sp, r, p) and has channel c0 + p. */
static size_t planes(const dt_norm_shape *s, span sp) { return sp.len / s->plane; }
static size_t at(const dt_norm_shape *s, span sp, int r, size_t p) { return sp.base + r * sp.step + p * s->plane; }

static void moments(const dt_norm_shape *s, const float *x, span sp, double *mean, double *var) {
  lanes sum = {{0}}, sq = {{0}};
  for (int r = 0; r < sp.runs; r++)
    for (size_t p = 0; p < planes(s, sp); p++) plane_moment(&sum, x + at(s, sp, r, p), s->plane, 0, 0.0);
  const double n = (double)sp.len * sp.runs, m = total(&sum) / n;
  for (int r = 0; r < sp.runs; r++)
    for (size_t p = 0; p < planes(s, sp); p++) plane_moment(&sq, x + at(s, sp, r, p), s->plane, 1, m);
  *mean = m;
  *var = total(&sq) / n;
}

void dt_cpu_norm_forward(const dt_norm_shape *s, int batch, int train, const float *x, float *y, const float *params,
                         float *buffers, float *stats) {
  const float *gamma = params + s->w_off, *beta = params + s->b_off;
  const int running = s->kind == DT_LAYER_BATCHNORM2D;
  float *rmean = running && buffers != NULL ? buffers + s->buf_off : NULL, *rvar = rmean != NULL ? rmean + s->c : NULL;
  const size_t groups = stat_groups(s, batch);
  for (size_t q = 0; q < groups; q++) {
    const span sp = group_span(s, batch, q);
    float mean, invstd;
    if (train || !running) {
      double m, v;
      moments(s, x, sp, &m, &v);
      mean = (float)m;
      invstd = dt_f_invstd(v, s->eps);
      stats[2 * q] = mean, stats[2 * q + 1] = invstd;
      if (train && rmean != NULL) {
        const double n = (double)sp.len * sp.runs;
        rmean[q] = dt_f_running(rmean[q], s->momentum, m);
        rvar[q] = dt_f_running(rvar[q], s->momentum, n > 1 ? v * n / (n - 1) : v);
      }
    } else { /* eval: the running statistics */
      mean = rmean != NULL ? rmean[q] : 0.0f;
      invstd = dt_f_invstd(rvar != NULL ? rvar[q] : 1.0, s->eps);
    }
    for (int r = 0; r < sp.runs; r++)
      for (size_t p = 0; p < planes(s, sp); p++) {
        const int c = sp.c0 + (int)p;
        plane_apply(y + at(s, sp, r, p), x + at(s, sp, r, p), s->plane, mean, invstd, gamma[c], beta[c]);
      }
  }
}

void dt_cpu_norm_backward(const dt_norm_shape *s, int batch, const float *x, const float *dy, const float *params, float *grad,
                          const float *stats, float *dx) {
  const float *gamma = params + s->w_off;
  float *dgamma = grad + s->w_off, *dbeta = grad + s->b_off;
  /* gamma's and beta's gradients: per channel, over the batch and the plane, in NCHW order */
  const int batchnorm = s->kind == DT_LAYER_BATCHNORM2D;
  for (int c = 0; c < s->c; c++) {
    lanes db = {{0}}, dg = {{0}};
    for (int n = 0; n < batch; n++) {
      const size_t q = batchnorm ? (size_t)c : (size_t)n * s->groups + (size_t)c / (size_t)(s->c / s->groups);
      const size_t base = ((size_t)n * s->c + c) * s->plane;
      plane_grad_sums(&db, &dg, x + base, dy + base, s->plane, stats[2 * q], stats[2 * q + 1], 1.0f);
    }
    const double sb = total(&db), sg = total(&dg);
    dgamma[c] = (float)sg;
    dbeta[c] = (float)sb;
    if (batchnorm && dx != NULL) { /* a channel is its statistics group: Σdy·γ = γ·Σdy, Σdy·γ·x̂ = γ·Σdy·x̂ */
      const double n = (double)batch * s->plane;
      const float m1 = (float)(gamma[c] * sb / n), m2 = (float)(gamma[c] * sg / n);
      for (int k = 0; k < batch; k++) {
        const size_t o = ((size_t)k * s->c + c) * s->plane;
        plane_back(dx + o, x + o, dy + o, s->plane, gamma[c], stats[2 * c], stats[2 * c + 1], m1, m2);
      }
    }
  }
  if (dx == NULL || batchnorm) return;
  const size_t groups = stat_groups(s, batch);
  for (size_t q = 0; q < groups; q++) {
    const span sp = group_span(s, batch, q);
    const float mean = stats[2 * q], invstd = stats[2 * q + 1];
    lanes s1 = {{0}}, s2 = {{0}};
    for (int r = 0; r < sp.runs; r++)
      for (size_t p = 0; p < planes(s, sp); p++) {
        const size_t o = at(s, sp, r, p);
        plane_grad_sums(&s1, &s2, x + o, dy + o, s->plane, mean, invstd, gamma[sp.c0 + (int)p]);
      }
    const double n = (double)sp.len * sp.runs;
    const float m1 = (float)(total(&s1) / n), m2 = (float)(total(&s2) / n);
    for (int r = 0; r < sp.runs; r++)
      for (size_t p = 0; p < planes(s, sp); p++) {
        const size_t o = at(s, sp, r, p);
        plane_back(dx + o, x + o, dy + o, s->plane, gamma[sp.c0 + (int)p], mean, invstd, m1, m2);
      }
  }
}
