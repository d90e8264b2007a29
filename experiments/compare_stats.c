/* `dtrun compare`, aggregation: curves of the same label (swept values but the seed), problem and
 * --against value form a group; across a group's seeds, the mean, standard deviation, 95%
 * interval (Student's t) and min–max of the last evaluation, and the x (round, samples, bytes,
 * seconds) at which each seed's mean first reaches a --target in the metric's direction. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare_impl.h"

/* Student's t at 97.5% for n - 1 degrees of freedom (n >= 2). */
static double t975(int n) {
  static const double t[] = {0, 0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
                             2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045};
  return n < (int)(sizeof t / sizeof t[0]) ? t[n] : 1.96;
}

void compare_stats(const double *v, int n, double out[5]) {
  double s = 0, mn = INFINITY, mx = -INFINITY;
  int nan = 0;
  for (int i = 0; i < n; i++) nan |= isnan(v[i]), s += v[i], mn = fmin(mn, v[i]), mx = fmax(mx, v[i]);
  const double mean = s / n;
  double ss = 0;
  for (int i = 0; i < n; i++) ss += (v[i] - mean) * (v[i] - mean);
  const double sd = n > 1 ? sqrt(ss / (n - 1)) : 0;
  out[0] = nan ? NAN : mean;
  out[1] = nan ? NAN : sd;
  out[2] = nan || n < 2 ? NAN : t975(n) * sd / sqrt(n);
  out[3] = nan ? NAN : mn;
  out[4] = nan ? NAN : mx;
}

/* ---- groups --------------------------------------------------------------------------------- */

static int same_group(const curve *a, const curve *b) {
  return strcmp(a->label, b->label) == 0 && strcmp(a->problem, b->problem) == 0 && strcmp(a->against, b->against) == 0 &&
         strcmp(a->facet, b->facet) == 0 &&
         a->pool == b->pool; /* the same experiment but the seed: not two sweeps' points that share a swept label */
}

/* Whether group gr already holds curve c's seed (a re-run of one seed is not a second seed). */
static int holds_seed(const table *t, const group *gr, const curve *c) {
  for (int m = 0; m < gr->n; m++)
    if (c->seed[0] != '\0' && strcmp(t->c[gr->members[m]].seed, c->seed) == 0) return 1;
  return 0;
}

void compare_group(const table *t, group *g, int *ng) {
  int n = 0;
  for (int i = 0; i < t->n; i++) {
    int k = 0;
    while (k < n && (!same_group(&t->c[g[k].members[0]], &t->c[i]) || holds_seed(t, &g[k], &t->c[i]))) k++;
    if (k == n) g[n].first = n, g[n++].n = 0;
    if (g[k].n < MAX_SEEDS) g[k].members[g[k].n++] = i;
  }
  *ng = n;
}

/* Groups that would show one label for one problem (a sweep of seeds and a run of the same
 * experiment whose seed the sweep holds, or two folders' points of one swept value) are told
 * apart: the first keeps the label, each later one adds its folder's name, then a number where
 * that is not enough. The table and the figure must never show two groups as one. */
static int same_label(const curve *a, const curve *b) {
  return strcmp(a->label, b->label) == 0 && strcmp(a->problem, b->problem) == 0 && strcmp(a->against, b->against) == 0 &&
         strcmp(a->facet, b->facet) == 0;
}

void compare_distinct_labels(table *t, group *g, int ng) {
  int *rank = calloc((size_t)ng + 1, sizeof *rank); /* 0: a label of its own; else its place among its namesakes */
  if (rank == NULL) return;
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < ng; i++) {
      int namesakes = 0, before = 0;
      for (int j = 0; j < ng; j++)
        if (j != i && same_label(&t->c[g[i].members[0]], &t->c[g[j].members[0]])) namesakes++, before += j < i;
      rank[i] = namesakes > 0 ? 1 + before : 0;
    }
    for (int i = 0; i < ng; i++) {
      if (rank[i] <= 1) continue; /* its own label, or the first of its namesakes */
      const curve *a = &t->c[g[i].members[0]];
      char label[sizeof a->label];
      if (pass == 0) snprintf(label, sizeof label, "%.400s (%.100s)", a->label, a->folder);
      else snprintf(label, sizeof label, "%.480s #%d", a->label, rank[i] - 1);
      for (int m = 0; m < g[i].n; m++) snprintf(t->c[g[i].members[m]].label, sizeof label, "%s", label);
    }
  }
  free(rank);
}

/* qsort has no context argument: the table cmp_against compares in. */
static const table *sort_table;

/* Groups of one problem together (in order of first appearance), by --against value within it. */
static int cmp_against(const void *x, const void *y) {
  const group *a = x, *b = y;
  const curve *ca = &sort_table->c[a->members[0]], *cb = &sort_table->c[b->members[0]];
  if (strcmp(ca->problem, cb->problem) != 0) {
    for (int i = 0; i < sort_table->n; i++) {
      if (strcmp(sort_table->c[i].problem, ca->problem) == 0) return -1;
      if (strcmp(sort_table->c[i].problem, cb->problem) == 0) return 1;
    }
  }
  char *ea, *eb;
  const double va = strtod(ca->against, &ea), vb = strtod(cb->against, &eb);
  if (*ea == '\0' && *eb == '\0' && ea != ca->against && eb != cb->against && va != vb) return va < vb ? -1 : 1;
  const int c = strcmp(ca->against, cb->against);
  return c != 0 ? c : a->first - b->first;
}

void compare_sort_against(const table *t, group *g, int ng) {
  sort_table = t;
  qsort(g, (size_t)ng, sizeof *g, cmp_against);
}

/* ---- a group's summary ---------------------------------------------------------------------- */

/* The x (round, samples, bytes, seconds) at which curve c's metric m first reaches target. */
static double to_target(const curve *c, int m, int xk, double target, int up) {
  for (int i = 0; i < c->n; i++)
    if (!isnan(c->mean[m][i]) && (up ? c->mean[m][i] >= target : c->mean[m][i] <= target)) return c->x[xk][i];
  return NAN;
}

/* Metric m's mean over the nodes at c's last evaluation (NaN without one, or without m). */
static double last_mean(const curve *c, int m) { return c->n && m >= 0 ? c->mean[m][c->n - 1] : NAN; }

/* The x where each target is reached, over gr's seeds: the count that do and their statistics. */
static void summarize_targets(const table *t, const group *gr, int xk, const dt_compare_options *opt, group_summary *s) {
  double reach[MAX_TARGETS][MAX_SEEDS];
  const char *metric = compare_target_metric(opt);
  const int m = compare_metric_index(t, metric), up = compare_metric_up(metric);
  for (int ti = 0; ti < opt->num_targets; ti++) {
    s->nreach[ti] = 0;
    for (int k = 0; k < gr->n && m >= 0; k++) {
      const double x = to_target(&t->c[gr->members[k]], m, xk, opt->targets[ti], up);
      if (!isnan(x)) reach[ti][s->nreach[ti]++] = x;
    }
    for (int j = 0; j < 5; j++) s->reach[ti][j] = NAN;
    if (s->nreach[ti] > 0) compare_stats(reach[ti], s->nreach[ti], s->reach[ti]);
  }
}

void compare_summarize(const table *t, const group *gr, int xk, const dt_compare_options *opt, group_summary *s) {
  const int vl = compare_metric_index(t, "validation_loss"), ce = compare_metric_index(t, "consensus_error");
  const curve *c0 = &t->c[gr->members[0]];
  double fin[MAX_SEEDS], vloss[MAX_SEEDS], cons[MAX_SEEDS];
  snprintf(s->status, sizeof s->status, "%s", c0->status);
  s->rounds = c0->rounds_done;
  s->mb = s->secs = 0;
  for (int k = 0; k < gr->n; k++) {
    const curve *cv = &t->c[gr->members[k]];
    fin[k] = last_mean(cv, 0);
    vloss[k] = last_mean(cv, vl);
    cons[k] = last_mean(cv, ce);
    s->mb += cv->bytes / 1e6 / gr->n;
    s->secs += cv->wall / gr->n;
    if (strcmp(cv->status, c0->status) != 0) snprintf(s->status, sizeof s->status, "mixed");
    s->rounds = cv->rounds_done < s->rounds ? cv->rounds_done : s->rounds;
  }
  compare_stats(fin, gr->n, s->fin);
  compare_stats(vloss, gr->n, s->vloss);
  compare_stats(cons, gr->n, s->cons);
  /* one run: min-max over its nodes; several: min-max over the seeds' means */
  s->lo = gr->n > 1 ? s->fin[3] : (c0->n ? c0->lo[0][c0->n - 1] : NAN);
  s->hi = gr->n > 1 ? s->fin[4] : (c0->n ? c0->hi[0][c0->n - 1] : NAN);
  summarize_targets(t, gr, xk, opt, s);
}
