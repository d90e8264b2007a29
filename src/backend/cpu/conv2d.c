/* 2-D convolution on the CPU, three ways:
 * - direct loops for stride-1, unpadded convolutions with a small kernel volume (c·k·k ≤ 64,
 *   e.g. the seed CNN's 1→3 5×5): no im2col copy, vectorised along the output row;
 * - Winograd F(4×4, 3×3) for the other 3×3 stride-1 convolutions (ResNet's and VGG's): 4×
 *   fewer multiply-adds in each of the three passes (winograd.c, whose dt_conv_winograd picks);
 * - otherwise im2col and one sgemm per sample. Measured here, a per-sample GEMM (90–150 GFLOP/s)
 *   beats one GEMM over the batch's im2col matrix (10–16 GFLOP/s) for few-filter convolutions,
 *   and it keeps the scratch at one sample's size.
 * All are checked against a naive loop in tests/unit/test_nn.c. */
#include <cblas.h>
#include <string.h>

#include "cpu_impl.h"

static int use_direct(const dt_conv_shape *s) {
  return s->stride == 1 && s->pad == 0 && s->c * s->k * s->k <= 64;
}

/* ---- direct path --------------------------------------------------------------------------- */

/* Eight floats as one GNU vector. Memory is accessed through v8u, an unaligned, may-alias view,
 * with plain dereferences: no helper function may take or return a vector, since a helper that
 * is not inlined (-O0) would be compiled for the baseline ABI while its caller is an AVX clone. */
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));
#define load8(p) (*(const v8u *)(const void *)(p))
#define store8(p, v) (*(v8u *)(void *)(p) = (v))

#define INLINE static inline __attribute__((always_inline))

/* Output rows of FT filters at once: the FT accumulators of one 8-wide column block stay in
 * registers across all taps, and each input load feeds FT multiply-adds. FT and K are
 * compile-time constants at every call (see dispatch below), so the tap loops unroll. */
INLINE void forward_group(const dt_conv_shape *s, const float *restrict xn, const float *restrict w,
                          const float *restrict b, float *restrict yn, int f0, const int FT, const int K) {
  const int OH = s->oh, OW = s->ow, H = s->h, W = s->w, taps = s->c * K * K;
  const int OW8 = OW & ~7;
  for (int oh = 0; oh < OH; oh++) {
    for (int ow = 0; ow < OW8; ow += 8) {
      v8 acc[4];
      for (int j = 0; j < FT; j++) acc[j] = (v8){0} + b[f0 + j];
      for (int c = 0; c < s->c; c++)
        for (int ki = 0; ki < K; ki++) {
          const float *xr = xn + ((size_t)c * H + oh + ki) * W + ow;
          const int t0 = (c * K + ki) * K;
          for (int kj = 0; kj < K; kj++) {
            const v8 xv = load8(xr + kj);
            for (int j = 0; j < FT; j++) acc[j] += w[(size_t)(f0 + j) * taps + t0 + kj] * xv;
          }
        }
      for (int j = 0; j < FT; j++) store8(yn + ((size_t)(f0 + j) * OH + oh) * OW + ow, acc[j]);
    }
    for (int ow = OW8; ow < OW; ow++)
      for (int j = 0; j < FT; j++) {
        float a = b[f0 + j];
        for (int c = 0; c < s->c; c++)
          for (int ki = 0; ki < K; ki++)
            for (int kj = 0; kj < K; kj++)
              a += w[(size_t)(f0 + j) * taps + (c * K + ki) * K + kj] * xn[((size_t)c * H + oh + ki) * W + ow + kj];
        yn[((size_t)(f0 + j) * OH + oh) * OW + ow] = a;
      }
  }
}

INLINE void forward_sample(const dt_conv_shape *s, const float *restrict xn, const float *restrict w,
                           const float *restrict b, float *restrict yn, const int K) {
  int f = 0;
  for (; f + 4 <= s->f; f += 4) forward_group(s, xn, w, b, yn, f, 4, K);
  switch (s->f - f) {
    case 3: forward_group(s, xn, w, b, yn, f, 3, K); break;
    case 2: forward_group(s, xn, w, b, yn, f, 2, K); break;
    case 1: forward_group(s, xn, w, b, yn, f, 1, K); break;
    default: break;
  }
}

DT_CLONES
static void direct_forward(const dt_conv_shape *s, int batch, const float *restrict x,
                           const float *restrict w, const float *restrict b, float *restrict y) {
  const size_t in_size = (size_t)s->c * s->h * s->w, out_size = (size_t)s->f * s->oh * s->ow;
  for (int n = 0; n < batch; n++) {
    const float *xn = x + n * in_size;
    float *yn = y + n * out_size;
    switch (s->k) { /* common kernel sizes get fully unrolled taps */
      case 3: forward_sample(s, xn, w, b, yn, 3); break;
      case 5: forward_sample(s, xn, w, b, yn, 5); break;
      default: forward_sample(s, xn, w, b, yn, s->k); break;
    }
  }
}

/* dW[f][t] = Σ dy[f][p]·x[p + t]: the KG taps kj0 .. kj0+KG-1 of one kernel row at once; their
 * accumulators stay in registers over the whole output plane, sharing each dy load, and are
 * reduced (8 lanes → 1) once per plane, so no floating-point reassociation is needed. */
INLINE void dw_group(const dt_conv_shape *s, const float *restrict xc, const float *restrict g, int ki,
                     int kj0, float *restrict out, const int KG) {
  const int OH = s->oh, OW = s->ow, W = s->w, OW8 = OW & ~7;
  v8 acc[8];
  float tail[8];
  for (int j = 0; j < KG; j++) acc[j] = (v8){0}, tail[j] = 0.0f;
  for (int oh = 0; oh < OH; oh++) {
    const float *gr = g + (size_t)oh * OW, *xr = xc + (size_t)(oh + ki) * W + kj0;
    for (int ow = 0; ow < OW8; ow += 8) {
      const v8 gv = load8(gr + ow);
      for (int j = 0; j < KG; j++) acc[j] += gv * load8(xr + ow + j);
    }
    for (int ow = OW8; ow < OW; ow++)
      for (int j = 0; j < KG; j++) tail[j] += gr[ow] * xr[ow + j];
  }
  for (int j = 0; j < KG; j++) {
    float sum = tail[j];
    for (int l = 0; l < 8; l++) sum += acc[j][l];
    out[j] += sum;
  }
}

/* All K taps of kernel row ki: one pass when K <= 8 (the usual case), else groups of 8. */
INLINE void dw_row(const dt_conv_shape *s, const float *restrict xc, const float *restrict g, int ki,
                   float *restrict out, const int K) {
  int kj = 0;
  for (; kj + 8 <= K; kj += 8) dw_group(s, xc, g, ki, kj, out + kj, 8);
  switch (K - kj) {
    case 7: dw_group(s, xc, g, ki, kj, out + kj, 7); break;
    case 6: dw_group(s, xc, g, ki, kj, out + kj, 6); break;
    case 5: dw_group(s, xc, g, ki, kj, out + kj, 5); break;
    case 4: dw_group(s, xc, g, ki, kj, out + kj, 4); break;
    case 3: dw_group(s, xc, g, ki, kj, out + kj, 3); break;
    case 2: dw_group(s, xc, g, ki, kj, out + kj, 2); break;
    case 1: dw_group(s, xc, g, ki, kj, out + kj, 1); break;
    default: break;
  }
}

DT_CLONES
static void direct_backward(const dt_conv_shape *s, int batch, const float *restrict x,
                            const float *restrict w, const float *restrict dy,
                            float *restrict dw, float *restrict db, float *restrict dx) {
  const int OH = s->oh, OW = s->ow, H = s->h, W = s->w, K = s->k;
  const int taps = s->c * K * K;
  const size_t in_size = (size_t)s->c * H * W, out_size = (size_t)s->f * OH * OW;
  const size_t plane = (size_t)OH * OW, plane8 = plane & ~(size_t)7;
  memset(dw, 0, sizeof(float) * (size_t)s->f * taps);
  for (int f = 0; f < s->f; f++) {
    float *dwf = dw + (size_t)f * taps;
    v8 bacc = (v8){0};
    float btail = 0.0f;
    for (int n = 0; n < batch; n++) {
      const float *g = dy + n * out_size + (size_t)f * plane;
      for (size_t p = 0; p < plane8; p += 8) bacc += load8(g + p);
      for (size_t p = plane8; p < plane; p++) btail += g[p];
      for (int c = 0; c < s->c; c++) {
        const float *xc = x + n * in_size + (size_t)c * H * W;
        for (int ki = 0; ki < K; ki++) {
          float *out = dwf + (c * K + ki) * K;
          switch (K) {
            case 3: dw_row(s, xc, g, ki, out, 3); break;
            case 5: dw_row(s, xc, g, ki, out, 5); break;
            default: dw_row(s, xc, g, ki, out, K); break;
          }
        }
      }
    }
    float sum = btail;
    for (int l = 0; l < 8; l++) sum += bacc[l];
    db[f] = sum;
  }
  if (dx == NULL) return;
  memset(dx, 0, sizeof(float) * (size_t)batch * in_size);
  for (int n = 0; n < batch; n++)
    for (int f = 0; f < s->f; f++) {
      const float *dyf = dy + n * out_size + (size_t)f * OH * OW;
      const float *wf = w + (size_t)f * taps;
      for (int c = 0; c < s->c; c++)
        for (int oh = 0; oh < OH; oh++)
          for (int ki = 0; ki < K; ki++) {
            float *dxr = dx + n * in_size + ((size_t)c * H + oh + ki) * W;
            const float *g = dyf + (size_t)oh * OW;
            for (int kj = 0; kj < K; kj++) {
              const float wv = wf[(c * K + ki) * K + kj];
              for (int ow = 0; ow < OW; ow++) dxr[ow + kj] += wv * g[ow];
            }
          }
    }
}

/* ---- im2col + GEMM path -------------------------------------------------------------------- */

/* The output columns [lo, hi) whose input column ow·stride − pad + kj lies inside the image:
 * the rest of a row reads the zero padding. */
static void valid_cols(const dt_conv_shape *s, int kj, int *lo, int *hi) {
  const int a = s->pad - kj, b = s->w - 1 + s->pad - kj; /* ow·stride must lie in [a, b] */
  *lo = a <= 0 ? 0 : (a + s->stride - 1) / s->stride;
  *hi = b < 0 ? 0 : b / s->stride + 1;
  if (*hi > s->ow) *hi = s->ow;
  if (*lo > *hi) *lo = *hi;
}

/* col[(c·k + ki)·k + kj][oh·ow + ow] = x[c][oh·stride − pad + ki][ow·stride − pad + kj], zero
 * outside the image: each row is a zeroed margin, a copy (stride 1) or a strided gather, and a
 * zeroed margin. */
static void im2col(const dt_conv_shape *s, const float *restrict x, float *restrict col) {
  const int ohw = s->oh * s->ow;
  for (int c = 0; c < s->c; c++)
    for (int ki = 0; ki < s->k; ki++)
      for (int kj = 0; kj < s->k; kj++) {
        float *dst = col + (size_t)((c * s->k + ki) * s->k + kj) * ohw;
        const float *src = x + (size_t)c * s->h * s->w;
        if (s->stride == 1 && s->pad == 0) { /* every row whole */
          for (int oh = 0; oh < s->oh; oh++) memcpy(dst + oh * s->ow, src + (size_t)(oh + ki) * s->w + kj, sizeof(float) * (size_t)s->ow);
          continue;
        }
        int lo, hi;
        valid_cols(s, kj, &lo, &hi);
        const int off = lo * s->stride - s->pad + kj; /* input column of output column lo */
        for (int oh = 0; oh < s->oh; oh++) {
          const int ih = oh * s->stride - s->pad + ki;
          float *row = dst + oh * s->ow;
          if (ih < 0 || ih >= s->h) {
            memset(row, 0, sizeof(float) * (size_t)s->ow);
            continue;
          }
          const float *srow = src + (size_t)ih * s->w + off;
          /* margins of a pixel or two: loops, not library calls */
          for (int ow = 0; ow < lo; ow++) row[ow] = 0.0f;
          if (s->stride == 1) memcpy(row + lo, srow, sizeof(float) * (size_t)(hi - lo));
          else
            for (int ow = lo; ow < hi; ow++) row[ow] = srow[(size_t)(ow - lo) * s->stride];
          for (int ow = hi; ow < s->ow; ow++) row[ow] = 0.0f;
        }
      }
}

/* x += the columns back in place (the adjoint of im2col); every element of x receives its terms
 * in (c, ki, kj, oh, ow) order, as a plain loop over them would add them. */
DT_CLONES
static void col2im(const dt_conv_shape *s, const float *restrict col, float *restrict x) {
  const int ohw = s->oh * s->ow;
  memset(x, 0, sizeof(float) * (size_t)s->c * s->h * s->w);
  for (int c = 0; c < s->c; c++)
    for (int ki = 0; ki < s->k; ki++)
      for (int kj = 0; kj < s->k; kj++) {
        const float *src = col + (size_t)((c * s->k + ki) * s->k + kj) * ohw;
        float *dst = x + (size_t)c * s->h * s->w;
        int lo, hi;
        valid_cols(s, kj, &lo, &hi);
        const int off = lo * s->stride - s->pad + kj;
        for (int oh = 0; oh < s->oh; oh++) {
          const int ih = oh * s->stride - s->pad + ki;
          if (ih < 0 || ih >= s->h) continue;
          float *restrict drow = dst + (size_t)ih * s->w + off;
          const float *restrict crow = src + (size_t)oh * s->ow;
          if (s->stride == 1)
            for (int ow = lo; ow < hi; ow++) drow[ow - lo] += crow[ow];
          else
            for (int ow = lo; ow < hi; ow++) drow[(size_t)(ow - lo) * s->stride] += crow[ow];
        }
      }
}

DT_CLONES
static void bias_rows(int rows, int cols, const float *restrict b, float *restrict y) {
  for (int r = 0; r < rows; r++)
    for (int p = 0; p < cols; p++) y[(size_t)r * cols + p] = b[r];
}

DT_CLONES
static void row_sums_add(int rows, int cols, const float *restrict dy, float *restrict db) {
  for (int r = 0; r < rows; r++) {
    float lanes[16] = {0};
    int p = 0;
    for (; p + 16 <= cols; p += 16)
      for (int l = 0; l < 16; l++) lanes[l] += dy[(size_t)r * cols + p + l];
    float sum = 0.0f;
    for (int l = 0; l < 16; l++) sum += lanes[l];
    for (; p < cols; p++) sum += dy[(size_t)r * cols + p];
    db[r] += sum;
  }
}

void dt_cpu_conv2d_forward(const dt_conv_shape *s, int batch, const float *x, const float *w,
                           const float *b, float *y, float *col) {
  if (use_direct(s)) {
    direct_forward(s, batch, x, w, b, y);
    return;
  }
  if (dt_conv_winograd(s)) {
    dt_cpu_winograd_forward(s, batch, x, w, b, y, col);
    return;
  }
  const int ohw = s->oh * s->ow, ckk = s->c * s->k * s->k;
  const size_t in_size = (size_t)s->c * s->h * s->w, out_size = (size_t)s->f * ohw;
  for (int n = 0; n < batch; n++) {
    float *yn = y + n * out_size;
    /* Bias first, then accumulate the GEMM onto it (beta = 1): one pass fewer over y. */
    bias_rows(s->f, ohw, b, yn);
    im2col(s, x + n * in_size, col);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->f, ohw, ckk, 1.0f, w, ckk, col,
                ohw, 1.0f, yn, ohw);
  }
}

void dt_cpu_conv2d_backward(const dt_conv_shape *s, int batch, const float *x, const float *w,
                            const float *dy, float *dw, float *db, float *dx, float *col,
                            float *dcol) {
  if (use_direct(s)) {
    direct_backward(s, batch, x, w, dy, dw, db, dx);
    return;
  }
  const int ohw = s->oh * s->ow, ckk = s->c * s->k * s->k;
  const size_t in_size = (size_t)s->c * s->h * s->w, out_size = (size_t)s->f * ohw;
  if (dt_conv_winograd(s)) {
    memset(db, 0, sizeof(float) * (size_t)s->f);
    for (int n = 0; n < batch; n++) row_sums_add(s->f, ohw, dy + n * out_size, db);
    dt_cpu_winograd_backward(s, batch, x, w, dy, dw, dx, col, dcol);
    return;
  }
  /* the weight gradient transposed, dwᵀ (ckk×f) = Σ_n col_n·dy_nᵀ, behind dcol's matrix: with
   * few filters (ResNet-20's 16) OpenBLAS runs this shape at twice the rate of f×ckk (measured
   * 73 against 35 GFLOP/s for 144×16 over 1024 on one Cooper Lake core) */
  float *dwt = dcol + (size_t)ckk * ohw;
  memset(db, 0, sizeof(float) * (size_t)s->f);
  for (int n = 0; n < batch; n++) {
    const float *dyn = dy + n * out_size;
    row_sums_add(s->f, ohw, dyn, db);
    im2col(s, x + n * in_size, col);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ckk, s->f, ohw, 1.0f, col, ohw, dyn, ohw, n == 0 ? 0.0f : 1.0f,
                dwt, s->f);
    if (dx != NULL) {
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ckk, ohw, s->f, 1.0f, w, ckk, dyn,
                  ohw, 0.0f, dcol, ohw);
      col2im(s, dcol, dx + n * in_size);
    }
  }
  for (int f = 0; f < s->f; f++)
    for (int t = 0; t < ckk; t++) dw[(size_t)f * ckk + t] = dwt[(size_t)t * s->f + f];
}
