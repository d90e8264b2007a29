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
  /* per-edge estimates, one row per local out-edge e = (i, t-th neighbour j): h_{i→j} (i's as j
   * knows it), h_{j→i}; g alike. The edge's one message carries q^h at float 0 and q^g at float
   * half. */
  size_t half;                  /* the first message's length in floats (codec.bytes rounded up) */
  dt_slab hout, hin, gout, gin;
  int *rev;                     /* [local out-edges]: the index of the reverse edge j→i */
  int e0;                       /* the first local out-edge, g->nbr_start[first] */
  int node_streams;             /* no faults: a node's messages are one, drawn from its stream */
  float eta, gamma;             /* the round's step sizes (for the per-node callbacks) */
} beer_state;

static void destroy(void *p) {
  beer_state *s = p;
  if (s == NULL) return;
  dt_slab *slabs[] = {&s->v, &s->gprev, &s->grad, &s->diff, &s->hout, &s->hin, &s->gout, &s->gin};
  for (size_t t = 0; t < sizeof slabs / sizeof *slabs; t++) dt_slab_free(s->run->be, slabs[t]);
  dt_free(s->rev);
  dt_free(s->qtrace);
  dt_free(s);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void **out) {
  dt_status st = DT_OK;
  beer_state *s = NULL;
  dt_exchange *ex;
  DT_ALLOC_GOTO(s, 1, "beer");
  s->run = run;
  s->o = *(const dt_beer_opts *)opts;
  DT_TRY_GOTO(dt_codec_init(&s->codec, s->o.compression.op, run->dim, s->o.compression.ratio, s->o.compression.levels));
  /* every estimate 0; V = the first local gradient */
  s->node_streams = run->faults == NULL;
  dt_slab *slabs[] = {&s->v, &s->gprev, &s->grad, &s->diff};
  for (size_t t = 0; t < sizeof slabs / sizeof *slabs; t++) DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, slabs[t]));
  DT_TRY_GOTO(dt_run_gradients(run, &run->theta, &s->v, NULL));
  DT_TRY_GOTO(dt_slab_copy(run->be, &s->v, &s->gprev));
  DT_TRY_GOTO(dt_run_keep_slab(run, "tracker", &s->v));
  DT_TRY_GOTO(dt_run_keep_slab(run, "last_gradient", &s->gprev));
  s->half = dt_compression_msg_len(&s->o.compression, run->dim);
  DT_TRY_GOTO(dt_mix_reverse_edges(run, &s->rev, &s->e0));
  const int edges = run->graph->nbr_start[run->first + run->count] - s->e0;
  dt_slab *est[] = {&s->hout, &s->hin, &s->gout, &s->gin};
  const char *const names[] = {"h_out", "h_in", "g_out", "g_in"};
  for (size_t t = 0; t < 4; t++) {
    DT_TRY_GOTO(dt_slab_create(run->be, edges > 0 ? edges : 1, run->dim, est[t]));
    DT_TRY_GOTO(dt_run_keep_edge_slab(run, names[t], est[t]));
  }
  DT_TRY_GOTO(dt_run_exchange_edges(run, 2 * s->half, &ex)); /* one message per directed edge: both */
  if (run->trace != NULL && s->node_streams) DT_ALLOC_GOTO(s->qtrace, run->dim + s->half + 1, "beer trace");
  *out = s;
  s = NULL;
cleanup:
  destroy(s);
  return st;
}

/* The codec's stream of node `from`'s message `vec` in round k. */
static uint64_t msg_id(int from, int k, int vec) { return (uint64_t)(uint32_t)from << 32 | (uint32_t)(2 * k + vec); }

/* ---- the estimates, one per directed edge ------------------------------------------------- */

/* Whether node i mixes with the neighbour of its out-edge e this round: an offline neighbour's
 * edge rests at both ends (its state is put back after the round). */
static int edge_live(const dt_optimizer_run *run, int e) { return run->online == NULL || run->online[run->graph->nbr[e]]; }

/* acc = Σ_j (W_ij est_{j→i} − W_ji est_{i→j}) over i's live edges, in neighbour order: the
 * per-edge form of Σ_j W_ij est_j − est_i, whose sum over all nodes is 0 whatever arrived. */
static dt_status edge_mix(beer_state *s, int l, const dt_slab *out, const dt_slab *in, float *acc) {
  dt_optimizer_run *run = s->run;
  const dt_graph *g = run->graph;
  const int i = run->first + l, deg = dt_graph_degree(g, i);
  const float *x[2 * deg + 1];
  float w[2 * deg + 1];
  int terms = 0;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    if (!edge_live(run, e)) continue;
    x[terms] = dt_slab_node(in, e - s->e0), w[terms++] = (float)run->round.w_nbr[e];
    x[terms] = dt_slab_node(out, e - s->e0), w[terms++] = -(float)run->round.w_nbr[s->rev[e - s->e0]];
  }
  return terms > 0 ? dt_be_mix(run->be, run->dim, terms, x, w, acc) : dt_be_fill(run->be, run->dim, 0.0f, acc);
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
  const dt_graph *g = run->graph;
  const int i = run->first + l;
  float *tmp = dt_slab_node(&s->diff, l), *first = NULL;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    if (!edge_live(run, e)) continue;
    float *msg = dt_exchange_edge_buffer(run->exchange, i, e - g->nbr_start[i]) + (size_t)vec * s->half;
    if (first != NULL && s->node_streams) {
      DT_TRY(dt_be_copy(run->be, s->half, first, msg));
      continue;
    }
    DT_TRY(dt_be_axpby(run->be, run->dim, 1.0f, src, -1.0f, dt_slab_node(out, e - s->e0), tmp));
    DT_TRY(dt_be_encode(run->be, &s->codec, tmp, run->seed, edge_msg_id(s, i, e, vec), msg));
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
  float *x = dt_slab_node(&run->theta, l), *acc = dt_slab_node(&s->grad, l);
  DT_TRY(edge_mix(s, l, &s->hout, &s->hin, acc));
  DT_TRY(dt_be_axpy(run->be, run->dim, s->gamma, acc, x));
  DT_TRY(dt_be_axpy(run->be, run->dim, -s->eta, dt_slab_node(&s->v, l), x));
  return edge_encode(s, l, x, &s->hout, 0);
}

/* v ← v + γ mix_g + g⁺ − g⁻ (g⁺ in diff's row);  q^g on every edge. */
static dt_status edge_tracker(void *p, int l) {
  beer_state *s = p;
  dt_optimizer_run *run = s->run;
  dt_backend *be = run->be;
  const size_t d = run->dim;
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
 * est_{i→j} += q_{i→j} when i's did (the sender learns of a loss, as from an acknowledgement). */
static dt_status edge_update(void *p, int l) {
  beer_state *s = p;
  dt_optimizer_run *run = s->run;
  dt_backend *be = run->be;
  const dt_graph *g = run->graph;
  const int i = run->first + l;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    const int r = s->rev[e - s->e0], j = g->nbr[e];
    if (!edge_live(run, e)) continue;
    if (dt_run_delivered(run, run->round.mask, r)) {
      const float *q = dt_exchange_recv(run->exchange, i, j, 0);
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q, run->seed, edge_msg_id(s, j, r, 0), 1.0f, dt_slab_node(&s->hin, e - s->e0)));
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q + s->half, run->seed, edge_msg_id(s, j, r, 1), 1.0f,
                               dt_slab_node(&s->gin, e - s->e0)));
    }
    if (dt_run_delivered(run, run->round.mask, e)) {
      const float *q = dt_exchange_edge_buffer(run->exchange, i, e - g->nbr_start[i]);
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q, run->seed, edge_msg_id(s, i, e, 0), 1.0f, dt_slab_node(&s->hout, e - s->e0)));
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q + s->half, run->seed, edge_msg_id(s, i, e, 1), 1.0f,
                               dt_slab_node(&s->gout, e - s->e0)));
    }
  }
  return DT_OK;
}

/* Nodes in parallel, or in order when tracing (the trace's scratch is shared). */
static dt_status for_nodes(beer_state *s, dt_status (*fn)(void *, int)) {
  if (s->qtrace == NULL) return dt_run_for_nodes(s->run, fn, s);
  for (int l = 0; l < s->run->count; l++) DT_TRY(fn(s, l));
  return DT_OK;
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  beer_state *s = p;
  s->k = k;
  s->eta = (float)dt_run_rate(run, &s->o.schedule, s->o.alpha, 0, k, 1);
  s->gamma = (float)s->o.gamma;
  DT_TRY(for_nodes(s, edge_model));                          /* x ← x + γ mix_h − η v;  q^h */
  DT_TRY(dt_run_gradients(run, &run->theta, &s->diff, NULL)); /* g⁺ */
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

/* Per node: v, gprev, grad and diff; per out-edge: the four estimates and the edge's message
 * (two of msg_len floats). */
static dt_state_size state_size(const void *opts, size_t dim) {
  const dt_beer_opts *o = opts;
  return (dt_state_size){.per_node = 4, .per_edge = 4 + 2.0 * (double)dt_compression_msg_len(&o->compression, dim) / (double)dim};
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
    .create = create,
    .round = round_k,
    .destroy = destroy,
    .bytes_per_round = bytes_per_round,
    .traffic_per_edge = 1,
    .on_missing = DT_MISSING_SKIP, /* per-edge estimates (edge_update) */
    .state_size = state_size,
};
