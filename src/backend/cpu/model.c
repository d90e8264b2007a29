/* Node-batched model calls on the CPU: the nodes of one call are spread over the backend's
 * threads (OpenMP, dynamic schedule), each thread running the layer ops of dt/nn.h on its own
 * workspace. Every node's arithmetic is the same whatever thread runs it, so results do not
 * depend on the thread count. */
#include "cpu_impl.h"
#include "dt/nn.h"
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct cpu_plan {
  int threads;
  dt_workspace **ws; /* one per thread */
} cpu_plan;

void dt_cpu_plan_free(dt_backend *be, void *p) {
  cpu_plan *plan = p;
  if (plan == NULL) return;
  for (int t = 0; plan->ws != NULL && t < plan->threads; t++) dt_workspace_free(be, plan->ws[t]);
  dt_free(plan->ws);
  dt_free(plan);
}

dt_status dt_cpu_plan_create(dt_backend *be, const dt_model *m, int max_batch, int nodes, void **out) {
  dt_status st = DT_OK;
  cpu_plan *plan = NULL;
  *out = NULL;
  DT_ALLOC_GOTO(plan, 1, "model plan");
  plan->threads = be->threads < nodes ? be->threads : nodes;
  if (plan->threads < 1) plan->threads = 1;
  DT_ALLOC_GOTO(plan->ws, plan->threads, "model plan");
  for (int t = 0; t < plan->threads; t++) DT_TRY_GOTO(dt_workspace_create(be, m, max_batch, &plan->ws[t]));
  *out = plan;
  plan = NULL;
cleanup:
  dt_cpu_plan_free(be, plan);
  return st;
}

static int thread_id(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* Runs body(l) for the nodes on the plan's threads; the first failure (lowest l) is returned
 * with its message, whatever thread hit it. */
#define FOR_NODES(plan, count, sts, body)                                                 \
  _Pragma("omp parallel for schedule(dynamic, 1) num_threads((plan)->threads) if ((plan)->threads > 1)") \
  for (int l = 0; l < (count); l++) {                                                     \
    sts[l] = body;                                                                        \
    if (sts[l] != DT_OK) {                                                                \
      dt_error_format(msgs[l], sizeof msgs[l]);                                           \
      dt_error_clear();                                                                   \
    }                                                                                     \
  }

static dt_status first_failure(int count, const dt_status *sts, char (*msgs)[1024]) {
  for (int l = 0; l < count; l++)
    if (sts[l] != DT_OK) return dt_error_set(sts[l], __FILE__, __LINE__, __func__, "%s", msgs[l]);
  return DT_OK;
}

static dt_status gradient_node(dt_backend *be, cpu_plan *plan, const dt_node_batch *nb, int l) {
  if (nb->batch[l] == 0) return DT_OK;
  return dt_model_forward_backward(be, dt_workspace_model(plan->ws[0]), plan->ws[thread_id()],
                                   nb->theta + (size_t)l * nb->theta_stride, nb->x + (size_t)l * nb->x_stride,
                                   nb->y + (size_t)l * nb->y_stride, nb->batch[l], nb->grad + (size_t)l * nb->grad_stride,
                                   &nb->loss[l], NULL);
}

dt_status dt_cpu_model_gradients(dt_backend *be, void *p, const dt_node_batch *nb) {
  cpu_plan *plan = p;
  dt_status st = DT_OK, *sts = NULL;
  char (*msgs)[1024] = NULL;
  if (plan->threads <= 1) { /* the plain loop: no allocation, messages stay where they are */
    for (int l = 0; l < nb->count; l++) DT_TRY(gradient_node(be, plan, nb, l));
    return DT_OK;
  }
  DT_ALLOC_GOTO(sts, nb->count, "node status");
  DT_ALLOC_GOTO(msgs, nb->count, "node messages");
  FOR_NODES(plan, nb->count, sts, gradient_node(be, plan, nb, l))
  st = first_failure(nb->count, sts, msgs);
cleanup:
  dt_free(sts);
  dt_free(msgs);
  return st;
}

static dt_status evaluate_node(dt_backend *be, cpu_plan *plan, const dt_node_eval *ne, int l) {
  return dt_model_evaluate(be, dt_workspace_model(plan->ws[0]), plan->ws[thread_id()], ne->theta + (size_t)l * ne->theta_stride,
                           ne->x, ne->y, ne->n, &ne->loss_sum[l], &ne->correct[l]);
}

dt_status dt_cpu_model_evaluate(dt_backend *be, void *p, const dt_node_eval *ne) {
  cpu_plan *plan = p;
  dt_status st = DT_OK, *sts = NULL;
  char (*msgs)[1024] = NULL;
  if (plan->threads <= 1) {
    for (int l = 0; l < ne->count; l++) DT_TRY(evaluate_node(be, plan, ne, l));
    return DT_OK;
  }
  DT_ALLOC_GOTO(sts, ne->count, "node status");
  DT_ALLOC_GOTO(msgs, ne->count, "node messages");
  FOR_NODES(plan, ne->count, sts, evaluate_node(be, plan, ne, l))
  st = first_failure(ne->count, sts, msgs);
cleanup:
  dt_free(sts);
  dt_free(msgs);
  return st;
}
