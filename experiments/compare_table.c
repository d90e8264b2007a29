/* `dtrun compare`, the table: a row per group (label, problem, algorithm, seeds, the final metric
 * with its interval and range, validation loss, consensus, the x at each target, traffic and
 * time), written as aligned terminal columns, CSV (numbers only, one per column), Markdown or
 * LaTeX. Cells are collected first so that the terminal's columns can be aligned. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compare_impl.h"

enum { MAX_ROWS = 512, MAX_COLS = 20 };

typedef struct cells {
  int rows, cols, numeric_from; /* columns from numeric_from on are numbers, right-aligned */
  char *v[MAX_ROWS][MAX_COLS];
} cells;

/* Sets cell (r, c) to the formatted text; cells past the limits are left out. */
static void cell(cells *t, int r, int c, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void cell(cells *t, int r, int c, const char *fmt, ...) {
  char buf[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (r >= MAX_ROWS || c >= MAX_COLS) return;
  free(t->v[r][c]);
  t->v[r][c] = strdup(buf);
  if (r + 1 > t->rows) t->rows = r + 1;
  if (c + 1 > t->cols) t->cols = c + 1;
}

static void cells_free(cells *t) {
  for (int r = 0; r < t->rows; r++)
    for (int k = 0; k < t->cols; k++) free(t->v[r][k]);
}

/* ---- writing the cells ---------------------------------------------------------------------- */

enum { PM_LEN = sizeof "±" - 1 }; /* its UTF-8 bytes */

/* The n bytes at s as LaTeX text. */
static void latex_escape(FILE *out, const char *s, size_t n) {
  for (const char *end = s + n; s < end; s++) {
    if (strchr("&%$#_{}", *s)) fprintf(out, "\\%c", *s);
    else if (*s == '~') fputs("\\textasciitilde{}", out);
    else if (*s == '^') fputs("\\textasciicircum{}", out);
    else if (*s == '\\') fputs("\\textbackslash{}", out);
    else if (end - s >= PM_LEN && strncmp(s, "±", PM_LEN) == 0) fputs("$\\pm$", out), s += PM_LEN - 1;
    else fputc(*s, out);
  }
}

/* A number cell in LaTeX: its numbers in math mode (an exponent as ×10^k, "a ± b" as one
 * formula), a range's dash between two numbers as an en dash, anything else escaped. */
static int number_starts(const char *s, const char *p) { /* a digit, or a sign before one after a space, "(" or nothing */
  return isdigit((unsigned char)*p) ||
         ((*p == '-' || *p == '+') && (p == s || p[-1] == ' ' || p[-1] == '(') && isdigit((unsigned char)p[1]));
}

static void latex_numbers(FILE *out, const char *s) {
  const char *p = s;
  while (*p) {
    if (*p == '-' && p > s && isdigit((unsigned char)p[-1])) { /* a range */
      fputs("--", out), p++;
      continue;
    }
    if (!number_starts(s, p)) { /* text up to the next number or range dash, escaped as text */
      const char *q = p + 1;
      while (*q && !number_starts(s, q) && !(*q == '-' && isdigit((unsigned char)q[-1]))) q++;
      latex_escape(out, p, (size_t)(q - p));
      p = q;
      continue;
    }
    fputc('$', out);
    for (;;) { /* a number, then "± number" while they follow */
      const char *q = p;
      if (*q == '-' || *q == '+') fputc(*q++, out);
      while (isdigit((unsigned char)*q) || *q == '.') fputc(*q++, out);
      const int exp_sign = q[1] == '-' || q[1] == '+';
      if ((*q == 'e' || *q == 'E') && isdigit((unsigned char)q[1 + exp_sign])) {
        q++;
        const int neg = *q == '-';
        if (*q == '-' || *q == '+') q++;
        while (*q == '0' && isdigit((unsigned char)q[1])) q++;
        fputs("\\times10^{", out);
        if (neg) fputc('-', out);
        while (isdigit((unsigned char)*q)) fputc(*q++, out);
        fputc('}', out);
      }
      p = q;
      const char *r = p;
      while (*r == ' ') r++;
      if (strncmp(r, "±", PM_LEN) != 0) break;
      r += PM_LEN;
      while (*r == ' ') r++;
      if (!number_starts(r, r)) break; /* a "±" with no number after it stays text */
      fputs(" \\pm ", out);
      p = r;
    }
    fputc('$', out);
  }
}

/* The columns s takes on a terminal: UTF-8 characters, not bytes ("±"). */
static int text_width(const char *s) {
  int len = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) len += (*p & 0xc0) != 0x80;
  return len;
}

/* One cell in format, (r, c) its place; w the columns' widths (terminal). */
static void print_cell(const cells *t, int format, const int *w, int r, int c, const char *s, FILE *out) {
  if (format == DT_COMPARE_CSV) {
    const int quote = strpbrk(s, ",\"\n") != NULL;
    fprintf(out, "%s%s", c ? "," : "", quote ? "\"" : "");
    for (const char *p = s; *p; p++) fprintf(out, *p == '"' ? "\"\"" : "%c", *p);
    if (quote) fputc('"', out);
  } else if (format == DT_COMPARE_MARKDOWN) {
    fprintf(out, "| %s ", s);
  } else if (format == DT_COMPARE_LATEX) {
    if (c) fputs(" & ", out);
    if (r > 0 && c >= t->numeric_from) latex_numbers(out, s);
    else latex_escape(out, s, strlen(s));
  } else {
    const int len = text_width(s), right = c >= t->numeric_from;
    if (c) fputs("  ", out);
    if (right) fprintf(out, "%*s%s", w[c] - len, "", s);
    else fprintf(out, "%s%*s", s, c + 1 < t->cols ? w[c] - len : 0, "");
  }
}

static void print_cells(const cells *t, int format, FILE *out) {
  int w[MAX_COLS] = {0};
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
    for (int c = 0; c < t->cols; c++) print_cell(t, format, w, r, c, t->v[r][c] ? t->v[r][c] : "", out);
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

/* ---- the table's content -------------------------------------------------------------------- */

/* What the range column spans: 1 over the seeds' means (every group has seeds), 2 over a single
 * run's nodes (every group is one run), 3 both (rows differ: said in a footnote). */
static int range_kind(const group *g, int ng) {
  int kind = 0;
  for (int gi = 0; gi < ng; gi++) kind |= g[gi].n > 1 ? 1 : 2;
  return kind;
}

static void header_row(const table *t, const group *g, int ng, int xk, const dt_compare_options *opt, cells *cl) {
  const int csv = opt->format == DT_COMPARE_CSV; /* numbers only, one per column */
  const char *m = t->metrics[0];
  /* a target's column names its metric unless it is top-1's (the default) */
  const char *tm = strcmp(compare_target_metric(opt), "top1_accuracy") != 0 ? compare_target_metric(opt) : "";
  int c = 0;
  cell(cl, 0, c++, "run");
  if (opt->against != NULL) cell(cl, 0, c++, "%s", strrchr(opt->against, '.') ? strrchr(opt->against, '.') + 1 : opt->against);
  cell(cl, 0, c++, "problem");
  cell(cl, 0, c++, "algorithm");
  cell(cl, 0, c++, "status");
  cell(cl, 0, c++, "seeds");
  cl->numeric_from = c - 1;
  cell(cl, 0, c++, "rounds");
  if (csv) { /* snake_case, one statistic per column: what pandas and R read as they are */
    static const char *const stat[5] = {"mean", "std", "ci95", "min", "max"};
    for (int k = 0; k < 5; k++) cell(cl, 0, c++, "%s_%s", m, stat[k]);
    if (strcmp(m, "validation_loss") != 0) cell(cl, 0, c++, "validation_loss_mean"); /* not twice */
    if (strcmp(m, "consensus_error") != 0) cell(cl, 0, c++, "consensus_error_mean");
    for (int ti = 0; ti < opt->num_targets; ti++) {
      char tv[64];
      snprintf(tv, sizeof tv, "%g", opt->targets[ti]);
      for (char *q = tv; *q; q++)
        if (*q == '.' || *q == '-' || *q == '+') *q = '_';
      /* the mean over the seeds that reach it, and how many do (a target in another metric than
       * top-1 names it) */
      cell(cl, 0, c++, "%s_to_%s%s%s", compare_x_name(xk), tm, *tm ? "_" : "", tv);
      cell(cl, 0, c++, "%s_to_%s%s%s_seeds", compare_x_name(xk), tm, *tm ? "_" : "", tv);
    }
    cell(cl, 0, c++, "mb_sent");
    cell(cl, 0, c++, "wall_seconds");
    return;
  }
  cell(cl, 0, c++, "%s", m);
  const int range = range_kind(g, ng);
  cell(cl, 0, c++, "%s", range == 1 ? "seeds min-max" : range == 2 ? "nodes min-max" : "min-max*");
  if (strcmp(m, "validation_loss") != 0) cell(cl, 0, c++, "val loss"); /* not twice */
  if (strcmp(m, "consensus_error") != 0) cell(cl, 0, c++, "consensus");
  for (int ti = 0; ti < opt->num_targets; ti++)
    cell(cl, 0, c++, "%s@%s%s%g", compare_x_name(xk), tm, *tm ? (compare_metric_up(tm) ? ">=" : "<=") : "", opt->targets[ti]);
  cell(cl, 0, c++, "MB sent");
  cell(cl, 0, c++, "seconds");
}

/* The final metric's cells from column c on: mean (± interval) and range, or the CSV's five
 * numbers; rec: whether the group's runs recorded the metric. Returns the next column. */
static int metric_cells(const group_summary *s, int n, int rec, int csv, cells *cl, int r, int c) {
  char a[64], b[64];
  if (csv) {
    const double v[5] = {s->fin[0], s->fin[1], s->fin[2], s->lo, s->hi};
    for (int k = 0; k < 5; k++) cell(cl, r, c++, "%s", rec ? fmt_number(a, sizeof a, "%.9g", v[k]) : "");
  } else if (!rec) {
    cell(cl, r, c++, "-");
    cell(cl, r, c++, "-");
  } else {
    if (n > 1) cell(cl, r, c++, "%s ± %s", fmt_number(a, sizeof a, "%.4f", s->fin[0]), fmt_number(b, sizeof b, "%.4f", s->fin[2]));
    else cell(cl, r, c++, "%s", fmt_number(a, sizeof a, "%.4f", s->fin[0]));
    cell(cl, r, c++, "%s-%s", fmt_number(a, sizeof a, "%.4f", s->lo), fmt_number(b, sizeof b, "%.4f", s->hi));
  }
  return c;
}

/* The x at each target from column c on: the mean over the seeds that reach it ("k of n" on a
 * terminal when only some do). Returns the next column. */
static int target_cells(const group_summary *s, int n, int xk, const dt_compare_options *opt, cells *cl, int r, int c) {
  const int csv = opt->format == DT_COMPARE_CSV;
  const char *fmt = xk == 3 ? "%.2f" : xk == 2 || xk == X_SIM_TIME ? "%.4g" : "%.0f"; /* seconds, bytes, simulated seconds */
  char a[64];
  for (int ti = 0; ti < opt->num_targets; ti++) {
    const int k = s->nreach[ti];
    if (k == 0) cell(cl, r, c++, csv ? "" : "-");
    else if (k < n && !csv) cell(cl, r, c++, "%s (%d of %d)", fmt_number(a, sizeof a, fmt, s->reach[ti][0]), k, n);
    else cell(cl, r, c++, "%s", fmt_number(a, sizeof a, csv ? "%.9g" : fmt, s->reach[ti][0]));
    if (csv) cell(cl, r, c++, "%d", k); /* the "k of n" the terminal shows */
  }
  return c;
}

static void group_row(const table *t, const group *gr, const group_summary *s, int xk, const dt_compare_options *opt, cells *cl,
                      int r) {
  const curve *c0 = &t->c[gr->members[0]];
  const int vl = compare_metric_index(t, "validation_loss"), ce = compare_metric_index(t, "consensus_error");
  char e[64];
  int c = 0;
  cell(cl, r, c++, "%s", c0->label);
  if (opt->against != NULL) cell(cl, r, c++, "%s", c0->against);
  cell(cl, r, c++, "%s", c0->problem);
  cell(cl, r, c++, "%s", c0->alg);
  cell(cl, r, c++, "%s", s->status);
  cell(cl, r, c++, "%d", gr->n);
  cell(cl, r, c++, "%d", s->rounds);
  const int csv = opt->format == DT_COMPARE_CSV; /* numbers at full precision, empty where none */
  c = metric_cells(s, gr->n, c0->recorded[0], csv, cl, r, c);
  const char *m = t->metrics[0];
  if (strcmp(m, "validation_loss") != 0) { /* the metric's own columns have it */
    if (vl < 0 || !c0->recorded[vl]) cell(cl, r, c++, csv ? "" : "-");
    else cell(cl, r, c++, "%s", fmt_number(e, sizeof e, csv ? "%.9g" : "%.4f", s->vloss[0]));
  }
  if (strcmp(m, "consensus_error") != 0) {
    if (ce < 0 || !c0->recorded[ce]) cell(cl, r, c++, csv ? "" : "-");
    else cell(cl, r, c++, "%s", fmt_number(e, sizeof e, csv ? "%.9g" : "%.3e", s->cons[0]));
  }
  c = target_cells(s, gr->n, xk, opt, cl, r, c);
  cell(cl, r, c++, csv ? "%.9g" : "%.3f", s->mb);
  cell(cl, r, c++, csv ? "%.9g" : "%.2f", s->secs);
}

/* Runs that are not complete, named before the terminal's table (once per run of curves). */
static void incomplete_runs(const table *t, FILE *out) {
  for (int i = 0; i < t->n; i++) {
    if (i > 0 && strcmp(t->c[i].label, t->c[i - 1].label) == 0 && strcmp(t->c[i].run_status, t->c[i - 1].run_status) == 0) continue;
    if (strcmp(t->c[i].run_status, "completed") != 0)
      fprintf(out, "# %s: the run is %s%s\n", t->c[i].label, t->c[i].run_status,
              strcmp(t->c[i].run_status, "killed") == 0 || strcmp(t->c[i].run_status, "interrupted") == 0 ? "; dtrun resume continues it" : "");
  }
}

void compare_print(const table *t, const group *g, const group_summary *sum, int ng, int xk, const dt_compare_options *opt,
                   FILE *out) {
  cells cl;
  memset(&cl, 0, sizeof cl);
  header_row(t, g, ng, xk, opt, &cl);
  for (int gi = 0; gi < ng && gi < MAX_ROWS - 1; gi++) group_row(t, &g[gi], &sum[gi], xk, opt, &cl, gi + 1);
  if (opt->format == DT_COMPARE_TABLE) incomplete_runs(t, out);
  print_cells(&cl, opt->format, out);
  if (opt->format == DT_COMPARE_TABLE && range_kind(g, ng) == 3)
    fputs("# min-max*: over the seeds' means where seeds > 1, over the nodes of a single run\n", out);
  if (opt->num_targets > 0 && opt->format == DT_COMPARE_TABLE)
    fprintf(out, "# %s@X: mean over the seeds whose %s reaches %s X (\"k of n\" when only some do)\n", compare_x_name(xk),
            compare_target_metric(opt), compare_metric_up(compare_target_metric(opt)) ? ">=" : "<=");
  cells_free(&cl);
}
