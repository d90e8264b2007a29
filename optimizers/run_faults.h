/* experiment.network's faults, a layer of the run services (run_ctx.c): each hook but
 * run_faults_free is called only under faults (run->faults), so a run without them never enters
 * this file. */
#ifndef DT_RUN_FAULTS_H
#define DT_RUN_FAULTS_H

#include "dt/optimizer.h"

void run_faults_free(dt_optimizer_run *run);
/* Round k's online nodes and working links; each offline local node's state is put aside. */
DT_MUST_USE dt_status run_faults_begin_round(dt_optimizer_run *run, int k);
/* Puts each offline local node's state back as it was before the round. */
DT_MUST_USE dt_status run_faults_end_round(dt_optimizer_run *run);
/* An exchange along mask (NULL: every edge): which messages are sent (the sender online: what
 * counts as bytes sent) and which arrive, into run->fault_sent and run->delivered, with the
 * message counters. Returns the mask the exchange and the clock run with. Not collective. */
const uint8_t *run_faults_exchange(dt_optimizer_run *run, const uint8_t *mask);

#endif
