/* results.sqlite: every evaluation of a run (or of every point of a sweep) in one SQLite file,
 * in WAL mode, committed as it is measured, so that a run killed by any means keeps every
 * evaluation it printed and a reader (pandas, the sqlite3 shell, `dtrun compare`) can read it
 * while it runs. Only rank 0 writes. The schema (docs/results.md, "The results database"):
 *
 *   runs        one row per run folder: run, folder (relative to the database), point, swept
 *               (a JSON object of the swept keys' values), seed, experiment, config (resolved
 *               text), config_hash, version, host, ranks, nodes, status, started, updated,
 *               wall_seconds
 *   sweep_values  run, key, value: the swept values again, one row each, for GROUP BY
 *   problems    run, problem (its index), problem_name, alg_name, status, rounds,
 *               rounds_completed, bytes_sent, wall_seconds, time_compute, time_comm, time_eval
 *   evaluations run, problem, round, node, then the results CSV's columns (NULL where a metric
 *               is not recorded; sim_time only with experiment.network's clock, and
 *               messages_sent, messages_lost, messages_received, last, only with its faults)
 *
 * A write that fails does not stop the round loop on rank 0 alone (the other ranks would wait in
 * a collective): the first failure is kept and reported when the problem's files are written,
 * which every rank agrees on. */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dt/log.h"
#include "dt/yaml.h"
#include "dt_config.h"
#include "runner_impl.h"
#include "writer_impl.h"

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS runs (\n"
    "  run INTEGER PRIMARY KEY, folder TEXT NOT NULL UNIQUE, point INTEGER, swept TEXT NOT NULL DEFAULT '{}',\n"
    "  seed INTEGER, experiment TEXT, config TEXT, config_hash TEXT, version TEXT, host TEXT, ranks INTEGER,\n"
    "  nodes INTEGER, status TEXT, started TEXT, updated TEXT, wall_seconds REAL);\n"
    "CREATE TABLE IF NOT EXISTS sweep_values (\n"
    "  run INTEGER NOT NULL REFERENCES runs(run), key TEXT NOT NULL, value TEXT, PRIMARY KEY (run, key));\n"
    "CREATE TABLE IF NOT EXISTS problems (\n"
    "  run INTEGER NOT NULL REFERENCES runs(run), problem INTEGER NOT NULL, problem_name TEXT, alg_name TEXT,\n"
    "  status TEXT, rounds INTEGER, rounds_completed INTEGER, bytes_sent REAL, wall_seconds REAL,\n"
    "  time_compute REAL, time_comm REAL, time_eval REAL, PRIMARY KEY (run, problem));\n"
    "CREATE TABLE IF NOT EXISTS evaluations (\n"
    "  run INTEGER NOT NULL, problem INTEGER NOT NULL, round INTEGER NOT NULL, node INTEGER NOT NULL,\n"
    "  forward_pass_count REAL, validation_loss REAL, top1_accuracy REAL, consensus_error REAL,\n"
    "  consensus_error_raw REAL, current_epoch REAL, train_loss REAL, bytes_sent REAL, time_compute REAL,\n"
    "  time_comm REAL, time_eval REAL, sim_time REAL, messages_sent REAL, messages_lost REAL, messages_received REAL,\n"
    "  PRIMARY KEY (run, problem, round, node),\n"
    "  FOREIGN KEY (run, problem) REFERENCES problems(run, problem));\n";

/* The evaluations columns after (run, problem, round, node) are runner_col_names, in order. */
_Static_assert(NCOL == 15, "evaluations table and runner_col_names must match");

static void db_fail(runner *r, const char *what) {
  if (r->db_failed) return;
  r->db_failed = 1;
  snprintf(r->db_error, sizeof r->db_error, "%s/results.sqlite: %s: %s", r->db_dir, what,
           r->db != NULL ? sqlite3_errmsg(r->db) : "cannot open");
}

static int exec(runner *r, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(r->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 1;
  sqlite3_free(msg);
  db_fail(r, sql);
  return 0;
}

/* A statement with its parameters bound by the caller, stepped to the end. */
static int step_all(runner *r, sqlite3_stmt *s, const char *what) {
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
  }
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc == SQLITE_DONE) return 1;
  db_fail(r, what);
  return 0;
}

static sqlite3_stmt *prepare(runner *r, const char *sql) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(r->db, sql, -1, &s, NULL) != SQLITE_OK) {
    db_fail(r, "prepare");
    return NULL;
  }
  return s;
}

static void bind_text(sqlite3_stmt *s, int i, const char *v) { sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT); }

/* Ends the transaction begun with BEGIN IMMEDIATE: COMMIT when every step went well, else
 * ROLLBACK (the first failure is kept by db_fail). Whether it committed. */
static int end_tx(runner *r, int good) {
  if (good) good = exec(r, "COMMIT");
  if (!good && sqlite3_get_autocommit(r->db) == 0) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
  return good;
}

/* The run's folder as the database names it: relative to the database's folder. */
static const char *folder_name(const runner *r) {
  const size_t n = strlen(r->db_dir);
  if (strcmp(r->outdir, r->db_dir) == 0) return ".";
  if (strncmp(r->outdir, r->db_dir, n) == 0 && r->outdir[n] == '/') return r->outdir + n + 1;
  return r->outdir;
}

/* Opens (creating) the database in WAL mode with its tables. */
static dt_status open_db(runner *r) {
  char path[sizeof r->db_dir + 32];
  snprintf(path, sizeof path, "%s/results.sqlite", r->db_dir);
  if (sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", r->db != NULL ? sqlite3_errmsg(r->db) : "out of memory");
    sqlite3_close(r->db);
    r->db = NULL;
    return DT_ERROR(DT_ERR_IO, "cannot open %s: %s", path, msg);
  }
  sqlite3_busy_timeout(r->db, 60000); /* the points of a job array write one database at once */
  /* WAL: readers never block the run; synchronous=NORMAL: a commit survives the process being
   * killed (only a power loss may cost the last commits) */
  int ok = exec(r, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;") && exec(r, schema_sql);
  /* a database from before the simulated clock or the faults (a sweep folder or a run resumed):
   * its evaluations gain the columns it lacks, at the end in the schema's order */
  if (ok) ok = exec(r, "BEGIN IMMEDIATE"); /* probe and add in one transaction: another writer cannot add it between */
  for (int c = COL_SIM_TIME; ok && c < NCOL; c++) {
    char sql[128];
    sqlite3_stmt *probe = NULL;
    snprintf(sql, sizeof sql, "SELECT %s FROM evaluations LIMIT 0", runner_col_names[c]);
    const int has = sqlite3_prepare_v2(r->db, sql, -1, &probe, NULL) == SQLITE_OK;
    sqlite3_finalize(probe);
    snprintf(sql, sizeof sql, "ALTER TABLE evaluations ADD COLUMN %s REAL", runner_col_names[c]);
    if (!has && !exec(r, sql)) ok = end_tx(r, 0);
  }
  if (ok) ok = end_tx(r, 1);
  return ok ? DT_OK : DT_ERROR(DT_ERR_IO, "%s", r->db_error);
}

/* The row of `runs` for this folder, or 0 (inside the open transaction). */
static sqlite3_int64 find_run(runner *r, const char *folder) {
  sqlite3_int64 old = 0;
  sqlite3_stmt *s = prepare(r, "SELECT run FROM runs WHERE folder = ?1");
  if (s != NULL) {
    bind_text(s, 1, folder);
    if (sqlite3_step(s) == SQLITE_ROW) old = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
  }
  return old;
}

/* This run's new row of `runs` (r->db_run), with its swept values (inside the open transaction);
 * the row of an earlier run in the same folder (old, or 0) and its rows elsewhere are dropped
 * first. Whether every step went well. */
static int insert_run(runner *r, sqlite3_int64 old, const char *folder, const char *config_text) {
  const dt_run_options *o = r->opt;
  int good = 1;
  if (old != 0) {
    char sql[256];
    snprintf(sql, sizeof sql,
             "DELETE FROM evaluations WHERE run = %lld; DELETE FROM problems WHERE run = %lld; DELETE FROM sweep_values WHERE run = "
             "%lld; DELETE FROM runs WHERE run = %lld;",
             (long long)old, (long long)old, (long long)old, (long long)old);
    good = exec(r, sql);
  }
  char hash[32], host[256];
  snprintf(hash, sizeof hash, "%016llx", (unsigned long long)r->config_hash);
  dt_comm_host(host, sizeof host);
  sqlite3_stmt *s = good ? prepare(r, "INSERT INTO runs (folder, point, swept, seed, experiment, config, config_hash, version, host, ranks,"
                                      " nodes, status, started, updated, wall_seconds) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
                                      " 'running', ?12, ?12, 0)")
                         : NULL;
  good = s != NULL;
  if (good) {
    bind_text(s, 1, folder);
    if (o->swept_json != NULL) sqlite3_bind_int(s, 2, o->point);
    bind_text(s, 3, o->swept_json != NULL ? o->swept_json : "{}");
    sqlite3_bind_int64(s, 4, (sqlite3_int64)r->cfg->experiment.seed);
    bind_text(s, 5, r->cfg->experiment.name);
    bind_text(s, 6, config_text);
    bind_text(s, 7, hash);
    bind_text(s, 8, DT_VERSION);
    bind_text(s, 9, host);
    sqlite3_bind_int(s, 10, r->size);
    sqlite3_bind_int(s, 11, r->n);
    bind_text(s, 12, r->started);
    good = step_all(r, s, "insert into runs");
    sqlite3_finalize(s);
    r->db_run = sqlite3_last_insert_rowid(r->db);
  }
  s = good && o->num_swept > 0 ? prepare(r, "INSERT INTO sweep_values (run, key, value) VALUES (?1, ?2, ?3)") : NULL;
  if (o->num_swept > 0) good = good && s != NULL;
  for (int i = 0; good && i < o->num_swept; i++) {
    sqlite3_bind_int64(s, 1, r->db_run);
    bind_text(s, 2, o->swept_keys[i]);
    bind_text(s, 3, o->swept_values[i]);
    good = step_all(r, s, "insert into sweep_values");
  }
  sqlite3_finalize(s);
  return good;
}

/* An evaluation's and a problem's row: `verb` is REPLACE (a measurement, which a re-measured
 * round overwrites) or IGNORE (a row restored from the files, which never overwrites one the
 * run wrote: the database's values are exact, the CSVs' have 9 significant digits). Columns
 * named: a database a later dtrun migrated still takes these rows. */
static sqlite3_stmt *prepare_eval(runner *r, const char *verb) {
  char sql[1024];
  snprintf(sql, sizeof sql,
           "INSERT OR %s INTO evaluations (run, problem, round, node, forward_pass_count, validation_loss, top1_accuracy, "
           "consensus_error, consensus_error_raw, current_epoch, train_loss, bytes_sent, time_compute, time_comm, time_eval, sim_time, "
           "messages_sent, messages_lost, messages_received) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
           "?15, ?16, ?17, ?18, ?19)", verb);
  return prepare(r, sql);
}
static sqlite3_stmt *prepare_problem(runner *r, const char *verb) {
  char sql[128];
  snprintf(sql, sizeof sql, "INSERT OR %s INTO problems VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)", verb);
  return prepare(r, sql);
}

/* ---- a resumed run missing rows: restored from its files ------------------------------------ */

/* Whether the database is damaged: it is not a database, SQLite found it corrupt, or PRAGMA
 * quick_check answers other than "ok" (its first complaint into why). A database that is busy,
 * locked, read-only or on a full disk is not damaged: its error stands. */
static int db_damaged(runner *r, dt_status opened, char *why, size_t size) {
  if (r->db == NULL) return 0;
  const int code = sqlite3_errcode(r->db) & 0xff;
  if (opened != DT_OK) {
    snprintf(why, size, "%s", sqlite3_errmsg(r->db));
    return code == SQLITE_NOTADB || code == SQLITE_CORRUPT;
  }
  sqlite3_stmt *s = NULL;
  int damaged = 0;
  if (sqlite3_prepare_v2(r->db, "PRAGMA quick_check", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
    const char *v = (const char *)sqlite3_column_text(s, 0);
    damaged = v == NULL || strcmp(v, "ok") != 0;
    snprintf(why, size, "%s", v != NULL ? v : "no answer");
  } else {
    const int c = sqlite3_errcode(r->db) & 0xff;
    damaged = c == SQLITE_NOTADB || c == SQLITE_CORRUPT;
    snprintf(why, size, "%s", sqlite3_errmsg(r->db));
  }
  sqlite3_finalize(s);
  return damaged;
}

/* Opens the database; on a resume, a damaged one (db_damaged) is set aside under a name no
 * earlier one has (results.sqlite.damaged, .damaged.1, ...: with its -wal and -shm) and a new
 * one made in its place. Any other failure to open stays an error. */
static dt_status open_db_resumed(runner *r) {
  dt_status st = open_db(r);
  char why[512] = "";
  if (!r->opt->resume) return st;
  if (!db_damaged(r, st, why, sizeof why)) {
    if (st == DT_OK && why[0] != '\0' && strcmp(why, "ok") != 0) /* quick_check could not run: busy, locked */
      st = DT_ERROR(DT_ERR_IO, "%s/results.sqlite: cannot check it: %s", r->db_dir, why);
    return st;
  }
  runner_db_close(r);
  r->db_failed = 0;
  char aside[sizeof r->db_dir + 64];
  for (int k = 0;; k++) {
    snprintf(aside, sizeof aside, "%s/results.sqlite.damaged%s%.0d", r->db_dir, k ? "." : "", k);
    if (access(aside, F_OK) != 0) break;
    DT_CHECK(k < 1000, DT_ERR_IO, "%s/results.sqlite is damaged (%s) and %s exists: move the damaged copies away", r->db_dir, why,
             aside);
  }
  static const char *const parts[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++) {
    char from[sizeof r->db_dir + 48], to[sizeof aside + 8];
    snprintf(from, sizeof from, "%s/results.sqlite%s", r->db_dir, parts[i]);
    snprintf(to, sizeof to, "%s%s", aside, parts[i]);
    DT_CHECK(rename(from, to) == 0 || errno == ENOENT, DT_ERR_IO, "%s/results.sqlite is damaged (%s) and cannot be set aside: %s: %s",
             r->db_dir, why, from, strerror(errno));
  }
  dt_log_warn("%s/results.sqlite was damaged (%s): kept as %s; a new one is made", r->db_dir, why, strrchr(aside, '/') + 1);
  return open_db(r);
}

/* The evaluations of problem p from a results CSV's text (a header "round,node,<columns>", then
 * a row per node and evaluation; "nan" and empty cells are NULL), through s (prepare_eval's
 * IGNORE: rows the database has stay); *rows counts those it lacked. Inside the open
 * transaction. */
static int put_csv_rows(runner *r, sqlite3_stmt *s, int p, const char *text, size_t len, long *rows) {
  int col_of[NCOL + 2], ncols = 0, good = 1;
  const char *end = text + len, *line = text;
  const char *nl = memchr(line, '\n', (size_t)(end - line));
  if (nl == NULL) return 1; /* no header: nothing measured */
  for (const char *f = line; f < nl && ncols < NCOL + 2;) {
    const char *comma = memchr(f, ',', (size_t)(nl - f));
    const size_t n = (size_t)((comma != NULL ? comma : nl) - f);
    col_of[ncols] = -1;
    for (int c = 0; c < NCOL; c++)
      if (strlen(runner_col_names[c]) == n && strncmp(f, runner_col_names[c], n) == 0) col_of[ncols] = c;
    ncols++;
    f = comma != NULL ? comma + 1 : nl;
  }
  for (line = nl + 1; good && line < end; line = nl + 1) {
    nl = memchr(line, '\n', (size_t)(end - line));
    if (nl == NULL) nl = end;
    if (nl == line) continue;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s); /* columns the CSV does not have stay NULL */
    sqlite3_bind_int64(s, 1, r->db_run);
    sqlite3_bind_int(s, 2, p);
    const char *f = line;
    for (int k = 0; k < ncols && f <= nl; k++) {
      char cell[128];
      const char *comma = memchr(f, ',', (size_t)(nl - f));
      const size_t n = (size_t)((comma != NULL ? comma : nl) - f);
      snprintf(cell, sizeof cell, "%.*s", (int)(n < sizeof cell ? n : sizeof cell - 1), f);
      char *stop = NULL;
      const double v = strtod(cell, &stop);
      const int number = n > 0 && stop != NULL && *stop == '\0' && !isnan(v);
      if (k < 2) sqlite3_bind_int(s, 3 + k, number ? (int)v : -1); /* round, node */
      else if (col_of[k] >= 0 && number) sqlite3_bind_double(s, 5 + col_of[k], v);
      f = comma != NULL ? comma + 1 : nl + 1;
    }
    good = step_all(r, s, "restore evaluations");
    *rows += sqlite3_changes(r->db);
  }
  return good;
}

/* The finished problems' rows the database lacks, from summary.yaml and each one's
 * <problem>_results.csv (*problems: those that lacked any, *rows: the evaluations restored); the
 * problem a checkpoint holds (status running) gets its rows from runner_db_put_csv. `whole`:
 * the database had no row of this run, whose row in `runs` then takes summary.yaml's values. */
static dt_status rebuild_rows(runner *r, int whole, int *problems, long *rows) {
  char path[DT_PATH_MAX + 160];
  snprintf(path, sizeof path, "%s/summary.yaml", r->outdir);
  size_t len = 0;
  char *text = dt_read_file_bounded(path, DT_YAML_MAX_BYTES, &len);
  DT_CHECK(text != NULL, DT_ERR_DATA, "%s: cannot read it to rebuild results.sqlite: %s", path, strerror(errno));
  dt_ynode *root = NULL;
  dt_status st = dt_yaml_parse(text, len, path, &root);
  free(text);
  DT_TRY(st);
  const dt_ynode *list = dt_ynode_get(root, "problems");
  sqlite3_stmt *fill_eval = prepare_eval(r, "IGNORE"), *fill_problem = prepare_problem(r, "IGNORE");
  int good = fill_eval != NULL && fill_problem != NULL && exec(r, "BEGIN IMMEDIATE");
  for (int q = 0; good && list != NULL && list->kind == DT_YN_SEQ && q < list->n && q < r->cfg->num_problems; q++) {
    const dt_ynode *it = list->items[q];
    const dt_ynode *name = dt_ynode_get(it, "problem_name"), *status = dt_ynode_get(it, "status");
    if (name == NULL || status == NULL || name->kind != DT_YN_SCALAR || status->kind != DT_YN_SCALAR ||
        strcmp(name->text, r->cfg->problems[q].problem_name) != 0 || strcmp(status->text, "running") == 0)
      continue;
    static const char *const nums[] = {"rounds_completed", "bytes_sent", "wall_seconds", "time_compute", "time_comm", "time_eval"};
    sqlite3_stmt *s = fill_problem;
    sqlite3_reset(s);
    sqlite3_bind_int64(s, 1, r->db_run);
    sqlite3_bind_int(s, 2, q);
    bind_text(s, 3, r->cfg->problems[q].problem_name);
    bind_text(s, 4, r->cfg->problems[q].alg_name);
    bind_text(s, 5, status->text);
    sqlite3_bind_int(s, 6, r->cfg->problems[q].outer_iterations);
    for (int k = 0; k < 6; k++) {
      const dt_ynode *v = dt_ynode_get(it, nums[k]);
      if (v != NULL && v->kind == DT_YN_SCALAR) sqlite3_bind_double(s, 7 + k, strtod(v->text, NULL));
      else sqlite3_bind_null(s, 7 + k);
    }
    good = step_all(r, s, "restore problems");
    long lacked = sqlite3_changes(r->db);
    snprintf(path, sizeof path, "%s/%s_results.csv", r->outdir, r->cfg->problems[q].problem_name);
    const size_t bound = (size_t)(r->cfg->problems[q].outer_iterations + 2) * (size_t)r->n * (NCOL + 2) * 32 + 4096;
    char *csv = good ? dt_read_file_bounded(path, bound, &len) : NULL;
    long restored = 0;
    if (csv != NULL) good = put_csv_rows(r, fill_eval, q, csv, len, &restored);
    free(csv);
    *rows += restored;
    *problems += lacked + restored > 0;
  }
  sqlite3_finalize(fill_eval);
  sqlite3_finalize(fill_problem);
  /* the run's row as summary.yaml has it (a resumed run updates it as it goes on) */
  sqlite3_stmt *s = good && whole ? prepare(r, "UPDATE runs SET status = ?1, started = ?2, updated = ?3, wall_seconds = ?4, ranks = ?5 "
                                      "WHERE run = ?6") : NULL;
  good = good && (s != NULL || !whole);
  if (good && whole) {
    static const char *const keys[] = {"status", "started", "updated", "wall_seconds", "ranks"};
    for (int k = 0; k < 5; k++) {
      const dt_ynode *v = dt_ynode_get(root, keys[k]);
      if (v == NULL || v->kind != DT_YN_SCALAR) sqlite3_bind_null(s, 1 + k);
      else if (k < 3) bind_text(s, 1 + k, v->text);
      else sqlite3_bind_double(s, 1 + k, strtod(v->text, NULL));
    }
    sqlite3_bind_int64(s, 6, r->db_run);
    good = step_all(r, s, "rebuild runs");
  }
  sqlite3_finalize(s);
  dt_ynode_free(root);
  return end_tx(r, good) ? DT_OK : DT_ERROR(DT_ERR_IO, "%s", r->db_error);
}

dt_status runner_db_put_csv(runner *r, int p, const char *csv, size_t len) {
  if (r->db == NULL || !r->opt->resume) return DT_OK;
  long rows = 0;
  sqlite3_stmt *fill = prepare_eval(r, "IGNORE");
  const int good = fill != NULL && exec(r, "BEGIN IMMEDIATE") && end_tx(r, put_csv_rows(r, fill, p, csv, len, &rows));
  sqlite3_finalize(fill);
  if (good && rows > 0 && !r->db_rebuilt)
    dt_log_warn("%s/results.sqlite lacked %ld evaluation row%s of problem %s before the checkpoint: restored from the checkpoint",
                r->db_dir, rows, rows == 1 ? "" : "s", r->cfg->problems[p].problem_name);
  return good ? DT_OK : DT_ERROR(DT_ERR_IO, "%s", r->db_error);
}

dt_status runner_db_open(runner *r, const char *config_text) {
  if (!r->write) return DT_OK;
  snprintf(r->db_dir, sizeof r->db_dir, "%s", r->opt->db_dir != NULL ? r->opt->db_dir : r->outdir);
  DT_TRY(open_db_resumed(r));
  const char *folder = folder_name(r);
  int good = exec(r, "BEGIN IMMEDIATE");
  /* the row the database has for this folder: a resumed run keeps it (its evaluations up to the
   * checkpoint stay); a fresh run into a folder the database knows (--force) replaces it */
  const sqlite3_int64 old = good ? find_run(r, folder) : 0;
  if (r->opt->resume) r->db_run = old;
  if (good && r->db_run == 0) good = insert_run(r, old, folder, config_text);
  good = end_tx(r, good);
  if (good) {
    r->db_eval = prepare_eval(r, "REPLACE");
    r->db_problem = prepare_problem(r, "REPLACE");
    good = r->db_eval != NULL && r->db_problem != NULL;
  }
  if (!good) return DT_ERROR(DT_ERR_IO, "%s", r->db_error);
  if (r->opt->resume) {
    /* resumed: what the database lacks of this run's files goes back in (all of it when it has no
     * row of the run: deleted, emptied, damaged; or what a lost table or lost rows took), rather
     * than a database silently missing what came before. The rows it has stay as they are. */
    int problems = 0;
    long rows = 0;
    r->db_rebuilt = old == 0;
    const dt_status st = rebuild_rows(r, old == 0, &problems, &rows);
    const char *which = strcmp(folder, ".") == 0 ? "this run" : folder;
    if (st != DT_OK) { /* what the files could not give is said (a database that has the run keeps its rows), and the run goes on */
      if (old == 0)
        dt_log_warn("%s/results.sqlite had no rows of %s, and they could not be rebuilt from its files: %s", r->db_dir, which,
                    dt_error_message());
      r->db_failed = 0;
      return DT_OK;
    }
    if (old != 0 && (rows > 0 || problems > 0))
      dt_log_warn("%s/results.sqlite lacked rows of %s: %d finished problem%s restored from its files (%ld evaluation rows; "
                  "values at the CSVs' 9 significant digits)", r->db_dir, which, problems, problems == 1 ? "" : "s", rows);
    else if (old == 0)
      dt_log_warn("%s/results.sqlite had no rows of %s: rebuilt from its files (%d finished problem%s, %ld evaluation rows; "
                  "values at the CSVs' 9 significant digits)", r->db_dir, which, problems,
                problems == 1 ? "" : "s", rows);
  }
  return DT_OK;
}

static int put_problem(runner *r, int p, const char *status) {
  const dt_problem_config *pc = &r->cfg->problems[p];
  const problem_result *res = &r->res[p];
  sqlite3_stmt *s = r->db_problem;
  sqlite3_bind_int64(s, 1, r->db_run);
  sqlite3_bind_int(s, 2, p);
  bind_text(s, 3, pc->problem_name);
  bind_text(s, 4, pc->alg_name);
  bind_text(s, 5, status);
  sqlite3_bind_int(s, 6, pc->outer_iterations);
  sqlite3_bind_int(s, 7, res->rounds_done);
  sqlite3_bind_double(s, 8, res->bytes);
  sqlite3_bind_double(s, 9, res->seconds);
  sqlite3_bind_double(s, 10, res->t_compute);
  sqlite3_bind_double(s, 11, res->t_comm);
  sqlite3_bind_double(s, 12, res->t_eval);
  return step_all(r, s, "write problems");
}

void runner_db_begin_problem(runner *r, int p, int keep) {
  if (r->db == NULL || r->db_failed) return;
  /* what a killed or interrupted run measured of this problem after round `keep` (-1: from its
   * start), and of later problems, is measured again */
  char sql[320];
  snprintf(sql, sizeof sql,
           "BEGIN IMMEDIATE; DELETE FROM evaluations WHERE run = %lld AND ((problem = %d AND round > %d) OR problem > %d);"
           " DELETE FROM problems WHERE run = %lld AND problem > %d;",
           (long long)r->db_run, p, keep, p, (long long)r->db_run, p);
  end_tx(r, exec(r, sql));
}

void runner_db_evaluation(runner *r, int p, const problem_run *pr, int round) {
  if (r->db == NULL || r->db_failed) return;
  if (!exec(r, "BEGIN IMMEDIATE")) return;
  int good = 1;
  sqlite3_stmt *s = r->db_eval;
  for (int i = 0; good && i < r->n; i++) {
    const double *row = r->all_rows + (size_t)i * NCOL;
    sqlite3_bind_int64(s, 1, r->db_run);
    sqlite3_bind_int(s, 2, p);
    sqlite3_bind_int(s, 3, round);
    sqlite3_bind_int(s, 4, i);
    for (int c = 0; c < NCOL; c++) {
      if (!pr->cols[c] || isnan(row[c])) sqlite3_bind_null(s, 5 + c); /* SQL has no NaN: NULL */
      else sqlite3_bind_double(s, 5 + c, row[c]);
    }
    good = step_all(r, s, "write evaluations");
  }
  if (good) good = put_problem(r, p, "running");
  end_tx(r, good);
}

void runner_db_summary(runner *r, int done, const char *status) {
  if (r->db == NULL || r->db_failed) return;
  if (!exec(r, "BEGIN IMMEDIATE")) return;
  int good = 1;
  for (int p = 0; good && p < done; p++) good = put_problem(r, p, r->res[p].status);
  char now[64];
  runner_wall_clock(now, sizeof now);
  sqlite3_stmt *s = good ? prepare(r, "UPDATE runs SET status = ?1, updated = ?2, wall_seconds = ?3, ranks = ?4 WHERE run = ?5") : NULL;
  if (s != NULL) {
    bind_text(s, 1, status);
    bind_text(s, 2, now);
    sqlite3_bind_double(s, 3, dt_time_now() - r->t_start);
    sqlite3_bind_int(s, 4, r->size);
    sqlite3_bind_int64(s, 5, r->db_run);
    good = step_all(r, s, "update runs");
    sqlite3_finalize(s);
  } else {
    good = 0;
  }
  end_tx(r, good);
}

dt_status runner_db_status(const runner *r) {
  return r->db_failed ? DT_ERROR(DT_ERR_IO, "%s", r->db_error) : DT_OK;
}

void runner_db_close(runner *r) {
  sqlite3_finalize(r->db_eval);
  sqlite3_finalize(r->db_problem);
  r->db_eval = r->db_problem = NULL;
  if (r->db != NULL) sqlite3_close(r->db); /* the last connection folds the WAL into the file */
  r->db = NULL;
}
