/* Result files (DESIGN.md "Files"), written by rank 0 through atomic renames so a reader never
 * sees a partial file: config.yaml, graph.yaml and split.csv at the start; each problem's
 * <problem_name>_results.csv (one row per node per evaluation), _consensus.csv and _models.npy
 * when it ends; summary.yaml after every problem; solo_results.csv for individual_training. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dt_config.h"
#include "dt_vcs.h"
#include "dt/yaml.h"
#include "runner_impl.h"

const char *const runner_col_names[NCOL] = {
    "forward_pass_count", "validation_loss", "top1_accuracy", "consensus_error", "consensus_error_raw",
    "current_epoch", "train_loss", "bytes_sent", "time_compute", "time_comm", "time_eval", "sim_time",
    "messages_sent", "messages_lost", "messages_received"};

int runner_col_enabled(int c, unsigned metrics) {
  switch (c) {
    case COL_FPC: return (metrics & DT_METRIC_FORWARD_PASS_COUNT) != 0;
    case COL_VLOSS: return (metrics & DT_METRIC_VALIDATION_LOSS) != 0;
    case COL_ACC: return (metrics & DT_METRIC_TOP1_ACCURACY) != 0;
    case COL_CONS:
    case COL_CONS_RAW: return (metrics & DT_METRIC_CONSENSUS_ERROR) != 0;
    case COL_EPOCH: return (metrics & DT_METRIC_CURRENT_EPOCH) != 0;
    case COL_SIM_TIME: /* with experiment.network's clock only (runner_begin_csv) */
    case COL_MSG_SENT:
    case COL_MSG_LOST:
    case COL_MSG_RECEIVED: return 0; /* with its faults only */
    default: return 1; /* always recorded */
  }
}

dt_status runner_emit_config(const void *cfg, FILE *f) { return dt_config_emit_archive(cfg, &dt_builtin, f); }
static dt_status emit_graph(const void *ctx, FILE *f) {
  const runner *r = ctx;
  dt_yemit *y = NULL;
  DT_TRY(dt_yemit_begin(f, &y));
  dt_yemit_map(y, 0);
  dt_graph_emit_yaml(r->graph, y);
  if (r->schedule != NULL) dt_schedule_emit_yaml(r->schedule, y);
  return dt_yemit_finish(y, "graph.yaml");
}

dt_status runner_write_trace_setup(runner *r, const char *dir) {
  dt_status st = DT_OK;
  char *arch = NULL, *man = NULL;
  strbuf sb = {0};
  if (r->rank != 0) return DT_OK;
  DT_CHECK(mkdir(dir, 0777) == 0 || errno == EEXIST, DT_ERR_IO, "cannot create trace folder %s: %s", dir, strerror(errno));
  DT_TRY(dt_write_emitted(dir, "config.yaml", runner_emit_config, r->cfg));
  DT_TRY(dt_write_emitted(dir, "graph.yaml", emit_graph, r));
  const dt_model *m = dt_task_model(r->task);
  const size_t al = dt_model_spec_json(dt_model_spec_of(m), NULL, 0), ml = dt_model_manifest(m, NULL, 0);
  DT_ALLOC_GOTO(arch, al + 1, "model description");
  DT_ALLOC_GOTO(man, ml + 1, "model manifest");
  dt_model_spec_json(dt_model_spec_of(m), arch, al + 1);
  dt_model_manifest(m, man, ml + 1);
  DT_TRY_GOTO(dt_write_atomic(dir, "model.json", arch, al));
  DT_TRY_GOTO(dt_write_atomic(dir, "manifest.tsv", man, ml));
  const dt_model_spec *ms = dt_model_spec_of(m);
  sb_printf(&sb, "{\"format\": 1, \"nodes\": %d, \"input_shape\": [%d, %d, %d], \"classes\": %d, \"num_params\": %zu, "
            "\"num_buffers\": %zu, \"problems\": [", r->n, ms->in_channels, ms->in_height, ms->in_width, ms->num_classes,
            dt_model_num_params(m), dt_model_num_buffers(m));
  for (int p = 0; p < r->cfg->num_problems; p++) {
    sb_printf(&sb, "%s", p > 0 ? ", " : "");
    sb_yaml_string(&sb, r->cfg->problems[p].problem_name);
  }
  sb_printf(&sb, "], \"node_samples\": [");
  for (int i = 0; i < r->n; i++) sb_printf(&sb, "%s%zu", i > 0 ? ", " : "", dt_split_size(&r->split, i));
  sb_printf(&sb, "]}\n");
  DT_CHECK_GOTO(!sb.failed, DT_ERR_MEMORY, "out of memory");
  DT_TRY_GOTO(dt_write_atomic(dir, "trace.json", sb.data, sb.len));
cleanup:
  sb_free(&sb);
  dt_free(arch);
  dt_free(man);
  return st;
}

dt_status runner_write_setup_files(runner *r) {
  if (!r->write) return DT_OK;
  dt_status st = DT_OK;
  strbuf sb = {0};
  DT_TRY(dt_write_emitted(r->outdir, "config.yaml", runner_emit_config, r->cfg));
  DT_TRY(dt_write_emitted(r->outdir, "graph.yaml", emit_graph, r));
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

/* summary.yaml's document (emitted, so quoting is libyaml's and every number reads back exactly). */
static void emit_summary(runner *r, int done, const char *end, dt_yemit *y) {
  char host[256], now[64];
  dt_comm_host(host, sizeof host);
  runner_wall_clock(now, sizeof now);
  dt_yemit_map(y, 0);
  dt_yemit_scalar(y, "dtrun_version", 0), dt_yemit_str(y, DT_VERSION);
  dt_yemit_scalar(y, "build", 0), dt_yemit_str(y, DT_GIT_DESCRIBE);
  dt_yemit_scalar(y, "blas_kernels", 0), dt_yemit_str(y, dt_cpu_kernel_name());
  dt_yemit_scalar(y, "blas_kernels_why", 0), dt_yemit_str(y, dt_cpu_kernel_reason());
  dt_yemit_scalar(y, "command", 0), dt_yemit_str(y, r->opt->command_line ? r->opt->command_line : "");
  dt_yemit_scalar(y, "ranks", 0), dt_yemit_int(y, r->size);
  dt_yemit_scalar(y, "hosts", 0), dt_yemit_int(y, dt_comm_num_hosts(r->comm));
  dt_yemit_scalar(y, "host_rank0", 0), dt_yemit_str(y, host);
  dt_yemit_scalar(y, "threads_rank0", 0), dt_yemit_int(y, dt_run_threads(r->comm, r->count));
  dt_yemit_scalar(y, "nodes", 0), dt_yemit_int(y, r->n);
  dt_yemit_scalar(y, "parameters", 0), dt_yemit_int(y, (long long)dt_task_dim(r->task));
  dt_yemit_scalar(y, "started", 0), dt_yemit_str(y, r->started);
  dt_yemit_scalar(y, "updated", 0), dt_yemit_str(y, now);
  dt_yemit_scalar(y, "wall_seconds", 0), dt_yemit_fixed(y, dt_time_now() - r->t_start, 3);
  dt_yemit_scalar(y, "status", 0), dt_yemit_str(y, end);
  dt_yemit_scalar(y, "checkpoints", 0), dt_yemit_int(y, r->num_ckpt);
  dt_yemit_scalar(y, "checkpoint_seconds", 0), dt_yemit_fixed(y, r->ckpt_seconds, 3);
  if (r->num_files > 0) {
    dt_yemit_scalar(y, "data_files", 0);
    dt_yemit_map(y, 0);
    for (int i = 0; i < r->num_files; i++) dt_yemit_scalar(y, r->files[i].role, 0), dt_yemit_str(y, r->files[i].sha256);
    dt_yemit_end(y);
  }
  dt_yemit_scalar(y, "problems", 0);
  dt_yemit_seq(y, 0);
  for (int p = 0; p < done; p++) {
    const dt_problem_config *pc = &r->cfg->problems[p];
    const problem_result *res = &r->res[p];
    dt_yemit_map(y, 0);
    dt_yemit_scalar(y, "problem_name", 0), dt_yemit_str(y, pc->problem_name);
    dt_yemit_scalar(y, "alg_name", 0), dt_yemit_str(y, pc->alg_name);
    dt_yemit_scalar(y, "status", 0), dt_yemit_str(y, res->status);
    dt_yemit_scalar(y, "rounds", 0), dt_yemit_int(y, pc->outer_iterations);
    dt_yemit_scalar(y, "rounds_completed", 0), dt_yemit_int(y, res->rounds_done);
    if (res->diverged_round > 0) dt_yemit_scalar(y, "diverged_at_round", 0), dt_yemit_int(y, res->diverged_round);
    dt_yemit_scalar(y, "wall_seconds", 0), dt_yemit_fixed(y, res->seconds, 3);
    dt_yemit_scalar(y, "time_compute", 0), dt_yemit_fixed(y, res->t_compute, 3);
    dt_yemit_scalar(y, "time_comm", 0), dt_yemit_fixed(y, res->t_comm, 3);
    dt_yemit_scalar(y, "time_eval", 0), dt_yemit_fixed(y, res->t_eval, 3);
    dt_yemit_scalar(y, "bytes_sent", 0), dt_yemit_fixed(y, res->bytes, 0);
    dt_yemit_scalar(y, "final", 0);
    dt_yemit_map(y, 0);
    static const char *const stat[3] = {"min", "mean", "max"};
    for (int c = 0; c < COL_TRAIN_LOSS; c++) {
      if (!runner_col_enabled(c, pc->metrics)) continue;
      dt_yemit_scalar(y, runner_col_names[c], 0);
      dt_yemit_map(y, 1);
      for (int k = 0; k < 3; k++) dt_yemit_scalar(y, stat[k], 0), dt_yemit_double(y, res->final[c][k]);
      dt_yemit_end(y);
    }
    if (r->net != NULL) { /* the nodes' simulated clocks at the last evaluation; max: when the slowest got there */
      dt_yemit_scalar(y, "sim_time", 0);
      dt_yemit_map(y, 1);
      for (int k = 0; k < 3; k++) dt_yemit_scalar(y, stat[k], 0), dt_yemit_double(y, res->final[COL_SIM_TIME][k]);
      dt_yemit_end(y);
    }
    if (r->faults != NULL) { /* every node's messages at the last evaluation; lost: sent but not arrived */
      static const char *const what[3] = {"sent", "lost", "received"};
      dt_yemit_scalar(y, "messages", 0);
      dt_yemit_map(y, 1);
      for (int k = 0; k < 3; k++) dt_yemit_scalar(y, what[k], 0), dt_yemit_fixed(y, res->final[COL_MSG_SENT + k][1] * r->n, 0);
      dt_yemit_end(y);
    }
    dt_yemit_end(y); /* final */
    dt_yemit_end(y); /* the problem */
  }
}

static void *files_job(void *p) {
  runner *r = p;
  r->data.files(r->data.owner, r->files, &r->num_files);
  return NULL;
}

void runner_files_begin(runner *r) {
  if (r->rank != 0 || r->data.files == NULL || r->num_files >= 0 || r->files_pending) return;
  r->num_files = 0;
  r->files_pending = pthread_create(&r->files_thread, NULL, files_job, r) == 0;
  if (!r->files_pending) r->num_files = -1; /* no thread: hashed when first needed */
}

void runner_files_join(runner *r) {
  if (!r->files_pending) return;
  pthread_join(r->files_thread, NULL);
  r->files_pending = 0;
}

void runner_files_end(runner *r) {
  if (r->files_pending) {
    runner_files_join(r);
  } else if (r->num_files < 0) {
    r->num_files = 0;
    if (r->data.files != NULL) files_job(r);
  }
  if (r->num_files < 0) r->num_files = 0;
  for (int k = 0; k < r->num_inputs; k++) r->files[r->num_files++] = r->inputs[k]; /* once: inputs emptied */
  r->num_inputs = 0;
}

dt_status runner_write_summary(runner *r, int done, const char *end) {
  if (!r->write) return DT_OK;
  runner_db_summary(r, done, end);
  runner_files_end(r);
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  DT_CHECK(mem != NULL, DT_ERR_MEMORY, "out of memory");
  fprintf(mem, "# dtrun's summary of this run folder (dtrun check shows it; dtrun resume continues the run)\n");
  if (r->num_files > 0)
    fprintf(mem, "# data_files: the SHA-256 of each file's %s, which resume checks\n",
            r->data.files_digest_of != NULL ? r->data.files_digest_of : "bytes");
  int diverged = 0;
  for (int p = 0; p < done; p++) diverged |= r->res[p].diverged_round > 0;
  if (diverged) fprintf(mem, "# diverged_at_round: the first round after which a node's training loss was NaN or infinite\n");
  dt_yemit *y = NULL;
  dt_status st = dt_yemit_begin(mem, &y);
  if (st == DT_OK) {
    emit_summary(r, done, end, y);
    st = dt_yemit_finish(y, "summary.yaml");
  }
  fclose(mem);
  if (st == DT_OK) st = dt_write_atomic(r->outdir, "summary.yaml", text, len);
  free(text);
  return st;
}

/* ---- a problem's files ---------------------------------------------------------------------- */

void runner_begin_csv(const runner *r, problem_run *pr) {
  for (int c = 0; c < NCOL; c++) pr->cols[c] = runner_col_enabled(c, pr->pc->metrics);
  pr->cols[COL_SIM_TIME] = r->net != NULL;
  pr->cols[COL_MSG_SENT] = pr->cols[COL_MSG_LOST] = pr->cols[COL_MSG_RECEIVED] = r->faults != NULL;
  if (r->rank != 0) return;
  sb_printf(&pr->csv, "round,node");
  for (int c = 0; c < NCOL; c++)
    if (pr->cols[c]) sb_printf(&pr->csv, ",%s", runner_col_names[c]);
  sb_printf(&pr->csv, "\n");
  if (pr->pc->metrics & DT_METRIC_CONSENSUS_MATRIX) sb_printf(&pr->consensus_csv, "round,i,j,distance\n");
}

/* Whether column c of node i was measured: loss and accuracy only on the nodes evaluated. */
static int measured(const runner *r, const problem_run *pr, int i, int c) {
  return (c != COL_VLOSS && c != COL_ACC) || runner_evaluates(r, pr->pc, i);
}

void runner_record_rows(const runner *r, problem_run *pr, int round, problem_result *res) {
  for (int i = 0; i < r->n; i++) {
    const double *row = r->all_rows + (size_t)i * NCOL;
    sb_printf(&pr->csv, "%d,%d", round, i);
    for (int c = 0; c < NCOL; c++) {
      if (!pr->cols[c]) continue;
      if (!measured(r, pr, i, c)) sb_printf(&pr->csv, ","); /* not evaluated (evaluation.sample): empty */
      else if (isnan(row[c])) sb_printf(&pr->csv, ",nan"); /* one spelling for every reader (not -nan) */
      else sb_printf(&pr->csv, c == COL_FPC || c == COL_BYTES ? ",%.0f" : ",%.9g", row[c]);
    }
    sb_printf(&pr->csv, "\n");
  }
  for (int c = 0; c < NCOL; c++) {
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    int nan = 0, k = 0;
    for (int i = 0; i < r->n; i++) {
      if (!measured(r, pr, i, c)) continue;
      double v = r->all_rows[(size_t)i * NCOL + c];
      nan |= isnan(v);
      mn = fmin(mn, v);
      mx = fmax(mx, v);
      sum += v;
      k++;
    }
    /* a NaN on any node makes every statistic NaN: fmin/fmax would skip it and report a healthy
     * (or an inf/-inf) range for a diverged problem */
    res->final[c][0] = nan ? NAN : mn;
    res->final[c][1] = nan ? NAN : sum / k;
    res->final[c][2] = nan ? NAN : mx;
  }
  res->rounds_done = round;
}

DT_MUST_USE static dt_status write_results(runner *r, problem_run *pr);

/* <problem>_models.npy: one row per node, its parameters and then its buffers (running
 * statistics), float32; and <problem>_models.tsv, the manifest naming every tensor of a row
 * (name, param or buffer, offset in the row, shape) in PyTorch's state_dict order. */
static dt_status save_models(runner *r, problem_run *pr) {
  const size_t d = dt_run_dim(pr->run), nb = dt_task_buffers(dt_run_task(pr->run))->dim, row = d + nb;
  const dt_model *m = dt_task_model(dt_run_task(pr->run));
  const float *const *rows;
  float *all = NULL, *part = NULL;
  char *manifest = NULL;
  dt_status st = DT_OK;
  if (r->write) DT_ALLOC_GOTO(all, (size_t)r->n * row, "models");
  if (r->write && nb > 0) DT_ALLOC_GOTO(part, (size_t)r->n * (nb > d ? nb : d), "models");
  DT_TRY_GOTO(dt_run_host_rows(pr->run, dt_run_theta(pr->run), &rows));
  DT_TRY_GOTO(dt_comm_node_gather(r->comm, r->n, rows, d, nb > 0 ? part : all));
  if (nb > 0) {
    for (int i = 0; r->write && i < r->n; i++) memcpy(all + (size_t)i * row, part + (size_t)i * d, sizeof(float) * d);
    DT_TRY_GOTO(dt_run_host_rows(pr->run, dt_task_buffers(dt_run_task(pr->run)), &rows));
    DT_TRY_GOTO(dt_comm_node_gather(r->comm, r->n, rows, nb, part));
    for (int i = 0; r->write && i < r->n; i++) memcpy(all + (size_t)i * row + d, part + (size_t)i * nb, sizeof(float) * nb);
  }
  if (r->write) {
    char name[DT_NAME_MAX + 32];
    snprintf(name, sizeof name, "%s_models.npy", pr->pc->problem_name);
    DT_TRY_GOTO(dt_write_npy(r->outdir, name, all, r->n, row));
    const size_t len = dt_model_manifest(m, NULL, 0);
    DT_ALLOC_GOTO(manifest, len + 1, "model manifest");
    dt_model_manifest(m, manifest, len + 1);
    snprintf(name, sizeof name, "%s_models.tsv", pr->pc->problem_name);
    DT_TRY_GOTO(dt_write_atomic(r->outdir, name, manifest, len));
  }
cleanup:
  dt_free(all);
  dt_free(part);
  dt_free(manifest);
  return st;
}

dt_status runner_write_problem_files(runner *r, problem_run *pr) {
  const dt_problem_config *pc = pr->pc;
  /* the results first: a models file that cannot be written (a full disk) must not cost them */
  dt_status st = write_results(r, pr);
  double ok = st == DT_OK;
  DT_TRY(dt_comm_allreduce_min_f64(r->comm, &ok, 1));
  DT_TRY(st);
  DT_CHECK(ok == 1, DT_ERR_IO, "rank 0 could not write %s's results", pc->problem_name);
  if (r->cfg->experiment.save_models && r->cfg->experiment.writeout) DT_TRY(save_models(r, pr));
  return DT_OK;
}

static dt_status write_results(runner *r, problem_run *pr) {
  const dt_problem_config *pc = pr->pc;
  if (!r->write) return DT_OK;
  DT_TRY(runner_db_status(r));
  char name[DT_NAME_MAX + 32];
  snprintf(name, sizeof name, "%s_results.csv", pc->problem_name);
  DT_CHECK(!pr->csv.failed, DT_ERR_MEMORY, "out of memory collecting results");
  DT_TRY(dt_write_atomic(r->outdir, name, pr->csv.data, pr->csv.len));
  if (pc->metrics & DT_METRIC_CONSENSUS_MATRIX) {
    snprintf(name, sizeof name, "%s_consensus.csv", pc->problem_name);
    DT_TRY(dt_write_atomic(r->outdir, name, pr->consensus_csv.data, pr->consensus_csv.len));
  }
  return DT_OK;
}

dt_status runner_write_solo(runner *r, const double *all) {
  const dt_solo_config *sc = &r->cfg->experiment.individual_training;
  strbuf sb = {0};
  sb_printf(&sb, "node,validation_loss,top1_accuracy\n");
  for (int i = 0; i < r->n; i++) {
    sb_printf(&sb, "%d,%.9g,%.9g\n", i, all[2 * i], all[2 * i + 1]);
    if (sc->verbose) runner_say(r, "  node %d: top1 %.4f, validation loss %.4f\n", i, all[2 * i + 1], all[2 * i]);
  }
  dt_status st = DT_OK;
  if (r->write) st = sb.failed ? DT_ERROR(DT_ERR_MEMORY, "out of memory") : dt_write_atomic(r->outdir, "solo_results.csv", sb.data, sb.len);
  sb_free(&sb);
  return st;
}
