/* Batch and group normalisation on one node's batch (NCHW). Statistics are summed in double in
 * a fixed order (mean first, then the centred second moment), so they do not depend on threads
 * and stay accurate over large planes; the per-element arithmetic is dt/formulas.h's. */
#include <math.h>
#include <string.h>

#include "cpu_impl.h"
#include "dt/formulas.h"

/* Statistic groups: batchnorm2d one per channel, groupnorm one per (sample, group). */
static size_t stat_groups(const dt_norm_shape *s, int batch) {
  return s->kind == DT_LAYER_BATCHNORM2D ? (size_t)s->c : (size_t)batch * s->groups;
}

size_t dt_cpu_norm_stats(const dt_norm_shape *s, int batch) { return 2 * stat_groups(s, batch); }

/* Group q's elements: `runs` runs of `len` floats, run r at base + r·step. */
typedef struct span {
  size_t base, step, len;
  int runs;
} span;

static span group_span(const dt_norm_shape *s, int batch, size_t q) {
  const size_t chw = (size_t)s->c * s->plane;
  if (s->kind == DT_LAYER_BATCHNORM2D) return (span){.base = q * s->plane, .step = chw, .len = s->plane, .runs = batch};
  const size_t per = (size_t)(s->c / s->groups) * s->plane, n = q / (size_t)s->groups, g = q % (size_t)s->groups;
  return (span){.base = n * chw + g * per, .step = 0, .len = per, .runs = 1};
}

/* The channel of element i of run r in group q's span. */
static int channel_of(const dt_norm_shape *s, size_t q, size_t i) {
  if (s->kind == DT_LAYER_BATCHNORM2D) return (int)q;
  return (int)((q % (size_t)s->groups) * (size_t)(s->c / s->groups) + i / s->plane);
}

static void moments(const float *x, span sp, double *mean, double *var) {
  double sum = 0.0, sq = 0.0;
  for (int r = 0; r < sp.runs; r++)
    for (size_t i = 0; i < sp.len; i++) sum += x[sp.base + r * sp.step + i];
  const double n = (double)sp.len * sp.runs, m = sum / n;
  for (int r = 0; r < sp.runs; r++)
    for (size_t i = 0; i < sp.len; i++) {
      const double d = x[sp.base + r * sp.step + i] - m;
      sq += d * d;
    }
  *mean = m;
  *var = sq / n;
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
      moments(x, sp, &m, &v);
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
      for (size_t i = 0; i < sp.len; i++) {
        const size_t at = sp.base + r * sp.step + i;
        const int c = channel_of(s, q, i);
        y[at] = dt_f_norm_apply(dt_f_norm_hat(x[at], mean, invstd), gamma[c], beta[c]);
      }
  }
}

void dt_cpu_norm_backward(const dt_norm_shape *s, int batch, const float *x, const float *dy, const float *params, float *grad,
                          const float *stats, float *dx) {
  const float *gamma = params + s->w_off;
  float *dgamma = grad + s->w_off, *dbeta = grad + s->b_off;
  /* gamma's and beta's gradients: per channel, over the batch and the plane, in NCHW order */
  for (int c = 0; c < s->c; c++) {
    double dg = 0.0, db = 0.0;
    for (int n = 0; n < batch; n++) {
      const size_t q = s->kind == DT_LAYER_BATCHNORM2D ? (size_t)c : (size_t)n * s->groups + (size_t)c / (size_t)(s->c / s->groups);
      const float mean = stats[2 * q], invstd = stats[2 * q + 1];
      const size_t base = ((size_t)n * s->c + c) * s->plane;
      for (size_t i = 0; i < s->plane; i++) {
        dg += (double)dy[base + i] * dt_f_norm_hat(x[base + i], mean, invstd);
        db += dy[base + i];
      }
    }
    dgamma[c] = (float)dg;
    dbeta[c] = (float)db;
  }
  if (dx == NULL) return;
  const size_t groups = stat_groups(s, batch);
  for (size_t q = 0; q < groups; q++) {
    const span sp = group_span(s, batch, q);
    const float mean = stats[2 * q], invstd = stats[2 * q + 1];
    double s1 = 0.0, s2 = 0.0;
    for (int r = 0; r < sp.runs; r++)
      for (size_t i = 0; i < sp.len; i++) {
        const size_t at = sp.base + r * sp.step + i;
        const double dyg = (double)dy[at] * gamma[channel_of(s, q, i)];
        s1 += dyg;
        s2 += dyg * dt_f_norm_hat(x[at], mean, invstd);
      }
    const double n = (double)sp.len * sp.runs;
    const float m1 = (float)(s1 / n), m2 = (float)(s2 / n);
    for (int r = 0; r < sp.runs; r++)
      for (size_t i = 0; i < sp.len; i++) {
        const size_t at = sp.base + r * sp.step + i;
        const float dyg = dy[at] * gamma[channel_of(s, q, i)];
        dx[at] = dt_f_norm_back(dyg, dt_f_norm_hat(x[at], mean, invstd), invstd, m1, m2);
      }
  }
}
