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
  float **dual, **b, **s; /* per local node */
  dt_learners learners;    /* the primal optimizer and gradient of each local node */
  int count;
} cadmm_state;

static void destroy(void *p) {
  cadmm_state *st = p;
  if (st == NULL) return;
  for (int l = 0; l < st->count; l++) {
    if (st->dual) dt_free(st->dual[l]);
    if (st->b) dt_free(st->b[l]);
    if (st->s) dt_free(st->s[l]);
  }
  dt_free(st->dual);
  dt_free(st->b);
  dt_free(st->s);
  dt_learners_free(&st->learners);
  dt_free(st);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void **out) {
  dt_status st = DT_OK;
  cadmm_state *c = NULL;
  dt_exchange *ex;
  DT_ALLOC_GOTO(c, 1, "cadmm");
  c->o = *(const dt_cadmm_opts *)opts;
  c->rho = c->o.rho_init;
  c->rounds = run->pc->outer_iterations;
  c->count = run->count;
  DT_ALLOC_GOTO(c->dual, run->count, "duals");
  DT_ALLOC_GOTO(c->b, run->count, "penalty");
  DT_ALLOC_GOTO(c->s, run->count, "neighbour sums");
  DT_TRY_GOTO(dt_learners_create(run, c->o.primal_optimizer, c->o.primal_lr_start, &c->learners));
  for (int l = 0; l < run->count; l++) {
    DT_ALLOC_GOTO(c->dual[l], run->dim, "dual");
    DT_ALLOC_GOTO(c->b[l], run->dim, "penalty");
    DT_ALLOC_GOTO(c->s[l], run->dim, "neighbour sum");
  }
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

/* Dual update and primal steps of local node l (independent of the other nodes). */
static dt_status node_update(void *p, int l) {
  const round_ctx *rc = p;
  cadmm_state *c = rc->c;
  dt_optimizer_run *run = rc->run;
  const dt_graph *g = run->graph;
  const size_t d = run->dim;
  const int i = run->first + l;
  const float rho = rc->rho;
  float *th = run->theta[l], *dual = c->dual[l], *b = c->b[l], *s = c->s[l];
  const int deg = dt_graph_degree(g, i);
  /* s = Σ_j θ_j over neighbours in id order */
  memset(s, 0, sizeof(float) * d);
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    const float *tj = dt_exchange_recv(run->exchange, i, g->nbr[e], 0);
    for (size_t q = 0; q < d; q++) s[q] += tj[q];
  }
  /* dual: p_i += ρ Σ_j (θ_i − θ_j); penalty gradient 2ρ Σ_j (θ − (θ_i+θ_j)/2) = 2ρ·deg·θ − ρ(deg·θ_i + s) */
  const float fdeg = (float)deg;
  for (size_t q = 0; q < d; q++) {
    dual[q] += rho * (fdeg * th[q] - s[q]);
    b[q] = dual[q] - rho * (fdeg * th[q] + s[q]);
  }
  const dt_grad_extra extra = {.alpha = 2.0f * rho * fdeg, .b = b};
  dt_optim *opt = c->learners.opt[l];
  float *grad = c->learners.grad[l];
  if (!c->o.persistent_primal_opt) dt_optim_reset(opt);
  for (int it = 0; it < c->o.primal_iterations; it++) {
    DT_TRY(dt_run_gradient(run, i, th, grad));
    dt_optim_step(opt, th, grad, rc->lr, &extra);
  }
  return DT_OK;
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  cadmm_state *c = p;
  c->rho *= c->o.rho_scaling; /* scaled before use: round k uses rho_init * scaling^(k+1) */
  for (int l = 0; l < run->count; l++)
    memcpy(dt_exchange_send_buffer(run->exchange, run->first + l, 0), run->theta[l], sizeof(float) * run->dim);
  DT_TRY(dt_run_exchange_go(run, NULL));
  round_ctx rc = {.c = c, .run = run, .rho = (float)c->rho, .lr = (float)primal_lr(&c->o, k, c->rounds)};
  return dt_run_for_nodes(run, node_update, &rc);
}

static const char *const aliases[] = {"dinno", NULL};

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  (void)opts;
  return 2.0 * g->num_edges * (double)dim * sizeof(float); /* θ to every neighbour */
}

const dt_optimizer_def dt_optimizer_cadmm = {
    .name = "cadmm",
    .aliases = aliases,
    .summary = "consensus ADMM with inexact primal steps (DiNNO)",
    .keys = dt_cadmm_keys,
    .opts_size = sizeof(dt_cadmm_opts),
    .finalize = dt_cadmm_finalize,
    .create = create,
    .round = round_k,
    .destroy = destroy,
    .bytes_per_round = bytes_per_round,
};
