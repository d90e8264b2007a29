/* What the terminal shows, on rank 0 only: messages (runner_say), a progress bar with an ETA
 * when stdout is a terminal, the verbose evaluation lines, and the closing table. With --quiet
 * only the closing table is printed. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
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

void runner_progress(const runner *r, const dt_problem_config *pc, int k, double t0) {
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

void runner_print_evaluation(const runner *r, const dt_problem_config *pc, int round, const problem_result *res) {
  if (!pc->verbose_evals) return;
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
  runner_say(r, "%s\n", line);
}

void runner_print_table(const runner *r, int done) {
  if (r->rank != 0) return;
  if (r->tty && !r->opt->quiet) fputs("\r\033[K", stdout);
  printf("%-16s %-12s %-11s %8s %10s %10s %12s %9s\n", "problem", "algorithm", "status", "rounds", "top1 mean", "val loss", "consensus",
         "seconds");
  for (int p = 0; p < done; p++) {
    const problem_result *res = &r->res[p];
    const dt_problem_config *pc = &r->cfg->problems[p];
    char acc[32], vloss[32], cons[32];
    printf("%-16s %-12s %-11s %8d %10s %10s %12s %9.2f\n", pc->problem_name, pc->alg_name, res->status, res->rounds_done,
           fmt_number(acc, sizeof acc, "%.4f", res->final[COL_ACC][1]), fmt_number(vloss, sizeof vloss, "%.4f", res->final[COL_VLOSS][1]),
           fmt_number(cons, sizeof cons, "%.3e", res->final[COL_CONS][1]), res->seconds);
  }
  if (r->write) printf("results in %s\n", r->outdir);
}
