/* The services the runner offers optimizers (dt_optimizer_run in dt/problem.h): gradients with
 * loss and time accounting, the exchange with byte accounting, ordered sums over all nodes. */
#include <string.h>

#include "dt/problem.h"

dt_status dt_run_gradient(dt_optimizer_run *run, int node, const float *x, float *grad) {
  float loss;
  dt_timer_start(&run->t_compute);
  dt_status st = dt_task_gradient(run->task, node, x, grad, &loss);
  dt_timer_stop(&run->t_compute);
  DT_TRY(st);
  run->train_loss_sum[node - run->first] += loss;
  run->train_loss_n[node - run->first]++;
  return DT_OK;
}

dt_status dt_run_exchange(dt_optimizer_run *run, int nvec, dt_exchange **out) {
  if (run->exchange == NULL) {
    DT_TRY(dt_exchange_create(run->comm, run->graph, nvec, run->dim, &run->exchange));
    run->exchange_nvec = nvec;
  }
  *out = run->exchange;
  return DT_OK;
}

dt_status dt_run_exchange_go(dt_optimizer_run *run, const uint8_t *mask) {
  const dt_graph *g = run->graph;
  dt_timer_start(&run->t_comm);
  dt_status st = dt_exchange_run(run->exchange, mask);
  dt_timer_stop(&run->t_comm);
  DT_TRY(st);
  const uint64_t per_msg = (uint64_t)run->exchange_nvec * run->dim * sizeof(float);
  for (int l = 0; l < run->count; l++) {
    const int i = run->first + l;
    for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++)
      if (mask == NULL || mask[e]) run->node_bytes[l] += per_msg;
  }
  return DT_OK;
}

dt_status dt_run_node_sum(dt_optimizer_run *run, const float *const *v, double *out) {
  dt_timer_start(&run->t_comm);
  dt_status st = dt_comm_node_sum(run->comm, run->graph->n, v, run->dim, out);
  dt_timer_stop(&run->t_comm);
  DT_TRY(st);
  /* Logically every node contributes its vector once: count that, whatever the placement. */
  for (int l = 0; l < run->count; l++) run->node_bytes[l] += run->dim * sizeof(float);
  return DT_OK;
}

dt_status dt_run_local_optim(dt_optimizer_run *run, int kind, double lr, dt_optim **out) {
  dt_optim_spec s = dt_optim_spec_default((dt_optim_kind)kind);
  s.lr = (float)lr;
  return dt_optim_create(&s, run->dim, out);
}
