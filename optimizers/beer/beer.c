/* BEER (Zhao, Li, Richtárik & Chi, NeurIPS 2022): gradient tracking with compressed messages.
 * Each node keeps public estimates h_i of its model and g_i of its tracker, which its neighbours
 * track alike from the compressed differences it sends; mixing uses the estimates. Static
 * graphs. The estimates are kept per directed edge, as Choco's are: both ends of an edge hold
 * bitwise the same copy and move it only when its message arrived. That is what faults need, and
 * what float32 needs too: the running sums Σ_j W_ij g_j a node could keep instead drift from its
 * neighbours' g_j by rounding, and the trackers integrate that drift round after round (issue 61).
 * Update equations: README.md here; the order is the authors' experiments/BEER.py. */
#include "../compression.h"
#include "../local_step.h"
#include "../mix.h"
#include "../options_impl.h"
#include "dt/codec.h"
#include "dt/optimizer.h"

typedef struct dt_beer_opts {
  double alpha, gamma;
  dt_compression_opts compression;
  dt_lr_schedule schedule;
} dt_beer_opts;

static const dt_key keys[] = {
    {.name = "alpha", .type = DT_KEY_FLOAT, .offset = offsetof(dt_beer_opts, alpha), .def = "0.005", .min = 0, .max = DT_INF,
     .help = "step size eta along the tracker"},
    {.name = "gamma", .type = DT_KEY_FLOAT, .offset = offsetof(dt_beer_opts, gamma), .def = "0.2", .min = 0, .max = 1,
     .flags = DT_KEY_MIN_OPEN, .help = "consensus step size: x_i <- x_i + gamma (sum_j W_ij h_j - h_i) - eta v_i"},
    {.name = "compression", .type = DT_KEY_SECTION, .offset = offsetof(dt_beer_opts, compression), .sub = dt_compression_keys,
     .help = "the compression operator C of both messages"},
    DT_LR_SCHEDULE_KEY(dt_beer_opts, schedule),
    {0},
};

typedef struct beer_state {
  dt_beer_opts o;
  dt_codec codec;
  int k;
  dt_slab v, gprev;   /* tracker and last gradient */
  dt_slab grad, diff; /* scratch */
  float *qtrace;      /* --dump-trace: a decoded message (and, off the host, its bytes) */
  dt_optimizer_run *run;
  /* per-edge estimates, one row per local out-edge e = (i, t-th neighbour j): h_{j→i} (j's as i
   * knows it) and h_{i→j} (i's as j knows it); g alike. Without faults every h_{i→j} of a node
   * holds the same bits (the same start, the same messages), so they are one row per node (hout
   * and gout then have count rows); under faults one per out-edge. The edge's one message carries
   * q^h at float 0 and q^g at float half. */
  size_t half;                  /* the first message's length in floats (codec.bytes rounded up) */
  dt_slab hout, hin, gout, gin;
  int *rev;                     /* [local out-edges]: the index of the reverse edge j→i */
  int e0;                       /* the first local out-edge, g->nbr_start[first] */
  int node_streams;             /* no faults: a node's messages are one, drawn from its stream */
  float eta, gamma;             /* the round's step sizes (for the per-node callbacks) */
} beer_state;

/* the estimates per edge (h_{i→j}, h_{j→i}, g alike), each a row per local out-edge */
static const dt_state_slot slots[] = {
    {.name = "tracker", .kind = DT_SLOT_NODE, .offset = offsetof(beer_state, v)},
    {.name = "last_gradient", .kind = DT_SLOT_NODE, .offset = offsetof(beer_state, gprev)},
    {.name = "grad", .kind = DT_SLOT_NODE, .offset = offsetof(beer_state, grad), .scratch = 1},
    {.name = "diff", .kind = DT_SLOT_NODE, .offset = offsetof(beer_state, diff), .scratch = 1},
    {.name = "h_in", .kind = DT_SLOT_EDGE, .offset = offsetof(beer_state, hin)},
    {.name = "g_in", .kind = DT_SLOT_EDGE, .offset = offsetof(beer_state, gin)},
    {0}, /* h_out and g_out: per node or per edge (create) */
};

static void destroy(dt_optimizer_run *run, void *state) {
  beer_state *s = state;
  dt_slab_free(dt_run_backend(run), &s->hout);
  dt_slab_free(dt_run_backend(run), &s->gout);
  dt_free(s->rev);
  dt_free(s->qtrace);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  beer_state *s = state;
  (void)opts;
  dt_exchange *ex;
  DT_TRY(dt_codec_init(&s->codec, s->o.compression.op, dt_run_dim(run), s->o.compression.ratio, s->o.compression.levels));
  /* every estimate 0; V = the first local gradient */
  s->node_streams = !dt_run_faulty(run);
  DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->v, NULL));
  DT_TRY(dt_slab_copy(dt_run_backend(run), &s->v, &s->gprev));
  s->half = dt_compression_msg_len(&s->o.compression, dt_run_dim(run));
  DT_TRY(dt_mix_reverse_edges(run, &s->rev, &s->e0));
  const int rows = s->node_streams ? dt_run_count(run) : dt_run_local_edges(run);
  DT_TRY(dt_slab_create(dt_run_backend(run), rows, dt_run_dim(run), &s->hout));
  DT_TRY(dt_slab_create(dt_run_backend(run), rows, dt_run_dim(run), &s->gout));
  if (s->node_streams) {
    DT_TRY(dt_run_keep_slab(run, "h_own", &s->hout));
    DT_TRY(dt_run_keep_slab(run, "g_own", &s->gout));
  } else {
    DT_TRY(dt_run_keep_edge_slab(run, "h_out", &s->hout));
    DT_TRY(dt_run_keep_edge_slab(run, "g_out", &s->gout));
  }
  DT_TRY(dt_run_exchange_edges(run, 2 * s->half, &ex)); /* one message per directed edge: both */
  if (dt_run_tracing(run) && s->node_streams) DT_ALLOC(s->qtrace, dt_run_dim(run) + s->half + 1, "beer trace");
  return DT_OK;
}

/* The codec's stream of node `from`'s message `vec` in round k. */
static uint64_t msg_id(int from, int k, int vec) { return (uint64_t)(uint32_t)from << 32 | (uint32_t)(2 * k + vec); }

/* ---- the estimates, one per directed edge ------------------------------------------------- */

/* Whether node i mixes with the neighbour of its out-edge e this round: an offline neighbour's
 * edge rests at both ends (its state is put back after the round). */
static int edge_live(const dt_optimizer_run *run, int e) { return dt_run_online(run, dt_run_graph(run)->nbr[e]); }

/* Node l's estimate as the neighbour of its out-edge e knows it: the node's one row without
 * faults, the edge's under them. */
static float *out_row(const beer_state *s, const dt_slab *out, int l, int e) {
  return dt_slab_node(out, s->node_streams ? l : e - s->e0);
}

/* acc = Σ_j (W_ij est_{j→i} − W_ji est_{i→j}) over i's live edges, in neighbour order: the
 * per-edge form of Σ_j W_ij est_j − est_i, whose sum over all nodes is 0 whatever arrived. */
static dt_status edge_mix(beer_state *s, int l, const dt_slab *out, const dt_slab *in, float *acc) {
  dt_optimizer_run *run = s->run;
  const dt_graph *g = dt_run_graph(run);
  const int i = dt_run_first(run) + l, deg = dt_graph_degree(g, i);
  const float *x[2 * deg + 1];
  float w[2 * deg + 1];
  int terms = 0;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    if (!edge_live(run, e)) continue;
    x[terms] = dt_slab_node(in, e - s->e0), w[terms++] = (float)dt_run_this_round(run)->w_nbr[e];
    x[terms] = out_row(s, out, l, e), w[terms++] = -(float)dt_run_this_round(run)->w_nbr[s->rev[e - s->e0]];
  }
  dt_backend *be = dt_run_backend(run);
  return terms > 0 ? dt_be_mix(be, dt_run_dim(run), terms, x, w, acc) : dt_be_fill(be, dt_run_dim(run), 0.0f, acc);
}

/* The codec's stream of out-edge e's message vec from node i in round k: the node's own without
 * faults (one message to every neighbour, as in the paper), the edge's under faults (its estimates
 * differ from the node's other edges'). */
static uint64_t edge_msg_id(const beer_state *s, int i, int e, int vec) { return msg_id(s->node_streams ? i : e, s->k, vec); }

/* For each of i's live out-edges: C(src_i − est_{i→j}) into half `vec` of that edge's message.
 * Without faults every out-edge's estimate is bitwise the node's (the same start, the same
 * messages), so the first edge's message is encoded and copied to the others. */
static dt_status edge_encode(beer_state *s, int l, const float *src, const dt_slab *out, int vec) {
  dt_optimizer_run *run = s->run;
  const dt_graph *g = dt_run_graph(run);
  const int i = dt_run_first(run) + l;
  float *tmp = dt_slab_node(&s->diff, l), *first = NULL;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    if (!edge_live(run, e)) continue;
    float *msg = dt_exchange_edge_buffer(dt_run_the_exchange(run), i, e - g->nbr_start[i]) + (size_t)vec * s->half;
    if (first != NULL && s->node_streams) {
      DT_TRY(dt_be_copy(dt_run_backend(run), s->half, first, msg));
      continue;
    }
    DT_TRY(dt_be_axpby(dt_run_backend(run), dt_run_dim(run), 1.0f, src, -1.0f, out_row(s, out, l, e), tmp));
    DT_TRY(dt_be_encode(dt_run_backend(run), &s->codec, tmp, dt_run_seed(run), edge_msg_id(s, i, e, vec), msg));
    /* --dump-trace: the node's message as decoded (QMSH: the model's, QMSV: the tracker's) */
    if (first == NULL && s->qtrace != NULL)
      DT_TRY(dt_compression_trace(run, &s->codec, l, vec == 0 ? "QMSH" : "QMSV", msg, edge_msg_id(s, i, e, vec), s->qtrace));
    first = msg;
  }
  return DT_OK;
}

/* x ← x + γ mix_h − η v;  q^h on every edge. */
static dt_status edge_model(void *p, int l) {
  beer_state *s = p;
  dt_optimizer_run *run = s->run;
  float *x = dt_slab_node(dt_run_theta(run), l), *acc = dt_slab_node(&s->grad, l);
  DT_TRY(edge_mix(s, l, &s->hout, &s->hin, acc));
  DT_TRY(dt_be_axpy(dt_run_backend(run), dt_run_dim(run), s->gamma, acc, x));
  DT_TRY(dt_be_axpy(dt_run_backend(run), dt_run_dim(run), -s->eta, dt_slab_node(&s->v, l), x));
  return edge_encode(s, l, x, &s->hout, 0);
}

/* v ← v + γ mix_g + g⁺ − g⁻ (g⁺ in diff's row);  q^g on every edge. */
static dt_status edge_tracker(void *p, int l) {
  beer_state *s = p;
  dt_optimizer_run *run = s->run;
  dt_backend *be = dt_run_backend(run);
  const size_t d = dt_run_dim(run);
  float *v = dt_slab_node(&s->v, l), *gnew = dt_slab_node(&s->diff, l), *gprev = dt_slab_node(&s->gprev, l);
  float *acc = dt_slab_node(&s->grad, l);
  /* g⁺ − g⁻ first: it tends to 0, where v + g⁺ would round by ε|∇f_i(x*)|, which heterogeneous
   * data keep away from 0, into the trackers' sum every round (issue 61) */
  DT_TRY(dt_be_axpy(be, d, -1.0f, gnew, gprev));
  DT_TRY(dt_be_axpy(be, d, -1.0f, gprev, v));
  DT_TRY(dt_be_copy(be, d, gnew, gprev));
  DT_TRY(edge_mix(s, l, &s->gout, &s->gin, acc));
  DT_TRY(dt_be_axpy(be, d, s->gamma, acc, v));
  return edge_encode(s, l, v, &s->gout, 1);
}

/* In neighbour order, for a live edge: est_{j→i} += q_{j→i} when j's message arrived,
 * est_{i→j} += q_{i→j} when i's did (the sender learns of a loss, as from an acknowledgement).
 * Without faults every message arrives and i's are one: its estimate moves once. */
static dt_status edge_update(void *p, int l) {
  beer_state *s = p;
  dt_optimizer_run *run = s->run;
  dt_backend *be = dt_run_backend(run);
  const dt_graph *g = dt_run_graph(run);
  const int i = dt_run_first(run) + l;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    const int r = s->rev[e - s->e0], j = g->nbr[e];
    if (!edge_live(run, e)) continue;
    if (dt_run_delivered(run, dt_run_this_round(run)->mask, r)) {
      const float *q = dt_exchange_recv(dt_run_the_exchange(run), i, j, 0);
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q, dt_run_seed(run), edge_msg_id(s, j, r, 0), 1.0f, dt_slab_node(&s->hin, e - s->e0)));
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q + s->half, dt_run_seed(run), edge_msg_id(s, j, r, 1), 1.0f,
                               dt_slab_node(&s->gin, e - s->e0)));
    }
    if (dt_run_delivered(run, dt_run_this_round(run)->mask, e) && (!s->node_streams || e == g->nbr_start[i])) {
      const float *q = dt_exchange_edge_buffer(dt_run_the_exchange(run), i, e - g->nbr_start[i]);
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q, dt_run_seed(run), edge_msg_id(s, i, e, 0), 1.0f, out_row(s, &s->hout, l, e)));
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q + s->half, dt_run_seed(run), edge_msg_id(s, i, e, 1), 1.0f, out_row(s, &s->gout, l, e)));
    }
  }
  return DT_OK;
}

/* Nodes in parallel, or in order when tracing (the trace's scratch is shared). */
static dt_status for_nodes(beer_state *s, dt_status (*fn)(void *, int)) {
  if (s->qtrace == NULL) return dt_run_for_nodes(s->run, fn, s);
  for (int l = 0; l < dt_run_count(s->run); l++) DT_TRY(fn(s, l));
  return DT_OK;
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  beer_state *s = p;
  s->k = k;
  s->eta = (float)dt_run_rate(run, &s->o.schedule, s->o.alpha, 0, k, 1);
  s->gamma = (float)s->o.gamma;
  DT_TRY(for_nodes(s, edge_model));                          /* x ← x + γ mix_h − η v;  q^h */
  DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->diff, NULL)); /* g⁺ */
  DT_TRY(for_nodes(s, edge_tracker));                        /* v ← v + γ mix_g + g⁺ − g⁻;  q^g */
  DT_TRY(dt_run_exchange_go_sized(run, NULL, s->half * sizeof(float) + s->codec.bytes));
  return dt_run_for_nodes(run, edge_update, s); /* both ends move their copies */
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  const dt_beer_opts *o = opts;
  dt_codec c;
  if (dt_codec_init(&c, o->compression.op, dim, o->compression.ratio, o->compression.levels) != DT_OK) return 0;
  /* one message to every neighbour: both compressed vectors, the first padded to whole floats */
  const double half = (double)(dt_compression_msg_len(&o->compression, dim) * sizeof(float));
  return 2.0 * g->num_edges * (half + (double)c.bytes);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_beer_opts *o = opts;
  return dt_local_step_check(&o->schedule, 0, DT_LOCAL_SGD, NULL, rounds, err, err_size);
}

/* Per out-edge: the edge's message (two of msg_len floats); per node: h_own and g_own (without
 * faults; under them h_out and g_out are two more per out-edge, which the options alone do not
 * show). */
static dt_state_size state_extra(const void *opts, size_t dim) {
  const dt_beer_opts *o = opts;
  return (dt_state_size){.per_node = 2, .per_edge = 2.0 * (double)dt_compression_msg_len(&o->compression, dim) / (double)dim};
}

const dt_optimizer_def dt_optimizer_beer = {
    .plugin =
        {
            .name = "beer",
            .summary = "BEER: gradient tracking with compressed messages (top_k, random_k, sign, qsgd)",
            .keys = keys,
            .opts_size = sizeof(dt_beer_opts),
            .finalize = finalize,
        },
    DT_STATE(beer_state, o, run),
    .slots = slots,
    .create = create,
    .destroy = destroy,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .traffic_per_edge = 1,
    .on_missing = DT_MISSING_SKIP, /* per-edge estimates (edge_update) */
    .state_extra = state_extra,
};
