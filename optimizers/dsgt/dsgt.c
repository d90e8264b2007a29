/* Decentralized stochastic gradient tracking (Pu & Nedić, Math. Programming 2021), synchronous;
 * x and y travel in one exchange. Update equations: README.md here. */
#include <string.h>

#include "../mix.h"
#include "../options_impl.h"
#include "../opts.h"
#include "dt/optimizer.h"

static const dt_key keys[] = {
    {.name = "alpha", .type = DT_KEY_FLOAT, .offset = offsetof(dt_dsgt_opts, alpha), .def = "0.005", .min = 0, .max = DT_INF,
     .help = "step size"},
    {.name = "init_grads", .type = DT_KEY_BOOL, .offset = offsetof(dt_dsgt_opts, init_grads), .def = "true",
     .help = "start the tracker at the first local gradient (false: at zero)"},
    {.name = "update_order", .type = DT_KEY_ENUM, .offset = offsetof(dt_dsgt_opts, update_order), .def = "synchronous",
     .values = dt_update_orders,
     .help = "synchronous, or sequential: the seed reference's in-place sweep, x_i = W_ii x_i - alpha y_i + sum W_ij x_j"},
    {0},
};

typedef struct dsgt_state {
  float alpha;
  int sequential;
  int count;
  float **y, **g;       /* tracker and last gradient per local node */
  float **gnew, **tmp;  /* scratch per local node */
} dsgt_state;

static void destroy(void *p) {
  dsgt_state *s = p;
  if (s == NULL) return;
  for (int l = 0; l < s->count; l++) {
    if (s->y) dt_free(s->y[l]);
    if (s->g) dt_free(s->g[l]);
    if (s->gnew) dt_free(s->gnew[l]);
    if (s->tmp) dt_free(s->tmp[l]);
  }
  dt_free(s->y);
  dt_free(s->g);
  dt_free(s->gnew);
  dt_free(s->tmp);
  dt_free(s);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void **out) {
  dt_status st = DT_OK;
  dsgt_state *s = NULL;
  dt_exchange *ex;
  const dt_dsgt_opts *o = opts;
  DT_ALLOC_GOTO(s, 1, "dsgt");
  s->alpha = (float)o->alpha;
  s->count = run->count;
  s->sequential = o->update_order == DT_ORDER_SEQUENTIAL;
  DT_ALLOC_GOTO(s->y, run->count, "dsgt");
  DT_ALLOC_GOTO(s->g, run->count, "dsgt");
  DT_ALLOC_GOTO(s->gnew, run->count, "dsgt");
  DT_ALLOC_GOTO(s->tmp, run->count, "dsgt");
  for (int l = 0; l < run->count; l++) {
    DT_ALLOC_GOTO(s->gnew[l], run->dim, "dsgt");
    DT_ALLOC_GOTO(s->tmp[l], run->dim, "dsgt");
    DT_ALLOC_GOTO(s->y[l], run->dim, "dsgt tracker");
    DT_ALLOC_GOTO(s->g[l], run->dim, "dsgt gradient");
    if (o->init_grads) {
      DT_TRY_GOTO(dt_run_gradient(run, run->first + l, run->theta[l], s->g[l]));
      memcpy(s->y[l], s->g[l], sizeof(float) * run->dim);
    }
  }
  DT_TRY_GOTO(dt_run_exchange(run, 2, &ex));
  *out = s;
  s = NULL;
cleanup:
  destroy(s);
  return st;
}

typedef struct round_ctx {
  dsgt_state *s;
  dt_optimizer_run *run;
} round_ctx;

/* x, gradient and tracker updates of local node l, from the exchanged round-k values. */
static dt_status node_update(void *p, int l) {
  const round_ctx *rc = p;
  dsgt_state *s = rc->s;
  dt_optimizer_run *run = rc->run;
  const size_t d = run->dim;
  const int i = run->first + l;
  dt_mix(run, i, 0, run->theta[l]); /* x_i ← Σ_j W_ij (x_j − α y_j) */
  DT_TRY(dt_run_gradient(run, i, run->theta[l], s->gnew[l]));
  dt_mix(run, i, 1, s->tmp[l]); /* Σ_j W_ij y_j */
  float *y = s->y[l], *g = s->g[l];
  const float *gn = s->gnew[l], *t = s->tmp[l];
  for (size_t q = 0; q < d; q++) {
    y[q] = t[q] + gn[q] - g[q];
    g[q] = gn[q];
  }
  return DT_OK;
}

static const float *y_of(void *ctx, int l) { return ((round_ctx *)ctx)->s->y[l]; }
static float *theta_of(void *ctx, int l) { return ((round_ctx *)ctx)->run->theta[l]; }
static const float *delta_of(void *ctx, int l) { return ((round_ctx *)ctx)->s->tmp[l]; }
static float *y_out(void *ctx, int l) { return ((round_ctx *)ctx)->s->y[l]; }

/* g⁺ = ∇f_i(x_i) at the swept x, and the tracker's correction g⁺ − g_i into tmp. */
static dt_status node_gradient(void *p, int l) {
  const round_ctx *rc = p;
  dsgt_state *s = rc->s;
  DT_TRY(dt_run_gradient(rc->run, rc->run->first + l, rc->run->theta[l], s->gnew[l]));
  for (size_t q = 0; q < rc->run->dim; q++) {
    s->tmp[l][q] = s->gnew[l][q] - s->g[l][q];
    s->g[l][q] = s->gnew[l][q];
  }
  return DT_OK;
}

/* The seed reference's order: sweep x_i ← W_ii x_i − α y_i + Σ_j W_ij x_j over the nodes in id
 * order; all gradients at the new x; sweep y_i ← W_ii y_i + (g⁺ − g_i) + Σ_j W_ij y_j. */
static dt_status sequential_round(dsgt_state *s, dt_optimizer_run *run) {
  const size_t d = run->dim;
  for (int l = 0; l < run->count; l++) {
    memcpy(dt_exchange_send_buffer(run->exchange, run->first + l, 0), run->theta[l], sizeof(float) * d);
    memcpy(dt_exchange_send_buffer(run->exchange, run->first + l, 1), s->y[l], sizeof(float) * d);
  }
  DT_TRY(dt_run_exchange_go(run, NULL));
  round_ctx rc = {.s = s, .run = run};
  const dt_sweep_io xs = {.extra = y_of, .out = theta_of, .ctx = &rc};
  DT_TRY(dt_mix_sweep(run, 0, -s->alpha, &xs));
  DT_TRY(dt_run_for_nodes(run, node_gradient, &rc));
  const dt_sweep_io ys = {.extra = delta_of, .out = y_out, .ctx = &rc};
  return dt_mix_sweep(run, 1, 1.0f, &ys);
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  dsgt_state *s = p;
  const size_t d = run->dim;
  (void)k;
  if (s->sequential) return sequential_round(s, run);
  /* send x_j − α y_j (vector 0) and y_j (vector 1): both mixes need only these */
  for (int l = 0; l < run->count; l++) {
    float *v0 = dt_exchange_send_buffer(run->exchange, run->first + l, 0);
    const float *x = run->theta[l], *y = s->y[l];
    for (size_t q = 0; q < d; q++) v0[q] = x[q] - s->alpha * y[q];
    memcpy(dt_exchange_send_buffer(run->exchange, run->first + l, 1), y, sizeof(float) * d);
  }
  DT_TRY(dt_run_exchange_go(run, NULL));
  round_ctx rc = {.s = s, .run = run};
  return dt_run_for_nodes(run, node_update, &rc);
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  if (((const dt_dsgt_opts *)opts)->update_order == DT_ORDER_SEQUENTIAL) /* round start + two sweeps of (x, y) */
    return 2.0 * 2.0 * g->num_edges * (double)dim * sizeof(float) + 2.0 * dt_mix_sweep_bytes(g, dim, 2);
  return 2.0 * 2.0 * g->num_edges * (double)dim * sizeof(float); /* x − αy and y */
}

const dt_optimizer_def dt_optimizer_dsgt = {
    .name = "dsgt",
    .summary = "decentralized stochastic gradient tracking",
    .keys = keys,
    .opts_size = sizeof(dt_dsgt_opts),
    .create = create,
    .round = round_k,
    .destroy = destroy,
    .bytes_per_round = bytes_per_round,
};
