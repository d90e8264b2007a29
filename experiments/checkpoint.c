/* Checkpoints: the complete state of a run at a round boundary, so that `dtrun resume` continues
 * to the same bytes at any rank count.
 *
 *   <run>/checkpoint/run.ckpt        rank 0's part: problem index and round, the results of the
 *                                    problems so far, the current problem's CSV text, timers,
 *                                    and the optimizer's replicated state
 *   <run>/checkpoint/node_<i>.ckpt   node i's state (dt_run_save_node): parameters, optimizer and
 *                                    algorithm state, minibatch and dropout streams, counters
 *
 * Node files depend on the node and the config only, never on P. Only rank 0 touches files:
 * each node's bytes travel to it (dt_comm_node_blobs_to_root), so no shared file system is
 * needed. A checkpoint is written into checkpoint.tmp/ and swapped in with renames, so a kill at
 * any moment leaves either the previous checkpoint or the new one complete: checkpoint/ or,
 * between the two renames, checkpoint.old/. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner_impl.h"

/* 002: each problem's results carry their column count (sim_time made 12); 001, written before,
 * had 11 and still resumes. */
static const char run_magic[8] = {'D', 'T', 'R', 'U', 'N', '0', '0', '2'};
static const char run_magic_v1[8] = {'D', 'T', 'R', 'U', 'N', '0', '0', '1'};
enum { V1_COLS = 11 };
static int is_run_magic(const void *m) { return memcmp(m, run_magic, 8) == 0 || memcmp(m, run_magic_v1, 8) == 0; }

static const char *const statuses[] = {"completed", "interrupted", "diverged", NULL};

static int status_index(const char *s) {
  for (int i = 0; statuses[i] != NULL; i++)
    if (strcmp(statuses[i], s) == 0) return i;
  return 0;
}

/* ---- folders ------------------------------------------------------------------------------ */

/* Removes dir and the files in it (checkpoint folders hold files only). */
static dt_status remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) return errno == ENOENT ? DT_OK : DT_ERROR(DT_ERR_IO, "cannot open folder %s: %s", dir, strerror(errno));
  struct dirent *e;
  dt_status st = DT_OK;
  while ((e = readdir(d)) != NULL && st == DT_OK) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char path[DT_PATH_MAX + 320];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (unlink(path) != 0 && errno != ENOENT) st = DT_ERROR(DT_ERR_IO, "cannot remove %s: %s", path, strerror(errno));
  }
  closedir(d);
  if (st == DT_OK && rmdir(dir) != 0 && errno != ENOENT) st = DT_ERROR(DT_ERR_IO, "cannot remove folder %s: %s", dir, strerror(errno));
  return st;
}

static void ckpt_path(const runner *r, const char *sub, char *buf, size_t size) { snprintf(buf, size, "%s/%s", r->outdir, sub); }

/* ---- writing ---------------------------------------------------------------------------------- */

typedef struct write_ctx {
  runner *r;
  dt_optimizer_run *run;
  char dir[DT_PATH_MAX + 96];
} write_ctx;

static dt_status give_node(void *ctx, int l, const void **data, size_t *size) {
  write_ctx *w = ctx;
  return dt_run_save_node(w->run, l, data, size);
}

static dt_status take_node(void *ctx, int node, const void *data, size_t size) {
  write_ctx *w = ctx;
  char name[64];
  snprintf(name, sizeof name, "node_%d.ckpt", node);
  return dt_write_atomic(w->dir, name, data, size);
}

static void put_u64(strbuf *sb, uint64_t v) { sb_put(sb, &v, 8); }
static void put_f64(strbuf *sb, double v) { sb_put(sb, &v, 8); }
static void put_bytes(strbuf *sb, const void *data, size_t n) {
  put_u64(sb, n);
  sb_put(sb, data, n);
}

/* rank 0's part of the checkpoint, as bytes */
static void encode_run(const runner *r, int p, int round, const problem_run *pr, const void *shared, size_t shared_size, strbuf *sb) {
  sb_put(sb, run_magic, 8);
  put_u64(sb, r->config_hash);
  put_u64(sb, (uint64_t)p);
  put_u64(sb, (uint64_t)round);
  put_u64(sb, (uint64_t)r->n);
  const int nres = round > 0 ? p + 1 : p;
  put_u64(sb, (uint64_t)nres);
  for (int q = 0; q < nres; q++) {
    const problem_result *res = &r->res[q];
    put_u64(sb, (uint64_t)status_index(res->status));
    put_u64(sb, (uint64_t)res->rounds_done);
    put_u64(sb, (uint64_t)res->diverged_round);
    put_u64(sb, NCOL);
    sb_put(sb, res->final, sizeof res->final);
    put_f64(sb, res->seconds);
    put_f64(sb, res->t_compute);
    put_f64(sb, res->t_comm);
    put_f64(sb, res->t_eval);
    put_f64(sb, res->bytes);
  }
  if (round > 0) {
    put_f64(sb, pr->run.t_compute.total);
    put_f64(sb, pr->run.t_comm.total);
    put_f64(sb, pr->t_eval.total);
    put_f64(sb, dt_time_now() - pr->t_start);
    put_bytes(sb, pr->csv.data, pr->csv.len);
    put_bytes(sb, pr->consensus_csv.data, pr->consensus_csv.len);
    put_bytes(sb, shared, shared_size);
  }
}

dt_status runner_checkpoint(runner *r, int p, int round, problem_run *pr) {
  if (!r->write_ckpt) return DT_OK;
  dt_status st = DT_OK;
  write_ctx w = {.r = r, .run = pr != NULL ? &pr->run : NULL};
  char cur[DT_PATH_MAX + 96], old[DT_PATH_MAX + 96];
  ckpt_path(r, "checkpoint.tmp", w.dir, sizeof w.dir);
  ckpt_path(r, "checkpoint", cur, sizeof cur);
  ckpt_path(r, "checkpoint.old", old, sizeof old);
  const double t0 = dt_time_now();
  if (r->rank == 0) {
    st = remove_dir(w.dir);
    if (st == DT_OK && mkdir(w.dir, 0777) != 0) st = DT_ERROR(DT_ERR_IO, "cannot create folder %s: %s", w.dir, strerror(errno));
  }
  double ok = st == DT_OK;
  DT_TRY(dt_comm_allreduce_min_f64(r->comm, &ok, 1));
  if (st != DT_OK) return st;
  DT_CHECK(ok == 1, DT_ERR_IO, "rank 0 could not create %s", w.dir);
  const void *shared = NULL;
  size_t shared_size = 0;
  if (round > 0) {
    DT_TRY(dt_comm_node_blobs_to_root(r->comm, r->n, give_node, take_node, &w));
    DT_TRY(dt_run_save_shared(&pr->run, &shared, &shared_size));
  }
  if (r->rank == 0) {
    strbuf sb = {0};
    encode_run(r, p, round, pr, shared, shared_size, &sb);
    st = sb.failed ? DT_ERROR(DT_ERR_MEMORY, "out of memory for the checkpoint") : dt_write_atomic(w.dir, "run.ckpt", sb.data, sb.len);
    sb_free(&sb);
    /* The swap: checkpoint/ → checkpoint.old/, checkpoint.tmp/ → checkpoint/, drop the old one.
     * checkpoint/ only ever comes complete from a rename, so when it exists a checkpoint.old/ left
     * by a kill in an earlier swap is stale; when it does not, checkpoint.old/ is the one to keep
     * until the new one is in place. */
    struct stat cur_sb;
    const int have_cur = stat(cur, &cur_sb) == 0;
    if (st == DT_OK && have_cur) st = remove_dir(old);
    if (st == DT_OK && have_cur && rename(cur, old) != 0) st = DT_ERROR(DT_ERR_IO, "cannot rename %s: %s", cur, strerror(errno));
    if (st == DT_OK && rename(w.dir, cur) != 0) st = DT_ERROR(DT_ERR_IO, "cannot rename %s to %s: %s", w.dir, cur, strerror(errno));
    if (st == DT_OK) st = remove_dir(old);
  }
  ok = st == DT_OK;
  DT_TRY(dt_comm_allreduce_min_f64(r->comm, &ok, 1));
  if (st != DT_OK) return st;
  DT_CHECK(ok == 1, DT_ERR_IO, "rank 0 could not write the checkpoint");
  r->last_ckpt = dt_time_now();
  r->ckpt_seconds += r->last_ckpt - t0;
  r->num_ckpt += round > 0;
  return DT_OK;
}

int runner_checkpoint_due(const runner *r, int round) {
  const dt_experiment_config *e = &r->cfg->experiment;
  if (!r->write_ckpt) return 0;
  if (e->checkpoint_every > 0 && round % e->checkpoint_every == 0) return 1;
  return e->checkpoint_minutes > 0 && dt_time_now() - r->last_ckpt >= 60.0 * e->checkpoint_minutes;
}

/* ---- reading ---------------------------------------------------------------------------------- */

typedef struct reader {
  const unsigned char *p, *end;
  const char *path;
  int v1; /* written by a dtrun of format 001 */
} reader;

static dt_status get(reader *rd, void *out, size_t n) {
  DT_CHECK((size_t)(rd->end - rd->p) >= n, DT_ERR_DATA, "%s: truncated", rd->path);
  memcpy(out, rd->p, n);
  rd->p += n;
  return DT_OK;
}

static dt_status get_u64(reader *rd, uint64_t *v) { return get(rd, v, 8); }
static dt_status get_f64(reader *rd, double *v) { return get(rd, v, 8); }

/* A length-prefixed byte string: *data points into the file buffer. */
static dt_status get_bytes(reader *rd, const unsigned char **data, size_t *n) {
  uint64_t len = 0;
  DT_TRY(get_u64(rd, &len));
  DT_CHECK(len <= (uint64_t)(rd->end - rd->p), DT_ERR_DATA, "%s: truncated", rd->path);
  *data = rd->p;
  *n = (size_t)len;
  rd->p += len;
  return DT_OK;
}

static dt_status read_file(const char *path, unsigned char **data, size_t *size) {
  *data = (unsigned char *)dt_read_file(path, size);
  DT_CHECK(*data != NULL, DT_ERR_DATA, "%s: cannot read: %s", path, strerror(errno));
  return DT_OK;
}

int runner_checkpoint_find(const char *outdir, char *dir, size_t size) {
  static const char *const subs[] = {"checkpoint", "checkpoint.old"};
  for (int i = 0; i < 2; i++) {
    char path[DT_PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/%s/run.ckpt", outdir, subs[i]);
    if (access(path, R_OK) == 0) {
      snprintf(dir, size, "%s/%s", outdir, subs[i]);
      return 1;
    }
  }
  return 0;
}

/* run.ckpt's head: magic, config hash, problem p, round, node count and the number of problem
 * results that follow, checked against this run. */
static dt_status decode_head(reader *rd, const runner *r, uint64_t *p, uint64_t *round, uint64_t *nres) {
  const char *path = rd->path;
  char magic[8];
  uint64_t hash = 0, n = 0;
  DT_TRY(get(rd, magic, 8));
  DT_CHECK(is_run_magic(magic), DT_ERR_DATA, "%s: not a dtrun checkpoint", path);
  rd->v1 = memcmp(magic, run_magic_v1, 8) == 0;
  DT_TRY(get_u64(rd, &hash));
  DT_CHECK(hash == r->config_hash, DT_ERR_CONFIG, "%s was written for another config than %s/config.yaml (was the config edited?)", path,
           r->outdir);
  DT_TRY(get_u64(rd, p));
  DT_TRY(get_u64(rd, round));
  DT_TRY(get_u64(rd, &n));
  DT_TRY(get_u64(rd, nres));
  DT_CHECK(n == (uint64_t)r->n && *p <= (uint64_t)r->cfg->num_problems && *nres <= *p + 1 &&
               *round <= (uint64_t)(*p < (uint64_t)r->cfg->num_problems ? r->cfg->problems[*p].outer_iterations : 0),
           DT_ERR_DATA, "%s: corrupt (problem %llu, round %llu)", path, (unsigned long long)*p, (unsigned long long)*round);
  return DT_OK;
}

/* One problem's result, as encode_run wrote it. */
static dt_status decode_result(reader *rd, problem_result *res) {
  uint64_t status = 0, done = 0;
  DT_TRY(get_u64(rd, &status));
  DT_CHECK(status < 3, DT_ERR_DATA, "%s: corrupt status", rd->path);
  res->status = statuses[status];
  DT_TRY(get_u64(rd, &done));
  res->rounds_done = (int)done;
  DT_TRY(get_u64(rd, &done));
  res->diverged_round = (int)done;
  uint64_t ncol = V1_COLS;
  if (!rd->v1) DT_TRY(get_u64(rd, &ncol));
  DT_CHECK(ncol >= 1 && ncol <= NCOL, DT_ERR_DATA, "%s: corrupt result columns (%llu)", rd->path, (unsigned long long)ncol);
  for (int c = 0; c < NCOL; c++) res->final[c][0] = res->final[c][1] = res->final[c][2] = NAN; /* columns it did not have */
  DT_TRY(get(rd, res->final, sizeof res->final[0] * (size_t)ncol));
  DT_TRY(get_f64(rd, &res->seconds));
  DT_TRY(get_f64(rd, &res->t_compute));
  DT_TRY(get_f64(rd, &res->t_comm));
  DT_TRY(get_f64(rd, &res->t_eval));
  DT_TRY(get_f64(rd, &res->bytes));
  return DT_OK;
}

/* The current problem's progress (a checkpoint after round > 0): timers, CSV text so far and the
 * optimizer's replicated state, copied out of the file buffer. */
static dt_status decode_progress(reader *rd, resume_point *rp) {
  const unsigned char *data;
  size_t len;
  DT_TRY(get_f64(rd, &rp->t_compute));
  DT_TRY(get_f64(rd, &rp->t_comm));
  DT_TRY(get_f64(rd, &rp->t_eval));
  DT_TRY(get_f64(rd, &rp->seconds));
  DT_TRY(get_bytes(rd, &data, &len));
  sb_free(&rp->csv);
  sb_put(&rp->csv, data, len);
  DT_TRY(get_bytes(rd, &data, &len));
  sb_free(&rp->consensus_csv);
  sb_put(&rp->consensus_csv, data, len);
  DT_TRY(get_bytes(rd, &data, &len));
  DT_ALLOC(rp->shared, len > 0 ? len : 1, "checkpoint");
  if (len > 0) memcpy(rp->shared, data, len);
  rp->shared_size = len;
  DT_CHECK(!rp->csv.failed && !rp->consensus_csv.failed, DT_ERR_MEMORY, "out of memory reading %s", rd->path);
  return DT_OK;
}

/* Rank 0: reads the checkpoint in r->outdir, if there is one, into rp and r->res. */
static dt_status read_run(runner *r, resume_point *rp) {
  if (!runner_checkpoint_find(r->outdir, rp->dir, sizeof rp->dir)) return DT_OK;
  dt_status st = DT_OK;
  unsigned char *buf = NULL;
  size_t size = 0;
  char path[DT_PATH_MAX + 160];
  snprintf(path, sizeof path, "%s/run.ckpt", rp->dir);
  reader rd = {.path = path};
  DT_TRY_GOTO(read_file(path, &buf, &size));
  rd.p = buf;
  rd.end = buf + size;
  uint64_t p = 0, round = 0, nres = 0;
  DT_TRY_GOTO(decode_head(&rd, r, &p, &round, &nres));
  rp->found = 1;
  rp->problem = (int)p;
  rp->round = (int)round;
  for (uint64_t q = 0; q < nres; q++) DT_TRY_GOTO(decode_result(&rd, &r->res[q]));
  if (round > 0) DT_TRY_GOTO(decode_progress(&rd, rp));
  DT_CHECK_GOTO(rd.p == rd.end, DT_ERR_DATA, "%s: unexpected bytes at the end", path);
cleanup:
  free(buf);
  return st;
}

/* Every rank learns from rank 0 the point to continue from, the results so far, the timers and
 * the replicated state. Collective. */
static dt_status share_run(runner *r, resume_point *rp) {
  int head[3] = {rp->found, rp->problem, rp->round};
  DT_TRY(dt_comm_bcast(r->comm, head, sizeof head, 0));
  rp->found = head[0], rp->problem = head[1], rp->round = head[2];
  /* res of the problems so far (status as an index: pointers do not travel) */
  for (int q = 0; q <= rp->problem && q < DT_MAX_PROBLEMS; q++) {
    int s = r->res[q].status != NULL ? status_index(r->res[q].status) : 0;
    DT_TRY(dt_comm_bcast(r->comm, &s, sizeof s, 0));
    const char *keep = statuses[s];
    r->res[q].status = NULL;
    DT_TRY(dt_comm_bcast(r->comm, &r->res[q], sizeof r->res[q], 0));
    r->res[q].status = keep;
  }
  double t[4] = {rp->t_compute, rp->t_comm, rp->t_eval, rp->seconds};
  DT_TRY(dt_comm_bcast(r->comm, t, sizeof t, 0));
  rp->t_compute = t[0], rp->t_comm = t[1], rp->t_eval = t[2], rp->seconds = t[3];
  uint64_t ss = rp->shared_size;
  DT_TRY(dt_comm_bcast(r->comm, &ss, sizeof ss, 0));
  if (r->rank != 0 && rp->round > 0) {
    DT_ALLOC(rp->shared, ss > 0 ? ss : 1, "checkpoint");
    rp->shared_size = ss;
  }
  if (rp->round > 0 && ss > 0) DT_TRY(dt_comm_bcast(r->comm, rp->shared, ss, 0));
  return DT_OK;
}

dt_status runner_checkpoint_load_run(runner *r, resume_point *rp) {
  memset(rp, 0, sizeof *rp);
  const dt_status st = r->rank == 0 ? read_run(r, rp) : DT_OK;
  /* every rank learns the outcome before any returns */
  double ok = st == DT_OK;
  DT_TRY(dt_comm_allreduce_min_f64(r->comm, &ok, 1));
  if (st != DT_OK) return st;
  DT_CHECK(ok == 1, DT_ERR_DATA, "rank 0 could not read the checkpoint");
  return share_run(r, rp);
}

typedef struct read_ctx {
  const resume_point *rp;
  dt_optimizer_run *run;
  unsigned char *buf;
  char path[DT_PATH_MAX + 160];
} read_ctx;

static dt_status give_file(void *ctx, int node, const void **data, size_t *size) {
  read_ctx *c = ctx;
  free(c->buf);
  c->buf = NULL;
  snprintf(c->path, sizeof c->path, "%s/node_%d.ckpt", c->rp->dir, node);
  DT_TRY(read_file(c->path, &c->buf, size));
  *data = c->buf;
  return DT_OK;
}

static dt_status take_state(void *ctx, int l, const void *data, size_t size) {
  read_ctx *c = ctx;
  char what[64];
  snprintf(what, sizeof what, "node_%d.ckpt", c->run->first + l);
  return dt_run_load_node(c->run, l, data, size, what);
}

dt_status runner_checkpoint_load_nodes(runner *r, const resume_point *rp, problem_run *pr) {
  read_ctx c = {.rp = rp, .run = &pr->run};
  dt_status st = dt_comm_node_blobs_from_root(r->comm, r->n, give_file, take_state, &c);
  free(c.buf);
  DT_TRY(st);
  DT_TRY(dt_run_load_shared(&pr->run, rp->shared, rp->shared_size, "run.ckpt"));
  pr->run.t_compute.total = rp->t_compute;
  pr->run.t_comm.total = rp->t_comm;
  pr->t_eval.total = rp->t_eval;
  pr->t_start = dt_time_now() - rp->seconds;
  if (r->rank == 0) {
    sb_free(&pr->csv);
    sb_free(&pr->consensus_csv);
    sb_put(&pr->csv, rp->csv.data, rp->csv.len);
    sb_put(&pr->consensus_csv, rp->consensus_csv.data, rp->consensus_csv.len);
    DT_CHECK(!pr->csv.failed && !pr->consensus_csv.failed, DT_ERR_MEMORY, "out of memory");
  }
  return DT_OK;
}

void runner_resume_point_free(resume_point *rp) {
  sb_free(&rp->csv);
  sb_free(&rp->consensus_csv);
  dt_free(rp->shared);
  memset(rp, 0, sizeof *rp);
}

dt_status runner_checkpoint_remove(runner *r) {
  if (r->rank != 0 || !r->write) return DT_OK;
  static const char *const subs[] = {"checkpoint.tmp", "checkpoint", "checkpoint.old"};
  for (int i = 0; i < 3; i++) {
    char dir[DT_PATH_MAX + 96];
    ckpt_path(r, subs[i], dir, sizeof dir);
    DT_TRY(remove_dir(dir));
  }
  return DT_OK;
}

int dt_run_checkpoint_describe(const char *dir, const dt_config *cfg, char *buf, size_t size) {
  char found[DT_PATH_MAX + 96], path[DT_PATH_MAX + 160];
  if (!runner_checkpoint_find(dir, found, sizeof found)) return 0;
  snprintf(path, sizeof path, "%s/run.ckpt", found);
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 0;
  unsigned char head[8 + 4 * 8];
  const size_t got = fread(head, 1, sizeof head, f);
  fclose(f);
  if (got != sizeof head || !is_run_magic(head)) {
    snprintf(buf, size, "%s (unreadable)", found);
    return 1;
  }
  uint64_t p, round;
  memcpy(&p, head + 16, 8);
  memcpy(&round, head + 24, 8);
  if (p >= (uint64_t)cfg->num_problems) snprintf(buf, size, "%s: every problem done", found);
  else if (round == 0) snprintf(buf, size, "%s: problem '%s' (%d of %d) from its start", found, cfg->problems[p].problem_name, (int)p + 1, cfg->num_problems);
  else
    snprintf(buf, size, "%s: problem '%s' (%d of %d) after round %d of %d", found, cfg->problems[p].problem_name, (int)p + 1,
             cfg->num_problems, (int)round, cfg->problems[p].outer_iterations);
  return 1;
}
