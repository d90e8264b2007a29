/* Node-batched model calls on the CPU: the nodes of one call are spread over the backend's
 * threads (OpenMP, dynamic schedule), each thread running the per-node executor (net.c) and its
 * layer kernels (layers.c, conv2d.c, linear.c) on its own workspace. Every node's arithmetic is
 * the same whatever thread runs it, so results do not depend on the thread count. */
#include "cpu_impl.h"
#include "dt/nn.h"
#include "dt/parallel.h"
#include "dt/timer.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* A plan's workspaces, one per thread, are made on first use: training workspaces keep every
 * activation for the backward pass, evaluation workspaces only the live ones
 * (dt_workspace_create_eval), so a plan that only evaluates holds a few activations a thread.
 * Training runs a node per thread, so it uses at most as many threads as nodes; evaluation splits
 * the nodes' test sets into chunks over every backend thread (dt_cpu_model_evaluate), so it has a
 * workspace for each. */
typedef struct cpu_plan {
  int threads, eval_threads, max_batch;
  const dt_model *m;
  dt_workspace **ws;  /* training, one per thread */
  dt_workspace **ews; /* evaluation, one per eval thread */
} cpu_plan;

void dt_cpu_plan_free(dt_backend *be, void *p) {
  cpu_plan *plan = p;
  if (plan == NULL) return;
  for (int t = 0; plan->ws != NULL && t < plan->threads; t++) dt_workspace_free(be, plan->ws[t]);
  for (int t = 0; plan->ews != NULL && t < plan->eval_threads; t++) dt_workspace_free(be, plan->ews[t]);
  dt_free(plan->ws);
  dt_free(plan->ews);
  dt_free(plan);
}

dt_status dt_cpu_plan_create(dt_backend *be, const dt_model *m, int max_batch, int nodes, int run_nodes, void **out) {
  (void)run_nodes;
  dt_status st = DT_OK;
  cpu_plan *plan = NULL;
  *out = NULL;
  DT_CHECK(max_batch >= 1, DT_ERR_CONFIG, "batch size must be at least 1, found %d", max_batch);
  DT_ALLOC_GOTO(plan, 1, "model plan");
  plan->threads = be->threads < nodes ? be->threads : nodes;
  if (plan->threads < 1) plan->threads = 1;
  plan->eval_threads = be->threads > plan->threads ? be->threads : plan->threads;
  plan->m = m;
  plan->max_batch = max_batch;
  DT_ALLOC_GOTO(plan->ws, plan->threads, "model plan");
  DT_ALLOC_GOTO(plan->ews, plan->eval_threads, "model plan");
  *out = plan;
  plan = NULL;
cleanup:
  dt_cpu_plan_free(be, plan);
  return st;
}

/* The first `threads` workspaces of the kind, made where missing. */
static dt_status plan_workspaces(dt_backend *be, cpu_plan *plan, int eval, int threads) {
  dt_workspace **ws = eval ? plan->ews : plan->ws;
  for (int t = 0; t < threads; t++)
    if (ws[t] == NULL)
      DT_TRY(eval ? dt_workspace_create_eval(be, plan->m, plan->max_batch, &ws[t])
                  : dt_workspace_create(be, plan->m, plan->max_batch, &ws[t]));
  return DT_OK;
}

static int thread_id(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

typedef struct node_call {
  dt_backend *be;
  cpu_plan *plan;
  const dt_node_batch *nb;
  const dt_node_eval *ne;
} node_call;

static dt_status gradient_node(void *ctx, int l) {
  const node_call *c = ctx;
  dt_heartbeat();
  const dt_node_batch *nb = c->nb;
  if (nb->batch[l] == 0) return DT_OK;
  return dt_model_forward_backward(c->be, c->plan->m, c->plan->ws[thread_id()],
                                   nb->theta + (size_t)l * nb->theta_stride,
                                   nb->buffers != NULL ? nb->buffers + (size_t)l * nb->buffers_stride : NULL, nb->x + (size_t)l * nb->x_stride,
                                   nb->y + (size_t)l * nb->y_stride, nb->batch[l], nb->grad + (size_t)l * nb->grad_stride,
                                   &nb->loss[l], nb->dropout != NULL ? &nb->dropout[l] : NULL);
}

dt_status dt_cpu_model_gradients(dt_backend *be, void *plan, const dt_node_batch *nb) {
  const node_call c = {.be = be, .plan = plan, .nb = nb};
  DT_TRY(plan_workspaces(be, c.plan, 0, c.plan->threads));
  return dt_parallel_for(nb->count, c.plan->threads, gradient_node, (void *)&c);
}

/* Evaluation by chunks: item i is chunk i % chunks (of max_batch samples) of node i / chunks. */
typedef struct chunk_call {
  node_call c;
  int chunks;
  double *loss;  /* [count * chunks]: each chunk's loss sum */
  long *correct; /* [count * chunks] */
} chunk_call;

static dt_status evaluate_chunk(void *ctx, int i) {
  const chunk_call *cc = ctx;
  const node_call *c = &cc->c;
  const dt_node_eval *ne = c->ne;
  const int l = i / cc->chunks, start = i % cc->chunks * c->plan->max_batch;
  const int n = ne->n - start < c->plan->max_batch ? ne->n - start : c->plan->max_batch;
  const size_t d = dt_model_input_size(c->plan->m);
  dt_heartbeat();
  DT_CHECK(!dt_stop_evaluation(), DT_ERR_INTERRUPTED, "evaluation interrupted by signal %d", dt_stop_requested());
  cc->loss[i] = 0, cc->correct[i] = 0;
  return dt_model_evaluate(c->be, c->plan->m, c->plan->ews[thread_id()], ne->theta + (size_t)l * ne->theta_stride,
                           ne->buffers != NULL ? ne->buffers + (size_t)l * ne->buffers_stride : NULL, ne->x + (size_t)start * d,
                           ne->y + start, n, &cc->loss[i], &cc->correct[i]);
}

/* The nodes' chunks spread over every thread (so one node, or a mean model, no longer evaluates on
 * one core), and each node's chunk sums are added in chunk order afterwards: a chunk is one of
 * dt_model_evaluate's batches, so these are the additions it makes over a node's batches in turn,
 * in the same order, and the bits do not change. */
dt_status dt_cpu_model_evaluate(dt_backend *be, void *plan, const dt_node_eval *ne) {
  chunk_call cc = {.c = {.be = be, .plan = plan, .ne = ne}};
  cpu_plan *p = plan;
  cc.chunks = (ne->n + p->max_batch - 1) / p->max_batch;
  const int items = ne->count * cc.chunks, threads = items < p->eval_threads ? items : p->eval_threads;
  dt_status st = DT_OK;
  DT_TRY(plan_workspaces(be, p, 1, threads));
  DT_ALLOC_GOTO(cc.loss, items, "evaluation chunks");
  DT_ALLOC_GOTO(cc.correct, items, "evaluation chunks");
  DT_TRY_GOTO(dt_parallel_for(items, threads, evaluate_chunk, &cc));
  for (int i = 0; i < items; i++) {
    ne->loss_sum[i / cc.chunks] += cc.loss[i];
    ne->correct[i / cc.chunks] += cc.correct[i];
  }
cleanup:
  dt_free(cc.loss);
  dt_free(cc.correct);
  return st;
}
