/* The watchdog: a thread per rank that ends the job when the run has made no progress for
 * --watchdog seconds. A rank that stops answering (a frozen process, a host that went quiet)
 * leaves every other rank waiting in a collective for ever; a step that hangs does the same to
 * its own rank. The run beats its heartbeat (dt_heartbeat, dt/timer.h) in every node's gradients
 * and evaluation, every round, every node of a checkpoint and every row of a consensus matrix,
 * and says where it is (runner_watchdog_at, which arms the watchdog: the set-up, loading the data
 * and verifying a checkpoint are not watched).
 * When no beat comes for the limit, this rank prints where it waited and exits: mpirun or srun
 * then ends the other ranks, and without a launcher the process is the job. Nothing is written
 * on the way out, so the last checkpoint stays as it was and `dtrun resume` continues from it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dt/exchange.h"
#include "dt/timer.h"
#include "runner_impl.h"

struct runner_watchdog {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  int stop;
  atomic_int armed; /* from the first round on: set-up, loading and verifying take what they take */
  double limit;
  int rank, size;
  char host[128];
  const char *outdir; /* the runner's: set once during its set-up */
  /* where the run is, set by runner_watchdog_at */
  _Atomic(const char *) phase;
  atomic_int problem, round;
  const dt_config *cfg;
};

static void *watch(void *arg) {
  runner_watchdog *w = arg;
  pthread_mutex_lock(&w->lock);
  while (!w->stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&w->wake, &w->lock, &until);
    if (w->stop) break;
    if (!atomic_load(&w->armed)) continue;
    const double age = dt_heartbeat_age();
    if (age < w->limit) continue;
    const int p = atomic_load(&w->problem), k = atomic_load(&w->round);
    char msg[2048];
    snprintf(msg, sizeof msg,
             "dtrun: rank %d of %d (%s): no progress for %.0f s, in %s of problem %s at round %d: a rank stopped answering, or a "
             "step hangs; ending the job (--watchdog %g s). The last checkpoint is kept: continue with dtrun resume %s\n",
             w->rank, w->size, w->host, age, atomic_load(&w->phase),
             p >= 0 && p < w->cfg->num_problems ? w->cfg->problems[p].problem_name : "(none)", k, w->limit,
             w->outdir[0] ? w->outdir : "RUN_DIR");
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
  w->rank = r->rank;
  w->size = r->size;
  w->cfg = r->cfg;
  dt_comm_host(w->host, sizeof w->host);
  w->outdir = r->outdir;
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
  r->watchdog = w;
  return DT_OK;
}

void runner_watchdog_at(runner *r, const char *phase, int problem, int round) {
  dt_heartbeat();
  runner_watchdog *w = r->watchdog;
  if (w == NULL) return;
  atomic_store(&w->phase, phase);
  atomic_store(&w->problem, problem);
  atomic_store(&w->round, round);
  atomic_store(&w->armed, 1);
}

void runner_watchdog_stop(runner *r) {
  runner_watchdog *w = r->watchdog;
  if (w == NULL) return;
  pthread_mutex_lock(&w->lock);
  w->stop = 1;
  pthread_cond_signal(&w->wake);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->wake);
  pthread_mutex_destroy(&w->lock);
  free(w);
  r->watchdog = NULL;
}
