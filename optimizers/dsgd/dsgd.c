/* Decentralized SGD (Nedić & Ozdaglar 2009; stochastic form as in Lian et al., NeurIPS 2017),
 * synchronous. Update equations: README.md here. */
#include <stdio.h>

#include "../local_step.h"
#include "../mix.h"
#include "../options_impl.h"
#include "dt/optimizer.h"

/* The options this plug-in's key table fills (its own: nothing outside this folder sees it). */
typedef struct dt_dsgd_opts {
  double alpha0, mu;
  int update_order;
  int local_optimizer; /* dt_local_opt_kind */
  dt_sgd_extras x;
  dt_lr_schedule schedule;
} dt_dsgd_opts;

static const dt_key keys[] = {
    {.name = "alpha0", .type = DT_KEY_FLOAT, .offset = offsetof(dt_dsgd_opts, alpha0), .def = "0.005", .min = 0, .max = DT_INF,
     .help = "initial step size"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_dsgd_opts, mu), .def = "0.001", .min = 0, .max = DT_INF,
     .help = "step decay: round k uses alpha_k = alpha0 / (1 + mu k)"},
    {.name = "update_order", .type = DT_KEY_ENUM, .offset = offsetof(dt_dsgd_opts, update_order), .def = "synchronous",
     .values = dt_update_orders,
     .help = "synchronous, or sequential: the seed reference's in-place sweep in node order"},
    {.name = "local_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_dsgd_opts, local_optimizer), .def = "sgd",
     .values = dt_local_opt_names, .flags = DT_KEY_EMIT_IF_SET,
     .help = "the step at the mixed point: sgd (x - alpha g, the default), or adam, adamw, rmsprop, adadelta, nadam"},
    DT_SGD_EXTRAS_KEYS(dt_dsgd_opts, x),
    DT_LR_SCHEDULE_KEY(dt_dsgd_opts, schedule),
    {0},
};

typedef struct dsgd_state {
  dt_dsgd_opts o;
  dt_slab mixed, grad; /* local nodes */
  dt_learners local;   /* a local optimizer other than plain SGD (its own gradient slab) */
  dt_optimizer_run *run;
} dsgd_state;

static int plain(const void *opts) {
  const dt_dsgd_opts *o = opts;
  return dt_local_step_plain(o->local_optimizer, &o->x);
}
static int not_plain(const void *opts) { return !plain(opts); }

static const dt_state_slot slots[] = {
    {.name = "mixed", .kind = DT_SLOT_NODE, .offset = offsetof(dsgd_state, mixed), .scratch = 1},
    {.name = "grad", .kind = DT_SLOT_NODE, .offset = offsetof(dsgd_state, grad), .scratch = 1, .when = plain},
    {.name = "local", .kind = DT_SLOT_LEARNERS, .offset = offsetof(dsgd_state, local), .when = not_plain,
     .from = DT_LEARNER_FROM_X(dt_dsgd_opts, local_optimizer, alpha0, x)},
    {0},
};

static float *theta_of(void *ctx, int l) { return dt_slab_node(dt_run_theta(((dsgd_state *)ctx)->run), l); }

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  dsgd_state *s = p;
  const float a = (float)dt_run_rate(run, &s->o.schedule, s->o.alpha0, s->o.mu, k, 1);
  DT_TRY(dt_run_send(run, 0, dt_run_theta(run)));
  DT_TRY(dt_run_exchange_go(run, NULL));
  if (s->o.update_order == DT_ORDER_SEQUENTIAL) {
    /* the seed reference: mix in place in node order (a sweep), then every node's step
     * x ← x − α ∇f(x) */
    const dt_sweep_io io = {.out = theta_of, .ctx = s};
    DT_TRY(dt_mix_sweep(run, 0, 0.0f, &io));
    DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->grad, NULL));
    return dt_slab_axpby(dt_run_backend(run), 1.0f, dt_run_theta(run), -a, &s->grad, dt_run_theta(run));
  }
  /* x_i ← Σ_j W_ij x_j − α ∇f_i(Σ_j W_ij x_j) */
  DT_TRY(dt_mix_all(run, 0, &s->mixed));
  if (s->local.opt != NULL) { /* the local optimizer's step at the mixed point, at rate α */
    DT_TRY(dt_run_gradients(run, &s->mixed, &s->local.grad, NULL));
    DT_TRY(dt_local_opt_step_all(s->local.opt, &s->mixed, &s->local.grad, a));
    return dt_slab_copy(dt_run_backend(run), &s->mixed, dt_run_theta(run));
  }
  DT_TRY(dt_run_gradients(run, &s->mixed, &s->grad, NULL));
  return dt_slab_axpby(dt_run_backend(run), 1.0f, &s->mixed, -a, &s->grad, dt_run_theta(run));
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  if (((const dt_dsgd_opts *)opts)->update_order == DT_ORDER_SEQUENTIAL) /* round start + one sweep */
    return 2.0 * g->num_edges * (double)dim * sizeof(float) + dt_mix_sweep_bytes(g, dim, 1);
  return 2.0 * g->num_edges * (double)dim * sizeof(float);
}

static double gradient_step(const void *opts) {
  const dt_dsgd_opts *o = opts;
  return dt_local_step_stable(o->alpha0, o->local_optimizer, &o->x); /* the base rate: the largest of plain schedules */
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_dsgd_opts *o = opts;
  if (!dt_local_step_sequential_ok(o->update_order == DT_ORDER_SEQUENTIAL, o->local_optimizer, &o->x, err, err_size))
    return 0;
  return dt_local_step_check(&o->schedule, o->mu, o->local_optimizer, &o->x, rounds, err, err_size);
}

static int accepts(const void *opts, const dt_run_env *env, dt_refusal *why) {
  return dt_mix_sequential_accepts("dsgd", ((const dt_dsgd_opts *)opts)->update_order == DT_ORDER_SEQUENTIAL, env, why);
}

/* Per rank, a sequential sweep's scratch vector while it runs. */
static dt_state_size state_extra(const void *opts, size_t dim) {
  (void)dim;
  return (dt_state_size){.per_rank = ((const dt_dsgd_opts *)opts)->update_order == DT_ORDER_SEQUENTIAL ? 1 : 0};
}

const dt_optimizer_def dt_optimizer_dsgd = {
    .plugin =
        {
            .name = "dsgd",
            .summary = "decentralized SGD: mix with W, then a gradient step with a decaying rate",
            .keys = keys,
            .opts_size = sizeof(dt_dsgd_opts),
            .finalize = finalize,
        },
    DT_STATE(dsgd_state, o, run),
    .slots = slots,
    .exchange_vectors = 1,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .traffic_per_edge = 1,
    .gradient_step = gradient_step,
    .runs_on = DT_RUNS_TIME_VARYING,
    .on_missing = DT_MISSING_RENORMALISE,
    .accepts = accepts,
    .state_extra = state_extra,
};
