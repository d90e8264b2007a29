/* `dtrun compare --plot`: figures through gnuplot's cairo terminals (PDF, SVG, PNG), drawn from a
 * script and data files in a temporary folder. Over rounds (or samples, bytes, seconds): one
 * panel per metric, a mean line with a band per group, a colour per algorithm and a dash per
 * group. With --against: each target's x against the key's value, a colour per problem and a
 * dash and marker per target. A paper column's size by default, a 16:9 slide's with --size slide. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare_impl.h"

/* A colour per algorithm, in order of first appearance. */
static const char *const plot_colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

static int is_slide(const dt_compare_options *opt) { return opt->size != NULL && strcmp(opt->size, "slide") == 0; }

/* ---- gnuplot -------------------------------------------------------------------------------- */

/* A gnuplot script in a new temporary folder dir ("/tmp/dtrun_plot_XXXXXX"), begun with the
 * cairo terminal of --plot's extension at wi x hi inches (a slide's fonts larger) and its output. */
static dt_status gp_begin(const dt_compare_options *opt, double wi, double hi, char *dir, FILE **out) {
  DT_CHECK(system("command -v gnuplot >/dev/null 2>&1") == 0, DT_ERR_UNSUPPORTED,
           "--plot needs gnuplot, which is not installed: apt-get install gnuplot-nox (scripts/setup.sh installs it)");
  DT_CHECK(mkdtemp(dir) != NULL, DT_ERR_IO, "cannot create a temporary folder: %s", strerror(errno));
  char script[128];
  snprintf(script, sizeof script, "%s/plot.gp", dir);
  FILE *f = fopen(script, "w");
  DT_CHECK(f != NULL, DT_ERR_IO, "cannot write %s", script);
  const char *ext = strrchr(opt->plot, '.');
  const int slide = is_slide(opt);
  if (strcmp(ext, ".pdf") == 0) fprintf(f, "set terminal pdfcairo size %gin,%gin font 'Sans,%d' noenhanced\n", wi, hi, slide ? 12 : 7);
  else if (strcmp(ext, ".svg") == 0) fprintf(f, "set terminal svg size %d,%d font 'Sans,%d' noenhanced dynamic\n", (int)(wi * 96), (int)(hi * 96), slide ? 16 : 10);
  else fprintf(f, "set terminal pngcairo size %d,%d font 'Sans,%d' noenhanced\n", (int)(wi * 200), (int)(hi * 200), slide ? 24 : 14);
  fprintf(f, "set output '%s'\nset grid lc rgb '#dddddd'\n", opt->plot);
  *out = f;
  return DT_OK;
}

/* A series title in gnuplot's single quotes (a quote doubled). */
static void gp_title(FILE *f, const char *title) {
  fputs(" title '", f);
  for (const char *q = title; *q; q++) fprintf(f, *q == '\'' ? "''" : "%c", *q);
  fputc('\'', f);
}

/* Closes the script, draws it and removes the folder (kept, and named, when gnuplot fails). */
static dt_status gp_finish(const dt_compare_options *opt, const char *dir, FILE *f) {
  fclose(f);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "gnuplot '%s/plot.gp' 2>&1", dir);
  DT_CHECK(system(cmd) == 0, DT_ERR_IO, "gnuplot failed to draw %s (script: %s/plot.gp)", opt->plot, dir);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return DT_OK;
}

/* ---- metrics over rounds -------------------------------------------------------------------- */

/* The legend's keys in order of first appearance: algorithms pick the colour, labels the dash. */
typedef struct legend {
  char algs[8][32];
  int nalg;
  char labels[64][512];
  int nlab;
} legend;

/* name's index among the n keys of width bytes at keys, added when new and fewer than max (n
 * when it is new and there is no room). */
static int key_index(char *keys, size_t width, int *n, int max, const char *name) {
  int k = 0;
  while (k < *n && strcmp(keys + (size_t)k * width, name) != 0) k++;
  if (k == *n && *n < max) snprintf(keys + (size_t)(*n)++ * width, width, "%s", name);
  return k;
}

/* Writes group gr's metric m over x axis xk to dat: x, mean, band low, band high per evaluation
 * that all its members have. Returns the evaluations, or -1 when dat cannot be written. */
static int write_band(const table *t, const group *gr, int m, int xk, int logy, const char *dat) {
  const curve *c0 = &t->c[gr->members[0]];
  FILE *d = fopen(dat, "w");
  if (d == NULL) return -1;
  int npoints = c0->n;
  for (int k = 1; k < gr->n; k++) npoints = t->c[gr->members[k]].n < npoints ? t->c[gr->members[k]].n : npoints;
  for (int i = 0; i < npoints; i++) {
    double v[MAX_SEEDS], s[5], x = 0;
    for (int k = 0; k < gr->n; k++) v[k] = t->c[gr->members[k]].mean[m][i], x += t->c[gr->members[k]].x[xk][i];
    compare_stats(v, gr->n, s);
    double lo = gr->n > 1 ? s[0] - s[2] : c0->lo[m][i], hi2 = gr->n > 1 ? s[0] + s[2] : c0->hi[m][i];
    if (isnan(s[0]) || (logy && s[0] <= 0)) continue;
    if (logy && lo <= 0) lo = s[0]; /* a band through zero has no lower edge on a log axis */
    fprintf(d, "%.9g %.9g %.9g %.9g\n", x / gr->n, s[0], lo, hi2);
  }
  fclose(d);
  return npoints;
}

/* Whether metric m is drawn on a log scale: consensus errors, which fall by orders of magnitude. */
static int log_y(const char *m) { return !compare_metric_up(m) && strstr(m, "consensus") != NULL; }

/* Panel m's axes and key; hi: the figure's height in inches. */
static void panel_axes(FILE *f, const table *t, int m, int xk, int slide, double hi) {
  /* the band: min-max over a run's nodes, or the 95% interval over a group's seeds (the legend says which) */
  const int last = m == t->nreq - 1, logy = log_y(t->metrics[m]);
  if (last) fprintf(f, "%s\n", slide ? "set key outside right top vertical" : "set key below vertical maxcols 1 samplen 2");
  else fprintf(f, "unset key\n");
  if (!slide) { /* stacked panels of 2.1 in, the last one taller by the legend */
    const double top = 1.0 - 2.1 * m / hi, bottom = last ? 0.0 : 1.0 - 2.1 * (m + 1) / hi;
    fprintf(f, "set origin 0,%g\nset size 1,%g\n", bottom, top - bottom);
  }
  fprintf(f, "set xlabel '%s%s' offset 0,0.5\nset ylabel \"%s\\n(mean over nodes)\"\n", compare_x_name(xk),
          xk == 1 ? " per node" : xk == 2 ? " sent, all nodes" : xk == X_SIM_TIME ? " (simulated seconds, the slowest node)" : "", t->metrics[m]);
  fprintf(f, "%s\n", logy ? "set logscale y\nset format y '%g'" : "unset logscale y\nset format y '% h'");
  fprintf(f, "%s\n", strcmp(t->metrics[m], "top1_accuracy") == 0 ? "set yrange [0:1]" : "set autoscale y");
  if (xk == 2) fprintf(f, "set logscale x\n");
}

/* Panel m's plot command: a band and a mean line per group, their data in folder dir. */
static void panel_series(FILE *f, const table *t, const group *g, int ng, int m, int xk, const char *dir, legend *lg) {
  const int logy = log_y(t->metrics[m]);
  fprintf(f, "plot ");
  for (int gi = 0; gi < ng; gi++) {
    const curve *c0 = &t->c[g[gi].members[0]];
    const int a = key_index(&lg->algs[0][0], sizeof lg->algs[0], &lg->nalg, 8, c0->alg);
    const int l = key_index(&lg->labels[0][0], sizeof lg->labels[0], &lg->nlab, 64, c0->label);
    char dat[160];
    snprintf(dat, sizeof dat, "%s/%d_%d.dat", dir, m, gi);
    const int npoints = write_band(t, &g[gi], m, xk, logy, dat);
    if (npoints < 0) continue;
    const char *col = plot_colors[a % 8];
    fprintf(f, "%s'%s' using 1:3:4 with filledcurves fc rgb '%s' fs transparent solid 0.15 noborder notitle, ", gi ? ", " : "", dat, col);
    char title[1200], seeds[32] = "";
    snprintf(seeds, sizeof seeds, g[gi].n > 1 ? " (%d seeds, 95%%)" : " (node range)", g[gi].n);
    snprintf(title, sizeof title, "%s: %s%s", c0->label, c0->problem, seeds);
    /* about a dozen markers per curve, at evaluation points */
    fprintf(f, "'%s' using 1:2 with linespoints lc rgb '%s' dt %d pt 7 ps 0.35 pi %d lw 1.5", dat, col, l % 5 + 1,
            npoints > 12 ? npoints / 12 : 1);
    gp_title(f, title);
  }
  fprintf(f, "\n");
}

dt_status compare_plot(const table *t, const group *g, int ng, const dt_compare_options *opt, int xk) {
  const int slide = is_slide(opt);
  const int panels = t->nreq;
  /* a paper column is 3.4 in wide; a slide 16:9 */
  /* the legend, below the last panel of a paper column, takes a line per curve */
  const double wi = slide ? 10.0 : 3.4, hi = slide ? 5.0 : 2.1 * panels + 0.12 * ng + 0.3;
  char dir[] = "/tmp/dtrun_plot_XXXXXX";
  FILE *f = NULL;
  DT_TRY(gp_begin(opt, wi, hi, dir, &f));
  /* panels share one legend: a paper column's below its last panel, a slide's right of it; the
   * margins are fixed so that the panels' axes line up */
  if (slide) fprintf(f, "set multiplot layout 1,%d\n", panels);
  else fprintf(f, "set multiplot\nset lmargin 10\nset rmargin 2\n");
  legend lg;
  lg.nalg = lg.nlab = 0;
  for (int m = 0; m < panels; m++) {
    panel_axes(f, t, m, xk, slide, hi);
    panel_series(f, t, g, ng, m, xk, dir, &lg);
  }
  fprintf(f, "unset multiplot\n");
  return gp_finish(opt, dir, f);
}

/* ---- rounds to targets against a config value ----------------------------------------------- */

/* Whether group gi is the first of its problem; *order: the problems seen before it (its colour). */
static int first_of_problem(const table *t, const group *g, int gi, int *order) {
  const curve *c0 = &t->c[g[gi].members[0]];
  int first = 1, a = 0;
  for (int k = 0; k < gi; k++) {
    if (strcmp(t->c[g[k].members[0]].problem, c0->problem) == 0) first = 0;
    int seen = 0;
    for (int j = 0; j < k; j++) seen |= strcmp(t->c[g[j].members[0]].problem, t->c[g[k].members[0]].problem) == 0;
    a += !seen;
  }
  *order = a;
  return first;
}

/* Writes target ti's series of group gi's problem to dat: per group of that problem from gi on
 * that reaches it, the --against value, the mean x and its 95% half-width (0 for one seed). The
 * rows written into *rows. */
static dt_status write_target(const table *t, const group *g, const group_summary *sum, int ng, int gi, int ti, const char *dat,
                              int *rows) {
  const curve *c0 = &t->c[g[gi].members[0]];
  FILE *d = fopen(dat, "w");
  DT_CHECK(d != NULL, DT_ERR_IO, "cannot write %s", dat);
  *rows = 0;
  for (int k = gi; k < ng; k++) {
    const curve *ck = &t->c[g[k].members[0]];
    if (strcmp(ck->problem, c0->problem) != 0 || isnan(sum[k].reach[ti][0])) continue;
    const double ci = isnan(sum[k].reach[ti][2]) ? 0 : sum[k].reach[ti][2];
    fprintf(d, "%s %.9g %.9g\n", ck->against, sum[k].reach[ti][0], ci);
    (*rows)++;
  }
  fclose(d);
  return DT_OK;
}

/* The figure of --against: each target's x (round, samples, ...) against the key's value; a colour
 * per algorithm, a dash and a marker per target, the 95% interval over the seeds that reach it. */
dt_status compare_plot_against(const table *t, const group *g, const group_summary *sum, int ng, const dt_compare_options *opt,
                               int xk) {
  dt_status st = DT_OK;
  const int slide = is_slide(opt);
  char dir[] = "/tmp/dtrun_plot_XXXXXX";
  FILE *f = NULL;
  DT_TRY(gp_begin(opt, slide ? 10.0 : 3.4, slide ? 5.0 : 3.2, dir, &f));
  fprintf(f, "%s\n", slide ? "set key outside right top vertical" : "set key below vertical maxcols 1 samplen 2");
  fprintf(f, "set xlabel '%s'\nset ylabel '%s%s to reach the target'\nset autoscale\nset offsets graph 0.03, graph 0.03, graph 0.05, 0\n",
          opt->against, compare_x_name(xk), xk == 1 ? "s per node" : xk == 2 ? " sent" : xk == 0 ? "s" : xk == X_SIM_TIME ? " (simulated s)" : "");
  fprintf(f, "set yrange [0:*]\nplot ");
  int nplotted = 0;
  /* one series per (problem, target): groups of one problem in --against order */
  for (int gi = 0; gi < ng; gi++) {
    int a;
    if (!first_of_problem(t, g, gi, &a)) continue;
    const curve *c0 = &t->c[g[gi].members[0]];
    for (int ti = 0; ti < opt->num_targets; ti++) {
      char dat[160];
      int rows = 0;
      snprintf(dat, sizeof dat, "%s/%d_%d.dat", dir, gi, ti);
      DT_TRY_GOTO(write_target(t, g, sum, ng, gi, ti, dat, &rows));
      if (rows == 0) continue;
      char title[600];
      snprintf(title, sizeof title, "%s: %s %s %g", c0->problem, t->metrics[0], compare_metric_up(t->metrics[0]) ? ">=" : "<=",
               opt->targets[ti]);
      fprintf(f, "%s'%s' using 1:2:3 with yerrorlines lc rgb '%s' dt %d pt %d ps 0.5 lw 1.5", nplotted++ ? ", " : "", dat,
              plot_colors[a % 8], ti % 5 + 1, (int[]){7, 5, 9, 11, 13}[ti % 5]);
      gp_title(f, title);
    }
  }
  DT_CHECK_GOTO(nplotted > 0, DT_ERR_DATA, "--plot: no group reaches any of the targets, so there is nothing to draw");
  fprintf(f, "\n");
  return gp_finish(opt, dir, f);
cleanup:
  fclose(f);
  return st;
}
