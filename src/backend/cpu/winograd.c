/* 3×3 stride-1 convolutions on the CPU by Winograd's minimal filtering F(2×2, 3×3) (Lavin and
 * Gray, "Fast Algorithms for Convolutional Neural Networks", 2016): each 2×2 block of outputs
 * ("tile") comes from a 4×4 input patch with 16 multiplications per channel pair instead of 36,
 * so the forward pass, the input gradient and the weight gradient each do 2.25× fewer
 * multiply-adds than direct convolution or im2col + GEMM.
 *
 *   forward   y = Aᵀ[ Σ_c (G g Gᵀ) ⊙ (Bᵀ d B) ] A          (g: 3×3 filter, d: 4×4 patch)
 *   dx        the forward of dy with the filters flipped and transposed, padding 2 − pad
 *   dw        G ᵀ[ Σ_tiles (A e Aᵀ) ⊙ (Bᵀ d B) ] G          (e: the tile's 2×2 output gradient)
 *
 * The 16 positions ξ of a transformed tile are independent: per ξ, the channel sum is a matrix
 * product, M[ξ] (f × tiles) = U[ξ] (f × c) · V[ξ] (c × tiles), and the weight gradient's tile sum
 * is dU[ξ] (f × c) = Y[ξ] (f × tiles) · V[ξ]ᵀ. Tiles are taken in blocks of whole tile rows
 * (dt_conv_winograd_block tiles at most, so one block's V stays in the L2 cache), and the
 * products run in this file's register-blocked kernels: OpenBLAS's per-call cost would be paid
 * 16 times per block. Every sum has a fixed order, independent of the batch and the thread, so
 * the results are the same on every run; they differ from the im2col path's in the last bits.
 * Checked against a naive loop in tests/unit/test_nn.c, against finite differences and against
 * PyTorch (tests/torch). */
#include <string.h>

#include "cpu_impl.h"

typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));
/* Memory goes through v8u, an unaligned, may-alias view; no helper takes or returns a vector (a
 * helper left out of line would be compiled for the baseline ABI, as conv2d.c explains). */
#define load8(p) (*(const v8u *)(const void *)(p))
#define store8(p, v) (*(v8u *)(void *)(p) = (v))
#define INLINE static inline __attribute__((always_inline))

enum { XI = 16 }; /* positions of a transformed 4×4 tile */

/* One convolution as the Winograd kernels see it: c input and f output channels, an h×w input,
 * an oh×ow output, th×tw tiles, blocks of at most cap tiles. dx is such a convolution of dy. */
typedef struct wshape {
  int c, f, h, w, oh, ow, pad, th, tw, cap;
} wshape;

static wshape forward_shape(const dt_conv_shape *s) {
  const int th = (s->oh + 1) / 2, tw = (s->ow + 1) / 2;
  return (wshape){s->c, s->f, s->h, s->w, s->oh, s->ow, s->pad, th, tw, dt_conv_winograd_block(s)};
}

static wshape input_grad_shape(const dt_conv_shape *s) {
  const int th = (s->h + 1) / 2, tw = (s->w + 1) / 2;
  return (wshape){s->f, s->c, s->oh, s->ow, s->h, s->w, 2 - s->pad, th, tw, dt_conv_winograd_block(s)};
}

static int round8(int n) { return (n + 7) & ~7; }

/* The distance between two positions' matrices of rows × ld floats in a block: a cache line more
 * than the matrix, so that the 16 positions of one tile, read or written together, do not fall
 * into one set of the L1 cache (a matrix of 16 × 128 floats is 8 KiB, a multiple of its 4 KiB
 * set span). */
enum { SKEW = 16 };
static size_t xstride(int rows, int ld) { return (size_t)rows * ld + SKEW; }

/* The scratch: V (XI·c·cap), M or Y (XI·round8(f)·cap), five rows of 2·tw + 2 floats for the
 * transforms (the first stays zero: the padding rows), and the weight gradient's two gradient
 * rows channel-minor (2·2tw·round8(f)). */
typedef struct wscratch {
  float *v, *m, *rows, *tr;
  int len; /* a row's floats */
} wscratch;

static wscratch carve(const wshape *s, float *scratch) {
  wscratch r = {.v = scratch, .m = scratch + XI * xstride(s->c, s->cap), .len = 2 * s->tw + 2};
  r.rows = r.m + XI * xstride(round8(s->f), s->cap);
  r.tr = r.rows + 5 * (size_t)r.len;
  memset(r.rows, 0, sizeof(float) * (size_t)r.len);
  return r;
}

/* ---- transforms ---------------------------------------------------------------------------- */

/* U[ξ][o][i] = (G g Gᵀ)[ξ] for the filter g of output channel o and input channel i: the forward's
 * g = w[o][i]; the input gradient's (o = c, i = f) g = w[f][c] turned by 180°. */
static void filter_transform(const dt_conv_shape *s, const float *w, int flip, float *restrict u) {
  const int O = flip ? s->c : s->f, I = flip ? s->f : s->c;
  for (int o = 0; o < O; o++)
    for (int i = 0; i < I; i++) {
      const float *src = flip ? w + ((size_t)i * s->c + o) * 9 : w + ((size_t)o * s->c + i) * 9;
      float g[9], t[4][3];
      for (int k = 0; k < 9; k++) g[k] = flip ? src[8 - k] : src[k];
      for (int col = 0; col < 3; col++) { /* G g: rows g0, (g0+g1+g2)/2, (g0−g1+g2)/2, g2 */
        const float g0 = g[col], g1 = g[3 + col], g2 = g[6 + col];
        t[0][col] = g0, t[1][col] = 0.5f * (g0 + g1 + g2), t[2][col] = 0.5f * (g0 - g1 + g2), t[3][col] = g2;
      }
      for (int a = 0; a < 4; a++) { /* (G g) Gᵀ */
        const float g0 = t[a][0], g1 = t[a][1], g2 = t[a][2];
        const float r[4] = {g0, 0.5f * (g0 + g1 + g2), 0.5f * (g0 - g1 + g2), g2};
        for (int b = 0; b < 4; b++) u[((size_t)(4 * a + b) * O + o) * I + i] = r[b];
      }
    }
}

/* V[ξ][ch][o + j] = (Bᵀ d B)[ξ] for the tw tiles of tile row ti of one sample xn (c×h×w): each
 * channel's four input rows (zero outside the image) are combined vertically into rows t0..t3,
 * then each tile's four columns horizontally. Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1]. */
INLINE void input_transform(const wshape *s, const float *restrict xn, int ti, float *restrict v, int ld, int o,
                            const wscratch *ws) {
  const int L = ws->len, W = s->w, lo = s->pad, hi = s->pad + W < L ? s->pad + W : L; /* valid columns [lo, hi) */
  float *restrict t0 = ws->rows + L, *restrict t1 = t0 + L, *restrict t2 = t1 + L, *restrict t3 = t2 + L;
  for (int ch = 0; ch < s->c; ch++) {
    const float *r[4];
    for (int a = 0; a < 4; a++) {
      const int ih = 2 * ti - s->pad + a;
      r[a] = ih >= 0 && ih < s->h ? xn + ((size_t)ch * s->h + ih) * W : ws->rows; /* r[a][q − lo]: column q − pad */
    }
    for (int q = 0; q < lo; q++) t0[q] = t1[q] = t2[q] = t3[q] = 0.0f;
    const float *restrict r0 = r[0], *restrict r1 = r[1], *restrict r2 = r[2], *restrict r3 = r[3];
    int q = lo;
    for (; q + 8 <= hi; q += 8) {
      const v8 d0 = load8(r0 + q - lo), d1 = load8(r1 + q - lo), d2 = load8(r2 + q - lo), d3 = load8(r3 + q - lo);
      store8(t0 + q, d0 - d2), store8(t1 + q, d1 + d2), store8(t2 + q, d2 - d1), store8(t3 + q, d1 - d3);
    }
    for (; q < hi; q++) {
      const float d0 = r0[q - lo], d1 = r1[q - lo], d2 = r2[q - lo], d3 = r3[q - lo];
      t0[q] = d0 - d2, t1[q] = d1 + d2, t2[q] = d2 - d1, t3[q] = d1 - d3;
    }
    for (q = hi; q < L; q++) t0[q] = t1[q] = t2[q] = t3[q] = 0.0f;
    const float *t[4] = {t0, t1, t2, t3};
    for (int a = 0; a < 4; a++) {
      const float *restrict ta = t[a];
      const size_t xs = xstride(s->c, ld);
      float *restrict v0 = v + 4 * a * xs + (size_t)ch * ld + o;
      float *restrict v1 = v0 + xs, *restrict v2 = v1 + xs, *restrict v3 = v2 + xs;
      for (int j = 0; j < s->tw; j++) {
        const float d0 = ta[2 * j], d1 = ta[2 * j + 1], d2 = ta[2 * j + 2], d3 = ta[2 * j + 3];
        v0[j] = d0 - d2, v1[j] = d1 + d2, v2[j] = d2 - d1, v3[j] = d1 - d3;
      }
    }
  }
}

/* Y[ξ][o + j][ch] = (A e Aᵀ)[ξ] for the tiles of tile row ti of one sample's output gradient
 * en (f×oh×ow), zero outside it; a block's Y[ξ] is tiles × ldf (channels along the row, so the
 * weight gradient's product needs no horizontal sums). The tile row's two gradient rows are
 * first laid out channel-minor in ws->tr (2·2tw × ldf; the padding channels stay zero), then
 * transformed 8 channels at a time. A = [1 0; 1 1; 1 −1; 0 −1]. */
INLINE void grad_transform(const wshape *s, const float *restrict en, int ti, float *restrict y, int ld, int ldf, int o,
                           const wscratch *ws) {
  const int OW = s->ow, W2 = 2 * s->tw;
  const size_t xs = xstride(ld, ldf); /* one position's matrix: a row per tile */
  float *restrict tr = ws->tr;
  for (int ch = 0; ch < s->f; ch++) {
    const float *restrict e0 = en + ((size_t)ch * s->oh + 2 * ti) * OW;
    for (int p = 0; p < OW; p++) tr[(size_t)p * ldf + ch] = e0[p];
    for (int p = OW; p < W2; p++) tr[(size_t)p * ldf + ch] = 0.0f;
    float *restrict t1 = tr + (size_t)W2 * ldf + ch;
    if (2 * ti + 1 < s->oh)
      for (int p = 0; p < OW; p++) t1[(size_t)p * ldf] = e0[OW + p];
    else
      for (int p = 0; p < OW; p++) t1[(size_t)p * ldf] = 0.0f;
    for (int p = OW; p < W2; p++) t1[(size_t)p * ldf] = 0.0f;
  }
  for (int j = 0; j < s->tw; j++)
    for (int f0 = 0; f0 < ldf; f0 += 8) {
      const float *r0 = tr + (size_t)2 * j * ldf + f0, *r1 = r0 + (size_t)W2 * ldf;
      const v8 a0 = load8(r0), a1 = load8(r0 + ldf), b0 = load8(r1), b1 = load8(r1 + ldf);
      const v8 q[4][2] = {{a0, a1}, {a0 + b0, a1 + b1}, {a0 - b0, a1 - b1}, {-b0, -b1}}; /* A e: rows */
      float *yj = y + (size_t)(o + j) * ldf + f0;
      for (int r = 0; r < 4; r++) { /* (A e) Aᵀ: columns */
        float *yr = yj + 4 * r * xs;
        store8(yr, q[r][0]), store8(yr + xs, q[r][0] + q[r][1]), store8(yr + 2 * xs, q[r][0] - q[r][1]), store8(yr + 3 * xs, -q[r][1]);
      }
    }
}

/* the first (LO) and second (HI) halves of a and b interleaved: a0 b0 a1 b1 ... */
#define LO(a, b) __builtin_shufflevector((a), (b), 0, 8, 1, 9, 2, 10, 3, 11)
#define HI(a, b) __builtin_shufflevector((a), (b), 4, 12, 5, 13, 6, 14, 7, 15)

INLINE void output_transform(const wshape *s, const float *restrict m, int ld, int o, const float *bias, float *restrict yn,
                             int ti, const wscratch *ws) {
  const int L = ws->len, OW = s->ow, whole = OW == 2 * s->tw && 2 * ti + 1 < s->oh; /* both rows straight into yn */
  for (int ch = 0; ch < s->f; ch++) {
    float *y0 = yn + ((size_t)ch * s->oh + 2 * ti) * OW;
    float *restrict out0 = whole ? y0 : ws->rows + L, *restrict out1 = whole ? y0 + OW : ws->rows + 2 * L;
    const float b = bias != NULL ? bias[ch] : 0.0f;
    const float *restrict mc = m + (size_t)ch * ld + o; /* position ξ of tile j: mc[ξ·st + j] */
    const size_t st = xstride(s->f, ld);
    int j = 0;
    for (; j + 8 <= s->tw; j += 8) { /* 8 tiles: Aᵀ across each row a of M, then down */
      v8 c0[4], c1[4];
      for (int a = 0; a < 4; a++) {
        const float *ma = mc + 4 * a * st + j;
        const v8 m0 = load8(ma), m1 = load8(ma + st), m2 = load8(ma + 2 * st), m3 = load8(ma + 3 * st);
        c0[a] = m0 + m1 + m2, c1[a] = m1 - m2 - m3;
      }
      const v8 e0 = c0[0] + c0[1] + c0[2] + b, o0 = c1[0] + c1[1] + c1[2] + b; /* row 0: even, odd columns */
      const v8 e1 = c0[1] - c0[2] - c0[3] + b, o1 = c1[1] - c1[2] - c1[3] + b;
      store8(out0 + 2 * j, LO(e0, o0)), store8(out0 + 2 * j + 8, HI(e0, o0));
      store8(out1 + 2 * j, LO(e1, o1)), store8(out1 + 2 * j + 8, HI(e1, o1));
    }
    for (; j < s->tw; j++) {
      float c0[4], c1[4];
      for (int a = 0; a < 4; a++) {
        const float *ma = mc + 4 * a * st + j;
        const float m0 = ma[0], m1 = ma[st], m2 = ma[2 * st], m3 = ma[3 * st];
        c0[a] = m0 + m1 + m2, c1[a] = m1 - m2 - m3;
      }
      out0[2 * j] = c0[0] + c0[1] + c0[2] + b, out0[2 * j + 1] = c1[0] + c1[1] + c1[2] + b;
      out1[2 * j] = c0[1] - c0[2] - c0[3] + b, out1[2 * j + 1] = c1[1] - c1[2] - c1[3] + b;
    }
    if (whole) continue;
    memcpy(y0, out0, sizeof(float) * (size_t)OW);
    if (2 * ti + 1 < s->oh) memcpy(y0 + OW, out1, sizeof(float) * (size_t)OW);
  }
}

/* ---- the per-ξ products -------------------------------------------------------------------- */

/* M (rows f0.. f0+FT, ld columns) = U (f×c) · V (c×ld): FT rows × 16 columns of accumulators stay
 * in registers over the whole channel sum; ld is a multiple of 8. */
INLINE void product_rows(int C, const float *restrict u, const float *restrict v, float *restrict m, int ld, int f0,
                         const int FT) {
  int t = 0;
  for (; t + 16 <= ld; t += 16) {
    v8 a0[6], a1[6];
    for (int j = 0; j < FT; j++) a0[j] = a1[j] = (v8){0};
    for (int c = 0; c < C; c++) {
      const v8 x0 = load8(v + (size_t)c * ld + t), x1 = load8(v + (size_t)c * ld + t + 8);
      for (int j = 0; j < FT; j++) {
        const float w = u[(size_t)(f0 + j) * C + c];
        a0[j] += w * x0, a1[j] += w * x1;
      }
    }
    for (int j = 0; j < FT; j++) store8(m + (size_t)(f0 + j) * ld + t, a0[j]), store8(m + (size_t)(f0 + j) * ld + t + 8, a1[j]);
  }
  if (t < ld) {
    v8 a0[6];
    for (int j = 0; j < FT; j++) a0[j] = (v8){0};
    for (int c = 0; c < C; c++) {
      const v8 x0 = load8(v + (size_t)c * ld + t);
      for (int j = 0; j < FT; j++) a0[j] += u[(size_t)(f0 + j) * C + c] * x0;
    }
    for (int j = 0; j < FT; j++) store8(m + (size_t)(f0 + j) * ld + t, a0[j]);
  }
}

INLINE void product(int F, int C, const float *u, const float *v, float *m, int ld) {
  int f = 0;
  for (; f + 6 <= F; f += 6) product_rows(C, u, v, m, ld, f, 6);
  switch (F - f) {
    case 5: product_rows(C, u, v, m, ld, f, 5); break;
    case 4: product_rows(C, u, v, m, ld, f, 4); break;
    case 3: product_rows(C, u, v, m, ld, f, 3); break;
    case 2: product_rows(C, u, v, m, ld, f, 2); break;
    case 1: product_rows(C, u, v, m, ld, f, 1); break;
    default: break;
  }
}

/* dUᵀ[c0 + i][f0 .. f0 + 16) += Σ_t V[c0 + i][t] · Y[t][f0 .. f0 + 16) for CT input channels: the
 * accumulators run along the output channels, so each block's sum goes straight into dUᵀ. */
INLINE void grad_rows(const float *restrict v, const float *restrict y, float *restrict dut, int ld, int ldf, int nt, int c0,
                      int f0, const int CT, const int FW) {
  v8 a0[6], a1[6];
  for (int i = 0; i < CT; i++) a0[i] = a1[i] = (v8){0};
  for (int t = 0; t < nt; t++) {
    const v8 y0 = load8(y + (size_t)t * ldf + f0);
    v8 y1 = (v8){0};
    if (FW == 16) y1 = load8(y + (size_t)t * ldf + f0 + 8);
    for (int i = 0; i < CT; i++) {
      const float w = v[(size_t)(c0 + i) * ld + t];
      a0[i] += w * y0;
      if (FW == 16) a1[i] += w * y1;
    }
  }
  for (int i = 0; i < CT; i++) {
    float *d = dut + (size_t)(c0 + i) * ldf + f0;
    store8(d, load8(d) + a0[i]);
    if (FW == 16) store8(d + 8, load8(d + 8) + a1[i]);
  }
}

INLINE void grad_cols(const float *v, const float *y, float *dut, int ld, int ldf, int nt, int c0, const int CT) {
  int f = 0;
  for (; f + 16 <= ldf; f += 16) grad_rows(v, y, dut, ld, ldf, nt, c0, f, CT, 16);
  if (f < ldf) grad_rows(v, y, dut, ld, ldf, nt, c0, f, CT, 8);
}

INLINE void grad_product(int C, const float *v, const float *y, float *dut, int ld, int ldf, int nt) {
  int c = 0;
  for (; c + 6 <= C; c += 6) grad_cols(v, y, dut, ld, ldf, nt, c, 6);
  switch (C - c) {
    case 5: grad_cols(v, y, dut, ld, ldf, nt, c, 5); break;
    case 4: grad_cols(v, y, dut, ld, ldf, nt, c, 4); break;
    case 3: grad_cols(v, y, dut, ld, ldf, nt, c, 3); break;
    case 2: grad_cols(v, y, dut, ld, ldf, nt, c, 2); break;
    case 1: grad_cols(v, y, dut, ld, ldf, nt, c, 1); break;
    default: break;
  }
}

/* ---- the three passes ---------------------------------------------------------------------- */

/* zero columns [n, ld) of rows × ld */
static void zero_tail(float *a, size_t rows, int n, int ld) {
  if (n == ld) return;
  for (size_t r = 0; r < rows; r++) memset(a + r * (size_t)ld + n, 0, sizeof(float) * (size_t)(ld - n));
}

/* y (batch × f×oh×ow) = the convolution of x (batch × c×h×w) whose transformed filters are u;
 * bias NULL: none. */
DT_CLONES
static void winograd_convolve(const wshape *s, int batch, const float *x, const float *u, const float *bias, float *y,
                              float *scratch) {
  const wscratch ws = carve(s, scratch);
  const size_t in_size = (size_t)s->c * s->h * s->w, out_size = (size_t)s->f * s->oh * s->ow;
  const int units = batch * s->th, per = s->cap / s->tw > 0 ? s->cap / s->tw : 1;
  for (int u0 = 0; u0 < units; u0 += per) {
    const int nu = units - u0 < per ? units - u0 : per, ld = round8(nu * s->tw);
    for (int k = 0; k < nu; k++)
      input_transform(s, x + (size_t)((u0 + k) / s->th) * in_size, (u0 + k) % s->th, ws.v, ld, k * s->tw, &ws);
    for (int xi = 0; xi < XI; xi++) {
      float *v = ws.v + xi * xstride(s->c, ld);
      zero_tail(v, (size_t)s->c, nu * s->tw, ld);
      product(s->f, s->c, u + (size_t)xi * s->f * s->c, v, ws.m + xi * xstride(s->f, ld), ld);
    }
    for (int k = 0; k < nu; k++) {
      const int n = (u0 + k) / s->th, ti = (u0 + k) % s->th;
      output_transform(s, ws.m, ld, k * s->tw, bias, y + n * out_size, ti, &ws);
    }
  }
}

/* dw (f×c×3×3) = Σ over the batch's tiles of the weight gradient; dut: XI·c·round8(f) scratch
 * (dUᵀ), then V and Y */
DT_CLONES
static void winograd_weight_grad(const wshape *s, int batch, const float *x, const float *dy, float *dw, float *dut,
                                 float *scratch) {
  const wscratch ws = carve(s, scratch);
  const size_t in_size = (size_t)s->c * s->h * s->w, out_size = (size_t)s->f * s->oh * s->ow;
  const int units = batch * s->th, per = s->cap / s->tw > 0 ? s->cap / s->tw : 1, ldf = round8(s->f);
  const size_t cf = (size_t)s->c * ldf;
  memset(dut, 0, sizeof(float) * XI * cf);
  if (ldf > s->f) memset(ws.tr, 0, sizeof(float) * 4 * (size_t)s->tw * ldf); /* the padding channels stay zero */
  for (int u0 = 0; u0 < units; u0 += per) {
    const int nu = units - u0 < per ? units - u0 : per, nt = nu * s->tw, ld = round8(nt);
    for (int k = 0; k < nu; k++) {
      const int n = (u0 + k) / s->th, ti = (u0 + k) % s->th;
      input_transform(s, x + n * in_size, ti, ws.v, ld, k * s->tw, &ws);
      grad_transform(s, dy + n * out_size, ti, ws.m, ld, ldf, k * s->tw, &ws);
    }
    for (int xi = 0; xi < XI; xi++)
      grad_product(s->c, ws.v + xi * xstride(s->c, ld), ws.m + xi * xstride(ld, ldf), dut + xi * cf, ld, ldf, nt);
  }
  /* dw = Gᵀ dU G; Gᵀ = [1 ½ ½ 0; 0 ½ −½ 0; 0 ½ ½ 1] */
  for (int f = 0; f < s->f; f++)
    for (int c = 0; c < s->c; c++) {
      float d[4][4], t[3][4];
      for (int xi = 0; xi < XI; xi++) d[xi / 4][xi % 4] = dut[xi * cf + (size_t)c * ldf + f];
      for (int b = 0; b < 4; b++)
        t[0][b] = d[0][b] + 0.5f * (d[1][b] + d[2][b]), t[1][b] = 0.5f * (d[1][b] - d[2][b]), t[2][b] = 0.5f * (d[1][b] + d[2][b]) + d[3][b];
      for (int a = 0; a < 3; a++) {
        float *o = dw + ((size_t)f * s->c + c) * 9 + a * 3;
        o[0] = t[a][0] + 0.5f * (t[a][1] + t[a][2]), o[1] = 0.5f * (t[a][1] - t[a][2]), o[2] = 0.5f * (t[a][1] + t[a][2]) + t[a][3];
      }
    }
}

void dt_cpu_winograd_forward(const dt_conv_shape *s, int batch, const float *x, const float *w, const float *b, float *y,
                             float *col) {
  const wshape ws = forward_shape(s);
  float *u = col;
  filter_transform(s, w, 0, u);
  winograd_convolve(&ws, batch, x, u, b, y, u + (size_t)XI * s->f * s->c);
}

void dt_cpu_winograd_backward(const dt_conv_shape *s, int batch, const float *x, const float *w, const float *dy,
                              float *dw, float *dx, float *col, float *dcol) {
  const wshape fs = forward_shape(s);
  winograd_weight_grad(&fs, batch, x, dy, dw, col, col + (size_t)XI * s->c * round8(s->f));
  if (dx == NULL) return;
  const wshape gs = input_grad_shape(s);
  filter_transform(s, w, 1, dcol);
  winograd_convolve(&gs, batch, dy, dcol, NULL, dx, dcol + (size_t)XI * s->f * s->c);
}
