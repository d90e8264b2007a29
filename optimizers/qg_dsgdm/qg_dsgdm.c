/* Quasi-global momentum (QG-DSGDm: Lin, Karimireddy, Stich & Jaggi, ICML 2021), in its authors'
 * order (epfml/quasi-global-momentum, code/pcode/optim/decentralized_qg_sgd.py): a momentum step
 * built on the quasi-global buffer m̂, then gossip, then m̂ follows the model's actual
 * displacement over the round. Update equations: README.md here. */
#include <stdbool.h>

#include "../local_step.h"
#include "../mix.h"
#include "../options_impl.h"
#include "dt/optimizer.h"

typedef struct dt_qg_opts {
  double alpha0, mu, momentum, qg_mu;
  bool nesterov;
  dt_sgd_extras x; /* weight_decay */
  dt_lr_schedule schedule;
} dt_qg_opts;

static const dt_key keys[] = {
    {.name = "alpha0", .type = DT_KEY_FLOAT, .offset = offsetof(dt_qg_opts, alpha0), .def = "0.005", .min = 0, .max = DT_INF,
     .help = "initial step size"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_qg_opts, mu), .def = "0.0", .min = 0, .max = DT_INF,
     .help = "step decay of the default lr_schedule: round k uses alpha0 / (1 + mu k)"},
    {.name = "momentum", .type = DT_KEY_FLOAT, .offset = offsetof(dt_qg_opts, momentum), .def = "0.9", .min = 0, .max = 1,
     .help = "beta: the local momentum m = beta mhat + g built on the quasi-global buffer"},
    {.name = "nesterov", .type = DT_KEY_BOOL, .offset = offsetof(dt_qg_opts, nesterov), .def = "false",
     .help = "step along g + beta m (Nesterov) instead of m (heavy ball)"},
    {.name = "qg_mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_qg_opts, qg_mu), .def = "0.9", .min = 0, .max = 1,
     .help = "mu of the quasi-global buffer: mhat <- mu mhat + (1 - mu) d, d the round's displacement / rate (the "
             "authors' code: 0.9)"},
    DT_WEIGHT_DECAY_KEY(dt_qg_opts, x),
    DT_LR_SCHEDULE_KEY(dt_qg_opts, schedule),
    {0},
};

typedef struct qg_state {
  dt_qg_opts o;
  dt_slab mhat;             /* the quasi-global momentum (kept in checkpoints) */
  dt_slab grad, m, old;     /* scratch */
  dt_optimizer_run *run;
} qg_state;

static const dt_state_slot slots[] = {
    {.name = "quasi_global_momentum", .kind = DT_SLOT_NODE, .offset = offsetof(qg_state, mhat)},
    {.name = "grad", .kind = DT_SLOT_NODE, .offset = offsetof(qg_state, grad), .scratch = 1},
    {.name = "m", .kind = DT_SLOT_NODE, .offset = offsetof(qg_state, m), .scratch = 1},
    {.name = "old", .kind = DT_SLOT_NODE, .offset = offsetof(qg_state, old), .scratch = 1},
    {0},
};

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  qg_state *s = p;
  dt_backend *be = dt_run_backend(run);
  const float a = (float)dt_run_rate(run, &s->o.schedule, s->o.alpha0, s->o.mu, k, 1);
  const float beta = (float)s->o.momentum;
  DT_TRY(dt_slab_copy(be, dt_run_theta(run), &s->old)); /* x_old */
  /* g = ∇f_i(x) + λ x;  m = β m̂ + g;  u = g + β m (Nesterov) or m */
  DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->grad, NULL));
  if (s->o.x.weight_decay != 0) DT_TRY(dt_slab_axpby(be, 1.0f, &s->grad, (float)s->o.x.weight_decay, dt_run_theta(run), &s->grad));
  DT_TRY(dt_slab_axpby(be, beta, &s->mhat, 1.0f, &s->grad, &s->m));
  if (s->o.nesterov) DT_TRY(dt_slab_axpby(be, 1.0f, &s->grad, beta, &s->m, &s->m));
  /* send x − α u; x_i ← Σ_j W_ij (x_j − α u_j) */
  dt_slab v = dt_exchange_send_slab(dt_run_the_exchange(run), 0);
  DT_TRY(dt_slab_axpby(be, 1.0f, dt_run_theta(run), -a, &s->m, &v));
  DT_TRY(dt_run_exchange_go(run, NULL));
  DT_TRY(dt_mix_all(run, 0, dt_run_theta(run)));
  /* d = (x_old − x) / α;  m̂ ← μ m̂ + (1 − μ) d (a rate of 0 moves nothing, and m̂ stays) */
  if (a == 0.0f) return DT_OK;
  const double q = s->o.qg_mu;
  DT_TRY(dt_slab_axpby(be, 1.0f, &s->old, -1.0f, dt_run_theta(run), &s->old));
  return dt_slab_axpby(be, (float)q, &s->mhat, (float)((1.0 - q) / a), &s->old, &s->mhat);
}

/* The plain step with the same stability limit on a quadratic of curvature L: SGD's with this
 * momentum (heavy ball or Nesterov). */
static double gradient_step(const void *opts) {
  const dt_qg_opts *o = opts;
  const dt_sgd_extras x = {.momentum = o->momentum, .nesterov = o->nesterov};
  return dt_local_step_stable(o->alpha0, DT_LOCAL_SGD, &x);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_qg_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, DT_LOCAL_SGD, NULL, rounds, err, err_size);
}

const dt_optimizer_def dt_optimizer_qg_dsgdm = {
    .plugin =
        {
            .name = "qg_dsgdm",
            .summary = "quasi-global momentum (QG-DSGDm): a momentum step on a buffer that follows the gossiped model, then gossip",
            .keys = keys,
            .opts_size = sizeof(dt_qg_opts),
            .finalize = finalize,
        },
    DT_STATE(qg_state, o, run),
    .slots = slots,
    .exchange_vectors = 1,
    .round = round_k,
    .bytes_per_round = dt_mix_one_vector_bytes,
    .traffic_per_edge = 1,
    .gradient_step = gradient_step,
    .runs_on = DT_RUNS_TIME_VARYING, /* every round mixes with that round's weights */
    .on_missing = DT_MISSING_RENORMALISE,
};
