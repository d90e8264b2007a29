/* The centralized baseline: exact gradient averaging over all nodes each step (bulk-synchronous
 * data parallelism), or local steps followed by model averaging (periodic parameter
 * averaging). Sums over nodes run in node order (dt_run_node_sum), so they are bit-identical for
 * any rank count. Update equations: README.md here. */
#include <string.h>

#include "../options_impl.h"
#include "../local_step.h"
#include "dt/optimizer.h"

static const char *const modes[] = {"gradient", "model", NULL};

/* The options this plug-in's key table fills (its own: nothing outside this folder sees it). */
enum { DT_CENTRAL_GRADIENT = 0, DT_CENTRAL_MODEL };
typedef struct dt_centralized_opts {
  int mode;
  int local_steps;
  int optimizer;
  double lr, mu;
} dt_centralized_opts;

static const dt_key keys[] = {
    {.name = "mode", .type = DT_KEY_ENUM, .offset = offsetof(dt_centralized_opts, mode), .def = "gradient", .values = modes,
     .help = "gradient: average gradients every step; model: local steps, then average models"},
    {.name = "local_steps", .type = DT_KEY_INT, .offset = offsetof(dt_centralized_opts, local_steps), .def = "1", .min = 1, .max = 1e6,
     .help = "steps per round"},
    {.name = "optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_centralized_opts, optimizer), .def = "adam",
     .values = dt_local_opt_names, .help = "sgd, adam, adamw, rmsprop, adadelta or nadam"},
    {.name = "lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_centralized_opts, lr), .def = "0.005", .min = 0, .max = DT_INF,
     .help = "learning rate"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_centralized_opts, mu), .def = "0.0", .min = 0, .max = DT_INF,
     .help = "rate decay: round k uses lr_k = lr / (1 + mu k)"},
    {0},
};

typedef struct central_state {
  dt_centralized_opts o;
  dt_optimizer_run *run;
  dt_learners learners;
  float *avg; /* the mean over all nodes (backend vector) */
  /* gradient mode under faults: the centre keeps the model and its optimizer (a parameter server),
   * so that a node whose reply was lost catches up with the next one */
  float *server;
  dt_local_opt *server_opt;
} central_state;

static dt_local_opt_spec local_spec(const void *opts) {
  const dt_centralized_opts *o = opts;
  return dt_local_step_spec(o->optimizer, o->lr, NULL);
}

static const dt_state_slot slots[] = {
    {.name = "local", .kind = DT_SLOT_LEARNERS, .offset = offsetof(central_state, learners),
     .from = DT_LEARNER_FROM(dt_centralized_opts, optimizer, lr)},
    {.name = "avg", .kind = DT_SLOT_SHARED, .offset = offsetof(central_state, avg), .scratch = 1},
    {0},
};

static void destroy(dt_optimizer_run *run, void *state) {
  central_state *s = state;
  dt_be_free(dt_run_backend(run), s->server);
  dt_local_opt_free(s->server_opt);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  central_state *s = state;
  DT_TRY(dt_run_centre_faults(run));
  if (!dt_run_faulty(run) || s->o.mode != DT_CENTRAL_GRADIENT) return DT_OK;
  const dt_local_opt_spec spec = local_spec(opts);
  return dt_run_server_create(run, "server", &spec, &s->server, &s->server_opt);
}

/* Under faults: the mean of v's rows over the *arrived pushes that arrived, and the replies (not
 * counted as traffic, as without faults); *got: whose reply arrived (none when no push did: the
 * centre then has nothing to send). */
static dt_status faulty_mean(central_state *s, dt_slab *v, const uint8_t **got, int *arrived) {
  DT_TRY(dt_run_centre_mean(s->run, v, s->avg, arrived));
  uint8_t none[dt_run_graph(s->run)->n + 1];
  memset(none, 0, sizeof none);
  return dt_run_centre_reply(s->run, *arrived > 0 ? NULL : none, 0, got);
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  central_state *s = p;
  dt_backend *be = dt_run_backend(run);
  const float lr = (float)dt_rate_at(s->o.lr, s->o.mu, k);
  const uint8_t *got = NULL; /* whose reply arrived (NULL: every node's, without faults) */
  if (s->o.mode == DT_CENTRAL_MODEL) {
    /* local steps, then every node takes the average model */
    for (int t = 0; t < s->o.local_steps; t++) DT_TRY(dt_learners_step(run, &s->learners, lr, NULL));
    if (!dt_run_faulty(run)) {
      DT_TRY(dt_run_node_mean(run, dt_run_theta(run), s->avg));
    } else { /* the models pushed through the gradient scratch, whose rows the lost pushes zero */
      DT_TRY(dt_slab_copy(be, dt_run_theta(run), &s->learners.grad));
      int arrived;
      DT_TRY(faulty_mean(s, &s->learners.grad, &got, &arrived));
    }
    for (int l = 0; l < dt_run_count(run); l++)
      if (got == NULL || got[dt_run_first(run) + l]) DT_TRY(dt_be_copy(be, dt_run_dim(run), s->avg, dt_slab_node(dt_run_theta(run), l)));
    return DT_OK;
  }
  /* every step with the gradient averaged over all nodes */
  for (int t = 0; t < s->o.local_steps; t++) {
    DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->learners.grad, NULL));
    if (!dt_run_faulty(run)) {
      DT_TRY(dt_run_node_mean(run, &s->learners.grad, s->avg));
      for (int l = 0; l < dt_run_count(run); l++)
        DT_TRY(dt_local_opt_step(s->learners.opt, l, dt_slab_node(dt_run_theta(run), l), s->avg, lr, NULL));
      continue;
    }
    /* under faults: the centre steps with the mean of the gradients that arrived and replies
     * with its model; a node whose reply did not arrive computes its next gradient where it is */
    int arrived;
    DT_TRY(faulty_mean(s, &s->learners.grad, &got, &arrived));
    if (arrived > 0) DT_TRY(dt_local_opt_step(s->server_opt, 0, s->server, s->avg, lr, NULL));
    for (int l = 0; l < dt_run_count(run); l++)
      if (got[dt_run_first(run) + l]) DT_TRY(dt_be_copy(be, dt_run_dim(run), s->server, dt_slab_node(dt_run_theta(run), l)));
  }
  return DT_OK;
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  const dt_centralized_opts *o = opts;
  const double per_sum = (double)g->n * (double)dim * sizeof(float);
  return o->mode == DT_CENTRAL_GRADIENT ? o->local_steps * per_sum : per_sum;
}

static double gradient_step(const void *opts) {
  const dt_centralized_opts *o = opts;
  return o->optimizer == DT_LOCAL_SGD ? o->lr : 0;
}

/* Per rank: the run's sum (dim doubles, made in round 0). */
static dt_state_size state_extra(const void *opts, size_t dim) {
  (void)opts, (void)dim;
  return (dt_state_size){.per_rank = 2};
}

const dt_optimizer_def dt_optimizer_centralized = {
    .plugin =
        {
            .name = "centralized",
            .summary = "centralized baseline: exact gradient averaging, or local steps plus model averaging",
            .keys = keys,
            .opts_size = sizeof(dt_centralized_opts),
        },
    DT_STATE(central_state, o, run),
    .slots = slots,
    .create = create,
    .destroy = destroy,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .runs_on = DT_RUNS_DIRECTED, /* the graph carries none of its messages */
    .graph_unused = "each node sends its gradient to a centre with node 0",
    .gradient_step = gradient_step,
    .on_missing = DT_MISSING_SKIP, /* the centre averages the pushes that arrived; a node without a reply waits (faulty_mean) */
    .state_extra = state_extra,
};
