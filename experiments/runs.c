/* `dtrun runs [DIR]`: the run and sweep folders under DIR (the output folder), one line each, from
 * each folder's results.sqlite: when it started, its name, run or sweep, its status as it is now
 * (a folder whose database says running but whose lock nobody holds was killed), its problems,
 * completed of those its configs declare (a problem not started yet counts too), and its headline:
 * the best final mean top-1 accuracy over its problems (or, without accuracy, the lowest final
 * mean validation loss); a sweep's is the best mean over seeds of a problem at one setting of the
 * other swept keys. Sorted by date (or --sort name|status|metric), filtered
 * by config values (--where key=value, as compare's), or as JSON (--json). */
#include <dirent.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compare_impl.h"
#include "dt/yaml.h"
#include "writer_impl.h"

typedef struct entry {
  char name[256], path[DT_PATH_MAX], started[64], status[64], metric[32], best_problem[128];
  int sweep, points, problems, completed;
  int counts[6]; /* points by status: completed, running, killed, interrupted, failed, other */
  double best;   /* NaN: none */
} entry;

/* One problem's final mean in one point, and the point's setting of the swept keys other than
 * experiment.seed: a sweep's headline averages the values of equal (problem, setting) over seeds. */
typedef struct finals {
  struct final {
    char problem[128], setting[512];
    double top1, vloss; /* NaN: not recorded */
  } *v;
  int n, cap;
} finals;

static const char *const point_status[6] = {"completed", "running", "killed", "interrupted", "failed", "not started"};

static int status_index(const char *s) {
  for (int k = 0; k < 5; k++)
    if (strcmp(s, point_status[k]) == 0) return k;
  return 5;
}

/* Each problem's final means (top-1 and validation loss) in point `run` into f, with the
 * point's setting of the swept keys that are not seeds. */
static void read_finals(sqlite3 *db, sqlite3_int64 run, finals *f) {
  char setting[512] = "";
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db, "SELECT key, value FROM sweep_values WHERE run = ?1 ORDER BY key", -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, run);
    size_t used = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
      const char *k = (const char *)sqlite3_column_text(s, 0), *v = (const char *)sqlite3_column_text(s, 1);
      if (k == NULL || strcmp(k, "experiment.seed") == 0) continue; /* compare pools seeds so too */
      if (used + 1 >= sizeof setting) break;
      used += (size_t)snprintf(setting + used, sizeof setting - used, "%s=%s;", k, v ? v : "");
    }
  }
  sqlite3_finalize(s);
  s = NULL;
  if (sqlite3_prepare_v2(db,
                         "SELECT p.problem_name, avg(e.top1_accuracy), avg(e.validation_loss) FROM evaluations e JOIN problems p "
                         "ON p.run = e.run AND p.problem = e.problem WHERE e.run = ?1 AND e.round = (SELECT max(round) FROM "
                         "evaluations f WHERE f.run = e.run AND f.problem = e.problem) GROUP BY e.problem",
                         -1, &s, NULL) != SQLITE_OK)
    return;
  sqlite3_bind_int64(s, 1, run);
  while (sqlite3_step(s) == SQLITE_ROW) {
    if (f->n == f->cap) {
      const int cap = f->cap ? 2 * f->cap : 16;
      struct final *v = realloc(f->v, sizeof *v * (size_t)cap);
      if (v == NULL) break;
      f->v = v, f->cap = cap;
    }
    struct final *x = &f->v[f->n++];
    snprintf(x->problem, sizeof x->problem, "%s", (const char *)sqlite3_column_text(s, 0));
    snprintf(x->setting, sizeof x->setting, "%s", setting);
    x->top1 = sqlite3_column_type(s, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 1);
    x->vloss = sqlite3_column_type(s, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 2);
  }
  sqlite3_finalize(s);
}

/* The headline from f: the best mean over seeds of one (problem, setting) of top-1 (max), or
 * without any, of the validation loss (min). */
static void headline(const finals *f, entry *e) {
  for (int pass = 0; pass < 2 && isnan(e->best); pass++) {
    for (int i = 0; i < f->n; i++) {
      int first = 1;
      for (int j = 0; j < i && first; j++)
        first = strcmp(f->v[j].problem, f->v[i].problem) != 0 || strcmp(f->v[j].setting, f->v[i].setting) != 0;
      if (!first) continue;
      double sum = 0;
      int k = 0;
      for (int j = i; j < f->n; j++) {
        const double v = pass == 0 ? f->v[j].top1 : f->v[j].vloss;
        if (strcmp(f->v[j].problem, f->v[i].problem) != 0 || strcmp(f->v[j].setting, f->v[i].setting) != 0 || isnan(v)) continue;
        sum += v, k++;
      }
      if (k == 0) continue;
      const double mean = sum / k;
      if (!isnan(e->best) && (pass == 0 ? mean <= e->best : mean >= e->best)) continue;
      e->best = mean;
      snprintf(e->metric, sizeof e->metric, "%s", pass == 0 ? "top1_accuracy" : "validation_loss");
      snprintf(e->best_problem, sizeof e->best_problem, "%s", f->v[i].problem);
    }
  }
}

/* How many problems a point's archived config declares (0 where it cannot be read). */
static int declared_problems(const char *text, const char *db_path) {
  dt_ynode *root = NULL;
  if (text == NULL || dt_yaml_parse(text, strlen(text), db_path, &root) != DT_OK) {
    dt_error_clear();
    return 0;
  }
  const dt_ynode *pc = dt_ynode_get(root, "problem_configs");
  const int n = pc != NULL && pc->kind == DT_YN_MAP ? pc->n : 0;
  dt_ynode_free(root);
  return n;
}

/* Folder `path` (a run or a sweep) into e; *keep = 0 when --where leaves it out (or it is no
 * folder of this dtrun). */
static dt_status read_folder(const char *path, const char *name, const dt_compare_options *where, entry *e, int *keep) {
  char db_path[DT_PATH_MAX + 32], sweep[DT_PATH_MAX + 32];
  sqlite3 *db = NULL;
  sqlite3_stmt *runs = NULL, *probs = NULL;
  finals fin = {0};
  int per_point = 0; /* the problems a point declares (the last point read) */
  dt_status st = DT_OK;
  *keep = 0;
  memset(e, 0, sizeof *e);
  e->best = NAN;
  snprintf(e->name, sizeof e->name, "%s", name);
  snprintf(e->path, sizeof e->path, "%s", path);
  snprintf(db_path, sizeof db_path, "%s/results.sqlite", path);
  snprintf(sweep, sizeof sweep, "%s/sweep.yaml", path);
  if (access(db_path, R_OK) != 0) return DT_OK;
  e->sweep = access(sweep, R_OK) == 0;
  if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    sqlite3_close(db);
    fprintf(stderr, "dtrun: warning: %s: cannot open; left out\n", db_path);
    return DT_OK;
  }
  sqlite3_busy_timeout(db, 10000);
  if (sqlite3_prepare_v2(db, "SELECT run, folder, status, started, config FROM runs ORDER BY run", -1, &runs, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "SELECT count(*), sum(status = 'completed') FROM problems WHERE run = ?1", -1, &probs, NULL) != SQLITE_OK) {
    fprintf(stderr, "dtrun: warning: %s: %s; left out\n", db_path, sqlite3_errmsg(db));
    goto cleanup;
  }
  while (sqlite3_step(runs) == SQLITE_ROW) {
    const sqlite3_int64 run = sqlite3_column_int64(runs, 0);
    char sub[DT_PATH_MAX + 512], status[64], holder[512];
    snprintf(sub, sizeof sub, "%s/%s", path, (const char *)sqlite3_column_text(runs, 1));
    snprintf(status, sizeof status, "%s", sqlite3_column_text(runs, 2) ? (const char *)sqlite3_column_text(runs, 2) : "unknown");
    if (strcmp(status, "running") == 0) dt_run_dir_status(sub, status, sizeof status, holder, sizeof holder);
    if (where->num_where > 0) { /* --where on the point's archived config */
      const char *text = (const char *)sqlite3_column_text(runs, 4);
      dt_ynode *root = NULL;
      int pass = 1;
      char unused[8];
      DT_TRY_GOTO(dt_yaml_parse(text != NULL ? text : "", text != NULL ? strlen(text) : 0, db_path, &root));
      st = compare_config_filter(where, root, &pass, unused, sizeof unused);
      dt_ynode_free(root);
      if (st != DT_OK) goto cleanup;
      if (!pass) continue;
    }
    if (e->points == 0 && sqlite3_column_text(runs, 3) != NULL)
      snprintf(e->started, sizeof e->started, "%s", (const char *)sqlite3_column_text(runs, 3));
    e->points++;
    e->counts[status_index(status)]++;
    if (!e->sweep) snprintf(e->status, sizeof e->status, "%s", status);
    sqlite3_reset(probs);
    sqlite3_bind_int64(probs, 1, run);
    const int declared = declared_problems((const char *)sqlite3_column_text(runs, 4), db_path);
    if (sqlite3_step(probs) == SQLITE_ROW) {
      const int started = sqlite3_column_int(probs, 0);
      e->problems += declared > started ? declared : started; /* problems not started yet count too */
      e->completed += sqlite3_column_int(probs, 1);
    }
    if (declared > 0) per_point = declared;
    read_finals(db, run, &fin);
  }
  if (e->points == 0) goto cleanup;
  headline(&fin, e);
  *keep = 1;
  if (e->sweep && where->num_where == 0) { /* points no job has started yet (a job array's) */
    FILE *f = fopen(sweep, "r");
    char line[256];
    int declared = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL && sscanf(line, "points: %d", &declared) != 1) {}
    if (f != NULL) fclose(f);
    if (declared > e->points) {
      e->counts[5] += declared - e->points;
      e->problems += (declared - e->points) * per_point;
      e->points = declared;
    }
  }
  if (e->sweep) { /* "completed", or how many points are in which state */
    if (e->counts[0] == e->points) {
      snprintf(e->status, sizeof e->status, "completed");
    } else {
      size_t used = 0;
      for (int k = 0; k < 6; k++)
        if (e->counts[k] > 0)
          used += (size_t)snprintf(e->status + used, sizeof e->status - used, "%s%d %s", used ? ", " : "", e->counts[k], point_status[k]);
    }
  }
cleanup:
  free(fin.v);
  sqlite3_finalize(runs);
  sqlite3_finalize(probs);
  sqlite3_close(db);
  return st;
}

static int by_date(const void *a, const void *b) {
  const entry *x = a, *y = b;
  const int c = strcmp(x->started, y->started);
  return c != 0 ? c : strcmp(x->name, y->name);
}
static int by_name(const void *a, const void *b) { return strcmp(((const entry *)a)->name, ((const entry *)b)->name); }
static int by_status(const void *a, const void *b) {
  const int c = strcmp(((const entry *)a)->status, ((const entry *)b)->status);
  return c != 0 ? c : by_date(a, b);
}
static int by_metric(const void *a, const void *b) { /* best first (highest accuracy, lowest loss); without one last */
  const entry *x = a, *y = b;
  const int mx = !isnan(x->best), my = !isnan(y->best);
  if (mx != my) return my - mx;
  if (!mx || strcmp(x->metric, y->metric) != 0) return mx ? strcmp(y->metric, x->metric) : by_date(a, b);
  const int hi = strcmp(x->metric, "top1_accuracy") == 0;
  if (x->best != y->best) return (hi ? x->best > y->best : x->best < y->best) ? -1 : 1;
  return by_date(a, b);
}

static void json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(out, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(out, "\\u%04x", (unsigned char)*s);
    else fputc(*s, out);
  }
  fputc('"', out);
}

static void print_json(const entry *v, int n, FILE *out) {
  fprintf(out, "[");
  for (int i = 0; i < n; i++) {
    const entry *e = &v[i];
    fprintf(out, "%s\n  {\"name\": ", i ? "," : "");
    json_string(out, e->name);
    fprintf(out, ", \"path\": ");
    json_string(out, e->path);
    fprintf(out, ", \"kind\": \"%s\", \"started\": ", e->sweep ? "sweep" : "run");
    json_string(out, e->started);
    fprintf(out, ", \"status\": ");
    json_string(out, e->status);
    fprintf(out, ", \"points\": %d, \"problems\": %d, \"problems_completed\": %d, \"metric\": ", e->points, e->problems, e->completed);
    if (!isfinite(e->best)) { /* JSON has no NaN or infinity */
      fprintf(out, "null, \"value\": null, \"problem\": null}");
      continue;
    }
    json_string(out, e->metric);
    fprintf(out, ", \"value\": %.17g, \"problem\": ", e->best);
    json_string(out, e->best_problem);
    fprintf(out, "}");
  }
  fprintf(out, "%s]\n", n ? "\n" : "");
}

static void print_lines(const entry *v, int n, FILE *out) {
  int w = 4;
  for (int i = 0; i < n; i++) w = (int)strlen(v[i].name) > w ? (int)strlen(v[i].name) : w;
  if (w > 40) w = 40;
  for (int i = 0; i < n; i++) {
    const entry *e = &v[i];
    char date[20], kind[32], probs[32], head[96];
    /* started is "YYYY-MM-DDTHH:MM:SS+zone" (runner_wall_clock): the minute is enough here */
    snprintf(date, sizeof date, "%.16s", e->started);
    for (char *c = date; *c; c++)
      if (*c == 'T') *c = ' ';
    if (e->sweep) snprintf(kind, sizeof kind, "sweep of %d", e->points);
    else snprintf(kind, sizeof kind, "run");
    snprintf(probs, sizeof probs, "%d/%d", e->completed, e->problems);
    if (isnan(e->best)) snprintf(head, sizeof head, "-");
    else
      snprintf(head, sizeof head, "%s %.4f (%.24s)", strcmp(e->metric, "top1_accuracy") == 0 ? "top1" : "val loss", e->best,
               e->best_problem);
    fprintf(out, "%-16s  %-*.*s  %-11s  %-11.40s  %-7s  %s\n", date, w, w, e->name, kind, e->status, probs, head);
  }
}

dt_status dt_runs(const char *dir, const dt_runs_options *opt, FILE *out) {
  dt_status st = DT_OK;
  struct stat sb;
  DT_CHECK(stat(dir, &sb) == 0, DT_ERR_USAGE, "runs %s: no such folder (runs lists the run and sweep folders in an output folder)", dir);
  DT_CHECK(S_ISDIR(sb.st_mode), DT_ERR_USAGE, "runs %s: not a folder", dir);
  DT_CHECK(opt->sort == NULL || strcmp(opt->sort, "date") == 0 || strcmp(opt->sort, "name") == 0 || strcmp(opt->sort, "status") == 0 ||
               strcmp(opt->sort, "metric") == 0,
           DT_ERR_USAGE, "--sort %s: expected date, name, status or metric", opt->sort);
  dt_compare_options where;
  memset(&where, 0, sizeof where);
  where.num_where = opt->num_where;
  for (int w = 0; w < opt->num_where; w++) where.where[w] = opt->where[w];
  DIR *d = opendir(dir);
  DT_CHECK(d != NULL, DT_ERR_IO, "runs %s: cannot read the folder", dir);
  entry *v = NULL;
  int n = 0, cap = 0;
  /* the folder itself may be a run or a sweep (dtrun runs RUN_DIR) */
  char self[DT_PATH_MAX];
  snprintf(self, sizeof self, "%s/results.sqlite", dir);
  const int dir_is_run = access(self, R_OK) == 0;
  for (struct dirent *de = dir_is_run ? NULL : readdir(d); !dir_is_run && de != NULL; de = readdir(d)) {
    if (de->d_name[0] == '.') continue;
    char path[DT_PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= sizeof path) continue;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 32;
      entry *grown = realloc(v, sizeof *grown * (size_t)cap);
      DT_CHECK_GOTO(grown != NULL, DT_ERR_MEMORY, "out of memory listing %s", dir);
      v = grown;
    }
    int keep;
    DT_TRY_GOTO(read_folder(path, de->d_name, &where, &v[n], &keep));
    n += keep;
  }
  if (dir_is_run) {
    DT_ALLOC_GOTO(v, 1, "runs");
    const char *slash = strrchr(dir, '/');
    int keep;
    DT_TRY_GOTO(read_folder(dir, slash != NULL && slash[1] ? slash + 1 : dir, &where, &v[0], &keep));
    n = keep;
  }
  int (*cmp)(const void *, const void *) = by_date;
  if (opt->sort != NULL && strcmp(opt->sort, "name") == 0) cmp = by_name;
  if (opt->sort != NULL && strcmp(opt->sort, "status") == 0) cmp = by_status;
  if (opt->sort != NULL && strcmp(opt->sort, "metric") == 0) cmp = by_metric;
  if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp);
  if (opt->json) print_json(v, n, out);
  else if (n == 0) fprintf(out, "no run or sweep folders in %s%s\n", dir, opt->num_where > 0 ? " that match --where" : "");
  else print_lines(v, n, out);
cleanup:
  closedir(d);
  dt_free(v);
  return st;
}
