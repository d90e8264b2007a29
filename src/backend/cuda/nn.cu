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
 * same Philox streams (dt/formulas.h), so they equal the CPU's masks bit for bit.
 *
 * Files. This one holds the layers' GEMM helpers, forward and backward over a group, and the entry
 * points (cu_model_gradients, cu_model_evaluate); the kernels are in nn_kernels.cu, the plan
 * (shapes, G, memory) in nn_plan.cu, and what they share in nn_impl.h. */
#include <string.h>

#include "nn_impl.h"

extern "C" {
#include "dt/formulas.h"
#include "dt/rng.h"
}

/* ---- GEMM helpers (column-major cuBLAS on row-major data) ------------------------------------ */

static dt_status gemm(dt_backend *be, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *A,
                      int lda, long long sa, const float *B, int ldb, long long sb, float beta, float *C, int ldc,
                      long long sc, int count) {
  const float one = 1.0f;
  if (be->tf32) { /* experiment.tf32: tensor cores, inputs rounded to TF32, float32 accumulation */
    BLAS_CALL(cublasGemmStridedBatchedEx(ctx_of(be)->blas, ta, tb, m, n, k, &one, A, CUDA_R_32F, lda, sa, B, CUDA_R_32F, ldb, sb,
                                         &beta, C, CUDA_R_32F, ldc, sc, count, CUBLAS_COMPUTE_32F_FAST_TF32,
                                         CUBLAS_GEMM_DEFAULT));
    return DT_OK;
  }
  BLAS_CALL(cublasSgemmStridedBatched(ctx_of(be)->blas, ta, tb, m, n, k, &one, A, lda, sa, B, ldb, sb, &beta, C, ldc, sc,
                                      count));
  return DT_OK;
}

/* Y (S×out per node) = X (S×in) · Wᵀ + b for `count` nodes; strides in floats (xs may be 0). */
static dt_status linear_fwd(dt_backend *be, int count, int S, int in, int out, const float *x, size_t xs, const float *w,
                            const float *b, size_t ps, float *y, size_t ys) {
  NODE_KERNEL(k_bias_cols, be, count, (size_t)S * out, (unsigned)out, b, ps, y, ys);
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
                          size_t cols, int direct) {
  const int ckk = s->c * s->k * s->k;
  const size_t N = (size_t)S * s->oh * s->ow;
  if (direct) {
    NODE_KERNEL(k_conv_direct, be, count, (size_t)s->f * N, *s, S, x, xs, cs, ss, w, b, ps, y, ys);
    return DT_OK;
  }
  NODE_KERNEL(k_im2col, be, cols == 0 ? 1 : count, (size_t)ckk * N, *s, S, x, xs, cs, ss, col, cols);
  NODE_KERNEL(k_bias_rows, be, count, (size_t)s->f * N, (unsigned)N, b, ps, y, ys);
  return gemm(be, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, s->f, ckk, col, (int)N, (long long)cols, w, ckk, (long long)ps, 1.0f, y,
              (int)N, (long long)ys, count);
}

static dt_status conv_bwd(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs,
                          size_t ss, const float *w, size_t ps, const float *dy, size_t ys, float *dw, float *db, size_t gs,
                          float *dx, size_t dxs, float *col, float *dcol, size_t cols, int direct) {
  const int ckk = s->c * s->k * s->k;
  const size_t N = (size_t)S * s->oh * s->ow;
  if (direct) { /* dW straight from x and dy: no im2col */
    const dim3 grid((unsigned)(count * s->f), (unsigned)((ckk + CONV_RB - 1) / CONV_RB));
    k_conv_dw<<<grid, CU_THREADS, 0, ctx_of(be)->stream>>>(*s, S, x, xs, cs, ss, dy, ys, dw, gs);
    CU_LAUNCHED();
  } else {
    NODE_KERNEL(k_im2col, be, count, (size_t)ckk * N, *s, S, x, xs, cs, ss, col, cols);
    DT_TRY(gemm(be, CUBLAS_OP_T, CUBLAS_OP_N, ckk, s->f, (int)N, col, (int)N, (long long)cols, dy, (int)N, (long long)ys, 0.0f,
                dw, ckk, (long long)gs, count));
  }
  k_row_sums<<<count * s->f, CU_THREADS, 0, ctx_of(be)->stream>>>(s->f, N, dy, ys, db, gs);
  CU_LAUNCHED();
  if (dx == NULL) return DT_OK;
  DT_TRY(gemm(be, CUBLAS_OP_N, CUBLAS_OP_T, (int)N, ckk, s->f, dy, (int)N, (long long)ys, w, ckk, (long long)ps, 0.0f, dcol,
              (int)N, (long long)cols, count));
  NODE_KERNEL(k_col2im, be, count, (size_t)s->c * S * s->h * s->w, *s, S, dcol, cols, dx, dxs, cs, ss);
  return DT_OK;
}

/* ---- node-batched model calls ------------------------------------------------------------------ */

static void act_strides(const cu_plan *pl, int l, int S, size_t *cs, size_t *ss) {
  if (pl->cnhw[l]) *cs = (size_t)S * pl->plane[l], *ss = pl->plane[l];
  else *cs = pl->plane[l], *ss = pl->chan[l] * pl->plane[l];
}

/* (C, S, plane) → sample-major (S, C·plane) per node, or back. */
static dt_status transpose(dt_backend *be, const cu_plan *pl, int l, int count, int S, const float *x, size_t xns, float *y,
                           int back) {
  NODE_KERNEL(k_to_samples, be, count, pl->chan[l] * S * pl->plane[l], (int)pl->chan[l], S, (unsigned)pl->plane[l], x, xns, y,
         pl->ns, back);
  return DT_OK;
}

/* The group's call state: activation pointers (a flatten of a sample-major input aliases it) and
 * their node strides (0: the input, shared by all nodes). */
typedef struct pass {
  int count, S, train, group; /* slots, samples, dropout on, group index (its block of per-call arrays) */
  int timed;                  /* a training call under a profile: layer events recorded */
  const float *a[DT_MAX_LAYERS + 1];
  size_t as[DT_MAX_LAYERS + 1];
} pass;

static pass make_pass(int count, int S, int train, int group) {
  pass p;
  memset(&p, 0, sizeof p);
  p.count = count, p.S = S, p.train = train, p.group = group;
  return p;
}

/* profile: an event at position `at` of direction dir (0 forward, 1 backward) of a timed pass */
static dt_status layer_event(dt_backend *be, cu_plan *pl, const pass *ps, int dir, int at) {
  if (!ps->timed) return DT_OK;
  for (; pl->ev_made < 2 * (pl->L + 1); pl->ev_made++) /* made once, counted as made (plan_free destroys them) */
    CU_CALL(cudaEventCreate(&pl->ev[pl->ev_made / (pl->L + 1)][pl->ev_made % (pl->L + 1)]));
  CU_CALL(cudaEventRecord(pl->ev[dir][at], ctx_of(be)->stream));
  return DT_OK;
}

/* profile: adds a finished timed pass's layer times of direction dir to the profile */
static dt_status layer_times(dt_backend *be, cu_plan *pl, const pass *ps, int dir) {
  if (!ps->timed || be->profile == NULL || pl->ev_made < 2 * (pl->L + 1)) return DT_OK;
  for (int l = 0; l < pl->L && l < DT_PROFILE_LAYERS; l++) {
    float ms = 0.0f;
    if (dir == 0) CU_CALL(cudaEventElapsedTime(&ms, pl->ev[0][l], pl->ev[0][l + 1]));
    else CU_CALL(cudaEventElapsedTime(&ms, pl->ev[1][l + 1], pl->ev[1][l]));
    be->profile->layer_seconds[dir][l] += ms / 1e3;
  }
  return DT_OK;
}

static dt_status forward(dt_backend *be, cu_plan *pl, pass *ps) {
  const int count = ps->count, S = ps->S;
  const size_t ns = pl->ns, pst = pl->ps;
  int drop = 0;
  for (int l = 0; l < pl->L; l++) {
    DT_TRY(layer_event(be, pl, ps, 0, l));
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
        DT_TRY(conv_fwd(be, count, S, &li->conv, in, ins, cs, ss, w, b, pst, o, ns, pl->col, ins == 0 ? 0 : pl->cols, pl->direct[l]));
        break;
      case DT_LAYER_MAXPOOL2D: {
        const dt_pool_shape *s = &li->pool;
        const size_t planes = (size_t)s->c * S;
        NODE_KERNEL(k_maxpool, be, count, planes * s->oh * s->ow, *s, in, ins, o, ns, pl->argmax[l]);
        break;
      }
      case DT_LAYER_RELU: KERNEL(k_relu, be, (size_t)count * ns, in, o); break;
      case DT_LAYER_FLATTEN:
        if (pl->cnhw[l]) DT_TRY(transpose(be, pl, l, count, S, in, ins, o, 0));
        else ps->a[l + 1] = in, ps->as[l + 1] = ins;
        break;
      case DT_LAYER_DROPOUT:
        if (ps->train && li->p > 0.0f) {
          NODE_KERNEL(k_dropout, be, count, pl->chan[l] * S * pl->plane[l], (int)pl->chan[l], S, (unsigned)pl->plane[l], ns, cs, ss,
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
  return layer_event(be, pl, ps, 0, pl->L);
}

/* Backward from dlogits in pl->ga; parameter gradients into pl->grad. */
static dt_status backward(dt_backend *be, cu_plan *pl, pass *ps) {
  const int count = ps->count, S = ps->S;
  const size_t ns = pl->ns, pst = pl->ps;
  float *dcur = pl->ga, *dnext = pl->gb;
  DT_TRY(layer_event(be, pl, ps, 1, pl->L));
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
                        pl->cols, pl->direct[l]));
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
          NODE_KERNEL(k_maxpool_back, be, count, planes * s->h * s->w, *s, dcur, pl->argmax[l], ns, dx, ns);
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
    DT_TRY(layer_event(be, pl, ps, 1, l));
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
    NODE_KERNEL(k_gather_batch, be, G, (size_t)S * pl->in_dim, S, (unsigned)pl->in_dim, nb->x + (size_t)g0 * nb->x_stride, nb->x_stride,
           nb->y + (size_t)g0 * nb->y_stride, nb->y_stride, BLOCK(pl->batch_d, q), pl->buf[0], pl->ns, pl->y);
    DT_TRY(cu_profile_mark(be, DT_PHASE_BATCH));
    pass ps = make_pass(G, S, nb->dropout != NULL, q);
    ps.timed = be->profile != NULL;
    ps.a[0] = pl->buf[0];
    ps.as[0] = pl->ns;
    DT_TRY(forward(be, pl, &ps));
    KERNEL(k_softmax_nll, be, (size_t)G * S, pl->classes, S, ps.a[pl->L], pl->ns, pl->y, (size_t)S, BLOCK(pl->batch_d, q),
           BLOCK(pl->scale_d, q), pl->ga, pl->sample_loss, pl->sample_hit);
    CU_CALL(cudaMemsetAsync(BLOCK(pl->total, q), 0, sizeof(double) * G, stream));
    CU_CALL(cudaMemsetAsync(BLOCK(pl->correct, q), 0, sizeof(long long) * G, stream));
    KERNEL(k_node_totals, be, (size_t)G, S, pl->sample_loss, pl->sample_hit, BLOCK(pl->total, q), BLOCK(pl->correct, q));
    DT_TRY(cu_profile_mark(be, DT_PHASE_FORWARD));
    DT_TRY(layer_times(be, pl, &ps, 0));
    DT_TRY(backward(be, pl, &ps));
    NODE_KERNEL(k_scatter_grad, be, cnt, pl->P, pl->grad, pl->ps, BLOCK(pl->batch_d, q),
           nb->grad + (size_t)g0 * nb->grad_stride, nb->grad_stride);
    DT_TRY(cu_profile_mark(be, DT_PHASE_BACKWARD));
    DT_TRY(layer_times(be, pl, &ps, 1));
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
        NODE_KERNEL(k_broadcast, be, G, (size_t)S * pl->in_dim, x, pl->buf[0], pl->ns);
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
