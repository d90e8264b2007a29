/* linear on the GPU: one strided-batched GEMM per group (each node its own weights), on a
 * sample-major input; a channel-major input is transposed into the layer's scratch first (and its
 * gradient transposed back). The output is sample-major. */
#include "nn_impl.h"

static int out_cnhw(const cu_plan *pl, int l) {
  (void)pl, (void)l;
  return 0;
}

static size_t scratch(const cu_plan *pl, int l) { /* the transposed input */
  return pl->cnhw[l] ? sizeof(float) * (size_t)pl->S * pl->ly[l].in_size : 0;
}

static dt_status forward(cu_call *c) {
  const dt_layer_info *li = c->li;
  cu_plan *pl = c->pl;
  const int count = c->ps->count, S = c->ps->S, in = (int)li->in_size, out = (int)li->out_size;
  const float *x = c->x;
  size_t xs = c->xs;
  if (pl->cnhw[c->l]) { /* to sample-major: (S, C·plane) */
    float *t = (float *)c->scr;
    const size_t ts = c->scr_stride / sizeof(float);
    NODE_KERNEL(k_to_samples, c->be, count, li->in_size * S, (int)pl->chan[c->l], S, (unsigned)pl->plane[c->l], x, xs, t, ts, 0);
    x = t, xs = ts;
  }
  const float *w = pl->theta + li->w_off;
  if (li->n_b > 0) NODE_KERNEL(k_bias_cols, c->be, count, (size_t)S * out, (unsigned)out, pl->theta + li->b_off, pl->ps, c->y, c->ys);
  return cu_gemm(c->be, CUBLAS_OP_T, CUBLAS_OP_N, out, S, in, w, in, (long long)pl->ps, x, in, (long long)xs, li->n_b > 0 ? 1.0f : 0.0f,
                 c->y, out, (long long)c->ys, count);
}

static dt_status backward(cu_call *c) {
  const dt_layer_info *li = c->li;
  cu_plan *pl = c->pl;
  const int count = c->ps->count, S = c->ps->S, in = (int)li->in_size, out = (int)li->out_size;
  const int transposed = pl->cnhw[c->l];
  float *t = (float *)c->scr;
  const size_t ts = c->scr_stride / sizeof(float);
  const float *x = transposed ? t : c->x; /* the forward left the transposed input in the scratch */
  const size_t xs = transposed ? ts : c->xs;
  DT_TRY(cu_gemm(c->be, CUBLAS_OP_N, CUBLAS_OP_T, in, out, S, x, in, (long long)xs, c->dy, out, (long long)pl->ns, 0.0f,
                 pl->grad + li->w_off, in, (long long)pl->ps, count));
  if (li->n_b > 0) KERNEL(k_col_sums, c->be, (size_t)count * out, out, S, c->dy, pl->ns, pl->grad + li->b_off, pl->ps);
  if (c->dx == NULL) return DT_OK;
  /* a channel-major input's gradient comes out sample-major in the scratch (read for dW first) */
  float *dx = transposed ? t : c->dx;
  const size_t dxs = transposed ? ts : pl->ns;
  DT_TRY(cu_gemm(c->be, CUBLAS_OP_N, CUBLAS_OP_N, in, S, out, pl->theta + li->w_off, in, (long long)pl->ps, c->dy, out,
                 (long long)pl->ns, 0.0f, dx, in, (long long)dxs, count));
  if (transposed)
    NODE_KERNEL(k_to_samples, c->be, count, li->in_size * S, (int)pl->chan[c->l], S, (unsigned)pl->plane[c->l], t, ts, c->dx, pl->ns, 1);
  return DT_OK;
}

const cu_layer_ops cu_layer_linear = {.out_cnhw = out_cnhw, .aliases = NULL, .scratch = scratch,
                                      .forward = forward, .backward = backward};
