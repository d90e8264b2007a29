/* The CUDA backend's model kernels (launched from nn.cu): the layer steps of a group of G nodes,
 * elementwise or reducing in a fixed order (never with atomics), in either activation layout, and
 * dropout masks drawn from the CPU backend's Philox streams (see nn.cu on determinism and layout). */
#include <math.h>

#include "nn_impl.h"

extern "C" {
#include "dt/formulas.h"
#include "dt/rng.h"
}

/* ---- layout-generic kernels over G nodes ------------------------------------------------------
 * An activation element (c, s, p) of node g lies at g·ns + c·cs + s·ss + p (p the pixel within a
 * plane): sample-major has cs = plane, ss = C·plane; CNHW has cs = S·plane, ss = plane. */

/* col[g][r][s·ohw + q] for r = (c·K + ki)·K + kj; zero outside the padded input. */
__global__ void k_im2col(int count, unsigned per, dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs, size_t ss,
                         float *col, size_t colns) {
  const unsigned ohw = (unsigned)(sh.oh * sh.ow), K = (unsigned)sh.k, N = (unsigned)S * ohw;
  NODE_LOOP(g, i, count, per) {
    const unsigned r = i / N, j = i % N, s = j / ohw, q = j % ohw, oh = q / sh.ow, ow = q % sh.ow;
    const unsigned c = r / (K * K), ki = r / K % K, kj = r % K;
    const int ih = (int)(oh * sh.stride + ki) - sh.pad, iw = (int)(ow * sh.stride + kj) - sh.pad;
    float v = 0.0f;
    if (ih >= 0 && ih < sh.h && iw >= 0 && iw < sh.w) v = x[g * xns + c * cs + s * ss + (size_t)ih * sh.w + iw];
    col[g * colns + i] = v;
  }
}

/* dx = col2im(dcol): each input element sums its taps in (ki, kj) order. */
__global__ void k_col2im(int count, unsigned per, dt_conv_shape sh, int S, const float *dcol, size_t colns, float *dx, size_t xns,
                         size_t cs, size_t ss) {
  const unsigned ohw = (unsigned)(sh.oh * sh.ow), hw = (unsigned)(sh.h * sh.w), N = (unsigned)S * ohw;
  const int K = sh.k;
  NODE_LOOP(g, i, count, per) {
    const unsigned c = i / ((unsigned)S * hw), s = i / hw % (unsigned)S, p = i % hw;
    const int ih = (int)(p / sh.w), iw = (int)(p % sh.w);
    const float *dc = dcol + g * colns + (size_t)s * ohw;
    float acc = 0.0f;
    for (int ki = 0; ki < K; ki++) {
      const int th = ih + sh.pad - ki;
      if (th < 0 || th % sh.stride != 0 || th / sh.stride >= sh.oh) continue;
      for (int kj = 0; kj < K; kj++) {
        const int tw = iw + sh.pad - kj;
        if (tw < 0 || tw % sh.stride != 0 || tw / sh.stride >= sh.ow) continue;
        const unsigned r = (c * K + ki) * K + kj;
        acc += dc[(size_t)r * N + (th / sh.stride) * sh.ow + tw / sh.stride];
      }
    }
    dx[g * xns + c * cs + s * ss + p] = acc;
  }
}

/* Conv output (f × N per node, N = S·ohw) starts as its bias. */
__global__ void k_bias_rows(int count, unsigned per, unsigned N, const float *b, size_t bns, float *y, size_t yns) {
  NODE_LOOP(g, i, count, per) y[g * yns + i] = b[g * bns + i / N];
}

/* Linear output (S × out per node) starts as its bias. */
__global__ void k_bias_cols(int count, unsigned per, unsigned out, const float *b, size_t bns, float *y, size_t yns) {
  NODE_LOOP(g, i, count, per) y[g * yns + i] = b[g * bns + i % out];
}

/* db[g][f] = Σ_j dy[g][f][j], one block per (g, f), a fixed tree over a fixed stride. */
__global__ void k_row_sums(int f, size_t N, const float *dy, size_t yns, float *db, size_t bns) {
  __shared__ float s[CU_THREADS];
  const int g = blockIdx.x / f, r = blockIdx.x % f;
  const float *row = dy + (size_t)g * yns + (size_t)r * N;
  float acc = 0.0f;
  for (size_t j = threadIdx.x; j < N; j += CU_THREADS) acc += row[j];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int h = CU_THREADS / 2; h > 0; h /= 2) {
    if ((int)threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[(size_t)g * bns + r] = s[0];
}

/* db[g][o] = Σ_s dy[g][s][o], samples in order. */
__global__ void k_col_sums(size_t n, int out, int S, const float *dy, size_t yns, float *db, size_t bns) {
  GRID_STRIDE(i, n) {
    const size_t g = i / out;
    const int o = (int)(i % out);
    float acc = 0.0f;
    for (int s = 0; s < S; s++) acc += dy[g * yns + (size_t)s * out + o];
    db[g * bns + o] = acc;
  }
}

/* Planes of h×w, `planes` per node at node strides xns / yns (a plane is contiguous in both
 * layouts): the window's first maximum, NaN wins. */
__global__ void k_maxpool(int count, unsigned per, dt_pool_shape sh, int tS, const float *x, size_t xns, float *y, size_t yns,
                          int32_t *argmax) {
  const unsigned outp = (unsigned)(sh.oh * sh.ow), inp = (unsigned)(sh.h * sh.w);
  NODE_LOOP(g, i, count, per) {
    const unsigned pp = i / outp, o = i % outp;
    const int oh = (int)(o / sh.ow), ow = (int)(o % sh.ow);
    const float *xp = x + g * xns + (size_t)pp * inp;
    const int h0 = oh * sh.stride, w0 = ow * sh.stride;
    int best = h0 * sh.w + w0;
    float bv = xp[best];
    for (int a = 0; a < sh.k; a++)
      for (int b = 0; b < sh.k; b++) {
        const int idx = (h0 + a) * sh.w + w0 + b;
        const float v = xp[idx];
        if (v > bv || v != v) {
          bv = v;
          best = idx;
        }
      }
    y[g * yns + (size_t)cu_pool_plane(pp, tS, sh.c) * outp + o] = bv;
    argmax[g * yns + i] = best;
  }
}

/* dx of one input element: the dy of every window whose maximum it was, windows in order; with
 * relu, then the gradient of the relu before the pool (x: the pool's input, its output), as
 * k_relu_back would give it. */
__global__ void k_maxpool_back(int count, unsigned per, dt_pool_shape sh, int tS, const float *dy, size_t dyns,
                               const int32_t *argmax, size_t ans, float *dx, size_t dxns, const float *x, size_t xns, int relu) {
  const unsigned inp = (unsigned)(sh.h * sh.w), outp = (unsigned)(sh.oh * sh.ow);
  NODE_LOOP(g, i, count, per) {
    const unsigned pp = i / inp;
    const int p = (int)(i % inp), ih = p / sh.w, iw = p % sh.w;
    const int oh0 = ih >= sh.k ? (ih - sh.k) / sh.stride + 1 : 0, ow0 = iw >= sh.k ? (iw - sh.k) / sh.stride + 1 : 0;
    const size_t base = (size_t)pp * outp, dbase = (size_t)cu_pool_plane(pp, tS, sh.c) * outp;
    float acc = 0.0f;
    for (int oh = oh0; oh <= ih / sh.stride && oh < sh.oh; oh++)
      for (int ow = ow0; ow <= iw / sh.stride && ow < sh.ow; ow++) {
        const size_t o = (size_t)oh * sh.ow + ow;
        if (argmax[g * ans + base + o] == p) acc += dy[g * dyns + dbase + o];
      }
    dx[g * dxns + i] = relu ? dt_f_relu_back(x[g * xns + i], acc) : acc;
  }
}

/* k_maxpool_back where the windows tile the input (stride k, sizes multiples of k): one thread per
 * window writes its k·k inputs' gradients, the same values (0 + dy at the maximum, 0 elsewhere),
 * with a quarter of the divisions for k = 2. */
__global__ void k_maxpool_back_tiled(int count, unsigned per, dt_pool_shape sh, int tS, const float *dy, size_t dyns,
                                     const int32_t *argmax, size_t ans, float *dx, size_t dxns, const float *x, size_t xns,
                                     int relu) {
  const unsigned inp = (unsigned)(sh.h * sh.w), outp = (unsigned)(sh.oh * sh.ow);
  NODE_LOOP(g, i, count, per) {
    const unsigned pp = i / outp, o = i % outp;
    const int oh = (int)(o / sh.ow), ow = (int)(o % sh.ow);
    const int am = argmax[g * ans + i];
    const float d = dy[g * dyns + (size_t)cu_pool_plane(pp, tS, sh.c) * outp + o];
    const size_t base = (size_t)pp * inp;
    for (int a = 0; a < sh.k; a++)
      for (int b = 0; b < sh.k; b++) {
        const int p = (oh * sh.k + a) * sh.w + ow * sh.k + b;
        float acc = 0.0f;
        if (p == am) acc += d;
        dx[g * dxns + base + p] = relu ? dt_f_relu_back(x[g * xns + base + p], acc) : acc;
      }
  }
}

__global__ void k_relu(int count, unsigned per, const float *x, size_t xns, float *y, size_t yns) {
  NODE_LOOP(g, i, count, per) y[g * yns + i] = dt_f_relu(x[g * xns + i]);
}
__global__ void k_relu_back(int count, unsigned per, const float *y, size_t yns, float *d, size_t dns) {
  NODE_LOOP(g, i, count, per) d[g * dns + i] = dt_f_relu_back(y[g * yns + i], d[g * dns + i]);
}

/* Dropout over G nodes of S samples of C planes of `plane` floats, stored with (cs, ss) at node
 * strides xns (x), yns (y) and mns (mask); the element's word in node g's stream is its CPU
 * (sample-major) position. Samples at or past batch[g] (or every sample, for batch == NULL a
 * count of S) get mask 0. */
__global__ void k_dropout(int count, unsigned per, int C, int S, unsigned plane, size_t xns, size_t yns, size_t mns, size_t cs,
                          size_t ss, float p, float scale, const dt_rng *st, const int *batch, const float *x, float *y,
                          uint8_t *mask) {
  NODE_LOOP(g, i, count, per) {
    const unsigned c = i / ((unsigned)S * plane), s = i / plane % (unsigned)S, q = i % plane;
    const size_t at = (size_t)c * cs + (size_t)s * ss + q;
    uint8_t keep = 0;
    if ((int)s < (batch != NULL ? batch[g] : S)) {
      const uint64_t word = (uint64_t)s * C * plane + (uint64_t)c * plane + q;
      keep = (uint8_t)dt_f_dropout_keep(dt_philox_word_at(st[g].key, st[g].ctr, st[g].buf, st[g].used, word), p);
    }
    mask[g * mns + at] = keep;
    y[g * yns + at] = dt_f_dropout_apply(keep, x[g * xns + at], scale);
  }
}

__global__ void k_dropout_back(int count, unsigned per, float scale, const uint8_t *mask, size_t mns, float *d, size_t dns) {
  NODE_LOOP(g, i, count, per) d[g * dns + i] = dt_f_dropout_apply(mask[g * mns + i], d[g * dns + i], scale);
}

/* Log-softmax + NLL per (node, sample): the sample's loss and hit, and scale·(softmax − onehot)
 * for samples inside the node's batch (zero past it). */
__global__ void k_softmax_nll(size_t n, int classes, int S, const float *z, size_t zns, const int32_t *y, size_t yns,
                              const int *batch, const float *scale, float *dz, size_t dzns, double *loss, int *hit) {
  GRID_STRIDE(i, n) {
    const size_t g = i / S;
    const int s = (int)(i % S);
    const float *zr = z + g * zns + (size_t)s * classes;
    const int valid = s < (batch != NULL ? batch[g] : S);
    const int32_t label = valid ? y[g * yns + s] : 0;
    int arg;
    const float lse = dt_f_log_sum_exp(zr, classes, &arg);
    loss[i] = valid ? (double)(lse - zr[label]) : 0.0;
    hit[i] = valid && arg == label;
    if (dz != NULL) {
      float *d = dz + g * dzns + (size_t)s * classes;
      const float sc = valid ? scale[g] : 0.0f;
      for (int c = 0; c < classes; c++) d[c] = dt_f_softmax_scaled(sc, zr[c], lse);
      if (valid) d[label] -= sc;
    }
  }
}

/* Per node, in sample order: total[g] += Σ loss, correct[g] += Σ hit. */
__global__ void k_node_totals(size_t n, int S, const double *loss, const int *hit, double *total, long long *correct) {
  GRID_STRIDE(g, n) {
    double acc = 0.0;
    long long h = 0;
    for (int s = 0; s < S; s++) acc += loss[g * S + s], h += hit[g * S + s];
    total[g] += acc;
    correct[g] += h;
  }
}

/* (C, S, plane) → (S, C, plane) per node, and back. */
__global__ void k_to_samples(int count, unsigned per, int C, int S, unsigned plane, const float *x, size_t xns, float *y, size_t yns, int back) {
  NODE_LOOP(g, i, count, per) {
    const unsigned c = i / ((unsigned)S * plane), s = i / plane % (unsigned)S, q = i % plane;
    const size_t cnhw = i, smaj = ((size_t)s * C + c) * plane + q;
    if (back) y[g * yns + cnhw] = x[g * xns + smaj];
    else y[g * yns + smaj] = x[g * xns + cnhw];
  }
}

/* A group's inputs: node g's first batch[g] samples, zeros after them (and in idle slots). */
__global__ void k_gather_batch(int count, unsigned per, int S, unsigned dim, const float *x, size_t xs, const int32_t *y, size_t ys,
                               const int *batch, float *gx, size_t gxs, int32_t *gy) {
  NODE_LOOP(g, i, count, per) {
    const unsigned s = i / dim;
    const int valid = (int)s < batch[g];
    gx[g * gxs + i] = valid ? x[g * xs + i] : 0.0f;
    if (i % dim == 0) gy[g * S + s] = valid ? y[g * ys + s] : 0;
  }
}

/* Every slot gets the same n floats. */
__global__ void k_broadcast(int count, unsigned per, const float *x, float *y, size_t yns) {
  NODE_LOOP(g, i, count, per) y[g * yns + i] = x[i];
}

/* grad of node g (batch[g] > 0) out of the group's gradient. */
__global__ void k_scatter_grad(int count, unsigned per, const float *src, size_t ss, const int *batch, float *dst, size_t ds) {
  NODE_LOOP(g, i, count, per) {
    if (batch[g] > 0) dst[g * ds + i] = src[g * ss + i];
  }
}

/* y (its layout) = x (its layout), or y += x: element (c, s, p) of each node. */
__global__ void k_relayout(int count, unsigned per, int C, int S, unsigned plane, const float *x, size_t xs, size_t xcs, size_t xss,
                           float *y, size_t ys, size_t ycs, size_t yss, int accumulate) {
  NODE_LOOP(g, i, count, per) {
    const unsigned c = i / ((unsigned)S * plane), s = i / plane % (unsigned)S, q = i % plane;
    const float v = x[g * xs + (size_t)c * xcs + (size_t)s * xss + q];
    float *o = y + g * ys + (size_t)c * ycs + (size_t)s * yss + q;
    *o = accumulate ? *o + v : v;
  }
}

dt_status cu_relayout(dt_backend *be, int count, int C, int S, size_t plane, const float *x, size_t xs, size_t xcs, size_t xss,
                      float *y, size_t ys, size_t ycs, size_t yss, int accumulate) {
  NODE_KERNEL(k_relayout, be, count, (size_t)C * S * plane, C, S, (unsigned)plane, x, xs, xcs, xss, y, ys, ycs, yss, accumulate);
  return DT_OK;
}
