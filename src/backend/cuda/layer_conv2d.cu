/* conv2d on the GPU: im2col + one strided-batched GEMM per group (each node its own filters), or
 * directly where that GEMM would be skinny (cu_conv_direct); the output is channel-major (CNHW)
 * whatever the input's layout. Also the convolution of a residual block's projection. */
#include "nn_impl.h"

/* ---- direct convolution ------------------------------------------------------------------------
 * Forward, where a sample and the filters do not fit k_conv_tile's shared memory: one thread per
 * (FB filters, output position), each input tap read once for its FB filters; every output sums
 * its taps in (c, ki, kj) order, then its bias. */
template <int FB>
static __global__ void k_conv_direct(int count, unsigned per, dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs,
                                     size_t ss, const float *w, const float *b, size_t pns, float *y, size_t yns) {
  const unsigned ohw = (unsigned)(sh.oh * sh.ow), N = (unsigned)S * ohw;
  const int K = sh.k, ckk = sh.c * K * K;
  NODE_LOOP(g, i, count, per) {
    const unsigned fb = i / N, j = i % N, s = j / ohw, q = j % ohw;
    const int oh = (int)(q / sh.ow), ow = (int)(q % sh.ow), f0 = (int)fb * FB;
    const float *wf = w + g * pns + (size_t)f0 * ckk;
    const float *xs = x + g * xns + (size_t)s * ss;
    int wo[FB]; /* each filter's weights (a filter past f reads the first: computed, not written) */
#pragma unroll
    for (int t = 0; t < FB; t++) wo[t] = f0 + t < sh.f ? t * ckk : 0;
    float acc[FB];
#pragma unroll
    for (int t = 0; t < FB; t++) acc[t] = 0.0f;
    for (int c = 0; c < sh.c; c++)
      for (int ki = 0; ki < K; ki++) {
        const int ih = oh * sh.stride - sh.pad + ki;
        if (ih < 0 || ih >= sh.h) continue;
        for (int kj = 0; kj < K; kj++) {
          const int iw = ow * sh.stride - sh.pad + kj;
          if (iw < 0 || iw >= sh.w) continue;
          const float v = xs[(size_t)c * cs + (size_t)ih * sh.w + iw];
          const int r = (c * K + ki) * K + kj;
#pragma unroll
          for (int t = 0; t < FB; t++) acc[t] += wf[wo[t] + r] * v;
        }
      }
#pragma unroll
    for (int t = 0; t < FB; t++)
      if (f0 + t < sh.f) y[g * yns + (size_t)(f0 + t) * N + j] = b != NULL ? acc[t] + b[g * pns + f0 + t] : acc[t];
  }
}

/* Forward with the sample in shared memory, for layers of at most TILE_FILTERS filters whose
 * input planes and filters fit (TILE_BYTES): block (sample, node) loads both once and computes
 * every output of the sample, each thread its outputs in turn (consecutive positions: coalesced
 * stores, conflict-free reads); the taps in (c, ki, kj) order, then the bias, as k_conv_direct.
 * With more filters k_conv_direct's reuse of each tap over FB filters wins (measured on an H200:
 * the seed CNN's 3 filters, 1,000 nodes, 1.99 ms here against 2.07; the larger CNN's 32, 100
 * nodes, 1.85 ms against 0.87). */
enum { TILE_BYTES = 48 * 1024, TILE_FILTERS = 4 };

static __global__ void k_conv_tile(dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs, size_t ss, const float *w,
                                   const float *b, size_t pns, float *y, size_t yns) {
  extern __shared__ float tile[];
  const int hw = sh.h * sh.w, chw = sh.c * hw, K = sh.k, ckk = sh.c * K * K, ohw = sh.oh * sh.ow;
  float *xt = tile, *wt = tile + chw;
  const size_t g = blockIdx.y;
  const int s = (int)blockIdx.x;
  const float *xg = x + g * xns + (size_t)s * ss;
  for (int i = threadIdx.x; i < chw; i += CU_THREADS) xt[i] = xg[(size_t)(i / hw) * cs + i % hw];
  const float *wg = w + g * pns;
  for (int i = threadIdx.x; i < sh.f * ckk; i += CU_THREADS) wt[i] = wg[i];
  __syncthreads();
  float *yg = y + g * yns + (size_t)s * ohw;
  const size_t N = (size_t)S * ohw;
  for (int o = threadIdx.x; o < sh.f * ohw; o += CU_THREADS) {
    const int f = o / ohw, q = o % ohw, oh = q / sh.ow, ow = q % sh.ow;
    const float *wf = wt + f * ckk;
    float acc = 0.0f;
    for (int c = 0; c < sh.c; c++)
      for (int ki = 0; ki < K; ki++) {
        const int ih = oh * sh.stride - sh.pad + ki;
        if (ih < 0 || ih >= sh.h) continue;
        for (int kj = 0; kj < K; kj++) {
          const int iw = ow * sh.stride - sh.pad + kj;
          if (iw >= 0 && iw < sh.w) acc += wf[(c * K + ki) * K + kj] * xt[c * hw + ih * sh.w + iw];
        }
      }
    yg[(size_t)f * N + q] = b != NULL ? acc + b[g * pns + f] : acc;
  }
}

/* Weight gradient, dw[g][f][r] = Σ_j dy[g][f][j]·x_r(j) over the N = S·ohw output positions j, in
 * two fixed-order passes (no atomics). First, block (g·F + f, chunk) sums the positions of its
 * chunk of DW_CHUNK for up to TAPS taps r at once (grid.z: the next TAPS; each thread reads
 * a position's dy once and its window's taps, which neighbouring threads share in cache), each
 * thread over its positions in order, then warp shuffles and the warps in order; the partial sums
 * go to part[g][f][chunk][r].
 * Then each dw sums its chunks in order. The chunks depend on N alone. */
enum { DW_CHUNK = 2048, DW_WARPS = CU_THREADS / 32 };

size_t cu_conv_dw_chunks(size_t n) { return (n + DW_CHUNK - 1) / DW_CHUNK; }

/* TAPS taps per block (grid.z walks blocks of them): 32 without padding, 16 with (the bounds
 * checks take registers), both under 128 registers so that two blocks fit on a multiprocessor */
template <int TAPS, bool PAD>
static __global__ void __launch_bounds__(CU_THREADS, 2)
    k_conv_dw_part(dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs, size_t ss, const float *dy, size_t yns, float *part,
                   size_t pns, unsigned chunks) {
  __shared__ int toff[TAPS], tki[TAPS], tkj[TAPS];
  __shared__ float wsum[DW_WARPS][TAPS];
  const int K = sh.k, ckk_all = sh.c * K * K, r0 = (int)blockIdx.z * TAPS;
  const int ckk = ckk_all - r0 < TAPS ? ckk_all - r0 : TAPS; /* this block's taps r0 .. r0 + ckk - 1 */
  const unsigned ohw = (unsigned)(sh.oh * sh.ow), N = (unsigned)S * ohw; /* under 2^31: the plan checks */
  const int g = blockIdx.x / sh.f, f = blockIdx.x % sh.f;
  const unsigned chunk = blockIdx.y, j0 = chunk * DW_CHUNK, j1 = j0 + DW_CHUNK < N ? j0 + DW_CHUNK : N;
  for (int r = threadIdx.x; r < TAPS; r += CU_THREADS) {
    const int rr = r0 + (r < ckk ? r : 0), c = rr / (K * K), ki = rr / K % K, kj = rr % K;
    toff[r] = (int)((size_t)c * cs) + ki * sh.w + kj, tki[r] = ki, tkj[r] = kj;
  }
  __syncthreads();
  float acc[TAPS];
#pragma unroll
  for (int r = 0; r < TAPS; r++) acc[r] = 0.0f;
  const float *dyr = dy + (size_t)g * yns + (size_t)f * N;
  const float *xg = x + (size_t)g * xns;
  for (unsigned j = j0 + threadIdx.x; j < j1; j += CU_THREADS) {
    const float d = dyr[j];
    const unsigned s = j / ohw, q = j % ohw;
    const int h0 = (int)(q / sh.ow) * sh.stride - sh.pad, w0 = (int)(q % sh.ow) * sh.stride - sh.pad;
    const float *xw = xg + (size_t)s * ss + (ptrdiff_t)h0 * sh.w + w0; /* the window's corner (may lie outside) */
    if (!PAD) { /* every window inside the input */
#pragma unroll
      for (int r = 0; r < TAPS; r++)
        if (r < ckk) acc[r] += d * xw[toff[r]];
    } else {
#pragma unroll
      for (int r = 0; r < TAPS; r++) {
        const int ih = h0 + tki[r], iw = w0 + tkj[r];
        if (r < ckk && ih >= 0 && ih < sh.h && iw >= 0 && iw < sh.w) acc[r] += d * xw[toff[r]];
      }
    }
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int r = 0; r < TAPS; r++) {
    float v = acc[r];
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) wsum[warp][r] = v;
  }
  __syncthreads();
  for (int r = threadIdx.x; r < ckk; r += CU_THREADS) {
    float v = 0.0f;
    for (int k = 0; k < DW_WARPS; k++) v += wsum[k][r];
    part[(size_t)g * pns + ((size_t)f * chunks + chunk) * ckk_all + r0 + r] = v;
  }
}

static __global__ void k_conv_dw_sum(int count, unsigned per, int ckk, unsigned chunks, const float *part, size_t pns, float *dw,
                                     size_t gns) {
  NODE_LOOP(g, i, count, per) {
    const unsigned f = i / (unsigned)ckk, r = i % (unsigned)ckk;
    const float *p = part + g * pns + (size_t)f * chunks * ckk + r;
    float v = 0.0f;
    for (unsigned k = 0; k < chunks; k++) v += p[(size_t)k * ckk];
    dw[g * gns + i] = v;
  }
}

static dt_status direct_forward(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs,
                                size_t ss, const float *w, const float *b, size_t ps, float *y, size_t ys) {
  const size_t N = (size_t)S * s->oh * s->ow;
  const size_t tile = sizeof(float) * ((size_t)s->c * s->h * s->w + (size_t)s->f * s->c * s->k * s->k);
  if (s->f <= TILE_FILTERS && tile <= TILE_BYTES && count <= 65535) {
    k_conv_tile<<<dim3((unsigned)S, (unsigned)count), CU_THREADS, tile, ctx_of(be)->stream>>>(*s, S, x, xs, cs, ss, w, b, ps, y, ys);
    CU_LAUNCHED();
    return DT_OK;
  }
  if (s->f <= 4) NODE_KERNEL(k_conv_direct<4>, be, count, N, *s, S, x, xs, cs, ss, w, b, ps, y, ys);
  else NODE_KERNEL(k_conv_direct<8>, be, count, (size_t)((s->f + 7) / 8) * N, *s, S, x, xs, cs, ss, w, b, ps, y, ys);
  return DT_OK;
}

/* part: scratch of f·chunks·c·k·k floats per node at node stride pns */
static dt_status direct_dw(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs, size_t ss,
                           const float *dy, size_t ys, float *dw, size_t gs, float *part, size_t pns) {
  const int ckk = s->c * s->k * s->k;
  const size_t N = (size_t)S * s->oh * s->ow;
  const unsigned chunks = (unsigned)cu_conv_dw_chunks(N);
  DT_CHECK(chunks <= 65535, DT_ERR_UNSUPPORTED, "a direct convolution over %zu output positions per node; use a smaller batch", N);
  DT_CHECK((size_t)s->f * chunks * ckk <= pns, DT_ERR_INTERNAL, "direct convolution scratch: %zu floats, %zu given",
           (size_t)s->f * chunks * ckk, pns);
  cudaStream_t st = ctx_of(be)->stream;
  if (s->pad == 0)
    k_conv_dw_part<32, false><<<dim3((unsigned)(count * s->f), chunks, (unsigned)((ckk + 31) / 32)), CU_THREADS, 0, st>>>(
        *s, S, x, xs, cs, ss, dy, ys, part, pns, chunks);
  else
    k_conv_dw_part<16, true><<<dim3((unsigned)(count * s->f), chunks, (unsigned)((ckk + 15) / 16)), CU_THREADS, 0, st>>>(
        *s, S, x, xs, cs, ss, dy, ys, part, pns, chunks);
  CU_LAUNCHED();
  NODE_KERNEL(k_conv_dw_sum, be, count, (size_t)s->f * ckk, ckk, chunks, part, pns, dw, gs);
  return DT_OK;
}

/* ---- the layer -------------------------------------------------------------------------------- */

dt_status cu_conv_forward(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs, size_t ss,
                          const float *w, const float *b, size_t ps, float *y, size_t ys, float *col, size_t cols, int direct) {
  const int ckk = s->c * s->k * s->k;
  const size_t N = (size_t)S * s->oh * s->ow;
  if (direct) return direct_forward(be, count, S, s, x, xs, cs, ss, w, b, ps, y, ys);
  /* nodes sharing one input (xs 0, cols 0) share its unrolled matrix */
  NODE_KERNEL(k_im2col, be, cols == 0 ? 1 : count, (size_t)ckk * N, *s, S, x, xs, cs, ss, col, cols);
  if (b != NULL) NODE_KERNEL(k_bias_rows, be, count, (size_t)s->f * N, (unsigned)N, b, ps, y, ys);
  return cu_gemm(be, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, s->f, ckk, col, (int)N, (long long)cols, w, ckk, (long long)ps,
                 b != NULL ? 1.0f : 0.0f, y, (int)N, (long long)ys, count);
}

dt_status cu_conv_backward(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs, size_t ss,
                           const float *w, size_t ps, const float *dy, size_t ys, float *dw, float *db, size_t gs, float *dx,
                           size_t dxs, float *col, float *dcol, size_t cols, int direct) {
  const int ckk = s->c * s->k * s->k;
  const size_t N = (size_t)S * s->oh * s->ow;
  if (direct) { /* dW straight from x and dy, partial sums in dcol (free until dx's GEMM below) */
    DT_TRY(direct_dw(be, count, S, s, x, xs, cs, ss, dy, ys, dw, gs, dcol, cols));
  } else {
    NODE_KERNEL(k_im2col, be, count, (size_t)ckk * N, *s, S, x, xs, cs, ss, col, cols);
    DT_TRY(cu_gemm(be, CUBLAS_OP_T, CUBLAS_OP_N, ckk, s->f, (int)N, col, (int)N, (long long)cols, dy, (int)N, (long long)ys, 0.0f,
                   dw, ckk, (long long)gs, count));
  }
  if (db != NULL) {
    k_row_sums<<<count * s->f, CU_THREADS, 0, ctx_of(be)->stream>>>(s->f, N, dy, ys, db, gs);
    CU_LAUNCHED();
  }
  if (dx == NULL) return DT_OK;
  DT_TRY(cu_gemm(be, CUBLAS_OP_N, CUBLAS_OP_T, (int)N, ckk, s->f, dy, (int)N, (long long)ys, w, ckk, (long long)ps, 0.0f, dcol,
                 (int)N, (long long)cols, count));
  NODE_KERNEL(k_col2im, be, count, (size_t)s->c * S * s->h * s->w, *s, S, dcol, cols, dx, dxs, cs, ss);
  return DT_OK;
}

static int out_cnhw(const cu_plan *pl, int l) {
  (void)pl, (void)l;
  return 1;
}

static dt_status forward(cu_call *c) {
  const dt_layer_info *li = c->li;
  cu_plan *pl = c->pl;
  return cu_conv_forward(c->be, c->ps->count, c->ps->S, &li->conv, c->x, c->xs, c->xcs, c->xss, pl->theta + li->w_off,
                         li->n_b > 0 ? pl->theta + li->b_off : NULL, pl->ps, c->y, c->ys, pl->col, c->xs == 0 ? 0 : pl->cols,
                         pl->direct[c->l]);
}

static dt_status backward(cu_call *c) {
  const dt_layer_info *li = c->li;
  cu_plan *pl = c->pl;
  return cu_conv_backward(c->be, c->ps->count, c->ps->S, &li->conv, c->x, c->xs, c->xcs, c->xss, pl->theta + li->w_off, pl->ps,
                          c->dy, pl->ns, pl->grad + li->w_off, li->n_b > 0 ? pl->grad + li->b_off : NULL, pl->ps, c->dx, pl->ns,
                          pl->col, pl->dcol, pl->cols, pl->direct[c->l]);
}

const cu_layer_ops cu_layer_conv2d = {.out_cnhw = out_cnhw, .aliases = NULL, .scratch = NULL,
                                      .forward = forward, .backward = backward};
