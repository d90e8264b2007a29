/* The CPU backend table and its elementwise ops: pooling, relu, dropout, log-softmax + NLL, and
 * the fused SGD and Adam(W) steps. Loops are plain C that gcc vectorises at -O3. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "cpu_impl.h"

/* OpenBLAS's own declaration; not in cblas.h on every distribution. */
extern void openblas_set_num_threads(int num_threads);

void dt_backend_cpu_single_thread(void) {
  static int done = 0;
  if (!done) {
    openblas_set_num_threads(1);
    done = 1;
  }
}

static void maxpool_forward(const dt_pool_shape *s, int batch, const float *x, float *y,
                            int32_t *argmax) {
  const size_t in_plane = (size_t)s->h * s->w, out_plane = (size_t)s->oh * s->ow;
  for (size_t plane = 0; plane < (size_t)batch * s->c; plane++) {
    const float *xp = x + plane * in_plane;
    float *yp = y + plane * out_plane;
    int32_t *ap = argmax + plane * out_plane;
    for (int oh = 0; oh < s->oh; oh++)
      for (int ow = 0; ow < s->ow; ow++) {
        int h0 = oh * s->stride, w0 = ow * s->stride;
        int best = h0 * s->w + w0;
        float bv = xp[best];
        for (int i = 0; i < s->k; i++)
          for (int j = 0; j < s->k; j++) {
            int idx = (h0 + i) * s->w + (w0 + j);
            /* PyTorch keeps the first maximum and lets NaN win. */
            if (xp[idx] > bv || isnan(xp[idx])) {
              bv = xp[idx];
              best = idx;
            }
          }
        yp[oh * s->ow + ow] = bv;
        ap[oh * s->ow + ow] = best;
      }
  }
}

static void maxpool_backward(const dt_pool_shape *s, int batch, const float *dy,
                             const int32_t *argmax, float *dx) {
  const size_t in_plane = (size_t)s->h * s->w, out_plane = (size_t)s->oh * s->ow;
  memset(dx, 0, sizeof(float) * (size_t)batch * s->c * in_plane);
  for (size_t plane = 0; plane < (size_t)batch * s->c; plane++)
    for (size_t o = 0; o < out_plane; o++)
      dx[plane * in_plane + (size_t)argmax[plane * out_plane + o]] += dy[plane * out_plane + o];
}

static void relu_forward(size_t n, const float *x, float *y) {
  for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static void relu_backward(size_t n, const float *y, const float *dy, float *dx) {
  for (size_t i = 0; i < n; i++) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

static void dropout_forward(size_t n, float p, const float *x, float *y, uint8_t *mask,
                            dt_rng *rng) {
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  for (size_t i = 0; i < n; i++) {
    mask[i] = dt_rng_float(rng) >= p;
    y[i] = mask[i] ? x[i] * scale : 0.0f;
  }
}

static void dropout_backward(size_t n, float p, const uint8_t *mask, const float *dy,
                             float *dx) {
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  for (size_t i = 0; i < n; i++) dx[i] = mask[i] ? dy[i] * scale : 0.0f;
}

static double log_softmax_nll(int batch, int classes, const float *logits, const int32_t *y,
                              float *dlogits, float scale, long *correct) {
  double total = 0.0;
  for (int n = 0; n < batch; n++) {
    const float *z = logits + (size_t)n * classes;
    float mx = z[0];
    int arg = 0;
    for (int c = 1; c < classes; c++)
      if (z[c] > mx) {
        mx = z[c];
        arg = c;
      }
    float sum = 0.0f;
    for (int c = 0; c < classes; c++) sum += expf(z[c] - mx);
    float lse = mx + logf(sum);
    total += (double)(lse - z[y[n]]);
    if (correct != NULL) *correct += arg == y[n];
    if (dlogits != NULL) {
      float *d = dlogits + (size_t)n * classes;
      for (int c = 0; c < classes; c++) d[c] = scale * expf(z[c] - lse);
      d[y[n]] -= scale;
    }
  }
  return total;
}

static void sgd_step(size_t n, float *p, const float *g, float *buf, int first, float lr,
                     float momentum, float dampening, int nesterov, float wd, float extra_alpha,
                     const float *extra_b) {
  for (size_t i = 0; i < n; i++) {
    float d = g[i] + extra_alpha * p[i] + (extra_b ? extra_b[i] : 0.0f);
    if (wd != 0.0f) d += wd * p[i];
    if (momentum != 0.0f) {
      buf[i] = first ? d : momentum * buf[i] + (1.0f - dampening) * d;
      d = nesterov ? d + momentum * buf[i] : buf[i];
    }
    p[i] -= lr * d;
  }
}

static void adam_step(size_t n, float *p, const float *g, float *m, float *v, long step,
                      float lr, float beta1, float beta2, float eps, float wd, int decoupled,
                      float extra_alpha, const float *extra_b) {
  /* As torch.optim.Adam/AdamW (1.13, single-tensor path): bias corrections in double, then
   * p -= (lr/bc1) · m / (sqrt(v)/sqrt(bc2) + eps). */
  const double bc1 = 1.0 - pow((double)beta1, (double)step);
  const double bc2 = 1.0 - pow((double)beta2, (double)step);
  const float step_size = (float)(lr / bc1);
  const float inv_bc2_sqrt = (float)(1.0 / sqrt(bc2));
  const float decay = decoupled ? 1.0f - lr * wd : 1.0f;
  const float l2 = decoupled ? 0.0f : wd;
  const float one_b1 = 1.0f - beta1, one_b2 = 1.0f - beta2;
  for (size_t i = 0; i < n; i++) {
    float d = g[i] + extra_alpha * p[i] + (extra_b ? extra_b[i] : 0.0f);
    d += l2 * p[i];
    float pi = p[i] * decay;
    float mi = beta1 * m[i] + one_b1 * d;
    float vi = beta2 * v[i] + one_b2 * d * d;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - step_size * (mi / (sqrtf(vi) * inv_bc2_sqrt + eps));
  }
}

const dt_backend_ops dt_backend_cpu = {
    .name = "cpu",
    .conv2d_forward = dt_cpu_conv2d_forward,
    .conv2d_backward = dt_cpu_conv2d_backward,
    .linear_forward = dt_cpu_linear_forward,
    .linear_backward = dt_cpu_linear_backward,
    .maxpool_forward = maxpool_forward,
    .maxpool_backward = maxpool_backward,
    .relu_forward = relu_forward,
    .relu_backward = relu_backward,
    .dropout_forward = dropout_forward,
    .dropout_backward = dropout_backward,
    .log_softmax_nll = log_softmax_nll,
    .sgd_step = sgd_step,
    .adam_step = adam_step,
};
