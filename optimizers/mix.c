/* Mixing over exchanged vectors (see mix.h). The fixed id order makes the sum independent of
 * message arrival and of the node placement. */
#include "mix.h"

#include <string.h>

#include "options_impl.h"
#include "run_clock.h"
#include "run_impl.h"

const char *const dt_update_orders[] = {"synchronous", "sequential", NULL};

int dt_mix_terms(dt_optimizer_run *run, int i, int vec, const float **x, float *w, int *who) {
  return dt_mix_terms_on(run, run->exchange, i, vec, x, w, who);
}

/* Faults: when some of the round's messages to i did not arrive, the weights of the k terms that
 * did (self included) are divided by their sum (in double, in term order). Nothing changes when
 * all arrived. */
static void renormalise(const dt_optimizer_run *run, int i, float *w, int k) {
  const dt_graph *g = run->graph;
  const uint8_t *mask = run->round.mask;
  int missing = 0;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1] && !missing; e++) {
    const int j = g->nbr[e], in = g->nbr_start[j] + dt_graph_nbr_index(g, j, i);
    missing = (mask == NULL || mask[in]) && !run->delivered[in];
  }
  if (!missing) return;
  double sum = 0;
  for (int t = 0; t < k; t++) sum += w[t];
  for (int t = 0; t < k; t++) w[t] = (float)(w[t] / sum);
}

int dt_mix_terms_on(dt_optimizer_run *run, dt_exchange *ex, int i, int vec, const float **x, float *w, int *who) {
  const dt_graph *g = run->graph;
  const dt_round_graph *rg = &run->round;
  const float *self = dt_exchange_send_buffer(ex, i, vec);
  int k = 0, self_done = 0;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    const int j = g->nbr[e];
    if (!self_done && j > i) {
      if (who != NULL) who[k] = i;
      x[k] = self, w[k++] = (float)rg->w_self[i];
      self_done = 1;
    }
    const float *xj = dt_exchange_recv(ex, i, j, vec); /* NULL: j → i idle this round */
    if (xj == NULL) continue;
    if (who != NULL) who[k] = j;
    x[k] = xj, w[k++] = (float)rg->w_nbr[e];
  }
  if (!self_done) {
    if (who != NULL) who[k] = i;
    x[k] = self, w[k++] = (float)rg->w_self[i];
  }
  /* model buffers (running statistics) are always renormalised: left out, they would shrink */
  if (run->faults != NULL && (run->on_missing == DT_MISSING_RENORMALISE || ex == run->buffer_exchange)) renormalise(run, i, w, k);
  return k;
}

dt_status dt_mix(dt_optimizer_run *run, int i, int vec, float *out) {
  const int deg = dt_graph_degree(run->graph, i);
  const float *x[deg + 1];
  float w[deg + 1];
  const int k = dt_mix_terms(run, i, vec, x, w, NULL);
  return dt_be_mix(run->be, run->dim, k, x, w, out);
}

dt_status dt_mix_sweep(dt_optimizer_run *run, int vec, float a, const dt_sweep_io *io) {
  const dt_graph *g = run->graph;
  dt_backend *be = run->be;
  const size_t d = run->dim;
  const int P = dt_comm_size(run->comm), me = dt_comm_rank(run->comm);
  dt_status st = DT_OK;
  int held = 0;
  uint8_t *mask = NULL;
  float *w = NULL;
  const float **x = NULL;
  DT_ALLOC_GOTO(mask, 2 * (size_t)g->num_edges + 1, "sweep mask");
  DT_ALLOC_GOTO(x, (size_t)g->n + 2, "sweep");
  DT_ALLOC_GOTO(w, (size_t)g->n + 2, "sweep");
  /* kept for the run: a device's allocation and free wait for the device, every round */
  if (run->sweep_tmp == NULL) DT_TRY_GOTO(dt_be_alloc(be, sizeof(float) * d, (void **)&run->sweep_tmp));
  float *tmp = run->sweep_tmp;
  run->sim_hold++, held = 1; /* the stages depend on P; the clock takes the sweep as a whole (run_clock_sweep) */
  for (int s = 0; s < P; s++) {
    const int first = dt_placement_first(g->n, P, s), count = dt_placement_count(g->n, P, s);
    if (s == me) {
      for (int l = 0; l < run->count; l++) {
        const int i = run->first + l;
        float *own = dt_exchange_send_buffer(run->exchange, i, vec);
        const float *extra = io->extra ? io->extra(io->ctx, l) : NULL;
        /* v_i ← W_ii v_i + a·extra + Σ_j W_ij v_j, in that order */
        int k = 0;
        x[k] = own, w[k++] = (float)g->w_self[i];
        if (extra != NULL) x[k] = extra, w[k++] = a;
        for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++)
          x[k] = dt_exchange_latest(run->exchange, i, g->nbr[e], vec), w[k++] = (float)g->w_nbr[e];
        /* into the node's output where it has one (no term of the mix), else the scratch; then
         * its send buffer */
        float *out = io->out ? io->out(io->ctx, l) : NULL, *mixed = out != NULL ? out : tmp;
        DT_TRY_GOTO(dt_be_mix(be, d, k, x, w, mixed));
        DT_TRY_GOTO(dt_be_copy(be, d, mixed, own));
      }
    }
    /* stage s's nodes send their new vectors upward; every rank knows the mask */
    memset(mask, 0, 2 * (size_t)g->num_edges);
    for (int i = first; i < first + count; i++)
      for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) mask[e] = g->nbr[e] > i;
    DT_TRY_GOTO(dt_run_exchange_go(run, mask));
  }
  run->sim_hold--, held = 0;
  if (run->net != NULL) DT_TRY_GOTO(run_clock_sweep(run, (double)run->exchange_nvec * sizeof(float) * (double)run->exchange_len));
cleanup:
  if (held) run->sim_hold--;
  dt_free(mask);
  dt_free(x);
  dt_free(w);
  return st;
}

double dt_mix_sweep_bytes(const dt_graph *g, size_t dim, int nvec) {
  return (double)g->num_edges * nvec * (double)dim * sizeof(float);
}

double dt_mix_one_vector_bytes(const dt_graph *g, size_t dim, const void *opts) {
  (void)opts;
  return 2.0 * g->num_edges * (double)dim * sizeof(float);
}

int dt_mix_sequential_accepts(const char *name, int sequential, const dt_run_env *env, dt_refusal *why) {
  if (sequential && env->schedule != DT_SCHEDULE_STATIC)
    return dt_refuse(why, "update_order", "experiment.graph.schedule is %s: %s's update_order: sequential sweeps a static graph; "
                     "use synchronous", dt_schedule_names[env->schedule], name);
  if (sequential && env->faults)
    return dt_refuse(why, "update_order", "%s's update_order: sequential cannot run under experiment.network's faults (its "
                     "messages go in stages that depend on the rank count); use synchronous", name);
  return 1;
}

dt_status dt_mix_nodes_by(dt_optimizer_run *run, int (*terms)(void *ctx, int l, const float **x, float *w), void *ctx, dt_slab *out) {
  const dt_graph *g = run->graph;
  const int count = run->count;
  dt_status st = DT_OK;
  int *k = NULL;
  const float **x = NULL;
  float *w = NULL, **y = NULL;
  size_t terms_cap = 0, at = 0;
  for (int l = 0; l < count; l++) terms_cap += (size_t)dt_graph_degree(g, run->first + l) + 1;
  DT_ALLOC_GOTO(k, count > 0 ? count : 1, "mixing");
  DT_ALLOC_GOTO(y, count > 0 ? count : 1, "mixing");
  DT_ALLOC_GOTO(x, terms_cap > 0 ? terms_cap : 1, "mixing");
  DT_ALLOC_GOTO(w, terms_cap > 0 ? terms_cap : 1, "mixing");
  for (int l = 0; l < count; l++) {
    k[l] = terms(ctx, l, x + at, w + at);
    y[l] = dt_slab_node(out, l);
    at += (size_t)k[l];
  }
  DT_TRY_GOTO(dt_be_mix_nodes(run->be, run->dim, count, k, x, w, y));
cleanup:
  dt_free(k);
  dt_free(y);
  dt_free(x);
  dt_free(w);
  return st;
}

typedef struct mix_all_ctx {
  dt_optimizer_run *run;
  int vec;
} mix_all_ctx;

static int mix_all_terms(void *ctx, int l, const float **x, float *w) {
  const mix_all_ctx *c = ctx;
  return dt_mix_terms(c->run, c->run->first + l, c->vec, x, w, NULL);
}

/* Every local node's mix in one backend call (one launch on a device, not one per node). */
dt_status dt_mix_all(dt_optimizer_run *run, int vec, dt_slab *out) {
  mix_all_ctx c = {.run = run, .vec = vec};
  DT_TRY(dt_be_profile_mark(run->be, DT_PHASE_OTHER));
  DT_TRY(dt_mix_nodes_by(run, mix_all_terms, &c, out));
  return dt_be_profile_mark(run->be, DT_PHASE_MIX);
}

struct dt_mix_laplacian {
  dt_optimizer_run *run;
  dt_slab diff;      /* one row per local out-edge: v_i − v_j */
  int edges, most;   /* local out-edges; the largest local degree */
  int *k1, *k2, *who;
  const float **x1, **x2, **x;
  float *w1, *w2, *w, **y1, **y2;
};

void dt_mix_laplacian_free(dt_mix_laplacian *lap) {
  if (lap == NULL) return;
  dt_slab_free(lap->run->be, &lap->diff);
  dt_free(lap->k1), dt_free(lap->y1), dt_free(lap->x1), dt_free(lap->w1);
  dt_free(lap->k2), dt_free(lap->y2), dt_free(lap->x2), dt_free(lap->w2);
  dt_free(lap->x), dt_free(lap->w), dt_free(lap->who);
  dt_free(lap);
}

dt_status dt_mix_laplacian_create(dt_optimizer_run *run, dt_mix_laplacian **out) {
  const dt_graph *g = run->graph;
  dt_status st = DT_OK;
  dt_mix_laplacian *lap = NULL;
  DT_ALLOC_GOTO(lap, 1, "edge differences");
  lap->run = run;
  lap->edges = dt_run_local_edges(run);
  for (int l = 0; l < run->count; l++) {
    const int deg = dt_graph_degree(g, run->first + l);
    lap->most = deg > lap->most ? deg : lap->most;
  }
  const int e = lap->edges + 1, n = run->count + 1, m = lap->most + 1;
  DT_TRY_GOTO(dt_slab_create(run->be, lap->edges > 0 ? lap->edges : 1, run->dim, &lap->diff));
  DT_ALLOC_GOTO(lap->k1, e, "edge differences");
  DT_ALLOC_GOTO(lap->y1, e, "edge differences");
  DT_ALLOC_GOTO(lap->x1, 2 * (size_t)e, "edge differences");
  DT_ALLOC_GOTO(lap->w1, 2 * (size_t)e, "edge differences");
  DT_ALLOC_GOTO(lap->k2, n, "edge differences");
  DT_ALLOC_GOTO(lap->y2, n, "edge differences");
  DT_ALLOC_GOTO(lap->x2, e, "edge differences");
  DT_ALLOC_GOTO(lap->w2, e, "edge differences");
  DT_ALLOC_GOTO(lap->x, m, "edge differences");
  DT_ALLOC_GOTO(lap->w, m, "edge differences");
  DT_ALLOC_GOTO(lap->who, m, "edge differences");
  *out = lap;
  lap = NULL;
cleanup:
  dt_mix_laplacian_free(lap);
  return st;
}

dt_status dt_mix_laplacian_all(dt_mix_laplacian *lap, int vec, dt_slab *out) {
  dt_optimizer_run *run = lap->run;
  int outs = 0;
  for (int l = 0; l < run->count; l++) {
    const int i = run->first + l, k = dt_mix_terms(run, i, vec, lap->x, lap->w, lap->who);
    const float *own = dt_exchange_send_buffer(run->exchange, i, vec);
    lap->k2[l] = 0;
    lap->y2[l] = dt_slab_node(out, l);
    for (int t = 0; t < k; t++) {
      if (lap->who[t] == i) continue;
      DT_ASSERT(outs < lap->edges);
      /* diff = 0 + 1·v_i + (−1)·v_j = fl(v_i − v_j) (products by ±1 are exact) */
      lap->k1[outs] = 2;
      lap->x1[2 * outs] = own, lap->w1[2 * outs] = 1.0f;
      lap->x1[2 * outs + 1] = lap->x[t], lap->w1[2 * outs + 1] = -1.0f;
      lap->y1[outs] = dt_slab_node(&lap->diff, outs);
      lap->x2[outs] = lap->y1[outs], lap->w2[outs] = lap->w[t];
      lap->k2[l]++, outs++;
    }
  }
  DT_TRY(dt_be_profile_mark(run->be, DT_PHASE_OTHER));
  DT_TRY(dt_be_mix_nodes(run->be, run->dim, outs, lap->k1, lap->x1, lap->w1, lap->y1));
  DT_TRY(dt_be_mix_nodes(run->be, run->dim, run->count, lap->k2, lap->x2, lap->w2, lap->y2));
  return dt_be_profile_mark(run->be, DT_PHASE_MIX);
}

dt_status dt_mix_reverse_edges(const dt_optimizer_run *run, int **rev, int *e0) {
  const dt_graph *g = run->graph;
  *e0 = g->nbr_start[run->first];
  const int edges = dt_run_local_edges(run);
  DT_ALLOC(*rev, (size_t)edges + 1, "edges");
  for (int i = run->first; i < run->first + run->count; i++)
    for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++)
      (*rev)[e - *e0] = g->nbr_start[g->nbr[e]] + dt_graph_nbr_index(g, g->nbr[e], i);
  return DT_OK;
}
