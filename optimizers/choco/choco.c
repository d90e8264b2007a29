/* Choco-SGD (Koloskova, Stich & Jaggi, ICML 2019, Algorithm 2 in its memory-efficient form):
 * decentralized SGD whose nodes send only a compressed difference between their model and a
 * public estimate of it that every neighbour tracks. Messages travel at their real size (indices
 * and values, or packed bits and a scale). On a time-varying graph every directed edge keeps its
 * own estimate, updated only when the edge is active, so that both ends always agree. Update
 * equations: README.md here. */

#include "../compression.h"
#include "../local_step.h"
#include "../mix.h"
#include "../options_impl.h"
#include "dt/codec.h"
#include "dt/optimizer.h"

/* The options this plug-in's key table fills (its own: nothing outside this folder sees it). */
typedef struct dt_choco_opts {
  double lr, mu;       /* round k's local rate lr / (1 + mu k) */
  int local_optimizer; /* dt_local_opt_kind */
  double gamma;        /* consensus step size */
  dt_compression_opts compression;
  dt_sgd_extras x;
  dt_lr_schedule schedule;
} dt_choco_opts;

static const dt_key keys[] = {
    {.name = "lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_choco_opts, lr), .def = "0.01", .min = 0, .max = DT_INF,
     .help = "initial learning rate of the local step"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_choco_opts, mu), .def = "0.0", .min = 0, .max = DT_INF,
     .help = "rate decay: round k uses lr_k = lr / (1 + mu k)"},
    {.name = "local_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_choco_opts, local_optimizer), .def = "sgd",
     .values = dt_local_opt_names, .help = "the local step: sgd, adam, adamw, rmsprop, adadelta or nadam"},
    {.name = "gamma", .type = DT_KEY_FLOAT, .offset = offsetof(dt_choco_opts, gamma), .def = "0.05", .min = 0, .max = 1,
     .flags = DT_KEY_MIN_OPEN, .help = "consensus step size: x_i <- x_i + gamma (s_i - xhat_i)"},
    {.name = "compression", .type = DT_KEY_SECTION, .offset = offsetof(dt_choco_opts, compression), .sub = dt_compression_keys,
     .help = "the compression operator Q of the messages"},
    DT_SGD_EXTRAS_KEYS(dt_choco_opts, x),
    DT_LR_SCHEDULE_KEY(dt_choco_opts, schedule),
    {0},
};

typedef struct choco_state {
  dt_choco_opts o;
  dt_optimizer_run *run;
  dt_learners learners;
  dt_codec codec;
  dt_slab xhat; /* x̂_i: the public estimate of x_i, which i and its neighbours track alike */
  dt_slab s;    /* s_i = Σ_j W_ij x̂_j over {i} ∪ N(i) */
  dt_slab diff; /* scratch: x_i − x̂_i, then s_i − x̂_i */
  int k;        /* the round being run (for the codec's streams) */
  /* time-varying graphs: per-edge estimates, one row per local out-edge e = (i, t-th neighbour j) */
  int per_edge;
  dt_slab xout; /* x̂_{i→j}: i's estimate as j knows it */
  dt_slab xin;  /* x̂_{j→i}: j's estimate as i knows it */
  int *rev;     /* [local out-edges]: the index of the reverse edge j→i */
  int e0;       /* the first local out-edge, g->nbr_start[first] */
  float *qtrace; /* --dump-trace: per local node, the decoded message and (off the host) its bytes */
  size_t qtrace_stride;
} choco_state;

/* The estimates depend on the graph and the faults, not on the options alone: create makes them. */
static const dt_state_slot slots[] = {
    {.name = "local", .kind = DT_SLOT_LEARNERS, .offset = offsetof(choco_state, learners),
     .from = DT_LEARNER_FROM_X(dt_choco_opts, local_optimizer, lr, x)},
    {.name = "diff", .kind = DT_SLOT_NODE, .offset = offsetof(choco_state, diff), .scratch = 1},
    {0},
};

static void destroy(dt_optimizer_run *run, void *state) {
  choco_state *s = state;
  dt_slab *slabs[] = {&s->xhat, &s->s, &s->xout, &s->xin};
  for (size_t t = 0; t < sizeof slabs / sizeof *slabs; t++) dt_slab_free(dt_run_backend(run), slabs[t]);
  dt_free(s->rev);
  dt_free(s->qtrace);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  choco_state *s = state;
  (void)opts;
  dt_exchange *ex;
  dt_backend *be = dt_run_backend(run);
  const size_t dim = dt_run_dim(run);
  const int count = dt_run_count(run);
  DT_TRY(dt_codec_init(&s->codec, s->o.compression.op, dim, s->o.compression.ratio, s->o.compression.levels));
  const size_t msg_len = (s->codec.bytes + sizeof(float) - 1) / sizeof(float); /* capacity in floats */
  /* per edge on a time-varying graph, and under faults: a lost q leaves both copies of that
   * edge's estimate as they were (the sender learns of the loss, as from a transport's
   * acknowledgement), so the next q carries what the lost one did */
  s->per_edge = dt_run_time_varying(run) || dt_run_faulty(run);
  if (s->per_edge) {
    DT_TRY(dt_mix_reverse_edges(run, &s->rev, &s->e0));
    const int edges = dt_run_local_edges(run);
    DT_TRY(dt_slab_create(be, edges, dim, &s->xout)); /* every estimate starts at 0 */
    DT_TRY(dt_slab_create(be, edges, dim, &s->xin));
    DT_TRY(dt_run_keep_edge_slab(run, "xhat_out", &s->xout));
    DT_TRY(dt_run_keep_edge_slab(run, "xhat_in", &s->xin));
    return dt_run_exchange_edges(run, msg_len, &ex); /* one message per directed edge */
  }
  DT_TRY(dt_slab_create(be, count, dim, &s->xhat)); /* x̂ = 0, s = 0 (the paper's start) */
  DT_TRY(dt_slab_create(be, count, dim, &s->s));
  DT_TRY(dt_run_keep_slab(run, "xhat", &s->xhat));
  DT_TRY(dt_run_keep_slab(run, "s", &s->s));
  /* one message per node, of which each exchange sends codec.bytes */
  DT_TRY(dt_run_exchange_len(run, 1, msg_len, &ex));
  if (dt_run_tracing(run)) {
    s->qtrace_stride = dim + msg_len;
    DT_ALLOC(s->qtrace, s->qtrace_stride * (size_t)count + 1, "choco trace");
  }
  return DT_OK;
}

/* The codec's stream of the message of round k sent by `from`: node i on a static graph, the
 * directed edge's index in the union graph per edge. */
static uint64_t msg_id(int from, int k) { return (uint64_t)(uint32_t)from << 32 | (uint32_t)k; }

static dt_status node_encode(void *p, int l) {
  choco_state *s = p;
  dt_optimizer_run *run = s->run;
  const int i = dt_run_first(run) + l;
  void *msg = dt_exchange_send_buffer(dt_run_the_exchange(run), i, 0);
  DT_TRY(dt_be_encode(dt_run_backend(run), &s->codec, dt_slab_node(&s->diff, l), dt_run_seed(run), msg_id(i, s->k), msg));
  return s->qtrace != NULL ? dt_compression_trace(run, &s->codec, l, "QMSG", msg, msg_id(i, s->k),
                                                  s->qtrace + s->qtrace_stride * (size_t)l)
                           : DT_OK;
}

static dt_status node_update(void *p, int l) {
  choco_state *s = p;
  dt_optimizer_run *run = s->run;
  dt_backend *be = dt_run_backend(run);
  const size_t d = dt_run_dim(run);
  const int i = dt_run_first(run) + l;
  float *xhat = dt_slab_node(&s->xhat, l), *si = dt_slab_node(&s->s, l), *tmp = dt_slab_node(&s->diff, l);
  const int deg = dt_graph_degree(dt_run_graph(run), i);
  const float *q[deg + 1];
  float w[deg + 1];
  int who[deg + 1];
  const int terms = dt_mix_terms(run, i, 0, q, w, who);
  /* x̂_i += q_i */
  DT_TRY(dt_be_decode_axpy(be, &s->codec, dt_exchange_send_buffer(dt_run_the_exchange(run), i, 0), dt_run_seed(run), msg_id(i, s->k), 1.0f,
                              xhat));
  /* s_i += Σ_j W_ij q_j over {i} ∪ N(i), in increasing id with i at its place (the order of mixing) */
  for (int t = 0; t < terms; t++)
    DT_TRY(dt_be_decode_axpy(be, &s->codec, q[t], dt_run_seed(run), msg_id(who[t], s->k), w[t], si));
  /* x_i ← x_i^{+½} + γ (s_i − x̂_i) */
  DT_TRY(dt_be_axpby(be, d, 1.0f, si, -1.0f, xhat, tmp));
  return dt_be_axpy(be, d, (float)s->o.gamma, tmp, dt_slab_node(dt_run_theta(run), l));
}

/* ---- time-varying graphs: an estimate per directed edge ---------------------------------- */

static int active(const dt_optimizer_run *run, int e) { return dt_run_this_round(run)->mask == NULL || dt_run_this_round(run)->mask[e]; }

/* q_{i→j} = Q(x_i^{+½} − x̂_{i→j}) for every active out-edge, into that edge's send buffer. */
static dt_status edge_encode(void *p, int l) {
  choco_state *s = p;
  dt_optimizer_run *run = s->run;
  dt_backend *be = dt_run_backend(run);
  const dt_graph *g = dt_run_graph(run);
  const int i = dt_run_first(run) + l;
  float *tmp = dt_slab_node(&s->diff, l);
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    if (!active(run, e)) continue;
    DT_TRY(dt_be_axpby(be, dt_run_dim(run), 1.0f, dt_slab_node(dt_run_theta(run), l), -1.0f, dt_slab_node(&s->xout, e - s->e0), tmp));
    DT_TRY(dt_be_encode(be, &s->codec, tmp, dt_run_seed(run), msg_id(e, s->k),
                           dt_exchange_edge_buffer(dt_run_the_exchange(run), i, e - g->nbr_start[i])));
  }
  return DT_OK;
}

/* In neighbour order: x̂_{j→i} += q_{j→i} and x_i += γ W_ij x̂_{j→i} for an active j→i;
 * x̂_{i→j} += q_{i→j} and x_i −= γ W_ji x̂_{i→j} for an active i→j. */
static dt_status edge_update(void *p, int l) {
  choco_state *s = p;
  dt_optimizer_run *run = s->run;
  dt_backend *be = dt_run_backend(run);
  const dt_graph *g = dt_run_graph(run);
  const int i = dt_run_first(run) + l;
  const float gamma = (float)s->o.gamma;
  float *x = dt_slab_node(dt_run_theta(run), l);
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    const int r = s->rev[e - s->e0], j = g->nbr[e];
    float *in = dt_slab_node(&s->xin, e - s->e0), *out = dt_slab_node(&s->xout, e - s->e0);
    if (!dt_run_online(run, j)) continue; /* an offline neighbour's edge rests (faults) */
    if (active(run, r)) {
      if (dt_run_delivered(run, dt_run_this_round(run)->mask, r))
        DT_TRY(dt_be_decode_axpy(be, &s->codec, dt_exchange_recv(dt_run_the_exchange(run), i, j, 0), dt_run_seed(run), msg_id(r, s->k), 1.0f,
                                    in));
      DT_TRY(dt_be_axpy(be, dt_run_dim(run), gamma * (float)dt_run_this_round(run)->w_nbr[e], in, x));
    }
    if (active(run, e)) {
      if (dt_run_delivered(run, dt_run_this_round(run)->mask, e))
        DT_TRY(dt_be_decode_axpy(be, &s->codec, dt_exchange_edge_buffer(dt_run_the_exchange(run), i, e - g->nbr_start[i]), dt_run_seed(run),
                                    msg_id(e, s->k), 1.0f, out));
      DT_TRY(dt_be_axpy(be, dt_run_dim(run), -gamma * (float)dt_run_this_round(run)->w_nbr[r], out, x));
    }
  }
  return DT_OK;
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  choco_state *s = p;
  s->k = k;
  if (s->per_edge) {
    DT_TRY(dt_learners_step(run, &s->learners, (float)dt_run_rate(run, &s->o.schedule, s->o.lr, s->o.mu, k, 1), NULL));
    DT_TRY(dt_run_for_nodes(run, edge_encode, s));
    DT_TRY(dt_run_exchange_go_sized(run, NULL, s->codec.bytes));
    return dt_run_for_nodes(run, edge_update, s);
  }
  /* x_i^{+½}: one local step on a new minibatch */
  DT_TRY(dt_learners_step(run, &s->learners, (float)dt_run_rate(run, &s->o.schedule, s->o.lr, s->o.mu, k, 1), NULL));
  /* q_i = Q(x_i^{+½} − x̂_i), written straight into the send buffer */
  DT_TRY(dt_slab_axpby(dt_run_backend(run), 1.0f, dt_run_theta(run), -1.0f, &s->xhat, &s->diff));
  DT_TRY(dt_run_for_nodes(run, node_encode, s));
  DT_TRY(dt_run_exchange_go_sized(run, NULL, s->codec.bytes));
  return dt_run_for_nodes(run, node_update, s);
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  const dt_choco_opts *o = opts;
  dt_codec c;
  if (dt_codec_init(&c, o->compression.op, dim, o->compression.ratio, o->compression.levels) != DT_OK) return 0;
  return 2.0 * g->num_edges * (double)c.bytes; /* every node sends q_i to every neighbour */
}

static double gradient_step(const void *opts) {
  const dt_choco_opts *o = opts;
  return dt_local_step_stable(o->lr, o->local_optimizer, &o->x);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_choco_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, o->local_optimizer, &o->x, rounds, err, err_size);
}

/* Beyond the slots, per node (a static graph without faults): xhat and s, and the exchange's send
 * message (msg_len floats). A time-varying graph or faults would trade xhat and s for per-edge
 * xout, xin and messages, which the options alone do not show. */
static dt_state_size state_extra(const void *opts, size_t dim) {
  const dt_choco_opts *o = opts;
  return (dt_state_size){.per_node = 2 + (double)dt_compression_msg_len(&o->compression, dim) / (double)dim};
}

const dt_optimizer_def dt_optimizer_choco = {
    .plugin =
        {
            .name = "choco",
            .aliases = (const char *const[]){"choco_sgd", NULL},
            .summary = "Choco-SGD: local steps, then compressed exchanges of model differences (top_k, random_k, sign, qsgd)",
            .keys = keys,
            .opts_size = sizeof(dt_choco_opts),
            .finalize = finalize,
        },
    DT_STATE(choco_state, o, run),
    .slots = slots,
    .create = create,
    .destroy = destroy,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .traffic_per_edge = 1,
    .gradient_step = gradient_step,
    .runs_on = DT_RUNS_TIME_VARYING, /* per-edge estimates follow any round graph */
    .on_missing = DT_MISSING_SKIP,
    .state_extra = state_extra,
};
