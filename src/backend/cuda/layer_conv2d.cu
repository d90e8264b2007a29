/* conv2d on the GPU: im2col + one strided-batched GEMM per group (each node its own filters), or
 * directly where that GEMM would be skinny (cu_conv_direct); the output is channel-major (CNHW)
 * whatever the input's layout. Also the convolution of a residual block's projection. */
#include "nn_impl.h"

extern "C" {
#include "dt/formulas.h"
}

/* ---- direct convolution ------------------------------------------------------------------------
 * Every direct forward can apply the relu that follows the layer (relu: the plan fused it, and
 * the relu layer's forward is then nothing; nn_plan.cu): the same value, one pass less. */
static __device__ __forceinline__ float conv_out(float v, int relu) { return relu ? dt_f_relu(v) : v; }

/* Forward, where a sample and the filters do not fit k_conv_tile's shared memory: one thread per
 * (FB filters, output position), each input tap read once for its FB filters; every output sums
 * its taps in (c, ki, kj) order, then its bias. */
template <int FB>
static __global__ void k_conv_direct(int count, unsigned per, dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs,
                                     size_t ss, const float *w, const float *b, size_t pns, float *y, size_t yns, int relu) {
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
      if (f0 + t < sh.f) y[g * yns + (size_t)(f0 + t) * N + j] = conv_out(b != NULL ? acc[t] + b[g * pns + f0 + t] : acc[t], relu);
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
                                   const float *b, size_t pns, float *y, size_t yns, int relu) {
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
    yg[(size_t)f * N + q] = conv_out(b != NULL ? acc + b[g * pns + f] : acc, relu);
  }
}

/* Forward of a stride-1, unpadded convolution with a K×K kernel (K 3 or 5, known at compile time)
 * whose sample and filters fit shared memory: block (sample, node) loads both once; each thread
 * computes FB filters × ROW_STRIP consecutive outputs of one output row, reading each input row
 * segment from shared memory once for all of them, with no division or bounds check per tap.
 * Every output sums its taps in (c, ki, kj) order, then its bias: k_conv_tile's arithmetic, bit
 * for bit (measured on an H200: see the commit that brought it). */
enum { ROW_STRIP = 4 };

template <int K, int FB>
static __global__ void __launch_bounds__(CU_THREADS) k_conv_rows(dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs,
                                                                 size_t ss, const float *w, const float *b, size_t pns, float *y,
                                                                 size_t yns, int relu) {
  extern __shared__ float tile[];
  const int hw = sh.h * sh.w, chw = sh.c * hw, ckk = sh.c * K * K, ohw = sh.oh * sh.ow;
  float *xt = tile, *wt = tile + chw;
  const size_t g = blockIdx.y;
  const int s = (int)blockIdx.x;
  const float *xg = x + g * xns + (size_t)s * ss;
  for (int i = threadIdx.x; i < chw; i += blockDim.x) xt[i] = xg[(size_t)(i / hw) * cs + i % hw];
  const float *wg = w + g * pns;
  for (int i = threadIdx.x; i < sh.f * ckk; i += blockDim.x) wt[i] = wg[i];
  __syncthreads();
  const int strips = (sh.ow + ROW_STRIP - 1) / ROW_STRIP, items = (sh.f + FB - 1) / FB * sh.oh * strips;
  const size_t N = (size_t)S * ohw;
  float *yg = y + g * yns + (size_t)s * ohw;
  for (int it = threadIdx.x; it < items; it += blockDim.x) {
    const int st = it % strips, rest = it / strips, oh = rest % sh.oh, f0 = rest / sh.oh * FB, ow0 = st * ROW_STRIP;
    const float *wf[FB]; /* a filter past f reads the last: computed, not written */
#pragma unroll
    for (int t = 0; t < FB; t++) wf[t] = wt + (f0 + t < sh.f ? f0 + t : sh.f - 1) * ckk;
    float acc[FB][ROW_STRIP];
#pragma unroll
    for (int t = 0; t < FB; t++)
#pragma unroll
      for (int u = 0; u < ROW_STRIP; u++) acc[t][u] = 0.0f;
    for (int c = 0; c < sh.c; c++)
#pragma unroll
      for (int ki = 0; ki < K; ki++) {
        const float *xr = xt + c * hw + (oh + ki) * sh.w + ow0;
        float v[ROW_STRIP + K - 1]; /* past the row's end: 0, feeding outputs that are not written */
#pragma unroll
        for (int u = 0; u < ROW_STRIP + K - 1; u++) v[u] = ow0 + u < sh.w ? xr[u] : 0.0f;
#pragma unroll
        for (int kj = 0; kj < K; kj++)
#pragma unroll
          for (int t = 0; t < FB; t++) {
            const float wv = wf[t][(c * K + ki) * K + kj];
#pragma unroll
            for (int u = 0; u < ROW_STRIP; u++) acc[t][u] += wv * v[u + kj];
          }
      }
#pragma unroll
    for (int t = 0; t < FB; t++)
#pragma unroll
      for (int u = 0; u < ROW_STRIP; u++)
        if (f0 + t < sh.f && ow0 + u < sh.ow)
          yg[(size_t)(f0 + t) * N + oh * sh.ow + ow0 + u] = conv_out(b != NULL ? acc[t][u] + b[g * pns + f0 + t] : acc[t][u], relu);
  }
}

/* Weight gradient, dw[g][f][r] = Σ_j dy[g][f][j]·x_r(j) over the N = S·ohw output positions j, in
 * two fixed-order passes (no atomics). First, block (g·⌈F/FB⌉ + filter block, chunk) sums the
 * positions of its chunk of DW_CHUNK for FB filters and up to TAPS taps r at once (grid.z: the
 * next TAPS), so each window's taps are read once for FB filters; each thread walks its
 * positions in order (its position's sample and row kept by increments, not divisions), then
 * warp shuffles and the warps in order; the partial sums go to part[g][f][chunk][r].
 * Then each dw sums its chunks in order. The chunks depend on N alone, and every sum's order on
 * neither FB nor the filter count. */
enum { DW_CHUNK = 2048, DW_WARPS = CU_THREADS / 32 };

size_t cu_conv_dw_chunks(size_t n) { return (n + DW_CHUNK - 1) / DW_CHUNK; }

/* TAPS taps per block (grid.z walks blocks of them) for FB filters: FB·TAPS accumulators kept
 * under 128 registers (two blocks on a multiprocessor) without spilling (dw_launch's choices).
 * KS > 0: an unpadded KS×KS kernel over one channel, whose taps' offsets are computed here
 * rather than read from the table (which would hold TAPS more registers). */
template <int TAPS, bool PAD, int FB, int KS>
static __global__ void __launch_bounds__(CU_THREADS, 2)
    k_conv_dw_part(dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs, size_t ss, const float *dy, size_t yns, float *part,
                   size_t pns, unsigned chunks) {
  __shared__ int toff[TAPS], tki[TAPS], tkj[TAPS];
  __shared__ float wsum[DW_WARPS][FB * TAPS];
  const int K = sh.k, ckk_all = sh.c * K * K, r0 = (int)blockIdx.z * TAPS;
  const int ckk = ckk_all - r0 < TAPS ? ckk_all - r0 : TAPS; /* this block's taps r0 .. r0 + ckk - 1 */
  const unsigned ohw = (unsigned)(sh.oh * sh.ow), N = (unsigned)S * ohw; /* under 2^31: the plan checks */
  const int fblocks = (sh.f + FB - 1) / FB, g = blockIdx.x / fblocks, f0 = blockIdx.x % fblocks * FB;
  const unsigned chunk = blockIdx.y, j0 = chunk * DW_CHUNK, j1 = j0 + DW_CHUNK < N ? j0 + DW_CHUNK : N;
  for (int r = threadIdx.x; r < TAPS; r += CU_THREADS) {
    const int rr = r0 + (r < ckk ? r : 0), c = rr / (K * K), ki = rr / K % K, kj = rr % K;
    toff[r] = (int)((size_t)c * cs) + ki * sh.w + kj, tki[r] = ki, tkj[r] = kj;
  }
  __syncthreads();
  float acc[FB][TAPS];
#pragma unroll
  for (int t = 0; t < FB; t++)
#pragma unroll
    for (int r = 0; r < TAPS; r++) acc[t][r] = 0.0f;
  const float *dyg = dy + (size_t)g * yns;
  unsigned frow[FB]; /* each filter's row of dy (under 2^31: the plan checks); a filter past f reads the last: summed, not written */
#pragma unroll
  for (int t = 0; t < FB; t++) frow[t] = (unsigned)(f0 + t < sh.f ? f0 + t : sh.f - 1) * N;
  const float *xg = x + (size_t)g * xns;
  /* the thread's first position, then steps of CU_THREADS positions: (sample, row, column) */
  const unsigned jt = j0 + threadIdx.x;
  unsigned s = jt / ohw, oh = jt % ohw / (unsigned)sh.ow, ow = jt % (unsigned)sh.ow;
  const unsigned step_h = CU_THREADS / (unsigned)sh.ow, step_w = CU_THREADS % (unsigned)sh.ow;
  for (unsigned j = jt; j < j1; j += CU_THREADS) {
    float d[FB];
#pragma unroll
    for (int t = 0; t < FB; t++) d[t] = dyg[frow[t] + j];
    const int h0 = (int)oh * sh.stride - sh.pad, w0 = (int)ow * sh.stride - sh.pad;
    const float *xw = xg + (size_t)s * ss + (ptrdiff_t)h0 * sh.w + w0; /* the window's corner (may lie outside) */
#pragma unroll
    for (int r = 0; r < TAPS; r++) {
      const bool in = PAD ? (h0 + tki[r] >= 0 && h0 + tki[r] < sh.h && w0 + tkj[r] >= 0 && w0 + tkj[r] < sh.w) : true;
      if (r < ckk && in) {
        const float v = KS > 0 ? xw[r / KS * sh.w + r % KS] : xw[toff[r]]; /* KS: one channel of KS×KS, taps known here */
#pragma unroll
        for (int t = 0; t < FB; t++) acc[t][r] += d[t] * v;
      }
    }
    ow += step_w, oh += step_h;
    if (ow >= (unsigned)sh.ow) ow -= (unsigned)sh.ow, oh++;
    while (oh >= (unsigned)sh.oh) oh -= (unsigned)sh.oh, s++;
  }
  /* The warp's sum of each of the V = FB·TAPS values, as a reduce-scatter: at level b (16, 8,
   * 4, 2, 1) lanes l and l ^ b add the values one keeps and the other hands over, halving what
   * each holds, so lane l ends with values l·M .. l·M + M − 1 summed over the warp. The pairs
   * added are __shfl_down's tree's (l with l + 16, then those sums with the ones 8 lanes on, ...)
   * and a float sum does not depend on its operands' order: the same bits in about V shuffles
   * instead of 5·V. Then the warps in order, as before. */
  constexpr int V = FB * TAPS, M = (V + 31) / 32;
  float v[32 * M];
#pragma unroll
  for (int t = 0; t < FB; t++)
#pragma unroll
    for (int r = 0; r < TAPS; r++) v[t * TAPS + r] = acc[t][r];
#pragma unroll
  for (int i = V; i < 32 * M; i++) v[i] = 0.0f;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#define DW_LEVEL(B)                                                    \
  {                                                                    \
    const bool up = (lane & (B)) != 0;                                 \
    _Pragma("unroll") for (int i = 0; i < (B) * M; i++) {              \
      const float give = up ? v[i] : v[i + (B) * M];                   \
      const float keep = up ? v[i + (B) * M] : v[i];                   \
      v[i] = keep + __shfl_xor_sync(0xffffffffu, give, (B));           \
    }                                                                  \
  }
  DW_LEVEL(16) DW_LEVEL(8) DW_LEVEL(4) DW_LEVEL(2) DW_LEVEL(1)
#undef DW_LEVEL
#pragma unroll
  for (int j = 0; j < M; j++)
    if (lane * M + j < V) wsum[warp][lane * M + j] = v[j];
  __syncthreads();
  for (int i = threadIdx.x; i < FB * ckk; i += CU_THREADS) {
    const int t = i / ckk, r = i % ckk;
    float sum = 0.0f;
    for (int k = 0; k < DW_WARPS; k++) sum += wsum[k][t * TAPS + r];
    if (f0 + t < sh.f) part[(size_t)g * pns + ((size_t)(f0 + t) * chunks + chunk) * ckk_all + r0 + r] = sum;
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

/* k_conv_rows for kernel size K, FB filters per thread (3 where that divides f and 4 does not,
 * else 4), the block as many threads as the sample has items (whole warps, at most CU_THREADS) */
template <int K>
static dt_status rows_forward(dt_backend *be, int count, int S, const dt_conv_shape *s, size_t tile, const float *x, size_t xs,
                              size_t cs, size_t ss, const float *w, const float *b, size_t ps, float *y, size_t ys, int relu) {
  const int fb = s->f % 3 == 0 && s->f % 4 != 0 ? 3 : 4;
  const int items = (s->f + fb - 1) / fb * s->oh * ((s->ow + ROW_STRIP - 1) / ROW_STRIP);
  const unsigned threads = items >= (int)CU_THREADS ? (unsigned)CU_THREADS : (unsigned)((items + 31) / 32 * 32);
  const dim3 grid((unsigned)S, (unsigned)count);
  cudaStream_t st = ctx_of(be)->stream;
  if (fb == 3) k_conv_rows<K, 3><<<grid, threads, tile, st>>>(*s, S, x, xs, cs, ss, w, b, ps, y, ys, relu);
  else k_conv_rows<K, 4><<<grid, threads, tile, st>>>(*s, S, x, xs, cs, ss, w, b, ps, y, ys, relu);
  CU_LAUNCHED();
  return DT_OK;
}

static dt_status direct_forward(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs,
                                size_t ss, const float *w, const float *b, size_t ps, float *y, size_t ys, int relu) {
  const size_t N = (size_t)S * s->oh * s->ow;
  const size_t tile = sizeof(float) * ((size_t)s->c * s->h * s->w + (size_t)s->f * s->c * s->k * s->k);
  if (tile <= TILE_BYTES && count <= 65535 && s->stride == 1 && s->pad == 0) {
    if (s->k == 5) return rows_forward<5>(be, count, S, s, tile, x, xs, cs, ss, w, b, ps, y, ys, relu);
    if (s->k == 3) return rows_forward<3>(be, count, S, s, tile, x, xs, cs, ss, w, b, ps, y, ys, relu);
  }
  if (s->f <= TILE_FILTERS && tile <= TILE_BYTES && count <= 65535) {
    k_conv_tile<<<dim3((unsigned)S, (unsigned)count), CU_THREADS, tile, ctx_of(be)->stream>>>(*s, S, x, xs, cs, ss, w, b, ps, y, ys,
                                                                                             relu);
    CU_LAUNCHED();
    return DT_OK;
  }
  if (s->f <= 4) NODE_KERNEL(k_conv_direct<4>, be, count, N, *s, S, x, xs, cs, ss, w, b, ps, y, ys, relu);
  else NODE_KERNEL(k_conv_direct<8>, be, count, (size_t)((s->f + 7) / 8) * N, *s, S, x, xs, cs, ss, w, b, ps, y, ys, relu);
  return DT_OK;
}

/* k_conv_dw_part over every node: blocks of FB filters, chunks, blocks of TAPS taps. The choice
 * of TAPS and FB changes which thread sums what, never a sum's order: the same bits for every
 * choice (only the registers and the work shared between filters change). */
template <int TAPS, bool PAD, int FB, int KS = 0>
static void dw_launch(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs, size_t ss,
                      const float *dy, size_t ys, float *part, size_t pns, unsigned chunks) {
  const int ckk = s->c * s->k * s->k;
  const dim3 grid((unsigned)(count * ((s->f + FB - 1) / FB)), chunks, (unsigned)((ckk + TAPS - 1) / TAPS));
  k_conv_dw_part<TAPS, PAD, FB, KS><<<grid, CU_THREADS, 0, ctx_of(be)->stream>>>(*s, S, x, xs, cs, ss, dy, ys, part, pns, chunks);
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
  /* the shape, not the tap count: a 1×1 convolution over 25 or 9 channels has as many taps */
  if (s->pad == 0 && s->c == 1 && s->k == 5 && s->f % 3 == 0) /* 5×5 over one channel, filters in threes (the seed CNN) */
    dw_launch<25, false, 3, 5>(be, count, S, s, x, xs, cs, ss, dy, ys, part, pns, chunks);
  else if (s->pad == 0 && s->c == 1 && s->k == 3 && s->f % 8 == 0) /* 3×3 over one channel, filters in eights */
    dw_launch<9, false, 8, 3>(be, count, S, s, x, xs, cs, ss, dy, ys, part, pns, chunks);
  else if (s->pad == 0)
    dw_launch<32, false, 2>(be, count, S, s, x, xs, cs, ss, dy, ys, part, pns, chunks);
  else
    dw_launch<16, true, 2>(be, count, S, s, x, xs, cs, ss, dy, ys, part, pns, chunks);
  CU_LAUNCHED();
  NODE_KERNEL(k_conv_dw_sum, be, count, (size_t)s->f * ckk, ckk, chunks, part, pns, dw, gs);
  return DT_OK;
}

/* ---- the layer -------------------------------------------------------------------------------- */

dt_status cu_conv_forward(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs, size_t ss,
                          const float *w, const float *b, size_t ps, float *y, size_t ys, float *col, size_t cols, int direct, int relu) {
  const int ckk = s->c * s->k * s->k;
  const size_t N = (size_t)S * s->oh * s->ow;
  if (direct) return direct_forward(be, count, S, s, x, xs, cs, ss, w, b, ps, y, ys, relu);
  DT_CHECK(!relu, DT_ERR_INTERNAL, "a relu fused into a convolution through im2col");
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
                         pl->direct[c->l], pl->relu_after[c->l]);
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
