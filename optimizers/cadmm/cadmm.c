/* CADMM / DiNNO (Yu, Vincent, Schwager, "DiNNO: Distributed Neural Network Optimization for
 * Multi-Robot Collaborative Learning", RA-L 2022). Update equations: README.md here. */
#include <math.h>
#include <string.h>

#include "../local_step.h"
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

/* what carries between rounds: the learners and the duals (b, s, t, heard and alpha are
 * rewritten every round before use) */
static const dt_state_slot slots[] = {
    {.name = "primal", .kind = DT_SLOT_LEARNERS, .offset = offsetof(cadmm_state, learners),
     .from = DT_LEARNER_FROM(dt_cadmm_opts, primal_optimizer, primal_lr_start)},
    {.name = "dual", .kind = DT_SLOT_NODE, .offset = offsetof(cadmm_state, dual)},
    {.name = "b", .kind = DT_SLOT_NODE, .offset = offsetof(cadmm_state, b), .scratch = 1},
    {.name = "s", .kind = DT_SLOT_NODE, .offset = offsetof(cadmm_state, s), .scratch = 1},
    {.name = "t", .kind = DT_SLOT_NODE, .offset = offsetof(cadmm_state, t), .scratch = 1},
    {.name = "heard", .kind = DT_SLOT_HOST, .offset = offsetof(cadmm_state, heard), .scratch = 1, .elem = sizeof(float)},
    {.name = "alpha", .kind = DT_SLOT_HOST, .offset = offsetof(cadmm_state, alpha), .scratch = 1, .elem = sizeof(float)},
    {0},
};

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  cadmm_state *c = state;
  (void)opts;
  c->rho = c->o.rho_init;
  c->rounds = dt_run_problem(run)->outer_iterations;
  return dt_run_keep_shared(run, "rho", &c->rho, sizeof c->rho);
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
  const dt_graph *g = dt_run_graph(run);
  const int i = dt_run_first(run) + l;
  int n = 0;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    const float *xj = dt_exchange_recv(dt_run_the_exchange(run), i, g->nbr[e], 0);
    if (xj != NULL) x[n] = xj, w[n++] = 1.0f;
  }
  c->heard[l] = (float)n;
  return n;
}

static dt_status dual_all(cadmm_state *c, dt_optimizer_run *run, float rho) {
  dt_backend *be = dt_run_backend(run);
  DT_TRY(dt_mix_nodes_by(run, neighbour_terms, c, &c->s));
  DT_TRY(dt_slab_axpby_nodes(be, c->heard, dt_run_theta(run), -1.0f, &c->s, &c->t));
  DT_TRY(dt_slab_axpy(be, rho, &c->t, &c->dual));
  DT_TRY(dt_slab_axpby_nodes(be, c->heard, dt_run_theta(run), 1.0f, &c->s, &c->t));
  return dt_slab_axpby(be, 1.0f, &c->dual, -rho, &c->t, &c->b);
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  cadmm_state *c = p;
  c->rho *= c->o.rho_scaling; /* scaled before use: round k uses rho_init * scaling^(k+1) */
  DT_TRY(dt_run_send(run, 0, dt_run_theta(run)));
  DT_TRY(dt_run_exchange_go(run, NULL));
  const float rho = (float)c->rho, lr = (float)primal_lr(&c->o, k, c->rounds);
  DT_TRY(dual_all(c, run, rho));
  if (!c->o.persistent_primal_opt) DT_TRY(dt_local_opt_reset(c->learners.opt));
  /* the primal steps on the penalised loss: extra gradient 2ρ·deg·θ + b per node */
  for (int l = 0; l < dt_run_count(run); l++) c->alpha[l] = 2.0f * rho * c->heard[l];
  for (int it = 0; it < c->o.primal_iterations; it++) {
    DT_TRY(dt_run_gradients(run, dt_run_theta(run), &c->learners.grad, NULL));
    DT_TRY(dt_local_opt_step_all_extra(c->learners.opt, dt_run_theta(run), &c->learners.grad, lr, c->alpha, &c->b));
  }
  return DT_OK;
}

static const char *const aliases[] = {"dinno", NULL};

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  (void)opts;
  return 2.0 * g->num_edges * (double)dim * sizeof(float); /* θ to every neighbour */
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
    DT_STATE(cadmm_state, o, run),
    .slots = slots,
    .exchange_vectors = 1,
    .create = create,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .on_missing = DT_MISSING_SKIP,
};
