/* The services the runner offers optimizers (dt_optimizer_run in dt/problem.h): gradients with
 * loss and time accounting, the exchange with byte accounting, ordered sums over all nodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "dt/problem.h"

dt_status dt_run_gradient(dt_optimizer_run *run, int node, const float *x, float *grad) {
  float loss;
  DT_TRY(dt_task_gradient(run->task, node, x, grad, &loss));
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

void dt_learners_free(dt_learners *ls) {
  for (int l = 0; l < ls->count; l++) {
    if (ls->opt) dt_optim_free(ls->opt[l]);
    if (ls->grad) dt_free(ls->grad[l]);
  }
  dt_free(ls->opt);
  dt_free(ls->grad);
  memset(ls, 0, sizeof *ls);
}

dt_status dt_learners_create(dt_optimizer_run *run, int kind, double lr, dt_learners *out) {
  dt_status st = DT_OK;
  dt_optim_spec spec = dt_optim_spec_default((dt_optim_kind)kind);
  spec.lr = (float)lr;
  memset(out, 0, sizeof *out);
  out->count = run->count;
  DT_ALLOC_GOTO(out->opt, run->count, "local optimizers");
  DT_ALLOC_GOTO(out->grad, run->count, "gradients");
  for (int l = 0; l < run->count; l++) {
    DT_TRY_GOTO(dt_optim_create(&spec, run->dim, &out->opt[l]));
    DT_ALLOC_GOTO(out->grad[l], run->dim, "gradient");
  }
cleanup:
  if (st != DT_OK) dt_learners_free(out);
  return st;
}

dt_status dt_learners_step(dt_optimizer_run *run, dt_learners *ls, int l, float lr) {
  DT_TRY(dt_run_gradient(run, run->first + l, run->theta[l], ls->grad[l]));
  dt_optim_step(ls->opt[l], run->theta[l], ls->grad[l], lr, NULL);
  return DT_OK;
}

int dt_run_threads(int ranks, int count) {
  const char *env = getenv("DT_THREADS");
  int t = env != NULL ? atoi(env) : 0;
  if (t <= 0) t = ranks == 1 ? (int)sysconf(_SC_NPROCESSORS_ONLN) : 1;
  if (t > count) t = count;
  return t < 1 ? 1 : t;
}

dt_status dt_run_for_nodes(dt_optimizer_run *run, dt_status (*fn)(void *ctx, int l), void *ctx) {
  dt_status st = DT_OK;
  dt_status *sts = NULL;
  char (*msg)[1024] = NULL;
  if (run->threads <= 1) { /* the plain loop: no allocation, messages stay where they are */
    for (int l = 0; l < run->count; l++) DT_TRY(fn(ctx, l));
    return DT_OK;
  }
  DT_ALLOC_GOTO(sts, run->count, "node status");
  DT_ALLOC_GOTO(msg, run->count, "node messages");
#pragma omp parallel for schedule(dynamic, 1) num_threads(run->threads)
  for (int l = 0; l < run->count; l++) {
    sts[l] = fn(ctx, l);
    /* the error record is per thread: carry the message to the caller's thread */
    if (sts[l] != DT_OK) {
      dt_error_format(msg[l], sizeof msg[l]);
      dt_error_clear();
    }
  }
  for (int l = 0; l < run->count; l++)
    if (sts[l] != DT_OK) {
      st = dt_error_set(sts[l], __FILE__, __LINE__, __func__, "%s", msg[l]);
      break;
    }
cleanup:
  dt_free(sts);
  dt_free(msg);
  return st;
}
