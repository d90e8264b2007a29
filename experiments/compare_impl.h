/* The parts of `dtrun compare` (experiments/), one concern per file:
 *   compare_load.c   run and sweep folders read from their results.sqlite into curves
 *   compare_stats.c  curves grouped across seeds; mean, interval, min-max, rounds to a target
 *   compare_table.c  the table: terminal, CSV, Markdown or LaTeX
 *   compare_plot.c   figures: the series as JSON to python/dtrun (matplotlib), which draws them
 *   compare.c        the command: options, then the steps above in order */
#ifndef DT_COMPARE_IMPL_H
#define DT_COMPARE_IMPL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dt/run.h"
#include "dt/yaml.h"
#include "writer_impl.h"

enum {
  MAXM = 8,         /* metrics read per curve: up to 4 requested, then the table's extra columns */
  MAX_SEEDS = 256,  /* members of a group that count; more are left out */
  MAX_TARGETS = 8,  /* dt_compare_options.targets */
  NX = 5            /* x axes: round, samples, bytes, seconds, sim_time */
};
enum { X_SIM_TIME = 4 }; /* curve.x's simulated seconds (NaN without experiment.network) */

/* One problem of one run: the mean, min and max over its nodes of each metric at each evaluation. */
typedef struct curve {
  char label[512], problem[DT_NAME_MAX], alg[32], status[32], run_status[32];
  char against[64];                     /* the run's value of --against ("" without it) */
  char facet[64];                       /* the run's value of --facet ("" without it) */
  char swept[512];                      /* its swept values but the seed: "key\x1fvalue", '\x1e' between */
  int n, cap, rounds_done;
  double *x[NX];                        /* round, samples (per node), bytes (all nodes), seconds,
                                           sim_time (the slowest node's simulated clock) */
  double *mean[MAXM], *lo[MAXM], *hi[MAXM];
  int recorded[MAXM];
  double bytes, wall;
  uint64_t pool;   /* the run's archived config without its seed: runs that differ by the seed alone pool */
  char name[128];  /* experiment.name */
  char seed[32];   /* experiment.seed: a group never holds one seed twice (a re-run is no new seed) */
  char folder[128]; /* the folder compare was given (a run's or a sweep's): tells apart groups of one label */
  int plain;       /* labelled by its folder (a run, not a sweep's point with swept values) */
} curve;

typedef struct table {
  int nm;
  const char *metrics[MAXM]; /* the requested ones first, then validation_loss and consensus_error */
  int nreq;
  curve *c;
  int n, cap;
} table;

/* The curves of one label (swept values but the seed), problem and --against value. */
typedef struct group {
  int first, n; /* first: the group's order of first appearance; members[0..n): its curves in the table */
  int members[MAX_SEEDS];
} group;

/* A group's figures across its seeds. */
typedef struct group_summary {
  char status[64];   /* the members' status, or "mixed" */
  int rounds;        /* the fewest rounds a member completed */
  double fin[5], vloss[5], cons[5]; /* compare_stats of the last evaluation's metric 0, validation
                                       loss and consensus error */
  double lo, hi;     /* min-max: over the seeds' means, or over the nodes of a group of one */
  double mb, secs;   /* MB sent and wall seconds, mean over the seeds */
  int nreach[MAX_TARGETS];          /* the seeds that reach each target */
  double reach[MAX_TARGETS][5];     /* compare_stats of their x there (NaN where none does) */
} group_summary;

/* "round", "samples", "bytes", "seconds", "sim_time": the x axes (--x) in the order of curve.x. */
static inline const char *compare_x_name(int xk) {
  static const char *const names[NX] = {"round", "samples", "bytes", "seconds", "sim_time"};
  return names[xk];
}

/* Whether larger values of metric m are better (a target is reached from below). */
static inline int compare_metric_up(const char *m) {
  return strcmp(m, "top1_accuracy") == 0 || strcmp(m, "current_epoch") == 0 || strcmp(m, "forward_pass_count") == 0;
}

/* The metric --target counts in. */
static inline const char *compare_target_metric(const dt_compare_options *opt) {
  return opt->target_metric[0] ? opt->target_metric : "top1_accuracy";
}

/* t's index of metric name, or -1. */
static inline int compare_metric_index(const table *t, const char *name) {
  for (int m = 0; m < t->nm; m++)
    if (strcmp(t->metrics[m], name) == 0) return m;
  return -1;
}

/* ---- compare_load.c ---- */

/* Appends a curve per problem of every run in dir (a run or sweep folder) that passes --where to
 * t, reading the metrics t names. Errors: DT_ERR_IO for a folder that is not there (with the
 * nearest name beside it) or holds no results.sqlite; DT_ERR_USAGE for a --where or --against key
 * that the runs' configs lack. Not collective. */
DT_MUST_USE dt_status compare_load_dir(const char *dir, const dt_compare_options *opt, table *t);
/* Frees t's curves (t itself is the caller's). */
void compare_table_free(table *t);

/* ---- compare_stats.c ---- */

/* mean, std, 95% interval half-width, min, max of v[0..n) (all NaN if any value is). */
void compare_stats(const double *v, int n, double out[5]);
/* Groups t's curves into g (t->n entries; the caller's), in order of first appearance; their
 * number into *ng. */
void compare_group(const table *t, group *g, int *ng);
/* Gives groups that would show one label for one problem labels of their own: their folders'
 * names, then numbers. */
void compare_distinct_labels(table *t, group *g, int ng);
/* Sorts groups for --against: one problem's together, in order of first appearance, by --against
 * value (as numbers where both are) within it. */
void compare_sort_against(const table *t, group *g, int ng);
/* The summary of group gr over t's metric 0, the x axis xk and opt's targets. */
void compare_summarize(const table *t, const group *gr, int xk, const dt_compare_options *opt, group_summary *s);

/* ---- compare_table.c ---- */

/* Prints the table of the ng groups (their summaries sum) in opt->format to out, and with it (on
 * a terminal) which runs are not complete and what the target columns mean. */
void compare_print(const table *t, const group *g, const group_summary *sum, int ng, int xk, const dt_compare_options *opt,
                   FILE *out);

/* ---- compare_plot.c ---- */

/* The figure of opt->plot: one panel per requested metric over x axis xk, a mean line with a band
 * per group. Errors: DT_ERR_UNSUPPORTED without gnuplot, DT_ERR_IO when it fails. */
DT_MUST_USE dt_status compare_plot(const table *t, const group *g, int ng, const dt_compare_options *opt, int xk);
/* The figure of --against: each target's x against the key's value, from the summaries. Errors as
 * compare_plot, and DT_ERR_DATA when no group reaches any target. */
DT_MUST_USE dt_status compare_plot_against(const table *t, const group *g, const group_summary *sum, int ng,
                                           const dt_compare_options *opt, int xk);

/* --where (and --against) on a run's archived config root: *keep = 0 when a --where value does not
 * match; value = the --against key's value. An unknown key is a usage error naming the nearest. */
DT_MUST_USE dt_status compare_config_filter(const dt_compare_options *opt, const dt_ynode *root, int *keep, char *value, size_t size);

/* Runs from different folders whose configs differ by the seed alone (a run per seed, or sweeps
 * of the same points) are one group: plain runs then take their experiment's name as label. */
void compare_pool_labels(table *t);

#endif
