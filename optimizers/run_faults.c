/* experiment.network's faults in the run context (rules in dt/optimizer.h, draws in dt/faults.h).
 * Every rank computes every edge's fate from the replicated masks and the shared streams, so
 * what arrives is the same for every rank count; each rank counts its own nodes' messages. */
#include <stdlib.h>
#include <string.h>

#include "dt/optimizer.h"
#include "run_faults.h"
#include "run_impl.h"

dt_status dt_run_set_faults(dt_optimizer_run *run, dt_faults *f, int on_missing) {
  dt_status st = DT_OK;
  const size_t m = 2 * (size_t)run->graph->num_edges + 1;
  const size_t count = (size_t)run->count + 1;
  run->faults = f;
  run->on_missing = on_missing;
  DT_ALLOC_GOTO(run->online, (size_t)run->graph->n, "faults");
  DT_ALLOC_GOTO(run->link_up, m, "faults");
  DT_ALLOC_GOTO(run->delivered, m, "faults");
  DT_ALLOC_GOTO(run->fault_sent, m, "faults");
  DT_ALLOC_GOTO(run->fault_lost, m, "faults");
  DT_ALLOC_GOTO(run->burst, m, "faults");
  DT_ALLOC_GOTO(run->msgs, 3 * count, "faults");
  DT_ALLOC_GOTO(run->parked, count, "faults");
  DT_ALLOC_GOTO(run->parked_size, count, "faults");
  memset(run->online, 1, (size_t)run->graph->n);
  memset(run->link_up, 1, m);
  dt_faults_burst_start(f, run->burst);
  DT_TRY_GOTO(dt_run_keep_shared(run, "fault_exchanges", &run->exchanges, sizeof run->exchanges));
  DT_TRY_GOTO(dt_run_keep_shared(run, "fault_burst", run->burst, m - 1));
  DT_TRY_GOTO(dt_run_keep_nodes(run, "messages", run->msgs, 3 * sizeof(uint64_t)));
cleanup:
  return st;
}

void run_faults_free(dt_optimizer_run *run) {
  for (int l = 0; run->parked != NULL && l < run->count; l++) dt_free(run->parked[l]);
  dt_free(run->parked);
  dt_free(run->parked_size);
  dt_free(run->online);
  dt_free(run->link_up);
  dt_free(run->delivered);
  dt_free(run->fault_sent);
  dt_free(run->fault_lost);
  dt_free(run->burst);
  dt_free(run->msgs);
  dt_free(run->centre_up);
  dt_free(run->centre_burst);
  dt_free(run->centre_sent);
  dt_free(run->centre_lost);
  dt_free(run->centre_got);
}

dt_status dt_run_centre_faults(dt_optimizer_run *run) {
  dt_status st = DT_OK;
  if (run->faults == NULL) return DT_OK;
  const size_t n = (size_t)run->graph->n + 1;
  DT_ALLOC_GOTO(run->centre_up, n, "faults");
  DT_ALLOC_GOTO(run->centre_burst, 2 * n, "faults");
  DT_ALLOC_GOTO(run->centre_sent, n, "faults");
  DT_ALLOC_GOTO(run->centre_lost, n, "faults");
  DT_ALLOC_GOTO(run->centre_got, 2 * n, "faults");
  memset(run->centre_up, 1, n);
  dt_faults_centre_burst_start(run->faults, run->centre_burst);
  DT_TRY_GOTO(dt_run_keep_shared(run, "fault_centre_exchanges", &run->centre_exchanges, sizeof run->centre_exchanges));
  DT_TRY_GOTO(dt_run_keep_shared(run, "fault_centre_burst", run->centre_burst, 2 * (size_t)run->graph->n));
  DT_TRY_GOTO(dt_run_keep_shared(run, "fault_centre_messages", run->centre_msgs, sizeof run->centre_msgs));
cleanup:
  return st;
}

const uint8_t *dt_run_centre_send(dt_optimizer_run *run, int reply, const uint8_t *to, size_t bytes) {
  if (run->centre_up == NULL) return NULL;
  const int n = run->graph->n;
  uint8_t *sent = run->centre_sent, *lost = run->centre_lost, *got = run->centre_got + (reply ? n : 0);
  /* a push leaves an online node; a reply leaves the centre, which never leaves */
  for (int i = 0; i < n; i++) sent[i] = (to == NULL || to[i]) && (reply || run->online[i]);
  dt_faults_centre_loss(run->faults, run->centre_exchanges++, sent, run->centre_burst + (reply ? n : 0), lost);
  uint64_t sent_n = 0, lost_n = 0, got_n = 0;
  for (int i = 0; i < n; i++) {
    got[i] = sent[i] && !lost[i] && run->centre_up[i] && (!reply || run->online[i]);
    sent_n += sent[i], lost_n += sent[i] && !got[i], got_n += got[i];
  }
  /* node i's push is its message; the centre's replies and what it receives are its own (counted
   * with node 0's, its host, but kept apart: node 0's churn does not undo them) */
  for (int l = 0; l < run->count; l++) {
    const int i = run->first + l;
    uint64_t *c = run->msgs + 3 * (size_t)l;
    if (!reply) {
      c[0] += sent[i], c[1] += sent[i] && !got[i];
      run->node_bytes[l] += sent[i] * (uint64_t)bytes;
    } else {
      c[2] += got[i];
    }
  }
  if (!reply) {
    run->centre_msgs[2] += got_n;
  } else {
    run->centre_msgs[0] += sent_n, run->centre_msgs[1] += lost_n, run->centre_msgs[3] += sent_n * (uint64_t)bytes;
  }
  return got;
}

/* Local node l's whole state (the run's items and the task's streams: dt_run_save_node) into
 * parked[l]. */
static dt_status park(dt_optimizer_run *run, int l) {
  const void *data;
  size_t size;
  DT_TRY(dt_run_save_node(run, l, &data, &size));
  unsigned char *buf = realloc(run->parked[l], size + 1);
  DT_CHECK(buf != NULL, DT_ERR_MEMORY, "out of memory keeping an offline node's state (%zu bytes)", size);
  run->parked[l] = buf;
  run->parked_size[l] = size;
  memcpy(buf, data, size);
  return DT_OK;
}

static dt_status unpark(dt_optimizer_run *run, int l) {
  return dt_run_load_node(run, l, run->parked[l], run->parked_size[l], "an offline node's state");
}

dt_status run_faults_begin_round(dt_optimizer_run *run, int k) {
  dt_faults_round(run->faults, k, run->online, run->link_up);
  if (run->centre_up != NULL) dt_faults_centre_round(run->faults, k, run->centre_up);
  for (int l = 0; !run->unparked && l < run->count; l++)
    if (!run->online[run->first + l]) DT_TRY(park(run, l));
  return DT_OK;
}

dt_status run_faults_end_round(dt_optimizer_run *run) {
  for (int l = 0; !run->unparked && l < run->count; l++)
    if (!run->online[run->first + l]) DT_TRY(unpark(run, l));
  return DT_OK;
}

const uint8_t *run_faults_exchange(dt_optimizer_run *run, const uint8_t *mask) {
  const dt_graph *g = run->graph;
  uint8_t *sent = run->fault_sent, *lost = run->fault_lost, *got = run->delivered;
  for (int i = 0; i < g->n; i++)
    for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) sent[e] = (mask == NULL || mask[e]) && run->online[i];
  dt_faults_loss(run->faults, run->exchanges++, sent, run->burst, lost);
  for (int i = 0; i < g->n; i++)
    for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++)
      got[e] = sent[e] && !lost[e] && run->link_up[e] && run->online[g->nbr[e]];
  for (int l = 0; l < run->count; l++) {
    const int i = run->first + l;
    uint64_t *c = run->msgs + 3 * (size_t)l;
    for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
      const int j = g->nbr[e];
      c[0] += sent[e];
      c[1] += sent[e] && !got[e];
      c[2] += got[g->nbr_start[j] + dt_graph_nbr_index(g, j, i)]; /* j → i */
    }
  }
  return got;
}

int dt_run_messages(const dt_optimizer_run *run, int l, uint64_t out[3]) {
  for (int c = 0; c < 3; c++)
    out[c] = run->msgs == NULL ? 0
                               : run->msgs[3 * (size_t)l + c] + (run->first + l == 0 && run->centre_up != NULL ? run->centre_msgs[c] : 0);
  return run->msgs != NULL;
}

const uint8_t *dt_run_centre_replies(const dt_optimizer_run *run) {
  return run->centre_up != NULL ? run->centre_got + run->graph->n : NULL;
}

uint64_t dt_run_bytes(const dt_optimizer_run *run, int l) {
  return run->node_bytes[l] + (run->first + l == 0 && run->centre_up != NULL ? run->centre_msgs[3] : 0);
}

