/* CADMM / DiNNO (Yu, Vincent, Schwager, "DiNNO: Distributed Neural Network Optimization for
 * Multi-Robot Collaborative Learning", RA-L 2022). Update equations: README.md here. */
#include <math.h>
#include <string.h>

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

typedef struct round_ctx {
  cadmm_state *c;
  dt_optimizer_run *run;
  float rho, lr;
} round_ctx;

/* Dual update of local node l and its penalty offset, from the θ_j that arrived (every
 * neighbour's without faults; a lost one is left out of this round's sums and degree). */
static dt_status node_dual(void *p, int l) {
  const round_ctx *rc = p;
  cadmm_state *c = rc->c;
  dt_optimizer_run *run = rc->run;
  dt_backend *be = run->be;
  const dt_graph *g = run->graph;
  const size_t d = run->dim;
  const int i = run->first + l, deg = dt_graph_degree(g, i);
  const float rho = rc->rho;
  const float *th = dt_slab_node(&run->theta, l);
  float *dual = dt_slab_node(&c->dual, l), *b = dt_slab_node(&c->b, l), *s = dt_slab_node(&c->s, l), *t = dt_slab_node(&c->t, l);
  /* s = Σ_j θ_j over neighbours in id order */
  const float *x[deg > 0 ? deg : 1];
  float w[deg > 0 ? deg : 1];
  int n = 0;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    const float *xj = dt_exchange_recv(run->exchange, i, g->nbr[e], 0);
    if (xj != NULL) x[n] = xj, w[n++] = 1.0f;
  }
  const float fdeg = (float)n;
  c->heard[l] = fdeg;
  DT_TRY(dt_be_mix(be, d, n, x, w, s));
  /* dual: p_i += ρ Σ_j (θ_i − θ_j) = ρ (deg·θ_i − s);
   * penalty gradient 2ρ Σ_j (θ − (θ_i+θ_j)/2) = 2ρ·deg·θ − ρ(deg·θ_i + s), so b = p_i − ρ(deg·θ_i + s) */
  DT_TRY(dt_be_axpby(be, d, fdeg, th, -1.0f, s, t));
  DT_TRY(dt_be_axpy(be, d, rho, t, dual));
  DT_TRY(dt_be_axpby(be, d, fdeg, th, 1.0f, s, t));
  DT_TRY(dt_be_axpby(be, d, 1.0f, dual, -rho, t, b));
  return DT_OK;
}

/* One primal step of local node l on the penalised loss (gradient already computed). */
static dt_status node_primal_step(void *p, int l) {
  const round_ctx *rc = p;
  cadmm_state *c = rc->c;
  dt_optimizer_run *run = rc->run;
  const dt_grad_extra extra = {.alpha = 2.0f * rc->rho * c->heard[l], .b = dt_slab_node(&c->b, l)};
  return dt_local_opt_step(c->learners.opt, l, dt_slab_node(&run->theta, l), dt_slab_node(&c->learners.grad, l), rc->lr, &extra);
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  cadmm_state *c = p;
  c->rho *= c->o.rho_scaling; /* scaled before use: round k uses rho_init * scaling^(k+1) */
  DT_TRY(dt_run_send(run, 0, &run->theta));
  DT_TRY(dt_run_exchange_go(run, NULL));
  round_ctx rc = {.c = c, .run = run, .rho = (float)c->rho, .lr = (float)primal_lr(&c->o, k, c->rounds)};
  DT_TRY(dt_run_for_nodes(run, node_dual, &rc));
  if (!c->o.persistent_primal_opt) DT_TRY(dt_local_opt_reset(c->learners.opt));
  for (int it = 0; it < c->o.primal_iterations; it++) {
    DT_TRY(dt_run_gradients(run, &run->theta, &c->learners.grad, NULL));
    DT_TRY(dt_run_for_nodes(run, node_primal_step, &rc));
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
