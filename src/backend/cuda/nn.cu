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
 * Padded samples (past a node's batch) and idle slots never enter batch statistics: normalisation
 * reads each slot's batch size on the device and writes zeros past it.
 *
 * Layers. Each layer type is one entry of the table cu_layer_ops (nn_impl.h), defined in its own
 * file layer_<name>.cu: its output layout, whether it aliases its input, its scratch, forward and
 * backward over a group. This file walks the model's compiled list through that table (the
 * executor), and holds the entry points (cu_model_gradients, cu_model_evaluate); kernels several
 * layers use are in nn_kernels.cu, the plan (shapes, G, memory) in nn_plan.cu. */
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

extern "C" {
#include "dt/formulas.h"
#include "dt/rng.h"
#include "dt/log.h"
}

/* ---- GEMM ------------------------------------------------------------------------------------- */

dt_status cu_gemm(dt_backend *be, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *A, int lda,
                  long long sa, const float *B, int ldb, long long sb, float beta, float *C, int ldc, long long sc, int count) {
  const float one = 1.0f;
  if (be->tf32) { /* experiment.tf32: tensor cores, inputs rounded to TF32, float32 accumulation */
    BLAS_CALL(cu_blas.gemm_strided_batched_ex(ctx_of(be)->blas, ta, tb, m, n, k, &one, A, CUDA_R_32F, lda, sa, B, CUDA_R_32F,
                                              ldb, sb, &beta, C, CUDA_R_32F, ldc, sc, count, CUBLAS_COMPUTE_32F_FAST_TF32,
                                              CUBLAS_GEMM_DEFAULT));
    return DT_OK;
  }
  BLAS_CALL(cu_blas.sgemm_strided_batched(ctx_of(be)->blas, ta, tb, m, n, k, &one, A, lda, sa, B, ldb, sb, &beta, C, ldc, sc,
                                          count));
  return DT_OK;
}

/* ---- the executor ------------------------------------------------------------------------------ */

static const cu_layer_ops *const layer_ops[DT_LAYER_KIND_COUNT] = {
#define CU_LAYER_ENTRY(upper, lower) [DT_LAYER_##upper] = &cu_layer_##lower,
    DT_LAYER_LIST(CU_LAYER_ENTRY)
#undef CU_LAYER_ENTRY
};

const cu_layer_ops *cu_layer_ops_of(dt_layer_kind k) { return layer_ops[k]; }

static cu_pass make_pass(int count, int S, int train, int group, const int *batch) {
  cu_pass p;
  memset(&p, 0, sizeof p);
  p.count = count, p.S = S, p.train = train, p.group = group, p.batch = batch;
  return p;
}

/* profile: an event at position `at` of direction dir (0 forward, 1 backward) of a timed pass */
static dt_status layer_event(dt_backend *be, cu_plan *pl, const cu_pass *ps, int dir, int at) {
  if (!ps->timed) return DT_OK;
  for (; pl->ev_made < 2 * (pl->L + 1); pl->ev_made++) /* made once, counted as made (plan_free destroys them) */
    CU_CALL(cudaEventCreate(&pl->ev[pl->ev_made / (pl->L + 1)][pl->ev_made % (pl->L + 1)]));
  CU_CALL(cudaEventRecord(pl->ev[dir][at], ctx_of(be)->stream));
  return DT_OK;
}

/* profile: adds a finished timed pass's layer times of direction dir to the profile */
static dt_status layer_times(dt_backend *be, cu_plan *pl, const cu_pass *ps, int dir) {
  if (!ps->timed || be->profile == NULL || pl->ev_made < 2 * (pl->L + 1)) return DT_OK;
  for (int l = 0; l < pl->L && l < DT_PROFILE_LAYERS; l++) {
    float ms = 0.0f;
    if (dir == 0) CU_CALL(cudaEventElapsedTime(&ms, pl->ev[0][l], pl->ev[0][l + 1]));
    else CU_CALL(cudaEventElapsedTime(&ms, pl->ev[1][l + 1], pl->ev[1][l]));
    be->profile->layer_seconds[dir][l] += ms / 1e3;
  }
  return DT_OK;
}

static cu_call layer_call(dt_backend *be, cu_plan *pl, cu_pass *ps, int l) {
  cu_call c;
  memset(&c, 0, sizeof c);
  c.be = be, c.pl = pl, c.ps = ps, c.li = &pl->ly[l], c.l = l;
  c.x = ps->a[l], c.xs = ps->as[l];
  cu_act_strides(pl, l, ps->S, &c.xcs, &c.xss);
  c.y = pl->act[l + 1], c.ys = pl->as[l + 1];
  cu_act_strides(pl, l + 1, ps->S, &c.ycs, &c.yss);
  c.scr = pl->scr[l], c.scr_stride = pl->scr_stride[l];
  return c;
}

static dt_status forward(dt_backend *be, cu_plan *pl, cu_pass *ps) {
  for (int l = 0; l < pl->L; l++) {
    DT_TRY(layer_event(be, pl, ps, 0, l));
    cu_call c = layer_call(be, pl, ps, l);
    if (pl->alias[l]) c.y = (float *)c.x, c.ys = c.xs;
    ps->a[l + 1] = c.y, ps->as[l + 1] = c.ys;
    DT_TRY(layer_ops[pl->ly[l].kind]->forward(&c));
  }
  return layer_event(be, pl, ps, 0, pl->L);
}

/* Backward from dlogits in pl->ga; parameter gradients into pl->grad. */
static dt_status backward(dt_backend *be, cu_plan *pl, cu_pass *ps) {
  float *dcur = pl->ga, *dnext = pl->gb;
  DT_TRY(layer_event(be, pl, ps, 1, pl->L));
  for (int l = pl->L - 1; l >= 0; l--) {
    cu_call c = layer_call(be, pl, ps, l);
    if (pl->alias[l]) c.y = (float *)c.x, c.ys = c.xs;
    c.dy = dcur;
    c.dx = l > 0 ? dnext : NULL; /* the first layer's input gradient is never needed (the input is data) */
    DT_TRY(layer_ops[pl->ly[l].kind]->backward(&c));
    if (c.dx == dnext) {
      dnext = dcur;
      dcur = c.dx;
    }
    DT_TRY(layer_event(be, pl, ps, 1, l));
  }
  return DT_OK;
}

/* The group's buffers (running statistics) in from, or back out to, the nodes' rows. */
static dt_status buffers_copy(dt_backend *be, cu_plan *pl, float *rows, size_t stride, int cnt, int out) {
  if (pl->B == 0) return DT_OK;
  DT_CHECK(rows != NULL, DT_ERR_INTERNAL, "a model with buffers called without them");
  if (out)
    CU_CALL(cudaMemcpy2DAsync(rows, sizeof(float) * stride, pl->bufs, sizeof(float) * pl->bs, sizeof(float) * pl->B, cnt,
                              cudaMemcpyDeviceToDevice, ctx_of(be)->stream));
  else
    CU_CALL(cudaMemcpy2DAsync(pl->bufs, sizeof(float) * pl->bs, rows, sizeof(float) * stride, sizeof(float) * pl->B, cnt,
                              cudaMemcpyDeviceToDevice, ctx_of(be)->stream));
  return DT_OK;
}

/* The G-slot block of group q in a per-call array. */
#define BLOCK(p, q) ((p) + (size_t)(q) * pl->G)

/* ---- captured calls ----------------------------------------------------------------------------
 * A model call's device work depends on the host only through its pointers, strides and node
 * count (batch sizes, loss scales and dropout states travel through pinned buffers that the work
 * copies from): so the work of a call is captured once as a CUDA graph, on the second call with
 * the same key (a plan's very first call, where cuBLAS sets itself up, runs directly and is not
 * counted), and replayed after: one launch for a call's few dozen. A plan keeps the last
 * CU_GRAPHS keys. A profiled call runs directly (its layer events and phase marks wait for the
 * device), and so does every call once a capture has failed, or where DT_CUDA_GRAPHS=0 (to
 * compare). A replay does exactly the launches the captured call did, so results are the same
 * bits with and without graphs. */
typedef dt_status (*cu_work)(dt_backend *be, cu_plan *pl, const void *arg);

static int graphs_wanted(void) {
  static int wanted = -1;
  if (wanted < 0) {
    const char *e = getenv("DT_CUDA_GRAPHS");
    wanted = e == NULL || strcmp(e, "0") != 0;
  }
  return wanted;
}

static dt_status run_captured(dt_backend *be, cu_plan *pl, const void *key, size_t key_len, cu_work work, const void *arg) {
  if (be->profile != NULL || pl->graphs_off || !graphs_wanted() || key_len > sizeof pl->graphs[0].key || !pl->warm) {
    pl->warm = 1;
    return work(be, pl, arg);
  }
  cudaStream_t stream = ctx_of(be)->stream;
  cu_graph *slot = NULL, *oldest = &pl->graphs[0];
  for (int i = 0; i < CU_GRAPHS; i++) {
    cu_graph *gr = &pl->graphs[i];
    if (gr->used > 0 && gr->key_len == key_len && memcmp(gr->key, key, key_len) == 0) slot = gr;
    if (gr->used < oldest->used) oldest = gr;
  }
  pl->tick++;
  if (slot != NULL && slot->exec != NULL) { /* replay */
    slot->used = pl->tick;
    CU_CALL(cudaGraphLaunch(slot->exec, stream));
    return DT_OK;
  }
  if (slot == NULL) { /* a key seen for the first time: remembered, run directly */
    if (oldest->exec != NULL) (void)cudaGraphExecDestroy(oldest->exec);
    memset(oldest, 0, sizeof *oldest);
    memcpy(oldest->key, key, key_len);
    oldest->key_len = key_len;
    oldest->used = pl->tick;
    return work(be, pl, arg);
  }
  /* the second call with this key: capture it, then launch the graph */
  slot->used = pl->tick;
  const cudaError_t began = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  const dt_status st = began == cudaSuccess ? work(be, pl, arg) : DT_OK;
  cudaGraph_t graph = NULL;
  const cudaError_t ended = began == cudaSuccess ? cudaStreamEndCapture(stream, &graph) : began;
  cudaGraphExec_t exec = NULL;
  const cudaError_t made = st == DT_OK && ended == cudaSuccess ? cudaGraphInstantiate(&exec, graph, 0) : cudaErrorUnknown;
  if (graph != NULL) (void)cudaGraphDestroy(graph);
  if (made != cudaSuccess) { /* this call's work was not run: run it directly, and every later call */
    (void)cudaGetLastError();
    if (st != DT_OK) dt_error_clear();
    dt_log_debug("cuda: a model call could not be captured as a graph (%s); calls run launch by launch\n",
                 cudaGetErrorString(ended != cudaSuccess ? ended : made));
    pl->graphs_off = 1;
    return work(be, pl, arg);
  }
  slot->exec = exec;
  CU_CALL(cudaGraphLaunch(exec, stream));
  return DT_OK;
}

/* What identifies a call's device work (zeroed before it is filled: compared as bytes). */
typedef struct grad_key {
  const float *theta, *buffers, *x;
  float *grad;
  const int32_t *y;
  size_t theta_stride, buffers_stride, grad_stride, x_stride, y_stride;
  int count, dropout, x_padded;
} grad_key;

/* The device work of a training call: every group's uploads, gather, forward, loss, backward,
 * gradients out (the host has filled the groups' pinned blocks). */
static dt_status gradients_work(dt_backend *be, cu_plan *pl, const void *arg) {
  const dt_node_batch *nb = (const dt_node_batch *)arg;
  cudaStream_t stream = ctx_of(be)->stream;
  const int G = pl->G, S = pl->S, groups = (nb->count + G - 1) / G;
  for (int q = 0; q < groups; q++) {
    const int g0 = q * G, cnt = nb->count - g0 < G ? nb->count - g0 : G;
    CU_CALL(cudaMemcpyAsync(BLOCK(pl->batch_d, q), BLOCK(pl->batch_h, q), sizeof(int) * G, cudaMemcpyHostToDevice, stream));
    CU_CALL(cudaMemcpyAsync(BLOCK(pl->scale_d, q), BLOCK(pl->scale_h, q), sizeof(float) * G, cudaMemcpyHostToDevice, stream));
    if (pl->dropouts > 0)
      CU_CALL(cudaMemcpyAsync(pl->states_d + (size_t)q * pl->dropouts * G, pl->states_h + (size_t)q * pl->dropouts * G,
                              sizeof(dt_rng) * pl->dropouts * G, cudaMemcpyHostToDevice, stream));
    CU_CALL(cudaMemcpy2DAsync(pl->theta, sizeof(float) * pl->ps, nb->theta + (size_t)g0 * nb->theta_stride,
                              sizeof(float) * nb->theta_stride, sizeof(float) * pl->P, cnt, cudaMemcpyDeviceToDevice, stream));
    DT_TRY(buffers_copy(be, pl, nb->buffers != NULL ? nb->buffers + (size_t)g0 * nb->buffers_stride : NULL, nb->buffers_stride, cnt,
                        0));
    cu_pass ps = make_pass(G, S, 1, q, BLOCK(pl->batch_d, q));
    ps.timed = be->profile != NULL;
    ps.dropout = nb->dropout != NULL;
    const int32_t *labels = pl->y;
    size_t label_stride = (size_t)S;
    if (nb->x_padded && cnt == G) { /* a full group of padded batches: read in place */
      ps.a[0] = nb->x + (size_t)g0 * nb->x_stride, ps.as[0] = nb->x_stride;
      labels = nb->y + (size_t)g0 * nb->y_stride, label_stride = nb->y_stride;
    } else { /* each slot's batch and zeros after it (and in idle slots) into the group's input */
      NODE_KERNEL(k_gather_batch, be, G, (size_t)S * pl->in_dim, S, (unsigned)pl->in_dim, nb->x + (size_t)g0 * nb->x_stride,
                  nb->x_stride, nb->y + (size_t)g0 * nb->y_stride, nb->y_stride, BLOCK(pl->batch_d, q), pl->act[0], pl->as[0],
                  pl->y);
      ps.a[0] = pl->act[0], ps.as[0] = pl->as[0];
    }
    DT_TRY(cu_profile_mark(be, DT_PHASE_BATCH));
    DT_TRY(forward(be, pl, &ps));
    KERNEL(k_softmax_nll, be, (size_t)G * S, pl->classes, S, ps.a[pl->L], ps.as[pl->L], labels, label_stride, BLOCK(pl->batch_d, q),
           BLOCK(pl->scale_d, q), pl->ga, pl->ns, pl->sample_loss, pl->sample_hit);
    CU_CALL(cudaMemsetAsync(BLOCK(pl->total, q), 0, sizeof(double) * G, stream));
    CU_CALL(cudaMemsetAsync(BLOCK(pl->correct, q), 0, sizeof(long long) * G, stream));
    KERNEL(k_node_totals, be, (size_t)G, S, pl->sample_loss, pl->sample_hit, BLOCK(pl->total, q), BLOCK(pl->correct, q));
    DT_TRY(cu_profile_mark(be, DT_PHASE_FORWARD));
    DT_TRY(layer_times(be, pl, &ps, 0));
    DT_TRY(backward(be, pl, &ps));
    NODE_KERNEL(k_scatter_grad, be, cnt, pl->P, pl->grad, pl->ps, BLOCK(pl->batch_d, q),
           nb->grad + (size_t)g0 * nb->grad_stride, nb->grad_stride);
    /* the moved running statistics back (a node with batch 0 moved none: its own come back) */
    DT_TRY(buffers_copy(be, pl, nb->buffers != NULL ? nb->buffers + (size_t)g0 * nb->buffers_stride : NULL, nb->buffers_stride, cnt,
                        1));
    DT_TRY(cu_profile_mark(be, DT_PHASE_BACKWARD));
    DT_TRY(layer_times(be, pl, &ps, 1));
  }
  CU_CALL(cudaMemcpyAsync(pl->total_h, pl->total, sizeof(double) * groups * G, cudaMemcpyDeviceToHost, stream));
  return DT_OK;
}

dt_status cu_model_gradients(dt_backend *be, void *plan, const dt_node_batch *nb) {
  cu_plan *pl = (cu_plan *)plan;
  const int G = pl->G, S = pl->S, groups = (nb->count + G - 1) / G;
  DT_CHECK(groups <= pl->groups_cap, DT_ERR_INTERNAL, "model call for %d nodes, plan made for %d", nb->count, pl->nodes);
  for (int q = 0; q < groups; q++) { /* the host's part: each group's pinned block */
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
  }
  grad_key key;
  memset(&key, 0, sizeof key);
  key.theta = nb->theta, key.buffers = nb->buffers, key.x = nb->x, key.grad = nb->grad, key.y = nb->y;
  key.theta_stride = nb->theta_stride, key.buffers_stride = nb->buffers_stride, key.grad_stride = nb->grad_stride;
  key.x_stride = nb->x_stride, key.y_stride = nb->y_stride, key.count = nb->count, key.dropout = nb->dropout != NULL;
  key.x_padded = nb->x_padded;
  DT_TRY(run_captured(be, pl, &key, sizeof key, gradients_work, nb));
  CU_CALL(cudaStreamSynchronize(ctx_of(be)->stream));
  for (int l = 0; l < nb->count; l++)
    if (nb->batch[l] > 0) nb->loss[l] = (float)(pl->total_h[l] / nb->batch[l]);
  return DT_OK;
}

typedef struct eval_key {
  const float *theta, *buffers, *x;
  const int32_t *y;
  size_t theta_stride, buffers_stride;
  int count, n;
} eval_key;

/* The device work of an evaluation call: every group over every chunk of the samples, the
 * totals into the pinned host arrays. */
static dt_status evaluate_work(dt_backend *be, cu_plan *pl, const void *arg) {
  const dt_node_eval *ne = (const dt_node_eval *)arg;
  cudaStream_t stream = ctx_of(be)->stream;
  const int G = pl->G, groups = (ne->count + G - 1) / G;
  for (int q = 0; q < groups; q++) {
    const int g0 = q * G, cnt = ne->count - g0 < G ? ne->count - g0 : G;
    CU_CALL(cudaMemcpy2DAsync(pl->theta, sizeof(float) * pl->ps, ne->theta + (size_t)g0 * ne->theta_stride,
                              sizeof(float) * ne->theta_stride, sizeof(float) * pl->P, cnt, cudaMemcpyDeviceToDevice, stream));
    DT_TRY(buffers_copy(be, pl, ne->buffers != NULL ? (float *)ne->buffers + (size_t)g0 * ne->buffers_stride : NULL,
                        ne->buffers_stride, cnt, 0));
    CU_CALL(cudaMemsetAsync(BLOCK(pl->total, q), 0, sizeof(double) * G, stream));
    CU_CALL(cudaMemsetAsync(BLOCK(pl->correct, q), 0, sizeof(long long) * G, stream));
    for (int start = 0; start < ne->n; start += pl->S) {
      const int S = ne->n - start < pl->S ? ne->n - start : pl->S;
      const float *x = ne->x + (size_t)start * pl->in_dim;
      cu_pass ps = make_pass(G, S, 0, q, NULL);
      if (pl->shared_input) {
        ps.a[0] = x, ps.as[0] = 0;
      } else { /* every slot gets its own copy of the chunk */
        NODE_KERNEL(k_broadcast, be, G, (size_t)S * pl->in_dim, x, pl->act[0], pl->as[0]);
        ps.a[0] = pl->act[0], ps.as[0] = pl->as[0];
      }
      DT_TRY(forward(be, pl, &ps));
      KERNEL(k_softmax_nll, be, (size_t)G * S, pl->classes, S, ps.a[pl->L], ps.as[pl->L], ne->y + start, (size_t)0, (const int *)NULL,
             (const float *)NULL, (float *)NULL, (size_t)0, pl->sample_loss, pl->sample_hit);
      KERNEL(k_node_totals, be, (size_t)G, S, pl->sample_loss, pl->sample_hit, BLOCK(pl->total, q), BLOCK(pl->correct, q));
    }
  }
  CU_CALL(cudaMemcpyAsync(pl->total_h, pl->total, sizeof(double) * groups * G, cudaMemcpyDeviceToHost, stream));
  CU_CALL(cudaMemcpyAsync(pl->correct_h, pl->correct, sizeof(long long) * groups * G, cudaMemcpyDeviceToHost, stream));
  return DT_OK;
}

dt_status cu_model_evaluate(dt_backend *be, void *plan, const dt_node_eval *ne) {
  cu_plan *pl = (cu_plan *)plan;
  const int G = pl->G, groups = (ne->count + G - 1) / G;
  DT_CHECK(groups <= pl->groups_cap, DT_ERR_INTERNAL, "model call for %d nodes, plan made for %d", ne->count, pl->nodes);
  eval_key key;
  memset(&key, 0, sizeof key);
  key.theta = ne->theta, key.buffers = ne->buffers, key.x = ne->x, key.y = ne->y;
  key.theta_stride = ne->theta_stride, key.buffers_stride = ne->buffers_stride, key.count = ne->count, key.n = ne->n;
  DT_TRY(run_captured(be, pl, &key, sizeof key, evaluate_work, ne));
  CU_CALL(cudaStreamSynchronize(ctx_of(be)->stream));
  for (int l = 0; l < ne->count; l++) {
    ne->loss_sum[l] += pl->total_h[l];
    ne->correct[l] += (long)pl->correct_h[l];
  }
  return DT_OK;
}
