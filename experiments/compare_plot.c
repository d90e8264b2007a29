/* `dtrun compare --plot`: the figure's series, computed here (groups, means, bands, rounds to
 * targets), sent as one JSON document to python/dtrun's plotcmd, which draws them with matplotlib
 * (python/dtrun/figures.py: layout, palette, legend, formats) and writes the file through a
 * temporary one. The same module draws from users' notebooks (dtrun.load_runs, dtrun.curves).
 * The Python program: $DTRUN_PYTHON, else the python3 meson found with matplotlib and pandas. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compare_impl.h"
#include "dt_config.h"

extern char **environ;

/* ---- JSON ----------------------------------------------------------------------------------- */

/* s as a JSON string: quotes, backslashes and control characters escaped (UTF-8 passes). */
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
    if (*q == '"' || *q == '\\') fprintf(f, "\\%c", *q);
    else if (*q < 0x20) fprintf(f, "\\u%04x", *q);
    else fputc(*q, f);
  }
  fputc('"', f);
}

/* A number, or null for NaN and infinities (JSON has neither). */
static void json_num(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.10g", v);
  else fputs("null", f);
}

/* "key": "value" (or null), with the comma before it unless it is the first member. */
static void json_member(FILE *f, const char *key, const char *value, int first) {
  fprintf(f, "%s", first ? "" : ", ");
  json_str(f, key);
  fputs(": ", f);
  if (value != NULL) json_str(f, value);
  else fputs("null", f);
}

/* n "KEY=VALUE" words (--label, --ylim M=LO:HI) as one JSON object {"KEY": "VALUE", ...}. */
static void json_pairs(FILE *f, const char *const *pairs, int n) {
  fputs("{", f);
  for (int i = 0; i < n; i++) {
    const char *eq = strchr(pairs[i], '=');
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - pairs[i]), pairs[i]);
    json_member(f, key, eq + 1, i == 0);
  }
  fputs("}", f);
}

/* The options every figure shares: output, size, title, labels, limits, log axes, x. */
static void json_options(FILE *f, const dt_compare_options *opt, int xk) {
  json_member(f, "output", opt->plot, 0);
  json_member(f, "size", opt->size ? opt->size : "paper", 0);
  json_member(f, "title", opt->title, 0);
  json_member(f, "xlim", opt->xlim, 0);
  json_member(f, "log", opt->log ? opt->log : "auto", 0);
  json_member(f, "x", compare_x_name(xk), 0);
  fputs(", \"labels\": ", f);
  json_pairs(f, opt->labels, opt->num_labels);
  fputs(", \"ylim\": ", f);
  if (opt->num_ylim == 1 && strchr(opt->ylim[0], '=') == NULL) json_str(f, opt->ylim[0]); /* one range for every panel */
  else json_pairs(f, opt->ylim, opt->num_ylim);
}

/* A curve's swept pairs ("key\x1fvalue", '\x1e' between) as [["key", "value"], ...]. */
static void json_swept(FILE *f, const char *swept) {
  fputs("[", f);
  for (const char *p = swept; *p;) {
    const char *us = strchr(p, '\x1f'), *rs = strchr(p, '\x1e');
    const char *end = rs != NULL ? rs : p + strlen(p);
    char key[256], value[256];
    if (us == NULL || us > end) break;
    snprintf(key, sizeof key, "%.*s", (int)(us - p), p);
    snprintf(value, sizeof value, "%.*s", (int)(end - us - 1), us + 1);
    fputs(p == swept ? "[" : ", [", f);
    json_str(f, key);
    fputs(", ", f);
    json_str(f, value);
    fputs("]", f);
    p = rs != NULL ? rs + 1 : end;
  }
  fputs("]", f);
}

/* ---- the series ----------------------------------------------------------------------------- */

/* The band of a group of n seeds: --band's kind, or a single run's node range. */
static const char *band_kind(const dt_compare_options *opt, int n) {
  const char *b = opt->band != NULL ? opt->band : "ci95";
  return strcmp(b, "none") == 0 ? "none" : n > 1 ? b : "nodes";
}

/* Group gr's metric m over x axis xk as one series: per evaluation all its members have, x (their
 * mean), the mean over seeds and the band (band_kind: over the seeds' means the 95% t-interval,
 * ± one standard deviation, ± one standard error, their range, or none; a single run's node
 * range). */
static void json_series(FILE *f, const table *t, const group *gr, int gi, int m, int xk, int first, const dt_compare_options *opt) {
  const curve *c0 = &t->c[gr->members[0]];
  int npoints = c0->n;
  for (int k = 1; k < gr->n; k++) npoints = t->c[gr->members[k]].n < npoints ? t->c[gr->members[k]].n : npoints;
  fprintf(f, "%s{\"series\": %d", first ? "" : ",\n  ", gi);
  json_member(f, "name", c0->swept[0] == '\0' ? c0->label : NULL, 0);
  json_member(f, "problem", c0->problem, 0);
  json_member(f, "algorithm", c0->alg, 0);
  json_member(f, "facet", c0->facet, 0);
  const char *band = band_kind(opt, gr->n);
  json_member(f, "band", band, 0);
  json_member(f, "metric", t->metrics[m], 0);
  fprintf(f, ", \"seeds\": %d, \"swept\": ", gr->n);
  json_swept(f, c0->swept);
  const char *cols[4] = {"x", "mean", "lo", "hi"};
  for (int col = 0; col < 4; col++) {
    fprintf(f, ", \"%s\": [", cols[col]);
    for (int i = 0; i < npoints; i++) {
      double v[MAX_SEEDS], s[5], x = 0;
      for (int k = 0; k < gr->n; k++) v[k] = t->c[gr->members[k]].mean[m][i], x += t->c[gr->members[k]].x[xk][i];
      compare_stats(v, gr->n, s); /* mean, std, 95% half-width, min, max */
      double lo = NAN, hi = NAN;
      if (strcmp(band, "nodes") == 0) lo = c0->lo[m][i], hi = c0->hi[m][i];
      else if (strcmp(band, "ci95") == 0) lo = s[0] - s[2], hi = s[0] + s[2];
      else if (strcmp(band, "sd") == 0) lo = s[0] - s[1], hi = s[0] + s[1];
      else if (strcmp(band, "sem") == 0) lo = s[0] - s[1] / sqrt((double)gr->n), hi = s[0] + s[1] / sqrt((double)gr->n);
      else if (strcmp(band, "minmax") == 0) lo = s[3], hi = s[4];
      const double val[4] = {x / gr->n, s[0], lo, hi};
      if (i > 0) fputs(", ", f);
      json_num(f, val[col]);
    }
    fputs("]", f);
  }
  fputs("}", f);
}

/* The curves figure: every group's series of every requested metric. */
static void json_curves(FILE *f, const table *t, const group *g, int ng, const dt_compare_options *opt, int xk) {
  fputs("{\"kind\": \"curves\"", f);
  json_options(f, opt, xk);
  json_member(f, "facet", opt->facet, 0);
  fputs(", \"series\": [\n  ", f);
  int first = 1;
  for (int m = 0; m < t->nreq; m++)
    for (int gi = 0; gi < ng; gi++, first = 0) json_series(f, t, &g[gi], gi, m, xk, first, opt);
  fputs("]}\n", f);
}

/* The --against figure: per group and target that some seed reaches, the group's --against value
 * and the mean x (with its 95% half-width) at which its seeds reach it. */
static void json_against(FILE *f, const table *t, const group *g, const group_summary *sum, int ng, const dt_compare_options *opt,
                         int xk) {
  fputs("{\"kind\": \"against\"", f);
  json_options(f, opt, xk);
  json_member(f, "against", opt->against, 0);
  json_member(f, "metric", compare_target_metric(opt), 0);
  fputs(", \"values\": [", f); /* every group's value, in the table's order: the x axis of words */
  for (int gi = 0; gi < ng; gi++) {
    int seen = 0;
    for (int k = 0; k < gi; k++) seen |= strcmp(t->c[g[k].members[0]].against, t->c[g[gi].members[0]].against) == 0;
    if (seen) continue;
    fputs(gi ? ", " : "", f);
    json_str(f, t->c[g[gi].members[0]].against);
  }
  fputs("], \"points\": [", f);
  int first = 1;
  for (int gi = 0; gi < ng; gi++) {
    const curve *c0 = &t->c[g[gi].members[0]];
    for (int ti = 0; ti < opt->num_targets; ti++) {
      if (isnan(sum[gi].reach[ti][0])) continue;
      fputs(first ? "\n  {" : ",\n  {", f);
      json_member(f, "problem", c0->problem, 1);
      json_member(f, "algorithm", c0->alg, 0);
      json_member(f, "direction", compare_metric_up(compare_target_metric(opt)) ? ">=" : "<=", 0);
      json_member(f, "value", c0->against, 0);
      fputs(", \"target\": ", f);
      json_num(f, opt->targets[ti]);
      fputs(", \"mean\": ", f);
      json_num(f, sum[gi].reach[ti][0]);
      fputs(", \"ci\": ", f);
      json_num(f, sum[gi].reach[ti][2]);
      fprintf(f, ", \"reached\": %d, \"seeds\": %d}", sum[gi].nreach[ti], g[gi].n);
      first = 0;
    }
  }
  fputs("]}\n", f);
}

/* ---- the Python side ------------------------------------------------------------------------ */

typedef struct figure_job {
  const table *t;
  const group *g;
  const group_summary *sum; /* NULL: the curves figure */
  int ng, xk;
  const dt_compare_options *opt;
} figure_job;

/* Runs python/dtrun's plotcmd with the job's JSON on its standard input; its messages (standard
 * output and error) are collected, not mixed into compare's output. Every failure is a usage
 * error (exit 2) carrying the module's own message. */
static dt_status draw(const figure_job *job) {
  const char *python = getenv("DTRUN_PYTHON") != NULL && getenv("DTRUN_PYTHON")[0] ? getenv("DTRUN_PYTHON") : DT_PYTHON;
  /* the module: DTRUN_PYTHONPATH, else the source tree's, else where meson install put it */
  const int given = getenv("DTRUN_PYTHONPATH") != NULL && getenv("DTRUN_PYTHONPATH")[0] != '\0';
  const char *dir = given ? getenv("DTRUN_PYTHONPATH") : DT_PYTHON_DIR;
  if (!given && access(DT_PYTHON_DIR "/dtrun/plotcmd.py", R_OK) != 0 && DT_PYTHON_INSTALL_DIR[0] != '\0') dir = DT_PYTHON_INSTALL_DIR;
  char *const argv[] = {(char *)python, "-c",
                        "import sys; sys.path.insert(0, sys.argv[1]); from dtrun.plotcmd import main; sys.exit(main())",
                        (char *)dir, NULL};
  int in[2], err[2];
  DT_CHECK(pipe(in) == 0, DT_ERR_IO, "--plot: cannot create a pipe: %s", strerror(errno));
  if (pipe(err) != 0) {
    close(in[0]), close(in[1]);
    return DT_ERROR(DT_ERR_IO, "--plot: cannot create a pipe: %s", strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, err[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  posix_spawn_file_actions_addclose(&fa, err[0]);
  pid_t pid;
  const int rc = posix_spawnp(&pid, python, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]), close(err[1]);
  if (rc != 0) {
    close(in[1]), close(err[0]);
    return DT_ERROR(DT_ERR_DATA, "--plot needs Python 3 with matplotlib and pandas: cannot start %s (%s); install "
                    "python3-matplotlib and python3-pandas, or name a Python that has them in DTRUN_PYTHON", python, strerror(rc));
  }
  /* the module reads all its input before it writes: write, then read its messages; a module
   * that dies early closes the pipe, which must not kill compare */
  struct sigaction ign, old;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old);
  FILE *f = fdopen(in[1], "w");
  if (f != NULL) {
    if (job->sum != NULL) json_against(f, job->t, job->g, job->sum, job->ng, job->opt, job->xk);
    else json_curves(f, job->t, job->g, job->ng, job->opt, job->xk);
    fclose(f);
  } else {
    close(in[1]);
  }
  sigaction(SIGPIPE, &old, NULL);
  char msg[4096];
  size_t used = 0;
  for (ssize_t n; (n = read(err[0], msg + used, sizeof msg - 1 - used)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    used += (size_t)n;
    if (used == sizeof msg - 1) { /* keep the end: a traceback's last lines say what went wrong */
      memmove(msg, msg + sizeof msg / 2, used - sizeof msg / 2);
      used -= sizeof msg / 2;
    }
  }
  close(err[0]);
  msg[used] = '\0';
  while (used > 0 && (msg[used - 1] == '\n' || msg[used - 1] == ' ')) msg[--used] = '\0';
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    if (used > 0) fprintf(stderr, "%s\n", msg); /* warnings of a figure that was drawn */
    return DT_OK;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) return DT_ERROR(DT_ERR_DATA, "%s", msg);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) return DT_ERROR(DT_ERR_DATA, "--plot %s: %s", job->opt->plot, msg);
  return DT_ERROR(DT_ERR_DATA, "--plot %s: the plotting module (%s/dtrun) failed%s:\n%s", job->opt->plot, dir,
                  WIFSIGNALED(status) ? " on a signal" : "", used ? msg : "(no message)");
}

dt_status compare_plot(const table *t, const group *g, int ng, const dt_compare_options *opt, int xk) {
  const figure_job job = {t, g, NULL, ng, xk, opt};
  return draw(&job);
}

dt_status compare_plot_against(const table *t, const group *g, const group_summary *sum, int ng, const dt_compare_options *opt,
                               int xk) {
  const figure_job job = {t, g, sum, ng, xk, opt};
  return draw(&job);
}
