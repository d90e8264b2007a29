/* The simulated clock (experiment.network; rules in dt/network.h and dt/optimizer.h). Every
 * message an algorithm sends goes through run_ctx.c, which calls the functions here: a gradient
 * call charges each active node's step, an exchange lets each receiver wait for its active
 * in-edges, and a centre (a parameter server, an average) hosted with node 0 takes every push
 * and answers each node. Each rank updates its own nodes; the senders' clocks come from an
 * allgather of every node's clock before each exchange, so the arithmetic, in node order, is the
 * same on every rank for every rank count. */
#include <string.h>

#include "dt/optimizer.h"
#include "run_clock.h"
#include "run_impl.h"

dt_status dt_run_set_network(dt_optimizer_run *run, const dt_network *net) {
  dt_status st = DT_OK;
  run->net = net;
  DT_ALLOC_GOTO(run->sim_clock, (size_t)run->graph->n, "simulated clock");
  DT_ALLOC_GOTO(run->sim_steps, (size_t)run->count + 1, "simulated clock");
  DT_ALLOC_GOTO(run->sim_seen, (size_t)run->count + 1, "simulated clock");
  DT_TRY_GOTO(dt_run_keep_nodes(run, "sim_clock", run->sim_clock + run->first, sizeof(double)));
  DT_TRY_GOTO(dt_run_keep_nodes(run, "sim_steps", run->sim_steps, sizeof(uint64_t)));
cleanup:
  return st;
}

void run_clock_free(dt_optimizer_run *run) {
  dt_free(run->sim_clock);
  dt_free(run->sim_steps);
  dt_free(run->sim_seen);
}

void run_clock_before_step(dt_optimizer_run *run, const uint8_t *active) {
  for (int l = 0; l < run->count; l++)
    if (active == NULL || active[l]) run->sim_seen[l] = dt_task_samples_seen(run->task, run->first + l);
}

void run_clock_after_step(dt_optimizer_run *run, const uint8_t *active) {
  for (int l = 0; l < run->count; l++) {
    if (active != NULL && !active[l]) continue;
    const int i = run->first + l;
    const double samples = (double)(dt_task_samples_seen(run->task, i) - run->sim_seen[l]);
    run->sim_clock[i] += dt_network_step_seconds(run->net, i, run->sim_steps[l]++, samples);
  }
}

/* Every node's clock on every rank. */
static dt_status sync(dt_optimizer_run *run) {
  return dt_comm_allgather_nodes(run->comm, run->graph->n, run->sim_clock + run->first, run->sim_clock);
}

dt_status run_clock_exchange(dt_optimizer_run *run, const uint8_t *mask, double bytes) {
  if (run->sim_hold > 0) return DT_OK;
  const dt_graph *g = run->graph;
  DT_TRY(sync(run));
  double arrive[run->count > 0 ? run->count : 1];
  for (int l = 0; l < run->count; l++) {
    const int i = run->first + l;
    double t = run->sim_clock[i];
    for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
      const int j = g->nbr[e], back = dt_graph_nbr_index(g, j, i); /* the edge j → i in j's list */
      if (mask != NULL && !mask[g->nbr_start[j] + back]) continue;
      const double a = run->sim_clock[j] + dt_network_message_seconds(run->net, j, i, bytes);
      if (a > t) t = a;
    }
    arrive[l] = t;
  }
  for (int l = 0; l < run->count; l++) run->sim_clock[run->first + l] = arrive[l];
  return DT_OK;
}

dt_status run_clock_sweep(dt_optimizer_run *run, double bytes) {
  const dt_graph *g = run->graph;
  DT_TRY(sync(run));
  for (int i = 0; i < g->n; i++) /* every node, on every rank: the sweep is a chain in node order */
    for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1] && g->nbr[e] < i; e++) {
      const double a = run->sim_clock[g->nbr[e]] + dt_network_message_seconds(run->net, g->nbr[e], i, bytes);
      if (a > run->sim_clock[i]) run->sim_clock[i] = a;
    }
  return DT_OK;
}

/* Pushes to the centre (with node 0) from every node with sends[node] (NULL: all), `bytes` each:
 * node 0's clock becomes the last arrival (or stays, if later). */
dt_status run_clock_centre(dt_optimizer_run *run, const uint8_t *sends, double bytes) {
  DT_TRY(sync(run));
  double t = run->sim_clock[0];
  for (int j = 1; j < run->graph->n; j++) {
    if (sends != NULL && !sends[j]) continue;
    const double a = run->sim_clock[j] + dt_network_message_seconds(run->net, j, 0, bytes);
    if (a > t) t = a;
  }
  if (run->first == 0) run->sim_clock[0] = t;
  return DT_OK;
}

/* The centre's answer, `bytes` to every other node with to[node] (NULL: all), which goes on when
 * it has arrived. */
dt_status run_clock_reply(dt_optimizer_run *run, const uint8_t *to, double bytes) {
  DT_TRY(sync(run));
  for (int l = 0; l < run->count; l++) {
    const int i = run->first + l;
    if (i == 0 || (to != NULL && !to[i])) continue;
    const double a = run->sim_clock[0] + dt_network_message_seconds(run->net, 0, i, bytes);
    if (a > run->sim_clock[i]) run->sim_clock[i] = a;
  }
  return DT_OK;
}
