/* The CUDA backend's node-batched model calls, which run a group of G nodes through each layer
 * with one batched cuBLAS GEMM (each node its own weights) and one kernel per elementwise step.
 *
 * Determinism. Every sum runs in a fixed order: cuBLAS GEMMs (no atomics; cuBLAS gives the same
 * bits for the same call on the same GPU), and kernels that reduce in a fixed tree or
 * sequentially, never with atomics. A node's arithmetic must also not depend on how many nodes
 * its rank holds, so every batched call has the same shape whatever the placement: groups of
 * exactly G nodes (G from the model, the batch and the run's node count, never from the rank's
 * share; a last, partial group is padded with idle slots), and every node's batch padded to the
 * plan's max_batch samples with zero inputs whose loss gradient is zero.
 *
 * Layout. Inside a plan, convolution outputs are stored channel-major over the whole batch
 * (C × S × H × W per node, "CNHW"), so a convolution is one GEMM per node over all its samples;
 * flatten (or a linear layer reading a CNHW activation) transposes to sample-major. Dropout masks
 * are drawn at the position each element has in the CPU backend's sample-major order, from the
 * same Philox streams (dt/formulas.h), so they equal the CPU's masks bit for bit. */
#include <math.h>
#include <string.h>

#include "cuda_impl.h"

extern "C" {
#include "dt/formulas.h"
#include "dt/rng.h"
}

/* Each node's group-scratch budget: G is the largest group whose scratch fits (at most
 * GROUP_MAX nodes and never more than the run has). */
enum { GROUP_MAX = 64 };
static const size_t GROUP_BYTES = (size_t)1 << 30;


/* ---- layout-generic kernels over G nodes ------------------------------------------------------
 * An activation element (c, s, p) of node g lies at g·ns + c·cs + s·ss + p (p the pixel within a
 * plane): sample-major has cs = plane, ss = C·plane; CNHW has cs = S·plane, ss = plane. */

/* col[g][r][s·ohw + q] for r = (c·K + ki)·K + kj; zero outside the padded input. */
__global__ void k_im2col(size_t n, dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs, size_t ss,
                         float *col, size_t colns) {
  const int ohw = sh.oh * sh.ow, K = sh.k;
  const size_t N = (size_t)S * ohw, per = (size_t)sh.c * K * K * N;
  GRID_STRIDE(i, n) {
    const size_t g = i / per, rem = i % per, r = rem / N, j = rem % N;
    const int s = (int)(j / ohw), q = (int)(j % ohw), oh = q / sh.ow, ow = q % sh.ow;
    const int c = (int)(r / (K * K)), ki = (int)(r / K % K), kj = (int)(r % K);
    const int ih = oh * sh.stride - sh.pad + ki, iw = ow * sh.stride - sh.pad + kj;
    float v = 0.0f;
    if (ih >= 0 && ih < sh.h && iw >= 0 && iw < sh.w) v = x[g * xns + c * cs + s * ss + (size_t)ih * sh.w + iw];
    col[g * colns + rem] = v;
  }
}

/* dx = col2im(dcol): each input element sums its taps in (ki, kj) order. */
__global__ void k_col2im(size_t n, dt_conv_shape sh, int S, const float *dcol, size_t colns, float *dx, size_t xns,
                         size_t cs, size_t ss) {
  const int ohw = sh.oh * sh.ow, K = sh.k, hw = sh.h * sh.w;
  const size_t N = (size_t)S * ohw, per = (size_t)sh.c * S * hw;
  GRID_STRIDE(i, n) {
    const size_t g = i / per, rem = i % per;
    const int c = (int)(rem / ((size_t)S * hw)), s = (int)(rem / hw % S), p = (int)(rem % hw);
    const int ih = p / sh.w, iw = p % sh.w;
    float acc = 0.0f;
    for (int ki = 0; ki < K; ki++) {
      const int th = ih + sh.pad - ki;
      if (th < 0 || th % sh.stride != 0 || th / sh.stride >= sh.oh) continue;
      for (int kj = 0; kj < K; kj++) {
        const int tw = iw + sh.pad - kj;
        if (tw < 0 || tw % sh.stride != 0 || tw / sh.stride >= sh.ow) continue;
        const size_t r = ((size_t)c * K + ki) * K + kj;
        acc += dcol[g * colns + r * N + (size_t)s * ohw + (th / sh.stride) * sh.ow + tw / sh.stride];
      }
    }
    dx[g * xns + c * cs + s * ss + p] = acc;
  }
}

/* Conv output (f × N per node, N = S·ohw) starts as its bias. */
__global__ void k_bias_rows(size_t n, int f, size_t N, const float *b, size_t bns, float *y, size_t yns) {
  const size_t per = (size_t)f * N;
  GRID_STRIDE(i, n) {
    const size_t g = i / per, rem = i % per;
    y[g * yns + rem] = b[g * bns + rem / N];
  }
}

/* Linear output (S × out per node) starts as its bias. */
__global__ void k_bias_cols(size_t n, int out, int S, const float *b, size_t bns, float *y, size_t yns) {
  const size_t per = (size_t)S * out;
  GRID_STRIDE(i, n) {
    const size_t g = i / per, rem = i % per;
    y[g * yns + rem] = b[g * bns + rem % out];
  }
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
__global__ void k_maxpool(size_t n, dt_pool_shape sh, size_t planes, const float *x, size_t xns, float *y, size_t yns,
                          int32_t *argmax) {
  const size_t outp = (size_t)sh.oh * sh.ow, inp = (size_t)sh.h * sh.w;
  GRID_STRIDE(i, n) {
    const size_t plane = i / outp, g = plane / planes, pp = plane % planes;
    const int o = (int)(i % outp), oh = o / sh.ow, ow = o % sh.ow;
    const float *xp = x + g * xns + pp * inp;
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
    const size_t at = g * yns + pp * outp + o;
    y[at] = bv;
    argmax[at] = best;
  }
}

/* dx of one input element: the dy of every window whose maximum it was, windows in order. */
__global__ void k_maxpool_back(size_t n, dt_pool_shape sh, size_t planes, const float *dy, const int32_t *argmax, size_t yns,
                               float *dx, size_t xns) {
  const size_t inp = (size_t)sh.h * sh.w, outp = (size_t)sh.oh * sh.ow;
  GRID_STRIDE(i, n) {
    const size_t plane = i / inp, g = plane / planes, pp = plane % planes;
    const int p = (int)(i % inp), ih = p / sh.w, iw = p % sh.w;
    const int oh0 = ih >= sh.k ? (ih - sh.k) / sh.stride + 1 : 0, ow0 = iw >= sh.k ? (iw - sh.k) / sh.stride + 1 : 0;
    const size_t base = g * yns + pp * outp;
    float acc = 0.0f;
    for (int oh = oh0; oh <= ih / sh.stride && oh < sh.oh; oh++)
      for (int ow = ow0; ow <= iw / sh.stride && ow < sh.ow; ow++) {
        const size_t o = base + (size_t)oh * sh.ow + ow;
        if (argmax[o] == p) acc += dy[o];
      }
    dx[g * xns + pp * inp + p] = acc;
  }
}

__global__ void k_relu(size_t n, const float *x, float *y) { GRID_STRIDE(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f; }
__global__ void k_relu_back(size_t n, const float *y, const float *dy, float *dx) {
  GRID_STRIDE(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/* Dropout over G nodes of S samples of C planes of `plane` floats, stored with (cs, ss); the
 * element's word in node g's stream is its CPU (sample-major) position. Samples at or past
 * batch[g] (or every sample, for batch == NULL a count of S) get mask 0. */
__global__ void k_dropout(size_t n, int C, int S, size_t plane, size_t ns, size_t cs, size_t ss, float p, float scale,
                          const dt_rng *st, const int *batch, const float *x, float *y, uint8_t *mask) {
  const size_t per = (size_t)C * S * plane;
  GRID_STRIDE(i, n) {
    const size_t g = i / per, rem = i % per;
    const int c = (int)(rem / ((size_t)S * plane)), s = (int)(rem / plane % S);
    const size_t q = rem % plane;
    const size_t at = g * ns + (size_t)c * cs + (size_t)s * ss + q;
    uint8_t keep = 0;
    if (s < (batch != NULL ? batch[g] : S)) {
      const uint64_t word = (uint64_t)s * C * plane + (uint64_t)c * plane + q;
      keep = (uint8_t)dt_f_dropout_keep(dt_philox_word_at(st[g].key, st[g].ctr, st[g].buf, st[g].used, word), p);
    }
    mask[at] = keep;
    y[at] = keep ? x[at] * scale : 0.0f;
  }
}

__global__ void k_dropout_back(size_t n, float scale, const uint8_t *mask, const float *dy, float *dx) {
  GRID_STRIDE(i, n) dx[i] = mask[i] ? dy[i] * scale : 0.0f;
}

/* Log-softmax + NLL per (node, sample): the sample's loss and hit, and scale·(softmax − onehot)
 * for samples inside the node's batch (zero past it). */
__global__ void k_softmax_nll(size_t n, int classes, int S, const float *z, size_t zns, const int32_t *y, size_t yns,
                              const int *batch, const float *scale, float *dz, double *loss, int *hit) {
  GRID_STRIDE(i, n) {
    const size_t g = i / S;
    const int s = (int)(i % S);
    const float *zr = z + g * zns + (size_t)s * classes;
    const int valid = s < (batch != NULL ? batch[g] : S);
    const int32_t label = valid ? y[g * yns + s] : 0;
    float mx = zr[0];
    int arg = 0;
    for (int c = 1; c < classes; c++)
      if (zr[c] > mx) mx = zr[c], arg = c;
    float sum = 0.0f;
    for (int c = 0; c < classes; c++) sum += expf(zr[c] - mx);
    const float lse = mx + logf(sum);
    loss[i] = valid ? (double)(lse - zr[label]) : 0.0;
    hit[i] = valid && arg == label;
    if (dz != NULL) {
      float *d = dz + g * zns + (size_t)s * classes;
      const float sc = valid ? scale[g] : 0.0f;
      for (int c = 0; c < classes; c++) d[c] = sc * expf(zr[c] - lse);
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
__global__ void k_to_samples(size_t n, int C, int S, size_t plane, const float *x, size_t xns, float *y, size_t yns, int back) {
  const size_t per = (size_t)C * S * plane;
  GRID_STRIDE(i, n) {
    const size_t g = i / per, rem = i % per;
    const int c = (int)(rem / ((size_t)S * plane)), s = (int)(rem / plane % S);
    const size_t q = rem % plane, cnhw = (size_t)c * S * plane + (size_t)s * plane + q;
    const size_t smaj = (size_t)s * C * plane + (size_t)c * plane + q;
    if (back) y[g * yns + cnhw] = x[g * xns + smaj];
    else y[g * yns + smaj] = x[g * xns + cnhw];
  }
}

/* A group's inputs: node g's first batch[g] samples, zeros after them (and in idle slots). */
__global__ void k_gather_batch(size_t n, int S, size_t dim, const float *x, size_t xs, const int32_t *y, size_t ys,
                               const int *batch, float *gx, size_t gxs, int32_t *gy) {
  const size_t per = (size_t)S * dim;
  GRID_STRIDE(i, n) {
    const size_t g = i / per, rem = i % per;
    const int s = (int)(rem / dim);
    const int valid = s < batch[g];
    gx[g * gxs + rem] = valid ? x[g * xs + rem] : 0.0f;
    if (rem % dim == 0) gy[g * S + s] = valid ? y[g * ys + s] : 0;
  }
}

/* Every slot gets the same n floats. */
__global__ void k_broadcast(size_t n, size_t dim, const float *x, float *y, size_t yns) {
  GRID_STRIDE(i, n) y[(i / dim) * yns + i % dim] = x[i % dim];
}

/* grad of node g (batch[g] > 0) out of the group's gradient. */
__global__ void k_scatter_grad(size_t n, size_t dim, const float *src, size_t ss, const int *batch, float *dst, size_t ds) {
  GRID_STRIDE(i, n) {
    const size_t g = i / dim, j = i % dim;
    if (batch[g] > 0) dst[g * ds + j] = src[g * ss + j];
  }
}

/* ---- GEMM helpers (column-major cuBLAS on row-major data) ------------------------------------ */

static dt_status gemm(dt_backend *be, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *A,
                      int lda, long long sa, const float *B, int ldb, long long sb, float beta, float *C, int ldc,
                      long long sc, int count) {
  const float one = 1.0f;
  BLAS_CALL(cublasSgemmStridedBatched(ctx_of(be)->blas, ta, tb, m, n, k, &one, A, lda, sa, B, ldb, sb, &beta, C, ldc, sc,
                                      count));
  return DT_OK;
}

/* Y (S×out per node) = X (S×in) · Wᵀ + b for `count` nodes; strides in floats (xs may be 0). */
static dt_status linear_fwd(dt_backend *be, int count, int S, int in, int out, const float *x, size_t xs, const float *w,
                            const float *b, size_t ps, float *y, size_t ys) {
  KERNEL(k_bias_cols, be, (size_t)count * S * out, out, S, b, ps, y, ys);
  return gemm(be, CUBLAS_OP_T, CUBLAS_OP_N, out, S, in, w, in, (long long)ps, x, in, (long long)xs, 1.0f, y, out,
              (long long)ys, count);
}

static dt_status linear_bwd(dt_backend *be, int count, int S, int in, int out, const float *x, size_t xs, const float *w,
                            size_t ps, const float *dy, size_t ys, float *dw, float *db, size_t gs, float *dx, size_t dxs) {
  DT_TRY(gemm(be, CUBLAS_OP_N, CUBLAS_OP_T, in, out, S, x, in, (long long)xs, dy, out, (long long)ys, 0.0f, dw, in,
              (long long)gs, count));
  KERNEL(k_col_sums, be, (size_t)count * out, out, S, dy, ys, db, gs);
  if (dx != NULL)
    DT_TRY(gemm(be, CUBLAS_OP_N, CUBLAS_OP_N, in, S, out, w, in, (long long)ps, dy, out, (long long)ys, 0.0f, dx, in,
                (long long)dxs, count));
  return DT_OK;
}

/* Convolution of `count` nodes, S samples each: input (cs, ss) layout at x + g·xs, output CNHW
 * (f × S·ohw) at y + g·ys; col: ckk × S·ohw per node at col + g·cols (cols may be 0 with xs 0:
 * the nodes share one input, unrolled once). */
static dt_status conv_fwd(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs,
                          size_t ss, const float *w, const float *b, size_t ps, float *y, size_t ys, float *col,
                          size_t cols) {
  const int ckk = s->c * s->k * s->k;
  const size_t N = (size_t)S * s->oh * s->ow;
  KERNEL(k_im2col, be, (size_t)(cols == 0 ? 1 : count) * ckk * N, *s, S, x, xs, cs, ss, col, cols);
  KERNEL(k_bias_rows, be, (size_t)count * s->f * N, s->f, N, b, ps, y, ys);
  return gemm(be, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, s->f, ckk, col, (int)N, (long long)cols, w, ckk, (long long)ps, 1.0f, y,
              (int)N, (long long)ys, count);
}

static dt_status conv_bwd(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs,
                          size_t ss, const float *w, size_t ps, const float *dy, size_t ys, float *dw, float *db, size_t gs,
                          float *dx, size_t dxs, float *col, float *dcol, size_t cols) {
  const int ckk = s->c * s->k * s->k;
  const size_t N = (size_t)S * s->oh * s->ow;
  KERNEL(k_im2col, be, (size_t)count * ckk * N, *s, S, x, xs, cs, ss, col, cols);
  DT_TRY(gemm(be, CUBLAS_OP_T, CUBLAS_OP_N, ckk, s->f, (int)N, col, (int)N, (long long)cols, dy, (int)N, (long long)ys, 0.0f,
              dw, ckk, (long long)gs, count));
  k_row_sums<<<count * s->f, CU_THREADS, 0, ctx_of(be)->stream>>>(s->f, N, dy, ys, db, gs);
  CU_LAUNCHED();
  if (dx == NULL) return DT_OK;
  DT_TRY(gemm(be, CUBLAS_OP_N, CUBLAS_OP_T, (int)N, ckk, s->f, dy, (int)N, (long long)ys, w, ckk, (long long)ps, 0.0f, dcol,
              (int)N, (long long)cols, count));
  KERNEL(k_col2im, be, (size_t)count * s->c * S * s->h * s->w, *s, S, dcol, cols, dx, dxs, cs, ss);
  return DT_OK;
}

/* ---- node-batched model calls ------------------------------------------------------------------ */

typedef struct cu_plan {
  int L, classes, S, G, nodes;
  size_t P, ps;         /* parameters per node, and the group's node stride for them */
  size_t ns;            /* floats per node in every activation and gradient buffer */
  size_t cols;          /* floats per node of the im2col buffers */
  size_t in_dim;        /* floats per input sample */
  int shared_input;     /* evaluation may read the one input for all nodes (stride 0) */
  dt_layer_info ly[DT_MAX_LAYERS];
  /* activation l: channel-major or sample-major, and its (channels, plane) split */
  int cnhw[DT_MAX_LAYERS + 1];
  size_t chan[DT_MAX_LAYERS + 1], plane[DT_MAX_LAYERS + 1];
  float *theta, *grad;  /* G × ps */
  float *buf[DT_MAX_LAYERS + 1], *tin[DT_MAX_LAYERS];
  int32_t *argmax[DT_MAX_LAYERS];
  uint8_t *mask[DT_MAX_LAYERS];
  float *ga, *gb, *col, *dcol;
  int32_t *y;           /* G × S labels */
  double *sample_loss;  /* G × S */
  int *sample_hit;      /* G × S */
  double *total;        /* G */
  long long *correct;   /* G */
  int dropouts;
  /* per call, one G-slot block per group: batch sizes, loss scales, dropout stream states;
   * device copies and pinned host sources (asynchronous uploads need a source nobody rewrites
   * before the call ends) */
  int groups_cap;
  int *batch_d, *batch_h;
  float *scale_d, *scale_h;
  dt_rng *states_d, *states_h;
  double *total_h;
  long long *correct_h;
} cu_plan;

static void free_host(void *p) {
  if (p != NULL) (void)cudaFreeHost(p);
}

void cu_plan_free(dt_backend *be, void *p) {
  cu_plan *pl = (cu_plan *)p;
  if (pl == NULL) return;
  cu_free(be, pl->theta);
  cu_free(be, pl->grad);
  for (int l = 0; l <= DT_MAX_LAYERS; l++) cu_free(be, pl->buf[l]);
  for (int l = 0; l < DT_MAX_LAYERS; l++) {
    cu_free(be, pl->tin[l]);
    cu_free(be, pl->argmax[l]);
    cu_free(be, pl->mask[l]);
  }
  cu_free(be, pl->ga);
  cu_free(be, pl->gb);
  cu_free(be, pl->col);
  cu_free(be, pl->dcol);
  cu_free(be, pl->y);
  cu_free(be, pl->sample_loss);
  cu_free(be, pl->sample_hit);
  cu_free(be, pl->total);
  cu_free(be, pl->correct);
  cu_free(be, pl->batch_d);
  cu_free(be, pl->scale_d);
  cu_free(be, pl->states_d);
  free_host(pl->batch_h);
  free_host(pl->scale_h);
  free_host(pl->states_h);
  free_host(pl->total_h);
  free_host(pl->correct_h);
  dt_free(pl);
}

static dt_status host_alloc(size_t bytes, void **out) {
  CU_CALL(cudaMallocHost(out, bytes > 0 ? bytes : 1));
  memset(*out, 0, bytes);
  return DT_OK;
}

/* Shapes, the group size, and the plan's memory. */
static dt_status plan_fill(dt_backend *be, const dt_model *m, int max_batch, int nodes, int run_nodes, cu_plan *pl) {
  pl->L = dt_model_num_layers(m);
  pl->classes = dt_model_num_classes(m);
  pl->S = max_batch;
  pl->nodes = nodes > 0 ? nodes : 1;
  pl->P = dt_model_num_params(m);
  pl->ps = dt_slab_stride(pl->P);
  pl->in_dim = dt_model_input_size(m);
  size_t maxs = pl->in_dim, cols = 0;
  for (int l = 0; l < pl->L; l++) {
    const dt_layer_info li = dt_model_layer(m, l);
    pl->ly[l] = li;
    if (l == 0) { /* the input: sample-major, split as the first spatial layer sees it */
      pl->chan[0] = li.kind == DT_LAYER_CONV2D ? (size_t)li.conv.c : li.kind == DT_LAYER_MAXPOOL2D ? (size_t)li.pool.c : 1;
      pl->plane[0] = pl->in_dim / pl->chan[0];
    }
    if (li.out_size > maxs) maxs = li.out_size;
    switch (li.kind) {
      case DT_LAYER_CONV2D: {
        const size_t c = (size_t)li.conv.c * li.conv.k * li.conv.k * li.conv.oh * li.conv.ow;
        cols = c > cols ? c : cols;
        pl->cnhw[l + 1] = 1, pl->chan[l + 1] = (size_t)li.conv.f, pl->plane[l + 1] = (size_t)li.conv.oh * li.conv.ow;
        break;
      }
      case DT_LAYER_MAXPOOL2D:
        pl->cnhw[l + 1] = pl->cnhw[l], pl->chan[l + 1] = (size_t)li.pool.c, pl->plane[l + 1] = (size_t)li.pool.oh * li.pool.ow;
        break;
      case DT_LAYER_RELU:
      case DT_LAYER_DROPOUT:
        pl->cnhw[l + 1] = pl->cnhw[l], pl->chan[l + 1] = pl->chan[l], pl->plane[l + 1] = pl->plane[l];
        pl->dropouts += li.kind == DT_LAYER_DROPOUT;
        break;
      default: /* flatten, linear: sample-major vectors */
        pl->cnhw[l + 1] = 0, pl->chan[l + 1] = 1, pl->plane[l + 1] = li.out_size;
        break;
    }
  }
  {
    const dt_layer_kind k0 = pl->ly[0].kind;
    pl->shared_input = k0 == DT_LAYER_CONV2D || k0 == DT_LAYER_LINEAR ||
                       (k0 == DT_LAYER_FLATTEN && pl->L > 1 && pl->ly[1].kind == DT_LAYER_LINEAR);
    const size_t S = (size_t)pl->S;
    pl->ns = (S * maxs + 63) & ~(size_t)63;
    pl->cols = (S * cols + 63) & ~(size_t)63;
    /* per node at most: L+1 activations, a transpose and a mask or argmax per layer, two
     * gradient buffers, two im2col buffers, parameters and gradient */
    const size_t per_node = sizeof(float) * ((2 * (size_t)pl->L + 3) * pl->ns + 2 * pl->cols + 2 * pl->ps);
    size_t g = GROUP_BYTES / (per_node > 0 ? per_node : 1);
    const size_t run = (size_t)(run_nodes > 0 ? run_nodes : 1);
    g = g < 1 ? 1 : g > (size_t)GROUP_MAX ? (size_t)GROUP_MAX : g;
    pl->G = (int)(g > run ? run : g);
    pl->groups_cap = (pl->nodes + pl->G - 1) / pl->G;
  }
  {
    const size_t G = (size_t)pl->G, S = (size_t)pl->S, slots = (size_t)pl->groups_cap * G;
#define PL_ALLOC(p, count) DT_TRY(cu_alloc(be, sizeof(*(p)) * (size_t)(count), (void **)&(p)))
#define PL_HOST(p, count) DT_TRY(host_alloc(sizeof(*(p)) * (size_t)(count), (void **)&(p)))
    PL_ALLOC(pl->theta, G * pl->ps);
    PL_ALLOC(pl->grad, G * pl->ps);
    PL_ALLOC(pl->buf[0], G * pl->ns);
    for (int l = 0; l < pl->L; l++) {
      const dt_layer_kind k = pl->ly[l].kind;
      if (k != DT_LAYER_FLATTEN || pl->cnhw[l]) PL_ALLOC(pl->buf[l + 1], G * pl->ns);
      if (k == DT_LAYER_LINEAR && pl->cnhw[l]) PL_ALLOC(pl->tin[l], G * pl->ns);
      if (k == DT_LAYER_MAXPOOL2D) PL_ALLOC(pl->argmax[l], G * pl->ns);
      if (k == DT_LAYER_DROPOUT) PL_ALLOC(pl->mask[l], G * pl->ns);
    }
    PL_ALLOC(pl->ga, G * pl->ns);
    PL_ALLOC(pl->gb, G * pl->ns);
    if (pl->cols > 0) {
      PL_ALLOC(pl->col, G * pl->cols);
      PL_ALLOC(pl->dcol, G * pl->cols);
    }
    PL_ALLOC(pl->y, G * S);
    PL_ALLOC(pl->sample_loss, G * S);
    PL_ALLOC(pl->sample_hit, G * S);
    PL_ALLOC(pl->total, slots);
    PL_ALLOC(pl->correct, slots);
    PL_ALLOC(pl->batch_d, slots);
    PL_ALLOC(pl->scale_d, slots);
    PL_ALLOC(pl->states_d, slots * (size_t)(pl->dropouts > 0 ? pl->dropouts : 1));
    PL_HOST(pl->batch_h, slots);
    PL_HOST(pl->scale_h, slots);
    PL_HOST(pl->states_h, slots * (size_t)(pl->dropouts > 0 ? pl->dropouts : 1));
    PL_HOST(pl->total_h, slots);
    PL_HOST(pl->correct_h, slots);
#undef PL_ALLOC
#undef PL_HOST
  }
  return DT_OK;
}

dt_status cu_plan_create(dt_backend *be, const dt_model *m, int max_batch, int nodes, int run_nodes, void **out) {
  dt_status st = DT_OK;
  cu_plan *pl = NULL;
  *out = NULL;
  DT_CHECK(max_batch >= 1, DT_ERR_CONFIG, "batch size must be at least 1, found %d", max_batch);
  CU_HOST_NEW(pl, "model plan");
  DT_TRY_GOTO(plan_fill(be, m, max_batch, nodes, run_nodes, pl));
  *out = pl;
  pl = NULL;
cleanup:
  cu_plan_free(be, pl);
  return st;
}

/* (cs, ss) of activation l for S samples. */
static void act_strides(const cu_plan *pl, int l, int S, size_t *cs, size_t *ss) {
  if (pl->cnhw[l]) *cs = (size_t)S * pl->plane[l], *ss = pl->plane[l];
  else *cs = pl->plane[l], *ss = pl->chan[l] * pl->plane[l];
}

/* (C, S, plane) → sample-major (S, C·plane) per node, or back. */
static dt_status transpose(dt_backend *be, const cu_plan *pl, int l, int count, int S, const float *x, size_t xns, float *y,
                           int back) {
  KERNEL(k_to_samples, be, (size_t)count * pl->chan[l] * S * pl->plane[l], (int)pl->chan[l], S, pl->plane[l], x, xns, y,
         pl->ns, back);
  return DT_OK;
}

/* The group's call state: activation pointers (a flatten of a sample-major input aliases it) and
 * their node strides (0: the input, shared by all nodes). */
typedef struct pass {
  int count, S, train, group; /* slots, samples, dropout on, group index (its block of per-call arrays) */
  const float *a[DT_MAX_LAYERS + 1];
  size_t as[DT_MAX_LAYERS + 1];
} pass;

static pass make_pass(int count, int S, int train, int group) {
  pass p;
  memset(&p, 0, sizeof p);
  p.count = count, p.S = S, p.train = train, p.group = group;
  return p;
}

static dt_status forward(dt_backend *be, cu_plan *pl, pass *ps) {
  const int count = ps->count, S = ps->S;
  const size_t ns = pl->ns, pst = pl->ps;
  int drop = 0;
  for (int l = 0; l < pl->L; l++) {
    const dt_layer_info *li = &pl->ly[l];
    const float *in = ps->a[l];
    const size_t ins = ps->as[l];
    float *o = pl->buf[l + 1];
    const float *w = pl->theta + li->w_off, *b = pl->theta + li->b_off;
    size_t cs, ss;
    act_strides(pl, l, S, &cs, &ss);
    ps->a[l + 1] = o;
    ps->as[l + 1] = ns;
    switch (li->kind) {
      case DT_LAYER_CONV2D:
        DT_TRY(conv_fwd(be, count, S, &li->conv, in, ins, cs, ss, w, b, pst, o, ns, pl->col, ins == 0 ? 0 : pl->cols));
        break;
      case DT_LAYER_MAXPOOL2D: {
        const dt_pool_shape *s = &li->pool;
        const size_t planes = (size_t)s->c * S;
        KERNEL(k_maxpool, be, (size_t)count * planes * s->oh * s->ow, *s, planes, in, ins, o, ns, pl->argmax[l]);
        break;
      }
      case DT_LAYER_RELU: KERNEL(k_relu, be, (size_t)count * ns, in, o); break;
      case DT_LAYER_FLATTEN:
        if (pl->cnhw[l]) DT_TRY(transpose(be, pl, l, count, S, in, ins, o, 0));
        else ps->a[l + 1] = in, ps->as[l + 1] = ins;
        break;
      case DT_LAYER_DROPOUT:
        if (ps->train && li->p > 0.0f) {
          KERNEL(k_dropout, be, (size_t)count * pl->chan[l] * S * pl->plane[l], (int)pl->chan[l], S, pl->plane[l], ns, cs, ss,
                 li->p, dt_f_dropout_scale(li->p), pl->states_d + ((size_t)ps->group * pl->dropouts + drop) * pl->G,
                 pl->batch_d + (size_t)ps->group * pl->G, in, o, pl->mask[l]);
          drop++;
        } else {
          CU_CALL(cudaMemcpyAsync(o, in, sizeof(float) * count * ns, cudaMemcpyDeviceToDevice, ctx_of(be)->stream));
        }
        break;
      case DT_LAYER_LINEAR: {
        const float *xin = in;
        size_t xs = ins;
        if (pl->cnhw[l]) {
          DT_TRY(transpose(be, pl, l, count, S, in, ins, pl->tin[l], 0));
          xin = pl->tin[l], xs = ns;
        }
        DT_TRY(linear_fwd(be, count, S, (int)li->in_size, (int)li->out_size, xin, xs, w, b, pst, o, ns));
        break;
      }
      default: break;
    }
  }
  return DT_OK;
}

/* Backward from dlogits in pl->ga; parameter gradients into pl->grad. */
static dt_status backward(dt_backend *be, cu_plan *pl, pass *ps) {
  const int count = ps->count, S = ps->S;
  const size_t ns = pl->ns, pst = pl->ps;
  float *dcur = pl->ga, *dnext = pl->gb;
  for (int l = pl->L - 1; l >= 0; l--) {
    const dt_layer_info *li = &pl->ly[l];
    const float *in = ps->a[l];
    const size_t ins = ps->as[l];
    const float *w = pl->theta + li->w_off;
    float *dw = pl->grad + li->w_off, *db = pl->grad + li->b_off;
    float *dx = l > 0 ? dnext : NULL;
    size_t cs, ss;
    act_strides(pl, l, S, &cs, &ss);
    switch (li->kind) {
      case DT_LAYER_CONV2D:
        DT_TRY(conv_bwd(be, count, S, &li->conv, in, ins, cs, ss, w, pst, dcur, ns, dw, db, pst, dx, ns, pl->col, pl->dcol,
                        pl->cols));
        break;
      case DT_LAYER_LINEAR: {
        const float *xin = pl->cnhw[l] ? pl->tin[l] : in;
        const size_t xs = pl->cnhw[l] ? ns : ins;
        /* a channel-major input's gradient comes out sample-major in tin (read for dW first) */
        float *dxs = dx != NULL && pl->cnhw[l] ? pl->tin[l] : dx;
        DT_TRY(linear_bwd(be, count, S, (int)li->in_size, (int)li->out_size, xin, xs, w, pst, dcur, ns, dw, db, pst, dxs, ns));
        if (dx != NULL && pl->cnhw[l]) DT_TRY(transpose(be, pl, l, count, S, pl->tin[l], ns, dx, 1));
        break;
      }
      case DT_LAYER_MAXPOOL2D:
        if (dx != NULL) {
          const dt_pool_shape *s = &li->pool;
          const size_t planes = (size_t)s->c * S;
          KERNEL(k_maxpool_back, be, (size_t)count * planes * s->h * s->w, *s, planes, dcur, pl->argmax[l], ns, dx, ns);
        }
        break;
      case DT_LAYER_RELU:
        KERNEL(k_relu_back, be, (size_t)count * ns, pl->buf[l + 1], dcur, dcur);
        dx = dcur;
        break;
      case DT_LAYER_DROPOUT:
        if (ps->train && li->p > 0.0f) KERNEL(k_dropout_back, be, (size_t)count * ns, dt_f_dropout_scale(li->p), pl->mask[l], dcur, dcur);
        dx = dcur;
        break;
      case DT_LAYER_FLATTEN:
        if (pl->cnhw[l] && dx != NULL) DT_TRY(transpose(be, pl, l, count, S, dcur, ns, dx, 1));
        else dx = dcur;
        break;
      default: break;
    }
    if (dx == dnext) {
      dnext = dcur;
      dcur = dx;
    }
  }
  return DT_OK;
}

/* The G-slot block of group q in a per-call array. */
#define BLOCK(p, q) ((p) + (size_t)(q) * pl->G)

dt_status cu_model_gradients(dt_backend *be, void *plan, const dt_node_batch *nb) {
  cu_plan *pl = (cu_plan *)plan;
  cudaStream_t stream = ctx_of(be)->stream;
  const int G = pl->G, S = pl->S, groups = (nb->count + G - 1) / G;
  DT_CHECK(groups <= pl->groups_cap, DT_ERR_INTERNAL, "model call for %d nodes, plan made for %d", nb->count, pl->nodes);
  for (int q = 0; q < groups; q++) {
    const int g0 = q * G, cnt = nb->count - g0 < G ? nb->count - g0 : G;
    int *bh = BLOCK(pl->batch_h, q);
    float *sh = BLOCK(pl->scale_h, q);
    for (int g = 0; g < G; g++) {
      const int b = g < cnt ? nb->batch[g0 + g] : 0;
      DT_CHECK(b >= 0 && b <= S, DT_ERR_INTERNAL, "batch %d outside the plan's 0..%d", b, S);
      bh[g] = b;
      sh[g] = b > 0 ? 1.0f / (float)b : 0.0f;
    }
    /* dropout: each layer's stream states, then the host streams move past what it draws */
    for (int d = 0, l = 0; l < pl->L; l++) {
      if (pl->ly[l].kind != DT_LAYER_DROPOUT) continue;
      dt_rng *rs = pl->states_h + ((size_t)q * pl->dropouts + d) * G;
      for (int g = 0; g < cnt; g++)
        if (nb->dropout != NULL && bh[g] > 0) {
          rs[g] = nb->dropout[g0 + g];
          if (pl->ly[l].p > 0.0f) dt_rng_skip(&nb->dropout[g0 + g], (uint64_t)bh[g] * pl->ly[l].out_size);
        }
      d++;
    }
    CU_CALL(cudaMemcpyAsync(BLOCK(pl->batch_d, q), bh, sizeof(int) * G, cudaMemcpyHostToDevice, stream));
    CU_CALL(cudaMemcpyAsync(BLOCK(pl->scale_d, q), sh, sizeof(float) * G, cudaMemcpyHostToDevice, stream));
    if (pl->dropouts > 0)
      CU_CALL(cudaMemcpyAsync(pl->states_d + (size_t)q * pl->dropouts * G, pl->states_h + (size_t)q * pl->dropouts * G,
                              sizeof(dt_rng) * pl->dropouts * G, cudaMemcpyHostToDevice, stream));
    CU_CALL(cudaMemcpy2DAsync(pl->theta, sizeof(float) * pl->ps, nb->theta + (size_t)g0 * nb->theta_stride,
                              sizeof(float) * nb->theta_stride, sizeof(float) * pl->P, cnt, cudaMemcpyDeviceToDevice, stream));
    KERNEL(k_gather_batch, be, (size_t)G * S * pl->in_dim, S, pl->in_dim, nb->x + (size_t)g0 * nb->x_stride, nb->x_stride,
           nb->y + (size_t)g0 * nb->y_stride, nb->y_stride, BLOCK(pl->batch_d, q), pl->buf[0], pl->ns, pl->y);
    pass ps = make_pass(G, S, nb->dropout != NULL, q);
    ps.a[0] = pl->buf[0];
    ps.as[0] = pl->ns;
    DT_TRY(forward(be, pl, &ps));
    KERNEL(k_softmax_nll, be, (size_t)G * S, pl->classes, S, ps.a[pl->L], pl->ns, pl->y, (size_t)S, BLOCK(pl->batch_d, q),
           BLOCK(pl->scale_d, q), pl->ga, pl->sample_loss, pl->sample_hit);
    CU_CALL(cudaMemsetAsync(BLOCK(pl->total, q), 0, sizeof(double) * G, stream));
    CU_CALL(cudaMemsetAsync(BLOCK(pl->correct, q), 0, sizeof(long long) * G, stream));
    KERNEL(k_node_totals, be, (size_t)G, S, pl->sample_loss, pl->sample_hit, BLOCK(pl->total, q), BLOCK(pl->correct, q));
    DT_TRY(backward(be, pl, &ps));
    KERNEL(k_scatter_grad, be, (size_t)cnt * pl->P, pl->P, pl->grad, pl->ps, BLOCK(pl->batch_d, q),
           nb->grad + (size_t)g0 * nb->grad_stride, nb->grad_stride);
  }
  CU_CALL(cudaMemcpyAsync(pl->total_h, pl->total, sizeof(double) * groups * G, cudaMemcpyDeviceToHost, stream));
  CU_CALL(cudaStreamSynchronize(stream));
  for (int l = 0; l < nb->count; l++)
    if (nb->batch[l] > 0) nb->loss[l] = (float)(pl->total_h[l] / nb->batch[l]);
  return DT_OK;
}

dt_status cu_model_evaluate(dt_backend *be, void *plan, const dt_node_eval *ne) {
  cu_plan *pl = (cu_plan *)plan;
  cudaStream_t stream = ctx_of(be)->stream;
  const int G = pl->G, groups = (ne->count + G - 1) / G;
  DT_CHECK(groups <= pl->groups_cap, DT_ERR_INTERNAL, "model call for %d nodes, plan made for %d", ne->count, pl->nodes);
  for (int q = 0; q < groups; q++) {
    const int g0 = q * G, cnt = ne->count - g0 < G ? ne->count - g0 : G;
    CU_CALL(cudaMemcpy2DAsync(pl->theta, sizeof(float) * pl->ps, ne->theta + (size_t)g0 * ne->theta_stride,
                              sizeof(float) * ne->theta_stride, sizeof(float) * pl->P, cnt, cudaMemcpyDeviceToDevice, stream));
    CU_CALL(cudaMemsetAsync(BLOCK(pl->total, q), 0, sizeof(double) * G, stream));
    CU_CALL(cudaMemsetAsync(BLOCK(pl->correct, q), 0, sizeof(long long) * G, stream));
    for (int start = 0; start < ne->n; start += pl->S) {
      const int S = ne->n - start < pl->S ? ne->n - start : pl->S;
      const float *x = ne->x + (size_t)start * pl->in_dim;
      pass ps = make_pass(G, S, 0, q);
      if (pl->shared_input) {
        ps.a[0] = x, ps.as[0] = 0;
      } else { /* every slot gets its own copy of the chunk */
        KERNEL(k_broadcast, be, (size_t)G * S * pl->in_dim, (size_t)S * pl->in_dim, x, pl->buf[0], pl->ns);
        ps.a[0] = pl->buf[0], ps.as[0] = pl->ns;
      }
      DT_TRY(forward(be, pl, &ps));
      KERNEL(k_softmax_nll, be, (size_t)G * S, pl->classes, S, ps.a[pl->L], pl->ns, ne->y + start, (size_t)0, (const int *)NULL,
             (const float *)NULL, (float *)NULL, pl->sample_loss, pl->sample_hit);
      KERNEL(k_node_totals, be, (size_t)G, S, pl->sample_loss, pl->sample_hit, BLOCK(pl->total, q), BLOCK(pl->correct, q));
    }
  }
  CU_CALL(cudaMemcpyAsync(pl->total_h, pl->total, sizeof(double) * groups * G, cudaMemcpyDeviceToHost, stream));
  CU_CALL(cudaMemcpyAsync(pl->correct_h, pl->correct, sizeof(long long) * groups * G, cudaMemcpyDeviceToHost, stream));
  CU_CALL(cudaStreamSynchronize(stream));
  for (int l = 0; l < ne->count; l++) {
    ne->loss_sum[l] += pl->total_h[l];
    ne->correct[l] += (long)pl->correct_h[l];
  }
  return DT_OK;
}
