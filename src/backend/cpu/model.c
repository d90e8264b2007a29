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
 * (dt_workspace_create_eval), so a plan that only evaluates holds a few activations a thread. */
typedef struct cpu_plan {
  int threads, max_batch;
  const dt_model *m;
  dt_workspace **ws;  /* training, one per thread */
  dt_workspace **ews; /* evaluation, one per thread */
} cpu_plan;

void dt_cpu_plan_free(dt_backend *be, void *p) {
  cpu_plan *plan = p;
  if (plan == NULL) return;
  for (int t = 0; plan->ws != NULL && t < plan->threads; t++) dt_workspace_free(be, plan->ws[t]);
  for (int t = 0; plan->ews != NULL && t < plan->threads; t++) dt_workspace_free(be, plan->ews[t]);
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
  plan->m = m;
  plan->max_batch = max_batch;
  DT_ALLOC_GOTO(plan->ws, plan->threads, "model plan");
  DT_ALLOC_GOTO(plan->ews, plan->threads, "model plan");
  *out = plan;
  plan = NULL;
cleanup:
  dt_cpu_plan_free(be, plan);
  return st;
}

/* Every thread's workspace of the kind a call needs (before the threads start). */
static dt_status plan_workspaces(dt_backend *be, cpu_plan *plan, int eval) {
  dt_workspace **ws = eval ? plan->ews : plan->ws;
  for (int t = 0; t < plan->threads; t++)
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

static dt_status evaluate_node(void *ctx, int l) {
  const node_call *c = ctx;
  dt_heartbeat();
  DT_CHECK(!dt_stop_evaluation(), DT_ERR_INTERRUPTED, "evaluation interrupted by signal %d", dt_stop_requested());
  const dt_node_eval *ne = c->ne;
  return dt_model_evaluate(c->be, c->plan->m, c->plan->ews[thread_id()], ne->theta + (size_t)l * ne->theta_stride,
                           ne->buffers != NULL ? ne->buffers + (size_t)l * ne->buffers_stride : NULL, ne->x, ne->y, ne->n, &ne->loss_sum[l], &ne->correct[l]);
}

dt_status dt_cpu_model_gradients(dt_backend *be, void *plan, const dt_node_batch *nb) {
  const node_call c = {.be = be, .plan = plan, .nb = nb};
  DT_TRY(plan_workspaces(be, c.plan, 0));
  return dt_parallel_for(nb->count, c.plan->threads, gradient_node, (void *)&c);
}

dt_status dt_cpu_model_evaluate(dt_backend *be, void *plan, const dt_node_eval *ne) {
  const node_call c = {.be = be, .plan = plan, .ne = ne};
  DT_TRY(plan_workspaces(be, c.plan, 1));
  return dt_parallel_for(ne->count, c.plan->threads, evaluate_node, (void *)&c);
}
