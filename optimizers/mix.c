/* Mixing over exchanged vectors (see mix.h). The fixed id order makes the sum independent of
 * message arrival and of the node placement. */
#include "mix.h"

#include <string.h>

static void axpy(size_t d, float a, const float *x, float *y) {
  for (size_t q = 0; q < d; q++) y[q] += a * x[q];
}

void dt_mix(dt_optimizer_run *run, int i, int vec, float *out) {
  const dt_graph *g = run->graph;
  const size_t d = run->dim;
  const float *self = dt_exchange_send_buffer(run->exchange, i, vec);
  memset(out, 0, sizeof(float) * d);
  int self_done = 0;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    const int j = g->nbr[e];
    if (!self_done && j > i) {
      axpy(d, (float)g->w_self[i], self, out);
      self_done = 1;
    }
    axpy(d, (float)g->w_nbr[e], dt_exchange_recv(run->exchange, i, j, vec), out);
  }
  if (!self_done) axpy(d, (float)g->w_self[i], self, out);
}

dt_status dt_mix_sweep(dt_optimizer_run *run, int vec, float a, const dt_sweep_io *io) {
  const dt_graph *g = run->graph;
  const size_t d = run->dim;
  const int P = dt_comm_size(run->comm), me = dt_comm_rank(run->comm);
  dt_status st = DT_OK;
  uint8_t *mask = NULL;
  float *tmp = NULL;
  DT_ALLOC_GOTO(mask, 2 * (size_t)g->num_edges + 1, "sweep mask");
  DT_ALLOC_GOTO(tmp, d, "sweep");
  for (int s = 0; s < P; s++) {
    const int first = dt_placement_first(g->n, P, s), count = dt_placement_count(g->n, P, s);
    if (s == me) {
      for (int l = 0; l < run->count; l++) {
        const int i = run->first + l;
        float *own = dt_exchange_send_buffer(run->exchange, i, vec);
        const float *extra = io->extra ? io->extra(io->ctx, l) : NULL;
        const float wii = (float)g->w_self[i];
        for (size_t q = 0; q < d; q++) tmp[q] = wii * own[q];
        if (extra != NULL) axpy(d, a, extra, tmp);
        for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++)
          axpy(d, (float)g->w_nbr[e], dt_exchange_latest(run->exchange, i, g->nbr[e], vec), tmp);
        memcpy(own, tmp, sizeof(float) * d);
        float *out = io->out ? io->out(io->ctx, l) : NULL;
        if (out != NULL) memcpy(out, tmp, sizeof(float) * d);
      }
    }
    /* stage s's nodes send their new vectors upward; every rank knows the mask */
    memset(mask, 0, 2 * (size_t)g->num_edges);
    for (int i = first; i < first + count; i++)
      for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) mask[e] = g->nbr[e] > i;
    DT_TRY_GOTO(dt_run_exchange_go(run, mask));
  }
cleanup:
  dt_free(mask);
  dt_free(tmp);
  return st;
}

double dt_mix_sweep_bytes(const dt_graph *g, size_t dim, int nvec) {
  return (double)g->num_edges * nvec * (double)dim * sizeof(float);
}
