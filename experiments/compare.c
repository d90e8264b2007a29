/* `dtrun compare DIR...`: run and sweep folders read from their results.sqlite, grouped by swept
 * values (all but experiment.seed) and problem, summarized across each group's seeds, printed as
 * a table (terminal, CSV, Markdown or LaTeX) and optionally drawn as a figure. This file holds
 * the command's options (--metric, --x) and its steps in order; compare_impl.h lists the files
 * that do each step. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compare_impl.h"

/* The evaluations columns a metric may name. */
static const char *const metric_cols[] = {"top1_accuracy", "validation_loss", "consensus_error", "consensus_error_raw",
                                          "train_loss", "current_epoch", "forward_pass_count"};
enum { NMETRIC_COLS = sizeof metric_cols / sizeof metric_cols[0] };

/* --x: its index among the x axes (round without it). */
static dt_status parse_x(const dt_compare_options *opt, int *xk) {
  *xk = 0;
  if (opt->x == NULL) return DT_OK;
  while (*xk < NX && strcmp(compare_x_name(*xk), opt->x) != 0) (*xk)++;
  DT_CHECK(*xk < NX, DT_ERR_USAGE, "--x %s: expected round, samples, bytes, seconds or sim_time", opt->x);
  return DT_OK;
}

/* --metric's metrics into t (at most 4), then the table's own columns that are not among them. */
static dt_status parse_metrics(const dt_compare_options *opt, table *t) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", opt->metric ? opt->metric : "top1_accuracy");
  const size_t len = strlen(buf);
  DT_CHECK(len > 0 && buf[0] != ',' && buf[len - 1] != ',' && strstr(buf, ",,") == NULL, DT_ERR_USAGE,
           "--metric '%s': an empty metric name; the metrics are top1_accuracy, validation_loss, consensus_error, "
           "consensus_error_raw, train_loss, current_epoch, forward_pass_count", buf);
  char *save = NULL;
  for (char *m = strtok_r(buf, ",", &save); m != NULL; m = strtok_r(NULL, ",", &save)) {
    int k = 0;
    while (k < NMETRIC_COLS && strcmp(metric_cols[k], m) != 0) k++;
    if (k == NMETRIC_COLS) {
      const char *near = dt_nearest(m, metric_cols, NMETRIC_COLS);
      return DT_ERROR(DT_ERR_USAGE, "--metric %s: no such metric%s%s%s; the metrics are top1_accuracy, validation_loss, consensus_error, "
                      "consensus_error_raw, train_loss, current_epoch, forward_pass_count", m, near ? "; did you mean " : "",
                      near ? near : "", near ? "?" : "");
    }
    DT_CHECK(t->nm < 4, DT_ERR_USAGE, "--metric: at most 4 metrics");
    t->metrics[t->nm++] = metric_cols[k];
  }
  t->nreq = t->nm;
  const char *target = opt->target_metric[0] ? opt->target_metric : "top1_accuracy";
  int tk = 0;
  while (tk < NMETRIC_COLS && strcmp(metric_cols[tk], target) != 0) tk++;
  if (tk == NMETRIC_COLS) {
    const char *near = dt_nearest(target, metric_cols, NMETRIC_COLS);
    return DT_ERROR(DT_ERR_USAGE, "--target %s=...: no such metric%s%s%s; the metrics are top1_accuracy, validation_loss, "
                    "consensus_error, consensus_error_raw, train_loss, current_epoch, forward_pass_count", target,
                    near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
  }
  const char *extra[] = {"validation_loss", "consensus_error", "top1_accuracy", metric_cols[tk]};
  for (int e = 0; e < 4; e++) {
    int have = 0;
    for (int m = 0; m < t->nm; m++) have |= strcmp(t->metrics[m], extra[e]) == 0;
    if (!have) t->metrics[t->nm++] = extra[e];
  }
  return DT_OK;
}

/* Every requested metric was recorded by some run (a problem's metrics: list may leave it out). */
static dt_status check_recorded(const table *t) {
  for (int m = 0; m < t->nreq; m++) {
    int any = 0;
    for (int i = 0; i < t->n; i++) any |= t->c[i].recorded[m];
    DT_CHECK(any, DT_ERR_USAGE, "--metric %s: no run in these folders recorded it (see its problems' metrics: list)", t->metrics[m]);
  }
  return DT_OK;
}

/* --plot: rounds to targets against --against's value, or the metrics over x axis xk. */
static dt_status draw(const table *t, const group *g, const group_summary *sum, int ng, const dt_compare_options *opt, int xk,
                      FILE *out) {
  if (opt->against != NULL) {
    DT_CHECK(opt->num_targets > 0, DT_ERR_USAGE, "--plot with --against draws rounds to targets: give --target X[,X...]");
    DT_TRY(compare_plot_against(t, g, sum, ng, opt, xk));
  } else {
    DT_TRY(compare_plot(t, g, ng, opt, xk));
  }
  if (opt->format == DT_COMPARE_TABLE) fprintf(out, "plot written to %s\n", opt->plot);
  return DT_OK;
}

/* The figure's options ask for a figure, and --ylim M=LO:HI names a metric of it. */
static dt_status check_figure_options(const dt_compare_options *opt, const table *t) {
  const char *given = opt->facet ? "--facet" : opt->num_labels ? "--label" : opt->title ? "--title" : opt->xlim ? "--xlim"
                      : opt->num_ylim ? "--ylim" : opt->log ? "--log" : opt->size ? "--size" : opt->band ? "--band" : NULL;
  DT_CHECK(given == NULL || opt->plot != NULL, DT_ERR_USAGE, "%s shapes a figure: give --plot FILE.pdf|.svg|.png too", given);
  DT_CHECK(opt->facet == NULL || opt->against == NULL, DT_ERR_USAGE,
           "--facet draws metrics over --x; --against draws targets against a key: give one of them");
  for (int i = 0; i < opt->num_ylim; i++) {
    const char *eq = strchr(opt->ylim[i], '=');
    if (eq == NULL) {
      DT_CHECK(opt->num_ylim == 1, DT_ERR_USAGE, "--ylim %s: with several --ylim, each names its metric (M=LO:HI)", opt->ylim[i]);
      continue;
    }
    int m = 0;
    while (m < t->nreq && (strlen(t->metrics[m]) != (size_t)(eq - opt->ylim[i]) || strncmp(t->metrics[m], opt->ylim[i], eq - opt->ylim[i]) != 0)) m++;
    DT_CHECK(m < t->nreq, DT_ERR_USAGE, "--ylim %s: %.*s is not one of the figure's metrics (--metric)", opt->ylim[i],
             (int)(eq - opt->ylim[i]), opt->ylim[i]);
  }
  return DT_OK;
}

/* Each folder once: the same run given twice would count as two seeds of itself. */
static dt_status check_distinct(const char *const *dirs, int ndirs) {
  for (int a = 0; a < ndirs; a++) {
    char ra[PATH_MAX], rb[PATH_MAX];
    if (realpath(dirs[a], ra) == NULL) continue; /* a missing folder is reported when it is read */
    for (int b = 0; b < a; b++)
      DT_CHECK(realpath(dirs[b], rb) == NULL || strcmp(ra, rb) != 0, DT_ERR_USAGE,
               "%s and %s are the same folder: give each run or sweep once (its runs would count as seeds of themselves)",
               dirs[b], dirs[a]);
  }
  return DT_OK;
}

/* --plot's file can be made: its folder exists and is writable, before anything is read. */
static dt_status check_plot_path(const char *plot) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", plot);
  char *slash = strrchr(dir, '/');
  if (slash == NULL) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  struct stat sb;
  DT_CHECK(stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode), DT_ERR_USAGE, "--plot %s: the folder %s does not exist", plot, dir);
  DT_CHECK(access(dir, W_OK) == 0, DT_ERR_USAGE, "--plot %s: the folder %s is not writable", plot, dir);
  return DT_OK;
}

dt_status dt_compare(const char *const *dirs, int ndirs, const dt_compare_options *opt, FILE *out) {
  table t;
  memset(&t, 0, sizeof t);
  dt_status st = DT_OK;
  group *g = NULL;
  group_summary *sum = NULL;
  int xk, ng = 0;
  DT_TRY(parse_x(opt, &xk));
  DT_TRY(parse_metrics(opt, &t));
  DT_TRY(check_figure_options(opt, &t));
  DT_TRY(check_distinct(dirs, ndirs));
  if (opt->plot != NULL) DT_TRY(check_plot_path(opt->plot));
  for (int d = 0; d < ndirs; d++) DT_TRY_GOTO(compare_load_dir(dirs[d], opt, &t));
  DT_CHECK_GOTO(t.n > 0, DT_ERR_DATA, "no problem has results in %s%s%s", dirs[0], ndirs > 1 ? " and the other folders" : "",
                opt->num_where > 0 ? " that pass --where" : "");
  DT_CHECK_GOTO((g = calloc((size_t)t.n, sizeof *g)) != NULL, DT_ERR_MEMORY, "out of memory");
  compare_pool_labels(&t);
  compare_group(&t, g, &ng);
  compare_distinct_labels(&t, g, ng);
  DT_TRY_GOTO(check_recorded(&t));
  for (int i = 0; i < t.n && xk == X_SIM_TIME; i++) /* a simulated clock in every run */
    DT_CHECK_GOTO(t.c[i].n == 0 || !isnan(t.c[i].x[X_SIM_TIME][0]), DT_ERR_USAGE,
                  "--x sim_time: %s has no simulated clock (its config has no experiment.network)", t.c[i].label);
  if (opt->against != NULL) compare_sort_against(&t, g, ng);
  DT_CHECK_GOTO((sum = calloc((size_t)ng, sizeof *sum)) != NULL, DT_ERR_MEMORY, "out of memory");
  for (int gi = 0; gi < ng; gi++) compare_summarize(&t, &g[gi], xk, opt, &sum[gi]);
  compare_print(&t, g, sum, ng, xk, opt, out);
  if (opt->plot != NULL) DT_TRY_GOTO(draw(&t, g, sum, ng, opt, xk, out));
cleanup:
  compare_table_free(&t);
  free(g);
  free(sum);
  return st;
}
