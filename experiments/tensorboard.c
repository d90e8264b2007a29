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
 * A sweep's points write into the sweep's folder, <sweep>/tensorboard/<values>/<problem>/, the
 * run named by its swept values ("graph=cycle,seed=1"), so one logdir compares the points. For
 * TensorBoard's HParams tab (the hparams plugin: tensorboard/plugins/hparams/plugin_data.proto
 * and api.proto), every problem's file starts its session with a SessionStartInfo (each swept
 * value, the problem and its algorithm; sessions that differ only in their seeds form one group)
 * and ends it with a SessionEndInfo, and the logdir's root holds the Experiment: those
 * hyperparameters and the metrics' means. Per-rank quantities (time_compute, time_comm,
 * time_eval: a rank's nodes share their batched calls) are written per rank, not per node.
 *
 * The files mirror results.sqlite, which stays the source of truth: a write that fails is said
 * once on stderr and the mirror stops; the run goes on. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A google.protobuf.Value: a number when the text is one, else a string. */
static void put_pb_value(strbuf *b, int field, const char *text) {
  strbuf v = {0};
  char *end = NULL;
  const double x = strtod(text, &end);
  if (end != text && *end == '\0' && isfinite(x)) put_double(&v, 2, x);
  else put_bytes(&v, 3, text, strlen(text));
  put_bytes(b, field, v.data, v.len);
  if (v.failed) b->failed = 1;
  sb_free(&v);
}

/* A Summary.Value of the hparams plugin: tag, SummaryMetadata{plugin_data{"hparams", content}}
 * and the plugin's null tensor (a float32 scalar 0), as tensorboard's hparams summaries write. */
static void put_hparams_value(strbuf *summary, const char *tag, const strbuf *content) {
  strbuf pd = {0}, md = {0}, t = {0}, val = {0};
  put_bytes(&pd, 1, "hparams", 7);
  put_bytes(&pd, 2, content->data, content->len);
  put_bytes(&md, 1, pd.data, pd.len);
  put_key(&t, 1, 0);
  put_varint(&t, 1);      /* dtype DT_FLOAT */
  put_bytes(&t, 2, "", 0); /* shape: a scalar */
  const float zero = 0.0f;
  put_bytes(&t, 5, &zero, 4); /* float_val, packed */
  put_bytes(&val, 1, tag, strlen(tag));
  put_bytes(&val, 9, md.data, md.len);
  put_bytes(&val, 8, t.data, t.len);
  put_bytes(summary, 1, val.data, val.len);
  if (pd.failed || md.failed || t.failed || val.failed || content->failed) summary->failed = 1;
  sb_free(&pd), sb_free(&md), sb_free(&t), sb_free(&val);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Writes one record of the event in ev; on failure says why once and stops the mirror. */
static void write_record(tb_file *t, const strbuf *ev) {
  if (t->f == NULL) return;
  if (ev->failed) goto fail;
  const uint64_t len = ev->len;
  const uint32_t lcrc = masked(&len, 8), dcrc = masked(ev->data, ev->len);
  if (fwrite(&len, 8, 1, t->f) != 1 || fwrite(&lcrc, 4, 1, t->f) != 1 || fwrite(ev->data, 1, ev->len, t->f) != ev->len ||
      fwrite(&dcrc, 4, 1, t->f) != 1 || fflush(t->f) != 0)
    goto fail;
  return;
fail:
  fprintf(stderr, "dtrun: warning: %s: %s; TensorBoard's copy of this problem stops here (results.sqlite has everything)\n",
          t->path, ev->failed ? "out of memory" : strerror(errno));
  fclose(t->f);
  t->f = NULL;
}

/* One Event{wall_time, step (none when < 0), summary} of the summary's values. */
static void write_summary(tb_file *t, const strbuf *summary, long long step) {
  strbuf ev = {0};
  put_double(&ev, 1, now());
  if (step >= 0) {
    put_key(&ev, 2, 0);
    put_varint(&ev, (uint64_t)step);
  }
  put_bytes(&ev, 5, summary->data, summary->len);
  if (summary->failed) ev.failed = 1;
  write_record(t, &ev);
  sb_free(&ev);
}

/* An hparams plugin record: HParamsPluginData with msg as its field `field` (2 experiment,
 * 3 session_start_info, 4 session_end_info) under tag. */
static void write_hparams(tb_file *t, const char *tag, int field, const strbuf *msg) {
  strbuf pd = {0}, summary = {0};
  put_bytes(&pd, field, msg->data, msg->len);
  if (msg->failed) pd.failed = 1;
  put_hparams_value(&summary, tag, &pd);
  write_summary(t, &summary, -1);
  sb_free(&pd), sb_free(&summary);
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

/* A swept key's short name: its last dotted part, or the whole key when another key of the point
 * ends the same way. */
static const char *short_key(const dt_run_options *o, int k) {
  const char *dot = strrchr(o->swept_keys[k], '.'), *s = dot != NULL ? dot + 1 : o->swept_keys[k];
  for (int j = 0; j < o->num_swept; j++) {
    const char *d = strrchr(o->swept_keys[j], '.');
    if (j != k && strcmp(d != NULL ? d + 1 : o->swept_keys[j], s) == 0) return o->swept_keys[k];
  }
  return s;
}

/* The point's run name ("graph=cycle,seed=1"; skip: a key left out, as the seeds when naming a
 * group), made a folder name. */
static void point_name(const dt_run_options *o, const char *skip, char *name, size_t size) {
  size_t used = 0;
  name[0] = '\0';
  for (int k = 0; k < o->num_swept && used < size; k++) {
    if (skip != NULL && strcmp(short_key(o, k), skip) == 0) continue;
    const int n = snprintf(name + used, size - used, "%s%s=%s", used ? "," : "", short_key(o, k), o->swept_values[k]);
    used += n > 0 ? (size_t)n : 0;
  }
  for (char *c = name; *c; c++)
    if (*c == '/' || *c == '\\' || (unsigned char)*c < 32) *c = '_';
  if (name[0] == '.') name[0] = '_';
}

/* The logdir: the sweep's tensorboard/ for a point, the run's otherwise. */
static int sweep_point(const runner *r) { return r->opt->db_dir != NULL && r->opt->num_swept > 0; }
static void logdir(const runner *r, char *dir, size_t size) {
  snprintf(dir, size, "%s/tensorboard", sweep_point(r) ? r->opt->db_dir : r->outdir);
}

/* The logdir's Experiment (once: a file of a fixed name, made exclusively): the hyperparameters
 * (each swept key, the problem, the algorithm) and the metrics' means. */
static void write_experiment(runner *r, const char *dir) {
  char path[DT_PATH_MAX + 600];
  snprintf(path, sizeof path, "%s/events.out.tfevents.0000000000.dtrun-hparams", dir);
  const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
  if (fd < 0) return; /* written by an earlier point or start (or not writable: the scalars still go) */
  tb_file t = {.f = fdopen(fd, "wb")};
  snprintf(t.path, sizeof t.path, "%s", path);
  if (t.f == NULL) close(fd);
  strbuf ev = {0}, exp = {0};
  put_double(&ev, 1, now());
  put_bytes(&ev, 3, "brain.Event:2", 13);
  write_record(&t, &ev);
  const dt_run_options *o = r->opt;
  for (int k = 0; k < o->num_swept + 2; k++) {
    strbuf hi = {0};
    const char *name = k < o->num_swept ? o->swept_keys[k] : k == o->num_swept ? "problem" : "algorithm";
    put_bytes(&hi, 1, name, strlen(name));
    if (k < o->num_swept) put_bytes(&hi, 2, short_key(o, k), strlen(short_key(o, k)));
    put_bytes(&exp, 4, hi.data, hi.len);
    sb_free(&hi);
  }
  static const int means[] = {COL_ACC, COL_VLOSS, COL_CONS, COL_TRAIN_LOSS};
  for (size_t m = 0; m < sizeof means / sizeof means[0]; m++) {
    strbuf mi = {0}, mn = {0};
    char tag[64];
    snprintf(tag, sizeof tag, "%s/mean", runner_col_names[means[m]]);
    put_bytes(&mn, 2, tag, strlen(tag));
    put_bytes(&mi, 1, mn.data, mn.len);
    put_key(&mi, 5, 0);
    put_varint(&mi, means[m] == COL_TRAIN_LOSS ? 1 : 2); /* DATASET_TRAINING, _VALIDATION */
    put_bytes(&exp, 5, mi.data, mi.len);
    sb_free(&mi), sb_free(&mn);
  }
  put_double(&exp, 3, now());
  write_hparams(&t, "_hparams_/experiment", 2, &exp);
  if (t.f != NULL) fclose(t.f);
  sb_free(&ev), sb_free(&exp);
}

/* The problem's session: SessionStartInfo{hparams, group_name, start_time_secs}. */
static void write_session_start(runner *r, const problem_run *pr) {
  const dt_run_options *o = r->opt;
  strbuf ssi = {0};
  for (int k = 0; k < o->num_swept + 2; k++) {
    strbuf entry = {0};
    const char *key = k < o->num_swept ? o->swept_keys[k] : k == o->num_swept ? "problem" : "algorithm";
    const char *val = k < o->num_swept ? o->swept_values[k] : k == o->num_swept ? pr->pc->problem_name : pr->pc->alg_name;
    put_bytes(&entry, 1, key, strlen(key));
    put_pb_value(&entry, 2, val);
    put_bytes(&ssi, 1, entry.data, entry.len);
    sb_free(&entry);
  }
  char group[512], seedless[400];
  point_name(o, "seed", seedless, sizeof seedless);
  snprintf(group, sizeof group, "%s%s%s", seedless, seedless[0] ? "/" : "", pr->pc->problem_name);
  put_bytes(&ssi, 4, group, strlen(group));
  put_double(&ssi, 5, now());
  write_hparams(&r->tb, "_hparams_/session_start_info", 3, &ssi);
  sb_free(&ssi);
}

/* A new event file in dir as t: its file_version, and a SessionLog START at step purge when
 * the run was resumed (purge > 0) or the folder held an earlier start's files (existed >= 0). */
static int open_events(tb_file *t, const char *dir, const char *host, int existed, int purge) {
  snprintf(t->path, sizeof t->path, "%s/events.out.tfevents.%010lld.%s.%d", dir, (long long)time(NULL), host, (int)getpid());
  t->f = fopen(t->path, "wb");
  if (t->f == NULL) return 0;
  strbuf ev = {0};
  put_double(&ev, 1, now());
  put_bytes(&ev, 3, "brain.Event:2", 13);
  write_record(t, &ev);
  if (purge > 0 || existed >= 0) { /* resumed or started again: what was written from here on is stale */
    strbuf log = {0};
    put_varint(&log, 1 << 3 | 0); /* SessionLog.status = START (1) */
    put_varint(&log, 1);
    ev.len = 0;
    put_double(&ev, 1, now());
    put_key(&ev, 2, 0);
    put_varint(&ev, (uint64_t)purge);
    put_bytes(&ev, 6, log.data, log.len);
    write_record(t, &ev);
    sb_free(&log);
  }
  sb_free(&ev);
  return t->f != NULL;
}

void runner_tb_begin(runner *r, const problem_run *pr, int purge_from) {
  if (!r->cfg->experiment.tensorboard || r->rank != 0 || !r->write_ckpt) return;
  char dir[sizeof r->tb.path], name[160], other[128], host[256], base[sizeof r->tb.path], point[256] = "";
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
  logdir(r, base, sizeof base);
  int ok = mkdir_ok(base);
  if (ok) write_experiment(r, base);
  if (sweep_point(r)) {
    point_name(r->opt, NULL, point, sizeof point);
    snprintf(dir, sizeof dir, "%s/%s", base, point);
    ok = ok && mkdir_ok(dir);
  }
  snprintf(dir, sizeof dir, "%s%s%s/%s", base, point[0] ? "/" : "", point, name);
  const int existed = access(dir, F_OK) == 0; /* an earlier start of this problem wrote here */
  if (!(ok && mkdir_ok(dir) && open_events(&r->tb, dir, host, existed ? purge_from : -1, purge_from))) {
    fprintf(stderr, "dtrun: warning: cannot write %s: %s; no TensorBoard copy of problem %s\n", ok ? r->tb.path : dir, strerror(errno),
            pr->pc->problem_name);
    return;
  }
  /* train_loss_recent, in the run <problem>/train: its value at a resumed run's first round was
   * measured before the checkpoint, so its purge starts a round later than the evaluations' */
  snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/train");
  if (r->cfg->experiment.tensorboard_train_loss_every > 0 && mkdir_ok(dir))
    open_events(&r->tb_train, dir, host, existed ? purge_from : -1, purge_from > 0 ? purge_from + 1 : 0);
  write_session_start(r, pr);
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
  if (r->tb.f == NULL) return;
  strbuf summary = {0};
  char tag[160];
  for (int c = 0; c < NCOL; c++) {
    if (!pr->cols[c]) continue;
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int k = 0;
    const int per_rank = c == COL_T_COMPUTE || c == COL_T_COMM || c == COL_T_EVAL; /* a rank's nodes share them */
    for (int q = 0, i = 0; per_rank ? q < r->size : i < r->n; q++, i++) {
      const int node = per_rank ? dt_placement_first(r->n, r->size, q) : i;
      if (per_rank && dt_placement_count(r->n, r->size, q) == 0) continue;
      const double v = r->all_rows[(size_t)node * NCOL + c];
      if (isnan(v)) continue; /* not measured on this node */
      lo = fmin(lo, v), hi = fmax(hi, v), sum += v, k++;
      snprintf(tag, sizeof tag, per_rank ? "%s/rank_%d" : "%s/node_%d", runner_col_names[c], per_rank ? q : i);
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
  write_summary(&r->tb, &summary, round);
  sb_free(&summary);
}

static void write_session_end(runner *r, int ok);

static void close_file(tb_file *t) {
  if (t->f != NULL && fclose(t->f) != 0)
    fprintf(stderr, "dtrun: warning: %s: %s (TensorBoard's copy; results.sqlite has everything)\n", t->path, strerror(errno));
  t->f = NULL;
}

void runner_tb_end(runner *r, int ok) {
  close_file(&r->tb_train);
  if (r->tb.f != NULL && ok >= 0) write_session_end(r, ok);
  close_file(&r->tb);
}

/* SessionEndInfo{status, end_time_secs}. */
static void write_session_end(runner *r, int ok) {
  strbuf sei = {0};
  put_key(&sei, 1, 0);
  put_varint(&sei, ok ? 1 : 2); /* STATUS_SUCCESS, STATUS_FAILURE */
  put_double(&sei, 2, now());
  write_hparams(&r->tb, "_hparams_/session_end_info", 4, &sei);
  sb_free(&sei);
}

void runner_tb_loss_reset(runner *r) {
  for (int l = 0; r->tb_loss_sum != NULL && l < r->count; l++) r->tb_loss_sum[l] = 0, r->tb_loss_n[l] = 0;
}

dt_status runner_tb_loss_mark(runner *r, const problem_run *pr) {
  if (!r->cfg->experiment.tensorboard || !r->write_ckpt || r->cfg->experiment.tensorboard_train_loss_every <= 0) return DT_OK;
  if (r->tb_loss_sum == NULL) {
    DT_ALLOC(r->tb_loss_sum, r->count + 1, "TensorBoard");
    DT_ALLOC(r->tb_loss_n, r->count + 1, "TensorBoard");
  }
  for (int l = 0; l < r->count; l++) dt_run_train_loss_totals(pr->run, l, &r->tb_loss_sum[l], &r->tb_loss_n[l]);
  return DT_OK;
}

dt_status runner_tb_round(runner *r, const problem_run *pr, int round) {
  const int every = r->cfg->experiment.tensorboard_train_loss_every;
  if (!r->cfg->experiment.tensorboard || !r->write_ckpt || every <= 0 || round % every != 0) return DT_OK;
  double mine[r->count > 0 ? r->count : 1], *all = NULL;
  for (int l = 0; l < r->count; l++) { /* the window's mean: the totals less those at the last write */
    double sum;
    long n;
    dt_run_train_loss_totals(pr->run, l, &sum, &n);
    mine[l] = n > r->tb_loss_n[l] ? (sum - r->tb_loss_sum[l]) / (double)(n - r->tb_loss_n[l]) : NAN;
    r->tb_loss_sum[l] = sum, r->tb_loss_n[l] = n;
  }
  dt_status st = DT_OK;
  if (r->rank == 0) DT_ALLOC(all, r->n + 1, "TensorBoard");
  st = dt_comm_gather_rows(r->comm, r->n, mine, 1, all);
  if (st == DT_OK && r->tb_train.f != NULL) {
    double lo = INFINITY, hi = -INFINITY, total = 0;
    int k = 0;
    for (int i = 0; i < r->n; i++)
      if (!isnan(all[i])) lo = fmin(lo, all[i]), hi = fmax(hi, all[i]), total += all[i], k++;
    if (k > 0) {
      strbuf summary = {0};
      put_value(&summary, "train_loss_recent/mean", total / k);
      put_value(&summary, "train_loss_recent/min", lo);
      put_value(&summary, "train_loss_recent/max", hi);
      write_summary(&r->tb_train, &summary, round);
      sb_free(&summary);
    }
  }
  dt_free(all);
  return st;
}
