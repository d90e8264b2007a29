/* Elastic Averaging SGD (Zhang, Choromanska, LeCun, NeurIPS 2015), synchronous, with tau local
 * steps per round. The centre variable is replicated on every rank: each rank updates its copy
 * from the same node-ordered mean, so the copies stay bit-identical for any rank count. Keys
 * accept mpi_learn's names beside the paper's. Update equations: README.md here. */
#include <stdio.h>

#include "../async.h"
#include "../local_step.h"
#include "../options_impl.h"
#include "dt/optimizer.h"

/* The options this plug-in's key table fills (its own: nothing outside this folder sees it). */
typedef struct dt_easgd_opts {
  double alpha;         /* the workers' elastic moving rate (mpi_learn: elastic_force) */
  double beta;          /* the centre's moving rate; 0: N·alpha (the paper's β = pα) */
  int tau;              /* local steps per round (mpi_learn: sync_every) */
  int worker_optimizer; /* dt_local_opt_kind */
  double lr, mu;        /* the workers' rate (mpi_learn: elastic_lr) and its decay */
  double momentum;      /* sgd: Nesterov momentum (mpi_learn: elastic_momentum) */
  bool asynchronous;    /* on the simulated clock: the paper's asynchronous EASGD */
} dt_easgd_opts;

static const dt_key keys[] = {
    {.name = "alpha", .type = DT_KEY_FLOAT, .offset = offsetof(dt_easgd_opts, alpha), .def = "0.1", .min = 0, .max = 1,
     .help = "elastic moving rate of the workers: x_i <- x_i - alpha (x_i - centre)"},
    {.name = "elastic_force", .type = DT_KEY_FLOAT, .alias_of = "alpha", .flags = DT_KEY_NO_EMIT, .help = "mpi_learn's name for alpha"},
    {.name = "beta", .type = DT_KEY_FLOAT, .offset = offsetof(dt_easgd_opts, beta), .def = "0", .min = 0, .max = 1,
     .help = "moving rate of the centre: centre <- (1 - beta) centre + beta mean(x); 0 takes min(1, N alpha) (the paper's beta = p alpha)"},
    {.name = "tau", .type = DT_KEY_INT, .offset = offsetof(dt_easgd_opts, tau), .def = "1", .min = 1, .max = 1e6,
     .help = "local steps per round, between elastic updates"},
    {.name = "sync_every", .type = DT_KEY_INT, .alias_of = "tau", .flags = DT_KEY_NO_EMIT, .help = "mpi_learn's name for tau"},
    {.name = "worker_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_easgd_opts, worker_optimizer), .def = "sgd",
     .values = dt_local_opt_names, .help = "the workers' local optimizer: sgd, adam, adamw, rmsprop, adadelta or nadam"},
    {.name = "lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_easgd_opts, lr), .def = "0.01", .min = 0, .max = DT_INF,
     .help = "the workers' learning rate"},
    {.name = "elastic_lr", .type = DT_KEY_FLOAT, .alias_of = "lr", .flags = DT_KEY_NO_EMIT, .help = "mpi_learn's name for lr"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_easgd_opts, mu), .def = "0.0", .min = 0, .max = DT_INF,
     .help = "rate decay: round k uses lr_k = lr / (1 + mu k)"},
    {.name = "momentum", .type = DT_KEY_FLOAT, .offset = offsetof(dt_easgd_opts, momentum), .def = "0.0", .min = 0, .max = 0.999999,
     .help = "sgd workers: Nesterov momentum (0: plain SGD)"},
    {.name = "elastic_momentum", .type = DT_KEY_FLOAT, .alias_of = "momentum", .flags = DT_KEY_NO_EMIT,
     .help = "mpi_learn's name for momentum"},
    {.name = "asynchronous", .type = DT_KEY_BOOL, .offset = offsetof(dt_easgd_opts, asynchronous), .def = "false",
     .help = "true: the paper's asynchronous EASGD on the simulated clock (experiment.network): each worker meets the centre after its own tau steps"},
    {0},
};

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_easgd_opts *o = opts;
  (void)rounds;
  if (o->momentum > 0 && o->worker_optimizer != DT_LOCAL_SGD) {
    snprintf(err, err_size, "momentum (elastic_momentum) is the sgd workers' Nesterov momentum; worker_optimizer is %s",
             dt_local_opt_names[o->worker_optimizer]);
    return 0;
  }
  return 1;
}

typedef struct easgd_state {
  dt_easgd_opts o;
  dt_optimizer_run *run;
  dt_learners learners;
  float *centre; /* x̃, replicated on every rank (backend vector) */
  float *mean;   /* x̄ of this round (backend vector) */
  dt_async *async; /* asynchronous: the engine (the centre is the centre's rank's copy) */
  int *steps;      /* asynchronous: [N] each worker's steps since it last met the centre (the schedule's) */
} easgd_state;

static dt_local_opt_spec worker_spec(const void *opts) {
  const dt_easgd_opts *o = opts;
  dt_local_opt_spec spec = dt_local_step_spec(o->worker_optimizer, o->lr, NULL);
  if (o->momentum > 0) {
    spec.momentum = (float)o->momentum;
    spec.nesterov = 1;
  }
  return spec;
}

static const dt_state_slot slots[] = {
    {.name = "worker", .kind = DT_SLOT_LEARNERS, .offset = offsetof(easgd_state, learners), .spec = worker_spec},
    {.name = "centre", .kind = DT_SLOT_SHARED, .offset = offsetof(easgd_state, centre)},
    {.name = "mean", .kind = DT_SLOT_SHARED, .offset = offsetof(easgd_state, mean), .scratch = 1},
    {0},
};

static void destroy(dt_optimizer_run *run, void *state) {
  easgd_state *s = state;
  (void)run;
  dt_async_free(s->async);
  dt_free(s->steps);
}

/* β, or Nα (the paper's β = pα) capped at 1: beyond it the centre would overshoot the mean */
static double beta_of(const dt_easgd_opts *o, int n) { return o->beta > 0 ? o->beta : n * o->alpha < 1 ? n * o->alpha : 1.0; }

/* ---- asynchronous (the paper's Algorithm 2): on the simulated clock --------------------------- */

static dt_status async_start(void *ctx, dt_async *a, int l) {
  easgd_state *s = ctx;
  return dt_async_gradient(a, l, dt_run_theta(s->run), &s->learners.grad);
}

/* A worker step (the gradient taken when it began); after tau of them, x_i goes to the centre. */
static dt_status async_end(void *ctx, dt_async *a, int node, int l) {
  easgd_state *s = ctx;
  dt_optimizer_run *run = s->run;
  if (l >= 0) {
    const float lr = (float)dt_rate_at(s->o.lr, s->o.mu, dt_async_now_round(a));
    DT_TRY(dt_local_opt_step(s->learners.opt, l, dt_slab_node(dt_run_theta(run), l), dt_slab_node(&s->learners.grad, l), lr, NULL));
  }
  if (++s->steps[node] < s->o.tau) return DT_OK;
  s->steps[node] = 0;
  float *push;
  DT_TRY(dt_async_push(a, node, &push));
  return push != NULL ? dt_be_copy(dt_run_backend(run), dt_run_dim(run), dt_slab_node(dt_run_theta(run), l), push) : DT_OK;
}

/* The centre meets x_i: it answers with x̃ as it is, then moves x̃ ← x̃ + (β/N)(x_i − x̃) (β/N = α
 * by default: one worker's share of the synchronous pull). */
static dt_status async_centre(void *ctx, dt_async *a, int from, const float *push, float *reply) {
  easgd_state *s = ctx;
  dt_optimizer_run *run = s->run;
  (void)a, (void)from;
  const float b = (float)(beta_of(&s->o, dt_run_graph(run)->n) / dt_run_graph(run)->n);
  DT_TRY(dt_be_copy(dt_run_backend(run), dt_run_dim(run), s->centre, reply));
  return dt_be_axpby(dt_run_backend(run), dt_run_dim(run), 1.0f - b, s->centre, b, push, s->centre);
}

/* x_i ← (1 − α) x_i + α x̃ with the x̃ the centre had; without it (push or reply lost) x_i stays. */
static dt_status async_reply(void *ctx, dt_async *a, int node, int l, const float *reply, int delivered) {
  easgd_state *s = ctx;
  const float alpha = (float)s->o.alpha;
  (void)a, (void)node;
  if (l < 0 || !delivered) return DT_OK;
  float *x = dt_slab_node(dt_run_theta(s->run), l);
  return dt_be_axpby(dt_run_backend(s->run), dt_run_dim(s->run), 1.0f - alpha, x, alpha, reply, x);
}

static dt_status async_create(easgd_state *s) {
  dt_optimizer_run *run = s->run;
  DT_TRY(dt_run_keep_slab(run, "grad", &s->learners.grad)); /* a step's gradient, taken when it began */
  DT_ALLOC(s->steps, (size_t)dt_run_graph(run)->n + 1, "easgd");
  const dt_async_def def = {.centre_len = dt_run_dim(run), .step_start = async_start, .step_end = async_end, .centre = async_centre,
                            .centre_reply = async_reply};
  return dt_async_create(run, &def, s, &s->async);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  easgd_state *s = state;
  (void)opts;
  /* x̃₀ = the workers' common start (their mean; not traffic: every rank knows it) */
  DT_TRY(dt_run_mean_uncounted(run, dt_run_theta(run), s->centre));
  DT_TRY(dt_run_centre_faults(run));
  return s->o.asynchronous ? async_create(s) : DT_OK;
}

/* The elastic step under faults: the centre feels the pull of the m workers whose push arrived,
 * x̃ ← (1 − βm/N) x̃ + (βm/N) x̄_m (their mean: β/N per worker, as each spring pulls alike), and a
 * worker whose reply (x̃ before the move) arrived moves x_i ← (1 − α) x_i + α x̃; one whose reply
 * did not keeps x_i. The pushes go through the gradient scratch (its rows are zeroed where lost). */
static dt_status faulty_elastic(easgd_state *s, float a, float b) {
  dt_optimizer_run *run = s->run;
  dt_backend *be = dt_run_backend(run);
  int m;
  const uint8_t *got;
  DT_TRY(dt_slab_copy(be, dt_run_theta(run), &s->learners.grad));
  DT_TRY(dt_run_centre_mean(run, &s->learners.grad, s->mean, &m));
  DT_TRY(dt_run_centre_reply(run, NULL, sizeof(float) * dt_run_dim(run), &got));
  for (int l = 0; l < dt_run_count(run); l++) {
    if (!got[dt_run_first(run) + l]) continue;
    float *x = dt_slab_node(dt_run_theta(run), l);
    DT_TRY(dt_be_axpby(be, dt_run_dim(run), 1.0f - a, x, a, s->centre, x));
  }
  const float bm = (float)((double)b * m / dt_run_graph(run)->n);
  return m > 0 ? dt_be_axpby(be, dt_run_dim(run), 1.0f - bm, s->centre, bm, s->mean, s->centre) : DT_OK;
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  easgd_state *s = p;
  if (s->async != NULL) return dt_async_round(s->async, k);
  dt_backend *be = dt_run_backend(run);
  const float lr = (float)dt_rate_at(s->o.lr, s->o.mu, k);
  const float a = (float)s->o.alpha, b = (float)beta_of(&s->o, dt_run_graph(run)->n);
  for (int t = 0; t < s->o.tau; t++) DT_TRY(dt_learners_step(run, &s->learners, lr, NULL));
  if (dt_run_faulty(run)) return faulty_elastic(s, a, b);
  /* every worker pushes x_i (charged by dt_run_node_mean) ... */
  DT_TRY(dt_run_node_mean(run, dt_run_theta(run), s->mean));
  /* ... and the centre, hosted with node 0, sends x̃ back to each of the N workers */
  dt_run_count_from_centre(run);
  /* x_i ← (1 − α) x_i + α x̃ (the centre before its own move), then x̃ ← (1 − β) x̃ + β x̄ */
  const dt_slab centre = {.data = s->centre, .count = dt_run_count(run), .dim = dt_run_dim(run), .stride = 0};
  DT_TRY(dt_slab_axpby(be, 1.0f - a, dt_run_theta(run), a, &centre, dt_run_theta(run)));
  return dt_be_axpby(be, dt_run_dim(run), 1.0f - b, s->centre, b, s->mean, s->centre);
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  const dt_easgd_opts *o = opts;
  /* N pushes of x_i, N replies with x̃; asynchronous: a round is one step's time, a push every tau */
  return 2.0 * g->n * (double)dim * sizeof(float) / (o->asynchronous ? o->tau : 1);
}

static double gradient_step(const void *opts) {
  const dt_easgd_opts *o = opts;
  return o->worker_optimizer == DT_LOCAL_SGD && o->momentum == 0 ? o->lr : 0;
}

/* Asynchronous: per node, the engine's push and reply rows; per rank, the centre's rank's push and
 * reply buffers, counted on every rank. Always: the run's sum (dim doubles) per rank. */
static dt_state_size state_extra(const void *opts, size_t dim) {
  const dt_easgd_opts *o = opts;
  (void)dim;
  return (dt_state_size){.per_node = o->asynchronous ? 2 : 0, .per_rank = 2 + (o->asynchronous ? 2 : 0)};
}

static int asynchronous(const void *opts) { return ((const dt_easgd_opts *)opts)->asynchronous; }

const dt_optimizer_def dt_optimizer_easgd = {
    .plugin =
        {
            .name = "easgd",
            .summary = "elastic averaging SGD: tau local steps, then an elastic pull towards a centre, in rounds or asynchronous",
            .keys = keys,
            .opts_size = sizeof(dt_easgd_opts),
            .finalize = finalize,
        },
    DT_STATE(easgd_state, o, run),
    .slots = slots,
    .create = create,
    .destroy = destroy,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .runs_on = DT_RUNS_DIRECTED, /* the graph carries none of its messages */
    .graph_unused = "each node talks to the elastic centre with node 0",
    .gradient_step = gradient_step,
    .on_missing = DT_MISSING_SKIP, /* the centre feels the pushes that arrived; a worker without a reply keeps x_i (faulty_elastic) */
    .asynchronous = asynchronous,
    .state_extra = state_extra,
};
