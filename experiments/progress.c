/* What the terminal shows, on rank 0 only: messages (runner_say), a progress bar with an ETA
 * when stdout is a terminal, the verbose evaluation lines, and the closing table. With --quiet
 * only the closing table is printed. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner_impl.h"

void runner_say(const runner *r, const char *fmt, ...) {
  if (r->rank != 0 || r->opt->quiet) return;
  va_list ap;
  va_start(ap, fmt);
  if (r->tty) fputs("\r\033[K", stdout);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

int runner_progress_wanted(int mode, int launched) {
  if (mode != DT_PROGRESS_AUTO) return mode == DT_PROGRESS_ALWAYS;
  if (!isatty(STDOUT_FILENO)) return 0;
  if (!launched) return 1;
  /* mpirun starts the ranks of its own host itself: its stdout is /proc/PPID/fd/1. A rank whose
   * parent is not mpirun (orted on another host, slurmstepd) reads a pipe or a socket there. */
  char link[64], target[256];
  snprintf(link, sizeof link, "/proc/%ld/fd/1", (long)getppid());
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return 0;
  target[n] = '\0';
  return strncmp(target, "/dev/pts/", 9) == 0 || strncmp(target, "/dev/tty", 8) == 0;
}

/* "m:ss" or "h:mm:ss" */
static const char *clock_text(double s, char *buf, size_t size);
const char *runner_clock_text(double s) {
  static char buf[32];
  if (s < 59.5) { /* under a minute: seconds, as precise as they are worth */
    snprintf(buf, sizeof buf, s < 0.095 ? "%.2f s" : s < 9.95 ? "%.1f s" : "%.0f s", s > 0 ? s : 0);
    return buf;
  }
  return clock_text(s, buf, sizeof buf);
}
static const char *clock_text(double s, char *buf, size_t size) {
  const long t = s > 0 && s < 1e9 ? (long)(s + 0.5) : 0;
  if (t >= 3600) snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

double runner_eta(const runner *r, int p, int k, int start, double t_rounds) {
  const dt_problem_config *pc = &r->cfg->problems[p];
  const double now = dt_time_now(), here = (k + 1 - start) / fmax(now - t_rounds, 1e-9); /* this problem's rounds/s */
  if (k + 1 - start <= 0) return -1;
  double left = (pc->outer_iterations - k - 1) / here, later = 0;
  for (int q = p + 1; q < r->cfg->num_problems; q++) later += r->cfg->problems[q].outer_iterations;
  /* the rounds to come at the run's mean rate, setup and evaluations included (this problem's
   * rounds alone until one has finished) */
  left += later * (r->eta_rounds > 0 ? r->eta_seconds / r->eta_rounds : 1 / here);
  if (r->opt->sweep_points_left > 0) {
    double per_point = r->opt->sweep_seconds_per_point;
    if (per_point <= 0) per_point = now - r->t_start + left; /* the first point: this one's estimate */
    left += r->opt->sweep_points_left * per_point;
  }
  return left;
}

void runner_progress(const runner *r, const dt_problem_config *pc, int k, int start, double t_start, double t_rounds) {
  if (!r->tty || r->rank != 0 || r->opt->quiet) return;
  static double last = 0;
  double now = dt_time_now();
  if (now - last < 0.2 && k + 1 < pc->outer_iterations) return;
  last = now;
  const int width = 24, done = (int)((long)width * (k + 1) / pc->outer_iterations);
  /* the rate of the rounds run since the round loop began: the round-0 evaluation and a resumed
   * run's earlier rounds do not count */
  const double rate = (k + 1 - start) / fmax(now - t_rounds, 1e-9);
  char el[32], eta[32], all[32];
  printf("\r\033[K%-12.12s [", pc->problem_name);
  for (int i = 0; i < width; i++) putchar(i < done ? '=' : ' ');
  printf("] %d/%d  %s elapsed  %.3g rounds/s  ETA %s", k + 1, pc->outer_iterations, clock_text(now - t_start, el, sizeof el), rate,
         clock_text((pc->outer_iterations - k - 1) / rate, eta, sizeof eta));
  const int p = (int)(pc - r->cfg->problems);
  const double left = runner_eta(r, p, k, start, t_rounds);
  if (left >= 0 && (p + 1 < r->cfg->num_problems || r->opt->sweep_points_left > 0))
    printf(", %s %s", r->opt->sweep_points_left > 0 ? "sweep" : "run", clock_text(left, all, sizeof all));
  fflush(stdout);
}

/* One line per evaluation, under 100 columns with every metric: the min-max over nodes. */
void runner_print_evaluation(const runner *r, const dt_problem_config *pc, int round, const problem_result *res) {
  if (!pc->verbose_evals) return;
  char line[512];
  int used = snprintf(line, sizeof line, "%-12.12s %5d", pc->problem_name, round);
  if (pc->metrics & DT_METRIC_VALIDATION_LOSS)
    used += snprintf(line + used, sizeof line - used, " | loss %.4f-%.4f", res->final[COL_VLOSS][0], res->final[COL_VLOSS][2]);
  if (pc->metrics & DT_METRIC_TOP1_ACCURACY)
    used += snprintf(line + used, sizeof line - used, " | top1 %.4f-%.4f", res->final[COL_ACC][0], res->final[COL_ACC][2]);
  if (pc->metrics & DT_METRIC_CONSENSUS_ERROR)
    used += snprintf(line + used, sizeof line - used, " | cons %.1e-%.1e", res->final[COL_CONS][0], res->final[COL_CONS][2]);
  if (pc->metrics & DT_METRIC_CURRENT_EPOCH)
    used += snprintf(line + used, sizeof line - used, " | epoch %.1f-%.1f", res->final[COL_EPOCH][0], res->final[COL_EPOCH][2]);
  if (r->net != NULL) /* the simulated clock: the slowest node's */
    used += snprintf(line + used, sizeof line - used, " | sim %.4gs", res->final[COL_SIM_TIME][2]);
  runner_say(r, "%s\n", line);
}

void runner_print_table(const runner *r, int done) {
  if (r->rank != 0 || r->opt->calibration != NULL) return; /* check --time prints its own */
  if (r->tty && !r->opt->quiet) fputs("\r\033[K", stdout);
  printf("%-16s %-12s %-11s %8s %10s %10s %12s %9s\n", "problem", "algorithm", "status", "rounds", "top1 mean", "val loss", "consensus",
         "seconds");
  for (int p = 0; p < done; p++) {
    const problem_result *res = &r->res[p];
    const dt_problem_config *pc = &r->cfg->problems[p];
    char acc[32] = "-", vloss[32] = "-", cons[32] = "-"; /* "-": not recorded */
    if (pc->metrics & DT_METRIC_TOP1_ACCURACY) fmt_number(acc, sizeof acc, "%.4f", res->final[COL_ACC][1]);
    if (pc->metrics & DT_METRIC_VALIDATION_LOSS) fmt_number(vloss, sizeof vloss, "%.4f", res->final[COL_VLOSS][1]);
    if (pc->metrics & DT_METRIC_CONSENSUS_ERROR) fmt_number(cons, sizeof cons, "%.3e", res->final[COL_CONS][1]);
    printf("%-16s %-12s %-11s %8d %10s %10s %12s %9.2f\n", pc->problem_name, pc->alg_name, res->status, res->rounds_done, acc, vloss,
           cons, res->seconds);
  }
  if (r->write) printf("results in %s\n", r->outdir);
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A line of the profile's list: label (a new line) or the next item, wrapped under 100 columns
 * with the items indented under the first. */
static void list_item(int *col, const char *label, const char *item) {
  static int first; /* the next item is the line's first after its label */
  const int n = (int)strlen(item);
  if (label != NULL) {
    *col = printf("  %-13s %s", label, item);
    first = 1;
    return;
  }
  const char *sep = first ? "" : ",";
  first = 0;
  if (*col + (int)strlen(sep) + 1 + n > 100) {
    printf("%s\n%16s", sep, "");
    *col = 16;
  } else {
    *col += printf("%s ", sep);
  }
  *col += printf("%s", item);
}

dt_status runner_print_profile(const runner *r, const problem_run *pr, const problem_result *res, int start) {
  const dt_problem_config *pc = pr->pc;
  const int rounds = pr->rounds_run - start;
  if (rounds <= 0) return DT_OK;
  double *t = pr->round_seconds + start;
  /* a round takes as long as its slowest rank; per-rank totals show the imbalance */
  double tot[3] = {res->t_compute, res->t_comm, res->t_eval}, lo[3] = {tot[0], tot[1], tot[2]};
  if (r->size > 1) {
    DT_TRY(dt_comm_allreduce_max_f64(r->comm, t, rounds));
    DT_TRY(dt_comm_allreduce_max_f64(r->comm, tot, 3));
    DT_TRY(dt_comm_allreduce_min_f64(r->comm, lo, 3));
  }
  /* the phases: each one the slowest rank's, over this run's rounds */
  double ph[DT_PHASE_COUNT], ph_sum = 0;
  for (int q = 0; q < DT_PHASE_COUNT; q++) ph[q] = pr->prof.seconds[q];
  if (r->size > 1) DT_TRY(dt_comm_allreduce_max_f64(r->comm, ph, DT_PHASE_COUNT));
  for (int q = 0; q < DT_PHASE_COUNT; q++) ph_sum += ph[q];
  /* and, where the backend times its layers, each layer's forward and backward */
  const dt_model *m = dt_task_model(r->task);
  const int L = dt_model_num_layers(m) < DT_PROFILE_LAYERS ? dt_model_num_layers(m) : DT_PROFILE_LAYERS;
  double lt[2 * DT_PROFILE_LAYERS], lt_sum = 0;
  for (int l = 0; l < L; l++) lt[l] = pr->prof.layer_seconds[0][l], lt[L + l] = pr->prof.layer_seconds[1][l];
  if (r->size > 1 && L > 0) DT_TRY(dt_comm_allreduce_max_f64(r->comm, lt, 2 * L));
  for (int l = 0; l < 2 * L; l++) lt_sum += lt[l];
  if (r->rank != 0 || r->opt->quiet) return DT_OK;
  double *sorted = malloc(sizeof(double) * (size_t)rounds), sum = 0;
  DT_CHECK(sorted != NULL, DT_ERR_MEMORY, "out of memory");
  for (int k = 0; k < rounds; k++) sorted[k] = t[k], sum += t[k];
  qsort(sorted, (size_t)rounds, sizeof *sorted, cmp_double);
  /* totals cover every round, a resumed run's earlier ones too; the distribution the rounds run here */
  const int all = pr->rounds_run, freq = pc->evaluate_frequency;
  const double ms = 1e3 / all;
  const int evals = all / freq + 1 + (all % freq != 0);
  printf("%s profile, %d rounds on %d nodes, %d rank%s:\n", pc->problem_name, all, r->n, r->size, r->size > 1 ? "s" : "");
  printf("  round time    mean %.4g ms, median %.4g, p90 %.4g, p99 %.4g, max %.4g (%d rounds%s)\n", sum * 1e3 / rounds,
         sorted[rounds / 2] * 1e3, sorted[(int)(0.9 * (rounds - 1))] * 1e3, sorted[(int)(0.99 * (rounds - 1))] * 1e3,
         sorted[rounds - 1] * 1e3, rounds, r->size > 1 ? ", each the slowest rank's" : "");
  printf("  per round     compute %.4g ms, communication %.4g ms", tot[0] * ms, tot[1] * ms);
  if (r->size > 1)
    printf("\n  over ranks    compute %.4g-%.4g ms, communication %.4g-%.4g ms per round", lo[0] * ms, tot[0] * ms, lo[1] * ms,
           tot[1] * ms);
  printf("\n  evaluation    %d evaluations, %.4g ms each, %.4g s in all\n", evals, tot[2] * 1e3 / evals, tot[2]);
  char item[96];
  int col = 0;
  if (ph_sum > 0) { /* per round, each phase's work waited for at its end; "other" last */
    list_item(&col, "phases", "per round:");
    for (int q = 1; q <= DT_PHASE_COUNT; q++) {
      const int k = q % DT_PHASE_COUNT;
      if (ph[k] <= 0) continue;
      snprintf(item, sizeof item, "%s %.4g ms (%.0f%%)", dt_phase_names[k], ph[k] * 1e3 / rounds, 100.0 * ph[k] / ph_sum);
      list_item(&col, NULL, item);
    }
    printf("\n");
  }
  for (int dir = 0; dir < 2 && lt_sum > 0; dir++) { /* the slowest rank's, per training round */
    list_item(&col, dir == 0 ? "forward" : "backward", "by layer:");
    for (int l = 0; l < L; l++) {
      snprintf(item, sizeof item, "%d %s %.3g ms", l, dt_layer_kind_name(dt_model_layer(m, l)->kind), lt[dir * L + l] * 1e3 / rounds);
      list_item(&col, NULL, item);
    }
    printf("\n");
  }
  printf("  traffic       %.4g MB per round, %.4g MB in all\n", res->bytes / 1e6 / all, res->bytes / 1e6);
  if (dt_run_events(pr->run) > 0) /* the asynchronous engine's: every node's step ends and message arrivals */
    printf("  events        %llu, %.4g per second of the rounds' wall time (evaluations aside)\n", (unsigned long long)dt_run_events(pr->run),
           (double)dt_run_events(pr->run) / fmax(res->seconds - res->t_eval, 1e-9));
  const double wall = fmax(res->seconds, 1e-9), pct = 100.0 / wall;
  printf("  wall          %.4g s: compute %.1f%%, communication %.1f%%, evaluation %.1f%%, other %.1f%%\n", res->seconds,
         tot[0] * pct, tot[1] * pct, tot[2] * pct, fmax(wall - tot[0] - tot[1] - tot[2], 0.0) * pct);
  fflush(stdout);
  free(sorted);
  return DT_OK;
}
