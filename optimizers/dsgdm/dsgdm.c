/* DSGD with local momentum, heavy-ball or Nesterov (DSGDm: the baseline of Lin et al., "Quasi-
 * global momentum", ICML 2021), synchronous, in DSGD's order: mix, then a momentum step at the
 * mixed point. Update equations: README.md here. */
#include <stdbool.h>

#include "../local_step.h"
#include "../mix.h"
#include "../options_impl.h"
#include "dt/optimizer.h"

typedef struct dt_dsgdm_opts {
  double alpha0, mu, momentum;
  bool nesterov;
  dt_sgd_extras x; /* weight_decay (momentum and nesterov are the keys above) */
  dt_lr_schedule schedule;
} dt_dsgdm_opts;

static const dt_key keys[] = {
    {.name = "alpha0", .type = DT_KEY_FLOAT, .offset = offsetof(dt_dsgdm_opts, alpha0), .def = "0.005", .min = 0, .max = DT_INF,
     .help = "initial step size"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_dsgdm_opts, mu), .def = "0.001", .min = 0, .max = DT_INF,
     .help = "step decay: round k uses alpha_k = alpha0 / (1 + mu k)"},
    {.name = "momentum", .type = DT_KEY_FLOAT, .offset = offsetof(dt_dsgdm_opts, momentum), .def = "0.9", .min = 0, .max = 1,
     .help = "beta of the local momentum buffer m <- beta m + g"},
    {.name = "nesterov", .type = DT_KEY_BOOL, .offset = offsetof(dt_dsgdm_opts, nesterov), .def = "false",
     .help = "step along g + beta m (Nesterov) instead of m (heavy ball)"},
    DT_WEIGHT_DECAY_KEY(dt_dsgdm_opts, x),
    DT_LR_SCHEDULE_KEY(dt_dsgdm_opts, schedule),
    {0},
};

typedef struct dsgdm_state {
  dt_dsgdm_opts o;
  dt_slab mixed;  /* scratch, rewritten every round */
  dt_learners sgd; /* the momentum step: PyTorch's SGD (momentum, Nesterov) as the fused local step */
  dt_optimizer_run *run;
} dsgdm_state;

/* the momentum step: PyTorch's SGD (momentum, Nesterov) as the fused local step */
static dt_local_opt_spec sgd_spec(const void *opts) {
  const dt_dsgdm_opts *o = opts;
  dt_local_opt_spec spec = dt_local_opt_spec_default(DT_LOCAL_SGD);
  spec.momentum = (float)o->momentum;
  spec.nesterov = o->nesterov;
  spec.weight_decay = (float)o->x.weight_decay;
  return spec;
}

static const dt_state_slot slots[] = {
    {.name = "mixed", .kind = DT_SLOT_NODE, .offset = offsetof(dsgdm_state, mixed), .scratch = 1},
    {.name = "sgd", .kind = DT_SLOT_LEARNERS, .offset = offsetof(dsgdm_state, sgd), .spec = sgd_spec}, /* the buffer (sgd.m), the steps */
    {0},
};

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  dsgdm_state *s = p;
  const float a = (float)dt_run_rate(run, &s->o.schedule, s->o.alpha0, s->o.mu, k, 1);
  DT_TRY(dt_run_send(run, 0, dt_run_theta(run)));
  DT_TRY(dt_run_exchange_go(run, NULL));
  DT_TRY(dt_mix_all(run, 0, &s->mixed));                   /* z_i = Σ_j W_ij x_j */
  DT_TRY(dt_run_gradients(run, &s->mixed, &s->sgd.grad, NULL)); /* g_i = ∇f_i(z_i) */
  /* m_i ← β m_i + g_i;  z_i ← z_i − α m_i (heavy ball) or z_i − α (g_i + β m_i) (Nesterov) */
  DT_TRY(dt_local_opt_step_all(s->sgd.opt, &s->mixed, &s->sgd.grad, a));
  return dt_slab_copy(dt_run_backend(run), &s->mixed, dt_run_theta(run));
}

/* The plain step with the same stability limit on a quadratic of curvature L: heavy ball is
 * stable for alpha L < 2 (1 + beta), Nesterov for alpha L < 2 (1 + beta) / (1 + 2 beta). */
static double gradient_step(const void *opts) {
  const dt_dsgdm_opts *o = opts;
  const double b = o->momentum;
  return o->nesterov ? o->alpha0 * (1 + 2 * b) / (1 + b) : o->alpha0 / (1 + b);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_dsgdm_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, DT_LOCAL_SGD, NULL, rounds, err, err_size);
}

const dt_optimizer_def dt_optimizer_dsgdm = {
    .plugin =
        {
            .name = "dsgdm",
            .summary = "DSGD with local heavy-ball or Nesterov momentum: mix with W, then a momentum step",
            .keys = keys,
            .opts_size = sizeof(dt_dsgdm_opts),
            .finalize = finalize,
        },
    DT_STATE(dsgdm_state, o, run),
    .slots = slots,
    .exchange_vectors = 1,
    .round = round_k,
    .bytes_per_round = dt_mix_one_vector_bytes,
    .traffic_per_edge = 1,
    .gradient_step = gradient_step,
    .runs_on = DT_RUNS_TIME_VARYING, /* every round mixes with that round's weights */
    .on_missing = DT_MISSING_RENORMALISE,
};
