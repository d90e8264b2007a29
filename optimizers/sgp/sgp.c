/* Stochastic Gradient Push (Assran, Loizou, Ballas, Rabbat, ICML 2019): push-sum gossip of the
 * parameters and a weight, so that column-stochastic mixing — a directed graph's push weights,
 * or any schedule's — still averages. Update equations: README.md here. */
#include <stdio.h>

#include "../local_step.h"
#include "../mix.h"
#include "../options_impl.h"
#include "dt/optimizer.h"

typedef struct dt_sgp_opts {
  double alpha0, mu;
  int local_optimizer; /* dt_local_opt_kind */
  bool overlap;
  dt_sgd_extras x;
  dt_lr_schedule schedule;
} dt_sgp_opts;

static const dt_key keys[] = {
    {.name = "alpha0", .type = DT_KEY_FLOAT, .offset = offsetof(dt_sgp_opts, alpha0), .def = "0.005", .min = 0, .max = DT_INF,
     .help = "initial step size"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_sgp_opts, mu), .def = "0.001", .min = 0, .max = DT_INF,
     .help = "step decay: round k uses alpha_k = alpha0 / (1 + mu k)"},
    {.name = "overlap", .type = DT_KEY_BOOL, .offset = offsetof(dt_sgp_opts, overlap), .def = "false",
     .help = "overlap SGP: a round's messages are added one round later (1-step stale), so sending overlaps the next step"},
    {.name = "local_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_sgp_opts, local_optimizer), .def = "sgd",
     .values = dt_local_opt_names, .flags = DT_KEY_EMIT_IF_SET,
     .help = "the step on the de-biased parameters: sgd (the default), or adam, adamw, rmsprop, adadelta, nadam"},
    DT_SGD_EXTRAS_KEYS(dt_sgp_opts, x),
    DT_LR_SCHEDULE_KEY(dt_sgp_opts, schedule),
    {0},
};

typedef struct sgp_state {
  dt_sgp_opts o;
  dt_slab x;       /* numerators (kept); run->theta holds z = x / w */
  float *w;        /* [count] push-sum weights (kept) */
  dt_slab inbox;   /* overlap: what arrived this round, added next round (kept) */
  float *inbox_w;  /* [count] (kept) */
  dt_slab mixed;   /* dim + 1 floats per node: a mix of messages [x, w] */
  dt_slab grad, before;
  dt_learners local; /* a local optimizer other than plain SGD */
  dt_optimizer_run *run;
} sgp_state;

static int plain(const void *opts) {
  const dt_sgp_opts *o = opts;
  return dt_local_step_plain(o->local_optimizer, &o->x);
}
static int not_plain(const void *opts) { return !plain(opts); }
static int overlap(const void *opts) { return ((const dt_sgp_opts *)opts)->overlap; }
static const dt_state_slot slots[] = {
    {.name = "x", .kind = DT_SLOT_NODE, .offset = offsetof(sgp_state, x)},
    {.name = "w", .kind = DT_SLOT_HOST, .offset = offsetof(sgp_state, w), .elem = sizeof(float)},
    {.name = "inbox", .kind = DT_SLOT_NODE, .offset = offsetof(sgp_state, inbox), .when = overlap},
    {.name = "inbox_w", .kind = DT_SLOT_HOST, .offset = offsetof(sgp_state, inbox_w), .elem = sizeof(float), .when = overlap},
    {.name = "mixed", .kind = DT_SLOT_NODE, .offset = offsetof(sgp_state, mixed), .scratch = 1, .plus = 1},
    {.name = "grad", .kind = DT_SLOT_NODE, .offset = offsetof(sgp_state, grad), .scratch = 1, .when = plain},
    {.name = "local", .kind = DT_SLOT_LEARNERS, .offset = offsetof(sgp_state, local), .when = not_plain,
     .from = DT_LEARNER_FROM_X(dt_sgp_opts, local_optimizer, alpha0, x)},
    {.name = "before", .kind = DT_SLOT_NODE, .offset = offsetof(sgp_state, before), .scratch = 1, .when = not_plain},
    {0},
};

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  sgp_state *s = state;
  (void)opts;
  dt_exchange *ex;
  DT_TRY(dt_slab_copy(dt_run_backend(run), dt_run_theta(run), &s->x)); /* x = θ0, w = 1: z = θ0 */
  for (int l = 0; l < dt_run_count(run); l++) s->w[l] = 1.0f;
  return dt_run_exchange_len(run, 1, dt_run_dim(run) + 1, &ex); /* one message [x, w] */
}

/* Under faults (experiment.network): W_ii plus the shares node i pushed this round that did not
 * arrive (lost, a link down, the receiver offline), which stay with it, so the push-sum mass Σ x,
 * Σ w stays whole. As a transport's acknowledgement tells a sender what arrived. */
static double self_weight(const dt_optimizer_run *run, int i) {
  const dt_graph *g = dt_run_graph(run);
  double w = dt_run_this_round(run)->w_self[i];
  if (!dt_run_faulty(run) || !dt_run_online(run, i)) return w;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    const int j = g->nbr[e];
    const double share = dt_run_this_round(run)->w_nbr[g->nbr_start[j] + dt_graph_nbr_index(g, j, i)]; /* W_ji: i's share to j */
    if (share > 0 && !dt_run_delivered(run, NULL, e)) w += share;
  }
  return w;
}

/* Node l's push-sum step after the exchange: the sum of the messages that count this round,
 * then z = x / w. */
static dt_status node_mix(void *p, int l) {
  sgp_state *s = p;
  dt_optimizer_run *run = s->run;
  dt_backend *be = dt_run_backend(run);
  const size_t d = dt_run_dim(run);
  const int i = dt_run_first(run) + l;
  const int deg = dt_graph_degree(dt_run_graph(run), i);
  const float *x[deg + 2];
  float w[deg + 2];
  int who[deg + 2];
  float *mixed = dt_slab_node(&s->mixed, l), *xl = dt_slab_node(&s->x, l);
  int k = dt_mix_terms(run, i, 0, x, w, who);
  if (dt_run_faulty(run)) /* what did not arrive is left out (skip); what i's pushes lost stays with i */
    for (int t = 0; t < k; t++)
      if (who[t] == i) w[t] = (float)self_weight(run, i);
  if (!s->o.overlap) {
    /* [x_i, w_i] ← Σ_j W_ij [x_j, w_j] over this round's messages, self included, in id order */
    DT_TRY(dt_be_mix(be, d + 1, k, x, w, mixed));
    DT_TRY(dt_be_copy(be, d, mixed, xl));
    DT_TRY(dt_be_download(be, &s->w[l], mixed + d, sizeof(float)));
  } else {
    /* [x_i, w_i] ← W_ii [x_i, w_i] + inbox_i (what arrived last round); inbox_i ← Σ_{j≠i} W_ij
     * [x_j, w_j] of this round's messages */
    const float *own = dt_exchange_send_buffer(dt_run_the_exchange(run), i, 0);
    const float wii = (float)self_weight(run, i);
    const float *terms[2] = {own, dt_slab_node(&s->inbox, l)};
    const float weights[2] = {wii, 1.0f};
    DT_TRY(dt_be_mix(be, d, 2, terms, weights, xl));
    float own_w;
    DT_TRY(dt_be_download(be, &own_w, own + d, sizeof(float)));
    s->w[l] = 0.0f + wii * own_w + 1.0f * s->inbox_w[l]; /* dt_be_mix's order */
    int n = 0;
    for (int t = 0; t < k; t++)
      if (who[t] != i) x[n] = x[t], w[n++] = w[t];
    DT_TRY(dt_be_mix(be, d + 1, n, x, w, mixed));
    DT_TRY(dt_be_copy(be, d, mixed, dt_slab_node(&s->inbox, l)));
    DT_TRY(dt_be_download(be, &s->inbox_w[l], mixed + d, sizeof(float)));
  }
  return dt_be_div(be, d, xl, (double)s->w[l], dt_slab_node(dt_run_theta(run), l));
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  sgp_state *s = p;
  dt_backend *be = dt_run_backend(run);
  const float a = (float)dt_run_rate(run, &s->o.schedule, s->o.alpha0, s->o.mu, k, 1);
  /* the gradient at the de-biased z = x / w, its step applied to the numerator x */
  if (s->local.opt == NULL) {
    DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->grad, NULL));
    DT_TRY(dt_slab_axpby(be, 1.0f, &s->x, -a, &s->grad, &s->x)); /* x ← x − α ∇f(z) */
  } else { /* x ← x + (step(z) − z): the local optimizer's displacement */
    DT_TRY(dt_slab_copy(be, dt_run_theta(run), &s->before));
    DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->local.grad, NULL));
    DT_TRY(dt_local_opt_step_all(s->local.opt, dt_run_theta(run), &s->local.grad, a));
    DT_TRY(dt_slab_axpby(be, 1.0f, dt_run_theta(run), -1.0f, &s->before, &s->before));
    DT_TRY(dt_slab_axpby(be, 1.0f, &s->x, 1.0f, &s->before, &s->x));
  }
  /* push [x, w] along the round's out-edges */
  for (int l = 0; l < dt_run_count(run); l++) {
    float *msg = dt_exchange_send_buffer(dt_run_the_exchange(run), dt_run_first(run) + l, 0);
    DT_TRY(dt_be_copy(be, dt_run_dim(run), dt_slab_node(&s->x, l), msg));
    DT_TRY(dt_be_fill(be, 1, s->w[l], msg + dt_run_dim(run)));
  }
  DT_TRY(dt_run_exchange_go(run, NULL));
  return dt_run_for_nodes(run, node_mix, s);
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  (void)opts;
  const double msgs = g->directed ? g->num_arcs : 2.0 * g->num_edges;
  return msgs * (double)(dim + 1) * sizeof(float);
}

static double gradient_step(const void *opts) {
  const dt_sgp_opts *o = opts;
  return dt_local_step_stable(o->alpha0, o->local_optimizer, &o->x);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_sgp_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, o->local_optimizer, &o->x, rounds, err, err_size);
}

static const char *const aliases[] = {"push_sum", NULL};

/* Per node: the exchange's send message (dim + 1). */
static dt_state_size state_extra(const void *opts, size_t dim) {
  (void)opts;
  return (dt_state_size){.per_node = ((double)dim + 1) / (double)dim};
}

const dt_optimizer_def dt_optimizer_sgp = {
    .plugin =
        {
            .name = "sgp",
            .aliases = aliases,
            .summary = "Stochastic Gradient Push: push-sum gossip on directed graphs and any schedule (overlap: 1-step stale)",
            .keys = keys,
            .opts_size = sizeof(dt_sgp_opts),
            .finalize = finalize,
        },
    DT_STATE(sgp_state, o, run),
    .slots = slots,
    .create = create,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .traffic_per_edge = 1,
    .gradient_step = gradient_step,
    .runs_on = DT_RUNS_TIME_VARYING | DT_RUNS_DIRECTED,
    .on_missing = DT_MISSING_SKIP,
    .state_extra = state_extra,
};
