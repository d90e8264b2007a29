/* The watchdog: a thread per rank that ends the job when the run has made no progress for
 * --watchdog seconds. A rank that stops answering (a frozen process, a host that went quiet)
 * leaves every other rank waiting in a collective for ever; a step that hangs does the same to
 * its own rank. The run beats its heartbeat (dt_heartbeat, dt/timer.h) in every node's gradients
 * and evaluation, every round, every node of a checkpoint, every row of a consensus matrix, and
 * in the set-up's long loops (reading data and edge files, verifying and reading a checkpoint),
 * and says where it is (runner_watchdog_at). The set-up is watched too, as "the set-up".
 *
 * Which rank stopped: MPI is the main thread's alone (MPI_THREAD_FUNNELED) and a frozen rank
 * answers nothing, so the ranks tell each other through files. Once the run folder exists, each
 * rank's watchdog rewrites <run>/.alive/rank_<K> five times within the limit (its host, pid, wall
 * clock, heartbeat's age, and where it is); a rank whose record stops changing has stopped
 * answering. When this rank has made no progress for the limit it reads every record: a rank
 * gone quiet, or no rank making progress, ends the job, naming the quiet ranks (or, all alive,
 * those furthest behind); a rank alive and making progress keeps it going (others wait for it
 * without beating: rank 0 verifying or writing a large checkpoint). Without records (before the
 * run folder exists, writeout off, one rank) this rank's own progress decides. A rank that cannot
 * see the folder (another host without a shared file system) writes nothing and is named as
 * unknown. The records are removed when the run ends, and left behind after a job the watchdog
 * ended. A record's write or the reading of them that hangs (the folder's file system gone) ends
 * the process after the limit (SIGALRM's default action), which the others see as a rank gone
 * quiet.
 *
 * When it fires, this rank prints where it waited and which rank it waited for, and exits: mpirun
 * or srun then ends the other ranks, and without a launcher the process is the job. Nothing else
 * is written on the way out, so the last checkpoint stays as it was and `dtrun resume` continues
 * from it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dt/exchange.h"
#include "dt/timer.h"
#include "runner_impl.h"

enum { RECORD = 256 }; /* one rank's record: a line padded to a fixed length, rewritten in place */

struct runner_watchdog {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  int stop;
  double limit, every; /* the limit; how often the record is rewritten */
  int rank, size;
  char host[128];
  /* set once by runner_watchdog_folder, under the lock */
  char outdir[DT_PATH_MAX + 64], alive[DT_PATH_MAX + 96];
  int fd; /* this rank's record, or -1 */
  /* where the run is, set by runner_watchdog_at */
  _Atomic(const char *) phase;
  atomic_int problem, round;
  const dt_config *cfg;
};

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *problem_name(const runner_watchdog *w, int p) {
  return p >= 0 && p < w->cfg->num_problems ? w->cfg->problems[p].problem_name : "(none)";
}

/* Where a rank is, in words: "in a round of problem dsgd at round 120". */
static void where(const runner_watchdog *w, const char *phase, int p, int k, char *buf, size_t size) {
  if (p < 0) snprintf(buf, size, "in %s", phase);
  else snprintf(buf, size, "in %s of problem %s at round %d", phase, problem_name(w, p), k);
}

static void write_record(runner_watchdog *w) {
  if (w->fd < 0) return;
  char rec[RECORD], phase[64];
  snprintf(phase, sizeof phase, "%s", atomic_load(&w->phase));
  for (char *c = phase; *c; c++) /* one word in the record */
    if (*c == ' ') *c = '_';
  int len = snprintf(rec, sizeof rec, "dtrun-alive %d %ld %.3f %.3f %d %d %.100s\t%s", w->rank, (long)getpid(), wall_now(), dt_heartbeat_age(),
                     atomic_load(&w->problem), atomic_load(&w->round), w->host, phase);
  if (len < 0 || len > RECORD - 1) len = RECORD - 1;
  memset(rec + len, ' ', (size_t)(RECORD - 1 - len));
  rec[RECORD - 1] = '\n';
  const ssize_t put = pwrite(w->fd, rec, RECORD, 0); /* on a full disk the record is only older */
  (void)put;
}

/* Rank k's record: 1 and its fields when it reads, 0 when there is none (yet) or it is cut. */
typedef struct record {
  long pid;
  double wall, beat;
  int problem, round;
  char host[128], phase[64];
} record;

static int read_record(const runner_watchdog *w, int k, record *rc) {
  char path[DT_PATH_MAX + 128], rec[RECORD + 1];
  snprintf(path, sizeof path, "%s/rank_%d", w->alive, k);
  const int fd = open(path, O_RDONLY | O_NONBLOCK);
  if (fd < 0) return 0;
  const ssize_t got = pread(fd, rec, RECORD, 0);
  close(fd);
  if (got != RECORD) return 0;
  rec[RECORD] = '\0';
  int rank = -1, at = 0;
  if (sscanf(rec, "dtrun-alive %d %ld %lf %lf %d %d %127s%n", &rank, &rc->pid, &rc->wall, &rc->beat, &rc->problem, &rc->round, rc->host,
             &at) != 7 || rank != k || rec[at] != '\t')
    return 0;
  const char *phase = rec + at + 1, *end = strchr(phase, ' ');
  const size_t n = end != NULL ? (size_t)(end - phase) : strlen(phase);
  snprintf(rc->phase, sizeof rc->phase, "%.*s", (int)(n < sizeof rc->phase ? n : sizeof rc->phase - 1), phase);
  for (char *c = rc->phase; *c; c++)
    if (*c == '_') *c = ' ';
  return 1;
}

static int before(int p, int k, int q, int j) { return p < q || (p == q && k < j); }

/* Appends "rank K (host, pid P) WHAT <where it is>" to buf, or counts it in *more past four. */
static void name(const runner_watchdog *w, int k, const record *rc, const char *what, char *buf, size_t size, size_t *used,
                 int *named, int *more) {
  if (*named == 4 || *used >= size) {
    ++*more;
    return;
  }
  char at[320];
  where(w, rc->phase, rc->problem, rc->round, at, sizeof at);
  *used += (size_t)snprintf(buf + *used, size - *used, "%srank %d (%s, pid %ld) %s %s", *named ? "; " : "", k, rc->host, rc->pid, what, at);
  ++*named;
}

/* The ranks this one waited for, in words, from every rank's record (at most four named): those
 * whose record went quiet (their process is not running), or, when every one is alive, those
 * furthest behind. */
static int culprits(const runner_watchdog *w, char *buf, size_t size, double *youngest) {
  buf[0] = '\0';
  *youngest = INFINITY;
  if (w->alive[0] == '\0' || w->size < 2) return 0;
  /* a record older than this: the rank is not running (two rewrites missed, and half the limit:
   * room for clock skew between hosts, a file system's write-back, a starved thread) */
  const double now = wall_now(), quiet = 2 * w->every + 0.5 > 0.5 * w->limit ? 2 * w->every + 0.5 : 0.5 * w->limit;
  size_t used = 0;
  int named = 0, more = 0, unknown = 0, seen = 0, min_p = 0, min_k = 0, max_p = 0, max_k = 0;
  for (int k = 0; k < w->size; k++) {
    record rc;
    if (!read_record(w, k, &rc)) {
      unknown++;
      continue;
    }
    if (rc.beat + (now - rc.wall) < *youngest) *youngest = rc.beat + (now - rc.wall); /* its progress, as of now */
    if (!seen++ || before(rc.problem, rc.round, min_p, min_k)) min_p = rc.problem, min_k = rc.round;
    if (seen == 1 || before(max_p, max_k, rc.problem, rc.round)) max_p = rc.problem, max_k = rc.round;
    if (k == w->rank || now - rc.wall < quiet) continue;
    char what[512];
    snprintf(what, sizeof what, "stopped answering: no sign of life for %.0f s, its last", now - rc.wall);
    name(w, k, &rc, what, buf, size, &used, &named, &more);
  }
  const int quiet_ranks = named + more;
  if (named == 0 && seen > 0 && before(min_p, min_k, max_p, max_k)) /* all alive: who is behind */
    for (int k = 0; k < w->size; k++) {
      record rc;
      if (!read_record(w, k, &rc) || rc.problem != min_p || rc.round != min_k) continue;
      char what[512];
      snprintf(what, sizeof what, "is furthest behind (no progress for %.0f s),", rc.beat);
      name(w, k, &rc, what, buf, size, &used, &named, &more);
    }
  else if (named == 0 && unknown == 0)
    used += (size_t)snprintf(buf, size, "every rank is alive and waits at the same point (a step hangs on each, or a message was lost)");
  if (more > 0 && used < size) used += (size_t)snprintf(buf + used, size - used, "; and %d more rank%s", more, more == 1 ? "" : "s");
  if (unknown > 0 && used < size)
    snprintf(buf + used, size - used, "%s%d rank%s left no record in %s (exited, or on a host that does not see the run folder)",
             used ? "; " : "", unknown, unknown == 1 ? "" : "s", w->alive);
  return quiet_ranks;
}

static void *watch(void *arg) {
  runner_watchdog *w = arg;
  pthread_mutex_lock(&w->lock);
  double last_write = 0;
  while (!w->stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    const long long wait_ns = (long long)(1e9 * (w->every < 1 ? w->every : 1)); /* a look every second at most */
    until.tv_sec += (time_t)((until.tv_nsec + wait_ns) / 1000000000LL);
    until.tv_nsec = (long)((until.tv_nsec + wait_ns) % 1000000000LL);
    pthread_cond_timedwait(&w->wake, &w->lock, &until);
    if (w->stop) break;
    const double now = wall_now();
    /* the records live on the run folder's file system, which may hang (a server gone): a write
     * or read that takes longer than the limit ends the process (SIGALRM's default action),
     * which the other ranks then see as a rank gone quiet */
    const unsigned guard = (unsigned)(w->limit < 10 ? 10 : w->limit);
    if (now - last_write >= w->every) {
      alarm(guard);
      write_record(w), last_write = now;
      alarm(0);
    }
    const double age = dt_heartbeat_age();
    if (age < w->limit) continue;
    char at[320], whom[1400], msg[2400];
    where(w, atomic_load(&w->phase), atomic_load(&w->problem), atomic_load(&w->round), at, sizeof at);
    alarm(guard);
    double youngest;
    const int quiet = culprits(w, whom, sizeof whom, &youngest);
    alarm(0);
    /* one rank may work long while the others wait for it without beating (rank 0 verifying or
     * writing a large checkpoint): once the records are there, a rank that is alive and making
     * progress keeps the job going; a rank gone quiet, or no rank progressing, ends it */
    if (quiet == 0 && youngest < w->limit) continue;
    snprintf(msg, sizeof msg,
             "dtrun: rank %d of %d (%s): no progress for %.0f s, %s%s%s: ending the job (--watchdog %g s). The last checkpoint "
             "is kept: continue with dtrun resume %s\n",
             w->rank, w->size, w->host, age, at, whom[0] ? "; " : ": a rank stopped answering, or a step hangs", whom,
             w->limit, w->outdir[0] ? w->outdir : "RUN_DIR");
    /* write(2), not stdio: the main thread may hold stdout's or stderr's lock for ever */
    if (write(STDERR_FILENO, msg, strlen(msg)) < 0) msg[0] = '\0';
    _exit(DT_WATCHDOG_EXIT);
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

dt_status runner_watchdog_start(runner *r) {
  const double limit = r->opt->watchdog;
  if (limit <= 0) return DT_OK;
  runner_watchdog *w = calloc(1, sizeof *w);
  DT_CHECK(w != NULL, DT_ERR_MEMORY, "out of memory");
  w->limit = limit;
  /* records rewritten five times within the limit (a quarter of a second to 30 s apart), so a
   * rank that stopped has a record older than two of those when another's watchdog fires */
  w->every = limit / 5 < 0.25 ? 0.25 : limit / 5 > 30 ? 30 : limit / 5;
  w->rank = r->rank;
  w->size = r->size;
  w->cfg = r->cfg;
  w->fd = -1;
  dt_comm_host(w->host, sizeof w->host);
  for (char *c = w->host; *c; c++)
    if (*c == ' ' || *c == '\t' || *c == '\n') *c = '_';
  atomic_store(&w->phase, "the set-up");
  atomic_store(&w->problem, -1);
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->wake, NULL);
  dt_heartbeat();
  if (pthread_create(&w->thread, NULL, watch, w) != 0) {
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return DT_ERROR(DT_ERR_INTERNAL, "cannot start the watchdog thread");
  }
  pthread_setname_np(w->thread, "dt-watchdog"); /* for ps, gdb and the fault tests */
  r->watchdog = w;
  return DT_OK;
}

void runner_watchdog_folder(runner *r) {
  runner_watchdog *w = r->watchdog;
  if (w == NULL || r->outdir[0] == '\0' || !r->cfg->experiment.writeout) return;
  char alive[sizeof w->alive], path[sizeof w->alive + 32];
  snprintf(alive, sizeof alive, "%s/.alive", r->outdir);
  snprintf(path, sizeof path, "%s/rank_%d", alive, r->rank);
  struct stat sb;
  int fd = -1;
  /* a rank on a host that does not see the run folder writes nothing (and makes no folder there) */
  if (stat(r->outdir, &sb) == 0 && S_ISDIR(sb.st_mode) && (mkdir(alive, 0777) == 0 || errno == EEXIST))
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0 && r->rank == 0) { /* the records of an earlier job of more ranks (a resume at another P) */
    DIR *d = opendir(alive);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
      int k = -1, at = 0;
      if (sscanf(e->d_name, "rank_%d%n", &k, &at) == 1 && e->d_name[at] == '\0' && k >= r->size) {
        char old[sizeof alive + 300];
        snprintf(old, sizeof old, "%s/%s", alive, e->d_name);
        unlink(old);
      }
    }
    if (d != NULL) closedir(d);
  }
  pthread_mutex_lock(&w->lock);
  snprintf(w->outdir, sizeof w->outdir, "%s", r->outdir);
  snprintf(w->alive, sizeof w->alive, "%s", alive);
  w->fd = fd;
  write_record(w);
  pthread_mutex_unlock(&w->lock);
}

void runner_watchdog_at(runner *r, const char *phase, int problem, int round) {
  dt_heartbeat();
  runner_watchdog *w = r->watchdog;
  if (w == NULL) return;
  atomic_store(&w->phase, phase);
  atomic_store(&w->problem, problem);
  atomic_store(&w->round, round);
}

void runner_watchdog_stop(runner *r) {
  runner_watchdog *w = r->watchdog;
  if (w == NULL) return;
  pthread_mutex_lock(&w->lock);
  w->stop = 1;
  pthread_cond_signal(&w->wake);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  if (w->fd >= 0) {
    char path[sizeof w->alive + 32];
    snprintf(path, sizeof path, "%s/rank_%d", w->alive, w->rank);
    close(w->fd);
    unlink(path);
    rmdir(w->alive); /* the last rank to leave removes the folder */
  }
  pthread_cond_destroy(&w->wake);
  pthread_mutex_destroy(&w->lock);
  free(w);
  r->watchdog = NULL;
}
