/* batchnorm2d and groupnorm on the GPU, in either layout. One block per (statistic group, node):
 * batchnorm2d a channel over the node's batch and plane, groupnorm a (sample, group). A block sums
 * in double, each thread over a fixed stride and then a fixed tree (no atomics: the same bits on
 * every call), mean first and then the centred second moment as the CPU does, and applies
 * dt/formulas.h's per-element arithmetic. Only a slot's first batch[g] samples enter the
 * statistics; the outputs and input gradients of the samples past them are 0. The scratch keeps
 * each group's (mean, invstd) for the backward. */
#include "nn_impl.h"

extern "C" {
#include "dt/formulas.h"
}

/* The sum of v over the block, in a fixed order; every thread gets it. */
static __device__ double block_sum(double v, double *red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int h = CU_THREADS / 2; h > 0; h /= 2) {
    if ((int)threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
    __syncthreads();
  }
  const double s = red[0];
  __syncthreads();
  return s;
}

/* Statistic group q of a node with b samples: its elements j = 0..n-1 and each one's channel and
 * offset in the layout (cs, ss); `valid` 0 for a groupnorm group of a padded sample. */
typedef struct norm_group {
  unsigned n;
  int valid, bn, cpg, s0;
  unsigned plane;
} norm_group;

static __device__ norm_group group_of(const dt_norm_shape &sh, unsigned q, int b) {
  norm_group ng;
  ng.bn = sh.kind == DT_LAYER_BATCHNORM2D;
  ng.plane = (unsigned)sh.plane;
  ng.cpg = sh.groups > 0 ? sh.c / sh.groups : 1;
  if (ng.bn) {
    ng.n = (unsigned)b * ng.plane, ng.valid = b > 0, ng.s0 = 0;
  } else {
    ng.s0 = (int)(q / (unsigned)sh.groups);
    ng.n = (unsigned)ng.cpg * ng.plane, ng.valid = ng.s0 < b;
  }
  return ng;
}

static __device__ int channel_of(const dt_norm_shape &sh, const norm_group &ng, unsigned q, unsigned j) {
  return ng.bn ? (int)q : (int)(q % (unsigned)sh.groups) * ng.cpg + (int)(j / ng.plane);
}

static __device__ size_t offset_of(const norm_group &ng, unsigned q, unsigned j, size_t cs, size_t ss, int c) {
  const unsigned s = ng.bn ? j / ng.plane : (unsigned)ng.s0;
  return (size_t)c * cs + (size_t)s * ss + j % ng.plane;
}

/* Writes 0 to group q's elements of padded samples: batchnorm2d's samples b..S-1 of channel q, a
 * padded sample's whole groupnorm group. */
static __device__ void zero_padding(const dt_norm_shape &sh, const norm_group &ng, unsigned q, int b, int S, float *o, size_t cs,
                                    size_t ss) {
  if (ng.bn) {
    const unsigned pad = (unsigned)(S - b) * ng.plane;
    for (unsigned j = threadIdx.x; j < pad; j += CU_THREADS)
      o[(size_t)q * cs + (size_t)(b + j / ng.plane) * ss + j % ng.plane] = 0.0f;
  } else if (!ng.valid) {
    for (unsigned j = threadIdx.x; j < ng.n; j += CU_THREADS) o[offset_of(ng, q, j, cs, ss, channel_of(sh, ng, q, j))] = 0.0f;
  }
}

static __global__ void k_norm_forward(dt_norm_shape sh, int S, const int *batch, int train, const float *x, size_t xs, size_t cs,
                                      size_t ss, float *y, size_t ys, const float *theta, size_t ps, float *bufs, size_t bs,
                                      float *stats, size_t sts) {
  __shared__ double red[CU_THREADS];
  const unsigned q = blockIdx.x;
  const size_t g = blockIdx.y;
  const int b = batch != NULL ? batch[g] : S;
  const norm_group ng = group_of(sh, q, b);
  const float *xg = x + g * xs;
  float *yg = y + g * ys;
  const float *gamma = theta + g * ps + sh.w_off, *beta = theta + g * ps + sh.b_off;
  float *rmean = ng.bn && bufs != NULL ? bufs + g * bs + sh.buf_off : NULL, *rvar = rmean != NULL ? rmean + sh.c : NULL;
  zero_padding(sh, ng, q, b, S, yg, cs, ss);
  if (!ng.valid) return;
  float mean, invstd;
  if (train || !ng.bn) {
    double acc = 0.0;
    for (unsigned j = threadIdx.x; j < ng.n; j += CU_THREADS) acc += xg[offset_of(ng, q, j, cs, ss, channel_of(sh, ng, q, j))];
    const double n = (double)ng.n, m = block_sum(acc, red) / n;
    acc = 0.0;
    for (unsigned j = threadIdx.x; j < ng.n; j += CU_THREADS) {
      const double d = xg[offset_of(ng, q, j, cs, ss, channel_of(sh, ng, q, j))] - m;
      acc += d * d;
    }
    const double v = block_sum(acc, red) / n;
    mean = (float)m;
    invstd = dt_f_invstd(v, sh.eps);
    if (threadIdx.x == 0) {
      if (train) stats[g * sts + 2 * q] = mean, stats[g * sts + 2 * q + 1] = invstd;
      if (train && rmean != NULL) {
        rmean[q] = dt_f_running(rmean[q], sh.momentum, m);
        rvar[q] = dt_f_running(rvar[q], sh.momentum, n > 1 ? v * n / (n - 1) : v);
      }
    }
  } else { /* eval: the running statistics */
    mean = rmean != NULL ? rmean[q] : 0.0f;
    invstd = dt_f_invstd(rvar != NULL ? rvar[q] : 1.0, sh.eps);
  }
  for (unsigned j = threadIdx.x; j < ng.n; j += CU_THREADS) {
    const int c = channel_of(sh, ng, q, j);
    const size_t at = offset_of(ng, q, j, cs, ss, c);
    yg[at] = dt_f_norm_apply(dt_f_norm_hat(xg[at], mean, invstd), gamma[c], beta[c]);
  }
}

/* gamma's and beta's gradients: block (c, g) sums over the slot's samples and the plane, in
 * (sample, pixel) order per thread. */
static __global__ void k_norm_dparams(dt_norm_shape sh, int S, const int *batch, const float *x, size_t xs, size_t cs, size_t ss,
                                      const float *dy, size_t dys, float *grad, size_t ps, const float *stats, size_t sts) {
  __shared__ double red[CU_THREADS];
  const int c = (int)blockIdx.x;
  const size_t g = blockIdx.y;
  const int b = batch != NULL ? batch[g] : S;
  const unsigned plane = (unsigned)sh.plane, n = (unsigned)b * plane;
  const int bn = sh.kind == DT_LAYER_BATCHNORM2D, cpg = sh.groups > 0 ? sh.c / sh.groups : 1;
  double dg = 0.0, db = 0.0;
  for (unsigned j = threadIdx.x; j < n; j += CU_THREADS) {
    const unsigned s = j / plane;
    const size_t q = bn ? (size_t)c : (size_t)s * sh.groups + (size_t)(c / cpg);
    const size_t at = (size_t)c * cs + (size_t)s * ss + j % plane;
    const float d = dy[g * dys + at];
    dg += (double)d * dt_f_norm_hat(x[g * xs + at], stats[g * sts + 2 * q], stats[g * sts + 2 * q + 1]);
    db += d;
  }
  dg = block_sum(dg, red);
  db = block_sum(db, red);
  if (threadIdx.x == 0) grad[g * ps + sh.w_off + c] = (float)dg, grad[g * ps + sh.b_off + c] = (float)db;
}

/* The input gradient of statistic group q: its sums Σdy' and Σdy'·x̂ (dy' = dy·gamma), then each
 * element's dt_f_norm_back. */
static __global__ void k_norm_backward(dt_norm_shape sh, int S, const int *batch, const float *x, size_t xs, size_t cs, size_t ss,
                                       const float *dy, size_t dys, const float *theta, size_t ps, const float *stats, size_t sts,
                                       float *dx, size_t dxs) {
  __shared__ double red[CU_THREADS];
  const unsigned q = blockIdx.x;
  const size_t g = blockIdx.y;
  const int b = batch != NULL ? batch[g] : S;
  const norm_group ng = group_of(sh, q, b);
  float *dxg = dx + g * dxs;
  zero_padding(sh, ng, q, b, S, dxg, cs, ss);
  if (!ng.valid) return;
  const float *xg = x + g * xs, *dyg = dy + g * dys, *gamma = theta + g * ps + sh.w_off;
  const float mean = stats[g * sts + 2 * q], invstd = stats[g * sts + 2 * q + 1];
  double s1 = 0.0, s2 = 0.0;
  for (unsigned j = threadIdx.x; j < ng.n; j += CU_THREADS) {
    const int c = channel_of(sh, ng, q, j);
    const size_t at = offset_of(ng, q, j, cs, ss, c);
    const double d = (double)dyg[at] * gamma[c];
    s1 += d;
    s2 += d * dt_f_norm_hat(xg[at], mean, invstd);
  }
  s1 = block_sum(s1, red);
  s2 = block_sum(s2, red);
  const double n = (double)ng.n;
  const float m1 = (float)(s1 / n), m2 = (float)(s2 / n);
  for (unsigned j = threadIdx.x; j < ng.n; j += CU_THREADS) {
    const int c = channel_of(sh, ng, q, j);
    const size_t at = offset_of(ng, q, j, cs, ss, c);
    dxg[at] = dt_f_norm_back(dyg[at] * gamma[c], dt_f_norm_hat(xg[at], mean, invstd), invstd, m1, m2);
  }
}

static unsigned stat_groups(const dt_norm_shape *s, int S) {
  return s->kind == DT_LAYER_BATCHNORM2D ? (unsigned)s->c : (unsigned)S * (unsigned)s->groups;
}

size_t cu_norm_stats(const dt_norm_shape *s, int S) { return 2 * (size_t)stat_groups(s, S); }

dt_status cu_norm_forward(dt_backend *be, const dt_norm_shape *s, int count, int S, const int *batch, int train, const float *x,
                          size_t xs, size_t cs, size_t ss, float *y, size_t ys, const float *theta, size_t ps, float *bufs, size_t bs,
                          float *stats, size_t sts) {
  if (count <= 0) return DT_OK;
  const dim3 grid(stat_groups(s, S), (unsigned)count);
  k_norm_forward<<<grid, CU_THREADS, 0, ctx_of(be)->stream>>>(*s, S, batch, train, x, xs, cs, ss, y, ys, theta, ps, bufs, bs, stats,
                                                             sts);
  CU_LAUNCHED();
  return DT_OK;
}

dt_status cu_norm_backward(dt_backend *be, const dt_norm_shape *s, int count, int S, const int *batch, const float *x, size_t xs,
                           size_t cs, size_t ss, const float *dy, size_t dys, const float *theta, size_t ps, float *grad,
                           const float *stats, size_t sts, float *dx, size_t dxs) {
  if (count <= 0) return DT_OK;
  k_norm_dparams<<<dim3((unsigned)s->c, (unsigned)count), CU_THREADS, 0, ctx_of(be)->stream>>>(*s, S, batch, x, xs, cs, ss, dy, dys,
                                                                                             grad, ps, stats, sts);
  CU_LAUNCHED();
  if (dx == NULL) return DT_OK;
  k_norm_backward<<<dim3(stat_groups(s, S), (unsigned)count), CU_THREADS, 0, ctx_of(be)->stream>>>(
      *s, S, batch, x, xs, cs, ss, dy, dys, theta, ps, stats, sts, dx, dxs);
  CU_LAUNCHED();
  return DT_OK;
}

static size_t scratch(const cu_plan *pl, int l) { return sizeof(float) * cu_norm_stats(&pl->ly[l].norm, pl->S); }

static dt_status forward(cu_call *c) {
  cu_plan *pl = c->pl;
  return cu_norm_forward(c->be, &c->li->norm, c->ps->count, c->ps->S, c->ps->batch, c->ps->train, c->x, c->xs, c->xcs, c->xss, c->y,
                         c->ys, pl->theta, pl->ps, pl->bufs, pl->bs, (float *)c->scr, c->scr_stride / sizeof(float));
}

static dt_status backward(cu_call *c) {
  cu_plan *pl = c->pl;
  return cu_norm_backward(c->be, &c->li->norm, c->ps->count, c->ps->S, c->ps->batch, c->x, c->xs, c->xcs, c->xss, c->dy, pl->ns,
                          pl->theta, pl->ps, pl->grad, (const float *)c->scr, c->scr_stride / sizeof(float), c->dx, pl->ns);
}

const cu_layer_ops cu_layer_batchnorm2d = {.out_cnhw = NULL, .aliases = NULL, .scratch = scratch,
                                           .forward = forward, .backward = backward};
const cu_layer_ops cu_layer_groupnorm = {.out_cnhw = NULL, .aliases = NULL, .scratch = scratch,
                                         .forward = forward, .backward = backward};
