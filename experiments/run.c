/* The experiment runner: config → graph → data and split → θ0 → each (problem, optimizer) pair
 * from θ0 with restarted minibatch streams → result files. Evaluations are collective and
 * assemble per-node rows on rank 0 in node order, so the files do not depend on the rank
 * count. Each problem's files are on disk before the next problem starts. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dt/log.h"
#include "dt/optimizer.h"
#include "dt/run.h"
#include "dt_config.h"
#include "../optimizers/opts.h"
#include "writer_impl.h"

static volatile sig_atomic_t stop_signal = 0;

static void on_signal(int sig) { stop_signal = sig; }

void dt_run_install_signal_handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

/* Per-node columns of an evaluation, in file order. */
enum {
  COL_FPC, COL_VLOSS, COL_ACC, COL_CONS, COL_CONS_RAW, COL_EPOCH, COL_TRAIN_LOSS, COL_BYTES,
  COL_T_COMPUTE, COL_T_COMM, COL_T_EVAL, NCOL
};
static const char *const col_names[NCOL] = {
    "forward_pass_count", "validation_loss", "top1_accuracy", "consensus_error", "consensus_error_raw",
    "current_epoch", "train_loss", "bytes_sent", "time_compute", "time_comm", "time_eval"};

static int col_enabled(int c, unsigned metrics) {
  switch (c) {
    case COL_FPC: return (metrics & DT_METRIC_FORWARD_PASS_COUNT) != 0;
    case COL_VLOSS: return (metrics & DT_METRIC_VALIDATION_LOSS) != 0;
    case COL_ACC: return (metrics & DT_METRIC_TOP1_ACCURACY) != 0;
    case COL_CONS:
    case COL_CONS_RAW: return (metrics & DT_METRIC_CONSENSUS_ERROR) != 0;
    case COL_EPOCH: return (metrics & DT_METRIC_CURRENT_EPOCH) != 0;
    default: return 1; /* always recorded */
  }
}

typedef struct problem_result {
  const char *status; /* completed | interrupted | diverged */
  int rounds_done;
  double final[NCOL][3]; /* min, mean, max over nodes at the last evaluation */
  double seconds, t_compute, t_comm, t_eval;
  double bytes;         /* all nodes */
} problem_result;

typedef struct runner {
  dt_comm *comm;
  const dt_config *cfg;
  const dt_run_options *opt;
  int rank, size, first, count, n;
  dt_graph *graph;
  dt_data data; /* the train and test samples */
  dt_split split;
  dt_backend *be;
  dt_backend *host; /* the CPU backend for rank 0's host-side math */
  dt_task *task;
  float *theta0;           /* host */
  dt_slab normed;          /* θ/‖θ‖ of the local nodes */
  double *rows, *all_rows; /* count × NCOL, n × NCOL */
  double *mean_raw, *mean_norm; /* ordered sums over all nodes (backend memory) */
  char outdir[DT_PATH_MAX + 64];
  int write; /* rank 0 and writeout */
  int tty;
  double t_start;
  char started[64];
  problem_result res[DT_MAX_PROBLEMS];
} runner;

static void say(const runner *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const runner *r, const char *fmt, ...) {
  if (r->rank != 0 || r->opt->quiet) return;
  va_list ap;
  va_start(ap, fmt);
  if (r->tty) fputs("\r\033[K", stdout);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

/* ---- output folder ------------------------------------------------------------------------ */

static dt_status mkdir_p(const char *path) {
  char buf[DT_PATH_MAX + 64];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return DT_ERROR(DT_ERR_IO, "cannot create folder %s: %s", buf, strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST) return DT_ERROR(DT_ERR_IO, "cannot create folder %s: %s", buf, strerror(errno));
  return DT_OK;
}

static dt_status make_outdir(runner *r) {
  const dt_experiment_config *e = &r->cfg->experiment;
  dt_status st = DT_OK;
  if (r->rank == 0) {
    if (r->opt->output_dir != NULL) {
      snprintf(r->outdir, sizeof r->outdir, "%s", r->opt->output_dir);
      st = mkdir_p(r->outdir);
    } else {
      char stamp[64];
      time_t now = time(NULL);
      struct tm tmv;
      localtime_r(&now, &tmv);
      strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", &tmv);
      st = mkdir_p(e->output_metadir);
      for (int k = 1; st == DT_OK; k++) {
        if (k == 1) snprintf(r->outdir, sizeof r->outdir, "%s/%s_%s", e->output_metadir, stamp, e->name);
        else snprintf(r->outdir, sizeof r->outdir, "%s/%s_%s_%d", e->output_metadir, stamp, e->name, k);
        if (mkdir(r->outdir, 0777) == 0) break;
        if (errno != EEXIST) st = DT_ERROR(DT_ERR_IO, "cannot create folder %s: %s", r->outdir, strerror(errno));
      }
    }
  }
  /* every rank learns the outcome, so a failure stops all of them together */
  double ok = st == DT_OK ? 1 : 0;
  DT_TRY(dt_comm_allreduce_min_f64(r->comm, &ok, 1));
  if (st != DT_OK) return st;
  DT_CHECK(ok == 1, DT_ERR_IO, "rank 0 could not create the output folder");
  return DT_OK;
}

/* ---- evaluation ---------------------------------------------------------------------------- */

typedef struct problem_run {
  dt_optimizer_run run;
  const dt_problem_config *pc;
  dt_timer t_eval;
  strbuf csv, consensus_csv;
  int cols[NCOL];
} problem_run;

/* Consensus without gathering models: ordered sums of θ and θ/‖θ‖ over all nodes, then each
 * node's distance to the means. cons[l], cons_raw[l]: ‖θ̂_l − mean θ̂‖ and ‖θ_l − mean θ‖. */
static dt_status consensus(runner *r, dt_optimizer_run *run, int distances, double *cons, double *cons_raw) {
  dt_backend *be = r->be;
  const size_t d = run->dim;
  for (int l = 0; l < r->count; l++) {
    const float *th = dt_slab_node(&run->theta, l);
    double nrm;
    DT_TRY(be->ops->nrm2(be, d, th, &nrm));
    if (nrm > 0) DT_TRY(be->ops->div(be, d, th, nrm, dt_slab_node(&r->normed, l)));
    else DT_TRY(be->ops->fill(be, d, 0.0f, dt_slab_node(&r->normed, l)));
  }
  DT_TRY(dt_run_sum_nodes(run, &run->theta, r->mean_raw));
  DT_TRY(dt_run_sum_nodes(run, &r->normed, r->mean_norm));
  for (int l = 0; l < r->count && distances; l++) {
    DT_TRY(be->ops->sqdist_mean(be, d, dt_slab_node(&r->normed, l), r->mean_norm, (double)r->n, &cons[l]));
    DT_TRY(be->ops->sqdist_mean(be, d, dt_slab_node(&run->theta, l), r->mean_raw, (double)r->n, &cons_raw[l]));
  }
  return DT_OK;
}

/* Rank 0: the pairwise distances ‖θ̂_i − θ̂_j‖ of all nodes into the consensus CSV. Collective. */
static dt_status consensus_matrix(runner *r, problem_run *pr, int round) {
  const size_t d = pr->run.dim;
  const float *const *rows;
  float *all = NULL;
  dt_status st = DT_OK;
  DT_TRY(dt_run_host_rows(&pr->run, &r->normed, &rows));
  if (r->rank == 0) DT_ALLOC_GOTO(all, (size_t)r->n * d, "consensus matrix");
  DT_TRY_GOTO(dt_comm_node_gather(r->comm, r->n, rows, d, all));
  for (int i = 0; i < r->n && r->rank == 0; i++)
    for (int j = 0; j < r->n; j++) {
      double s;
      DT_TRY_GOTO(r->host->ops->sqdist(r->host, d, all + (size_t)i * d, all + (size_t)j * d, &s));
      sb_printf(&pr->consensus_csv, "%d,%d,%d,%.9g\n", round, i, j, sqrt(s));
    }
cleanup:
  dt_free(all);
  return st;
}

static dt_status evaluate(runner *r, problem_run *pr, int round, problem_result *res) {
  const dt_problem_config *pc = pr->pc;
  dt_optimizer_run *run = &pr->run;
  dt_status st = DT_OK;
  double *vl = NULL, *acc = NULL, *cons = NULL, *cons_raw = NULL;
  dt_timer_start(&pr->t_eval);
  DT_ALLOC_GOTO(vl, r->count, "evaluation");
  DT_ALLOC_GOTO(acc, r->count, "evaluation");
  DT_ALLOC_GOTO(cons, r->count, "evaluation");
  DT_ALLOC_GOTO(cons_raw, r->count, "evaluation");
  if (pc->metrics & (DT_METRIC_VALIDATION_LOSS | DT_METRIC_TOP1_ACCURACY))
    DT_TRY_GOTO(dt_task_evaluate(r->task, &run->theta, vl, acc));
  if (pc->metrics & (DT_METRIC_CONSENSUS_ERROR | DT_METRIC_CONSENSUS_MATRIX))
    DT_TRY_GOTO(consensus(r, run, (pc->metrics & DT_METRIC_CONSENSUS_ERROR) != 0, cons, cons_raw));
  for (int l = 0; l < r->count; l++) {
    const int i = r->first + l;
    double *row = r->rows + (size_t)l * NCOL;
    row[COL_FPC] = (double)dt_task_samples_seen(r->task, i);
    row[COL_VLOSS] = vl[l];
    row[COL_ACC] = acc[l];
    row[COL_CONS] = sqrt(cons[l]);
    row[COL_CONS_RAW] = sqrt(cons_raw[l]);
    row[COL_EPOCH] = dt_task_epoch(r->task, i);
    row[COL_TRAIN_LOSS] = run->train_loss_n[l] > 0 ? run->train_loss_sum[l] / run->train_loss_n[l] : NAN;
    row[COL_BYTES] = (double)run->node_bytes[l];
    row[COL_T_COMPUTE] = run->t_compute.total;
    row[COL_T_COMM] = run->t_comm.total;
    row[COL_T_EVAL] = pr->t_eval.total + (dt_time_now() - pr->t_eval.started);
    run->train_loss_sum[l] = 0;
    run->train_loss_n[l] = 0;
  }
  DT_TRY_GOTO(dt_comm_gather_rows(r->comm, r->n, r->rows, NCOL, r->all_rows));
  if (pc->metrics & DT_METRIC_CONSENSUS_MATRIX) DT_TRY_GOTO(consensus_matrix(r, pr, round));
  if (r->rank == 0) {
    for (int i = 0; i < r->n; i++) {
      const double *row = r->all_rows + (size_t)i * NCOL;
      sb_printf(&pr->csv, "%d,%d", round, i);
      for (int c = 0; c < NCOL; c++) {
        if (!pr->cols[c]) continue;
        if (isnan(row[c])) sb_printf(&pr->csv, ",nan"); /* one spelling for every reader (not -nan) */
        else sb_printf(&pr->csv, c == COL_FPC || c == COL_BYTES ? ",%.0f" : ",%.9g", row[c]);
      }
      sb_printf(&pr->csv, "\n");
    }
    for (int c = 0; c < NCOL; c++) {
      double mn = INFINITY, mx = -INFINITY, sum = 0;
      for (int i = 0; i < r->n; i++) {
        double v = r->all_rows[(size_t)i * NCOL + c];
        mn = fmin(mn, v);
        mx = fmax(mx, v);
        sum += v;
      }
      res->final[c][0] = mn;
      res->final[c][1] = sum / r->n;
      res->final[c][2] = mx;
    }
    res->rounds_done = round;
    if (pc->verbose_evals) {
      char line[512];
      int used = snprintf(line, sizeof line, "%-12s round %5d", pc->problem_name, round);
      if (pc->metrics & DT_METRIC_VALIDATION_LOSS)
        used += snprintf(line + used, sizeof line - used, " | val loss %.4f - %.4f", res->final[COL_VLOSS][0], res->final[COL_VLOSS][2]);
      if (pc->metrics & DT_METRIC_TOP1_ACCURACY)
        used += snprintf(line + used, sizeof line - used, " | top1 %.4f - %.4f", res->final[COL_ACC][0], res->final[COL_ACC][2]);
      if (pc->metrics & DT_METRIC_CONSENSUS_ERROR)
        used += snprintf(line + used, sizeof line - used, " | consensus %.2e - %.2e", res->final[COL_CONS][0], res->final[COL_CONS][2]);
      if (pc->metrics & DT_METRIC_CURRENT_EPOCH)
        used += snprintf(line + used, sizeof line - used, " | epoch %.2f - %.2f", res->final[COL_EPOCH][0], res->final[COL_EPOCH][2]);
      say(r, "%s\n", line);
    }
  }
cleanup:
  dt_timer_stop(&pr->t_eval);
  dt_free(vl);
  dt_free(acc);
  dt_free(cons);
  dt_free(cons_raw);
  return st;
}

/* ---- files --------------------------------------------------------------------------------- */

/* Writes what emit() prints as outdir/name, atomically. */
static dt_status write_emitted(const runner *r, const char *name, dt_status (*emit)(const void *obj, FILE *f), const void *obj) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  DT_CHECK(mem != NULL, DT_ERR_MEMORY, "out of memory");
  dt_status st = emit(obj, mem);
  fclose(mem);
  if (st == DT_OK) st = dt_write_atomic(r->outdir, name, text, len);
  free(text);
  return st;
}

static dt_status emit_config(const void *cfg, FILE *f) { return dt_config_emit(cfg, &dt_builtin, f); }
static dt_status emit_graph(const void *g, FILE *f) { return dt_graph_write_yaml(g, f); }

static dt_status write_setup_files(runner *r) {
  if (!r->write) return DT_OK;
  dt_status st = DT_OK;
  strbuf sb = {0};
  DT_TRY(write_emitted(r, "config.yaml", emit_config, r->cfg));
  DT_TRY(write_emitted(r, "graph.yaml", emit_graph, r->graph));
  sb_printf(&sb, "node,samples");
  for (int c = 0; c < r->data.train.num_classes; c++) sb_printf(&sb, ",class_%d", c);
  sb_printf(&sb, "\n");
  for (int i = 0; i < r->n; i++) {
    int hist[256] = {0};
    for (size_t s = r->split.start[i]; s < r->split.start[i + 1]; s++) hist[r->data.train.labels[r->split.idx[s]]]++;
    sb_printf(&sb, "%d,%zu", i, dt_split_size(&r->split, i));
    for (int c = 0; c < r->data.train.num_classes; c++) sb_printf(&sb, ",%d", hist[c]);
    sb_printf(&sb, "\n");
  }
  st = sb.failed ? DT_ERROR(DT_ERR_MEMORY, "out of memory") : dt_write_atomic(r->outdir, "split.csv", sb.data, sb.len);
  sb_free(&sb);
  return st;
}

static void wall_clock(char *buf, size_t size) {
  time_t t = time(NULL);
  struct tm tmv;
  localtime_r(&t, &tmv);
  strftime(buf, size, "%Y-%m-%dT%H:%M:%S%z", &tmv);
}

static void yaml_quote(strbuf *sb, const char *s) {
  sb_printf(sb, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') sb_printf(sb, "\\%c", *s);
    else sb_printf(sb, "%c", *s);
  }
  sb_printf(sb, "\"");
}

static dt_status write_summary(runner *r, int done, const char *end) {
  if (!r->write) return DT_OK;
  strbuf sb = {0};
  char host[256];
  dt_comm_host(host, sizeof host);
  sb_printf(&sb, "dtrun_version: \"%s\"\ncommand: ", DT_VERSION);
  yaml_quote(&sb, r->opt->command_line ? r->opt->command_line : "");
  sb_printf(&sb, "\nranks: %d\nhost_rank0: ", r->size);
  yaml_quote(&sb, host);
  char now[64];
  wall_clock(now, sizeof now);
  sb_printf(&sb, "\nnodes: %d\nparameters: %zu\nstarted: \"%s\"\nupdated: \"%s\"\nwall_seconds: %.3f\nstatus: %s\n", r->n,
            dt_task_dim(r->task), r->started, now, dt_time_now() - r->t_start, end);
  sb_printf(&sb, "\nproblems:\n");
  for (int p = 0; p < done; p++) {
    const dt_problem_config *pc = &r->cfg->problems[p];
    const problem_result *res = &r->res[p];
    sb_printf(&sb, "  - problem_name: ");
    yaml_quote(&sb, pc->problem_name);
    sb_printf(&sb, "\n    alg_name: %s\n    status: %s\n    rounds: %d\n    rounds_completed: %d\n", pc->alg_name, res->status,
              pc->outer_iterations, res->rounds_done);
    sb_printf(&sb, "    wall_seconds: %.3f\n    time_compute: %.3f\n    time_comm: %.3f\n    time_eval: %.3f\n    bytes_sent: %.0f\n",
              res->seconds, res->t_compute, res->t_comm, res->t_eval, res->bytes);
    sb_printf(&sb, "    final:\n");
    for (int c = 0; c < COL_TRAIN_LOSS; c++) {
      if (!col_enabled(c, pc->metrics)) continue;
      sb_printf(&sb, "      %s: {", col_names[c]);
      static const char *const stat[3] = {"min", "mean", "max"};
      for (int k = 0; k < 3; k++) {
        const double v = res->final[c][k];
        if (isnan(v)) sb_printf(&sb, "%s%s: .nan", k ? ", " : "", stat[k]); /* YAML's spelling */
        else sb_printf(&sb, "%s%s: %.9g", k ? ", " : "", stat[k], v);
      }
      sb_printf(&sb, "}\n");
    }
  }
  dt_status st = sb.failed ? DT_ERROR(DT_ERR_MEMORY, "out of memory") : dt_write_atomic(r->outdir, "summary.yaml", sb.data, sb.len);
  sb_free(&sb);
  return st;
}

static dt_status save_models(runner *r, problem_run *pr) {
  const size_t d = pr->run.dim;
  const float *const *rows;
  float *all = NULL;
  dt_status st = DT_OK;
  DT_TRY(dt_run_host_rows(&pr->run, &pr->run.theta, &rows));
  if (r->write) DT_ALLOC_GOTO(all, (size_t)r->n * d, "models");
  DT_TRY_GOTO(dt_comm_node_gather(r->comm, r->n, rows, d, all));
  if (r->write) {
    char name[DT_NAME_MAX + 32];
    snprintf(name, sizeof name, "%s_models.npy", pr->pc->problem_name);
    DT_TRY_GOTO(dt_write_npy(r->outdir, name, all, r->n, d));
  }
cleanup:
  dt_free(all);
  return st;
}

/* ---- the solo baseline of the seed format (individual_training) --------------------------- */

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
  say(r, "individual training: %d epochs per node, %s, lr %g\n", sc->epochs, dt_local_opt_kind_name((dt_local_opt_kind)sc->optimizer), sc->lr);
  /* rounds: the most steps any node takes (every rank knows every split) */
  long rounds = 0;
  for (int i = 0; i < r->n; i++) {
    const long steps = (long)((dt_split_size(&r->split, i) + (size_t)sc->train_batch_size - 1) / (size_t)sc->train_batch_size) * sc->epochs;
    rounds = steps > rounds ? steps : rounds;
  }
  snprintf(pc.problem_name, sizeof pc.problem_name, "individual_training");
  pc.train_batch_size = sc->train_batch_size;
  pc.outer_iterations = (int)rounds;
  const dt_solo_opts so = {.optimizer = sc->optimizer, .lr = sc->lr, .mu = 0.0};
  DT_TRY_GOTO(dt_run_init(&run, r->comm, r->graph, &pc, r->task, r->cfg->experiment.seed, r->first, r->count, r->size));
  run.max_epochs = sc->epochs;
  DT_TRY_GOTO(dt_slab_broadcast_host(r->be, r->theta0, &run.theta));
  DT_TRY_GOTO(dt_task_begin(r->task, sc->train_batch_size, 0, 0.0));
  DT_TRY_GOTO(solo->create(&run, &so, &state));
  for (long k = 0; k < rounds && !stop_signal; k++) DT_TRY_GOTO(solo->round(state, &run, (int)k));
  DT_ALLOC_GOTO(vl, r->count, "solo");
  DT_ALLOC_GOTO(acc, r->count, "solo");
  DT_ALLOC_GOTO(rows, 2 * (size_t)r->count, "solo");
  DT_ALLOC_GOTO(all, 2 * (size_t)r->n, "solo");
  DT_TRY_GOTO(dt_task_evaluate(r->task, &run.theta, vl, acc));
  for (int l = 0; l < r->count; l++) rows[2 * l] = vl[l], rows[2 * l + 1] = acc[l];
  DT_TRY_GOTO(dt_comm_gather_rows(r->comm, r->n, rows, 2, all));
  if (r->rank == 0) {
    strbuf sb = {0};
    sb_printf(&sb, "node,validation_loss,top1_accuracy\n");
    for (int i = 0; i < r->n; i++) {
      sb_printf(&sb, "%d,%.9g,%.9g\n", i, all[2 * i], all[2 * i + 1]);
      if (sc->verbose) say(r, "  node %d: top1 %.4f, validation loss %.4f\n", i, all[2 * i + 1], all[2 * i]);
    }
    if (r->write) st = sb.failed ? DT_ERROR(DT_ERR_MEMORY, "out of memory") : dt_write_atomic(r->outdir, "solo_results.csv", sb.data, sb.len);
    sb_free(&sb);
  }
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

static void progress(const runner *r, const dt_problem_config *pc, int k, double t0) {
  if (!r->tty || r->rank != 0 || r->opt->quiet) return;
  static double last = 0;
  double now = dt_time_now();
  if (now - last < 0.2 && k + 1 < pc->outer_iterations) return;
  last = now;
  const int width = 30, done = (int)((long)width * (k + 1) / pc->outer_iterations);
  double eta = (now - t0) / (k + 1) * (pc->outer_iterations - k - 1);
  printf("\r\033[K%-12s [", pc->problem_name);
  for (int i = 0; i < width; i++) putchar(i < done ? '=' : ' ');
  printf("] %d/%d  ETA %.0fs", k + 1, pc->outer_iterations, eta);
  fflush(stdout);
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
  for (int c = 0; c < NCOL; c++) pr.cols[c] = col_enabled(c, pc->metrics);
  if (r->rank == 0) {
    sb_printf(&pr.csv, "round,node");
    for (int c = 0; c < NCOL; c++)
      if (pr.cols[c]) sb_printf(&pr.csv, ",%s", col_names[c]);
    sb_printf(&pr.csv, "\n");
    if (pc->metrics & DT_METRIC_CONSENSUS_MATRIX) sb_printf(&pr.consensus_csv, "round,i,j,distance\n");
  }
  say(r, "== %s: %s, %d rounds on %d nodes (%d rank%s)\n", pc->problem_name, pc->alg_name, pc->outer_iterations, r->n, r->size,
      r->size > 1 ? "s" : "");
  /* every problem starts from θ0 with fresh minibatch streams */
  DT_TRY_GOTO(dt_slab_broadcast_host(r->be, r->theta0, &run->theta));
  DT_TRY_GOTO(dt_task_begin(r->task, pc->train_batch_size, pc->full_batch, pc->l2));
  const double t0 = dt_time_now();
  DT_TRY_GOTO(def->create(run, pc->alg_opts, &state));
  DT_TRY_GOTO(evaluate(r, &pr, 0, res));
  for (int k = 0; k < pc->outer_iterations; k++) {
    /* compute time = the round's wall time less its communication (timed by the exchange) */
    const double round_start = dt_time_now(), comm_before = run->t_comm.total;
    DT_TRY_GOTO(def->round(state, run, k));
    run->t_compute.total += (dt_time_now() - round_start) - (run->t_comm.total - comm_before);
    /* one agreement per round on whether to stop: a signal on any rank, or divergence */
    double flag = stop_signal ? 1 : 0;
    for (int l = 0; l < r->count; l++)
      if (!isfinite(run->train_loss_sum[l])) flag = fmax(flag, 2);
    if (r->size > 1) DT_TRY_GOTO(dt_comm_allreduce_max_f64(r->comm, &flag, 1));
    const int last = k + 1 == pc->outer_iterations || flag != 0;
    if ((k + 1) % pc->evaluate_frequency == 0 || last) DT_TRY_GOTO(evaluate(r, &pr, k + 1, res));
    progress(r, pc, k, t0);
    if (flag == 2) {
      res->status = "diverged";
      say(r, "%s diverged (a loss became NaN or infinite) at round %d; going on with the next problem\n", pc->problem_name, k + 1);
      break;
    }
    if (flag == 1) {
      res->status = "interrupted";
      say(r, "interrupted at round %d; saving what was measured\n", k + 1);
      break;
    }
  }
  res->seconds = dt_time_now() - t0;
  res->t_compute = run->t_compute.total;
  res->t_comm = run->t_comm.total;
  res->t_eval = pr.t_eval.total;
  {
    double b = 0;
    for (int l = 0; l < r->count; l++) b += (double)run->node_bytes[l];
    DT_TRY_GOTO(dt_comm_allreduce_sum_f64(r->comm, &b, 1));
    res->bytes = b;
  }
  if (r->cfg->experiment.save_models && r->cfg->experiment.writeout) DT_TRY_GOTO(save_models(r, &pr));
  if (r->write) {
    char name[DT_NAME_MAX + 32];
    snprintf(name, sizeof name, "%s_results.csv", pc->problem_name);
    DT_CHECK_GOTO(!pr.csv.failed, DT_ERR_MEMORY, "out of memory collecting results");
    DT_TRY_GOTO(dt_write_atomic(r->outdir, name, pr.csv.data, pr.csv.len));
    if (pc->metrics & DT_METRIC_CONSENSUS_MATRIX) {
      snprintf(name, sizeof name, "%s_consensus.csv", pc->problem_name);
      DT_TRY_GOTO(dt_write_atomic(r->outdir, name, pr.consensus_csv.data, pr.consensus_csv.len));
    }
  }
  if (pc->profile)
    say(r, "%s: %.2f s: compute %.2f s, communication %.2f s, evaluation %.2f s; %.3g MB sent\n", pc->problem_name, res->seconds,
        res->t_compute, res->t_comm, res->t_eval, res->bytes / 1e6);
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
  wall_clock(r.started, sizeof r.started);
  DT_TRY_GOTO(dt_placement_check(r.n, r.size));
  r.first = dt_placement_first(r.n, r.size, r.rank);
  r.count = dt_placement_count(r.n, r.size, r.rank);
  char note[320];
  DT_TRY_GOTO(dt_backend_select(dt_backend_kind_name(cfg->experiment.backend), dt_run_threads(r.size, r.count), note, sizeof note, &r.be));
  DT_TRY_GOTO(dt_backend_cpu_create(1, &r.host));
  if (note[0] != '\0' && r.rank == 0 && !opt->quiet) dt_log_warn("%s", note);

  DT_TRY_GOTO(dt_graph_from_config(cfg, &r.graph));
  DT_TRY_GOTO(dt_data_load(&cfg->experiment, &r.data));
  DT_TRY_GOTO(dt_split_make(&r.data.train, &cfg->experiment, &r.split));
  dt_model_spec ms;
  DT_TRY_GOTO(dt_problem_model(cfg, &r.data.train, &ms));
  DT_TRY_GOTO(dt_task_create(r.be, &r.data.train, &r.data.test, &r.split, &ms, r.first, r.count, cfg->experiment.seed, &r.task));
  const size_t d = dt_task_dim(r.task);
  DT_ALLOC_GOTO(r.theta0, d, "base weights");
  dt_task_init_params(r.task, cfg->experiment.seed, r.theta0);
  DT_TRY_GOTO(dt_slab_create(r.be, r.count, d, &r.normed));
  DT_ALLOC_GOTO(r.rows, (size_t)r.count * NCOL, "metrics");
  DT_ALLOC_GOTO(r.all_rows, (size_t)r.n * NCOL, "metrics");
  DT_TRY_GOTO(r.be->ops->alloc(r.be, sizeof(double) * d, (void **)&r.mean_raw));
  DT_TRY_GOTO(r.be->ops->alloc(r.be, sizeof(double) * d, (void **)&r.mean_norm));
  if (cfg->experiment.writeout) DT_TRY_GOTO(make_outdir(&r));
  r.write = r.rank == 0 && cfg->experiment.writeout;
  say(&r, "dtrun %s: %s, %d nodes (%s graph, %d edges, spectral gap %.4f), %zu parameters, %d rank%s x %d thread%s%s%s\n",
      DT_VERSION, cfg->experiment.name, r.n, dt_graph_type_name(r.graph->type), r.graph->num_edges, r.graph->spectral_gap, d, r.size,
      r.size > 1 ? "s" : "", dt_run_threads(r.size, r.count), dt_run_threads(r.size, r.count) > 1 ? "s" : "", r.write ? "\noutput: " : "", r.write ? r.outdir : "");
  if (cfg->experiment.use_cuda && strcmp(r.be->name, "cpu") == 0 && note[0] == '\0' && r.rank == 0 && !opt->quiet)
    dt_log_warn("experiment.use_cuda is true, but %s; running on the CPU",
                DT_HAVE_CUDA ? "experiment.backend is cpu (set backend: auto or cuda)" : "this dtrun has no CUDA backend");
  DT_TRY_GOTO(write_setup_files(&r));
  if (cfg->experiment.individual_training.train_solo) DT_TRY_GOTO(individual_training(&r));
  int done = 0;
  for (int p = 0; p < cfg->num_problems; p++) {
    DT_TRY_GOTO(run_problem(&r, p));
    done = p + 1;
    DT_TRY_GOTO(write_summary(&r, done, "running"));
    if (strcmp(r.res[p].status, "interrupted") == 0) break;
  }
  DT_TRY_GOTO(write_summary(&r, done, stop_signal ? "interrupted" : "completed"));
  if (r.rank == 0) {
    if (r.tty && !opt->quiet) fputs("\r\033[K", stdout);
    printf("%-16s %-12s %-11s %8s %10s %10s %12s %9s\n", "problem", "algorithm", "status", "rounds", "top1 mean", "val loss", "consensus",
           "seconds");
    for (int p = 0; p < done; p++) {
      const problem_result *res = &r.res[p];
      printf("%-16s %-12s %-11s %8d %10.4f %10.4f %12.3e %9.2f\n", cfg->problems[p].problem_name, cfg->problems[p].alg_name,
             res->status, res->rounds_done, res->final[COL_ACC][1], res->final[COL_VLOSS][1], res->final[COL_CONS][1], res->seconds);
    }
    if (r.write) printf("results in %s\n", r.outdir);
  }
  if (stop_signal) st = DT_ERROR(DT_ERR_INTERRUPTED, "interrupted by signal %d; results so far are in %s", (int)stop_signal,
                                 r.write ? r.outdir : "(writeout is off)");
cleanup:
  runner_free(&r);
  return st;
}
