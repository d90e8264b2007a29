/* RelaySGD (Vogels, He, Koloskova, Karimireddy, Lin, Stich & Jaggi, NeurIPS 2021, "RelaySum for
 * decentralized deep learning on heterogeneous data"): on a spanning tree of the graph every node
 * relays to each tree neighbour its own model plus what its other neighbours relayed to it a
 * round earlier, so that after the tree's diameter every node averages all n models with a
 * delay instead of mixing with its neighbours only. The order and the filler of not yet arrived
 * models (the shared start x0) are the authors' code's (epfml/relaysgd,
 * utils/communication.py). Update equations: README.md here. Static graphs. */
#include <stdio.h>
#include <string.h>

#include "../local_step.h"
#include "../options_impl.h"
#include "dt/optimizer.h"

typedef struct dt_relay_opts {
  double lr, mu;
  int local_optimizer; /* dt_local_opt_kind */
  int root;            /* the spanning tree's root (a breadth-first tree) */
  dt_sgd_extras x;
  dt_lr_schedule schedule;
} dt_relay_opts;

static const dt_key keys[] = {
    {.name = "lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_relay_opts, lr), .def = "0.01", .min = 0, .max = DT_INF,
     .help = "learning rate of the local step"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_relay_opts, mu), .def = "0.0", .min = 0, .max = DT_INF,
     .help = "rate decay of the default lr_schedule: round k uses lr / (1 + mu k)"},
    {.name = "local_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_relay_opts, local_optimizer), .def = "sgd",
     .values = dt_local_opt_names, .flags = DT_KEY_EMIT_IF_SET,
     .help = "the local step: sgd (the default), or adam, adamw, rmsprop, adadelta, nadam"},
    {.name = "root", .type = DT_KEY_INT, .offset = offsetof(dt_relay_opts, root), .def = "0", .min = 0, .max = 1 << 30,
     .help = "root of the breadth-first spanning tree the messages travel on (each node's parent: its lowest-id "
             "neighbour one level up)"},
    DT_SGD_EXTRAS_KEYS(dt_relay_opts, x),
    DT_LR_SCHEDULE_KEY(dt_relay_opts, schedule),
    {0},
};

typedef struct relay_state {
  dt_relay_opts o;
  dt_learners learners;
  uint8_t *tree;  /* [2E] directed edges of the union graph that are tree edges (the exchange's mask) */
  int *tstart;    /* [n + 1] node u's tree edges are tedge[tstart[u] .. tstart[u + 1]) */
  int *tedge;     /* [2(n − 1)] the directed tree edges u→v, by u, in increasing v */
  int *count;     /* [2E] c_e: how many models the message last sent along e sums (replicated) */
  int *next;      /* [2E] scratch: this round's counts */
  int *rev;       /* [2E] the reverse of a tree edge */
  float *x0;      /* the shared start (backend memory, kept) */
  dt_slab in;     /* per local out-edge e = (i, j): the last message m_{j→i} (kept) */
  dt_optimizer_run *run;
} relay_state;

/* x0 and the tree are create's (a checkpoint keeps the counts before x0) */
static const dt_state_slot slots[] = {
    {.name = "local", .kind = DT_SLOT_LEARNERS, .offset = offsetof(relay_state, learners),
     .from = DT_LEARNER_FROM_X(dt_relay_opts, local_optimizer, lr, x)},
    {.name = "relayed", .kind = DT_SLOT_EDGE, .offset = offsetof(relay_state, in)}, /* no message yet: 0 */
    {0},
};

static void destroy(dt_optimizer_run *run, void *state) {
  relay_state *s = state;
  dt_be_free(dt_run_backend(run), s->x0);
  dt_free(s->tree);
  dt_free(s->tstart);
  dt_free(s->tedge);
  dt_free(s->count);
  dt_free(s->next);
  dt_free(s->rev);
}

/* The breadth-first spanning tree from root, neighbours in increasing id: tree[e] for both
 * directions of every tree edge. */
static dt_status make_tree(const dt_graph *g, int root, uint8_t *tree) {
  dt_status st = DT_OK;
  int *queue = NULL, *seen = NULL;
  DT_ALLOC_GOTO(queue, g->n, "relaysgd tree");
  DT_ALLOC_GOTO(seen, g->n, "relaysgd tree");
  int head = 0, tail = 0;
  queue[tail++] = root;
  seen[root] = 1;
  while (head < tail) {
    const int u = queue[head++];
    for (int e = g->nbr_start[u]; e < g->nbr_start[u + 1]; e++) {
      const int v = g->nbr[e];
      if (seen[v]) continue;
      seen[v] = 1;
      queue[tail++] = v;
      tree[e] = 1;
      tree[g->nbr_start[v] + dt_graph_nbr_index(g, v, u)] = 1;
    }
  }
cleanup:
  dt_free(queue);
  dt_free(seen);
  return st;
}

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  relay_state *s = state;
  (void)opts;
  dt_exchange *ex;
  const dt_graph *g = dt_run_graph(run);
  const size_t E2 = 2 * (size_t)g->num_edges;
  DT_ALLOC(s->tree, E2 + 1, "relaysgd");
  DT_ALLOC(s->count, E2 + 1, "relaysgd");
  DT_ALLOC(s->next, E2 + 1, "relaysgd");
  DT_ALLOC(s->rev, E2 + 1, "relaysgd");
  DT_ALLOC(s->tstart, (size_t)g->n + 1, "relaysgd");
  DT_ALLOC(s->tedge, 2 * (size_t)g->n + 1, "relaysgd");
  DT_TRY(make_tree(g, s->o.root, s->tree));
  for (int u = 0, t = 0; u < g->n; u++) { /* only the tree edges: the rounds never look at the others */
    s->tstart[u] = t;
    for (int e = g->nbr_start[u]; e < g->nbr_start[u + 1]; e++)
      if (s->tree[e]) {
        s->tedge[t++] = e;
        s->rev[e] = g->nbr_start[g->nbr[e]] + dt_graph_nbr_index(g, g->nbr[e], u);
      }
    s->tstart[u + 1] = t;
  }
  DT_TRY(dt_run_keep_shared(run, "counts", s->count, sizeof(int) * E2));
  /* x0: every node starts at the same θ0, node 0's row as any (the mean costs no traffic) */
  DT_TRY(dt_be_alloc(dt_run_backend(run), sizeof(float) * dt_run_dim(run), (void **)&s->x0));
  DT_TRY(dt_run_mean_uncounted(run, dt_run_theta(run), s->x0));
  DT_TRY(dt_run_keep_shared_vec(run, "x0", s->x0));
  return dt_run_exchange_edges(run, dt_run_dim(run), &ex);
}

/* Node l's message to every tree neighbour j: x_i^{+½} + Σ_{k ≠ j} m_{k→i} (increasing id). */
static dt_status node_send(void *p, int l) {
  relay_state *s = p;
  dt_optimizer_run *run = s->run;
  const dt_graph *g = dt_run_graph(run);
  const int i = dt_run_first(run) + l, e0 = g->nbr_start[dt_run_first(run)];
  const float *x = dt_slab_node(dt_run_theta(run), l);
  for (int a = s->tstart[i]; a < s->tstart[i + 1]; a++) {
    const int e = s->tedge[a];
    float *msg = dt_exchange_edge_buffer(dt_run_the_exchange(run), i, e - g->nbr_start[i]);
    DT_TRY(dt_be_copy(dt_run_backend(run), dt_run_dim(run), x, msg));
    for (int b = s->tstart[i]; b < s->tstart[i + 1]; b++)
      if (b != a) DT_TRY(dt_be_axpy(dt_run_backend(run), dt_run_dim(run), 1.0f, dt_slab_node(&s->in, s->tedge[b] - e0), msg));
  }
  return DT_OK;
}

/* Node l keeps this round's messages and averages:
 * x_i = (x_i^{+½} + Σ_j m_{j→i} + (n − 1 − Σ_j c_{j→i}) x0) / n. */
static dt_status node_average(void *p, int l) {
  relay_state *s = p;
  dt_optimizer_run *run = s->run;
  const dt_graph *g = dt_run_graph(run);
  const int i = dt_run_first(run) + l, e0 = g->nbr_start[dt_run_first(run)];
  float *x = dt_slab_node(dt_run_theta(run), l);
  int arrived = 1;
  for (int a = s->tstart[i]; a < s->tstart[i + 1]; a++) {
    const int e = s->tedge[a];
    float *m = dt_slab_node(&s->in, e - e0);
    const float *got = dt_exchange_recv(dt_run_the_exchange(run), i, g->nbr[e], 0); /* NULL: lost; the last one is reused */
    if (got != NULL) DT_TRY(dt_be_copy(dt_run_backend(run), dt_run_dim(run), got, m));
    DT_TRY(dt_be_axpy(dt_run_backend(run), dt_run_dim(run), 1.0f, m, x));
    arrived += s->next[s->rev[e]];
  }
  if (arrived < g->n) DT_TRY(dt_be_axpy(dt_run_backend(run), dt_run_dim(run), (float)(g->n - arrived), s->x0, x));
  return dt_be_div(dt_run_backend(run), dt_run_dim(run), x, (double)g->n, x);
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  relay_state *s = p;
  const dt_graph *g = dt_run_graph(run);
  DT_TRY(dt_learners_step(run, &s->learners, (float)dt_run_rate(run, &s->o.schedule, s->o.lr, s->o.mu, k, 1), NULL));
  DT_TRY(dt_run_for_nodes(run, node_send, s));
  /* the counts travel with the messages in the reference; here every rank derives them:
   * c_{i→j} = 1 + Σ_{k ≠ j} c_{k→i} of the previous round */
  for (int u = 0; u < g->n; u++)
    for (int a = s->tstart[u]; a < s->tstart[u + 1]; a++) {
      int c = 1;
      for (int b = s->tstart[u]; b < s->tstart[u + 1]; b++)
        if (b != a) c += s->count[s->rev[s->tedge[b]]];
      s->next[s->tedge[a]] = c;
    }
  DT_TRY(dt_run_exchange_go(run, s->tree));
  /* under faults a message that did not arrive leaves its receiver the last one (reuse), and the
   * count of the models it sums with it; every rank knows what arrived */
  for (int u = 0; dt_run_faulty(run) && u < g->n; u++)
    for (int a = s->tstart[u]; a < s->tstart[u + 1]; a++)
      if (!dt_run_delivered(run, s->tree, s->tedge[a])) s->next[s->tedge[a]] = s->count[s->tedge[a]];
  DT_TRY(dt_run_for_nodes(run, node_average, s));
  memcpy(s->count, s->next, sizeof(int) * 2 * (size_t)g->num_edges);
  return DT_OK;
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  (void)opts;
  return 2.0 * (g->n - 1) * (double)dim * sizeof(float); /* one message per direction of each tree edge */
}

static double gradient_step(const void *opts) {
  const dt_relay_opts *o = opts;
  return dt_local_step_stable(o->lr, o->local_optimizer, &o->x);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_relay_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, o->local_optimizer, &o->x, rounds, err, err_size);
}

static int accepts(const void *opts, const dt_run_env *env, dt_refusal *why) {
  const dt_relay_opts *o = opts;
  if (o->root < env->graph->n) return 1;
  return dt_refuse(why, "root", "relaysgd's root is %d, and the graph's nodes are 0 to %d", o->root, env->graph->n - 1);
}

/* Per out-edge: the per-edge exchange's send vector; per rank: x0 and the run's sum (dim doubles). */
static dt_state_size state_extra(const void *opts, size_t dim) {
  (void)opts, (void)dim;
  return (dt_state_size){.per_edge = 1, .per_rank = 3};
}

const dt_optimizer_def dt_optimizer_relaysgd = {
    .plugin =
        {
            .name = "relaysgd",
            .summary = "RelaySGD: local steps, then models relayed along a spanning tree, so every node averages all n",
            .keys = keys,
            .opts_size = sizeof(dt_relay_opts),
            .finalize = finalize,
        },
    DT_STATE(relay_state, o, run),
    .slots = slots,
    .create = create,
    .destroy = destroy,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .gradient_step = gradient_step,
    .accepts = accepts,
    .on_missing = DT_MISSING_SKIP, /* reuse: the last message from that neighbour (node_average) */
    .state_extra = state_extra,
};
