/* BEER (Zhao, Li, Richtárik & Chi, NeurIPS 2022): gradient tracking with compressed messages.
 * Each node keeps public estimates h_i of its model and g_i of its tracker, which its neighbours
 * track alike from the compressed differences it sends; mixing uses the estimates. Static
 * graphs. Under faults the estimates are kept per directed edge, as Choco's are: both ends of an
 * edge move their copy only when its message arrived. Update equations: README.md here; the
 * order is the authors' experiments/BEER.py. */
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
  dt_slab v, gprev;    /* tracker and last gradient */
  dt_slab h, sh;       /* model estimate h_i and s^h_i = Σ_j W_ij h_j */
  dt_slab g, sg;       /* tracker estimate g_i and s^g_i = Σ_j W_ij g_j */
  dt_slab grad, diff;  /* scratch */
  float *qtrace;       /* --dump-trace: a decoded message (and, off the host, its bytes) */
  dt_optimizer_run *run;
  /* faults: per-edge estimates, one row per local out-edge e = (i, t-th neighbour j); the edge's
   * one message carries q^h at float 0 and q^g at float half */
  int per_edge;
  size_t half;               /* the first message's length in floats (codec.bytes rounded up) */
  dt_slab hout, hin, gout, gin; /* h_{i→j} (i's as j knows it), h_{j→i}; g alike */
  int *rev;                  /* [local out-edges]: the index of the reverse edge j→i */
  int e0;                    /* the first local out-edge, g->nbr_start[first] */
  float eta, gamma;          /* the round's step sizes (for the per-node callbacks) */
} beer_state;

static void destroy(void *p) {
  beer_state *s = p;
  if (s == NULL) return;
  dt_slab *slabs[] = {&s->v, &s->gprev, &s->h, &s->sh, &s->g, &s->sg, &s->grad, &s->diff, &s->hout, &s->hin, &s->gout, &s->gin};
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
  /* H = G = 0 (so their mixes are 0); V = the first local gradient */
  s->per_edge = run->faults != NULL;
  dt_slab *slabs[] = {&s->v, &s->gprev, &s->grad, &s->diff};
  for (size_t t = 0; t < sizeof slabs / sizeof *slabs; t++) DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, slabs[t]));
  DT_TRY_GOTO(dt_run_gradients(run, &run->theta, &s->v, NULL));
  DT_TRY_GOTO(dt_slab_copy(run->be, &s->v, &s->gprev));
  DT_TRY_GOTO(dt_run_keep_slab(run, "tracker", &s->v));
  DT_TRY_GOTO(dt_run_keep_slab(run, "last_gradient", &s->gprev));
  const size_t msg_len = (s->codec.bytes + sizeof(float) - 1) / sizeof(float);
  if (s->per_edge) {
    const dt_graph *g = run->graph;
    s->half = msg_len;
    DT_TRY_GOTO(dt_mix_reverse_edges(run, &s->rev, &s->e0));
    const int edges = g->nbr_start[run->first + run->count] - s->e0;
    dt_slab *est[] = {&s->hout, &s->hin, &s->gout, &s->gin};
    const char *const names[] = {"h_out", "h_in", "g_out", "g_in"};
    for (size_t t = 0; t < 4; t++) {
      DT_TRY_GOTO(dt_slab_create(run->be, edges, run->dim, est[t])); /* every estimate starts at 0 */
      DT_TRY_GOTO(dt_run_keep_edge_slab(run, names[t], est[t]));
    }
    DT_TRY_GOTO(dt_run_exchange_edges(run, 2 * msg_len, &ex)); /* one message per directed edge: both */
  } else {
    dt_slab *est[] = {&s->h, &s->sh, &s->g, &s->sg};
    const char *const names[] = {"h", "mix_h", "g", "mix_g"};
    for (size_t t = 0; t < 4; t++) {
      DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, est[t]));
      DT_TRY_GOTO(dt_run_keep_slab(run, names[t], est[t]));
    }
    DT_TRY_GOTO(dt_run_exchange_len(run, 2, msg_len, &ex)); /* vector 0: C(x − h), 1: C(v − g) */
    if (run->trace != NULL) DT_ALLOC_GOTO(s->qtrace, run->dim + msg_len + 1, "beer trace");
  }
  *out = s;
  s = NULL;
cleanup:
  destroy(s);
  return st;
}

/* The codec's stream of node `from`'s message `vec` in round k. */
static uint64_t msg_id(int from, int k, int vec) { return (uint64_t)(uint32_t)from << 32 | (uint32_t)(2 * k + vec); }

/* Encodes node l's message vec from diff's row into its send buffer (serial when tracing, whose
 * scratch is shared). */
static dt_status encode(beer_state *s, int l, int vec) {
  dt_optimizer_run *run = s->run;
  const int i = run->first + l;
  void *msg = dt_exchange_send_buffer(run->exchange, i, vec);
  DT_TRY(dt_be_encode(run->be, &s->codec, dt_slab_node(&s->diff, l), run->seed, msg_id(i, s->k, vec), msg));
  /* --dump-trace: the message as decoded (QMSH: the model's, QMSV: the tracker's) */
  return s->qtrace != NULL ? dt_compression_trace(run, &s->codec, l, vec == 0 ? "QMSH" : "QMSV", msg, msg_id(i, s->k, vec),
                                                  s->qtrace)
                           : DT_OK;
}

static dt_status encode_h(void *p, int l) { return encode(p, l, 0); }
static dt_status encode_g(void *p, int l) { return encode(p, l, 1); }

/* est += its own message; mix += Σ_j W_ij q_j over {i} ∪ N(i) in increasing id. */
static dt_status apply(beer_state *s, int l, int vec, dt_slab *est, dt_slab *mix) {
  dt_optimizer_run *run = s->run;
  const int i = run->first + l;
  const int deg = dt_graph_degree(run->graph, i);
  const float *q[deg + 1];
  float w[deg + 1];
  int who[deg + 1];
  const int terms = dt_mix_terms(run, i, vec, q, w, who);
  DT_TRY(dt_be_decode_axpy(run->be, &s->codec, dt_exchange_send_buffer(run->exchange, i, vec), run->seed,
                           msg_id(i, s->k, vec), 1.0f, dt_slab_node(est, l)));
  for (int t = 0; t < terms; t++)
    DT_TRY(dt_be_decode_axpy(run->be, &s->codec, q[t], run->seed, msg_id(who[t], s->k, vec), w[t], dt_slab_node(mix, l)));
  return DT_OK;
}

static dt_status node_apply(void *p, int l) {
  beer_state *s = p;
  DT_TRY(apply(s, l, 0, &s->h, &s->sh));
  return apply(s, l, 1, &s->g, &s->sg);
}

/* ---- faults: an estimate per directed edge ------------------------------------------------- */

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

/* For each of i's live out-edges: C(src_i − est_{i→j}) into half `vec` of that edge's message. */
static dt_status edge_encode(beer_state *s, int l, const float *src, const dt_slab *out, int vec) {
  dt_optimizer_run *run = s->run;
  const dt_graph *g = run->graph;
  const int i = run->first + l;
  float *tmp = dt_slab_node(&s->diff, l);
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
    if (!edge_live(run, e)) continue;
    DT_TRY(dt_be_axpby(run->be, run->dim, 1.0f, src, -1.0f, dt_slab_node(out, e - s->e0), tmp));
    float *msg = dt_exchange_edge_buffer(run->exchange, i, e - g->nbr_start[i]) + (size_t)vec * s->half;
    DT_TRY(dt_be_encode(run->be, &s->codec, tmp, run->seed, msg_id(e, s->k, vec), msg));
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
  DT_TRY(dt_be_axpy(be, d, 1.0f, gnew, v));
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
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q, run->seed, msg_id(r, s->k, 0), 1.0f, dt_slab_node(&s->hin, e - s->e0)));
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q + s->half, run->seed, msg_id(r, s->k, 1), 1.0f,
                               dt_slab_node(&s->gin, e - s->e0)));
    }
    if (dt_run_delivered(run, run->round.mask, e)) {
      const float *q = dt_exchange_edge_buffer(run->exchange, i, e - g->nbr_start[i]);
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q, run->seed, msg_id(e, s->k, 0), 1.0f, dt_slab_node(&s->hout, e - s->e0)));
      DT_TRY(dt_be_decode_axpy(be, &s->codec, q + s->half, run->seed, msg_id(e, s->k, 1), 1.0f,
                               dt_slab_node(&s->gout, e - s->e0)));
    }
  }
  return DT_OK;
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  beer_state *s = p;
  dt_backend *be = run->be;
  s->k = k;
  const float eta = (float)dt_run_rate(run, &s->o.schedule, s->o.alpha, 0, k, 1), gamma = (float)s->o.gamma;
  if (s->per_edge) {
    s->eta = eta, s->gamma = gamma;
    DT_TRY(dt_run_for_nodes(run, edge_model, s));
    DT_TRY(dt_run_gradients(run, &run->theta, &s->diff, NULL));
    DT_TRY(dt_run_for_nodes(run, edge_tracker, s));
    DT_TRY(dt_run_exchange_go_sized(run, NULL, s->half * sizeof(float) + s->codec.bytes));
    return dt_run_for_nodes(run, edge_update, s);
  }
  /* x ← x + γ (s^h − h) − η v;  q_h = C(x − h) */
  DT_TRY(dt_slab_axpby(be, 1.0f, &s->sh, -1.0f, &s->h, &s->diff));
  DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, gamma, &s->diff, &run->theta));
  DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, -eta, &s->v, &run->theta));
  DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, -1.0f, &s->h, &s->diff));
  if (s->qtrace != NULL) {
    for (int l = 0; l < run->count; l++) DT_TRY(encode_h(s, l));
  } else {
    DT_TRY(dt_run_for_nodes(run, encode_h, s));
  }
  /* g⁺ = ∇f_i(x) on a new minibatch;  v ← v + γ (s^g − g) + g⁺ − g⁻;  q_g = C(v − g) */
  DT_TRY(dt_run_gradients(run, &run->theta, &s->grad, NULL));
  DT_TRY(dt_slab_axpby(be, 1.0f, &s->sg, -1.0f, &s->g, &s->diff));
  DT_TRY(dt_slab_axpby(be, 1.0f, &s->v, gamma, &s->diff, &s->v));
  DT_TRY(dt_slab_axpby(be, 1.0f, &s->v, 1.0f, &s->grad, &s->v));
  DT_TRY(dt_slab_axpby(be, 1.0f, &s->v, -1.0f, &s->gprev, &s->v));
  DT_TRY(dt_slab_copy(be, &s->grad, &s->gprev));
  DT_TRY(dt_slab_axpby(be, 1.0f, &s->v, -1.0f, &s->g, &s->diff));
  if (s->qtrace != NULL) {
    for (int l = 0; l < run->count; l++) DT_TRY(encode_g(s, l));
  } else {
    DT_TRY(dt_run_for_nodes(run, encode_g, s));
  }
  /* both messages in one exchange; h += q_h, s^h += Σ W q_h; g += q_g, s^g += Σ W q_g */
  DT_TRY(dt_run_exchange_go_sized(run, NULL, s->codec.bytes));
  return dt_run_for_nodes(run, node_apply, s);
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  const dt_beer_opts *o = opts;
  dt_codec c;
  if (dt_codec_init(&c, o->compression.op, dim, o->compression.ratio, o->compression.levels) != DT_OK) return 0;
  return 2.0 * 2.0 * g->num_edges * (double)c.bytes; /* two messages to every neighbour */
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_beer_opts *o = opts;
  return dt_local_step_check(&o->schedule, 0, DT_LOCAL_SGD, NULL, rounds, err, err_size);
}

/* Per node: v, gprev, h, sh, g, sg, grad and diff, and the exchange's two send messages (msg_len
 * floats each). Under faults h, sh, g and sg become four estimates and a message per edge, which
 * the options alone do not show. */
static dt_state_size state_size(const void *opts, size_t dim) {
  const dt_beer_opts *o = opts;
  return (dt_state_size){.per_node = 8 + 2.0 * (double)dt_compression_msg_len(&o->compression, dim) / (double)dim};
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
    .on_missing = DT_MISSING_SKIP, /* per-edge estimates under faults (edge_update) */
    .state_size = state_size,
};
