/* TensorBoard event files (experiment.tensorboard): every evaluation of a problem as scalars in
 * <run>/tensorboard/<problem>/events.out.tfevents.<time>.<host>.<pid>, written by rank 0 as the
 * run goes, so `tensorboard --logdir <run>/tensorboard` (and W&B or MLflow, which import it)
 * shows a run live.
 *
 * The format (TensorFlow's TFRecord of tensorflow.Event protocol buffers): each record is its
 * length as a little-endian uint64, the masked CRC-32C of those 8 bytes, the bytes, and their
 * masked CRC-32C, masked as ((crc >> 15) | (crc << 17)) + 0xa282ead8. A file starts with an
 * Event {wall_time, file_version: "brain.Event:2"}; each evaluation is one Event {wall_time,
 * step: the round, summary {value {tag, simple_value} ...}} with, for every recorded metric,
 * `<metric>/mean`, `/min`, `/max` over the nodes and `<metric>/node_<i>` per node. A resumed
 * problem starts a new file with a SessionLog START at the first round it measures again, which
 * tells TensorBoard to drop what the interrupted run wrote from that round on (a problem started
 * again from round 0, over an earlier start's files, says so at step 0). Problems whose names
 * map to one folder name get their index appended.
 *
 * The files mirror results.sqlite, which stays the source of truth: a write that fails is said
 * once on stderr and the mirror stops; the run goes on. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runner_impl.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the event records are written as the host's bytes");

static uint32_t masked(const void *data, size_t n) {
  const uint32_t crc = dt_crc32c(0, data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* ---- protocol buffer wire format ------------------------------------------------------------ */

static void put_varint(strbuf *b, uint64_t v) {
  unsigned char out[10];
  int n = 0;
  do {
    out[n] = (unsigned char)(v & 0x7f);
    v >>= 7;
    if (v) out[n] |= 0x80;
    n++;
  } while (v);
  sb_put(b, out, (size_t)n);
}
static void put_key(strbuf *b, int field, int wire) { put_varint(b, (uint64_t)field << 3 | (uint64_t)wire); }
static void put_bytes(strbuf *b, int field, const void *data, size_t n) {
  put_key(b, field, 2);
  put_varint(b, n);
  sb_put(b, data, n);
}
static void put_double(strbuf *b, int field, double v) {
  put_key(b, field, 1);
  sb_put(b, &v, 8); /* little-endian hosts (the static assertion below) */
}
static void put_float(strbuf *b, int field, float v) {
  put_key(b, field, 5);
  sb_put(b, &v, 4);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Writes one record of the event in ev; on failure says why once and stops the mirror. */
static void write_record(runner *r, const strbuf *ev) {
  if (r->tb == NULL) return;
  if (ev->failed) goto fail;
  const uint64_t len = ev->len;
  const uint32_t lcrc = masked(&len, 8), dcrc = masked(ev->data, ev->len);
  if (fwrite(&len, 8, 1, r->tb) != 1 || fwrite(&lcrc, 4, 1, r->tb) != 1 || fwrite(ev->data, 1, ev->len, r->tb) != ev->len ||
      fwrite(&dcrc, 4, 1, r->tb) != 1 || fflush(r->tb) != 0)
    goto fail;
  return;
fail:
  fprintf(stderr, "dtrun: warning: %s: %s; TensorBoard's copy of this problem stops here (results.sqlite has everything)\n",
          r->tb_path, ev->failed ? "out of memory" : strerror(errno));
  fclose(r->tb);
  r->tb = NULL;
}

static int mkdir_ok(const char *path) { return mkdir(path, 0777) == 0 || errno == EEXIST; }

/* A problem's name as a folder name: what is not a letter, digit, '.', '-' or '_' becomes '_'. */
static void folder_name(const char *problem, char *name, size_t size) {
  snprintf(name, size, "%s", problem);
  for (char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' || *c == '-' || *c == '_'))
      *c = '_';
  if (name[0] == '.') name[0] = '_';
}

void runner_tb_begin(runner *r, const problem_run *pr, int purge_from) {
  if (!r->cfg->experiment.tensorboard || r->rank != 0 || !r->write_ckpt) return;
  char dir[sizeof r->tb_path], name[160], other[128], host[256];
  folder_name(pr->pc->problem_name, name, sizeof name);
  for (int q = 0; q < r->cfg->num_problems; q++) { /* two names that map to one folder: each gets its index */
    folder_name(r->cfg->problems[q].problem_name, other, sizeof other);
    if (q != pr->index && strcmp(other, name) == 0) {
      folder_name(pr->pc->problem_name, other, sizeof other);
      snprintf(name, sizeof name, "%s_%d", other, pr->index);
      break;
    }
  }
  dt_comm_host(host, sizeof host);
  snprintf(dir, sizeof dir, "%s/tensorboard", r->outdir);
  int ok = mkdir_ok(dir);
  snprintf(dir, sizeof dir, "%s/tensorboard/%s", r->outdir, name);
  const int existed = access(dir, F_OK) == 0; /* an earlier start of this problem wrote here */
  ok = ok && mkdir_ok(dir);
  snprintf(r->tb_path, sizeof r->tb_path, "%s/events.out.tfevents.%010lld.%s.%d", dir, (long long)time(NULL), host, (int)getpid());
  r->tb = ok ? fopen(r->tb_path, "wb") : NULL;
  if (r->tb == NULL) {
    fprintf(stderr, "dtrun: warning: cannot write %s: %s; no TensorBoard copy of problem %s\n", ok ? r->tb_path : dir, strerror(errno),
            pr->pc->problem_name);
    return;
  }
  strbuf ev = {0};
  put_double(&ev, 1, now());
  put_bytes(&ev, 3, "brain.Event:2", 13);
  write_record(r, &ev);
  if (purge_from > 0 || existed) { /* resumed or started again: what was written from here on is stale */
    strbuf log = {0};
    put_varint(&log, 1 << 3 | 0); /* SessionLog.status = START (1) */
    put_varint(&log, 1);
    ev.len = 0;
    put_double(&ev, 1, now());
    put_key(&ev, 2, 0);
    put_varint(&ev, (uint64_t)purge_from);
    put_bytes(&ev, 6, log.data, log.len);
    write_record(r, &ev);
    sb_free(&log);
  }
  sb_free(&ev);
}

/* One scalar value of the summary. */
static void put_value(strbuf *summary, const char *tag, double v) {
  strbuf val = {0};
  put_bytes(&val, 1, tag, strlen(tag));
  put_float(&val, 2, (float)v);
  put_bytes(summary, 1, val.data, val.len);
  if (val.failed) summary->failed = 1;
  sb_free(&val);
}

void runner_tb_evaluation(runner *r, const problem_run *pr, int round) {
  if (r->tb == NULL) return;
  strbuf summary = {0}, ev = {0};
  char tag[160];
  for (int c = 0; c < NCOL; c++) {
    if (!pr->cols[c]) continue;
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int k = 0;
    for (int i = 0; i < r->n; i++) {
      const double v = r->all_rows[(size_t)i * NCOL + c];
      if (isnan(v)) continue; /* not measured on this node */
      lo = fmin(lo, v), hi = fmax(hi, v), sum += v, k++;
      snprintf(tag, sizeof tag, "%s/node_%d", runner_col_names[c], i);
      put_value(&summary, tag, v);
    }
    if (k == 0) continue;
    static const char *const stat[3] = {"mean", "min", "max"};
    const double s[3] = {sum / k, lo, hi};
    for (int q = 0; q < 3; q++) {
      snprintf(tag, sizeof tag, "%s/%s", runner_col_names[c], stat[q]);
      put_value(&summary, tag, s[q]);
    }
  }
  put_double(&ev, 1, now());
  put_key(&ev, 2, 0);
  put_varint(&ev, (uint64_t)round);
  put_bytes(&ev, 5, summary.data, summary.len);
  if (summary.failed) ev.failed = 1;
  write_record(r, &ev);
  sb_free(&summary);
  sb_free(&ev);
}

void runner_tb_end(runner *r) {
  if (r->tb == NULL) return;
  if (fclose(r->tb) != 0)
    fprintf(stderr, "dtrun: warning: %s: %s (TensorBoard's copy; results.sqlite has everything)\n", r->tb_path, strerror(errno));
  r->tb = NULL;
}
