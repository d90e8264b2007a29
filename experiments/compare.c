/* `dtrun compare DIR...`: run and sweep folders read from their results.sqlite (readable while
 * a run writes it), grouped by swept values (all but experiment.seed) and problem; across the
 * seeds of a group: mean, std, 95% interval and min–max of the final metric, and rounds (or
 * samples, bytes, seconds) to reach --target in the metric's direction; a terminal table, CSV,
 * Markdown or LaTeX; figures through gnuplot's cairo terminals (PDF, SVG, PNG): one panel per
 * metric, mean line with a band, a colour per algorithm and a dash per group. */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "dt/run.h"
#include "dt/yaml.h"
#include "runner_impl.h"

/* The evaluations columns a metric may name, and whether larger is better. */
static const char *const metric_cols[] = {"top1_accuracy", "validation_loss", "consensus_error", "consensus_error_raw",
                                          "train_loss", "current_epoch", "forward_pass_count"};
enum { NMETRIC_COLS = sizeof metric_cols / sizeof metric_cols[0], MAXM = 8 };
static int metric_up(const char *m) { return strcmp(m, "top1_accuracy") == 0 || strcmp(m, "current_epoch") == 0 || strcmp(m, "forward_pass_count") == 0; }

typedef struct curve {
  char label[512], problem[DT_NAME_MAX], alg[32], status[32], run_status[32];
  char against[64];                     /* the run's value of --against ("" without it) */
  int n, cap, rounds_done;
  double *x[4];                         /* round, samples (per node), bytes (all nodes), seconds */
  double *mean[MAXM], *lo[MAXM], *hi[MAXM];
  int recorded[MAXM];
  double bytes, wall;
} curve;

typedef struct table {
  int nm;
  const char *metrics[MAXM]; /* the requested ones first, then validation_loss and consensus_error */
  int nreq;
  curve *c;
  int n, cap;
} table;

static void curve_free(curve *c) {
  for (int k = 0; k < 4; k++) free(c->x[k]);
  for (int m = 0; m < MAXM; m++) free(c->mean[m]), free(c->lo[m]), free(c->hi[m]);
}

static int curve_grow(curve *c, int nm) {
  if (c->n < c->cap) return 1;
  const int cap = c->cap ? 2 * c->cap : 64;
  for (int k = 0; k < 4; k++) {
    double *p = realloc(c->x[k], sizeof(double) * (size_t)cap);
    if (p == NULL) return 0;
    c->x[k] = p;
  }
  for (int m = 0; m < nm; m++) {
    double **arr[3] = {&c->mean[m], &c->lo[m], &c->hi[m]};
    for (int j = 0; j < 3; j++) {
      double *p = realloc(*arr[j], sizeof(double) * (size_t)cap);
      if (p == NULL) return 0;
      *arr[j] = p;
    }
  }
  c->cap = cap;
  return 1;
}

static const char *basename_of(const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  static char buf[DT_PATH_MAX];
  snprintf(buf, sizeof buf, "%.*s", (int)n, dir);
  const char *s = strrchr(buf, '/');
  return s != NULL && s[1] ? s + 1 : buf;
}

/* A folder that is not there: the nearest name beside it. */
static dt_status missing_dir(const char *dir) {
  char parent[DT_PATH_MAX];
  snprintf(parent, sizeof parent, "%s", dir);
  char *slash = strrchr(parent, '/');
  const char *want = slash != NULL ? slash + 1 : dir;
  if (slash != NULL) *slash = '\0';
  else snprintf(parent, sizeof parent, ".");
  const char *names[512];
  char *store[512];
  int n = 0;
  DIR *d = opendir(parent[0] ? parent : "/");
  struct dirent *e;
  while (d != NULL && n < 512 && (e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') store[n] = strdup(e->d_name), names[n] = store[n] ? store[n] : "", n++;
  if (d != NULL) closedir(d);
  const char *near = dt_nearest(want, names, n);
  dt_status st = DT_ERROR(DT_ERR_IO, "%s: no such run or sweep folder%s%s%s", dir, near ? "; did you mean " : "", near ? near : "",
                          near ? "?" : "");
  for (int i = 0; i < n; i++) free(store[i]);
  return st;
}

/* The group label of a run: its swept values but the seed, or the folder's name. */
static void run_label(sqlite3 *db, sqlite3_int64 run, const char *dir, char *label, size_t size) {
  label[0] = '\0';
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db, "SELECT key, value FROM sweep_values WHERE run = ?1 AND key != 'experiment.seed' ORDER BY rowid", -1, &s,
                         NULL) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, run);
    while (sqlite3_step(s) == SQLITE_ROW) {
      const char *k = (const char *)sqlite3_column_text(s, 0), *v = (const char *)sqlite3_column_text(s, 1);
      const char *shortk = strrchr(k, '.') ? strrchr(k, '.') + 1 : k;
      snprintf(label + strlen(label), size - strlen(label), "%s%s=%s", label[0] ? " " : "", shortk, v ? v : "");
    }
  }
  sqlite3_finalize(s);
  if (label[0] == '\0') snprintf(label, size, "%s", basename_of(dir)); /* a run, or a sweep of seeds alone */
}

/* ---- the runs' configs: --against and --where ---------------------------------------------- */

/* The scalar at a dotted key path of a config tree, or NULL. */
static const char *config_value(const dt_ynode *root, const char *path) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", path);
  const dt_ynode *n = root;
  char *save = NULL;
  for (char *k = strtok_r(buf, ".", &save); k != NULL && n != NULL; k = strtok_r(NULL, ".", &save))
    n = n->kind == DT_YN_MAP ? dt_ynode_get(n, k) : NULL;
  return n != NULL && n->kind == DT_YN_SCALAR ? n->text : NULL;
}

/* Every scalar's key path under n (for "did you mean"); at most max. */
static void config_paths(const dt_ynode *n, const char *prefix, char (*paths)[128], int *np, int max) {
  if (n->kind != DT_YN_MAP) return;
  for (int i = 0; i < n->n && *np < max; i++) {
    char p[128];
    snprintf(p, sizeof p, "%s%s%s", prefix, prefix[0] ? "." : "", n->keys[i]->text);
    if (n->items[i]->kind == DT_YN_SCALAR) snprintf(paths[(*np)++], 128, "%s", p);
    else config_paths(n->items[i], p, paths, np, max);
  }
}

/* Scalars equal as numbers when both are numbers (1 = 1.0), else as text. */
static int same_value(const char *a, const char *b) {
  char *ea, *eb;
  const double x = strtod(a, &ea), y = strtod(b, &eb);
  if (ea != a && *ea == '\0' && eb != b && *eb == '\0') return x == y;
  return strcmp(a, b) == 0;
}

/* Whether a run's config passes every --where; *value its --against value. An unknown key is an
 * error with the nearest key path. */
static dt_status config_filter(const dt_compare_options *opt, const char *text, const char *path, int *keep, char *value,
                               size_t size) {
  dt_ynode *root = NULL;
  *keep = 1;
  value[0] = '\0';
  DT_TRY(dt_yaml_parse(text, strlen(text), path, &root));
  dt_status st = DT_OK;
  for (int w = 0; w <= opt->num_where; w++) {
    char key[512];
    const char *eq = NULL;
    if (w < opt->num_where) {
      eq = strchr(opt->where[w], '=');
      snprintf(key, sizeof key, "%.*s", (int)(eq - opt->where[w]), opt->where[w]);
    } else if (opt->against != NULL) {
      snprintf(key, sizeof key, "%s", opt->against);
    } else {
      break;
    }
    const char *v = config_value(root, key);
    if (v == NULL) {
      static char paths[1024][128];
      const char *names[1024];
      int np = 0;
      config_paths(root, "", paths, &np, 1024);
      for (int i = 0; i < np; i++) names[i] = paths[i];
      const char *near = dt_nearest(key, names, np);
      st = DT_ERROR(DT_ERR_USAGE, "%s %s: not a key of the runs' configs%s%s%s", eq ? "--where" : "--against", key,
                    near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
      break;
    }
    if (eq == NULL) {
      snprintf(value, size, "%s", v);
      continue;
    }
    char list[512];
    snprintf(list, sizeof list, "%s", eq + 1);
    int any = 0;
    char *save = NULL;
    for (char *x = strtok_r(list, ",", &save); x != NULL; x = strtok_r(NULL, ",", &save)) any |= same_value(v, x);
    *keep &= any;
  }
  dt_ynode_free(root);
  return st;
}

static dt_status load_problem(sqlite3 *db, const table *t, sqlite3_int64 run, int problem, curve *c, const char *path) {
  char sql[2048];
  int used = snprintf(sql, sizeof sql,
                      "SELECT round, count(*), avg(forward_pass_count), sum(bytes_sent), max(coalesce(time_compute, 0) + "
                      "coalesce(time_comm, 0))");
  for (int m = 0; m < t->nm; m++)
    used += snprintf(sql + used, sizeof sql - used, ", count(%s), avg(%s), min(%s), max(%s)", t->metrics[m], t->metrics[m], t->metrics[m],
                     t->metrics[m]);
  snprintf(sql + used, sizeof sql - used, " FROM evaluations WHERE run = ?1 AND problem = ?2 GROUP BY round ORDER BY round");
  sqlite3_stmt *s = NULL;
  DT_CHECK(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK, DT_ERR_DATA, "%s: %s", path, sqlite3_errmsg(db));
  sqlite3_bind_int64(s, 1, run);
  sqlite3_bind_int(s, 2, problem);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (!curve_grow(c, t->nm)) {
      sqlite3_finalize(s);
      return DT_ERROR(DT_ERR_MEMORY, "out of memory reading %s", path);
    }
    const int rows = sqlite3_column_int(s, 1);
    for (int k = 0; k < 4; k++) c->x[k][c->n] = sqlite3_column_double(s, k == 0 ? 0 : k + 1);
    for (int m = 0; m < t->nm; m++) {
      const int col = 5 + 4 * m, cnt = sqlite3_column_int(s, col);
      if (cnt > 0) c->recorded[m] = 1;
      /* a node's NaN is NULL in SQL: any missing node makes the evaluation NaN */
      const int ok = cnt == rows && cnt > 0;
      c->mean[m][c->n] = ok ? sqlite3_column_double(s, col + 1) : NAN;
      c->lo[m][c->n] = ok ? sqlite3_column_double(s, col + 2) : NAN;
      c->hi[m][c->n] = ok ? sqlite3_column_double(s, col + 3) : NAN;
    }
    c->n++;
  }
  sqlite3_finalize(s);
  DT_CHECK(rc == SQLITE_DONE, DT_ERR_DATA, "%s: %s", path, sqlite3_errmsg(db));
  return DT_OK;
}

static dt_status load_dir(const char *dir, const dt_compare_options *opt, table *t) {
  char path[DT_PATH_MAX + 32];
  struct stat sb;
  if (stat(dir, &sb) != 0) return missing_dir(dir);
  snprintf(path, sizeof path, "%s/results.sqlite", dir);
  DT_CHECK(access(path, R_OK) == 0, DT_ERR_IO, "%s: no results.sqlite: not a run or sweep folder of this dtrun", dir);
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    sqlite3_close(db);
    return DT_ERROR(DT_ERR_IO, "%s: cannot open", path);
  }
  sqlite3_busy_timeout(db, 10000);
  dt_status st = DT_OK;
  sqlite3_stmt *runs = NULL, *probs = NULL;
  DT_CHECK_GOTO(sqlite3_prepare_v2(db, "SELECT run, folder, status, config FROM runs ORDER BY coalesce(point, 0), run", -1, &runs, NULL) == SQLITE_OK &&
                    sqlite3_prepare_v2(db, "SELECT problem, problem_name, alg_name, status, rounds_completed, bytes_sent, wall_seconds "
                                           "FROM problems WHERE run = ?1 ORDER BY problem", -1, &probs, NULL) == SQLITE_OK,
                DT_ERR_DATA, "%s: %s", path, sqlite3_errmsg(db));
  while (sqlite3_step(runs) == SQLITE_ROW) {
    const sqlite3_int64 run = sqlite3_column_int64(runs, 0);
    char folder[DT_PATH_MAX], status[32], label[512];
    snprintf(folder, sizeof folder, "%s", (const char *)sqlite3_column_text(runs, 1));
    snprintf(status, sizeof status, "%s", sqlite3_column_text(runs, 2) ? (const char *)sqlite3_column_text(runs, 2) : "unknown");
    /* the live truth of a run that says running: killed, or running with its lock held */
    char sub[DT_PATH_MAX + 8], holder[512];
    snprintf(sub, sizeof sub, "%s/%s", dir, folder);
    if (strcmp(status, "running") == 0) dt_run_dir_status(sub, status, sizeof status, holder, sizeof holder);
    run_label(db, run, dir, label, sizeof label);
    char against[64] = "";
    if (opt->against != NULL || opt->num_where > 0) {
      int keep = 1;
      const char *text = (const char *)sqlite3_column_text(runs, 3);
      DT_TRY_GOTO(config_filter(opt, text != NULL ? text : "", path, &keep, against, sizeof against));
      if (!keep) continue;
    }
    sqlite3_reset(probs);
    sqlite3_bind_int64(probs, 1, run);
    while (sqlite3_step(probs) == SQLITE_ROW) {
      if (t->n == t->cap) {
        const int cap = t->cap ? 2 * t->cap : 16;
        curve *g = realloc(t->c, sizeof *g * (size_t)cap);
        DT_CHECK_GOTO(g != NULL, DT_ERR_MEMORY, "out of memory");
        t->c = g;
        t->cap = cap;
      }
      curve *c = &t->c[t->n++];
      memset(c, 0, sizeof *c);
      snprintf(c->label, sizeof c->label, "%s", label);
      snprintf(c->against, sizeof c->against, "%s", against);
      snprintf(c->run_status, sizeof c->run_status, "%s", status);
      snprintf(c->problem, sizeof c->problem, "%s", (const char *)sqlite3_column_text(probs, 1));
      snprintf(c->alg, sizeof c->alg, "%s", (const char *)sqlite3_column_text(probs, 2));
      snprintf(c->status, sizeof c->status, "%s", (const char *)sqlite3_column_text(probs, 3));
      if (strcmp(c->status, "running") == 0 && strcmp(status, "running") != 0) snprintf(c->status, sizeof c->status, "%s", status);
      c->rounds_done = sqlite3_column_int(probs, 4);
      c->bytes = sqlite3_column_double(probs, 5);
      c->wall = sqlite3_column_double(probs, 6);
      DT_TRY_GOTO(load_problem(db, t, run, sqlite3_column_int(probs, 0), c, path));
    }
  }
cleanup:
  sqlite3_finalize(runs);
  sqlite3_finalize(probs);
  sqlite3_close(db);
  return st;
}

/* ---- aggregation -------------------------------------------------------------------------- */

/* Student's t at 97.5% for n - 1 degrees of freedom (n >= 2). */
static double t975(int n) {
  static const double t[] = {0, 0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
                             2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045};
  return n < (int)(sizeof t / sizeof t[0]) ? t[n] : 1.96;
}

typedef struct group {
  int first, n;   /* curves: members[0..n) */
  int members[256];
} group;

static int same_group(const curve *a, const curve *b) {
  return strcmp(a->label, b->label) == 0 && strcmp(a->problem, b->problem) == 0 && strcmp(a->against, b->against) == 0;
}

/* mean, std, ci half-width, min, max of v[0..n) (NaN if any is) */
static void stats(const double *v, int n, double out[5]) {
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

/* The x (round, samples, bytes, seconds) at which curve c's metric m first reaches target. */
static double to_target(const curve *c, int m, int xk, double target, int up) {
  for (int i = 0; i < c->n; i++)
    if (!isnan(c->mean[m][i]) && (up ? c->mean[m][i] >= target : c->mean[m][i] <= target)) return c->x[xk][i];
  return NAN;
}

/* ---- output --------------------------------------------------------------------------------- */

typedef struct cells {
  int rows, cols, numeric_from; /* columns from numeric_from on are numbers, right-aligned */
  char *v[512][20];
} cells;

static void cell(cells *t, int r, int c, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void cell(cells *t, int r, int c, const char *fmt, ...) {
  char buf[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (r >= 512 || c >= 20) return;
  free(t->v[r][c]);
  t->v[r][c] = strdup(buf);
  if (r + 1 > t->rows) t->rows = r + 1;
  if (c + 1 > t->cols) t->cols = c + 1;
}

static void latex_escape(FILE *out, const char *s) {
  for (; *s; s++) {
    if (strchr("&%$#_{}", *s)) fprintf(out, "\\%c", *s);
    else if (*s == '~') fputs("\\textasciitilde{}", out);
    else if (*s == '^') fputs("\\textasciicircum{}", out);
    else if (*s == '\\') fputs("\\textbackslash{}", out);
    else if (strncmp(s, "±", strlen("±")) == 0) fputs("$\\pm$", out), s += strlen("±") - 1;
    else fputc(*s, out);
  }
}

/* The columns s takes on a terminal: UTF-8 characters, not bytes ("±"). */
static int text_width(const char *s) {
  int len = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) len += (*p & 0xc0) != 0x80;
  return len;
}

static void print_cells(const cells *t, int format, FILE *out) {
  int w[20] = {0};
  for (int r = 0; r < t->rows; r++)
    for (int c = 0; c < t->cols; c++) {
      const int len = text_width(t->v[r][c] ? t->v[r][c] : "");
      if (len > w[c]) w[c] = len;
    }
  if (format == DT_COMPARE_LATEX) {
    fprintf(out, "\\begin{tabular}{l");
    for (int c = 1; c < t->cols; c++) fprintf(out, "%s", c < t->numeric_from ? "l" : "r");
    fprintf(out, "}\n\\hline\n");
  }
  for (int r = 0; r < t->rows; r++) {
    for (int c = 0; c < t->cols; c++) {
      const char *s = t->v[r][c] ? t->v[r][c] : "";
      if (format == DT_COMPARE_CSV) {
        const int quote = strpbrk(s, ",\"\n") != NULL;
        fprintf(out, "%s%s", c ? "," : "", quote ? "\"" : "");
        for (const char *p = s; *p; p++) fprintf(out, *p == '"' ? "\"\"" : "%c", *p);
        if (quote) fputc('"', out);
      } else if (format == DT_COMPARE_MARKDOWN) {
        fprintf(out, "| %s ", s);
      } else if (format == DT_COMPARE_LATEX) {
        if (c) fputs(" & ", out);
        latex_escape(out, s);
      } else {
        const int len = text_width(s), right = c >= t->numeric_from;
        if (c) fputs("  ", out);
        if (right) fprintf(out, "%*s%s", w[c] - len, "", s);
        else fprintf(out, "%s%*s", s, c + 1 < t->cols ? w[c] - len : 0, "");
      }
    }
    if (format == DT_COMPARE_MARKDOWN) fputs("|", out);
    if (format == DT_COMPARE_LATEX) fputs(" \\\\", out);
    fputc('\n', out);
    if (r == 0 && format == DT_COMPARE_MARKDOWN) {
      for (int c = 0; c < t->cols; c++) fprintf(out, "|%s", c >= t->numeric_from ? "---:" : "---");
      fputs("|\n", out);
    }
    if (r == 0 && format == DT_COMPARE_LATEX) fputs("\\hline\n", out);
  }
  if (format == DT_COMPARE_LATEX) fputs("\\hline\n\\end{tabular}\n", out);
}

static const char *const x_names[4] = {"round", "samples", "bytes", "seconds"};

/* ---- figures ------------------------------------------------------------------------------ */

/* A colour per algorithm, in order of first appearance. */
static const char *const plot_colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

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
  const int slide = opt->size != NULL && strcmp(opt->size, "slide") == 0;
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

static dt_status plot(const table *t, const group *g, int ng, const dt_compare_options *opt, int xk) {
  const int slide = opt->size != NULL && strcmp(opt->size, "slide") == 0;
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
  char algs[8][32];
  int nalg = 0;
  char labels[64][512];
  int nlab = 0;
  for (int m = 0; m < panels; m++) {
    const int down = !metric_up(t->metrics[m]);
    /* the band: min-max over a run's nodes, or the 95% interval over a group's seeds (the legend says which) */
    const int last = m == panels - 1, logy = down && strstr(t->metrics[m], "consensus") != NULL;
    if (last) fprintf(f, "%s\n", slide ? "set key outside right top vertical" : "set key below vertical maxcols 1 samplen 2");
    else fprintf(f, "unset key\n");
    if (!slide) { /* stacked panels of 2.1 in, the last one taller by the legend */
      const double top = 1.0 - 2.1 * m / hi, bottom = last ? 0.0 : 1.0 - 2.1 * (m + 1) / hi;
      fprintf(f, "set origin 0,%g\nset size 1,%g\n", bottom, top - bottom);
    }
    fprintf(f, "set xlabel '%s%s' offset 0,0.5\nset ylabel \"%s\\n(mean over nodes)\"\n", x_names[xk],
            xk == 1 ? " per node" : xk == 2 ? " sent, all nodes" : "", t->metrics[m]);
    fprintf(f, "%s\n", logy ? "set logscale y\nset format y '%g'" : "unset logscale y\nset format y '% h'");
    fprintf(f, "%s\n", strcmp(t->metrics[m], "top1_accuracy") == 0 ? "set yrange [0:1]" : "set autoscale y");
    if (xk == 2) fprintf(f, "set logscale x\n");
    fprintf(f, "plot ");
    for (int gi = 0; gi < ng; gi++) {
      const curve *c0 = &t->c[g[gi].members[0]];
      int a = 0, l = 0;
      while (a < nalg && strcmp(algs[a], c0->alg) != 0) a++;
      if (a == nalg && nalg < 8) snprintf(algs[nalg++], sizeof algs[0], "%s", c0->alg);
      while (l < nlab && strcmp(labels[l], c0->label) != 0) l++;
      if (l == nlab && nlab < 64) snprintf(labels[nlab++], sizeof labels[0], "%s", c0->label);
      char dat[160];
      snprintf(dat, sizeof dat, "%s/%d_%d.dat", dir, m, gi);
      FILE *d = fopen(dat, "w");
      if (d == NULL) continue;
      int npoints = c0->n;
      for (int k = 1; k < g[gi].n; k++) npoints = t->c[g[gi].members[k]].n < npoints ? t->c[g[gi].members[k]].n : npoints;
      for (int i = 0; i < npoints; i++) {
        double v[256], s[5], x = 0;
        for (int k = 0; k < g[gi].n; k++) v[k] = t->c[g[gi].members[k]].mean[m][i], x += t->c[g[gi].members[k]].x[xk][i];
        stats(v, g[gi].n, s);
        double lo = g[gi].n > 1 ? s[0] - s[2] : c0->lo[m][i], hi2 = g[gi].n > 1 ? s[0] + s[2] : c0->hi[m][i];
        if (isnan(s[0]) || (logy && s[0] <= 0)) continue;
        if (logy && lo <= 0) lo = s[0]; /* a band through zero has no lower edge on a log axis */
        fprintf(d, "%.9g %.9g %.9g %.9g\n", x / g[gi].n, s[0], lo, hi2);
      }
      fclose(d);
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
  fprintf(f, "unset multiplot\n");
  return gp_finish(opt, dir, f);
}

/* The figure of --against: each target's x (round, samples, ...) against the key's value; a colour
 * per algorithm, a dash and a marker per target, the 95% interval over the seeds that reach it. */
static dt_status plot_against(const table *t, const group *g, int ng, const dt_compare_options *opt, int xk, const double *reach_mean,
                              const double *reach_ci) {
  dt_status st = DT_OK;
  const int slide = opt->size != NULL && strcmp(opt->size, "slide") == 0;
  char dir[] = "/tmp/dtrun_plot_XXXXXX";
  FILE *f = NULL;
  DT_TRY(gp_begin(opt, slide ? 10.0 : 3.4, slide ? 5.0 : 3.2, dir, &f));
  fprintf(f, "%s\n", slide ? "set key outside right top vertical" : "set key below vertical maxcols 1 samplen 2");
  fprintf(f, "set xlabel '%s'\nset ylabel '%s%s to reach the target'\nset autoscale\nset offsets graph 0.03, graph 0.03, graph 0.05, 0\n",
          opt->against, x_names[xk], xk == 1 ? "s per node" : xk == 2 ? " sent" : xk == 0 ? "s" : "");
  fprintf(f, "set yrange [0:*]\nplot ");
  int nplotted = 0;
  /* one series per (problem, target): groups of one problem in --against order */
  for (int gi = 0; gi < ng; gi++) {
    const curve *c0 = &t->c[g[gi].members[0]];
    int first = 1, a = 0;
    for (int k = 0; k < gi; k++) {
      if (strcmp(t->c[g[k].members[0]].problem, c0->problem) == 0) first = 0;
      int seen = 0;
      for (int j = 0; j < k; j++) seen |= strcmp(t->c[g[j].members[0]].problem, t->c[g[k].members[0]].problem) == 0;
      a += !seen;
    }
    if (!first) continue;
    for (int ti = 0; ti < opt->num_targets; ti++) {
      char dat[160];
      snprintf(dat, sizeof dat, "%s/%d_%d.dat", dir, gi, ti);
      FILE *d = fopen(dat, "w");
      DT_CHECK_GOTO(d != NULL, DT_ERR_IO, "cannot write %s", dat);
      int rows = 0;
      for (int k = gi; k < ng; k++) {
        const curve *ck = &t->c[g[k].members[0]];
        if (strcmp(ck->problem, c0->problem) != 0 || isnan(reach_mean[k * 8 + ti])) continue;
        const double ci = isnan(reach_ci[k * 8 + ti]) ? 0 : reach_ci[k * 8 + ti];
        fprintf(d, "%s %.9g %.9g\n", ck->against, reach_mean[k * 8 + ti], ci);
        rows++;
      }
      fclose(d);
      if (rows == 0) continue;
      char title[600];
      snprintf(title, sizeof title, "%s: %s %s %g", c0->problem, t->metrics[0], metric_up(t->metrics[0]) ? ">=" : "<=", opt->targets[ti]);
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

/* Groups of one problem together (in order of first appearance), by --against value within it. */
static const table *sort_table;
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

/* ---- the command ---------------------------------------------------------------------------- */

static dt_status parse_metrics(const dt_compare_options *opt, table *t) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", opt->metric ? opt->metric : "top1_accuracy");
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
  const char *extra[] = {"validation_loss", "consensus_error", "top1_accuracy"};
  for (int e = 0; e < 3; e++) {
    int have = 0;
    for (int m = 0; m < t->nm; m++) have |= strcmp(t->metrics[m], extra[e]) == 0;
    if (!have) t->metrics[t->nm++] = extra[e];
  }
  return DT_OK;
}

static int metric_index(const table *t, const char *name) {
  for (int m = 0; m < t->nm; m++)
    if (strcmp(t->metrics[m], name) == 0) return m;
  return -1;
}

dt_status dt_compare(const char *const *dirs, int ndirs, const dt_compare_options *opt, FILE *out) {
  table t;
  memset(&t, 0, sizeof t);
  dt_status st = DT_OK;
  group *g = NULL;
  double *reach_mean = NULL, *reach_ci = NULL; /* [group][target]: mean and 95% half-width over the seeds that reach it */
  cells cl;
  memset(&cl, 0, sizeof cl);
  int xk = 0;
  if (opt->x != NULL) {
    while (xk < 4 && strcmp(x_names[xk], opt->x) != 0) xk++;
    DT_CHECK(xk < 4, DT_ERR_USAGE, "--x %s: expected round, samples, bytes or seconds", opt->x);
  }
  DT_TRY(parse_metrics(opt, &t));
  for (int d = 0; d < ndirs; d++) DT_TRY_GOTO(load_dir(dirs[d], opt, &t));
  DT_CHECK_GOTO(t.n > 0, DT_ERR_DATA, "no problem has results in %s%s%s", dirs[0], ndirs > 1 ? " and the other folders" : "",
                opt->num_where > 0 ? " that pass --where" : "");
  /* groups: the same label and problem, in order of first appearance */
  DT_CHECK_GOTO((g = calloc((size_t)t.n, sizeof *g)) != NULL, DT_ERR_MEMORY, "out of memory");
  int ng = 0;
  for (int i = 0; i < t.n; i++) {
    int k = 0;
    while (k < ng && !same_group(&t.c[g[k].members[0]], &t.c[i])) k++;
    if (k == ng) g[ng].first = ng, g[ng++].n = 0;
    if (g[k].n < 256) g[k].members[g[k].n++] = i;
  }
  for (int m = 0; m < t.nreq; m++) {
    int any = 0;
    for (int i = 0; i < t.n; i++) any |= t.c[i].recorded[m];
    DT_CHECK_GOTO(any, DT_ERR_USAGE, "--metric %s: no run in these folders recorded it (see its problems' metrics: list)", t.metrics[m]);
  }
  if (opt->against != NULL) {
    sort_table = &t;
    qsort(g, (size_t)ng, sizeof *g, cmp_against);
  }
  DT_CHECK_GOTO((reach_mean = malloc(sizeof(double) * 8 * (size_t)ng)) != NULL && (reach_ci = malloc(sizeof(double) * 8 * (size_t)ng)) != NULL,
                DT_ERR_MEMORY, "out of memory");
  const int mi = 0, vl = metric_index(&t, "validation_loss"), ce = metric_index(&t, "consensus_error");
  const int up = metric_up(t.metrics[mi]);
  int c = 0;
  cell(&cl, 0, c++, "run");
  if (opt->against != NULL) cell(&cl, 0, c++, "%s", strrchr(opt->against, '.') ? strrchr(opt->against, '.') + 1 : opt->against);
  cell(&cl, 0, c++, "problem");
  cell(&cl, 0, c++, "algorithm");
  cell(&cl, 0, c++, "status");
  cell(&cl, 0, c++, "seeds");
  cl.numeric_from = c - 1;
  cell(&cl, 0, c++, "rounds");
  const int csv = opt->format == DT_COMPARE_CSV; /* numbers only, one per column */
  cell(&cl, 0, c++, "%s", t.metrics[mi]);
  if (csv) {
    cell(&cl, 0, c++, "%s_std", t.metrics[mi]);
    cell(&cl, 0, c++, "%s_ci95", t.metrics[mi]);
    cell(&cl, 0, c++, "%s_min", t.metrics[mi]);
    cell(&cl, 0, c++, "%s_max", t.metrics[mi]);
  } else {
    cell(&cl, 0, c++, "min-max");
  }
  cell(&cl, 0, c++, "val loss");
  cell(&cl, 0, c++, "consensus");
  for (int ti = 0; ti < opt->num_targets; ti++) cell(&cl, 0, c++, "%s@%g", x_names[xk], opt->targets[ti]);
  cell(&cl, 0, c++, "MB sent");
  cell(&cl, 0, c++, "seconds");
  for (int gi = 0; gi < ng && gi < 511; gi++) {
    const group *gr = &g[gi];
    const curve *c0 = &t.c[gr->members[0]];
    double fin[256], v2[256], v3[256], reach[8][256], mb = 0, secs = 0, s[5], s2[5], s3[5];
    int nreach[8] = {0}, rounds = c0->rounds_done;
    char status[64];
    snprintf(status, sizeof status, "%s", c0->status);
    for (int k = 0; k < gr->n; k++) {
      const curve *cv = &t.c[gr->members[k]];
      fin[k] = cv->n ? cv->mean[mi][cv->n - 1] : NAN;
      v2[k] = cv->n && vl >= 0 ? cv->mean[vl][cv->n - 1] : NAN;
      v3[k] = cv->n && ce >= 0 ? cv->mean[ce][cv->n - 1] : NAN;
      mb += cv->bytes / 1e6 / gr->n;
      secs += cv->wall / gr->n;
      if (strcmp(cv->status, c0->status) != 0) snprintf(status, sizeof status, "mixed");
      rounds = cv->rounds_done < rounds ? cv->rounds_done : rounds;
      for (int ti = 0; ti < opt->num_targets; ti++) {
        const double x = to_target(cv, mi, xk, opt->targets[ti], up);
        if (!isnan(x)) reach[ti][nreach[ti]++] = x;
      }
    }
    stats(fin, gr->n, s);
    stats(v2, gr->n, s2);
    stats(v3, gr->n, s3);
    char a[64], b[64], e[64];
    const int r = gi + 1;
    c = 0;
    cell(&cl, r, c++, "%s", c0->label);
    if (opt->against != NULL) cell(&cl, r, c++, "%s", c0->against);
    cell(&cl, r, c++, "%s", c0->problem);
    cell(&cl, r, c++, "%s", c0->alg);
    cell(&cl, r, c++, "%s", status);
    cell(&cl, r, c++, "%d", gr->n);
    cell(&cl, r, c++, "%d", rounds);
    const int rec = c0->recorded[mi];
    /* one run: min-max over its nodes; several: min-max over the seeds' means */
    const double lo = gr->n > 1 ? s[3] : (c0->n ? c0->lo[mi][c0->n - 1] : NAN), hi = gr->n > 1 ? s[4] : (c0->n ? c0->hi[mi][c0->n - 1] : NAN);
    if (csv) {
      const double v[5] = {s[0], s[1], s[2], lo, hi};
      for (int k = 0; k < 5; k++) cell(&cl, r, c++, "%s", rec ? fmt_number(a, sizeof a, "%.9g", v[k]) : "");
    } else if (!rec) {
      cell(&cl, r, c++, "-");
      cell(&cl, r, c++, "-");
    } else {
      if (gr->n > 1) cell(&cl, r, c++, "%s ± %s", fmt_number(a, sizeof a, "%.4f", s[0]), fmt_number(b, sizeof b, "%.4f", s[2]));
      else cell(&cl, r, c++, "%s", fmt_number(a, sizeof a, "%.4f", s[0]));
      cell(&cl, r, c++, "%s-%s", fmt_number(a, sizeof a, "%.4f", lo), fmt_number(b, sizeof b, "%.4f", hi));
    }
    if (vl < 0 || !c0->recorded[vl]) cell(&cl, r, c++, "-");
    else cell(&cl, r, c++, "%s", fmt_number(e, sizeof e, "%.4f", s2[0]));
    if (ce < 0 || !c0->recorded[ce]) cell(&cl, r, c++, "-");
    else cell(&cl, r, c++, "%s", fmt_number(e, sizeof e, "%.3e", s3[0]));
    for (int ti = 0; ti < opt->num_targets; ti++) {
      double rs[5] = {NAN, NAN, NAN, NAN, NAN};
      if (nreach[ti] > 0) stats(reach[ti], nreach[ti], rs);
      reach_mean[gi * 8 + ti] = rs[0];
      reach_ci[gi * 8 + ti] = rs[2];
      const char *fmt = xk == 3 ? "%.2f" : xk == 2 ? "%.4g" : "%.0f";
      if (nreach[ti] == 0) cell(&cl, r, c++, csv ? "" : "-");
      else if (nreach[ti] < gr->n && !csv) cell(&cl, r, c++, "%s (%d of %d)", fmt_number(a, sizeof a, fmt, rs[0]), nreach[ti], gr->n);
      else cell(&cl, r, c++, "%s", fmt_number(a, sizeof a, csv ? "%.9g" : fmt, rs[0]));
    }
    cell(&cl, r, c++, "%.3f", mb);
    cell(&cl, r, c++, "%.2f", secs);
  }
  /* runs that are not complete are named before the table */
  for (int i = 0; opt->format == DT_COMPARE_TABLE && i < t.n; i++) {
    if (i > 0 && strcmp(t.c[i].label, t.c[i - 1].label) == 0 && strcmp(t.c[i].run_status, t.c[i - 1].run_status) == 0) continue;
    if (strcmp(t.c[i].run_status, "completed") != 0)
      fprintf(out, "# %s: the run is %s%s\n", t.c[i].label, t.c[i].run_status,
              strcmp(t.c[i].run_status, "killed") == 0 || strcmp(t.c[i].run_status, "interrupted") == 0 ? "; dtrun resume continues it" : "");
  }
  print_cells(&cl, opt->format, out);
  if (opt->num_targets > 0 && opt->format == DT_COMPARE_TABLE)
    fprintf(out, "# %s@X: mean over the seeds whose %s reaches %s X (\"k of n\" when only some do)\n", x_names[xk], t.metrics[mi],
            up ? ">=" : "<=");
  if (opt->plot != NULL) {
    if (opt->against != NULL) {
      DT_CHECK_GOTO(opt->num_targets > 0, DT_ERR_USAGE, "--plot with --against draws rounds to targets: give --target X[,X...]");
      DT_TRY_GOTO(plot_against(&t, g, ng, opt, xk, reach_mean, reach_ci));
    } else {
      DT_TRY_GOTO(plot(&t, g, ng, opt, xk));
    }
    if (opt->format == DT_COMPARE_TABLE) fprintf(out, "plot written to %s\n", opt->plot);
  }
cleanup:
  for (int r = 0; r < cl.rows; r++)
    for (int k = 0; k < cl.cols; k++) free(cl.v[r][k]);
  for (int i = 0; i < t.n; i++) curve_free(&t.c[i]);
  free(t.c);
  free(g);
  free(reach_mean);
  free(reach_ci);
  return st;
}
