/* An evaluation: every local node's metrics at its current parameters (validation loss and
 * accuracy in one node-batched call, consensus from ordered sums over all nodes), the rows
 * gathered on rank 0 in node order, so the files do not depend on the rank count. */
#include <math.h>

#include "dt/rng.h"
#include "runner_impl.h"

/* Consensus without gathering models: ordered sums of θ and θ/‖θ‖ over all nodes, then each
 * node's distance to the means. cons[l], cons_raw[l]: ‖θ̂_l − mean θ̂‖ and ‖θ_l − mean θ‖. Each
 * step is one backend call over every local node (one wait on a device, not one per node). */
static dt_status consensus(runner *r, dt_optimizer_run *run, int distances, double *cons, double *cons_raw) {
  dt_backend *be = r->be;
  const size_t d = dt_run_dim(run);
  const int count = r->count;
  const dt_slab *theta = dt_run_theta(run);
  double *nrm = NULL;
  dt_status st = DT_OK;
  DT_ALLOC_GOTO(nrm, count > 0 ? count : 1, "consensus");
  DT_TRY_GOTO(dt_be_reduce_rows(be, DT_REDUCE_NRM2, d, count, theta->data, theta->stride, NULL, 1.0, nrm));
  const dt_rows div = {.kind = DT_ROWS_DIV, .n = d, .count = count, .x = theta->data, .xs = theta->stride,
                       .z = r->normed.data, .zs = r->normed.stride, .dv = nrm};
  DT_TRY_GOTO(dt_be_rows(be, &div));
  for (int l = 0; l < count; l++) /* a diverged θ (NaN or infinite entries) has no direction: its consensus error is NaN, not 0 */
    if (!isfinite(nrm[l])) DT_TRY_GOTO(dt_be_fill(be, d, NAN, dt_slab_node(&r->normed, l)));
    else if (!(nrm[l] > 0)) DT_TRY_GOTO(dt_be_fill(be, d, 0.0f, dt_slab_node(&r->normed, l)));
  DT_TRY_GOTO(dt_run_sum_nodes(run, theta, r->mean_raw));
  DT_TRY_GOTO(dt_run_sum_nodes(run, &r->normed, r->mean_norm));
  if (distances) {
    DT_TRY_GOTO(dt_be_reduce_rows(be, DT_REDUCE_SQDIST_MEAN, d, count, r->normed.data, r->normed.stride, r->mean_norm, (double)r->n,
                                  cons));
    DT_TRY_GOTO(dt_be_reduce_rows(be, DT_REDUCE_SQDIST_MEAN, d, count, theta->data, theta->stride, r->mean_raw,
                                  (double)r->n, cons_raw));
  }
cleanup:
  dt_free(nrm);
  return st;
}

/* Rank 0: the pairwise distances ‖θ̂_i − θ̂_j‖ of all nodes into the consensus CSV. Collective. */
static dt_status consensus_matrix(runner *r, problem_run *pr, int round) {
  const size_t d = dt_run_dim(pr->run);
  const float *const *rows;
  float *all = NULL;
  dt_status st = DT_OK;
  DT_TRY(dt_run_host_rows(pr->run, &r->normed, &rows));
  if (r->rank == 0) DT_ALLOC_GOTO(all, (size_t)r->n * d, "consensus matrix");
  DT_TRY_GOTO(dt_comm_node_gather(r->comm, r->n, rows, d, all));
  for (int i = 0; i < r->n && r->rank == 0; i++)
    for (int j = 0; j < r->n; j++) {
      double s;
      if (j == 0) dt_heartbeat(); /* n² distances on rank 0: the others wait */
      DT_TRY_GOTO(dt_be_sqdist(r->host, d, all + (size_t)i * d, all + (size_t)j * d, &s));
      sb_printf(&pr->consensus_csv, "%d,%d,%d,%.9g\n", round, i, j, sqrt(s));
    }
cleanup:
  dt_free(all);
  return st;
}

/* evaluation.nodes mean: the average model x̄ (parameters and buffers averaged over all nodes in
 * node order), evaluated once on every rank; each local node's row gets its loss and accuracy. */
static dt_status evaluate_mean(runner *r, problem_run *pr, double *vl, double *acc) {
  dt_optimizer_run *run = pr->run;
  const dt_slab *bufs = dt_task_buffers(r->task);
  double v, a;
  DT_TRY(dt_run_sum_nodes(run, dt_run_theta(run), r->mean_raw));
  DT_TRY(dt_be_mean_of_sum(r->be, dt_run_dim(run), r->mean_raw, (double)r->n, r->mean_model));
  if (bufs->dim > 0) {
    DT_TRY(dt_run_sum_nodes(run, bufs, r->mean_buf_sum));
    DT_TRY(dt_be_mean_of_sum(r->be, bufs->dim, r->mean_buf_sum, (double)r->n, r->mean_buf));
  }
  DT_TRY(dt_task_evaluate_model(r->task, r->mean_model, r->mean_buf, pr->pc->evaluation.test_samples, &v, &a));
  for (int l = 0; l < r->count; l++) vl[l] = v, acc[l] = a;
  return DT_OK;
}

dt_status runner_eval_draw(runner *r) {
  uint32_t *order = NULL;
  DT_ALLOC(r->eval_rank, r->n, "evaluation sample");
  DT_ALLOC(order, r->n, "evaluation sample");
  for (int i = 0; i < r->n; i++) order[i] = (uint32_t)i;
  dt_rng g;
  dt_rng_init(&g, r->cfg->experiment.seed, DT_RNG_EVAL_NODES, 0);
  dt_rng_shuffle_u32(&g, order, (size_t)r->n);
  for (int k = 0; k < r->n; k++) r->eval_rank[order[k]] = (uint32_t)k;
  dt_free(order);
  return DT_OK;
}

int runner_evaluates(const runner *r, const dt_problem_config *pc, int i) {
  return pc->evaluation.sample == 0 || r->eval_rank[i] < (uint32_t)pc->evaluation.sample;
}

/* evaluation.sample: each sampled local node's model alone; the others' loss and accuracy NaN
 * (written as empty fields). */
static dt_status evaluate_sample(runner *r, problem_run *pr, double *vl, double *acc) {
  const dt_slab *bufs = dt_task_buffers(r->task);
  for (int l = 0; l < r->count; l++) {
    vl[l] = acc[l] = NAN;
    if (!runner_evaluates(r, pr->pc, r->first + l)) continue;
    DT_TRY(dt_task_evaluate_model(r->task, dt_slab_node(dt_run_theta(pr->run), l), bufs->dim > 0 ? dt_slab_node(bufs, l) : NULL,
                                  pr->pc->evaluation.test_samples, &vl[l], &acc[l]));
  }
  return DT_OK;
}

/* This rank's rows of the evaluation into r->rows. */
/* The rows of this rank's nodes; *stopped: a signal ended the models' evaluation early (the
 * collectives still run, so that every rank learns it together). */
static dt_status measure(runner *r, problem_run *pr, double *vl, double *acc, double *cons, double *cons_raw, int *stopped) {
  const dt_problem_config *pc = pr->pc;
  dt_optimizer_run *run = pr->run;
  if (pc->metrics & (DT_METRIC_VALIDATION_LOSS | DT_METRIC_TOP1_ACCURACY)) {
    dt_status e;
    if (pc->evaluation.nodes == DT_EVAL_MEAN) e = evaluate_mean(r, pr, vl, acc);
    else if (pc->evaluation.sample > 0) e = evaluate_sample(r, pr, vl, acc);
    else e = dt_task_evaluate(r->task, dt_run_theta(run), pc->evaluation.test_samples, vl, acc);
    *stopped = e == DT_ERR_INTERRUPTED;
    if (*stopped) dt_error_clear();
    else DT_TRY(e);
  }
  if (pc->metrics & (DT_METRIC_CONSENSUS_ERROR | DT_METRIC_CONSENSUS_MATRIX))
    DT_TRY(consensus(r, run, (pc->metrics & DT_METRIC_CONSENSUS_ERROR) != 0, cons, cons_raw));
  for (int l = 0; l < r->count; l++) {
    const int i = r->first + l;
    double *row = r->rows + (size_t)l * NCOL;
    row[COL_FPC] = (double)dt_task_samples_seen(r->task, i);
    row[COL_VLOSS] = vl[l];
    row[COL_ACC] = acc[l];
    row[COL_CONS] = sqrt(cons[l]);
    row[COL_CONS_RAW] = sqrt(cons_raw[l]);
    row[COL_EPOCH] = dt_task_epoch(r->task, i);
    row[COL_TRAIN_LOSS] = dt_run_train_loss(run, l);
    row[COL_BYTES] = (double)dt_run_bytes(run, l);
    dt_run_times(run, &row[COL_T_COMPUTE], &row[COL_T_COMM]);
    row[COL_T_EVAL] = pr->t_eval.total + (dt_time_now() - pr->t_eval.started);
    row[COL_SIM_TIME] = dt_run_sim_time(run, i);
    uint64_t msgs[3];
    const int counted = dt_run_messages(run, l, msgs);
    for (int c = 0; c < 3; c++) row[COL_MSG_SENT + c] = counted ? (double)msgs[c] : NAN;
  }
  return DT_OK;
}

dt_status runner_evaluate(runner *r, problem_run *pr, int round, problem_result *res, int may_stop) {
  dt_status st = DT_OK;
  double *vl = NULL, *acc = NULL, *cons = NULL, *cons_raw = NULL;
  int stopped = 0;
  dt_timer_start(&pr->t_eval);
  DT_TRY_GOTO(dt_be_profile_mark(r->be, DT_PHASE_OTHER));
  DT_ALLOC_GOTO(vl, r->count, "evaluation");
  DT_ALLOC_GOTO(acc, r->count, "evaluation");
  DT_ALLOC_GOTO(cons, r->count, "evaluation");
  DT_ALLOC_GOTO(cons_raw, r->count, "evaluation");
  dt_stop_evaluations(may_stop);
  st = measure(r, pr, vl, acc, cons, cons_raw, &stopped);
  dt_stop_evaluations(0);
  DT_TRY_GOTO(st);
  /* a signal during the models' evaluation on any rank: this round's evaluation is dropped on
   * every rank (nothing recorded, the training losses kept), to be measured again on resume */
  double whole = !stopped;
  DT_TRY_GOTO(dt_comm_allreduce_min_f64(r->comm, &whole, 1));
  if (whole != 1) {
    st = DT_ERROR(DT_ERR_INTERRUPTED, "the evaluation of round %d was interrupted by a signal", round);
    goto cleanup;
  }
  dt_run_train_loss_reset(pr->run);
  runner_tb_loss_reset(r);
  DT_TRY_GOTO(dt_comm_gather_rows(r->comm, r->n, r->rows, NCOL, r->all_rows));
  if (pr->pc->metrics & DT_METRIC_CONSENSUS_MATRIX) DT_TRY_GOTO(consensus_matrix(r, pr, round));
  if (r->rank == 0) {
    runner_record_rows(r, pr, round, res);
    runner_db_evaluation(r, pr->index, pr, round); /* committed before it is printed */
    runner_tb_evaluation(r, pr, round);
  }
  /* printed means stored: a failed commit (a full disk) stops the run here, on every rank, with
   * nothing printed that the database lacks; the last checkpoint stays for resume */
  double stored = r->rank != 0 || !r->db_failed;
  DT_TRY_GOTO(dt_comm_allreduce_min_f64(r->comm, &stored, 1));
  if (stored != 1) {
    st = r->rank == 0 ? runner_db_status(r) : DT_ERROR(DT_ERR_IO, "rank 0 could not store an evaluation in results.sqlite");
    goto cleanup;
  }
  if (r->rank == 0) runner_print_evaluation(r, pr->pc, round, res);
  DT_TRY_GOTO(dt_be_profile_mark(r->be, DT_PHASE_EVAL));
cleanup:
  dt_timer_stop(&pr->t_eval);
  dt_free(vl);
  dt_free(acc);
  dt_free(cons);
  dt_free(cons_raw);
  return st;
}
