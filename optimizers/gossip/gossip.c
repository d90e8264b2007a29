/* Gossip SGD: local steps, then pairwise averaging over a random matching (Boyd et al.,
 * "Randomized gossip algorithms", 2006) or GoSGD push-sum (Blot et al., 2016). Every random
 * choice of round k comes from the stream (seed, gossip, k), so every rank knows every edge
 * used without asking. Update equations: README.md here. */
#include <string.h>

#include "../local_step.h"
#include "../options_impl.h"
#include "dt/optimizer.h"
#include "dt/rng.h"

static const char *const modes[] = {"pairwise", "push", NULL};

/* The options this plug-in's key table fills (its own: nothing outside this folder sees it). */
enum { DT_GOSSIP_PAIRWISE = 0, DT_GOSSIP_PUSH };
typedef struct dt_gossip_opts {
  int mode;
  int local_steps;
  int local_optimizer; /* dt_local_opt_kind */
  double lr, mu;       /* round k uses lr_k = lr / (1 + mu k) (dt_rate_at) */
  double p;            /* push mode: probability of pushing in a round */
  dt_sgd_extras x;
  dt_lr_schedule schedule;
} dt_gossip_opts;

static const dt_key keys[] = {
    {.name = "mode", .type = DT_KEY_ENUM, .offset = offsetof(dt_gossip_opts, mode), .def = "pairwise", .values = modes,
     .help = "pairwise: matched neighbours average; push: GoSGD push-sum"},
    {.name = "local_steps", .type = DT_KEY_INT, .offset = offsetof(dt_gossip_opts, local_steps), .def = "1", .min = 1, .max = 1e6,
     .help = "local optimizer steps per round"},
    {.name = "local_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_gossip_opts, local_optimizer), .def = "sgd",
     .values = dt_local_opt_names, .help = "sgd, adam, adamw, rmsprop, adadelta or nadam"},
    {.name = "lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_gossip_opts, lr), .def = "0.01", .min = 0, .max = DT_INF,
     .help = "initial learning rate"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_gossip_opts, mu), .def = "0.0", .min = 0, .max = DT_INF,
     .help = "rate decay: round k uses lr_k = lr / (1 + mu k); 0 keeps it constant"},
    {.name = "p", .applies = "mode=push", .type = DT_KEY_FLOAT, .offset = offsetof(dt_gossip_opts, p), .def = "0.5", .min = 0, .max = 1,
     .help = "push: probability that a node pushes in a round"},
    DT_SGD_EXTRAS_KEYS(dt_gossip_opts, x),
    DT_LR_SCHEDULE_KEY(dt_gossip_opts, schedule),
    {0},
};

typedef struct gossip_state {
  dt_gossip_opts o;
  dt_optimizer_run *run;
  dt_learners learners;
  uint8_t *mask;
  int *partner;    /* pairwise: matched node or -1; push: push target or -1 */
  uint32_t *order; /* edge order for the matching */
  double *w;       /* push-sum weights of ALL nodes (every rank tracks all of them) */
  double *wnew;    /* scratch: the weights after this round's pushes */
} gossip_state;

static const dt_state_slot slots[] = {
    {.name = "local", .kind = DT_SLOT_LEARNERS, .offset = offsetof(gossip_state, learners),
     .from = DT_LEARNER_FROM_X(dt_gossip_opts, local_optimizer, lr, x)},
    {0},
};

static void destroy(dt_optimizer_run *run, void *state) {
  gossip_state *s = state;
  (void)run;
  dt_free(s->mask);
  dt_free(s->partner);
  dt_free(s->order);
  dt_free(s->w);
  dt_free(s->wnew);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  gossip_state *s = state;
  (void)opts;
  const dt_graph *g = dt_run_graph(run);
  DT_ALLOC(s->mask, 2 * (size_t)g->num_edges + 1, "gossip");
  DT_ALLOC(s->partner, g->n, "gossip");
  DT_ALLOC(s->order, g->num_edges + 1, "gossip");
  DT_ALLOC(s->w, g->n, "gossip");
  DT_ALLOC(s->wnew, g->n, "gossip");
  for (int i = 0; i < g->n; i++) s->w[i] = 1.0;
  return dt_run_keep_shared(run, "push_weights", s->w, sizeof(double) * (size_t)g->n);
}

static void set_edge(const dt_graph *g, uint8_t *mask, int from, int to) {
  mask[g->nbr_start[from] + dt_graph_nbr_index(g, from, to)] = 1;
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  gossip_state *s = p;
  const dt_graph *g = dt_run_graph(run);
  dt_backend *be = dt_run_backend(run);
  const size_t d = dt_run_dim(run);
  const float lr = (float)dt_run_rate(run, &s->o.schedule, s->o.lr, s->o.mu, k, s->o.local_steps);
  for (int t = 0; t < s->o.local_steps; t++) DT_TRY(dt_learners_step(run, &s->learners, lr, NULL));

  /* Who talks to whom this round: the same draws on every rank, among the links of this round's
   * graph (every edge of a static one). */
  const uint8_t *live = dt_run_this_round(run)->mask;
  dt_rng r;
  dt_rng_init(&r, dt_run_seed(run), DT_RNG_GOSSIP, (uint64_t)k);
  memset(s->mask, 0, 2 * (size_t)g->num_edges);
  if (s->o.mode == DT_GOSSIP_PAIRWISE) {
    dt_graph_random_matching(g, &r, live, s->order, s->partner);
    for (int u = 0; u < g->n; u++)
      if (s->partner[u] >= 0) set_edge(g, s->mask, u, s->partner[u]);
  } else {
    for (int i = 0; i < g->n; i++) s->partner[i] = -1;
    for (int i = 0; i < g->n; i++) {
      /* i's out-links this round (a static graph: all its neighbours, in the draws of before) */
      int deg = 0;
      for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) deg += live == NULL || live[e];
      double u = dt_rng_double(&r);
      uint32_t pick = dt_rng_below(&r, (uint32_t)(deg > 0 ? deg : 1));
      if (u < s->o.p && deg > 0 && dt_run_online(run, i)) { /* an offline node does not push */
        for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++)
          if ((live == NULL || live[e]) && pick-- == 0) {
            s->partner[i] = g->nbr[e];
            break;
          }
        set_edge(g, s->mask, i, s->partner[i]);
      }
    }
  }
  for (int l = 0; l < dt_run_count(run); l++) { /* --dump-trace: each node's partner or push target */
    const int32_t peer = s->partner[dt_run_first(run) + l];
    DT_TRY(dt_run_trace_i32(run, l, "PEER", &peer, 1));
  }
  DT_TRY(dt_run_send(run, 0, dt_run_theta(run)));
  DT_TRY(dt_run_exchange_go(run, s->mask));

  if (s->o.mode == DT_GOSSIP_PAIRWISE) {
    for (int l = 0; l < dt_run_count(run); l++) {
      const int i = dt_run_first(run) + l, j = s->partner[i];
      if (j < 0) continue;
      const float *xj = dt_exchange_recv(dt_run_the_exchange(run), i, j, 0);
      const float *xi = dt_exchange_send_buffer(dt_run_the_exchange(run), i, 0);
      if (xj == NULL) continue; /* lost (faults): i keeps its own */
      /* x_i/2 + x_j/2 (halving is exact) is the same float on both ends: the pair agrees exactly */
      DT_TRY(dt_be_axpby(be, d, 0.5f, xi, 0.5f, xj, dt_slab_node(dt_run_theta(run), l)));
    }
    return DT_OK;
  }
  /* push: senders halve their weight; receivers merge pushes in sender order */
  for (int i = 0; i < g->n; i++)
    if (s->partner[i] >= 0) s->w[i] *= 0.5;
  for (int l = 0; l < dt_run_count(run); l++) {
    const int j = dt_run_first(run) + l;
    float *x = dt_slab_node(dt_run_theta(run), l);
    double wj = s->w[j]; /* grows with each merged push */
    for (int e = g->nbr_start[j]; e < g->nbr_start[j + 1]; e++) {
      const int i = g->nbr[e];
      if (s->partner[i] != j) continue;
      const float *xi = dt_exchange_recv(dt_run_the_exchange(run), j, i, 0);
      if (xi == NULL) continue; /* lost (faults): the pushed half is gone */
      const double wi = s->w[i], tot = wj + wi;
      const float a = (float)(wj / tot), b = (float)(wi / tot);
      DT_TRY(dt_be_axpby(be, d, a, x, b, xi, x));
      wj = tot;
    }
  }
  /* weights of receivers, for every node (all ranks keep the full vector): each adds the halved
   * weights its senders had this round, not what they received themselves (that would create
   * weight: the sum of the weights stays N) */
  for (int j = 0; j < g->n; j++) s->wnew[j] = s->w[j];
  for (int j = 0; j < g->n; j++)
    for (int e = g->nbr_start[j]; e < g->nbr_start[j + 1]; e++) {
      const int i = g->nbr[e];
      if (s->partner[i] == j && dt_run_delivered(run, s->mask, g->nbr_start[i] + dt_graph_nbr_index(g, i, j)))
        s->wnew[j] += s->w[i];
    }
  for (int j = 0; j < g->n; j++) s->w[j] = s->wnew[j];
  return DT_OK;
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  const dt_gossip_opts *o = opts;
  /* push: each node sends with probability p; pairwise: at most one partner per node */
  const double senders = o->mode == DT_GOSSIP_PUSH ? o->p * g->n : (double)(g->n - g->n % 2);
  return senders * (double)dim * sizeof(float);
}

static double gradient_step(const void *opts) {
  const dt_gossip_opts *o = opts;
  return dt_local_step_stable(o->lr, o->local_optimizer, &o->x);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_gossip_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, o->local_optimizer, &o->x, rounds, err, err_size);
}

const dt_optimizer_def dt_optimizer_gossip = {
    .plugin =
        {
            .name = "gossip",
            .summary = "gossip SGD: local steps, then pairwise averaging or GoSGD push-sum",
            .keys = keys,
            .opts_size = sizeof(dt_gossip_opts),
            .finalize = finalize,
        },
    DT_STATE(gossip_state, o, run),
    .slots = slots,
    .exchange_vectors = 1,
    .create = create,
    .destroy = destroy,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .gradient_step = gradient_step,
    .runs_on = DT_RUNS_TIME_VARYING, /* pairs and push targets are drawn among the round's links */
    .on_missing = DT_MISSING_SKIP,
};
