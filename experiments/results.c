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
  DT_TRY(dt_graph_write_yaml(r->graph, f));
  return r->schedule != NULL ? dt_schedule_write_yaml(r->schedule, f) : DT_OK;
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

dt_status runner_write_summary(runner *r, int done, const char *end) {
  if (!r->write) return DT_OK;
  runner_db_summary(r, done, end);
  strbuf sb = {0};
  char host[256];
  dt_comm_host(host, sizeof host);
  sb_printf(&sb, "dtrun_version: \"%s\"\nbuild: \"%s\"\nblas_kernels: \"%s\"\ncommand: ", DT_VERSION, DT_GIT_DESCRIBE,
            dt_cpu_kernel_name());
  sb_yaml_string(&sb, r->opt->command_line ? r->opt->command_line : "");
  sb_printf(&sb, "\nranks: %d\nhosts: %d\nhost_rank0: ", r->size, dt_comm_num_hosts(r->comm));
  sb_yaml_string(&sb, host);
  sb_printf(&sb, "\nthreads_rank0: %d", dt_run_threads(r->comm, r->count));
  char now[64];
  runner_wall_clock(now, sizeof now);
  sb_printf(&sb, "\nnodes: %d\nparameters: %zu\nstarted: \"%s\"\nupdated: \"%s\"\nwall_seconds: %.3f\nstatus: %s\n", r->n,
            dt_task_dim(r->task), r->started, now, dt_time_now() - r->t_start, end);
  sb_printf(&sb, "checkpoints: %d\ncheckpoint_seconds: %.3f\n", r->num_ckpt, r->ckpt_seconds);
  if (r->num_files < 0) {
    r->num_files = 0;
    if (r->data.files != NULL) r->data.files(r->data.owner, r->files, &r->num_files);
  }
  if (r->num_files > 0)
    sb_printf(&sb, "data_files: # SHA-256 of each file's %s\n", r->data.files_digest_of != NULL ? r->data.files_digest_of : "bytes");
  for (int i = 0; i < r->num_files; i++) sb_printf(&sb, "  %s: %s\n", r->files[i].role, r->files[i].sha256);
  sb_printf(&sb, "\nproblems:\n");
  for (int p = 0; p < done; p++) {
    const dt_problem_config *pc = &r->cfg->problems[p];
    const problem_result *res = &r->res[p];
    sb_printf(&sb, "  - problem_name: ");
    sb_yaml_string(&sb, pc->problem_name);
    sb_printf(&sb, "\n    alg_name: %s\n    status: %s\n    rounds: %d\n    rounds_completed: %d\n", pc->alg_name, res->status,
              pc->outer_iterations, res->rounds_done);
    if (res->diverged_round > 0)
      sb_printf(&sb, "    diverged_at_round: %d # the first round after which a node's training loss was NaN or infinite\n",
                res->diverged_round);
    sb_printf(&sb, "    wall_seconds: %.3f\n    time_compute: %.3f\n    time_comm: %.3f\n    time_eval: %.3f\n    bytes_sent: %.0f\n",
              res->seconds, res->t_compute, res->t_comm, res->t_eval, res->bytes);
    sb_printf(&sb, "    final:\n");
    for (int c = 0; c < COL_TRAIN_LOSS; c++) {
      if (!runner_col_enabled(c, pc->metrics)) continue;
      sb_printf(&sb, "      %s: {", runner_col_names[c]);
      static const char *const stat[3] = {"min", "mean", "max"};
      for (int k = 0; k < 3; k++) {
        const double v = res->final[c][k];
        char num[32]; /* the shortest text that reads back exactly; YAML's .nan and .inf */
        sb_printf(&sb, "%s%s: %s", k ? ", " : "", stat[k], dt_yaml_double(v, num, sizeof num));
      }
      sb_printf(&sb, "}\n");
    }
    if (r->net != NULL) { /* the nodes' simulated clocks at the last evaluation; max: when the slowest got there */
      char a[32], b[32], c[32];
      sb_printf(&sb, "      sim_time: {min: %s, mean: %s, max: %s}\n", dt_yaml_double(res->final[COL_SIM_TIME][0], a, sizeof a),
                dt_yaml_double(res->final[COL_SIM_TIME][1], b, sizeof b), dt_yaml_double(res->final[COL_SIM_TIME][2], c, sizeof c));
    }
    if (r->faults != NULL) /* every node's messages at the last evaluation; lost: sent but not arrived */
      sb_printf(&sb, "      messages: {sent: %.0f, lost: %.0f, received: %.0f}\n", res->final[COL_MSG_SENT][1] * r->n,
                res->final[COL_MSG_LOST][1] * r->n, res->final[COL_MSG_RECEIVED][1] * r->n);
  }
  dt_status st = sb.failed ? DT_ERROR(DT_ERR_MEMORY, "out of memory") : dt_write_atomic(r->outdir, "summary.yaml", sb.data, sb.len);
  sb_free(&sb);
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
  const size_t d = pr->run.dim, nb = dt_task_buffers(pr->run.task)->dim, row = d + nb;
  const dt_model *m = dt_task_model(pr->run.task);
  const float *const *rows;
  float *all = NULL, *part = NULL;
  char *manifest = NULL;
  dt_status st = DT_OK;
  if (r->write) DT_ALLOC_GOTO(all, (size_t)r->n * row, "models");
  if (r->write && nb > 0) DT_ALLOC_GOTO(part, (size_t)r->n * (nb > d ? nb : d), "models");
  DT_TRY_GOTO(dt_run_host_rows(&pr->run, &pr->run.theta, &rows));
  DT_TRY_GOTO(dt_comm_node_gather(r->comm, r->n, rows, d, nb > 0 ? part : all));
  if (nb > 0) {
    for (int i = 0; r->write && i < r->n; i++) memcpy(all + (size_t)i * row, part + (size_t)i * d, sizeof(float) * d);
    DT_TRY_GOTO(dt_run_host_rows(&pr->run, dt_task_buffers(pr->run.task), &rows));
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
