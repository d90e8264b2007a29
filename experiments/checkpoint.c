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
 * needed. A checkpoint is written into checkpoint.tmp/ and swapped in with renames; the one
 * before it stays as checkpoint.old/. Every file ends in a trailer (its length and CRC-32C), and
 * resume verifies every file of checkpoint/ before it uses any: a damaged or changed file makes
 * it take checkpoint.old/ (saying so), and when that fails too it stops with exit 2, naming the
 * file. Files are read with a size bound and only when they are regular files. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dt/log.h"
#include "dt/yaml.h"
#include "runner_impl.h"

/* 003: every file of the checkpoint ends in a checksum trailer; 002 (each problem's results carry
 * their column count: sim_time made 12) and 001 (11 columns), written before, still resume,
 * unverified. */
static const char run_magic[8] = {'D', 'T', 'R', 'U', 'N', '0', '0', '3'};
static const char run_magic_v2[8] = {'D', 'T', 'R', 'U', 'N', '0', '0', '2'};
static const char run_magic_v1[8] = {'D', 'T', 'R', 'U', 'N', '0', '0', '1'};
enum { V1_COLS = 11 };
static int is_run_magic(const void *m) {
  return memcmp(m, run_magic, 8) == 0 || memcmp(m, run_magic_v2, 8) == 0 || memcmp(m, run_magic_v1, 8) == 0;
}

/* ---- the trailer: "DTCK", the CRC-32C of the content, the content's length (16 bytes) ------- */

enum { TRAILER = 16, TABLE_ENTRY = 16 /* run.ckpt's node table: length, CRC-32C, 4 spare bytes */ };

static void trailer_make(const void *data, size_t len, unsigned char t[TRAILER]) {
  const uint32_t crc = dt_crc32c(0, data, len);
  const uint64_t n = len;
  memcpy(t, "DTCK", 4);
  memcpy(t + 4, &crc, 4);
  memcpy(t + 8, &n, 8);
}

/* Whether trailer t is that of content of len bytes with CRC-32C crc. */
static int trailer_matches(const unsigned char t[TRAILER], uint64_t len, uint32_t crc) {
  uint32_t c;
  uint64_t n;
  memcpy(&c, t + 4, 4);
  memcpy(&n, t + 8, 8);
  return memcmp(t, "DTCK", 4) == 0 && n == len && c == crc;
}

/* Whether data[0..size) is content followed by its trailer; the content's length into *len. */
static int trailer_ok(const unsigned char *data, size_t size, size_t *len) {
  if (size < TRAILER || !trailer_matches(data + size - TRAILER, size - TRAILER, dt_crc32c(0, data, size - TRAILER))) return 0;
  *len = size - TRAILER;
  return 1;
}

/* Writes dir/name as data followed by its trailer, atomically. */
static dt_status write_checked(const char *dir, const char *name, const void *data, size_t len) {
  unsigned char *buf = malloc(len + TRAILER);
  DT_CHECK(buf != NULL, DT_ERR_MEMORY, "out of memory writing %s/%s", dir, name);
  if (len > 0) memcpy(buf, data, len);
  trailer_make(data, len, buf + len);
  const dt_status st = dt_write_atomic(dir, name, buf, len + TRAILER);
  free(buf);
  return st;
}

/* The largest run.ckpt this run can have written, from its config, graph and model: the head,
 * every problem's result, the largest problem's CSV text (R + 2 evaluations of n + 1 rows, each
 * column at most 40 characters; its consensus matrix's n² rows where it keeps one), the
 * algorithm's replicated state (its per-rank vectors, three more, and per-node and per-edge
 * records, as run_state.c keeps them) and the node table, with 64 KiB to spare. A file beyond it
 * is not one this run wrote, and is refused unread. */
static size_t run_ckpt_bound(const runner *r) {
  const double n = r->n, edges = r->graph != NULL ? (double)r->graph->num_edges : n * (n - 1) / 2;
  const size_t dim = r->task != NULL ? dt_task_dim(r->task) : 0;
  double most = 0;
  for (int p = 0; p < r->cfg->num_problems; p++) {
    const dt_problem_config *pc = &r->cfg->problems[p];
    const double evals = pc->outer_iterations + 2.0, row = 2 * 12 + NCOL * 40.0;
    double text = row + evals * (n + 1) * row;
    if (pc->metrics & DT_METRIC_CONSENSUS_MATRIX) text += 32 + evals * n * n * 56;
    const dt_optimizer_def *def = dt_optimizer_find(pc->alg_name);
    const dt_state_size s = def != NULL ? dt_optimizer_state_size(def, pc->alg_opts, dim) : (dt_state_size){.per_rank = 0};
    const double shared = 4.0 * (double)dt_slab_stride(dim) * (s.per_rank + 3) + 16 * (n + 2 * edges + 1);
    most = text + shared > most ? text + shared : most;
  }
  const double results = r->cfg->num_problems * (4 * 8 + sizeof r->res[0].final + 6 * 8.0);
  const double b = 8 + 5 * 8 + results + 4 * 8 + 3 * 8 + most + TABLE_ENTRY * n + 8 + TRAILER + 65536;
  return b < (double)(SIZE_MAX / 2) ? (size_t)b : SIZE_MAX / 2;
}

static const char *const statuses[] = {"completed", "interrupted", "diverged", NULL};

static int status_index(const char *s) {
  for (int i = 0; statuses[i] != NULL; i++)
    if (strcmp(statuses[i], s) == 0) return i;
  return 0;
}

/* ---- folders ------------------------------------------------------------------------------ */

/* nftw's callback of remove_dir: each entry, deepest first, links themselves (not what they
 * name); the first failure stops the walk and is kept in failed. */
static char failed[DT_PATH_MAX + 320];
static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
  (void)sb, (void)ftw;
  const int gone = type == FTW_DP ? rmdir(path) : unlink(path);
  if (gone == 0 || errno == ENOENT) return 0;
  snprintf(failed, sizeof failed, "%s: %s", path, strerror(errno));
  return 1;
}

/* Removes dir and everything in it. A checkpoint folder holds files only, but a damaged one may
 * hold anything in their place (a folder, a link, a FIFO): all of it goes, links not followed. */
static dt_status remove_dir(const char *dir) {
  struct stat sb;
  if (lstat(dir, &sb) != 0) return errno == ENOENT ? DT_OK : DT_ERROR(DT_ERR_IO, "cannot remove %s: %s", dir, strerror(errno));
  failed[0] = '\0';
  if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    return DT_ERROR(DT_ERR_IO, "cannot remove %s", failed[0] != '\0' ? failed : dir);
  return DT_OK;
}

static void ckpt_path(const runner *r, const char *sub, char *buf, size_t size) { snprintf(buf, size, "%s/%s", r->outdir, sub); }

/* ---- writing ---------------------------------------------------------------------------------- */

typedef struct write_ctx {
  runner *r;
  dt_optimizer_run *run;
  char dir[DT_PATH_MAX + 96];
  uint64_t *node_size; /* rank 0: each node file's content length and CRC-32C, for run.ckpt's table */
  uint32_t *node_crc;
} write_ctx;

static dt_status give_node(void *ctx, int l, const void **data, size_t *size) {
  write_ctx *w = ctx;
  dt_heartbeat();
  return dt_run_save_node(w->run, l, data, size);
}

static dt_status take_node(void *ctx, int node, const void *data, size_t size) {
  write_ctx *w = ctx;
  dt_heartbeat();
  char name[64];
  snprintf(name, sizeof name, "node_%d.ckpt", node);
  w->node_size[node] = size;
  w->node_crc[node] = dt_crc32c(0, data, size);
  return write_checked(w->dir, name, data, size);
}

static void put_u64(strbuf *sb, uint64_t v) { sb_put(sb, &v, 8); }
static void put_f64(strbuf *sb, double v) { sb_put(sb, &v, 8); }
static void put_bytes(strbuf *sb, const void *data, size_t n) {
  put_u64(sb, n);
  sb_put(sb, data, n);
}

/* rank 0's part of the checkpoint, as bytes; after round > 0 it ends in the table of the node
 * files (each one's content length and CRC-32C, then their count), which ties them to it */
static void encode_run(const runner *r, int p, int round, const problem_run *pr, const void *shared, size_t shared_size,
                       const write_ctx *w, strbuf *sb) {
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
    double compute, comm;
    dt_run_times(pr->run, &compute, &comm);
    put_f64(sb, compute);
    put_f64(sb, comm);
    put_f64(sb, pr->t_eval.total);
    put_f64(sb, dt_time_now() - pr->t_start);
    put_bytes(sb, pr->csv.data, pr->csv.len);
    put_bytes(sb, pr->consensus_csv.data, pr->consensus_csv.len);
    put_bytes(sb, shared, shared_size);
    for (int i = 0; i < r->n; i++) {
      const uint32_t zero = 0;
      put_u64(sb, w->node_size[i]);
      sb_put(sb, &w->node_crc[i], 4);
      sb_put(sb, &zero, 4);
    }
    put_u64(sb, (uint64_t)r->n);
  }
}

/* Every rank learns whether all succeeded (*ok = 1) so far; *st keeps this rank's own failure
 * (the exchange's failure when it had none), which is returned. Collective. */
static dt_status agree(const runner *r, dt_status *st, double *ok) {
  *ok = *st == DT_OK;
  const dt_status a = dt_comm_allreduce_min_f64(r->comm, ok, 1);
  if (*st == DT_OK) *st = a;
  return *st;
}

dt_status runner_checkpoint(runner *r, int p, int round, problem_run *pr) {
  if (!r->write_ckpt) return DT_OK;
  dt_status st = DT_OK;
  write_ctx w = {.r = r, .run = pr != NULL ? pr->run : NULL};
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
    if (r->rank == 0) {
      w.node_size = calloc((size_t)r->n, sizeof *w.node_size);
      w.node_crc = calloc((size_t)r->n, sizeof *w.node_crc);
      if (w.node_size == NULL || w.node_crc == NULL) st = DT_ERROR(DT_ERR_MEMORY, "out of memory for the checkpoint");
    }
    if (agree(r, &st, &ok) != DT_OK) goto cleanup;
    DT_CHECK_GOTO(ok == 1, DT_ERR_MEMORY, "rank 0 ran out of memory for the checkpoint");
    DT_TRY_GOTO(dt_comm_node_blobs_to_root(r->comm, r->n, give_node, take_node, &w));
    DT_TRY_GOTO(dt_run_save_shared(pr->run, &shared, &shared_size));
  }
  if (r->rank == 0) {
    strbuf sb = {0};
    encode_run(r, p, round, pr, shared, shared_size, &w, &sb);
    st = sb.failed ? DT_ERROR(DT_ERR_MEMORY, "out of memory for the checkpoint") : write_checked(w.dir, "run.ckpt", sb.data, sb.len);
    sb_free(&sb);
    /* The swap: drop checkpoint.old/, checkpoint/ → checkpoint.old/, checkpoint.tmp/ →
     * checkpoint/. checkpoint/ only ever comes complete from a rename, so when it exists the
     * checkpoint.old/ beside it is the one before it, now two back; when it does not (a kill
     * between the renames), checkpoint.old/ is the newest complete one and stays. */
    struct stat cur_sb;
    const int have_cur = stat(cur, &cur_sb) == 0;
    if (st == DT_OK && have_cur) st = remove_dir(old);
    if (st == DT_OK && have_cur && rename(cur, old) != 0) st = DT_ERROR(DT_ERR_IO, "cannot rename %s: %s", cur, strerror(errno));
    if (st == DT_OK && rename(w.dir, cur) != 0) st = DT_ERROR(DT_ERR_IO, "cannot rename %s to %s: %s", w.dir, cur, strerror(errno));
  }
  if (agree(r, &st, &ok) != DT_OK) goto cleanup;
  DT_CHECK_GOTO(ok == 1, DT_ERR_IO, "rank 0 could not write the checkpoint");
  r->last_ckpt = dt_time_now();
  r->ckpt_seconds += r->last_ckpt - t0;
  r->num_ckpt += round > 0;
cleanup:
  free(w.node_size);
  free(w.node_crc);
  return st;
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

/* The format of the checkpoint in dir: 3 (checksummed), 2 or 1 (not), or 0 when run.ckpt is
 * missing or not a dtrun checkpoint. */
static int ckpt_format(const char *dir) {
  char path[DT_PATH_MAX + 160];
  unsigned char magic[8];
  snprintf(path, sizeof path, "%s/run.ckpt", dir);
  FILE *f = dt_open_regular(path, NULL);
  if (f == NULL) return 0;
  const size_t got = fread(magic, 1, 8, f);
  fclose(f);
  if (got != 8) return 0;
  if (memcmp(magic, run_magic, 8) == 0) return 3;
  if (memcmp(magic, run_magic_v2, 8) == 0) return 2;
  return memcmp(magic, run_magic_v1, 8) == 0 ? 1 : 0;
}

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

/* A checkpoint file's content: read with the size bound and, when `checked` (format 3), its
 * trailer verified and cut off (*size is the content's length). */
static dt_status read_file(const char *path, int checked, size_t bound, unsigned char **data, size_t *size) {
  *data = (unsigned char *)dt_read_file_bounded(path, bound, size);
  /* what says the file is not a checkpoint (DT_ERR_DATA: resume passes over it) apart from what
   * says nothing of it (out of memory, an I/O error: resume stops, the checkpoint kept) */
  const int e = errno;
  DT_CHECK(*data != NULL, e == ENOMEM ? DT_ERR_MEMORY : e == EINVAL || e == EFBIG || e == ESTALE || e == ENOENT ? DT_ERR_DATA : DT_ERR_IO,
           "%s: cannot read: %s", path,
           e == EINVAL   ? "not a regular file"
           : e == EFBIG  ? "larger than a checkpoint can be"
           : e == ESTALE ? "it changed while being read"
                         : strerror(e));
  if (checked && !trailer_ok(*data, *size, size)) {
    free(*data);
    *data = NULL;
    return DT_ERROR(DT_ERR_DATA, "%s: damaged or changed (its checksum does not match)", path);
  }
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

/* The node table at the end of a format-3 run.ckpt after round > 0 (encode_run): its count and
 * entries; 0 when it is not there or not of n nodes. */
static int node_table(const unsigned char *content, size_t len, int n, const unsigned char **table) {
  uint64_t count = 0;
  if (len < 8) return 0;
  memcpy(&count, content + len - 8, 8);
  if (count != (uint64_t)n || (len - 8) / TABLE_ENTRY < count) return 0;
  *table = content + len - 8 - (size_t)count * TABLE_ENTRY;
  return 1;
}

/* run.ckpt checked without holding it in memory: a regular file of at most `bound` bytes (0: any
 * size), its checksum (format 3: `checked`) streamed in chunks, a stop signal honoured between
 * them; its round into *round and, after round > 0 in format 3, its table of n node files into
 * table (n × TABLE_ENTRY bytes, as encode_run wrote it: each file's length and CRC-32C). */
static dt_status scan_run(const char *path, int checked, size_t bound, int n, uint64_t *round, unsigned char *table) {
  struct stat sb;
  FILE *f = dt_open_regular(path, &sb);
  DT_CHECK(f != NULL, errno == EINVAL || errno == ENOENT ? DT_ERR_DATA : DT_ERR_IO, "%s: cannot read: %s", path,
           errno == EINVAL ? "not a regular file" : strerror(errno));
  const uint64_t size = (uint64_t)sb.st_size, tail = checked ? TRAILER : 0;
  const uint64_t content = size >= tail ? size - tail : 0, want = (uint64_t)n * TABLE_ENTRY + 8;
  dt_status st = DT_OK;
  unsigned char *buf = NULL, head[32] = {0}, trailer[TRAILER], count[8];
  if (bound > 0 && size > bound)
    st = DT_ERROR(DT_ERR_DATA, "%s: cannot read: larger than a checkpoint of this run can be (%llu bytes; at most %zu)", path,
                  (unsigned long long)size, bound);
  else if (size < 32 + tail) st = DT_ERROR(DT_ERR_DATA, "%s: damaged or changed (truncated: %llu bytes)", path, (unsigned long long)size);
  else if ((buf = malloc(1 << 20)) == NULL) st = DT_ERROR(DT_ERR_MEMORY, "out of memory reading %s", path);
  uint32_t crc = 0;
  for (uint64_t at = 0; st == DT_OK && at < content;) {
    const size_t got = fread(buf, 1, content - at < (1u << 20) ? (size_t)(content - at) : (size_t)1 << 20, f);
    if (got == 0)
      st = ferror(f) ? DT_ERROR(DT_ERR_IO, "%s: cannot read: %s", path, strerror(errno))
                     : DT_ERROR(DT_ERR_DATA, "%s: cannot read: it changed while being read", path);
    else if (dt_stop_requested()) st = DT_ERROR(DT_ERR_INTERRUPTED, "interrupted while verifying %s", path);
    if (st != DT_OK) break;
    if (at == 0) memcpy(head, buf, got < sizeof head ? got : sizeof head);
    if (checked) crc = dt_crc32c(crc, buf, got);
    at += got;
    dt_heartbeat(); /* the watchdog watches the set-up too */
  }
  free(buf);
  if (st == DT_OK && checked) {
    if (fread(trailer, 1, TRAILER, f) != TRAILER) st = DT_ERROR(DT_ERR_DATA, "%s: cannot read: it changed while being read", path);
    else if (!trailer_matches(trailer, content, crc)) st = DT_ERROR(DT_ERR_DATA, "%s: damaged or changed (its checksum does not match)", path);
  }
  memcpy(round, head + 24, 8);
  /* the node table, at the end of the content: its entries, then their count */
  if (st == DT_OK && checked && *round > 0) {
    uint64_t got = 0;
    if (content < want + 48 || fseeko(f, (off_t)(content - want), SEEK_SET) != 0 || fread(table, 1, want - 8, f) != want - 8 ||
        fread(count, 1, 8, f) != 8 || (memcpy(&got, count, 8), got != (uint64_t)n))
      st = DT_ERROR(DT_ERR_DATA, "%s: damaged or changed (its table of node files is not one of %d nodes)", path, n);
  }
  fclose(f);
  return st;
}

/* Rank 0: every file of the checkpoint in dir verified, or the first failure: run.ckpt (at most
 * `bound` bytes, 0: any; format 3: its checksum), then, for a checkpoint inside a problem
 * (round > 0), node_0..n−1.ckpt (format 3: each one's checksum, and its length and CRC against
 * run.ckpt's table, so a node file of another checkpoint is refused too; formats 1 and 2: their
 * presence). Nothing larger than a node's file is held in memory. */
static dt_status verify_dir(const char *dir, int n, size_t bound) {
  const int format = ckpt_format(dir);
  char path[DT_PATH_MAX + 160];
  snprintf(path, sizeof path, "%s/run.ckpt", dir);
  DT_CHECK(format > 0, DT_ERR_DATA, "%s: not a dtrun checkpoint", path);
  unsigned char *table = malloc((size_t)n * TABLE_ENTRY + 1);
  DT_CHECK(table != NULL, DT_ERR_MEMORY, "out of memory verifying %s", path);
  uint64_t round = 0;
  dt_status st = scan_run(path, format >= 3, bound, n, &round, table);
  for (int i = 0; st == DT_OK && round > 0 && i < n; i++) {
    dt_heartbeat();
    if (dt_stop_requested()) {
      st = DT_ERROR(DT_ERR_INTERRUPTED, "interrupted while verifying %s", dir);
      break;
    }
    snprintf(path, sizeof path, "%s/node_%d.ckpt", dir, i);
    if (format < 3) {
      if (access(path, R_OK) != 0) st = DT_ERROR(DT_ERR_DATA, "%s: missing", path);
      continue;
    }
    unsigned char *data = NULL;
    size_t size = 0;
    uint64_t want = 0;
    uint32_t crc = 0;
    memcpy(&want, table + (size_t)i * TABLE_ENTRY, 8);
    memcpy(&crc, table + (size_t)i * TABLE_ENTRY + 8, 4);
    /* no more than the length run.ckpt lists for it is read (a grown file is refused unread) */
    st = read_file(path, 1, want < SIZE_MAX / 2 ? (size_t)want + TRAILER : SIZE_MAX / 2, &data, &size);
    if (st == DT_OK) {
      if (want != size || dt_crc32c(0, data, size) != crc)
        st = DT_ERROR(DT_ERR_DATA, "%s: not the node file this checkpoint wrote (its run.ckpt lists another)", path);
    }
    free(data);
  }
  free(table);
  return st;
}

/* Rank 0: the newest checkpoint of r's folder whose files all verify, into dir (0 when there is
 * none). A damaged newer one is reported and removed, so that the next checkpoint's swap keeps
 * the good one as the one before; when every one is damaged, the newest one's failure. */
static dt_status choose_checkpoint(const runner *r, char *dir, size_t size, int *found) {
  static const char *const subs[] = {"checkpoint", "checkpoint.old"};
  char first[DT_PATH_MAX + 64] = "", damaged[DT_PATH_MAX + 96] = "";
  *found = 0;
  for (int i = 0; i < 2; i++) {
    char cand[DT_PATH_MAX + 96], path[DT_PATH_MAX + 128];
    snprintf(cand, sizeof cand, "%s/%s", r->outdir, subs[i]);
    snprintf(path, sizeof path, "%s/run.ckpt", cand);
    if (access(path, F_OK) != 0) continue;
    const dt_status v = verify_dir(cand, r->n, run_ckpt_bound(r));
    if (v == DT_OK) {
      if (first[0] != '\0') {
        dt_log_warn("%s; resuming from %s, the checkpoint before it", first, cand);
        DT_TRY(remove_dir(damaged));
      }
      snprintf(dir, size, "%s", cand);
      *found = 1;
      return DT_OK;
    }
    if (v != DT_ERR_DATA) return v; /* a signal, memory, an I/O error: nothing said of the files, none removed */
    if (first[0] == '\0') {
      snprintf(first, sizeof first, "%s", dt_error_message());
      snprintf(damaged, sizeof damaged, "%s", cand);
    }
  }
  DT_CHECK(first[0] == '\0', DT_ERR_DATA,
           "%s; no earlier checkpoint is intact: start the run again (dtrun run %s/config.yaml --output-dir %s --force)", first,
           r->outdir, r->outdir);
  return DT_OK;
}

/* run.ckpt's head: magic, config hash, problem p, round, node count and the number of problem
 * results that follow, checked against this run. */
static dt_status decode_head(reader *rd, const ckpt_expect *x, uint64_t *p, uint64_t *round, uint64_t *nres) {
  const char *path = rd->path;
  char magic[8];
  uint64_t hash = 0, n = 0;
  DT_TRY(get(rd, magic, 8));
  DT_CHECK(is_run_magic(magic), DT_ERR_DATA, "%s: not a dtrun checkpoint", path);
  rd->v1 = memcmp(magic, run_magic_v1, 8) == 0;
  DT_TRY(get_u64(rd, &hash));
  DT_CHECK(hash == x->config_hash, DT_ERR_CONFIG, "%s was written for another config than %s/config.yaml (was the config edited?)", path,
           x->outdir);
  DT_TRY(get_u64(rd, p));
  DT_TRY(get_u64(rd, round));
  DT_TRY(get_u64(rd, &n));
  DT_TRY(get_u64(rd, nres));
  DT_CHECK(n == (uint64_t)x->n && *p <= (uint64_t)x->cfg->num_problems && *nres <= *p + 1 && *nres <= (uint64_t)x->cfg->num_problems &&
               *round <= (uint64_t)(*p < (uint64_t)x->cfg->num_problems ? x->cfg->problems[*p].outer_iterations : 0),
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

dt_status runner_checkpoint_decode(const char *path, const unsigned char *file, size_t size, int checked, const ckpt_expect *x,
                                   problem_result *res, resume_point *rp) {
  if (checked && !trailer_ok(file, size, &size)) return DT_ERROR(DT_ERR_DATA, "%s: damaged or changed (its checksum does not match)", path);
  reader rd = {.path = path, .p = file, .end = file + size};
  const unsigned char *table = NULL; /* the node files' table: the content ends before it */
  if (checked && size >= 32 && memcmp(file + 24, &(uint64_t){0}, 8) != 0 && node_table(file, size, x->n, &table)) rd.end = table;
  uint64_t p = 0, round = 0, nres = 0;
  DT_TRY(decode_head(&rd, x, &p, &round, &nres));
  rp->found = 1;
  rp->problem = (int)p;
  rp->round = (int)round;
  for (uint64_t q = 0; q < nres; q++) DT_TRY(decode_result(&rd, &res[q]));
  if (round > 0) DT_TRY(decode_progress(&rd, rp));
  DT_CHECK(rd.p == rd.end, DT_ERR_DATA, "%s: unexpected bytes at the end", path);
  return DT_OK;
}

/* Rank 0: reads the newest intact checkpoint in r->outdir, if there is one, into rp and r->res. */
static dt_status read_run(runner *r, resume_point *rp) {
  int found = 0;
  DT_TRY(choose_checkpoint(r, rp->dir, sizeof rp->dir, &found));
  if (!found) return DT_OK;
  unsigned char *buf = NULL;
  size_t size = 0;
  char path[DT_PATH_MAX + 160];
  snprintf(path, sizeof path, "%s/run.ckpt", rp->dir);
  rp->checked = ckpt_format(rp->dir) >= 3;
  DT_TRY(read_file(path, 0, run_ckpt_bound(r), &buf, &size)); /* the trailer is the decoder's to verify */
  const ckpt_expect x = {.config_hash = r->config_hash, .n = r->n, .cfg = r->cfg, .outdir = r->outdir};
  const dt_status st = runner_checkpoint_decode(path, buf, size, rp->checked, &x, r->res, rp);
  free(buf);
  return st;
}

/* Every rank learns from rank 0 the point to continue from, the results so far, the timers and
 * the replicated state. Collective. */
static dt_status share_run(runner *r, resume_point *rp) {
  int head[4] = {rp->found, rp->problem, rp->round, rp->checked};
  DT_TRY(dt_comm_bcast(r->comm, head, sizeof head, 0));
  rp->found = head[0], rp->problem = head[1], rp->round = head[2], rp->checked = head[3];
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
  dt_heartbeat();
  /* a node's file holds exactly its record (and the trailer): nothing larger is read */
  DT_TRY(read_file(c->path, c->rp->checked, dt_run_node_record_size(c->run, node) + TRAILER, &c->buf, size));
  *data = c->buf;
  return DT_OK;
}

static dt_status take_state(void *ctx, int l, const void *data, size_t size) {
  read_ctx *c = ctx;
  char what[64];
  snprintf(what, sizeof what, "node_%d.ckpt", dt_run_first(c->run) + l);
  return dt_run_load_node(c->run, l, data, size, what);
}

dt_status runner_checkpoint_load_nodes(runner *r, const resume_point *rp, problem_run *pr) {
  read_ctx c = {.rp = rp, .run = pr->run};
  dt_status st = dt_comm_node_blobs_from_root(r->comm, r->n, give_file, take_state, &c);
  free(c.buf);
  DT_TRY(st);
  DT_TRY(dt_run_load_shared(pr->run, rp->shared, rp->shared_size, "run.ckpt"));
  dt_run_set_times(pr->run, rp->t_compute, rp->t_comm);
  pr->t_eval.total = rp->t_eval;
  pr->t_start = dt_time_now() - rp->seconds;
  if (r->rank == 0) {
    sb_free(&pr->csv);
    sb_free(&pr->consensus_csv);
    sb_put(&pr->csv, rp->csv.data, rp->csv.len);
    sb_put(&pr->consensus_csv, rp->consensus_csv.data, rp->consensus_csv.len);
    DT_CHECK(!pr->csv.failed && !pr->consensus_csv.failed, DT_ERR_MEMORY, "out of memory");
    DT_TRY(runner_db_put_csv(r, rp->problem, rp->csv.data, rp->csv.len)); /* rows rebuilt: this problem's so far */
  }
  return DT_OK;
}

/* Rank 0: the data's digests against those summary.yaml recorded when the run started (roles it
 * does not list are not compared: a summary written before they were recorded). */
static dt_status compare_data(runner *r) {
  runner_files_end(r);
  char path[DT_PATH_MAX + 96];
  snprintf(path, sizeof path, "%s/summary.yaml", r->outdir);
  size_t len = 0;
  char *text = dt_read_file_bounded(path, DT_YAML_MAX_BYTES, &len);
  if (text == NULL) return DT_OK; /* resumable() refuses a folder without one */
  dt_ynode *root = NULL;
  dt_status st = dt_yaml_parse(text, len, path, &root);
  free(text);
  if (st != DT_OK) return DT_ERROR(DT_ERR_DATA, "%s is damaged: %s", path, dt_error_message());
  const dt_ynode *files = dt_ynode_get(root, "data_files");
  for (int k = 0; files != NULL && files->kind == DT_YN_MAP && k < files->n; k++) {
    const char *role = files->keys[k]->text, *hex = files->items[k]->kind == DT_YN_SCALAR ? files->items[k]->text : "";
    for (int i = 0; i < r->num_files; i++)
      if (strcmp(r->files[i].role, role) == 0 && strcmp(r->files[i].sha256, hex) != 0) {
        const char *dir = strcmp(role, "model_init") == 0    ? r->cfg->experiment.model.init_file
                          : strcmp(role, "batch_order") == 0 ? r->cfg->experiment.batch_order
                          : r->cfg->experiment.data_dir[0] != '\0' ? r->cfg->experiment.data_dir
                                                                   : "data/";
        if (st == DT_OK) /* the first change is the error */
          st = DT_ERROR(DT_ERR_DATA,
                        "%s: the data changed since this run started: %s (in %s) has SHA-256 %.12s..., summary.yaml "
                        "recorded %.12s...; put the original file back, or start a new run",
                        r->outdir, role, dir, r->files[i].sha256, hex);
        snprintf(r->files[i].sha256, sizeof r->files[i].sha256, "%s", hex); /* the summary keeps what the run started with */
        break;
      }
  }
  dt_ynode_free(root);
  return st;
}

dt_status runner_check_data(runner *r) {
  const dt_status st = r->rank == 0 ? compare_data(r) : DT_OK;
  double ok = st == DT_OK;
  DT_TRY(dt_comm_allreduce_min_f64(r->comm, &ok, 1));
  if (st != DT_OK) return st;
  DT_CHECK(ok == 1, DT_ERR_DATA, "rank 0 found the data changed since the run started");
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

/* One checkpoint folder's place in its run: the problem and round it continues from. */
static void describe_one(const char *found, const dt_config *cfg, char *buf, size_t size) {
  char path[DT_PATH_MAX + 160];
  snprintf(path, sizeof path, "%s/run.ckpt", found);
  FILE *f = fopen(path, "rb");
  unsigned char head[8 + 4 * 8];
  const size_t got = f != NULL ? fread(head, 1, sizeof head, f) : 0;
  if (f != NULL) fclose(f);
  if (got != sizeof head || !is_run_magic(head)) {
    snprintf(buf, size, "%s (unreadable)", found);
    return;
  }
  uint64_t p, round;
  memcpy(&p, head + 16, 8);
  memcpy(&round, head + 24, 8);
  if (p >= (uint64_t)cfg->num_problems) snprintf(buf, size, "%s: every problem done", found);
  else if (round == 0) snprintf(buf, size, "%s: problem '%s' (%d of %d) from its start", found, cfg->problems[p].problem_name, (int)p + 1, cfg->num_problems);
  else
    snprintf(buf, size, "%s: problem '%s' (%d of %d) after round %d of %d", found, cfg->problems[p].problem_name, (int)p + 1,
             cfg->num_problems, (int)round, cfg->problems[p].outer_iterations);
}

int dt_run_checkpoint_describe(const char *dir, const dt_config *cfg, char *buf, size_t size) {
  /* as resume chooses (choose_checkpoint): the newest whose files all verify, the damaged named */
  static const char *const subs[] = {"checkpoint", "checkpoint.old"};
  char bad[1024] = "";
  const int n = cfg->experiment.graph.num_nodes;
  for (int i = 0; i < 2; i++) {
    char cand[DT_PATH_MAX + 96], path[DT_PATH_MAX + 128], what[DT_PATH_MAX + 256];
    snprintf(cand, sizeof cand, "%s/%s", dir, subs[i]);
    snprintf(path, sizeof path, "%s/run.ckpt", cand);
    if (access(path, F_OK) != 0) continue;
    if (verify_dir(cand, n, 0) != DT_OK) { /* no model here to bound run.ckpt by: streamed */
      if (bad[0] == '\0') snprintf(bad, sizeof bad, "%s", dt_error_message());
      continue;
    }
    describe_one(cand, cfg, what, sizeof what);
    if (bad[0] == '\0')
      snprintf(buf, size, "%s (%s)", what, ckpt_format(cand) >= 3 ? "every file's checksum verified" : "an older format, without checksums");
    else snprintf(buf, size, "%s; resume continues from %s", bad, what);
    return 1;
  }
  if (bad[0] == '\0') return 0;
  snprintf(buf, size, "%s; no earlier checkpoint is intact", bad);
  return 1;
}
