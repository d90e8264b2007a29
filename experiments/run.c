/* The experiment runner: config → graph → data and split → θ0 → each (problem, optimizer) pair
 * from θ0 with restarted minibatch streams → result files. Each problem's files are on disk
 * before the next problem starts. The other concerns live beside this file (runner_impl.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../optimizers/opts.h"
#include "dt/log.h"
#include "dt_config.h"
#include "runner_impl.h"

/* ---- the solo baseline of the seed format (individual_training) --------------------------- */

/* Rounds of individual_training: the most steps any node takes, ceil(samples/batch)·epochs
 * (every rank knows every split). */
static long solo_rounds(const runner *r, const dt_solo_config *sc) {
  long rounds = 0;
  for (int i = 0; i < r->n; i++) {
    const long steps = (long)((dt_split_size(&r->split, i) + (size_t)sc->train_batch_size - 1) / (size_t)sc->train_batch_size) * sc->epochs;
    rounds = steps > rounds ? steps : rounds;
  }
  return rounds;
}

/* Every node trains alone for `epochs` passes over its data with the solo plug-in (each node
 * stops after its own ceil(samples/batch)·epochs steps), then solo_results.csv. Collective. */
static dt_status individual_training(runner *r) {
  const dt_solo_config *sc = &r->cfg->experiment.individual_training;
  const dt_optimizer_def *solo = dt_optimizer_find("solo");
  dt_problem_config pc;
  dt_optimizer_run run;
  void *state = NULL;
  dt_status st = DT_OK;
  double *vl = NULL, *acc = NULL, *rows = NULL, *all = NULL;
  memset(&run, 0, sizeof run);
  memset(&pc, 0, sizeof pc);
  DT_ASSERT(solo != NULL);
  runner_say(r, "individual training: %d epochs per node, %s, lr %g\n", sc->epochs,
             dt_local_opt_kind_name((dt_local_opt_kind)sc->optimizer), sc->lr);
  const long rounds = solo_rounds(r, sc);
  snprintf(pc.problem_name, sizeof pc.problem_name, "individual_training");
  pc.train_batch_size = sc->train_batch_size;
  pc.outer_iterations = (int)rounds;
  const dt_solo_opts so = {.optimizer = sc->optimizer, .lr = sc->lr, .mu = 0.0};
  DT_TRY_GOTO(dt_run_init(&run, r->comm, r->graph, &pc, r->task, r->cfg->experiment.seed, r->first, r->count, r->size));
  run.max_epochs = sc->epochs;
  DT_TRY_GOTO(dt_slab_broadcast_host(r->be, r->theta0, &run.theta));
  DT_TRY_GOTO(dt_task_begin(r->task, sc->train_batch_size, 0, 0.0));
  DT_TRY_GOTO(solo->create(&run, &so, &state));
  for (long k = 0; k < rounds && !runner_stop_signal(); k++) DT_TRY_GOTO(solo->round(state, &run, (int)k));
  DT_ALLOC_GOTO(vl, r->count, "solo");
  DT_ALLOC_GOTO(acc, r->count, "solo");
  DT_ALLOC_GOTO(rows, 2 * (size_t)r->count, "solo");
  DT_ALLOC_GOTO(all, 2 * (size_t)r->n, "solo");
  DT_TRY_GOTO(dt_task_evaluate(r->task, &run.theta, vl, acc));
  for (int l = 0; l < r->count; l++) rows[2 * l] = vl[l], rows[2 * l + 1] = acc[l];
  DT_TRY_GOTO(dt_comm_gather_rows(r->comm, r->n, rows, 2, all));
  if (r->rank == 0) DT_TRY_GOTO(runner_write_solo(r, all));
cleanup:
  if (state != NULL) solo->destroy(state);
  dt_run_free(&run);
  dt_free(vl);
  dt_free(acc);
  dt_free(rows);
  dt_free(all);
  return st;
}

/* ---- one problem ------------------------------------------------------------------------- */

/* Runs round k and agrees, across ranks, whether to stop after it: 0 go on, 1 a signal on some
 * rank, 2 a loss became NaN or infinite. Compute time = the round's wall time less its
 * communication (timed by the exchange). Collective. */
static dt_status round_and_agree(runner *r, const dt_optimizer_def *def, void *state, dt_optimizer_run *run, int k, int *stop) {
  const double round_start = dt_time_now(), comm_before = run->t_comm.total;
  DT_TRY(def->round(state, run, k));
  run->t_compute.total += (dt_time_now() - round_start) - (run->t_comm.total - comm_before);
  double flag = runner_stop_signal() ? 1 : 0;
  for (int l = 0; l < r->count; l++)
    if (!isfinite(run->train_loss_sum[l])) flag = fmax(flag, 2);
  if (r->size > 1) DT_TRY(dt_comm_allreduce_max_f64(r->comm, &flag, 1));
  *stop = (int)flag;
  return DT_OK;
}

/* The round loop of one problem, evaluating at round 0, every evaluate_frequency rounds and at
 * the last round run. */
static dt_status round_loop(runner *r, problem_run *pr, const dt_optimizer_def *def, void *state, problem_result *res) {
  const dt_problem_config *pc = pr->pc;
  const double t0 = dt_time_now();
  DT_TRY(runner_evaluate(r, pr, 0, res));
  for (int k = 0; k < pc->outer_iterations; k++) {
    int stop = 0;
    DT_TRY(round_and_agree(r, def, state, &pr->run, k, &stop));
    const int last = k + 1 == pc->outer_iterations || stop != 0;
    if ((k + 1) % pc->evaluate_frequency == 0 || last) DT_TRY(runner_evaluate(r, pr, k + 1, res));
    runner_progress(r, pc, k, t0);
    if (stop == 2) {
      res->status = "diverged";
      runner_say(r, "%s diverged (a loss became NaN or infinite) at round %d; going on with the next problem\n", pc->problem_name, k + 1);
      break;
    }
    if (stop == 1) {
      res->status = "interrupted";
      runner_say(r, "interrupted at round %d; saving what was measured\n", k + 1);
      break;
    }
  }
  return DT_OK;
}

static dt_status run_problem(runner *r, int p) {
  const dt_problem_config *pc = &r->cfg->problems[p];
  const dt_optimizer_def *def = dt_optimizer_find(pc->alg_name);
  problem_result *res = &r->res[p];
  problem_run pr;
  void *state = NULL;
  dt_status st = DT_OK;
  memset(&pr, 0, sizeof pr);
  memset(res, 0, sizeof *res);
  res->status = "completed";
  DT_ASSERT(def != NULL);
  pr.pc = pc;
  dt_optimizer_run *run = &pr.run;
  dt_timer_reset(&pr.t_eval);
  DT_TRY_GOTO(dt_run_init(run, r->comm, r->graph, pc, r->task, r->cfg->experiment.seed, r->first, r->count, r->size));
  runner_begin_csv(r, &pr);
  runner_say(r, "== %s: %s, %d rounds on %d nodes (%d rank%s)\n", pc->problem_name, pc->alg_name, pc->outer_iterations, r->n,
             r->size, r->size > 1 ? "s" : "");
  /* every problem starts from θ0 with fresh minibatch streams */
  DT_TRY_GOTO(dt_slab_broadcast_host(r->be, r->theta0, &run->theta));
  DT_TRY_GOTO(dt_task_begin(r->task, pc->train_batch_size, pc->full_batch, pc->l2));
  const double t0 = dt_time_now();
  DT_TRY_GOTO(def->create(run, pc->alg_opts, &state));
  DT_TRY_GOTO(round_loop(r, &pr, def, state, res));
  res->seconds = dt_time_now() - t0;
  res->t_compute = run->t_compute.total;
  res->t_comm = run->t_comm.total;
  res->t_eval = pr.t_eval.total;
  double bytes = 0;
  for (int l = 0; l < r->count; l++) bytes += (double)run->node_bytes[l];
  DT_TRY_GOTO(dt_comm_allreduce_sum_f64(r->comm, &bytes, 1));
  res->bytes = bytes;
  DT_TRY_GOTO(runner_write_problem_files(r, &pr));
  if (pc->profile)
    runner_say(r, "%s: %.2f s: compute %.2f s, communication %.2f s, evaluation %.2f s; %.3g MB sent\n", pc->problem_name,
               res->seconds, res->t_compute, res->t_comm, res->t_eval, res->bytes / 1e6);
cleanup:
  if (state != NULL) def->destroy(state);
  dt_run_free(run);
  sb_free(&pr.csv);
  sb_free(&pr.consensus_csv);
  return st;
}

/* ---- the experiment ------------------------------------------------------------------------ */

static void runner_free(runner *r) {
  if (r->be != NULL) {
    dt_slab_free(r->be, &r->normed);
    r->be->ops->free(r->be, r->mean_raw);
    r->be->ops->free(r->be, r->mean_norm);
  }
  dt_free(r->theta0);
  dt_free(r->rows);
  dt_free(r->all_rows);
  dt_task_free(r->task);
  dt_backend_free(r->be);
  dt_backend_free(r->host);
  dt_split_free(&r->split);
  dt_data_free(&r->data);
  dt_graph_free(r->graph);
}

/* The backend the config chose, with one note on rank 0 when it is not what was asked: a
 * fallback of `auto`, or the seed's use_cuda on a CPU run. */
static dt_status choose_backend(runner *r) {
  const dt_experiment_config *e = &r->cfg->experiment;
  char note[320];
  DT_TRY(dt_backend_select(dt_backend_kind_name(e->backend), dt_run_threads(r->size, r->count), note, sizeof note, &r->be));
  DT_TRY(dt_backend_cpu_create(1, &r->host));
  if (r->rank != 0 || r->opt->quiet) return DT_OK;
  if (note[0] != '\0') dt_log_warn("%s", note);
  else if (e->use_cuda && strcmp(r->be->name, "cpu") == 0)
    dt_log_warn("experiment.use_cuda is true, but %s; running on the CPU",
                DT_HAVE_CUDA ? "experiment.backend is cpu (set backend: auto or cuda)" : "this dtrun has no CUDA backend");
  return DT_OK;
}

/* Everything the problems share: placement, backend, graph, data, split, model, θ0, metric
 * buffers, and the output folder. */
static dt_status runner_setup(runner *r) {
  const dt_config *cfg = r->cfg;
  DT_TRY(dt_placement_check(r->n, r->size));
  r->first = dt_placement_first(r->n, r->size, r->rank);
  r->count = dt_placement_count(r->n, r->size, r->rank);
  DT_TRY(choose_backend(r));
  DT_TRY(dt_graph_from_config(cfg, &r->graph));
  DT_TRY(dt_data_load(&cfg->experiment, &r->data));
  DT_TRY(dt_split_make(&r->data.train, &cfg->experiment, &r->split));
  dt_model_spec ms;
  DT_TRY(dt_problem_model(cfg, &r->data.train, &ms));
  DT_TRY(dt_task_create(r->be, &r->data.train, &r->data.test, &r->split, &ms, r->first, r->count, cfg->experiment.seed, &r->task));
  const size_t d = dt_task_dim(r->task);
  DT_ALLOC(r->theta0, d, "base weights");
  dt_task_init_params(r->task, cfg->experiment.seed, r->theta0);
  DT_TRY(dt_slab_create(r->be, r->count, d, &r->normed));
  DT_ALLOC(r->rows, (size_t)r->count * NCOL, "metrics");
  DT_ALLOC(r->all_rows, (size_t)r->n * NCOL, "metrics");
  DT_TRY(r->be->ops->alloc(r->be, sizeof(double) * d, (void **)&r->mean_raw));
  DT_TRY(r->be->ops->alloc(r->be, sizeof(double) * d, (void **)&r->mean_norm));
  if (cfg->experiment.writeout) DT_TRY(runner_make_outdir(r));
  r->write = r->rank == 0 && cfg->experiment.writeout;
  return DT_OK;
}

static void banner(const runner *r) {
  const dt_experiment_config *e = &r->cfg->experiment;
  const int threads = dt_run_threads(r->size, r->count);
  runner_say(r, "dtrun %s: %s, %d nodes (%s graph, %d edges, spectral gap %.4f), %zu parameters, %d rank%s x %d thread%s%s%s\n",
             DT_VERSION, e->name, r->n, dt_graph_type_name(r->graph->type), r->graph->num_edges, r->graph->spectral_gap,
             dt_task_dim(r->task), r->size, r->size > 1 ? "s" : "", threads, threads > 1 ? "s" : "", r->write ? "\noutput: " : "",
             r->write ? r->outdir : "");
}

dt_status dt_experiment_run(dt_comm *comm, const dt_config *cfg, const dt_run_options *opt) {
  dt_status st = DT_OK;
  runner r;
  memset(&r, 0, sizeof r);
  r.comm = comm;
  r.cfg = cfg;
  r.opt = opt;
  r.rank = dt_comm_rank(comm);
  r.size = dt_comm_size(comm);
  r.n = cfg->experiment.graph.num_nodes;
  r.tty = isatty(STDOUT_FILENO);
  r.t_start = dt_time_now();
  runner_wall_clock(r.started, sizeof r.started);
  DT_TRY_GOTO(runner_setup(&r));
  banner(&r);
  DT_TRY_GOTO(runner_write_setup_files(&r));
  if (cfg->experiment.individual_training.train_solo) DT_TRY_GOTO(individual_training(&r));
  int done = 0;
  for (int p = 0; p < cfg->num_problems; p++) {
    DT_TRY_GOTO(run_problem(&r, p));
    done = p + 1;
    DT_TRY_GOTO(runner_write_summary(&r, done, "running"));
    if (strcmp(r.res[p].status, "interrupted") == 0) break;
  }
  const int sig = runner_stop_signal();
  DT_TRY_GOTO(runner_write_summary(&r, done, sig ? "interrupted" : "completed"));
  runner_print_table(&r, done);
  if (sig) st = DT_ERROR(DT_ERR_INTERRUPTED, "interrupted by signal %d; results so far are in %s", sig, r.write ? r.outdir : "(writeout is off)");
cleanup:
  runner_free(&r);
  return st;
}
