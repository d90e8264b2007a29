/* CADMM / DiNNO (Yu, Vincent, Schwager, "DiNNO: Distributed Neural Network Optimization for
 * Multi-Robot Collaborative Learning", RA-L 2022). Update equations: README.md here. */
#include <math.h>
#include <string.h>

#include "../mix.h"
#include "cadmm.h"
#include "dt/optimizer.h"
#include "dt/problem.h"

typedef struct cadmm_state {
  dt_cadmm_opts o;
  double rho;
  int rounds;
  dt_slab dual, b, s, t; /* duals, penalty offsets, neighbour sums, scratch: local nodes */
  dt_learners learners;  /* the primal optimizer and gradient of every local node */
  float *heard;          /* [count] neighbours whose θ_j arrived this round (the degree without faults) */
  float *alpha;          /* [count] the primal steps' extra_alpha, 2ρ·heard */
  dt_optimizer_run *run;
} cadmm_state;

static void destroy(void *p) {
  cadmm_state *c = p;
  if (c == NULL) return;
  dt_slab_free(c->run->be, &c->dual);
  dt_slab_free(c->run->be, &c->b);
  dt_slab_free(c->run->be, &c->s);
  dt_slab_free(c->run->be, &c->t);
  dt_learners_free(c->run, &c->learners);
  dt_free(c->heard);
  dt_free(c->alpha);
  dt_free(c);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void **out) {
  dt_status st = DT_OK;
  cadmm_state *c = NULL;
  dt_exchange *ex;
  DT_ALLOC_GOTO(c, 1, "cadmm");
  c->run = run;
  c->o = *(const dt_cadmm_opts *)opts;
  c->rho = c->o.rho_init;
  c->rounds = run->pc->outer_iterations;
  DT_TRY_GOTO(dt_learners_create(run, "primal", c->o.primal_optimizer, c->o.primal_lr_start, &c->learners));
  DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, &c->dual));
  /* what carries between rounds (b, s, t are rewritten every round before use) */
  DT_TRY_GOTO(dt_run_keep_slab(run, "dual", &c->dual));
  DT_TRY_GOTO(dt_run_keep_shared(run, "rho", &c->rho, sizeof c->rho));
  DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, &c->b));
  DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, &c->s));
  DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, &c->t));
  DT_ALLOC_GOTO(c->heard, (size_t)run->count + 1, "cadmm");
  DT_ALLOC_GOTO(c->alpha, (size_t)run->count + 1, "cadmm");
  DT_TRY_GOTO(dt_run_exchange(run, 1, &ex));
  *out = c;
  c = NULL;
cleanup:
  destroy(c);
  return st;
}

/* Primal learning rate of round k: constant, linear or geometric from start to finish. */
static double primal_lr(const dt_cadmm_opts *o, int k, int rounds) {
  if (o->lr_decay_type == DT_CADMM_LR_CONSTANT || rounds < 2) return o->primal_lr_start;
  const double t = (double)k / (double)(rounds - 1);
  if (o->lr_decay_type == DT_CADMM_LR_LINEAR) return o->primal_lr_start + (o->primal_lr_finish - o->primal_lr_start) * t;
  const double a = log10(o->primal_lr_start), b = log10(o->primal_lr_finish);
  return pow(10.0, a + (b - a) * t);
}

/* Every local node's dual update and penalty offset, from the θ_j that arrived (every
 * neighbour's without faults; a lost one is left out of this round's sums and degree), each step
 * one backend call over all nodes (the arithmetic of a node-by-node loop, bit for bit):
 *   s = Σ_j θ_j over neighbours in id order;
 *   dual: p_i += ρ Σ_j (θ_i − θ_j) = ρ (deg·θ_i − s);
 *   penalty gradient 2ρ Σ_j (θ − (θ_i+θ_j)/2) = 2ρ·deg·θ − ρ(deg·θ_i + s), so b = p_i − ρ(deg·θ_i + s). */
static int neighbour_terms(void *ctx, int l, const float **x, float *w) {
  cadmm_state *c = ctx;
  const dt_optimizer_run *run = c->run;
  const dt_graph *g = run->graph;
  const int i = run->first + l;
  int n = 0;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    const float *xj = dt_exchange_recv(run->exchange, i, g->nbr[e], 0);
    if (xj != NULL) x[n] = xj, w[n++] = 1.0f;
  }
  c->heard[l] = (float)n;
  return n;
}

static dt_status dual_all(cadmm_state *c, dt_optimizer_run *run, float rho) {
  dt_backend *be = run->be;
  DT_TRY(dt_mix_nodes_by(run, neighbour_terms, c, &c->s));
  DT_TRY(dt_slab_axpby_nodes(be, c->heard, &run->theta, -1.0f, &c->s, &c->t));
  DT_TRY(dt_slab_axpy(be, rho, &c->t, &c->dual));
  DT_TRY(dt_slab_axpby_nodes(be, c->heard, &run->theta, 1.0f, &c->s, &c->t));
  return dt_slab_axpby(be, 1.0f, &c->dual, -rho, &c->t, &c->b);
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  cadmm_state *c = p;
  c->rho *= c->o.rho_scaling; /* scaled before use: round k uses rho_init * scaling^(k+1) */
  DT_TRY(dt_run_send(run, 0, &run->theta));
  DT_TRY(dt_run_exchange_go(run, NULL));
  const float rho = (float)c->rho, lr = (float)primal_lr(&c->o, k, c->rounds);
  DT_TRY(dual_all(c, run, rho));
  if (!c->o.persistent_primal_opt) DT_TRY(dt_local_opt_reset(c->learners.opt));
  /* the primal steps on the penalised loss: extra gradient 2ρ·deg·θ + b per node */
  for (int l = 0; l < run->count; l++) c->alpha[l] = 2.0f * rho * c->heard[l];
  for (int it = 0; it < c->o.primal_iterations; it++) {
    DT_TRY(dt_run_gradients(run, &run->theta, &c->learners.grad, NULL));
    DT_TRY(dt_local_opt_step_all_extra(c->learners.opt, &run->theta, &c->learners.grad, lr, c->alpha, &c->b));
  }
  return DT_OK;
}

static const char *const aliases[] = {"dinno", NULL};

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  (void)opts;
  return 2.0 * g->num_edges * (double)dim * sizeof(float); /* θ to every neighbour */
}

/* Per node: the primal learners' grad and moments (no momentum), dual, b, s and t, and the
 * exchange's send vector. */
static dt_state_size state_size(const void *opts, size_t dim) {
  const dt_cadmm_opts *o = opts;
  (void)dim;
  return (dt_state_size){.per_node = 6 + dt_local_opt_state_vectors((dt_local_opt_kind)o->primal_optimizer, 0.0f)};
}

const dt_optimizer_def dt_optimizer_cadmm = {
    .plugin =
        {
            .name = "cadmm",
            .aliases = aliases,
            .summary = "consensus ADMM with inexact primal steps (DiNNO)",
            .keys = dt_cadmm_keys,
            .opts_size = sizeof(dt_cadmm_opts),
            .finalize = dt_cadmm_finalize,
        },
    .create = create,
    .round = round_k,
    .destroy = destroy,
    .bytes_per_round = bytes_per_round,
    .on_missing = DT_MISSING_SKIP,
    .state_size = state_size,
};
