/* The arithmetic the CPU and CUDA backends share, written once: Philox4x32-10, the per-element
 * layer formulas (relu, dropout, log-softmax with its gradient), the per-element vector formulas,
 * and the per-element update of every fused local-optimizer step with the
 * coefficients it takes. The C backend and the CUDA kernels compile these same inline functions
 * (__host__ __device__ under nvcc), so a formula cannot drift between them.
 *
 * Bit-identity between CPU and GPU rests on both compiling each statement without multiply-add
 * contraction: every C file is compiled with -ffp-contract=off (meson.build; gcc in ISO mode
 * would not contract anyway, clang would), and vec.cu, whose vector ops and fused steps must give
 * the CPU's bits, is built with -fmad=false (src/backend/cuda/meson.build). Keep each statement's
 * operation order as written: it is the contract the gpu suite checks with a tolerance of zero.
 * The layer formulas are compiled by the nn kernels with contraction allowed and libdevice's
 * expf/logf; the gpu suite checks those against the CPU within a tolerance.
 *
 * Adding a local optimizer: its coefficient struct and element function here, one line in
 * DT_STEP_KINDS, and its coefficients in src/nn/local_opt.c (dt/local_opt.h documents it). */
#ifndef DT_FORMULAS_H
#define DT_FORMULAS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define DT_HD __host__ __device__ __forceinline__
#else
#define DT_HD inline
#endif

/* ---- augmentation: the source of output pixel (y, x) of a crop at (dy, dx) of an image of h×w
 * padded on every side, then flipped (torchvision's RandomCrop + RandomHorizontalFlip): 1 and
 * (*sy, *sx) when it lies in the image, else 0 (the pixel takes the fill value) ---------------- */
static DT_HD int dt_f_augment_source(int y, int x, int h, int w, int dy, int dx, int flip, int *sy, int *sx) {
  *sy = y + dy;
  *sx = (flip ? w - 1 - x : x) + dx;
  return *sy >= 0 && *sy < h && *sx >= 0 && *sx < w;
}

/* ---- Philox4x32-10 (Salmon et al., SC'11): the bijection every random stream draws from ------ */

static DT_HD void dt_philox4x32_10_block(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    const uint64_t p0 = (uint64_t)0xD2511F53u * c0;
    const uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
    const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n1 = (uint32_t)p1;
    const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    const uint32_t n3 = (uint32_t)p0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* The j-th word a stream yields from the state (key, ctr, buf, used) of a dt_rng (dt/rng.h):
 * what dt_rng_u32 would return on its (j+1)-th call. A device draws the words of one call in
 * parallel at their positions with it. */
static DT_HD uint32_t dt_philox_word_at(const uint32_t key[2], const uint32_t ctr[4], const uint32_t buf[4], int used,
                                        uint64_t j) {
  const uint64_t avail = 4 - (uint64_t)used;
  if (j < avail) return buf[used + j];
  const uint64_t k = j - avail, block = ((uint64_t)ctr[1] << 32 | ctr[0]) + k / 4;
  const uint32_t at[4] = {(uint32_t)block, (uint32_t)(block >> 32), ctr[2], ctr[3]};
  uint32_t out[4];
  dt_philox4x32_10_block(at, key, out);
  return out[k % 4];
}

/* A stream word as a float in [0, 1) with 24 random bits (dt_rng_float). */
static DT_HD float dt_f_word_float(uint32_t word) { return (float)(word >> 8) * 0x1.0p-24f; }

/* ---- layers ---------------------------------------------------------------------------------- */

/* Inverted dropout keeps an element when its word's float is at least p and scales it by this. */
static DT_HD int dt_f_dropout_keep(uint32_t word, float p) { return dt_f_word_float(word) >= p; }
static DT_HD float dt_f_dropout_scale(float p) { return p < 1.0f ? 1.0f / (1.0f - p) : 0.0f; }
/* A dropout element forward (x) or backward (dy) through its mask entry. */
static DT_HD float dt_f_dropout_apply(int keep, float x, float scale) { return keep ? x * scale : 0.0f; }

static DT_HD float dt_f_relu(float x) { return x > 0.0f ? x : 0.0f; }
/* The gradient through a relu, from its output y. */
static DT_HD float dt_f_relu_back(float y, float dy) { return y > 0.0f ? dy : 0.0f; }

/* Normalisation (batchnorm2d, groupnorm): an element normalised by its group's mean and inverse
 * standard deviation, then the affine map. */
static DT_HD float dt_f_norm_hat(float x, float mean, float invstd) { return (x - mean) * invstd; }
static DT_HD float dt_f_norm_apply(float xhat, float gamma, float beta) { return xhat * gamma + beta; }
/* The input gradient of a normalised element from its group's sums Σdy' and Σdy'·x̂ over n
 * elements (dy' = dy·gamma): invstd·(dy' − Σdy'/n − x̂·Σdy'x̂/n). */
static DT_HD float dt_f_norm_back(float dyg, float xhat, float invstd, float mean_dyg, float mean_dyg_xhat) {
  return invstd * (dyg - mean_dyg - xhat * mean_dyg_xhat);
}
/* 1/√(var + eps), from a double variance. */
static DT_HD float dt_f_invstd(double var, float eps) { return (float)(1.0 / sqrt(var + (double)eps)); }
/* A running statistic moved towards a batch's: PyTorch's (1 − momentum)·r + momentum·v. */
static DT_HD float dt_f_running(float r, float momentum, double v) { return (1.0f - momentum) * r + momentum * (float)v; }

/* One sample's log-sum-exp of its `classes` logits z, and in *arg the first largest logit's
 * class; its loss is lse − z[label]. Max-shifted, summed in class order in float. */
static DT_HD float dt_f_log_sum_exp(const float *z, int classes, int *arg) {
  float mx = z[0];
  int a = 0;
  for (int c = 1; c < classes; c++)
    if (z[c] > mx) {
      mx = z[c];
      a = c;
    }
  float sum = 0.0f;
  for (int c = 0; c < classes; c++) sum += expf(z[c] - mx);
  *arg = a;
  return mx + logf(sum);
}
/* scale·softmax(z)[c] from the sample's log-sum-exp; the label's entry then loses scale. */
static DT_HD float dt_f_softmax_scaled(float scale, float zc, float lse) { return scale * expf(zc - lse); }

/* ---- vector elements ------------------------------------------------------------------------ */

static DT_HD float dt_f_scale(float a, float y) { return a * y; }
static DT_HD float dt_f_axpy(float a, float x, float y) { return y + a * x; }
static DT_HD float dt_f_axpby(float a, float x, float b, float y) { return a * x + b * y; }
/* The first term of a mixing sum: 0 + w·x (so that −0 becomes +0 as in a sum from zero). */
static DT_HD float dt_f_mix_first(float w, float x) { return 0.0f + w * x; }
static DT_HD float dt_f_div(float x, double d) { return (float)(x / d); }
static DT_HD float dt_f_mean_of_sum(double sum, double count) { return (float)(sum / count); }
/* Terms of the reductions, each accumulated in double. */
static DT_HD double dt_f_dot_term(float x, float y) { return (double)x * y; }
static DT_HD double dt_f_sqdist_term(float x, float y) {
  const double t = (double)x - y;
  return t * t;
}
static DT_HD double dt_f_sqdist_mean_term(float x, double sum, double count) {
  const double t = x - sum / count;
  return t * t;
}

/* ---- fused local-optimizer steps ------------------------------------------------------------
 * Each step updates parameters p with gradient g and the two state arrays m and v of
 * dt_local_opt (what each kind keeps in them is said below), after adding the extra-gradient
 * hook of dt/local_opt.h: d = g + extra_alpha·p + extra_b (extra_b may be NULL). Coefficients
 * that do not depend on the element are computed once per step, on the host, by
 * src/nn/local_opt.c, and passed in the kind's struct. */

#define DT_STEP_KINDS(X) \
  X(sgd)                 \
  X(adam)                \
  X(rmsprop)             \
  X(adadelta)            \
  X(nadam)

typedef enum dt_step_kind {
#define DT_STEP_ENUM(name) DT_STEP_##name,
  DT_STEP_KINDS(DT_STEP_ENUM)
#undef DT_STEP_ENUM
  DT_STEP_KIND_COUNT
} dt_step_kind;

/* SGD with momentum, dampening, Nesterov and L2 weight decay; m: the momentum buffer (NULL when
 * momentum is 0); first: the step that starts the buffer. */
typedef struct dt_sgd_coef {
  float lr, momentum, dampening, wd;
  int first, nesterov;
} dt_sgd_coef;

/* Adam and AdamW (torch 1.13's single-tensor path): step_size = lr/(1 − β1^t),
 * inv_bc2_sqrt = 1/√(1 − β2^t), decay = 1 − lr·wd (AdamW) or 1, l2 = wd (Adam) or 0. */
typedef struct dt_adam_coef {
  float step_size, inv_bc2_sqrt, decay, l2, beta1, beta2, one_b1, one_b2, eps;
} dt_adam_coef;

/* RMSprop, not centered: v the squared-gradient average, m the momentum buffer. */
typedef struct dt_rmsprop_coef {
  float lr, alpha, one_a, eps, wd, momentum;
} dt_rmsprop_coef;

/* Adadelta: v the squared-gradient average, m the accumulated squared update. */
typedef struct dt_adadelta_coef {
  float lr, rho, one_r, eps, wd;
} dt_adadelta_coef;

/* NAdam (PyTorch 2's formula): c_grad = lr(1 − μ_t)/(1 − Π_t), c_m = lr·μ_{t+1}/(1 − Π_t·μ_{t+1}),
 * inv_bc2_sqrt = 1/√(1 − β2^t). */
typedef struct dt_nadam_coef {
  float c_grad, c_m, inv_bc2_sqrt, beta1, beta2, one_b1, one_b2, eps, wd;
} dt_nadam_coef;

/* One step of one kind: the argument of the backend's local_step op. */
typedef struct dt_step {
  dt_step_kind kind;
  float extra_alpha;
  union {
    dt_sgd_coef sgd;
    dt_adam_coef adam;
    dt_rmsprop_coef rmsprop;
    dt_adadelta_coef adadelta;
    dt_nadam_coef nadam;
  } c;
} dt_step;

static DT_HD float dt_step_grad(float extra_alpha, const float *p, const float *g, const float *extra_b, size_t i) {
  return g[i] + extra_alpha * p[i] + (extra_b ? extra_b[i] : 0.0f);
}

static DT_HD void dt_sgd_elem(const dt_sgd_coef *c, float ea, float *p, const float *g, float *m, float *v,
                              const float *eb, size_t i) {
  (void)v;
  float d = dt_step_grad(ea, p, g, eb, i);
  if (c->wd != 0.0f) d += c->wd * p[i];
  if (c->momentum != 0.0f) {
    m[i] = c->first ? d : c->momentum * m[i] + (1.0f - c->dampening) * d;
    d = c->nesterov ? d + c->momentum * m[i] : m[i];
  }
  p[i] -= c->lr * d;
}

static DT_HD void dt_adam_elem(const dt_adam_coef *c, float ea, float *p, const float *g, float *m, float *v,
                               const float *eb, size_t i) {
  float d = dt_step_grad(ea, p, g, eb, i);
  d += c->l2 * p[i];
  const float pi = p[i] * c->decay;
  const float mi = c->beta1 * m[i] + c->one_b1 * d;
  const float vi = c->beta2 * v[i] + c->one_b2 * d * d;
  m[i] = mi;
  v[i] = vi;
  p[i] = pi - c->step_size * (mi / (sqrtf(vi) * c->inv_bc2_sqrt + c->eps));
}

static DT_HD void dt_rmsprop_elem(const dt_rmsprop_coef *c, float ea, float *p, const float *g, float *m, float *v,
                                  const float *eb, size_t i) {
  float d = dt_step_grad(ea, p, g, eb, i);
  d += c->wd * p[i];
  const float vi = c->alpha * v[i] + c->one_a * d * d;
  v[i] = vi;
  float u = d / (sqrtf(vi) + c->eps);
  if (c->momentum != 0.0f) u = m[i] = c->momentum * m[i] + u;
  p[i] -= c->lr * u;
}

static DT_HD void dt_adadelta_elem(const dt_adadelta_coef *c, float ea, float *p, const float *g, float *m, float *v,
                                   const float *eb, size_t i) {
  float d = dt_step_grad(ea, p, g, eb, i);
  d += c->wd * p[i];
  const float vi = c->rho * v[i] + c->one_r * d * d;
  v[i] = vi;
  const float delta = sqrtf(m[i] + c->eps) / sqrtf(vi + c->eps) * d;
  m[i] = c->rho * m[i] + c->one_r * delta * delta;
  p[i] -= c->lr * delta;
}

static DT_HD void dt_nadam_elem(const dt_nadam_coef *c, float ea, float *p, const float *g, float *m, float *v,
                                const float *eb, size_t i) {
  float d = dt_step_grad(ea, p, g, eb, i);
  d += c->wd * p[i];
  const float mi = c->beta1 * m[i] + c->one_b1 * d, vi = c->beta2 * v[i] + c->one_b2 * d * d;
  m[i] = mi;
  v[i] = vi;
  const float denom = sqrtf(vi) * c->inv_bc2_sqrt + c->eps;
  p[i] -= c->c_grad * d / denom + c->c_m * mi / denom;
}

#endif
