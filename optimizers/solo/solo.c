/* The solo baseline: every node trains on its own data and never communicates. Update
 * equations: README.md here. */
#include "../local_step.h"
#include "../options_impl.h"
#include "dt/optimizer.h"

/* The options this plug-in's key table fills (its own: nothing outside this folder sees it). */
typedef struct dt_solo_opts {
  int optimizer;
  double lr, mu;
  dt_sgd_extras x;
  dt_lr_schedule schedule;
} dt_solo_opts;

static const dt_key keys[] = {
    {.name = "optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_solo_opts, optimizer), .def = "adam",
     .values = dt_local_opt_names, .help = "sgd, adam, adamw, rmsprop, adadelta or nadam"},
    {.name = "lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_solo_opts, lr), .def = "0.005", .min = 0, .max = DT_INF,
     .help = "learning rate"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_solo_opts, mu), .def = "0.0", .min = 0, .max = DT_INF,
     .help = "rate decay: round k uses lr_k = lr / (1 + mu k)"},
    DT_SGD_EXTRAS_KEYS(dt_solo_opts, x),
    DT_LR_SCHEDULE_KEY(dt_solo_opts, schedule),
    {0},
};

typedef struct solo_state {
  dt_solo_opts o;
  dt_optimizer_run *run;
  dt_learners learners;
  uint8_t *active; /* nodes still training (dt_run_max_epochs(run)) */
} solo_state;

static const dt_state_slot slots[] = {
    {.name = "local", .kind = DT_SLOT_LEARNERS, .offset = offsetof(solo_state, learners),
     .from = DT_LEARNER_FROM_X(dt_solo_opts, optimizer, lr, x)},
    {.name = "active", .kind = DT_SLOT_HOST, .offset = offsetof(solo_state, active), .scratch = 1, .elem = sizeof(uint8_t)},
    {0},
};

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  solo_state *s = p;
  const float lr = (float)dt_run_rate(run, &s->o.schedule, s->o.lr, s->o.mu, k, 1);
  if (dt_run_max_epochs(run) <= 0) return dt_learners_step(run, &s->learners, lr, NULL);
  /* an epoch budget: a node that has made max_epochs passes over its data stops */
  for (int l = 0; l < dt_run_count(run); l++)
    s->active[l] = dt_task_epoch(dt_run_task(run), dt_run_first(run) + l) < dt_run_max_epochs(run);
  return dt_learners_step(run, &s->learners, lr, s->active);
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  (void)g;
  (void)dim;
  (void)opts;
  return 0.0;
}

static double gradient_step(const void *opts) {
  const dt_solo_opts *o = opts;
  return dt_local_step_stable(o->lr, o->optimizer, &o->x);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_solo_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, o->optimizer, &o->x, rounds, err, err_size);
}

const dt_optimizer_def dt_optimizer_solo = {
    .plugin =
        {
            .name = "solo",
            .summary = "no communication: every node trains alone (the lower baseline)",
            .keys = keys,
            .opts_size = sizeof(dt_solo_opts),
            .finalize = finalize,
        },
    DT_STATE(solo_state, o, run),
    .slots = slots,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .runs_on = DT_RUNS_DIRECTED, /* the graph carries none of its messages */
    .graph_unused = "each node trains alone",
    .gradient_step = gradient_step,
    .on_missing = DT_MISSING_SKIP,
};
