/* Decentralized SGD (Nedić & Ozdaglar 2009; stochastic form as in Lian et al., NeurIPS 2017),
 * synchronous. Update equations: README.md here. */
#include <string.h>

#include "../mix.h"
#include "../options_impl.h"
#include "../opts.h"
#include "dt/optimizer.h"

static const dt_key keys[] = {
    {.name = "alpha0", .type = DT_KEY_FLOAT, .offset = offsetof(dt_dsgd_opts, alpha0), .def = "0.005", .min = 0, .max = DT_INF,
     .help = "initial step size"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_dsgd_opts, mu), .def = "0.001", .min = 0, .max = DT_INF,
     .help = "step decay: round k uses alpha_k = alpha0 / (1 + mu k)"},
    {.name = "update_order", .type = DT_KEY_ENUM, .offset = offsetof(dt_dsgd_opts, update_order), .def = "synchronous",
     .values = dt_update_orders,
     .help = "synchronous, or sequential: the seed reference's in-place sweep in node order"},
    {0},
};

typedef struct dsgd_state {
  double alpha0, alpha;
  double mu;
  int sequential;
  int count;
  float **mixed, **grad; /* per local node */
} dsgd_state;

static void destroy(void *p) {
  dsgd_state *s = p;
  if (s == NULL) return;
  for (int l = 0; l < s->count; l++) {
    if (s->mixed) dt_free(s->mixed[l]);
    if (s->grad) dt_free(s->grad[l]);
  }
  dt_free(s->mixed);
  dt_free(s->grad);
  dt_free(s);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void **out) {
  dt_status st = DT_OK;
  dsgd_state *s = NULL;
  dt_exchange *ex;
  const dt_dsgd_opts *o = opts;
  DT_ALLOC_GOTO(s, 1, "dsgd");
  s->alpha0 = s->alpha = o->alpha0;
  s->mu = o->mu;
  s->sequential = o->update_order == DT_ORDER_SEQUENTIAL;
  s->count = run->count;
  DT_ALLOC_GOTO(s->mixed, run->count, "dsgd");
  DT_ALLOC_GOTO(s->grad, run->count, "dsgd");
  for (int l = 0; l < run->count; l++) {
    DT_ALLOC_GOTO(s->mixed[l], run->dim, "dsgd");
    DT_ALLOC_GOTO(s->grad[l], run->dim, "dsgd");
  }
  DT_TRY_GOTO(dt_run_exchange(run, 1, &ex));
  *out = s;
  s = NULL;
cleanup:
  destroy(s);
  return st;
}

typedef struct round_ctx {
  dsgd_state *s;
  dt_optimizer_run *run;
  float alpha;
} round_ctx;

static float *theta_of(void *ctx, int l) { return ((round_ctx *)ctx)->run->theta[l]; }

/* The gradient step of local node l at its (already mixed) parameters. */
static dt_status node_step(void *p, int l) {
  const round_ctx *rc = p;
  dt_optimizer_run *run = rc->run;
  float *grad = rc->s->grad[l], *x = run->theta[l];
  DT_TRY(dt_run_gradient(run, run->first + l, x, grad));
  for (size_t q = 0; q < run->dim; q++) x[q] -= rc->alpha * grad[q];
  return DT_OK;
}

/* Mix, then the gradient step, for local node l. */
static dt_status node_update(void *p, int l) {
  const round_ctx *rc = p;
  dt_optimizer_run *run = rc->run;
  float *mixed = rc->s->mixed[l], *grad = rc->s->grad[l], *x = run->theta[l];
  dt_mix(run, run->first + l, 0, mixed);
  DT_TRY(dt_run_gradient(run, run->first + l, mixed, grad));
  for (size_t q = 0; q < run->dim; q++) x[q] = mixed[q] - rc->alpha * grad[q];
  return DT_OK;
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  dsgd_state *s = p;
  const size_t d = run->dim;
  s->alpha = dt_rate_at(s->alpha0, s->mu, k);
  const float a = (float)s->alpha;
  for (int l = 0; l < run->count; l++) memcpy(dt_exchange_send_buffer(run->exchange, run->first + l, 0), run->theta[l], sizeof(float) * d);
  DT_TRY(dt_run_exchange_go(run, NULL));
  round_ctx rc = {.s = s, .run = run, .alpha = a};
  if (s->sequential) {
    /* the seed reference: mix in place in node order (a sweep), then every node's step */
    const dt_sweep_io io = {.out = theta_of, .ctx = &rc};
    DT_TRY(dt_mix_sweep(run, 0, 0.0f, &io));
    return dt_run_for_nodes(run, node_step, &rc);
  }
  return dt_run_for_nodes(run, node_update, &rc);
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  if (((const dt_dsgd_opts *)opts)->update_order == DT_ORDER_SEQUENTIAL) /* round start + one sweep */
    return 2.0 * g->num_edges * (double)dim * sizeof(float) + dt_mix_sweep_bytes(g, dim, 1);
  return 2.0 * g->num_edges * (double)dim * sizeof(float);
}

const dt_optimizer_def dt_optimizer_dsgd = {
    .name = "dsgd",
    .summary = "decentralized SGD: mix with W, then a gradient step with a decaying rate",
    .keys = keys,
    .opts_size = sizeof(dt_dsgd_opts),
    .create = create,
    .round = round_k,
    .destroy = destroy,
    .bytes_per_round = bytes_per_round,
};
