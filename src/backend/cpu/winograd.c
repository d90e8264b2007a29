/* 3×3 stride-1 convolutions on the CPU by Winograd's minimal filtering F(4×4, 3×3) (Lavin and
 * Gray, "Fast Algorithms for Convolutional Neural Networks", 2016): each 4×4 block of outputs
 * ("tile") comes from a 6×6 input patch with 36 multiplications per channel pair instead of 144,
 * so the forward pass, the input gradient and the weight gradient each do 4× fewer multiply-adds
 * than direct convolution or im2col + GEMM.
 *
 *   forward   y = Aᵀ[ Σ_c (G g Gᵀ) ⊙ (Bᵀ d B) ] A          (g: 3×3 filter, d: 6×6 patch)
 *   dx        the forward of dy with the filters flipped and transposed, padding 2 − pad
 *   dw        Gᵀ[ Σ_tiles (A e Aᵀ) ⊙ (Bᵀ d B) ] G          (e: the tile's 4×4 output gradient)
 *
 * with the interpolation points 0, ±1, ±2 and ∞:
 *   Bᵀ = [4 0 −5 0 1 0; 0 −4 −4 1 1 0; 0 4 −4 −1 1 0; 0 −2 −1 2 1 0; 0 2 −1 −2 1 0; 0 4 0 −5 0 1]
 *   G  = [¼ 0 0; −⅙ −⅙ −⅙; −⅙ ⅙ −⅙; 1⁄24 1⁄12 ⅙; 1⁄24 −1⁄12 ⅙; 0 0 1]
 *   Aᵀ = [1 1 1 1 1 0; 0 1 −1 2 −2 0; 0 1 1 4 4 0; 0 1 −1 8 −8 1]
 *
 * The 36 positions ξ = 6·row + column of a transformed tile are independent: per ξ, the channel
 * sum is a matrix product, M[ξ] (f × tiles) = U[ξ] (f × c) · V[ξ] (c × tiles), and the weight
 * gradient's tile sum is dU[ξ] (f × c) = Y[ξ] (f × tiles) · V[ξ]ᵀ. Tiles are taken in blocks of
 * whole tile rows ("units"), as many as keep a block's V and M near the L2 cache (the weight
 * gradient's blocks are longer: each block ends in one horizontal sum per entry of dU).
 *
 * The transforms work on eight tiles at once, one per vector lane: a unit's six input rows are
 * first combined down the columns (Bᵀ d, on whole rows), then each pair of tiles' columns is
 * read as eight floats (one read where the two are neighbours in a tile row, two halves where a
 * tile row ends between them) and four pairs are transposed so that lane i holds column q of tile
 * i (in the order 0 2 4 6 1 3 5 7: the transpose of 4-float blocks is its own inverse, and the
 * output transform undoes it). The products run in this file's register-blocked kernels:
 * OpenBLAS's per-call cost would be paid 36 times per block (with many channels, see use_blas). Every sum has a fixed order,
 * independent of the batch split, the rank and the thread, so the results are the same on every
 * run; they differ from the im2col path's in the last bits. Checked against a naive loop in
 * tests/unit/test_nn.c, against finite differences and against PyTorch (tests/torch). */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "cpu_impl.h"

typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));
/* Memory goes through v8u, an unaligned, may-alias view; no helper takes or returns a vector (a
 * helper left out of line would be compiled for the baseline ABI, as conv2d.c explains). */
typedef float v4 __attribute__((vector_size(16)));
typedef float v4u __attribute__((vector_size(16), aligned(4), may_alias));
#define load8(p) (*(const v8u *)(const void *)(p))
#define store8(p, v) (*(v8u *)(void *)(p) = (v))
#define load4(p) (*(const v4u *)(const void *)(p))
#define store4(p, v) (*(v4u *)(void *)(p) = (v))
#define JOIN(lo, hi) __builtin_shufflevector((lo), (hi), 0, 1, 2, 3, 4, 5, 6, 7)
#define LOW(v) __builtin_shufflevector((v), (v), 0, 1, 2, 3)
#define HIGH(v) __builtin_shufflevector((v), (v), 4, 5, 6, 7)
#define INLINE static inline __attribute__((always_inline))

enum {
  XI = 36,                   /* positions of a transformed 6×6 tile */
  PRODUCT_BUDGET = 384 << 10, /* bytes of a forward block's V and M: most of a 512 KiB L2 */
  GRADIENT_BUDGET = 4 << 20, /* bytes of a weight-gradient block's V and Y */
  BLAS_CHANNELS = 128 * 128, /* c·f from which the products are OpenBLAS's, over blocks of */
  BLAS_TILES = 128,          /* at least this many tiles */
};

/* With many channels U[ξ] outgrows the caches: a product that reads it once per block of a few
 * tiles is bound by memory, so from BLAS_CHANNELS the products are sgemm calls over blocks of
 * at least BLAS_TILES tiles (OpenBLAS packs U once per call); below, this file's kernels. */
static int use_blas(int c, int f) { return (size_t)c * (size_t)f >= BLAS_CHANNELS; }

/* One convolution as the Winograd kernels see it: c input and f output channels, an h×w input,
 * an oh×ow output, th tile rows of tw tiles, transform rows of rw floats (the tw patches' 4·tw + 2
 * columns, rounded up so that every read stays inside), blocks of per tile rows. dx is such a convolution of dy. */
typedef struct wshape {
  int c, f, h, w, oh, ow, pad, th, tw, rw, per;
} wshape;

static int round8(int n) { return (n + 7) & ~7; }

static wshape make_shape(int c, int f, int h, int w, int oh, int ow, int pad, size_t budget) {
  wshape s = {c, f, h, w, oh, ow, pad, (oh + 3) / 4, (ow + 3) / 4, 0, 1};
  s.rw = round8(4 * s.tw + 4);
  size_t tiles = budget / (sizeof(float) * XI * ((size_t)c + (size_t)f)) / 8 * 8;
  if (use_blas(c, f) && tiles < BLAS_TILES) tiles = BLAS_TILES;
  if (tiles / (size_t)s.tw > 1) s.per = tiles / (size_t)s.tw > (size_t)INT_MAX ? INT_MAX : (int)(tiles / (size_t)s.tw);
  return s;
}

static wshape forward_shape(const dt_conv_shape *s) {
  return make_shape(s->c, s->f, s->h, s->w, s->oh, s->ow, s->pad, PRODUCT_BUDGET);
}
static wshape input_grad_shape(const dt_conv_shape *s) {
  return make_shape(s->f, s->c, s->oh, s->ow, s->h, s->w, 2 - s->pad, PRODUCT_BUDGET);
}
static wshape weight_grad_shape(const dt_conv_shape *s) {
  return make_shape(s->c, s->f, s->h, s->w, s->oh, s->ow, s->pad, GRADIENT_BUDGET);
}

/* The distance between two positions' matrices of rows × ld floats in a block: a cache line more
 * than the matrix, so that the positions of one tile, read or written together, do not fall into
 * one set of the L1 cache (a matrix of 16 × 64 floats is 4 KiB, the set span). */
enum { SKEW = 16 };
static size_t xstride(int rows, int ld) { return (size_t)rows * ld + SKEW; }

/* A pass's scratch: U (or dU: XI·c·f), then a block's V (XI·c), M or Y (XI·f) at most
 * round8(per·tw) columns each, the block's transform rows of the input and of the output
 * gradient (6·rw per tile row each) and a zero area (6·rw floats: the rows outside the image, and
 * the tiles after a block's last). The rows are zeroed once: a row's columns outside the image
 * stay zero, as only those inside are ever written. */
static size_t scratch_floats(const wshape *s) {
  const int ld = round8(s->per * s->tw);
  return (size_t)XI * s->c * s->f + XI * (xstride(s->c, ld) + xstride(s->f, ld)) + (2 * (size_t)s->per + 1) * 6 * s->rw;
}

typedef struct wscratch {
  float *v, *m, *t, *e, *zero;
} wscratch;

static wscratch carve(const wshape *s, float *scratch) { /* scratch: after U or dU */
  const int ld = round8(s->per * s->tw);
  const size_t rows = (size_t)s->per * 6 * s->rw;
  wscratch r = {.v = scratch};
  r.m = r.v + XI * xstride(s->c, ld);
  r.t = r.m + XI * xstride(s->f, ld);
  r.e = r.t + rows;
  r.zero = r.e + rows;
  memset(r.t, 0, sizeof(float) * (2 * rows + 6 * (size_t)s->rw));
  return r;
}

/* Outputs smaller than a tile (VGG's 2×2) waste most of a tile's products and still beat im2col,
 * whose per-sample products are too narrow for OpenBLAS (measured: VGG-11 training 46 → 62
 * samples/s when its 2×2 layers came here). */
int dt_conv_winograd(const dt_conv_shape *s) {
  return s->k == 3 && s->stride == 1 && s->pad <= 2 && s->c * 9 > 64;
}

size_t dt_conv_winograd_scratch(const dt_conv_shape *s) {
  const wshape a = forward_shape(s), b = input_grad_shape(s), c = weight_grad_shape(s);
  size_t n = scratch_floats(&a);
  if (scratch_floats(&b) > n) n = scratch_floats(&b);
  if (scratch_floats(&c) > n) n = scratch_floats(&c);
  return n;
}

/* ---- one-dimensional transforms, for vectors and scalars alike ----------------------------- */

/* o = Bᵀ d: six inputs to six transformed values */
#define B_T(T, d, o)                                                                               \
  do {                                                                                             \
    const T s13 = (d)[3] + (d)[4], s12 = (d)[1] + (d)[2], t43 = (d)[4] - (d)[3], t12 = (d)[1] - (d)[2]; \
    const T t42 = (d)[4] - (d)[2], t31 = (d)[3] - (d)[1];                                          \
    (o)[0] = 4.0f * (d)[0] - 5.0f * (d)[2] + (d)[4];                                               \
    (o)[1] = s13 - 4.0f * s12;                                                                     \
    (o)[2] = t43 + 4.0f * t12;                                                                     \
    (o)[3] = t42 + 2.0f * t31;                                                                     \
    (o)[4] = t42 - 2.0f * t31;                                                                     \
    (o)[5] = 4.0f * (d)[1] - 5.0f * (d)[3] + (d)[5];                                               \
  } while (0)

/* o = Aᵀ m: six transformed values to four outputs */
#define A_T(T, m, o)                                                                               \
  do {                                                                                             \
    const T a12 = (m)[1] + (m)[2], s12 = (m)[1] - (m)[2], a34 = (m)[3] + (m)[4], s34 = (m)[3] - (m)[4]; \
    (o)[0] = (m)[0] + a12 + a34;                                                                   \
    (o)[1] = s12 + 2.0f * s34;                                                                     \
    (o)[2] = a12 + 4.0f * a34;                                                                     \
    (o)[3] = s12 + 8.0f * s34 + (m)[5];                                                            \
  } while (0)

/* o = A e: four output gradients to six transformed values */
#define A_6(T, e, o)                                                                               \
  do {                                                                                             \
    const T a02 = (e)[0] + (e)[2], a13 = (e)[1] + (e)[3], b02 = (e)[0] + 4.0f * (e)[2];            \
    const T b13 = 2.0f * (e)[1] + 8.0f * (e)[3];                                                   \
    (o)[0] = (e)[0], (o)[1] = a02 + a13, (o)[2] = a02 - a13, (o)[3] = b02 + b13, (o)[4] = b02 - b13, \
    (o)[5] = (e)[3];                                                                               \
  } while (0)

/* o = G g: a filter's three taps to six transformed values */
#define G_3(T, g, o)                                                                               \
  do {                                                                                             \
    const T s02 = (g)[0] + (g)[2], q0 = (1.0f / 24) * (g)[0] + (1.0f / 6) * (g)[2];                 \
    (o)[0] = 0.25f * (g)[0], (o)[1] = (-1.0f / 6) * (s02 + (g)[1]), (o)[2] = (-1.0f / 6) * (s02 - (g)[1]); \
    (o)[3] = q0 + (1.0f / 12) * (g)[1], (o)[4] = q0 - (1.0f / 12) * (g)[1], (o)[5] = (g)[2];       \
  } while (0)

/* o = Gᵀ d: the weight gradient's six transformed values to three taps */
#define GT_6(T, d, o)                                                                              \
  do {                                                                                             \
    const T s12 = (d)[1] + (d)[2], s34 = (d)[3] + (d)[4];                                          \
    (o)[0] = 0.25f * (d)[0] - (1.0f / 6) * s12 + (1.0f / 24) * s34;                                \
    (o)[1] = (1.0f / 6) * ((d)[2] - (d)[1]) + (1.0f / 12) * ((d)[3] - (d)[4]);                     \
    (o)[2] = (1.0f / 6) * (s34 - s12) + (d)[5];                                                    \
  } while (0)

/* Four pairs of neighbouring tiles (a, b, c, d: eight floats from each pair's first column) to
 * their columns: o[q] lane i holds column q of tile 0 2 4 6 1 3 5 7 (tile 2p, 2p + 1 from pair p).
 * The same transpose turns four columns back into four pairs. */
#define UNPACKLO_PS(a, b) __builtin_shufflevector((a), (b), 0, 8, 1, 9, 4, 12, 5, 13)
#define UNPACKHI_PS(a, b) __builtin_shufflevector((a), (b), 2, 10, 3, 11, 6, 14, 7, 15)
#define UNPACKLO_PD(a, b) __builtin_shufflevector((a), (b), 0, 1, 8, 9, 4, 5, 12, 13)
#define UNPACKHI_PD(a, b) __builtin_shufflevector((a), (b), 2, 3, 10, 11, 6, 7, 14, 15)
#define TRANSPOSE4(a, b, c, d, o)                                                                  \
  do {                                                                                             \
    const v8 ab0_ = UNPACKLO_PS(a, b), ab1_ = UNPACKHI_PS(a, b), cd0_ = UNPACKLO_PS(c, d), cd1_ = UNPACKHI_PS(c, d); \
    (o)[0] = UNPACKLO_PD(ab0_, cd0_), (o)[1] = UNPACKHI_PD(ab0_, cd0_);                           \
    (o)[2] = UNPACKLO_PD(ab1_, cd1_), (o)[3] = UNPACKHI_PD(ab1_, cd1_);                           \
  } while (0)

/* ---- transforms ---------------------------------------------------------------------------- */

/* U[ξ][o][i] = (G g Gᵀ)[ξ] for the filter g of output channel o and input channel i (NO × NI): the forward's
 * g = w[o][i]; the input gradient's (o = c, i = f) g = w[f][c] turned by 180°. Eight input
 * channels at a time, one per lane. */
DT_CLONES
static void filter_transform(const dt_conv_shape *s, const float *w, int flip, float *restrict u) {
  const int NO = flip ? s->c : s->f, NI = flip ? s->f : s->c;
  for (int o = 0; o < NO; o++)
    for (int i0 = 0; i0 < NI; i0 += 8) {
      const int n = NI - i0 < 8 ? NI - i0 : 8;
      float g[9][8] = {{0}};
      for (int l = 0; l < n; l++) {
        const float *src = flip ? w + ((size_t)(i0 + l) * s->c + o) * 9 : w + ((size_t)o * s->c + i0 + l) * 9;
        for (int k = 0; k < 9; k++) g[k][l] = flip ? src[8 - k] : src[k];
      }
      v8 t[6][3]; /* G g, column by column */
      for (int col = 0; col < 3; col++) {
        const v8 in[3] = {load8(g[col]), load8(g[3 + col]), load8(g[6 + col])};
        v8 out[6];
        G_3(v8, in, out);
        for (int a = 0; a < 6; a++) t[a][col] = out[a];
      }
      for (int a = 0; a < 6; a++) { /* (G g) Gᵀ, row by row */
        v8 out[6];
        G_3(v8, t[a], out);
        for (int b = 0; b < 6; b++) {
          float *d = u + ((size_t)(6 * a + b) * NO + o) * NI + i0;
          if (n == 8) {
            store8(d, out[b]);
          } else {
            float tmp[8];
            store8(tmp, out[b]);
            memcpy(d, tmp, sizeof(float) * (size_t)n);
          }
        }
      }
    }
}

/* The column half of Bᵀ d B for tile row ti of one channel plane xc (h×w): t[k][q] = Σ_a Bᵀ[k][a]
 * x[4ti − pad + a][q − pad] for the columns q of the plane (the others stay zero). */
INLINE void input_rows(const wshape *s, const float *restrict xc, int ti, float *restrict t, const float *zero) {
  const int rw = s->rw, lo = s->pad, hi = s->pad + s->w; /* valid columns [lo, hi): rw > hi */
  const float *r[6];
  for (int a = 0; a < 6; a++) {
    const int ih = 4 * ti - s->pad + a;
    r[a] = ih >= 0 && ih < s->h ? xc + (size_t)ih * s->w : zero; /* r[a][q − lo]: column q − pad */
  }
  int q = lo;
  for (; q + 8 <= hi; q += 8) {
    v8 d[6], o[6];
    for (int a = 0; a < 6; a++) d[a] = load8(r[a] + q - lo);
    B_T(v8, d, o);
    for (int k = 0; k < 6; k++) store8(t + k * rw + q, o[k]);
  }
  for (; q < hi; q++) {
    float d[6], o[6];
    for (int a = 0; a < 6; a++) d[a] = r[a][q - lo];
    B_T(float, d, o);
    for (int k = 0; k < 6; k++) t[k * rw + q] = o[k];
  }
}

/* The column half of A e Aᵀ for tile row ti of one output-gradient plane ec (oh×ow): t[k][q] =
 * Σ_r A[k][r] e[4ti + r][q] for the columns q of the plane (the others stay zero). */
INLINE void grad_rows(const wshape *s, const float *restrict ec, int ti, float *restrict t, const float *zero) {
  const int rw = s->rw, hi = s->ow; /* rw > ow */
  const float *r[4];
  for (int a = 0; a < 4; a++) r[a] = 4 * ti + a < s->oh ? ec + (size_t)(4 * ti + a) * s->ow : zero;
  int q = 0;
  for (; q + 8 <= hi; q += 8) {
    v8 e[4], o[6];
    for (int a = 0; a < 4; a++) e[a] = load8(r[a] + q);
    A_6(v8, e, o);
    for (int k = 0; k < 6; k++) store8(t + k * rw + q, o[k]);
  }
  for (; q < hi; q++) {
    float e[4], o[6];
    for (int a = 0; a < 4; a++) e[a] = r[a][q];
    A_6(float, e, o);
    for (int k = 0; k < 6; k++) t[k * rw + q] = o[k];
  }
}

/* the transform rows of the eight tiles of group g (tiles 8g .. 8g + 7 of a block of nt): tile
 * i starts at column 4j of its tile row's rows; a tile after the block's last reads zeros.
 * Returns whether each pair (2p, 2p + 1) lies side by side, to be read as one. */
INLINE int group_tiles(const wshape *s, const float *t, int nt, int g, const float *zero, const float *p[8]) {
  for (int i = 0; i < 8; i++) {
    const int tile = 8 * g + i;
    p[i] = tile < nt ? t + (size_t)(tile / s->tw) * 6 * s->rw + 4 * (tile % s->tw) : zero;
  }
  return p[1] == p[0] + 4 && p[3] == p[2] + 4 && p[5] == p[4] + 4 && p[7] == p[6] + 4;
}

/* the eight floats at offset o of pair i's two tiles */
#define PAIR(p, i, o, adj) \
  ((adj) ? (v8)load8((p)[2 * (i)] + (o)) : (v8)JOIN((v4)load4((p)[2 * (i)] + (o)), (v4)load4((p)[2 * (i) + 1] + (o))))

/* V[6k + l][·][8g ..] = the row half of Bᵀ d B for group g: v points at the channel's row of
 * position 0, vs apart */
INLINE void input_group(const wshape *s, const float *t, int nt, int g, float *restrict v, size_t vs, const float *zero) {
  const float *p[8];
  const int adj = group_tiles(s, t, nt, g, zero, p);
  for (int k = 0; k < 6; k++) {
    const int o = k * s->rw;
    v8 d[6], r[6];
    TRANSPOSE4(PAIR(p, 0, o, adj), PAIR(p, 1, o, adj), PAIR(p, 2, o, adj), PAIR(p, 3, o, adj), d);
    const v8 a4 = PAIR(p, 0, o + 4, adj), b4 = PAIR(p, 1, o + 4, adj), c4 = PAIR(p, 2, o + 4, adj), d4 = PAIR(p, 3, o + 4, adj);
    const v8 ab = UNPACKLO_PS(a4, b4), cd = UNPACKLO_PS(c4, d4);
    d[4] = UNPACKLO_PD(ab, cd), d[5] = UNPACKHI_PD(ab, cd); /* columns 4 and 5 */
    B_T(v8, d, r);
    for (int l = 0; l < 6; l++) store8(v + (size_t)(6 * k + l) * vs + 8 * g, r[l]);
  }
}

/* Y[6k + l][·][8g ..] = the row half of A e Aᵀ for group g */
INLINE void grad_group(const wshape *s, const float *t, int nt, int g, float *restrict y, size_t ys, const float *zero) {
  const float *p[8];
  const int adj = group_tiles(s, t, nt, g, zero, p);
  for (int k = 0; k < 6; k++) {
    const int o = k * s->rw;
    v8 e[4], r[6];
    TRANSPOSE4(PAIR(p, 0, o, adj), PAIR(p, 1, o, adj), PAIR(p, 2, o, adj), PAIR(p, 3, o, adj), e);
    A_6(v8, e, r);
    for (int l = 0; l < 6; l++) store8(y + (size_t)(6 * k + l) * ys + 8 * g, r[l]);
  }
}

/* Where a tile's output rows go: off from the start of y's channel plane of sample 0, cols (0 to
 * 4: none after the block's last tile or right of the output) and rows (up to 4) to store. */
typedef struct tile_dst {
  size_t off;
  int cols, rows;
} tile_dst;

/* y[o] = Aᵀ M[·][o] A + b for one group of eight tiles (M[ξ][o][group] at m + ξ·ms), into the
 * channel plane yo. A tile's rows are four floats, stored whole where they lie inside the output
 * and in part at its right and bottom edges; whole: all eight tiles whole and side by side in
 * pairs, each pair's row stored as one. */
INLINE void output_group(const float *restrict m, size_t ms, float b, float *restrict yo, int ow, const tile_dst *td, int whole) {
  v8 c[4][6]; /* Aᵀ M: column l of the tile's four rows */
  for (int l = 0; l < 6; l++) {
    v8 col[6], r[4];
    for (int a = 0; a < 6; a++) col[a] = load8(m + (size_t)(6 * a + l) * ms);
    A_T(v8, col, r);
    for (int a = 0; a < 4; a++) c[a][l] = r[a];
  }
  for (int a = 0; a < 4; a++) {
    v8 r[4], pr[4];
    A_T(v8, c[a], r);
    TRANSPOSE4(r[0] + b, r[1] + b, r[2] + b, r[3] + b, pr);
    if (whole) {
      for (int i = 0; i < 4; i++) store8(yo + td[2 * i].off + (size_t)a * ow, pr[i]);
      continue;
    }
    for (int i = 0; i < 8; i++) {
      if (a >= td[i].rows || td[i].cols <= 0) continue;
      float *d = yo + td[i].off + (size_t)a * ow;
      v4 h;
      if (i % 2) h = HIGH(pr[i / 2]);
      else h = LOW(pr[i / 2]);
      if (td[i].cols == 4) {
        store4(d, h);
      } else {
        float tmp[4];
        store4(tmp, h);
        memcpy(d, tmp, sizeof(float) * (size_t)td[i].cols);
      }
    }
  }
}

/* y = Aᵀ M A + bias for the block of nt tiles from tile row u0 (M: ld columns per channel, ms
 * floats per position): groups in chunks of CHUNK, each chunk's destinations worked out once and
 * its groups run channel by channel, so that M and y are both read and written in order. */
enum { CHUNK = 16 };
INLINE void output_block(const wshape *s, const float *m, size_t ms, int ld, int u0, int nt, const float *bias, float *y) {
  const size_t plane = (size_t)s->oh * s->ow, out_size = (size_t)s->f * plane;
  for (int g0 = 0; g0 < ld / 8; g0 += CHUNK) {
    const int ng = ld / 8 - g0 < CHUNK ? ld / 8 - g0 : CHUNK;
    tile_dst td[CHUNK][8];
    int whole[CHUNK];
    for (int g = 0; g < ng; g++) {
      whole[g] = 1;
      for (int i = 0; i < 8; i++) {
        const int tile = 8 * (g0 + g) + i, unit = u0 + tile / s->tw, j = tile % s->tw, ti = unit % s->th;
        tile_dst *d = &td[g][i];
        d->cols = tile < nt ? (s->ow - 4 * j > 4 ? 4 : s->ow - 4 * j) : 0;
        d->rows = s->oh - 4 * ti < 4 ? s->oh - 4 * ti : 4;
        d->off = d->cols > 0 ? (size_t)(unit / s->th) * out_size + (size_t)4 * ti * s->ow + 4 * (size_t)j : 0;
        whole[g] &= d->cols == 4 && d->rows == 4 && (i % 2 == 0 || d->off == td[g][i - 1].off + 4);
      }
    }
    for (int o = 0; o < s->f; o++)
      for (int g = 0; g < ng; g++)
        output_group(m + (size_t)o * ld + 8 * (g0 + g), ms, bias != NULL ? bias[o] : 0.0f, y + o * plane, s->ow, td[g], whole[g]);
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

/* out = the sum of a vector's lanes, in a fixed order (a macro: no helper takes a vector) */
#define HSUM8(a, out)                                                                              \
  do {                                                                                             \
    const v8 h_ = (a) + __builtin_shufflevector((a), (a), 4, 5, 6, 7, 0, 1, 2, 3);                 \
    const v8 q_ = h_ + __builtin_shufflevector(h_, h_, 2, 3, 0, 1, 6, 7, 4, 5);                    \
    (out) = q_[0] + q_[1];                                                                         \
  } while (0)

/* dU[f0 + i][c0 + j] += Σ_t Y[f0 + i][t] · V[c0 + j][t] for FB × CB entries: the accumulators run
 * along the tiles and are summed across their lanes at the block's end. */
INLINE void grad_entries(const float *restrict y, const float *restrict v, float *restrict du, int C, int ld, int f0, int c0,
                         const int FB, const int CB) {
  v8 acc[4][3];
  for (int i = 0; i < FB; i++)
    for (int j = 0; j < CB; j++) acc[i][j] = (v8){0};
  for (int t = 0; t < ld; t += 8) {
    v8 b[3];
    for (int j = 0; j < CB; j++) b[j] = load8(v + (size_t)(c0 + j) * ld + t);
    for (int i = 0; i < FB; i++) {
      const v8 a = load8(y + (size_t)(f0 + i) * ld + t);
      for (int j = 0; j < CB; j++) acc[i][j] += a * b[j];
    }
  }
  for (int i = 0; i < FB; i++)
    for (int j = 0; j < CB; j++) {
      float sum;
      HSUM8(acc[i][j], sum);
      du[(size_t)(f0 + i) * C + c0 + j] += sum;
    }
}

INLINE void grad_row_block(const float *y, const float *v, float *du, int C, int ld, int f0, const int FB) {
  int c = 0;
  for (; c + 3 <= C; c += 3) grad_entries(y, v, du, C, ld, f0, c, FB, 3);
  if (C - c == 2) grad_entries(y, v, du, C, ld, f0, c, FB, 2);
  if (C - c == 1) grad_entries(y, v, du, C, ld, f0, c, FB, 1);
}

INLINE void grad_product(int F, int C, const float *y, const float *v, float *du, int ld) {
  int f = 0;
  for (; f + 4 <= F; f += 4) grad_row_block(y, v, du, C, ld, f, 4);
  switch (F - f) {
    case 3: grad_row_block(y, v, du, C, ld, f, 3); break;
    case 2: grad_row_block(y, v, du, C, ld, f, 2); break;
    case 1: grad_row_block(y, v, du, C, ld, f, 1); break;
    default: break;
  }
}

/* ---- the three passes ---------------------------------------------------------------------- */

/* V for the block of nu tile rows from u0 (nt tiles, ld columns): channel by channel, the column
 * halves of every tile row, then the row halves of every group */
INLINE void transform_inputs(const wshape *s, const float *x, int u0, int nu, int nt, int ld, const wscratch *ws) {
  const size_t plane = (size_t)s->h * s->w, in_size = (size_t)s->c * plane, vs = xstride(s->c, ld);
  for (int ch = 0; ch < s->c; ch++) {
    for (int k = 0; k < nu; k++)
      input_rows(s, x + (size_t)((u0 + k) / s->th) * in_size + ch * plane, (u0 + k) % s->th, ws->t + (size_t)k * 6 * s->rw,
                 ws->zero);
    for (int g = 0; g < ld / 8; g++) input_group(s, ws->t, nt, g, ws->v + (size_t)ch * ld, vs, ws->zero);
  }
}

/* y (batch × f×oh×ow) = the convolution of x (batch × c×h×w) whose transformed filters are u;
 * bias NULL: none. */
DT_CLONES
static void winograd_convolve(const wshape *s, int batch, const float *x, const float *u, const float *bias, float *y,
                              float *scratch) {
  const wscratch ws = carve(s, scratch);
  const int units = batch * s->th;
  for (int u0 = 0; u0 < units; u0 += s->per) {
    const int nu = units - u0 < s->per ? units - u0 : s->per, nt = nu * s->tw, ld = round8(nt);
    const size_t ms = xstride(s->f, ld);
    transform_inputs(s, x, u0, nu, nt, ld, &ws);
    for (int xi = 0; xi < XI; xi++) {
      const float *uxi = u + (size_t)xi * s->f * s->c, *v = ws.v + xi * xstride(s->c, ld);
      if (use_blas(s->c, s->f))
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->f, ld, s->c, 1.0f, uxi, s->c, v, ld, 0.0f, ws.m + xi * ms, ld);
      else
        product(s->f, s->c, uxi, v, ws.m + xi * ms, ld);
    }
    output_block(s, ws.m, ms, ld, u0, nt, bias, y);
  }
}

/* dw (f×c×3×3) = Σ over the batch's tiles of the weight gradient; du: XI·f·c scratch (dU), then
 * V and Y */
DT_CLONES
static void winograd_weight_grad(const wshape *s, int batch, const float *x, const float *dy, float *dw, float *du,
                                 float *scratch) {
  const wscratch ws = carve(s, scratch);
  const size_t oplane = (size_t)s->oh * s->ow, out_size = (size_t)s->f * oplane, fc = (size_t)s->f * s->c;
  const int units = batch * s->th;
  memset(du, 0, sizeof(float) * XI * fc);
  for (int u0 = 0; u0 < units; u0 += s->per) {
    const int nu = units - u0 < s->per ? units - u0 : s->per, nt = nu * s->tw, ld = round8(nt);
    const size_t vs = xstride(s->c, ld), ys = xstride(s->f, ld);
    transform_inputs(s, x, u0, nu, nt, ld, &ws);
    for (int o = 0; o < s->f; o++) {
      for (int k = 0; k < nu; k++)
        grad_rows(s, dy + (size_t)((u0 + k) / s->th) * out_size + o * oplane, (u0 + k) % s->th, ws.e + (size_t)k * 6 * s->rw,
                  ws.zero);
      for (int g = 0; g < ld / 8; g++) grad_group(s, ws.e, nt, g, ws.m + (size_t)o * ld, ys, ws.zero);
    }
    for (int xi = 0; xi < XI; xi++) {
      if (use_blas(s->c, s->f))
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->f, s->c, ld, 1.0f, ws.m + xi * ys, ld, ws.v + xi * vs, ld, 1.0f,
                    du + xi * fc, s->c);
      else
        grad_product(s->f, s->c, ws.m + xi * ys, ws.v + xi * vs, du + xi * fc, ld);
    }
  }
  /* dw = Gᵀ dU G, eight entries (f, c) at a time */
  for (size_t e0 = 0; e0 < fc; e0 += 8) {
    const int n = fc - e0 < 8 ? (int)(fc - e0) : 8;
    v8 d[6][6], t[3][6];
    for (int xi = 0; xi < XI; xi++) {
      float tmp[8] = {0};
      memcpy(tmp, du + xi * fc + e0, sizeof(float) * (size_t)n);
      d[xi / 6][xi % 6] = load8(tmp);
    }
    for (int b = 0; b < 6; b++) {
      const v8 col[6] = {d[0][b], d[1][b], d[2][b], d[3][b], d[4][b], d[5][b]};
      v8 out[3];
      GT_6(v8, col, out);
      for (int a = 0; a < 3; a++) t[a][b] = out[a];
    }
    float taps[9][8];
    for (int a = 0; a < 3; a++) {
      v8 out[3];
      GT_6(v8, t[a], out);
      for (int b = 0; b < 3; b++) store8(taps[3 * a + b], out[b]);
    }
    for (int l = 0; l < n; l++)
      for (int k = 0; k < 9; k++) dw[(e0 + (size_t)l) * 9 + k] = taps[k][l];
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
  const wshape gs = weight_grad_shape(s);
  winograd_weight_grad(&gs, batch, x, dy, dw, col, col + (size_t)XI * s->c * s->f);
  if (dx == NULL) return;
  const wshape is = input_grad_shape(s);
  filter_transform(s, w, 1, dcol);
  winograd_convolve(&is, batch, dy, dcol, NULL, dx, dcol + (size_t)XI * s->f * s->c);
}
