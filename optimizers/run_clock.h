/* The simulated clock, a layer of the run services (run_ctx.c, mix.c): each hook but
 * run_clock_free is called only when experiment.network has a speed (run->net), so a run without
 * it never enters this file. */
#ifndef DT_RUN_CLOCK_H
#define DT_RUN_CLOCK_H

#include "dt/optimizer.h"

void run_clock_free(dt_optimizer_run *run);
/* Around a gradient call of the active local nodes (NULL: all): each one's step is charged. */
void run_clock_before_step(dt_optimizer_run *run, const uint8_t *active);
void run_clock_after_step(dt_optimizer_run *run, const uint8_t *active);
/* After an exchange whose active edges are mask (NULL: all) and whose messages are `bytes` each:
 * every local node waits for its in-edges' messages. Collective. */
DT_MUST_USE dt_status run_clock_exchange(dt_optimizer_run *run, const uint8_t *mask, double bytes);
/* A sequential sweep (mix.c), whose messages go in stages that depend on the rank count: its
 * exchanges hold the clocks, and then, in node order over all nodes, each node i waits for its
 * lower-id neighbours' new vectors: t_i ← max(t_i, t_j + message(j → i)) for j < i, t_j already
 * this sweep's. The same at every rank count. Collective. */
DT_MUST_USE dt_status run_clock_sweep(dt_optimizer_run *run, double bytes);
/* The centre hosted with node 0: pushes of `bytes` from the nodes with sends[node] (NULL: all)
 * move node 0's clock to the last arrival; a reply of `bytes` to every other node with to[node]
 * (NULL: all) moves each to its arrival (when later). Collective. */
DT_MUST_USE dt_status run_clock_centre(dt_optimizer_run *run, const uint8_t *sends, double bytes);
DT_MUST_USE dt_status run_clock_reply(dt_optimizer_run *run, const uint8_t *to, double bytes);

#endif
