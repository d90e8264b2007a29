/* AD-PSGD (Lian, Zhang, Zhang, Liu, "Asynchronous Decentralized Parallel Stochastic Gradient
 * Descent", ICML 2018) and asynchronous push-sum (Assran, Rabbat, "Asynchronous gradient push",
 * IEEE TAC 2020), on the simulated clock (optimizers/async.h). Update equations: README.md here. */
#include <stdio.h>
#include <string.h>

#include "../async.h"
#include "../local_step.h"
#include "../options_impl.h"
#include "dt/optimizer.h"
#include "dt/rng.h"

static const char *const modes[] = {"pairwise", "push_sum", NULL};
enum { MODE_PAIRWISE = 0, MODE_PUSH_SUM };
enum { MSG_REQUEST = 0, MSG_REPLY = 1, MSG_PUSH = 0 };

typedef struct dt_adpsgd_opts {
  int mode;
  int local_optimizer; /* dt_local_opt_kind */
  double lr, mu;
  dt_sgd_extras x;
  dt_lr_schedule schedule;
} dt_adpsgd_opts;

static const dt_key keys[] = {
    {.name = "mode", .type = DT_KEY_ENUM, .offset = offsetof(dt_adpsgd_opts, mode), .def = "pairwise", .values = modes,
     .help = "pairwise: AD-PSGD, a node that ends a step averages with one random neighbour; push_sum: it sends half of "
             "its push-sum vector and weight to one (asynchronous gradient push)"},
    {.name = "local_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_adpsgd_opts, local_optimizer), .def = "sgd",
     .values = dt_local_opt_names, .help = "sgd, adam, adamw, rmsprop, adadelta or nadam"},
    {.name = "lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_adpsgd_opts, lr), .def = "0.01", .min = 0, .max = DT_INF,
     .help = "initial learning rate"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_adpsgd_opts, mu), .def = "0.0", .min = 0, .max = DT_INF,
     .help = "rate decay: a step in round k uses lr / (1 + mu k); 0 keeps it constant"},
    DT_SGD_EXTRAS_KEYS(dt_adpsgd_opts, x),
    DT_LR_SCHEDULE_KEY(dt_adpsgd_opts, schedule),
    {0},
};

typedef struct adpsgd_state {
  dt_adpsgd_opts o;
  dt_optimizer_run *run;
  dt_async *async;
  dt_learners learners;
  dt_slab x;        /* push_sum: the push-sum vectors (θ = x / w, the de-biased model) */
  float *w;         /* push_sum: [count] push-sum weights (kept) */
  dt_slab sent;     /* push_sum under faults: a row per local out-edge, the (x, w) of the push on its way (kept) */
  uint8_t *busy;    /* pairwise: [N] a request is out (every rank tracks every node: the schedule) */
  uint64_t *picks;  /* [N] neighbour draws so far (the stream's position; the schedule's) */
} adpsgd_state;

static int push_sum(const void *opts) { return ((const dt_adpsgd_opts *)opts)->mode == MODE_PUSH_SUM; }

static const dt_state_slot slots[] = {
    {.name = "local", .kind = DT_SLOT_LEARNERS, .offset = offsetof(adpsgd_state, learners),
     .from = DT_LEARNER_FROM_X(dt_adpsgd_opts, local_optimizer, lr, x), .keep_grad = 1},
    {.name = "x", .kind = DT_SLOT_NODE, .offset = offsetof(adpsgd_state, x), .when = push_sum},
    {.name = "push_weight", .kind = DT_SLOT_HOST, .offset = offsetof(adpsgd_state, w), .elem = sizeof(float), .when = push_sum},
    {0},
};

static void destroy(dt_optimizer_run *run, void *state) {
  adpsgd_state *s = state;
  dt_async_free(s->async);
  dt_slab_free(dt_run_backend(run), &s->sent);
  dt_free(s->busy);
  dt_free(s->picks);
}

/* Node's next random neighbour: the stream (seed, async, node · 2^32 + draw). */
static int pick(adpsgd_state *s, int node) {
  const dt_graph *g = dt_run_graph(s->run);
  dt_rng r;
  dt_rng_init(&r, dt_run_seed(s->run), DT_RNG_ASYNC, ((uint64_t)node << 32) + s->picks[node]++);
  return g->nbr[g->nbr_start[node] + (int)dt_rng_below(&r, (uint32_t)dt_graph_degree(g, node))];
}

static float rate(adpsgd_state *s) {
  return (float)dt_run_rate(s->run, &s->o.schedule, s->o.lr, s->o.mu, dt_async_now_round(s->async), 1);
}

/* ---- pairwise (AD-PSGD) ---------------------------------------------------------------------- */

static dt_status pair_start(void *ctx, dt_async *a, int l) {
  adpsgd_state *s = ctx;
  return dt_async_gradient(a, l, dt_run_theta(s->run), &s->learners.grad);
}

/* The step's gradient (taken at the model as it was when the step began), then, unless a request
 * is out, a request carrying x_i to a random neighbour. */
static dt_status pair_end(void *ctx, dt_async *a, int node, int l) {
  adpsgd_state *s = ctx;
  dt_optimizer_run *run = s->run;
  if (l >= 0)
    DT_TRY(dt_local_opt_step(s->learners.opt, l, dt_slab_node(dt_run_theta(run), l), dt_slab_node(&s->learners.grad, l), rate(s), NULL));
  if (s->busy[node] || dt_graph_degree(dt_run_graph(run), node) == 0) return DT_OK;
  s->busy[node] = 1;
  float *msg;
  DT_TRY(dt_async_send(a, node, pick(s, node), MSG_REQUEST, &msg));
  return msg != NULL ? dt_be_copy(dt_run_backend(run), dt_run_dim(run), dt_slab_node(dt_run_theta(run), l), msg) : DT_OK;
}

/* j receives x_i: x_j and the reply's correction become a = (x_j + x_i)/2 and a − x_i; i adds the
 * correction when it arrives. The pair's sum is kept exactly as an atomic average keeps it. */
static dt_status pair_arrive(void *ctx, dt_async *a, int node, int l, int from, int kind, const float *payload, int delivered) {
  adpsgd_state *s = ctx;
  dt_optimizer_run *run = s->run;
  dt_backend *be = dt_run_backend(run);
  const size_t d = dt_run_dim(run);
  if (kind == MSG_REPLY || !delivered) { /* the exchange is over (or lost: the requester gives up) */
    s->busy[kind == MSG_REPLY ? node : from] = 0;
    return l >= 0 && delivered ? dt_be_axpy(be, d, 1.0f, payload, dt_slab_node(dt_run_theta(run), l)) : DT_OK;
  }
  float *reply;
  DT_TRY(dt_async_send(a, node, from, MSG_REPLY, &reply));
  if (l < 0) return DT_OK;
  float *x = dt_slab_node(dt_run_theta(run), l);
  DT_TRY(dt_be_axpby(be, d, 0.5f, x, 0.5f, payload, x)); /* a, the same float on both ends */
  return reply != NULL ? dt_be_axpby(be, d, 1.0f, x, -1.0f, payload, reply) : DT_OK;
}

/* ---- push_sum (asynchronous gradient push) ---------------------------------------------------- */

/* The row of the out-edge from → to among this rank's out-edges (an edge slab's order). */
static int edge_row(const dt_optimizer_run *run, int from, int to) {
  const dt_graph *g = dt_run_graph(run);
  return g->nbr_start[from] - g->nbr_start[dt_run_first(run)] + dt_graph_nbr_index(g, from, to);
}

/* θ_i is the de-biased model x_i / w_i: what the gradient is taken at and what is evaluated. */
static dt_status push_start(void *ctx, dt_async *a, int l) {
  adpsgd_state *s = ctx;
  return dt_async_gradient(a, l, dt_run_theta(s->run), &s->learners.grad);
}

/* x_i takes the step (its gradient at θ_i), then half of (x_i, w_i) goes to a random neighbour. */
static dt_status push_end(void *ctx, dt_async *a, int node, int l) {
  adpsgd_state *s = ctx;
  dt_optimizer_run *run = s->run;
  dt_backend *be = dt_run_backend(run);
  const size_t d = dt_run_dim(run);
  /* a node pushes to the neighbour it draws unless its last push there is still on its way
   * (one message per edge in flight); then it keeps its mass this time */
  const int to = dt_graph_degree(dt_run_graph(run), node) > 0 ? pick(s, node) : -1;
  const int pushes = to >= 0 && !dt_async_in_flight(a, node, to, MSG_PUSH);
  float *msg = NULL;
  if (pushes) DT_TRY(dt_async_send(a, node, to, MSG_PUSH, &msg));
  if (l < 0) return DT_OK;
  float *x = dt_slab_node(&s->x, l);
  DT_TRY(dt_local_opt_step(s->learners.opt, l, x, dt_slab_node(&s->learners.grad, l), rate(s), NULL));
  if (pushes) {
    DT_TRY(dt_be_scale(be, d, 0.5f, x));
    s->w[l] *= 0.5f;
    if (msg != NULL) {
      DT_TRY(dt_be_copy(be, d, x, msg));
      DT_TRY(dt_be_fill(be, 1, s->w[l], msg + d));
    }
    if (s->sent.data != NULL) { /* under faults: kept until it arrives, to take back if it is lost */
      float *keep = dt_slab_node(&s->sent, edge_row(run, node, to));
      DT_TRY(dt_be_copy(be, d, x, keep));
      DT_TRY(dt_be_fill(be, 1, s->w[l], keep + d));
    }
  }
  return dt_be_div(be, d, x, (double)s->w[l], dt_slab_node(dt_run_theta(run), l));
}

/* A push adds to (x_j, w_j). A lost one (under faults) goes back to its sender when the loss is
 * known, at the time it would have arrived, as a transport's acknowledgement would tell it: the
 * mass stays whole (a lost push's mass otherwise leaves for good, the weights shrink, and x / w
 * blows the steps up). */
static dt_status push_arrive(void *ctx, dt_async *a, int node, int l, int from, int kind, const float *payload, int delivered) {
  adpsgd_state *s = ctx;
  dt_optimizer_run *run = s->run;
  (void)kind;
  if (!delivered) {
    const int li = dt_async_local(a, from);
    if (li < 0 || s->sent.data == NULL) return DT_OK;
    l = li, payload = dt_slab_node(&s->sent, edge_row(run, from, node));
  } else if (l < 0)
    return DT_OK;
  float *x = dt_slab_node(&s->x, l), wj;
  DT_TRY(dt_be_axpy(dt_run_backend(run), dt_run_dim(run), 1.0f, payload, x));
  DT_TRY(dt_be_download(dt_run_backend(run), &wj, payload + dt_run_dim(run), sizeof wj));
  s->w[l] += wj;
  return dt_be_div(dt_run_backend(run), dt_run_dim(run), x, (double)s->w[l], dt_slab_node(dt_run_theta(run), l));
}

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  adpsgd_state *s = state;
  (void)opts;
  const dt_graph *g = dt_run_graph(run);
  DT_ALLOC(s->busy, (size_t)g->n, "adpsgd");
  DT_ALLOC(s->picks, (size_t)g->n, "adpsgd");
  dt_async_def def;
  memset(&def, 0, sizeof def);
  if (s->o.mode == MODE_PAIRWISE) {
    def = (dt_async_def){.kinds = 2, .len = {dt_run_dim(run), dt_run_dim(run)}, .step_start = pair_start, .step_end = pair_end,
                         .arrive = pair_arrive};
  } else {
    def = (dt_async_def){.kinds = 1, .len = {dt_run_dim(run) + 1}, .step_start = push_start, .step_end = push_end, .arrive = push_arrive};
    DT_TRY(dt_slab_copy(dt_run_backend(run), dt_run_theta(run), &s->x)); /* x = θ0, w = 1 */
    for (int l = 0; l < dt_run_count(run); l++) s->w[l] = 1.0f;
    if (dt_run_faulty(run)) {
      const int out_edges = dt_run_local_edges(run);
      DT_TRY(dt_slab_create(dt_run_backend(run), out_edges, dt_run_dim(run) + 1, &s->sent));
      DT_TRY(dt_run_keep_edge_slab(run, "sent", &s->sent));
    }
  }
  return dt_async_create(run, &def, s, &s->async);
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  adpsgd_state *s = p;
  (void)run;
  return dt_async_round(s->async, k);
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  const dt_adpsgd_opts *o = opts;
  /* about one step per node and round: pairwise a request and a reply when none is out, push
   * one message of dim + 1 floats */
  return (double)g->n * (o->mode == MODE_PAIRWISE ? 2.0 * (double)dim : (double)dim + 1.0) * sizeof(float);
}

static double gradient_step(const void *opts) {
  const dt_adpsgd_opts *o = opts;
  return dt_local_step_stable(o->lr, o->local_optimizer, &o->x);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_adpsgd_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, o->local_optimizer, &o->x, rounds, err, err_size);
}

/* Per out-edge: the asynchronous inboxes, two of dim floats (pairwise) or one of dim + 1
 * (push_sum). Not counted: a cross-rank send's scratch vector (made when first needed), and
 * push_sum's copy of each push on its way under faults (dim + 1 per out-edge; the options do not
 * say whether faults are on). */
static dt_state_size state_extra(const void *opts, size_t dim) {
  return (dt_state_size){.per_edge = push_sum(opts) ? ((double)dim + 1) / (double)dim : 2};
}

const dt_optimizer_def dt_optimizer_adpsgd = {
    .plugin =
        {
            .name = "adpsgd",
            .summary = "asynchronous decentralized SGD on the simulated clock: AD-PSGD pairwise averaging or asynchronous push-sum",
            .keys = keys,
            .opts_size = sizeof(dt_adpsgd_opts),
            .finalize = finalize,
        },
    DT_STATE(adpsgd_state, o, run),
    .slots = slots,
    .create = create,
    .destroy = destroy,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .gradient_step = gradient_step,
    .on_missing = DT_MISSING_SKIP,
    .asynchronous = dt_async_always,
    .state_extra = state_extra,
};
