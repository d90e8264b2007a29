/* Downpour SGD (Dean et al., NeurIPS 2012) in mpi_learn's form: workers take sync_every steps of
 * their own optimizer, push the accumulated update Δ = (fetched − current parameters) to a
 * parameter server, which applies each push as one step of its own optimizer, and fetch the
 * server's parameters. Asynchrony is modelled by a deterministic staleness: the push node i sends
 * in round k is applied in round k + d, d drawn from the stream (seed, staleness, (i, k)) in
 * [0, max_staleness]. The server lives on rank 0 (with node 0); each node keeps its pushes in
 * flight in an outbox of max_staleness + 1 slots, so the state is per node and checkpoints are
 * placement-independent. Update equations: README.md here. */
#include <stdio.h>
#include <string.h>

#include "../async.h"
#include "../local_step.h"
#include "../options_impl.h"
#include "dt/optimizer.h"
#include "dt/rng.h"

enum { MAX_STALENESS = 64 };

/* The options this plug-in's key table fills (its own: nothing outside this folder sees it). */
typedef struct dt_downpour_opts {
  int sync_every;       /* worker steps between a push and a fetch: one round */
  int worker_optimizer; /* dt_local_opt_kind */
  double worker_lr;
  int optimizer;        /* the server's */
  double lr, mu;        /* the server's rate and its decay */
  int max_staleness;    /* a push is applied 0..max_staleness rounds after it is sent */
  bool asynchronous;    /* on the simulated clock: the staleness it produces */
} dt_downpour_opts;

static const dt_key keys[] = {
    {.name = "sync_every", .type = DT_KEY_INT, .offset = offsetof(dt_downpour_opts, sync_every), .def = "1", .min = 1, .max = 1e6,
     .help = "worker steps per round, between a fetch and a push"},
    {.name = "worker_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_downpour_opts, worker_optimizer), .def = "sgd",
     .values = dt_local_opt_names, .help = "the workers' local optimizer"},
    {.name = "worker_lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_downpour_opts, worker_lr), .def = "1.0", .min = 0, .max = DT_INF,
     .help = "the workers' rate (sgd at 1.0: a push is the sum of the round's gradients, as in mpi_learn)"},
    {.name = "optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_downpour_opts, optimizer), .def = "sgd", .values = dt_local_opt_names,
     .help = "the server's optimizer, applied to each push as a gradient"},
    {.name = "lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_downpour_opts, lr), .def = "0.01", .min = 0, .max = DT_INF,
     .help = "the server's learning rate"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_downpour_opts, mu), .def = "0.0", .min = 0, .max = DT_INF,
     .help = "server rate decay: round k uses lr_k = lr / (1 + mu k)"},
    {.name = "max_staleness", .applies = "asynchronous=false", .type = DT_KEY_INT, .offset = offsetof(dt_downpour_opts, max_staleness), .def = "0", .min = 0,
     .max = MAX_STALENESS, .help = "a push waits 0..max_staleness rounds before the server applies it (0: synchronous)"},
    {.name = "asynchronous", .type = DT_KEY_BOOL, .offset = offsetof(dt_downpour_opts, asynchronous), .def = "false",
     .help = "true: the workers run on the simulated clock (experiment.network), and a push meets the staleness the clock produces"},
    {0},
};

typedef struct downpour_state {
  dt_downpour_opts o;
  dt_optimizer_run *run;
  dt_learners workers;
  dt_local_opt *server_opt; /* one node's worth: the server's optimizer state */
  float *server;            /* the server's parameters (rank 0's is the truth; fetched by all) */
  float *push;              /* one push staged in backend memory (rank 0) */
  float *host;              /* dim floats: the broadcast of the server's parameters */
  dt_slab *outbox;          /* [max_staleness + 1] slabs of the local nodes' pushes in flight */
  uint8_t *arrives;         /* [n]: whose push of a given round arrives now */
  uint8_t *reached;         /* faults: [(max_staleness + 1) n] whether node i's push of round k
                               reached the server (slot k mod (max_staleness + 1)), else NULL */
  float lr;                 /* the server's rate this round */
  int nslots;
  /* asynchronous: the engine, each worker's last fetched parameters (kept) and steps since (every
   * rank: the schedule's) */
  dt_async *async;
  dt_slab fetched;
  int *steps;
} downpour_state;

/* The outboxes (max_staleness + 1 of them), the server and the asynchronous engine are create's. */
static const dt_state_slot slots[] = {
    {.name = "worker", .kind = DT_SLOT_LEARNERS, .offset = offsetof(downpour_state, workers),
     .from = DT_LEARNER_FROM(dt_downpour_opts, worker_optimizer, worker_lr)},
    {.name = "push", .kind = DT_SLOT_SHARED, .offset = offsetof(downpour_state, push), .scratch = 1},
    {0},
};

static void destroy(dt_optimizer_run *run, void *state) {
  downpour_state *s = state;
  dt_backend *be = dt_run_backend(run);
  dt_async_free(s->async);
  dt_slab_free(be, &s->fetched);
  dt_free(s->steps);
  dt_local_opt_free(s->server_opt);
  dt_be_free(be, s->server);
  for (int q = 0; s->outbox != NULL && q < s->nslots; q++) dt_slab_free(be, &s->outbox[q]);
  dt_free(s->outbox);
  dt_free(s->host);
  dt_free(s->arrives);
  dt_free(s->reached);
}

/* The round node i's push of round k is applied in: k + d, d uniform in [0, max_staleness]. */
static int delay(const downpour_state *s, int i, int k) {
  if (s->o.max_staleness == 0) return 0;
  dt_rng r;
  dt_rng_init(&r, dt_run_seed(s->run), DT_RNG_STALENESS, ((uint64_t)(uint32_t)i << 32) | (uint32_t)k);
  return (int)dt_rng_below(&r, (uint32_t)s->o.max_staleness + 1);
}

/* ---- asynchronous: on the simulated clock --------------------------------------------------- */

static dt_status async_start(void *ctx, dt_async *a, int l) {
  downpour_state *s = ctx;
  return dt_async_gradient(a, l, dt_run_theta(s->run), &s->workers.grad);
}

/* A worker step (the gradient taken when it began); after sync_every of them, Δ = fetched −
 * current is pushed and the worker waits for the server's parameters. */
static dt_status async_end(void *ctx, dt_async *a, int node, int l) {
  downpour_state *s = ctx;
  dt_optimizer_run *run = s->run;
  float *x = l >= 0 ? dt_slab_node(dt_run_theta(run), l) : NULL;
  if (l >= 0) DT_TRY(dt_local_opt_step(s->workers.opt, l, x, dt_slab_node(&s->workers.grad, l), (float)s->o.worker_lr, NULL));
  if (++s->steps[node] < s->o.sync_every) return DT_OK;
  s->steps[node] = 0;
  float *push;
  DT_TRY(dt_async_push(a, node, &push));
  return push != NULL ? dt_be_axpby(dt_run_backend(run), dt_run_dim(run), 1.0f, dt_slab_node(&s->fetched, l), -1.0f, x, push) : DT_OK;
}

/* The server, as each push reaches it: one step of its optimizer, then its parameters back. */
static dt_status async_centre(void *ctx, dt_async *a, int from, const float *push, float *reply) {
  downpour_state *s = ctx;
  dt_backend *be = dt_run_backend(s->run);
  (void)from;
  DT_TRY(dt_local_opt_step(s->server_opt, 0, s->server, push, (float)dt_rate_at(s->o.lr, s->o.mu, dt_async_now_round(a)), NULL));
  return dt_be_copy(be, dt_run_dim(s->run), s->server, reply);
}

/* The worker takes the server's parameters; without them (its push or the reply lost) it goes
 * back to those it fetched last. */
static dt_status async_reply(void *ctx, dt_async *a, int node, int l, const float *reply, int delivered) {
  downpour_state *s = ctx;
  dt_backend *be = dt_run_backend(s->run);
  (void)a, (void)node;
  if (l < 0) return DT_OK;
  float *x = dt_slab_node(dt_run_theta(s->run), l), *last = dt_slab_node(&s->fetched, l);
  if (delivered) DT_TRY(dt_be_copy(be, dt_run_dim(s->run), reply, last));
  return dt_be_copy(be, dt_run_dim(s->run), last, x);
}

static dt_status async_create(downpour_state *s) {
  dt_optimizer_run *run = s->run;
  DT_TRY(dt_slab_create(dt_run_backend(run), dt_run_count(run), dt_run_dim(run), &s->fetched));
  DT_TRY(dt_slab_copy(dt_run_backend(run), dt_run_theta(run), &s->fetched));
  DT_TRY(dt_run_keep_slab(run, "fetched", &s->fetched));
  DT_TRY(dt_run_keep_slab(run, "grad", &s->workers.grad)); /* a step's gradient, taken when it began */
  DT_ALLOC(s->steps, (size_t)dt_run_graph(run)->n + 1, "downpour");
  const dt_async_def def = {.centre_len = dt_run_dim(run), .step_start = async_start, .step_end = async_end, .centre = async_centre,
                            .centre_reply = async_reply};
  return dt_async_create(run, &def, s, &s->async);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  downpour_state *s = state;
  (void)opts;
  dt_backend *be = dt_run_backend(run);
  char name[32];
  s->nslots = s->o.max_staleness + 1;
  DT_ALLOC(s->host, dt_run_dim(run), "downpour");
  DT_ALLOC(s->arrives, dt_run_graph(run)->n, "downpour");
  DT_ALLOC(s->outbox, s->nslots, "downpour");
  for (int q = 0; q < s->nslots; q++) {
    DT_TRY(dt_slab_create(be, dt_run_count(run), dt_run_dim(run), &s->outbox[q]));
    snprintf(name, sizeof name, "outbox%d", q);
    DT_TRY(dt_run_keep_slab(run, name, &s->outbox[q]));
  }
  /* the server starts where the workers do; its state lives on rank 0, and a checkpoint keeps
   * rank 0's */
  const dt_local_opt_spec spec = dt_local_step_spec(s->o.optimizer, s->o.lr, NULL);
  DT_TRY(dt_run_server_create(run, "server", &spec, &s->server, &s->server_opt));
  DT_TRY(dt_run_centre_faults(run));
  if (s->o.asynchronous) return async_create(s);
  if (dt_run_faulty(run)) { /* every rank knows every push's fate: the draws are replicated */
    const size_t n = (size_t)s->nslots * (size_t)dt_run_graph(run)->n;
    DT_ALLOC(s->reached, n, "downpour");
    DT_TRY(dt_run_keep_shared(run, "pushes_reached", s->reached, n));
  }
  return DT_OK;
}

/* Rank 0: one push applied as one step of the server's optimizer. */
static dt_status apply_push(void *ctx, int node, const float *x) {
  downpour_state *s = ctx;
  dt_backend *be = dt_run_backend(s->run);
  (void)node;
  DT_TRY(dt_be_upload(be, s->push, x, sizeof(float) * dt_run_dim(s->run)));
  return dt_local_opt_step(s->server_opt, 0, s->server, s->push, s->lr, NULL);
}

/* Rank 0, after a push failed to apply: the round's remaining transfers, ignored. */
static dt_status drop_push(void *ctx, int node, const float *x) {
  (void)ctx, (void)node, (void)x;
  return DT_OK;
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  downpour_state *s = p;
  dt_backend *be = dt_run_backend(run);
  if (s->async != NULL) return dt_async_round(s->async, k);
  const dt_graph *g = dt_run_graph(run);
  const int S = s->o.max_staleness;
  s->lr = (float)dt_rate_at(s->o.lr, s->o.mu, k);
  /* 1. Workers: sync_every steps from the fetched parameters, then Δ_i = fetched − current into
   *    the outbox slot of round k (θ_i is the fetched server model at the round's start). */
  dt_slab *slot = &s->outbox[k % s->nslots];
  DT_TRY(dt_slab_copy(be, dt_run_theta(run), slot));
  for (int t = 0; t < s->o.sync_every; t++) DT_TRY(dt_learners_step(run, &s->workers, (float)s->o.worker_lr, NULL));
  DT_TRY(dt_slab_axpby(be, 1.0f, slot, -1.0f, dt_run_theta(run), slot));
  if (s->reached == NULL) {
    dt_run_count_to_centre(run); /* the pushes */
  } else { /* under faults: sent by the online nodes, some lost; the fate is known when sent */
    const uint8_t *got = dt_run_centre_send(run, 0, NULL, sizeof(float) * dt_run_dim(run));
    memcpy(s->reached + (size_t)(k % s->nslots) * g->n, got, (size_t)g->n);
  }
  for (int l = 0; l < dt_run_count(run); l++) { /* --dump-trace: the round each push reaches the server */
    const int32_t d = delay(s, dt_run_first(run) + l, k);
    DT_TRY(dt_run_trace_i32(run, l, "DLAY", &d, 1));
  }
  /* 2. The server applies what arrives in round k: the pushes of round k − a with delay a,
   *    oldest round first, in node order within a round. */
  dt_status st = DT_OK;
  for (int a = S; a >= 0; a--) {
    const int sent = k - a;
    if (sent < 0) continue;
    int any = 0;
    const uint8_t *reached = s->reached != NULL ? s->reached + (size_t)(sent % s->nslots) * g->n : NULL;
    for (int i = 0; i < g->n; i++) any |= s->arrives[i] = delay(s, i, sent) == a && (reached == NULL || reached[i]);
    if (!any) continue;
    /* every rank streams every arriving round, also after rank 0 failed (only it knows) */
    const dt_status pushed = dt_run_to_centre(run, &s->outbox[sent % s->nslots], s->arrives,
                                              st == DT_OK ? apply_push : drop_push, s);
    if (st == DT_OK) st = pushed;
  }
  /* 3. Every worker fetches the server's parameters. */
  if (st == DT_OK) st = dt_be_download(be, s->host, s->server, sizeof(float) * dt_run_dim(run));
  DT_TRY(dt_run_from_centre(run, st, s->host));
  DT_TRY(dt_be_upload(be, s->server, s->host, sizeof(float) * dt_run_dim(run)));
  const uint8_t *fetched = dt_run_centre_replies(run);
  if (fetched == NULL) return dt_slab_broadcast_host(be, s->host, dt_run_theta(run));
  /* a worker whose fetch did not arrive goes back to the parameters it fetched last: θ + Δ (its
   * own are the accumulator of the round's steps, at the workers' rate) */
  for (int l = 0; l < dt_run_count(run); l++) {
    if (fetched[dt_run_first(run) + l])
      DT_TRY(dt_slab_upload_node(be, dt_run_theta(run), l, s->host));
    else
      DT_TRY(dt_be_axpy(be, dt_run_dim(run), 1.0f, dt_slab_node(slot, l), dt_slab_node(dt_run_theta(run), l)));
  }
  return DT_OK;
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  const dt_downpour_opts *o = opts;
  /* N pushes, N fetches; asynchronous: a round is one step's time, a push every sync_every */
  return 2.0 * g->n * (double)dim * sizeof(float) / (o->asynchronous ? o->sync_every : 1);
}

/* Per node: max_staleness + 1 outboxes (asynchronous: also the fetched parameters and the engine's
 * push and reply rows); per rank: server, the server optimizer's moments (one row) and the run's
 * sum (dim doubles) (asynchronous: the centre's rank's push and reply buffers, counted on every
 * rank). */
static dt_state_size state_extra(const void *opts, size_t dim) {
  const dt_downpour_opts *o = opts;
  (void)dim;
  return (dt_state_size){.per_node = (o->max_staleness + 1) + (o->asynchronous ? 3 : 0),
                         .per_rank = 3 + dt_local_opt_state_vectors((dt_local_opt_kind)o->optimizer, 0.0f) + (o->asynchronous ? 2 : 0)};
}

static int asynchronous(const void *opts) { return ((const dt_downpour_opts *)opts)->asynchronous; }

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_downpour_opts *o = opts;
  (void)rounds;
  if (o->asynchronous && o->max_staleness > 0) {
    snprintf(err, err_size, "max_staleness is the rounds' fixed staleness; with asynchronous: true the clock produces it");
    return 0;
  }
  return 1;
}

const dt_optimizer_def dt_optimizer_downpour = {
    .plugin =
        {
            .name = "downpour",
            .summary = "Downpour SGD: workers push accumulated updates to a parameter server, stale by rounds or by the simulated clock",
            .keys = keys,
            .opts_size = sizeof(dt_downpour_opts),
            .finalize = finalize,
        },
    DT_STATE(downpour_state, o, run),
    .slots = slots,
    .create = create,
    .destroy = destroy,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .runs_on = DT_RUNS_DIRECTED, /* the graph carries none of its messages */
    .graph_unused = "each node pushes to and pulls from a server with node 0",
    .on_missing = DT_MISSING_SKIP, /* a lost push is never applied; after a lost fetch the worker goes on from its last */
    .asynchronous = asynchronous,
    .state_extra = state_extra,
};
