/* `dtrun compare RUN_DIR...`: one table row per (run, problem) from summary.yaml and the
 * results CSV — final min/mean/max accuracy, validation loss, consensus error, rounds and
 * samples to reach --target, bytes, wall time — and an optional gnuplot figure of accuracy and
 * consensus error against round. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dt/yaml.h"
#include "dt/run.h"
#include "writer_impl.h"

typedef struct series {
  int n, cap;
  double *round, *acc, *cons, *fpc; /* means over nodes per evaluation */
} series;

static void series_free(series *s) {
  free(s->round);
  free(s->acc);
  free(s->cons);
  free(s->fpc);
}

static int series_push(series *s, double r, double a, double c, double f) {
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 64;
    double *nr = realloc(s->round, sizeof(double) * cap), *na = realloc(s->acc, sizeof(double) * cap);
    double *nc = realloc(s->cons, sizeof(double) * cap), *nf = realloc(s->fpc, sizeof(double) * cap);
    if (nr) s->round = nr;
    if (na) s->acc = na;
    if (nc) s->cons = nc;
    if (nf) s->fpc = nf;
    if (!nr || !na || !nc || !nf) return 0;
    s->cap = cap;
  }
  s->round[s->n] = r, s->acc[s->n] = a, s->cons[s->n] = c, s->fpc[s->n] = f;
  s->n++;
  return 1;
}

/* Mean over nodes of each evaluation in a results CSV, for the columns we plot and target. */
static dt_status read_series(const char *path, const char *metric, series *s) {
  size_t len;
  char *text = dt_read_file(path, &len);
  DT_CHECK(text != NULL, DT_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
  dt_status st = DT_OK;
  char *save = NULL, *line = strtok_r(text, "\n", &save);
  int col_round = -1, col_acc = -1, col_cons = -1, col_fpc = -1, ncol = 0;
  if (line != NULL) {
    char *s2 = NULL;
    for (char *f = strtok_r(line, ",", &s2); f; f = strtok_r(NULL, ",", &s2), ncol++) {
      if (strcmp(f, "round") == 0) col_round = ncol;
      if (strcmp(f, metric) == 0) col_acc = ncol;
      if (strcmp(f, "consensus_error") == 0) col_cons = ncol;
      if (strcmp(f, "forward_pass_count") == 0) col_fpc = ncol;
    }
  }
  DT_CHECK_GOTO(col_round >= 0, DT_ERR_DATA, "%s: not a dtrun results file (no 'round' column)", path);
  double cur = -1, sa = 0, sc = 0, sf = 0;
  int cnt = 0, lineno = 1;
  for (line = strtok_r(NULL, "\n", &save);; line = strtok_r(NULL, "\n", &save)) {
    double v[64] = {0};
    int nv = 0;
    if (line != NULL) {
      lineno++;
      char *s2 = NULL;
      for (char *f = strtok_r(line, ",", &s2); f && nv < 64; f = strtok_r(NULL, ",", &s2)) v[nv++] = strtod(f, NULL);
      DT_CHECK_GOTO(nv == ncol, DT_ERR_DATA, "%s:%d: %d fields, the header has %d", path, lineno, nv, ncol);
    }
    if (line == NULL || v[col_round] != cur) {
      if (cnt > 0 && !series_push(s, cur, col_acc >= 0 ? sa / cnt : NAN, col_cons >= 0 ? sc / cnt : NAN, col_fpc >= 0 ? sf / cnt : NAN))
        DT_CHECK_GOTO(0, DT_ERR_MEMORY, "out of memory reading %s", path);
      if (line == NULL) break;
      cur = v[col_round];
      sa = sc = sf = 0;
      cnt = 0;
    }
    if (col_acc >= 0) sa += v[col_acc];
    if (col_cons >= 0) sc += v[col_cons];
    if (col_fpc >= 0) sf += v[col_fpc];
    cnt++;
  }
cleanup:
  free(text);
  return st;
}

static const char *scalar(const dt_ynode *map, const char *key) {
  const dt_ynode *n = dt_ynode_get(map, key);
  return n != NULL && n->kind == DT_YN_SCALAR ? n->text : "";
}

static double final_stat(const dt_ynode *prob, const char *metric, const char *stat) {
  const dt_ynode *v = dt_ynode_get(dt_ynode_get(dt_ynode_get(prob, "final"), metric), stat);
  if (v == NULL || v->kind != DT_YN_SCALAR) return NAN;
  /* YAML's spellings, which strtod reads as 0 */
  if (strcasecmp(v->text, ".nan") == 0) return NAN;
  if (strcasecmp(v->text, ".inf") == 0 || strcasecmp(v->text, "+.inf") == 0) return INFINITY;
  if (strcasecmp(v->text, "-.inf") == 0) return -INFINITY;
  return strtod(v->text, NULL);
}

dt_status dt_compare(const char *const *dirs, int ndirs, const dt_compare_options *opt, FILE *out) {
  dt_status st = DT_OK;
  const char *metric = opt->metric ? opt->metric : "top1_accuracy";
  strbuf plot = {0};
  char datdir[] = "/tmp/dtrun_plot_XXXXXX";
  int have_dat = 0, nseries = 0;
  if (opt->plot != NULL) {
    DT_CHECK(system("command -v gnuplot >/dev/null 2>&1") == 0, DT_ERR_UNSUPPORTED,
             "--plot needs gnuplot, which is not installed: apt-get install gnuplot-nox (scripts/setup.sh installs it)");
    DT_CHECK(mkdtemp(datdir) != NULL, DT_ERR_IO, "cannot create a temporary folder: %s", strerror(errno));
    have_dat = 1;
  }
  fprintf(out, "%-28s %-14s %-11s %-11s %7s %21s %9s %10s", "run", "problem", "algorithm", "status", "rounds",
          "top1 min/mean/max", "val loss", "consensus");
  if (opt->target >= 0) fprintf(out, " %9s %11s", "rounds@", "samples@");
  fprintf(out, " %10s %8s\n", "MB sent", "seconds");
  for (int r = 0; r < ndirs; r++) {
    char path[4200];
    size_t len;
    snprintf(path, sizeof path, "%s/summary.yaml", dirs[r]);
    char *text = dt_read_file(path, &len);
    DT_CHECK_GOTO(text != NULL, DT_ERR_IO, "%s: not a dtrun run folder (cannot read summary.yaml: %s)", dirs[r], strerror(errno));
    dt_ynode *root = NULL;
    st = dt_yaml_parse(text, len, path, &root);
    free(text);
    DT_TRY_GOTO(st);
    const dt_ynode *probs = dt_ynode_get(root, "problems");
    const char *base = strrchr(dirs[r], '/') && strrchr(dirs[r], '/')[1] ? strrchr(dirs[r], '/') + 1 : dirs[r];
    char run_status[64], holder[512];
    dt_run_dir_status(dirs[r], run_status, sizeof run_status, holder, sizeof holder);
    if (strcmp(run_status, "completed") != 0)
      fprintf(out, "# %s: the run is %s%s%s%s%s\n", base, run_status, holder[0] ? " (" : "", holder, holder[0] ? ")" : "",
              strcmp(run_status, "killed") == 0 || strcmp(run_status, "interrupted") == 0 ? "; dtrun resume continues it" : "");
    for (int p = 0; probs != NULL && probs->kind == DT_YN_SEQ && p < probs->n; p++) {
      const dt_ynode *pr = probs->items[p];
      const char *name = scalar(pr, "problem_name");
      series s = {0};
      snprintf(path, sizeof path, "%s/%s_results.csv", dirs[r], name);
      st = read_series(path, metric, &s);
      if (st != DT_OK) {
        dt_ynode_free(root);
        series_free(&s);
        goto cleanup;
      }
      char a[32], b[32], c[32], d[32], e[32], range[100];
      snprintf(range, sizeof range, "%s/%s/%s", fmt_number(a, sizeof a, "%.4f", final_stat(pr, metric, "min")),
               fmt_number(b, sizeof b, "%.4f", final_stat(pr, metric, "mean")), fmt_number(c, sizeof c, "%.4f", final_stat(pr, metric, "max")));
      fprintf(out, "%-28.28s %-14.14s %-11s %-11s %7s  %20s %9s %10s", base, name, scalar(pr, "alg_name"), scalar(pr, "status"),
              scalar(pr, "rounds_completed"), range, fmt_number(d, sizeof d, "%.4f", final_stat(pr, "validation_loss", "mean")),
              fmt_number(e, sizeof e, "%.3e", final_stat(pr, "consensus_error", "mean")));
      if (opt->target >= 0) {
        int hit = -1;
        for (int i = 0; i < s.n && hit < 0; i++)
          if (s.acc[i] >= opt->target) hit = i;
        if (hit >= 0) fprintf(out, " %9.0f %11.0f", s.round[hit], s.fpc[hit]);
        else fprintf(out, " %9s %11s", "-", "-");
      }
      fprintf(out, " %10.3f %8.2f\n", strtod(scalar(pr, "bytes_sent"), NULL) / 1e6, strtod(scalar(pr, "wall_seconds"), NULL));
      if (have_dat) {
        char dat[4300];
        snprintf(dat, sizeof dat, "%s/%d.dat", datdir, nseries);
        FILE *f = fopen(dat, "w");
        if (f != NULL) {
          for (int i = 0; i < s.n; i++) fprintf(f, "%g %g %g\n", s.round[i], s.acc[i], s.cons[i]);
          fclose(f);
          sb_printf(&plot, "%s'%s' using 1:%%d with lines title '%s: %s'", nseries ? ", " : "", dat, base, name);
          nseries++;
        }
      }
      series_free(&s);
    }
    dt_ynode_free(root);
  }
  if (have_dat && nseries > 0) {
    const char *ext = strrchr(opt->plot, '.');
    const int svg = ext != NULL && strcmp(ext, ".svg") == 0;
    char script[4300];
    snprintf(script, sizeof script, "%s/plot.gp", datdir);
    FILE *f = fopen(script, "w");
    DT_CHECK_GOTO(f != NULL, DT_ERR_IO, "cannot write %s", script);
    fprintf(f, "set terminal %s size 1200,500\nset output '%s'\nset multiplot layout 1,2\n", svg ? "svg" : "pngcairo", opt->plot);
    fprintf(f, "set xlabel 'round'\nset ylabel '%s'\nset key bottom right\nset grid\nplot ", metric);
    /* the same series list twice: column 2 (accuracy), then column 3 (consensus) */
    for (size_t i = 0; i < plot.len; i++) {
      if (plot.data[i] == '%' && plot.data[i + 1] == 'd') fputc('2', f), i++;
      else fputc(plot.data[i], f);
    }
    fprintf(f, "\nset ylabel 'consensus error'\nset logscale y\nset key top right\nplot ");
    for (size_t i = 0; i < plot.len; i++) {
      if (plot.data[i] == '%' && plot.data[i + 1] == 'd') fputc('3', f), i++;
      else fputc(plot.data[i], f);
    }
    fprintf(f, "\nunset multiplot\n");
    fclose(f);
    char cmd[8800];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", script);
    DT_CHECK_GOTO(system(cmd) == 0, DT_ERR_IO, "gnuplot failed to draw %s (script: %s)", opt->plot, script);
    fprintf(out, "plot written to %s\n", opt->plot);
  }
cleanup:
  if (have_dat && st == DT_OK) {
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", datdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", datdir);
  }
  sb_free(&plot);
  return st;
}
