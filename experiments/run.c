/* The experiment runner: config → graph → data and split → θ0 → each (problem, optimizer) pair
 * from θ0 with restarted minibatch streams → result files. Each problem's files are on disk
 * before the next problem starts. The other concerns live beside this file (runner_impl.h). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
  dt_optimizer_run *run = NULL;
  void *state = NULL;
  dt_status st = DT_OK;
  double *vl = NULL, *acc = NULL, *rows = NULL, *all = NULL;
  memset(&pc, 0, sizeof pc);
  DT_ASSERT(solo != NULL);
  runner_say(r, "individual training: %d epochs per node, %s, lr %g\n", sc->epochs,
             dt_local_opt_kind_name((dt_local_opt_kind)sc->optimizer), sc->lr);
  const long rounds = solo_rounds(r, sc);
  snprintf(pc.problem_name, sizeof pc.problem_name, "individual_training");
  pc.train_batch_size = sc->train_batch_size;
  pc.outer_iterations = (int)rounds;
  _Alignas(16) unsigned char so[DT_OPTS_MAX];
  DT_TRY_GOTO(dt_plugin_opts_init(&solo->plugin, so, sizeof so));
  DT_TRY_GOTO(dt_plugin_opts_set(&solo->plugin, so, "optimizer", sc->optimizer));
  DT_TRY_GOTO(dt_plugin_opts_set(&solo->plugin, so, "lr", sc->lr));
  DT_TRY_GOTO(dt_plugin_opts_set(&solo->plugin, so, "mu", 0.0));
  DT_TRY_GOTO(dt_run_create(r->comm, r->graph, &pc, r->task, r->cfg->experiment.seed, r->first, r->count, &run));
  dt_run_set_max_epochs(run, sc->epochs);
  DT_TRY_GOTO(dt_slab_broadcast_host(r->be, r->theta0, dt_run_theta(run)));
  DT_TRY_GOTO(dt_task_begin(r->task, sc->train_batch_size, 0, 0.0));
  DT_TRY_GOTO(dt_optimizer_create(solo, run, so, &state));
  for (long k = 0; k < rounds && !runner_stop_signal(); k++) DT_TRY_GOTO(dt_run_round(solo, state, run, (int)k));
  DT_ALLOC_GOTO(vl, r->count, "solo");
  DT_ALLOC_GOTO(acc, r->count, "solo");
  DT_ALLOC_GOTO(rows, 2 * (size_t)r->count, "solo");
  DT_ALLOC_GOTO(all, 2 * (size_t)r->n, "solo");
  DT_TRY_GOTO(dt_task_evaluate(r->task, dt_run_theta(run), 0, vl, acc));
  for (int l = 0; l < r->count; l++) rows[2 * l] = vl[l], rows[2 * l + 1] = acc[l];
  DT_TRY_GOTO(dt_comm_gather_rows(r->comm, r->n, rows, 2, all));
  if (r->rank == 0) DT_TRY_GOTO(runner_write_solo(r, all));
cleanup:
  dt_optimizer_destroy(solo, run, state);
  dt_run_free(run);
  dt_free(vl);
  dt_free(acc);
  dt_free(rows);
  dt_free(all);
  return st;
}

/* The stop signal as every rank agrees on it (the highest signal number any rank got; 0: none).
 * mpirun forwards a signal to the ranks one by one, so between problems one rank may have it
 * and another not yet: deciding on the local flag there would send one rank into the next
 * problem's collectives alone, and hang the job. Collective. */
static dt_status stop_agreed(runner *r, int *sig) {
  double f = runner_stop_signal();
  if (r->size > 1) DT_TRY(dt_comm_allreduce_max_f64(r->comm, &f, 1));
  *sig = (int)f;
  return DT_OK;
}

/* The end of one set-up phase (runner_setup, the files and checkpoint before the first round):
 * its time at --log-level debug, and a stop signal that came during it (st is then
 * DT_ERR_INTERRUPTED on the rank that noticed it inside the phase, or the flag is set) turned
 * into DT_ERR_INTERRUPTED on every rank. Set-up runs for minutes at thousands of nodes: a signal
 * is honoured at the next phase's end, and the long phases look at it inside too (graph.yaml's
 * writer, the data reader, the checkpoint's writer and verifier). Collective; other failures come
 * back as they are. */
static dt_status setup_phase(runner *r, dt_status st, const char *what) {
  if (st != DT_OK && st != DT_ERR_INTERRUPTED) return st;
  double f = runner_stop_signal();
  if (r->size > 1) DT_TRY(dt_comm_allreduce_max_f64(r->comm, &f, 1));
  const double now = dt_time_now();
  dt_log_debug("set-up: %s, %.3f s\n", what, now - r->t_phase);
  r->t_phase = now;
  if (f == 0) return DT_OK;
  dt_error_clear(); /* the phase's own message ("interrupted while writing ...") names the place less well */
  return DT_ERROR(DT_ERR_INTERRUPTED, "interrupted by signal %d in set-up (%s)", (int)f, what);
}

/* ---- one problem ------------------------------------------------------------------------- */

/* What every rank agrees on after a round. */
typedef struct round_flags {
  int stop;       /* 0 go on, 1 a stop signal on some rank, 2 a loss became NaN or infinite */
  int checkpoint; /* a checkpoint is due (checkpoint_every, checkpoint_minutes, SIGUSR1) */
} round_flags;

/* --dump-trace: every local node's parameters (THET) and model buffers (BUFS) after the round
 * (before the first: round -1). */
static dt_status trace_state(dt_optimizer_run *run) {
  dt_trace *trace = dt_run_trace(run);
  if (trace == NULL) return DT_OK;
  const float *const *rows;
  DT_TRY(dt_run_host_rows(run, dt_run_theta(run), &rows));
  for (int l = 0; l < dt_run_count(run); l++) DT_TRY(dt_trace_f32(trace, l, "THET", rows[l], dt_run_dim(run)));
  dt_slab *buf = dt_task_buffers(dt_run_task(run));
  if (buf->dim == 0) return DT_OK;
  DT_TRY(dt_run_host_rows(run, buf, &rows));
  for (int l = 0; l < dt_run_count(run); l++) DT_TRY(dt_trace_f32(trace, l, "BUFS", rows[l], buf->dim));
  return DT_OK;
}

/* Runs round k and agrees, across ranks, on what follows it. Compute time = the round's wall
 * time less its communication (timed by the exchange). Collective. */
static dt_status round_and_agree(runner *r, const dt_optimizer_def *def, void *state, problem_run *pr, int k, round_flags *f) {
  dt_optimizer_run *run = pr->run;
  const double round_start = dt_time_now();
  dt_trace_set_round(dt_run_trace(run), k);
  DT_TRY(dt_run_round(def, state, run, k));
  const double wall = dt_time_now() - round_start;
  DT_TRY(trace_state(run));
  if (pr->round_seconds != NULL) pr->round_seconds[k] = wall;
  double flag[2] = {runner_stop_signal() ? 1 : 0, runner_checkpoint_requested() || runner_checkpoint_due(r, k + 1) ? 1 : 0};
  if (dt_run_diverged(run)) flag[0] = fmax(flag[0], 2);
  if (r->size > 1) DT_TRY(dt_comm_allreduce_max_f64(r->comm, flag, 2));
  f->stop = (int)flag[0];
  f->checkpoint = flag[1] != 0;
  return DT_OK;
}

/* The round loop of one problem from round `start`, evaluating at round 0, every
 * evaluate_frequency rounds and at the last round run. A stop signal checkpoints the state after
 * the round (before the extra evaluation an interrupted problem's files get), so that resuming
 * gives exactly the files of a run never stopped. */
/* Whether the evaluation of round `start`, where a resumed problem goes on, is still to be made:
 * the round is one the problem evaluates and the checkpoint's rows end before it (a signal
 * stopped that evaluation). Rank 0 reads the rows; every rank learns it. Collective. */
static dt_status evaluation_pending(runner *r, const problem_run *pr, int start, int *pending) {
  const dt_problem_config *pc = pr->pc;
  double flag = 0;
  if (r->rank == 0 && (start % pc->evaluate_frequency == 0 || start == pc->outer_iterations)) {
    const char *csv = pr->csv.data, *last = NULL;
    for (size_t i = 0; csv != NULL && i + 1 < pr->csv.len; i++)
      if (csv[i] == '\n') last = csv + i + 1; /* the last row's start (the text ends in a newline) */
    flag = last == NULL || atoi(last) < start;
  }
  DT_TRY(dt_comm_bcast(r->comm, &flag, sizeof flag, 0));
  *pending = flag != 0;
  return DT_OK;
}

/* A signal stopped an evaluation (may_stop): the problem is interrupted, its state after round
 * `round` checkpointed (round 0: the checkpoint at the problem's start stands), the evaluation
 * left to resume. */
static dt_status evaluation_stopped(runner *r, int p, int round, problem_run *pr, problem_result *res) {
  if (round > 0) DT_TRY(runner_checkpoint(r, p, round, pr));
  res->status = "interrupted";
  runner_say(r, "interrupted during the evaluation of round %d; saving what was measured%s%s\n", round,
             r->write ? "; continue with: dtrun resume " : "", r->write ? r->outdir : "");
  return DT_OK;
}

static dt_status round_loop(runner *r, int p, problem_run *pr, const dt_optimizer_def *def, void *state, problem_result *res, int start) {
  const dt_problem_config *pc = pr->pc;
  int pending = start == 0;
  if (start > 0) DT_TRY(evaluation_pending(r, pr, start, &pending));
  runner_watchdog_at(r, "an evaluation", p, start);
  const double t_eval0 = dt_time_now();
  dt_status st = pending ? runner_evaluate(r, pr, start, res, 1) : DT_OK;
  if (st == DT_ERR_INTERRUPTED) return evaluation_stopped(r, p, start, pr, res);
  DT_TRY(st);
  const double t_rounds = dt_time_now();
  if (r->opt->calibration != NULL) r->opt->calibration[p][1] = t_rounds - t_eval0;
  for (int k = start; k < pc->outer_iterations; k++) {
    round_flags f = {0, 0};
    runner_watchdog_at(r, "a round", p, k + 1);
    DT_TRY(round_and_agree(r, def, state, pr, k, &f));
    pr->rounds_run = k + 1;
    if (r->opt->calibration != NULL) {
      if (k == start) pr->t_first = dt_time_now();
      pr->t_last = dt_time_now();
      const int after = k - start; /* the rounds after the first: warm caches, workspaces made */
      r->opt->calibration[p][0] = after > 0 ? (pr->t_last - pr->t_first) / after : pr->t_first - t_rounds;
    }
    const int end = k + 1 == pc->outer_iterations;
    const int scheduled = (k + 1) % pc->evaluate_frequency == 0 || end;
    runner_watchdog_at(r, "an evaluation", p, k + 1);
    /* stoppable, but not where the problem already agreed to end (the last round, which a signal
     * lets finish; a diverging one, whose rows say so) */
    st = scheduled ? runner_evaluate(r, pr, k + 1, res, !(end && f.stop == 1) && f.stop != 2) : DT_OK;
    if (st == DT_ERR_INTERRUPTED) return evaluation_stopped(r, p, k + 1, pr, res);
    DT_TRY(st);
    if (!scheduled) DT_TRY(runner_tb_round(r, pr, k + 1));
    runner_progress(r, pc, k, start, pr->t_start, t_rounds);
    if (f.stop == 2) {
      if (!scheduled) DT_TRY(runner_evaluate(r, pr, k + 1, res, 0));
      res->status = "diverged";
      res->diverged_round = k + 1;
      runner_say(r, "%s diverged (a loss became NaN or infinite) at round %d; going on with the next problem\n", pc->problem_name, k + 1);
      break;
    }
    runner_watchdog_at(r, "a checkpoint", p, k + 1);
    if ((f.checkpoint || f.stop == 1) && !end) DT_TRY(runner_checkpoint(r, p, k + 1, pr));
    if (f.stop == 1 && !end) {
      if (!scheduled) DT_TRY(runner_evaluate(r, pr, k + 1, res, 0));
      res->status = "interrupted";
      runner_say(r, "interrupted at round %d; saving what was measured%s%s\n", k + 1, r->write ? "; continue with: dtrun resume " : "",
                 r->write ? r->outdir : "");
      break;
    }
  }
  return DT_OK;
}

/* Problem p from its start, or from the checkpoint rp when rp is of this problem. */
static dt_status run_problem(runner *r, int p, const resume_point *rp) {
  const dt_problem_config *pc = &r->cfg->problems[p];
  const dt_optimizer_def *def = dt_optimizer_find(pc->alg_name);
  problem_result *res = &r->res[p];
  problem_run pr;
  void *state = NULL;
  dt_status st = DT_OK;
  const int start = rp != NULL && rp->found && rp->problem == p ? rp->round : 0;
  memset(&pr, 0, sizeof pr);
  if (start == 0) memset(res, 0, sizeof *res);
  res->status = "completed";
  DT_ASSERT(def != NULL);
  pr.pc = pc;
  pr.index = p;
  dt_optimizer_run *run = NULL;
  dt_timer_reset(&pr.t_eval);
  const size_t mem_before = r->be->mem_live; /* the backend memory the problem adds (--log-level debug) */
  r->be->mem_peak = mem_before;
  DT_TRY_GOTO(dt_run_create(r->comm, r->graph, pc, r->task, r->cfg->experiment.seed, r->first, r->count, &pr.run));
  run = pr.run;
  dt_run_set_schedule(run, r->schedule);
  if (r->net != NULL) DT_TRY_GOTO(dt_run_set_network(run, r->net));
  if (r->faults != NULL) DT_TRY_GOTO(dt_run_set_faults(run, r->faults, def->on_missing));
  runner_begin_csv(r, &pr);
  /* the evaluations to keep: up to `start`, and that one only when it was on schedule (an
   * interrupted run evaluated after its checkpoint too, and a run never stopped would not) */
  const int scheduled = start > 0 && (start % pc->evaluate_frequency == 0 || start == pc->outer_iterations);
  runner_db_begin_problem(r, p, scheduled ? start : start - 1);
  runner_tb_begin(r, &pr, start > 0 ? (scheduled ? start + 1 : start) : 0);
  char eta[64] = "";
  if (r->eta_rounds > 0) { /* from the second problem on: what is left at the run's mean rate */
    double rounds = 0;
    for (int q = p; q < r->cfg->num_problems; q++) rounds += r->cfg->problems[q].outer_iterations - (q == p ? start : 0);
    const double left = rounds * r->eta_seconds / r->eta_rounds + r->opt->sweep_points_left * r->opt->sweep_seconds_per_point;
    snprintf(eta, sizeof eta, "; about %s left of the %s", runner_clock_text(left), r->opt->sweep_points_left > 0 ? "sweep" : "run");
  }
  runner_say(r, "== %s: %s, %d rounds on %d nodes (%d rank%s)%s%s\n", pc->problem_name, pc->alg_name, pc->outer_iterations, r->n,
             r->size, r->size > 1 ? "s" : "", start > 0 ? ", resumed" : "", eta);
  if (def->graph_unused != NULL) runner_say(r, "   (%s does not use the graph: %s)\n", pc->alg_name, def->graph_unused);
  if (pc->verbose_evals) { /* the header names exactly the columns the evaluation lines print */
    char head[256] = "";
    size_t used = 0;
    static const struct { unsigned metric; const char *name; } cols[] = {
        {DT_METRIC_VALIDATION_LOSS, "validation loss"}, {DT_METRIC_TOP1_ACCURACY, "top-1 accuracy"},
        {DT_METRIC_CONSENSUS_ERROR, "consensus error"}, {DT_METRIC_CURRENT_EPOCH, "epoch"}};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
      if (pc->metrics & cols[c].metric) used += (size_t)snprintf(head + used, sizeof head - used, "%s%s", used ? " | " : "", cols[c].name);
    if (r->net != NULL) snprintf(head + used, sizeof head - used, "%ssimulated seconds (the slowest node)", used ? " | " : "");
    if (head[0] != '\0') runner_say(r, "%s: min-max over the nodes of: %s\n", pc->problem_name, head);
  }
  if (pc->profile) DT_ALLOC_GOTO(pr.round_seconds, pc->outer_iterations, "round times");
  /* every problem starts from θ0 with fresh minibatch streams */
  DT_TRY_GOTO(dt_slab_broadcast_host(r->be, r->theta0, dt_run_theta(run)));
  DT_TRY_GOTO(dt_task_begin(r->task, pc->train_batch_size, pc->full_batch, pc->l2));
  if (r->opt->dump_trace != NULL) { /* from θ0, create's own gradient calls included */
    dt_trace *trace = NULL;
    DT_TRY_GOTO(dt_trace_open(r->opt->dump_trace, pc->problem_name, r->first, r->count, r->opt->trace_tags, &trace));
    dt_run_set_trace(run, trace);
    dt_task_set_trace(r->task, trace);
    DT_TRY_GOTO(trace_state(run));
  }
  pr.t_start = dt_time_now();
  if (pc->profile) dt_backend_profile(r->be, &pr.prof);
  r->t_phase = dt_time_now();
  DT_TRY_GOTO(setup_phase(r, dt_optimizer_create(def, run, pc->alg_opts, &state), "the algorithm's state"));
  if (start > 0) {
    DT_TRY_GOTO(runner_checkpoint_load_nodes(r, rp, &pr));
    runner_say(r, "   continuing after round %d from %s\n", start, rp->dir);
  }
  DT_TRY_GOTO(runner_tb_loss_mark(r, &pr)); /* train_loss_recent's window starts here (a resumed run's totals restored) */
  DT_TRY_GOTO(round_loop(r, p, &pr, def, state, res, start));
  DT_TRY_GOTO(dt_be_profile_mark(r->be, DT_PHASE_OTHER));
  res->seconds = dt_time_now() - pr.t_start;
  if (pr.rounds_run > start) r->eta_rounds += pr.rounds_run - start, r->eta_seconds += res->seconds;
  dt_run_times(run, &res->t_compute, &res->t_comm);
  res->t_eval = pr.t_eval.total;
  double bytes = 0;
  for (int l = 0; l < r->count; l++) bytes += (double)dt_run_bytes(run, l); /* a centre's replies with node 0's */
  DT_TRY_GOTO(dt_comm_allreduce_sum_f64(r->comm, &bytes, 1));
  res->bytes = bytes;
  DT_TRY_GOTO(runner_write_problem_files(r, &pr));
  if (pc->profile) DT_TRY_GOTO(runner_print_profile(r, &pr, res, start));
cleanup:
  runner_tb_end(r, st == DT_OK ? 1 : st == DT_ERR_INTERRUPTED || st == DT_ERR_DIVERGED ? -1 : 0);
  dt_backend_profile(r->be, NULL);
  dt_optimizer_destroy(def, run, state);
  dt_task_set_trace(r->task, NULL);
  const dt_status trace_st = run != NULL ? dt_trace_close(dt_run_trace(run)) : DT_OK;
  if (st == DT_OK) st = trace_st;
  dt_run_free(run);
  if (st == DT_OK && dt_log_get_level() >= DT_LOG_DEBUG) { /* added against estimated (tests/e2e/memory.sh) */
    const size_t dim = dt_task_dim(r->task);
    double edges = 0;
    for (int l = 0; l < r->count; l++) edges += dt_graph_degree(r->graph, r->first + l);
    const double theta = 4.0 * (double)dt_slab_stride(dim) * r->count; /* the problem's own θ */
    dt_log_debug("memory: problem %s: backend memory %zu bytes before it, at most %zu more during it (estimated %.0f), %zu after it\n",
                 pc->problem_name, mem_before, r->be->mem_peak - mem_before,
                 theta + dt_memory_state_bytes(def, pc->alg_opts, dim, r->count, edges), r->be->mem_live);
  }
  dt_free(pr.round_seconds);
  sb_free(&pr.csv);
  sb_free(&pr.consensus_csv);
  return st;
}

/* ---- the experiment ------------------------------------------------------------------------ */

static void runner_free(runner *r) {
  if (r->be != NULL) {
    dt_slab_free(r->be, &r->normed);
    dt_be_free(r->be, r->mean_raw);
    dt_be_free(r->be, r->mean_norm);
    dt_be_free(r->be, r->mean_model);
    dt_be_free(r->be, r->mean_buf_sum);
    dt_be_free(r->be, r->mean_buf);
  }
  dt_free(r->theta0);
  dt_free(r->tb_loss_sum);
  dt_free(r->tb_loss_n);
  dt_free(r->eval_rank);
  dt_free(r->rows);
  dt_free(r->all_rows);
  dt_task_free(r->task);
  dt_backend_free(r->be);
  dt_backend_free(r->host);
  dt_split_free(&r->split);
  dt_batch_order_free(&r->order);
  runner_files_join(r); /* its thread reads the data */
  dt_data_free(&r->data);
  dt_schedule_free(r->schedule);
  dt_network_free(r->net);
  dt_faults_free(r->faults);
  dt_graph_free(r->graph);
}

/* Refuses, before anything sized by the model is allocated, a run whose estimated memory per
 * rank (experiments/memory.c) exceeds this rank's share of its host's memory. */
static dt_status check_memory(runner *r, const dt_model_spec *ms) {
  dt_model *m = NULL;
  DT_TRY(dt_config_positioned(r->cfg, dt_model_create(ms, &m)));
  dt_memory mem;
  const dt_memory_backend mb = {.host = r->be->host_memory, .device_memory = (double)r->be->device_memory, .device_count = r->be->device_count};
  dt_status st = dt_memory_estimate(r->cfg, &r->data, r->graph, m, r->size, dt_run_threads(r->comm, INT_MAX), mb, &mem);
  dt_model_free(m);
  DT_TRY(st);
  dt_memory_share(&mem, dt_comm_host_size(r->comm), mb.device_count);
  /* every rank decides alike (a rank refusing alone would leave the others in a collective): the
   * largest estimate against the smallest room */
  double most[6] = {mem.total, mem.state, mem.per_node, mem.data, mem.work, mem.device};
  double least[2] = {mem.limit > 0 ? mem.limit : INFINITY, mem.device_limit > 0 ? mem.device_limit : INFINITY};
  DT_TRY(dt_comm_allreduce_max_f64(r->comm, most, 6));
  DT_TRY(dt_comm_allreduce_min_f64(r->comm, least, 2));
  mem.total = most[0], mem.state = most[1], mem.per_node = most[2], mem.data = most[3], mem.work = most[4], mem.device = most[5];
  mem.limit = isinf(least[0]) ? 0 : least[0];
  mem.device_limit = isinf(least[1]) ? 0 : least[1];
  if (r->rank == 0)
    dt_log_debug("memory: estimated %.0f bytes per rank (process %.0f, data %.0f, workspaces %.0f, state %.0f; %.0f of them on the device)\n",
                 mem.total + mem.device, mem.base, mem.data, mem.work, mem.state, mem.device);
  return dt_memory_check(r->cfg, &mem);
}

/* The backend the config chose, with one note on rank 0 when it is not what was asked: a
 * fallback of `auto`, or the seed's use_cuda on a CPU run. */
static dt_status choose_backend(runner *r) {
  const dt_experiment_config *e = &r->cfg->experiment;
  char note[320];
  const int threads = dt_run_threads(r->comm, r->count);
  /* the backend gets every thread this rank may use, not one per node: its vector ops and an
   * evaluation of fewer nodes than threads (one node, the mean model) use them all */
  DT_TRY(dt_backend_select(dt_backend_kind_name(e->backend), dt_run_threads(r->comm, INT_MAX), note, sizeof note, &r->be));
  DT_TRY(dt_backend_cpu_create(1, &r->host));
  r->be->tf32 = e->tf32;
  if (r->rank != 0) return DT_OK;
  dt_log_debug("backend %s, %d thread%s per rank, %d rank%s, %d node%s on rank 0", r->be->name, threads, threads == 1 ? "" : "s", r->size,
               r->size == 1 ? "" : "s", r->count, r->count == 1 ? "" : "s");
  if (e->tf32 && strcmp(r->be->name, "cpu") == 0) dt_log_warn("experiment.tf32 is true, but the run is on the CPU backend, which computes in float32");
  if (note[0] != '\0') dt_log_warn("%s", note);
  else if (e->use_cuda && strcmp(r->be->name, "cpu") == 0)
    dt_log_warn("experiment.use_cuda is true, but %s; running on the CPU",
                DT_HAVE_CUDA ? "experiment.backend is cpu (set backend: auto or cuda)" : "this dtrun has no CUDA backend");
  return DT_OK;
}

/* The resolved config's text (free() it) and its FNV-1a hash: a checkpoint is only resumed by
 * the config it is of. */
static dt_status config_text(const dt_config *cfg, char **text, uint64_t *hash) {
  size_t len = 0;
  *text = NULL;
  FILE *f = open_memstream(text, &len);
  DT_CHECK(f != NULL, DT_ERR_MEMORY, "out of memory");
  dt_status st = dt_config_emit_archive(cfg, &dt_builtin, f);
  fclose(f);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; st == DT_OK && i < len; i++) h = (h ^ (unsigned char)(*text)[i]) * 1099511628211ull;
  *hash = h;
  return st;
}

dt_status dt_experiment_db_repair(const dt_config *cfg, const dt_run_options *opt) {
  static runner r; /* static: a runner is large */
  memset(&r, 0, sizeof r);
  r.cfg = cfg;
  r.opt = opt;
  r.size = 1;
  r.n = cfg->experiment.graph.num_nodes;
  r.write = cfg->experiment.writeout;
  r.t_start = dt_time_now();
  runner_wall_clock(r.started, sizeof r.started);
  snprintf(r.outdir, sizeof r.outdir, "%s", opt->output_dir);
  char *text = NULL;
  dt_status st = config_text(cfg, &text, &r.config_hash);
  if (st == DT_OK) st = runner_db_open(&r, text);
  free(text);
  runner_db_close(&r);
  return st;
}

/* Everything the problems share: placement, backend, graph, data, split, model, θ0, metric
 * buffers, and the output folder. */
static dt_status runner_setup(runner *r) {
  const dt_config *cfg = r->cfg;
  r->t_phase = dt_time_now();
  DT_TRY(dt_placement_check(r->n, r->size));
  r->first = dt_placement_first(r->n, r->size, r->rank);
  r->count = dt_placement_count(r->n, r->size, r->rank);
  DT_TRY(setup_phase(r, choose_backend(r), "backend"));
  DT_TRY(setup_phase(r, dt_graph_from_config(cfg, &r->graph), "graph"));
  DT_TRY(setup_phase(r, dt_schedule_from_config(cfg, r->graph, &r->schedule), "graph schedule"));
  DT_TRY(dt_optimizers_admit(cfg, r->graph));
  DT_TRY(setup_phase(r, dt_config_positioned(cfg, dt_data_load(&cfg->experiment, &r->data)), "data"));
  runner_files_begin(r);
  DT_TRY(setup_phase(r, dt_config_positioned(cfg, dt_split_make(&r->data.train, &cfg->experiment, &r->split)), "split"));
  DT_TRY(runner_batch_order(cfg, &r->split, r->data.train.count, &r->order));
  if (r->order.num_nodes > 0) {
    dt_data_file *f = &r->inputs[r->num_inputs++];
    snprintf(f->role, sizeof f->role, "batch_order");
    memcpy(f->sha256, r->order.sha256, sizeof f->sha256);
  }
  dt_model_spec ms;
  DT_TRY(dt_config_positioned(cfg, dt_problem_model(cfg, &r->data.train, &ms)));
  DT_TRY(setup_phase(r, check_memory(r, &ms), "memory estimate"));
  DT_TRY(dt_config_positioned(
      cfg, dt_task_create(r->be, &r->data.train, &r->data.test, &r->split, &ms, r->first, r->count, cfg->experiment.seed, &r->task)));
  DT_TRY(dt_config_positioned(cfg, dt_task_set_augment(r->task, cfg->experiment.augment.crop_padding, cfg->experiment.augment.flip)));
  DT_TRY(setup_phase(r, DT_OK, "model"));
  const size_t d = dt_task_dim(r->task);
  if (dt_network_has_clock(&cfg->experiment.network))
    DT_TRY(dt_network_create(&cfg->experiment.network, r->n, cfg->experiment.seed, dt_model_flops(dt_task_model(r->task)), &r->net));
  if (dt_network_has_faults(&cfg->experiment.network))
    DT_TRY(dt_faults_create(&cfg->experiment.network, r->graph, cfg->experiment.seed, &r->faults));
  DT_TRY(setup_phase(r, DT_OK, "network"));
  DT_ALLOC(r->theta0, d, "base weights");
  dt_task_init_params(r->task, cfg->experiment.seed, r->theta0);
  if (cfg->experiment.model.init_file[0] != '\0') {
    dt_data_file *f = &r->inputs[r->num_inputs++];
    snprintf(f->role, sizeof f->role, "model_init");
    DT_TRY(runner_init_weights(cfg, dt_task_model(r->task), r->theta0, dt_task_initial_buffers(r->task), f->sha256));
  }
  if (r->order.num_nodes > 0) dt_task_set_batch_order(r->task, &r->order);
  DT_TRY(dt_slab_create(r->be, r->count, d, &r->normed));
  DT_ALLOC(r->rows, (size_t)r->count * NCOL, "metrics");
  DT_ALLOC(r->all_rows, (size_t)r->n * NCOL, "metrics");
  DT_TRY(runner_eval_draw(r));
  DT_TRY(dt_be_alloc(r->be, sizeof(double) * d, (void **)&r->mean_raw));
  DT_TRY(dt_be_alloc(r->be, sizeof(double) * d, (void **)&r->mean_norm));
  DT_TRY(dt_be_alloc(r->be, sizeof(float) * d, (void **)&r->mean_model));
  const size_t nb = dt_task_buffers(r->task)->dim;
  if (nb > 0) {
    DT_TRY(dt_be_alloc(r->be, sizeof(double) * nb, (void **)&r->mean_buf_sum));
    DT_TRY(dt_be_alloc(r->be, sizeof(float) * nb, (void **)&r->mean_buf));
  }
  DT_TRY(setup_phase(r, DT_OK, "initial weights and metric buffers"));
  if (r->rank == 0) DT_TRY(runner_setup_warnings(cfg, &r->data, r->graph, r->warnings, sizeof r->warnings));
  char *text = NULL;
  dt_status st = config_text(cfg, &text, &r->config_hash);
  if (st == DT_OK && cfg->experiment.writeout) st = runner_make_outdir(r);
  if (st == DT_OK) r->write = r->rank == 0 && cfg->experiment.writeout; /* a folder that failed holds no run of ours */
  if (st == DT_OK && r->write) st = runner_db_open(r, text);
  free(text);
  DT_TRY(st);
  r->write_ckpt = cfg->experiment.writeout;
  r->last_ckpt = dt_time_now();
  return setup_phase(r, DT_OK, "output folder");
}

static void banner(const runner *r) {
  const dt_experiment_config *e = &r->cfg->experiment;
  const int threads = dt_run_threads(r->comm, r->count);
  const int hosts = dt_comm_num_hosts(r->comm);
  char where[32] = "";
  if (hosts > 1) snprintf(where, sizeof where, " on %d hosts", hosts);
  char edges[48];
  if (r->graph->directed) snprintf(edges, sizeof edges, "directed, %d arcs", r->graph->num_arcs);
  else snprintf(edges, sizeof edges, "%d edges", r->graph->num_edges);
  runner_say(r, "dtrun %s: %s, %zu parameters, %d rank%s%s x %d thread%s\ngraph: %d nodes, %s, %s, Fiedler value %.4g, "
             "spectral gap %.4f%s%s\n", DT_VERSION, e->name, dt_task_dim(r->task), r->size, r->size > 1 ? "s" : "", where, threads,
             threads > 1 ? "s" : "", r->n, dt_graph_type_name(r->graph->type), edges, r->graph->fiedler,
             r->graph->spectral_gap, r->write ? "\noutput: " : "", r->write ? r->outdir : "");
  char order[1024];
  if (dt_config_order_note(r->cfg, "", order, sizeof order)) runner_say(r, "%s", order);
  /* what loading found inert (dt_key.applies) and what set-up found doubtful */
  if (r->rank == 0) {
    runner_print_warnings(r->cfg->warnings, NULL);
    runner_print_warnings(r->warnings, NULL);
  }
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
  r.tty = runner_progress_wanted(opt->progress, dt_comm_launched(comm));
  r.num_files = -1;
  r.t_start = dt_time_now();
  runner_wall_clock(r.started, sizeof r.started);
  r.lock_fd = -1;
  resume_point rp;
  memset(&rp, 0, sizeof rp);
  int done = 0, sig = 0, refused = 0, summarized = 0;
  DT_TRY_GOTO(runner_watchdog_start(&r));
  DT_TRY_GOTO(runner_setup(&r));
  runner_watchdog_folder(&r);
  if (opt->dump_trace != NULL) {
    DT_CHECK_GOTO(r.schedule == NULL, DT_ERR_USAGE, "--dump-trace traces static graphs; this experiment's graph changes every round");
    DT_TRY_GOTO(runner_write_trace_setup(&r, opt->dump_trace));
  }
  banner(&r);
  /* a resume refused (no intact checkpoint, changed data) leaves the folder as it was */
  if (opt->resume && (st = runner_checkpoint_load_run(&r, &rp)) != DT_OK) refused = 1;
  if (st == DT_OK && rp.found && (st = runner_check_data(&r)) != DT_OK) refused = 1; /* the data it started with */
  if (refused) goto cleanup;
  if (!rp.found) {
    /* a fresh run, or a resumed one that died before its first checkpoint: from the start */
    DT_TRY_GOTO(setup_phase(&r, runner_write_setup_files(&r), "config.yaml, graph.yaml and split.csv"));
    DT_TRY_GOTO(runner_write_summary(&r, 0, "running"));
    if (cfg->experiment.individual_training.train_solo) DT_TRY_GOTO(individual_training(&r));
    DT_TRY_GOTO(stop_agreed(&r, &sig));
    if (!sig) DT_TRY_GOTO(setup_phase(&r, runner_checkpoint(&r, 0, 0, NULL), "the first checkpoint"));
  } else {
    done = rp.problem;
    runner_say(&r, "resuming %s: %d of %d problems done%s\n", r.outdir, rp.problem, cfg->num_problems,
               rp.round > 0 ? ", the next from its checkpoint" : "");
  }
  for (int p = done; p < cfg->num_problems; p++) {
    DT_TRY_GOTO(stop_agreed(&r, &sig));
    if (sig) break;
    DT_TRY_GOTO(run_problem(&r, p, &rp));
    done = p + 1;
    DT_TRY_GOTO(runner_write_summary(&r, done, "running"));
    if (strcmp(r.res[p].status, "interrupted") == 0) break;
    if (done < cfg->num_problems) DT_TRY_GOTO(runner_checkpoint(&r, done, 0, NULL));
  }
  DT_TRY_GOTO(stop_agreed(&r, &sig));
  if (sig && done == cfg->num_problems && (done == 0 || strcmp(r.res[done - 1].status, "interrupted") != 0)) {
    /* the signal came as the last problem finished: nothing is left to resume */
    runner_say(&r, "signal %d arrived as the last problem finished: the run is complete\n", sig);
    sig = 0;
  }
  DT_TRY_GOTO(runner_write_summary(&r, done, sig ? "interrupted" : "completed"));
  summarized = 1;
  if (!sig) DT_TRY_GOTO(runner_checkpoint_remove(&r));
  runner_print_table(&r, done);
  if (sig)
    st = DT_ERROR(DT_ERR_INTERRUPTED, "interrupted by signal %d; results so far are in %s%s%s", sig, r.write ? r.outdir : "(writeout is off)",
                  r.write ? "; continue with: dtrun resume " : "", r.write ? r.outdir : "");
  int diverged = 0; /* every problem: a run a script should not take for a success (exit 3) */
  for (int p = 0; !sig && p < done; p++) diverged += strcmp(r.res[p].status, "diverged") == 0;
  if (!sig && done == cfg->num_problems && done > 0 && diverged == done)
    st = DT_ERROR(DT_ERR_DIVERGED, "every problem diverged (summary.yaml gives the round each one did)%s%s", r.write ? "; files in " : "",
                  r.write ? r.outdir : "");
cleanup:
  if (st == DT_ERR_INTERRUPTED && !summarized && !refused) {
    /* a signal in set-up (setup_phase) or in a problem's start: what the folder holds is said in
     * summary.yaml, and the message says what is left */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", dt_error_message());
    if (r.write) {
      const dt_status best_effort = runner_write_summary(&r, done, "interrupted");
      (void)best_effort;
      st = DT_ERROR(DT_ERR_INTERRUPTED, "%s; %s; continue with: dtrun resume %s", msg,
                    done > 0 || rp.found ? "results so far are in it" : "nothing was computed yet (resuming starts from the beginning)",
                    r.outdir);
    } else {
      st = DT_ERROR(DT_ERR_INTERRUPTED, "%s; %s", msg, cfg->experiment.writeout ? "no run folder was made" : "nothing was computed (writeout is off)");
    }
  }
  if (st != DT_OK && st != DT_ERR_INTERRUPTED && st != DT_ERR_DIVERGED && r.write && !refused) {
    /* the summary tells the truth about a failed run; the failure's own message stays first */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", dt_error_message());
    const dt_status code = st;
    const dt_status best_effort = runner_write_summary(&r, done, "failed"); /* its failure must not hide the first */
    (void)best_effort;
    st = DT_ERROR(code, "%s", msg);
  }
  runner_watchdog_stop(&r);
  runner_resume_point_free(&rp);
  runner_db_close(&r);
  runner_unlock(&r);
  runner_free(&r);
  return st;
}
