/* Local-DSGD (Koloskova, Loizou, Boreiri, Jaggi & Stich, ICML 2020, "A unified theory of
 * decentralized SGD with changing topology and local updates"): tau local steps, then one
 * gossip with W. Update equations: README.md here. */
#include "../local_step.h"
#include "../mix.h"
#include "../options_impl.h"
#include "dt/optimizer.h"

typedef struct dt_local_dsgd_opts {
  double alpha0, mu;
  int local_steps;
  int local_optimizer; /* dt_local_opt_kind */
  dt_sgd_extras x;
  dt_lr_schedule schedule;
} dt_local_dsgd_opts;

static const dt_key keys[] = {
    {.name = "alpha0", .type = DT_KEY_FLOAT, .offset = offsetof(dt_local_dsgd_opts, alpha0), .def = "0.005", .min = 0,
     .max = DT_INF, .help = "initial step size"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_local_dsgd_opts, mu), .def = "0.0", .min = 0, .max = DT_INF,
     .help = "step decay of the default lr_schedule: round k uses alpha0 / (1 + mu k)"},
    {.name = "local_steps", .type = DT_KEY_INT, .offset = offsetof(dt_local_dsgd_opts, local_steps), .def = "4", .min = 1,
     .max = 1e6, .help = "tau: local steps (one minibatch each) between two gossips; 1 is DSGD's step-then-gossip order"},
    {.name = "local_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_local_dsgd_opts, local_optimizer), .def = "sgd",
     .values = dt_local_opt_names, .flags = DT_KEY_EMIT_IF_SET,
     .help = "the local step: sgd (the default), or adam, adamw, rmsprop, adadelta, nadam"},
    DT_SGD_EXTRAS_KEYS(dt_local_dsgd_opts, x),
    DT_LR_SCHEDULE_KEY(dt_local_dsgd_opts, schedule),
    {0},
};

typedef struct local_dsgd_state {
  dt_local_dsgd_opts o;
  dt_learners learners; /* the local optimizer's state and the gradient slab */
  dt_optimizer_run *run;
} local_dsgd_state;

static const dt_state_slot slots[] = {
    {.name = "local", .kind = DT_SLOT_LEARNERS, .offset = offsetof(local_dsgd_state, learners),
     .from = DT_LEARNER_FROM_X(dt_local_dsgd_opts, local_optimizer, alpha0, x)},
    {0},
};

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  local_dsgd_state *s = p;
  const float a = (float)dt_run_rate(run, &s->o.schedule, s->o.alpha0, s->o.mu, k, s->o.local_steps);
  for (int t = 0; t < s->o.local_steps; t++) DT_TRY(dt_learners_step(run, &s->learners, a, NULL)); /* x ← step(x, g) */
  DT_TRY(dt_run_send(run, 0, dt_run_theta(run)));
  DT_TRY(dt_run_exchange_go(run, NULL));
  return dt_mix_all(run, 0, dt_run_theta(run)); /* x_i ← Σ_j W_ij x_j */
}

static double gradient_step(const void *opts) {
  const dt_local_dsgd_opts *o = opts;
  return dt_local_step_stable(o->alpha0, o->local_optimizer, &o->x);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_local_dsgd_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, o->local_optimizer, &o->x, rounds, err, err_size);
}

const dt_optimizer_def dt_optimizer_local_dsgd = {
    .plugin =
        {
            .name = "local_dsgd",
            .summary = "Local-DSGD: tau local steps, then one gossip with W",
            .keys = keys,
            .opts_size = sizeof(dt_local_dsgd_opts),
            .finalize = finalize,
        },
    DT_STATE(local_dsgd_state, o, run),
    .slots = slots,
    .exchange_vectors = 1,
    .round = round_k,
    .bytes_per_round = dt_mix_one_vector_bytes,
    .traffic_per_edge = 1,
    .gradient_step = gradient_step,
    .runs_on = DT_RUNS_TIME_VARYING, /* every round mixes with that round's weights */
    .on_missing = DT_MISSING_RENORMALISE,
};
