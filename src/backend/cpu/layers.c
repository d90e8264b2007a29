/* The CPU backend's per-node layer kernels besides the GEMM-based ones (conv2d.c, linear.c):
 * max pooling, relu, dropout, and log-softmax with the NLL loss. The per-node executor (net.c)
 * calls them on each node's batch; loops are plain C that gcc vectorises at -O3. */
#include <math.h>
#include <string.h>

#include "cpu_impl.h"
#include "dt/formulas.h"

/* The common 2x2, stride-2 window, eight outputs at a time: even/odd columns are split with
 * shuffles and the window's maximum is taken with compare-and-select, branch-free. Ties keep
 * the first element and NaN wins, as in PyTorch. */
typedef float pv8 __attribute__((vector_size(32)));
typedef int32_t pi8 __attribute__((vector_size(32)));

#define POOL_TAKE(v, idx)                                  \
  do {                                                     \
    pi8 t_ = (v > bv) | (v != v);                          \
    bv = (pv8)(((pi8)v & t_) | ((pi8)bv & ~t_));           \
    best = (idx & t_) | (best & ~t_);                      \
  } while (0)

/* The even and odd lanes of the 16 floats a:b (gcc >= 12 and clang both have shufflevector). */
#define EVEN(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#define ODD(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15)

DT_CLONES
static void maxpool2x2_forward(const dt_pool_shape *s, int batch, const float *restrict x,
                               float *restrict y, int32_t *restrict argmax) {
  const int W = s->w, OW = s->ow;
  const size_t in_plane = (size_t)s->h * W, out_plane = (size_t)s->oh * OW;
  const pi8 lane2 = {0, 2, 4, 6, 8, 10, 12, 14};
  for (size_t plane = 0; plane < (size_t)batch * s->c; plane++) {
    for (int oh = 0; oh < s->oh; oh++) {
      const float *r0 = x + plane * in_plane + (size_t)(2 * oh) * W, *r1 = r0 + W;
      float *yr = y + plane * out_plane + (size_t)oh * OW;
      int32_t *ar = argmax + plane * out_plane + (size_t)oh * OW;
      /* The last block overlaps the previous one instead of falling to a scalar tail; the
       * overlapped outputs are recomputed to the same values. */
      const int blocks_end = OW >= 8 ? OW : 0;
      for (int next = 0; next < blocks_end; next += 8) {
        const int ow = next + 8 <= OW ? next : OW - 8;
        pv8 a0, a1, b0, b1;
        memcpy(&a0, r0 + 2 * ow, 32);
        memcpy(&a1, r0 + 2 * ow + 8, 32);
        memcpy(&b0, r1 + 2 * ow, 32);
        memcpy(&b1, r1 + 2 * ow + 8, 32);
        const pv8 v0 = EVEN(a0, a1), v1 = ODD(a0, a1), v2 = EVEN(b0, b1), v3 = ODD(b0, b1);
        const pi8 base = lane2 + (2 * oh * W + 2 * ow);
        pv8 bv = v0;
        pi8 best = base;
        POOL_TAKE(v1, (base + 1));
        POOL_TAKE(v2, (base + W));
        POOL_TAKE(v3, (base + W + 1));
        memcpy(yr + ow, &bv, 32);
        memcpy(ar + ow, &best, 32);
      }
      for (int ow = blocks_end; ow < OW; ow++) { /* rows narrower than 8 outputs */
        const int base = 2 * oh * W + 2 * ow;
        const float v[4] = {r0[2 * ow], r0[2 * ow + 1], r1[2 * ow], r1[2 * ow + 1]};
        const int off[4] = {0, 1, W, W + 1};
        float bv = v[0];
        int best = base;
        for (int k = 1; k < 4; k++) {
          const int t = (v[k] > bv) | (v[k] != v[k]);
          bv = t ? v[k] : bv;
          best = t ? base + off[k] : best;
        }
        yr[ow] = bv;
        ar[ow] = best;
      }
    }
  }
}

DT_CLONES
void dt_cpu_maxpool_forward(const dt_pool_shape *s, int batch, const float *restrict x,
                                 float *restrict y, int32_t *restrict argmax) {
  if (s->k == 2 && s->stride == 2) {
    maxpool2x2_forward(s, batch, x, y, argmax);
    return;
  }
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
            float v = xp[idx];
            /* PyTorch keeps the first maximum and lets NaN win; written branch-free, since
             * on real data the comparison is a coin flip for the branch predictor. */
            int take = (v > bv) | (v != v);
            bv = take ? v : bv;
            best = take ? idx : best;
          }
        yp[oh * s->ow + ow] = bv;
        ap[oh * s->ow + ow] = best;
      }
  }
}

void dt_cpu_maxpool_backward(const dt_pool_shape *s, int batch, const float *dy,
                                  const int32_t *argmax, float *dx) {
  const size_t in_plane = (size_t)s->h * s->w, out_plane = (size_t)s->oh * s->ow;
  memset(dx, 0, sizeof(float) * (size_t)batch * s->c * in_plane);
  for (size_t plane = 0; plane < (size_t)batch * s->c; plane++)
    for (size_t o = 0; o < out_plane; o++)
      dx[plane * in_plane + (size_t)argmax[plane * out_plane + o]] += dy[plane * out_plane + o];
}

DT_CLONES
void dt_cpu_relu_forward(size_t n, const float *restrict x, float *restrict y) {
  for (size_t i = 0; i < n; i++) y[i] = dt_f_relu(x[i]);
}

DT_CLONES
void dt_cpu_relu_backward(size_t n, const float *y, const float *dy, float *dx) {
  for (size_t i = 0; i < n; i++) dx[i] = dt_f_relu_back(y[i], dy[i]);
}

void dt_cpu_dropout_forward(size_t n, float p, const float *x, float *y, uint8_t *mask,
                            dt_rng *rng) {
  const float scale = dt_f_dropout_scale(p);
  for (size_t i = 0; i < n; i++) {
    mask[i] = (uint8_t)dt_f_dropout_keep(dt_rng_u32(rng), p);
    y[i] = dt_f_dropout_apply(mask[i], x[i], scale);
  }
}

void dt_cpu_dropout_backward(size_t n, float p, const uint8_t *mask, const float *dy,
                             float *dx) {
  const float scale = dt_f_dropout_scale(p);
  for (size_t i = 0; i < n; i++) dx[i] = dt_f_dropout_apply(mask[i], dy[i], scale);
}

double dt_cpu_log_softmax_nll(int batch, int classes, const float *logits, const int32_t *y,
                              float *dlogits, float scale, long *correct) {
  double total = 0.0;
  for (int n = 0; n < batch; n++) {
    const float *z = logits + (size_t)n * classes;
    int arg;
    const float lse = dt_f_log_sum_exp(z, classes, &arg);
    total += (double)(lse - z[y[n]]);
    if (correct != NULL) *correct += arg == y[n];
    if (dlogits != NULL) {
      float *d = dlogits + (size_t)n * classes;
      for (int c = 0; c < classes; c++) d[c] = dt_f_softmax_scaled(scale, z[c], lse);
      d[y[n]] -= scale;
    }
  }
  return total;
}

/* Average pooling: each window's mean (k 0: the whole plane, global_avgpool), summed in window
 * order; backward spreads dy/k² over the window (windows that overlap add up). */
void dt_cpu_avgpool_forward(const dt_pool_shape *s, int batch, const float *x, float *y) {
  const int kh = s->k > 0 ? s->k : s->h, kw = s->k > 0 ? s->k : s->w;
  const float inv = 1.0f / (float)(kh * kw);
  const size_t in_plane = (size_t)s->h * s->w, out_plane = (size_t)s->oh * s->ow;
  for (size_t plane = 0; plane < (size_t)batch * s->c; plane++) {
    const float *xp = x + plane * in_plane;
    for (int oh = 0; oh < s->oh; oh++)
      for (int ow = 0; ow < s->ow; ow++) {
        float sum = 0.0f;
        for (int i = 0; i < kh; i++)
          for (int j = 0; j < kw; j++) sum += xp[(size_t)(oh * s->stride + i) * s->w + (size_t)(ow * s->stride + j)];
        y[plane * out_plane + (size_t)oh * s->ow + ow] = sum * inv;
      }
  }
}

void dt_cpu_avgpool_backward(const dt_pool_shape *s, int batch, const float *dy, float *dx) {
  const int kh = s->k > 0 ? s->k : s->h, kw = s->k > 0 ? s->k : s->w;
  const float inv = 1.0f / (float)(kh * kw);
  const size_t in_plane = (size_t)s->h * s->w, out_plane = (size_t)s->oh * s->ow;
  memset(dx, 0, sizeof(float) * (size_t)batch * s->c * in_plane);
  for (size_t plane = 0; plane < (size_t)batch * s->c; plane++) {
    float *dp = dx + plane * in_plane;
    for (int oh = 0; oh < s->oh; oh++)
      for (int ow = 0; ow < s->ow; ow++) {
        const float g = dy[plane * out_plane + (size_t)oh * s->ow + ow] * inv;
        for (int i = 0; i < kh; i++)
          for (int j = 0; j < kw; j++) dp[(size_t)(oh * s->stride + i) * s->w + (size_t)(ow * s->stride + j)] += g;
      }
  }
}
