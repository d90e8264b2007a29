/* `dtrun compare`, reading: each run of a run or sweep folder from its results.sqlite (readable
 * while a run writes it), a curve per problem with the mean, min and max over the nodes of every
 * requested metric at each evaluation; runs filtered by --where and labelled by their swept
 * values and --against value, read from the config each run archived in the database. */
#include <dirent.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dt/yaml.h"
#include "compare_impl.h"

static void curve_free(curve *c) {
  for (int k = 0; k < NX; k++) free(c->x[k]);
  for (int m = 0; m < MAXM; m++) free(c->mean[m]), free(c->lo[m]), free(c->hi[m]);
}

void compare_table_free(table *t) {
  for (int i = 0; i < t->n; i++) curve_free(&t->c[i]);
  free(t->c);
}

static int curve_grow(curve *c, int nm) {
  if (c->n < c->cap) return 1;
  const int cap = c->cap ? 2 * c->cap : 64;
  for (int k = 0; k < NX; k++) {
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
  dt_status st = DT_ERROR(DT_ERR_USAGE, "%s: no such run or sweep folder%s%s%s", dir, near ? "; did you mean " : "", near ? near : "",
                          near ? "?" : "");
  for (int i = 0; i < n; i++) free(store[i]);
  return st;
}

/* The group label of a run: its swept values but the seed, or the folder's name (returns 1);
 * swept: the same pairs as "key\x1fvalue" separated by '\x1e' (for the figure's legend); facet:
 * the value of the swept key (or sweep axis) named facet ("" when none is). */
static int run_label(sqlite3 *db, sqlite3_int64 run, const char *dir, const char *facet, char *label, size_t size, char *swept,
                     size_t swept_size, char *facet_value, size_t facet_size) {
  label[0] = swept[0] = facet_value[0] = '\0';
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db, "SELECT key, value FROM sweep_values WHERE run = ?1 AND key != 'experiment.seed' ORDER BY rowid", -1, &s,
                         NULL) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, run);
    while (sqlite3_step(s) == SQLITE_ROW) {
      const char *k = (const char *)sqlite3_column_text(s, 0), *v = (const char *)sqlite3_column_text(s, 1);
      const char *shortk = strrchr(k, '.') ? strrchr(k, '.') + 1 : k;
      snprintf(label + strlen(label), size - strlen(label), "%s%s=%s", label[0] ? " " : "", shortk, v ? v : "");
      snprintf(swept + strlen(swept), swept_size - strlen(swept), "%s%s\x1f%s", swept[0] ? "\x1e" : "", k, v ? v : "");
      if (facet != NULL && strcmp(k, facet) == 0) snprintf(facet_value, facet_size, "%s", v ? v : "");
    }
  }
  sqlite3_finalize(s);
  if (label[0] != '\0') return 0;
  snprintf(label, size, "%s", basename_of(dir)); /* a run, or a sweep of seeds alone */
  return 1;
}

/* FNV-1a of a run's archived config without the experiment's seed line ("  seed: N"). */
static uint64_t pool_key(const char *text) {
  uint64_t h = 1469598103934665603ull;
  for (const char *line = text; line != NULL && *line;) {
    const char *end = strchr(line, '\n');
    const size_t n = end != NULL ? (size_t)(end - line) + 1 : strlen(line);
    if (strncmp(line, "  seed: ", 8) != 0)
      for (size_t k = 0; k < n; k++) h = (h ^ (unsigned char)line[k]) * 1099511628211ull;
    line += n;
  }
  return h;
}

void compare_pool_labels(table *t) {
  int *pooled = calloc((size_t)t->n + 1, sizeof *pooled);
  if (pooled == NULL) return; /* labels by folder: no pooling, nothing wrong */
  for (int i = 0; i < t->n; i++) {
    const curve *a = &t->c[i];
    if (!a->plain || a->name[0] == '\0') continue;
    for (int j = 0; j < t->n && !pooled[i]; j++) {
      const curve *b = &t->c[j];
      pooled[i] = j != i && b->plain && b->pool == a->pool && strcmp(b->problem, a->problem) == 0 && strcmp(b->label, a->label) != 0;
    }
  }
  /* seeds of one experiment in several folders take its name; where configs of one name differ
   * (other than by the seed), each config's runs are "name #1", "name #2", ... in order of appearance */
  for (int i = 0; i < t->n; i++) {
    if (!pooled[i]) continue;
    curve *a = &t->c[i];
    int rank = 0, distinct = 0;
    uint64_t seen[64];
    for (int j = 0; j < t->n; j++) {
      if (!pooled[j] || strcmp(t->c[j].name, a->name) != 0) continue;
      int k = 0;
      while (k < distinct && seen[k] != t->c[j].pool) k++;
      if (k == distinct && distinct < 64) seen[distinct++] = t->c[j].pool;
      if (t->c[j].pool == a->pool) rank = k + 1;
    }
    if (distinct > 1) snprintf(a->label, sizeof a->label, "%s #%d", a->name, rank);
    else snprintf(a->label, sizeof a->label, "%s", a->name);
  }
  free(pooled);
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

/* A --where or --against key the runs' configs lack: the error, with the nearest key path. */
static dt_status unknown_key(const dt_ynode *root, const char *option, const char *key) {
  static char paths[1024][128];
  const char *names[1024];
  int np = 0;
  config_paths(root, "", paths, &np, 1024);
  for (int i = 0; i < np; i++) names[i] = paths[i];
  const char *near = dt_nearest(key, names, np);
  return DT_ERROR(DT_ERR_USAGE, "%s %s: not a key of the runs' configs%s%s%s", option, key, near ? "; did you mean " : "",
                  near ? near : "", near ? "?" : "");
}

/* Whether value v is one of a --where's comma-separated values. */
static int one_of(const char *v, const char *values) {
  char list[512];
  snprintf(list, sizeof list, "%s", values);
  int any = 0;
  char *save = NULL;
  for (char *x = strtok_r(list, ",", &save); x != NULL; x = strtok_r(NULL, ",", &save)) any |= same_value(v, x);
  return any;
}

/* Whether a run's config passes every --where; *value its --against value. An unknown key is an
 * error with the nearest key path. */
dt_status compare_config_filter(const dt_compare_options *opt, const dt_ynode *root, int *keep, char *value, size_t size) {
  *keep = 1;
  value[0] = '\0';
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
      st = unknown_key(root, eq ? "--where" : "--against", key);
      break;
    }
    if (eq == NULL) snprintf(value, size, "%s", v);
    else *keep &= one_of(v, eq + 1);
  }
  return st;
}

/* Each problem's evaluation.sample from a run's archived config (problems in file order). */
static void eval_samples(const dt_ynode *root, int *sample) {
  memset(sample, 0, sizeof(int) * DT_MAX_PROBLEMS);
  const dt_ynode *pcs = dt_ynode_get(root, "problem_configs");
  for (int p = 0; pcs != NULL && pcs->kind == DT_YN_MAP && p < pcs->n && p < DT_MAX_PROBLEMS; p++) {
    const char *v = config_value(pcs->items[p], "evaluation.sample");
    sample[p] = v != NULL ? atoi(v) : 0;
  }
}

/* ---- the database --------------------------------------------------------------------------- */

/* Every evaluation of one problem of a run into c: per round, the node count, the mean forward
 * passes, the bytes of all nodes, the slowest node's seconds and simulated seconds, then each
 * metric's count, mean, min and max over the nodes. */
static dt_status load_problem(sqlite3 *db, const table *t, sqlite3_int64 run, int problem, int sample, curve *c,
                              const char *path) {
  char sql[2048];
  /* sim_time: the slowest node's simulated clock (NULL without experiment.network, and in
   * databases from before it, which lack the column) */
  sqlite3_stmt *probe = NULL;
  const int has_sim = sqlite3_prepare_v2(db, "SELECT sim_time FROM evaluations LIMIT 0", -1, &probe, NULL) == SQLITE_OK;
  sqlite3_finalize(probe);
  int used = snprintf(sql, sizeof sql,
                      "SELECT round, count(*), avg(forward_pass_count), sum(bytes_sent), max(coalesce(time_compute, 0) + "
                      "coalesce(time_comm, 0)), %s",
                      has_sim ? "max(sim_time)" : "NULL");
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
    for (int k = 0; k < NX; k++)
      c->x[k][c->n] = k == X_SIM_TIME && sqlite3_column_type(s, k + 1) == SQLITE_NULL ? NAN : sqlite3_column_double(s, k == 0 ? 0 : k + 1);
    for (int m = 0; m < t->nm; m++) {
      const int col = 6 + 4 * m, cnt = sqlite3_column_int(s, col);
      if (cnt > 0) c->recorded[m] = 1;
      /* a node's NaN is NULL in SQL: any missing node makes the evaluation NaN; with
       * evaluation.sample K, loss and accuracy have K nodes (the others are NULL too) */
      const int evaluated = strcmp(t->metrics[m], "validation_loss") == 0 || strcmp(t->metrics[m], "top1_accuracy") == 0;
      const int want = sample > 0 && sample < rows && evaluated ? sample : rows;
      const int ok = cnt == want && cnt > 0;
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

/* A new, zeroed curve at the end of t. */
static dt_status new_curve(table *t, curve **out) {
  if (t->n == t->cap) {
    const int cap = t->cap ? 2 * t->cap : 16;
    curve *g = realloc(t->c, sizeof *g * (size_t)cap);
    DT_CHECK(g != NULL, DT_ERR_MEMORY, "out of memory");
    t->c = g;
    t->cap = cap;
  }
  *out = &t->c[t->n++];
  memset(*out, 0, sizeof **out);
  return DT_OK;
}

/* What a run's curves share: its label, --against value and status. */
typedef struct run_info {
  sqlite3_int64 run;
  char label[512], against[64], status[32], name[128], seed[32], swept[512], facet[64], folder[128];
  uint64_t pool;
  int plain;
  int sample[DT_MAX_PROBLEMS]; /* each problem's evaluation.sample (0: every node evaluated) */
} run_info;

/* A curve per row of the statement probs (the problems of run ri), appended to t. */
static dt_status load_problems(sqlite3 *db, sqlite3_stmt *probs, const run_info *ri, const char *path, table *t) {
  sqlite3_reset(probs);
  sqlite3_bind_int64(probs, 1, ri->run);
  while (sqlite3_step(probs) == SQLITE_ROW) {
    curve *c = NULL;
    DT_TRY(new_curve(t, &c));
    snprintf(c->label, sizeof c->label, "%s", ri->label);
    snprintf(c->name, sizeof c->name, "%s", ri->name);
    snprintf(c->seed, sizeof c->seed, "%s", ri->seed);
    snprintf(c->folder, sizeof c->folder, "%s", ri->folder);
    c->pool = ri->pool;
    c->plain = ri->plain;
    snprintf(c->against, sizeof c->against, "%s", ri->against);
    snprintf(c->swept, sizeof c->swept, "%s", ri->swept);
    snprintf(c->facet, sizeof c->facet, "%s", ri->facet);
    snprintf(c->run_status, sizeof c->run_status, "%s", ri->status);
    snprintf(c->problem, sizeof c->problem, "%s", (const char *)sqlite3_column_text(probs, 1));
    snprintf(c->alg, sizeof c->alg, "%s", (const char *)sqlite3_column_text(probs, 2));
    snprintf(c->status, sizeof c->status, "%s", (const char *)sqlite3_column_text(probs, 3));
    if (strcmp(c->status, "running") == 0 && strcmp(ri->status, "running") != 0) snprintf(c->status, sizeof c->status, "%s", ri->status);
    c->rounds_done = sqlite3_column_int(probs, 4);
    c->bytes = sqlite3_column_double(probs, 5);
    c->wall = sqlite3_column_double(probs, 6);
    const int p = sqlite3_column_int(probs, 0);
    DT_TRY(load_problem(db, t, ri->run, p, p >= 0 && p < DT_MAX_PROBLEMS ? ri->sample[p] : 0, c, path));
    if (c->bytes == 0 && c->wall == 0 && c->n > 0) { /* not finished (running, killed, interrupted): what its last evaluation counted */
      c->bytes = c->x[2][c->n - 1];
      c->wall = c->x[3][c->n - 1];
    }
  }
  return DT_OK;
}

/* The run of the current row of the statement runs (run, folder, status, config): its label, its
 * live status, and whether it passes --where (*keep), with its --against value. */
static dt_status read_run(sqlite3 *db, sqlite3_stmt *runs, const char *dir, const char *path, const dt_compare_options *opt,
                          run_info *ri, int *keep) {
  ri->run = sqlite3_column_int64(runs, 0);
  char folder[DT_PATH_MAX];
  snprintf(folder, sizeof folder, "%s", (const char *)sqlite3_column_text(runs, 1));
  snprintf(ri->status, sizeof ri->status, "%s", sqlite3_column_text(runs, 2) ? (const char *)sqlite3_column_text(runs, 2) : "unknown");
  /* the live truth of a run that says running: killed, or running with its lock held */
  char sub[DT_PATH_MAX + 8], holder[512];
  snprintf(sub, sizeof sub, "%s/%s", dir, folder);
  if (strcmp(ri->status, "running") == 0) dt_run_dir_status(sub, ri->status, sizeof ri->status, holder, sizeof holder);
  ri->plain = run_label(db, ri->run, dir, opt->facet, ri->label, sizeof ri->label, ri->swept, sizeof ri->swept, ri->facet,
                        sizeof ri->facet);
  snprintf(ri->folder, sizeof ri->folder, "%s", basename_of(dir));
  ri->against[0] = '\0';
  *keep = 1;
  /* the archived config, read once: each problem's evaluation.sample, and --where / --against */
  const char *text = (const char *)sqlite3_column_text(runs, 3);
  dt_ynode *root = NULL;
  DT_TRY(dt_yaml_parse(text != NULL ? text : "", text != NULL ? strlen(text) : 0, path, &root));
  eval_samples(root, ri->sample);
  ri->pool = pool_key(text);
  const char *name = config_value(root, "experiment.name"), *seed = config_value(root, "experiment.seed");
  snprintf(ri->name, sizeof ri->name, "%s", name != NULL ? name : "");
  snprintf(ri->seed, sizeof ri->seed, "%s", seed != NULL ? seed : "");
  dt_status st = DT_OK;
  if (opt->against != NULL || opt->num_where > 0) st = compare_config_filter(opt, root, keep, ri->against, sizeof ri->against);
  if (st == DT_OK && opt->facet != NULL && ri->facet[0] == '\0') { /* not swept: the config's value */
    const char *v = config_value(root, opt->facet);
    if (v == NULL) st = unknown_key(root, "--facet", opt->facet);
    else snprintf(ri->facet, sizeof ri->facet, "%s", v);
  }
  dt_ynode_free(root);
  return st;
}

/* dir's results.sqlite, opened to read (path: its name). */
static dt_status open_results(const char *dir, char *path, size_t size, sqlite3 **db) {
  struct stat sb;
  if (stat(dir, &sb) != 0) return missing_dir(dir);
  snprintf(path, size, "%s/results.sqlite", dir);
  DT_CHECK(S_ISDIR(sb.st_mode), DT_ERR_USAGE, "%s: not a folder (compare reads run and sweep folders)", dir);
  DT_CHECK(access(path, R_OK) == 0, DT_ERR_USAGE, "%s: no results.sqlite: not a run or sweep folder of this dtrun", dir);
  if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    sqlite3_close(*db);
    *db = NULL;
    return DT_ERROR(DT_ERR_IO, "%s: cannot open", path);
  }
  sqlite3_busy_timeout(*db, 10000);
  return DT_OK;
}

dt_status compare_load_dir(const char *dir, const dt_compare_options *opt, table *t) {
  char path[DT_PATH_MAX + 32];
  sqlite3 *db = NULL;
  DT_TRY(open_results(dir, path, sizeof path, &db));
  dt_status st = DT_OK;
  sqlite3_stmt *runs = NULL, *probs = NULL;
  DT_CHECK_GOTO(sqlite3_prepare_v2(db, "SELECT run, folder, status, config FROM runs ORDER BY coalesce(point, 0), run", -1, &runs, NULL) == SQLITE_OK &&
                    sqlite3_prepare_v2(db, "SELECT problem, problem_name, alg_name, status, rounds_completed, bytes_sent, wall_seconds "
                                           "FROM problems WHERE run = ?1 ORDER BY problem", -1, &probs, NULL) == SQLITE_OK,
                DT_ERR_DATA, "%s: %s", path, sqlite3_errmsg(db));
  while (sqlite3_step(runs) == SQLITE_ROW) {
    run_info ri;
    int keep = 1;
    DT_TRY_GOTO(read_run(db, runs, dir, path, opt, &ri, &keep));
    if (keep) DT_TRY_GOTO(load_problems(db, probs, &ri, path, t));
  }
cleanup:
  sqlite3_finalize(runs);
  sqlite3_finalize(probs);
  sqlite3_close(db);
  return st;
}
