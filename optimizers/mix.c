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

dt_status dt_mix_check_sequential(const dt_optimizer_run *run, const char *alg) {
  DT_CHECK(run->count == run->graph->n, DT_ERR_USAGE,
           "%s with update_order: sequential reproduces the seed reference's in-place sweep over nodes in id order; "
           "it needs all %d nodes in one process: run without mpirun (or with update_order: synchronous)",
           alg, run->graph->n);
  return DT_OK;
}

void dt_mix_inplace(const dt_optimizer_run *run, int i, float **v, float a, const float *extra) {
  const dt_graph *g = run->graph;
  const size_t d = run->dim;
  float *x = v[i];
  const float wii = (float)g->w_self[i];
  for (size_t q = 0; q < d; q++) x[q] *= wii;
  if (extra != NULL) axpy(d, a, extra, x);
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) axpy(d, (float)g->w_nbr[e], v[g->nbr[e]], x);
}
