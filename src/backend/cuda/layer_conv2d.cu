/* conv2d on the GPU: im2col + one strided-batched GEMM per group (each node its own filters), or
 * directly where that GEMM would be skinny (cu_conv_direct); the output is channel-major (CNHW)
 * whatever the input's layout. Also the convolution of a residual block's projection. */
#include "nn_impl.h"

dt_status cu_conv_forward(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs, size_t ss,
                          const float *w, const float *b, size_t ps, float *y, size_t ys, float *col, size_t cols, int direct) {
  const int ckk = s->c * s->k * s->k;
  const size_t N = (size_t)S * s->oh * s->ow;
  if (direct) {
    NODE_KERNEL(k_conv_direct, be, count, (size_t)s->f * N, *s, S, x, xs, cs, ss, w, b, ps, y, ys);
    return DT_OK;
  }
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
  if (direct) { /* dW straight from x and dy: no im2col */
    const dim3 grid((unsigned)(count * s->f), (unsigned)((ckk + CONV_RB - 1) / CONV_RB));
    k_conv_dw<<<grid, CU_THREADS, 0, ctx_of(be)->stream>>>(*s, S, x, xs, cs, ss, dy, ys, dw, gs);
    CU_LAUNCHED();
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
