/* Decentralized stochastic gradient tracking (Pu & Nedić, Math. Programming 2021), synchronous;
 * x and y travel in one exchange. Update equations: README.md here. */
#include <stdio.h>

#include "../local_step.h"
#include "../mix.h"
#include "../options_impl.h"
#include "dt/optimizer.h"

/* The options this plug-in's key table fills (its own: nothing outside this folder sees it). */
typedef struct dt_dsgt_opts {
  double alpha;
  bool init_grads;
  int update_order;
  int local_optimizer; /* dt_local_opt_kind */
  dt_sgd_extras x;
  dt_lr_schedule schedule;
} dt_dsgt_opts;

static const dt_key keys[] = {
    {.name = "alpha", .type = DT_KEY_FLOAT, .offset = offsetof(dt_dsgt_opts, alpha), .def = "0.005", .min = 0, .max = DT_INF,
     .help = "step size"},
    {.name = "init_grads", .type = DT_KEY_BOOL, .offset = offsetof(dt_dsgt_opts, init_grads), .def = "true",
     .help = "start the tracker at the first local gradient (false: at zero)"},
    {.name = "update_order", .type = DT_KEY_ENUM, .offset = offsetof(dt_dsgt_opts, update_order), .def = "synchronous",
     .values = dt_update_orders,
     .help = "synchronous, or sequential: the seed reference's in-place sweep, x_i = sum_j W_ij (x_j - alpha y_j) with lower ids already swept"},
    {.name = "local_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_dsgt_opts, local_optimizer), .def = "sgd",
     .values = dt_local_opt_names, .flags = DT_KEY_EMIT_IF_SET,
     .help = "the step along the tracker y: sgd (x - alpha y, the default), or adam, adamw, rmsprop, adadelta, nadam fed y "
             "as their gradient"},
    DT_SGD_EXTRAS_KEYS(dt_dsgt_opts, x),
    DT_LR_SCHEDULE_KEY(dt_dsgt_opts, schedule),
    {0},
};

typedef struct dsgt_state {
  dt_dsgt_opts o;
  float alpha; /* this round's rate */
  dt_local_opt *local; /* a local optimizer other than plain SGD, stepping along y */
  dt_slab y, g;      /* tracker and last gradient of the local nodes */
  dt_slab gnew, tmp; /* scratch */
  dt_optimizer_run *run;
} dsgt_state;

static const dt_state_slot slots[] = {
    {.name = "tracker", .kind = DT_SLOT_NODE, .offset = offsetof(dsgt_state, y)},
    {.name = "last_gradient", .kind = DT_SLOT_NODE, .offset = offsetof(dsgt_state, g)},
    {.name = "gnew", .kind = DT_SLOT_NODE, .offset = offsetof(dsgt_state, gnew), .scratch = 1},
    {.name = "tmp", .kind = DT_SLOT_NODE, .offset = offsetof(dsgt_state, tmp), .scratch = 1},
    {0},
};

static void destroy(dt_optimizer_run *run, void *state) {
  (void)run;
  dt_local_opt_free(((dsgt_state *)state)->local);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  dsgt_state *s = state;
  const dt_dsgt_opts *o = opts;
  s->alpha = (float)o->alpha;
  if (!dt_local_step_plain(o->local_optimizer, &o->x)) { /* a local optimizer stepping along y */
    const dt_local_opt_spec spec = dt_local_step_spec(o->local_optimizer, o->alpha, &o->x);
    DT_TRY(dt_run_local_opt(run, "local", &spec, &s->local));
  }
  if (o->init_grads) { /* y_i = g_i = ∇f_i(x_i⁰) */
    DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->g, NULL));
    DT_TRY(dt_slab_copy(dt_run_backend(run), &s->g, &s->y));
  }
  return DT_OK;
}

/* x_i ← Σ_j W_ij (x_j − α y_j) (vector 0) and tmp_i ← Σ_j W_ij y_j (vector 1), local node l */
static float *theta_of(void *ctx, int l) { return dt_slab_node(dt_run_theta(((dsgt_state *)ctx)->run), l); }
static const float *delta_of(void *ctx, int l) { return dt_slab_node(&((dsgt_state *)ctx)->tmp, l); }
static float *y_out(void *ctx, int l) { return dt_slab_node(&((dsgt_state *)ctx)->y, l); }

/* The seed reference's order (its optimizers/dsgt.py since commit e831bf9): sweep
 * x_i ← W_ii x_i + Σ_j W_ij x_j − α Σ_j W_ij y_j over the nodes in id order (lower ids already
 * swept, the trackers all at the round start); all gradients at the new x; sweep
 * y_i ← W_ii y_i + (g⁺ − g_i) + Σ_j W_ij y_j. */
static dt_status sequential_round(dsgt_state *s, dt_optimizer_run *run) {
  DT_TRY(dt_run_send(run, 0, dt_run_theta(run)));
  DT_TRY(dt_run_send(run, 1, &s->y));
  DT_TRY(dt_run_exchange_go(run, NULL));
  DT_TRY(dt_mix_all(run, 1, &s->tmp)); /* tmp_i ← Σ_j W_ij y_j at the round-start trackers */
  const dt_sweep_io xs = {.extra = delta_of, .out = theta_of, .ctx = s};
  DT_TRY(dt_mix_sweep(run, 0, -s->alpha, &xs));
  /* g⁺ = ∇f_i(x_i) at the swept x; the tracker's correction g⁺ − g_i into tmp; g_i = g⁺ */
  DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->gnew, NULL));
  DT_TRY(dt_slab_axpby(dt_run_backend(run), 1.0f, &s->gnew, -1.0f, &s->g, &s->tmp));
  DT_TRY(dt_slab_copy(dt_run_backend(run), &s->gnew, &s->g));
  const dt_sweep_io ys = {.extra = delta_of, .out = y_out, .ctx = s};
  return dt_mix_sweep(run, 1, 1.0f, &ys);
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  dsgt_state *s = p;
  s->alpha = (float)dt_run_rate(run, &s->o.schedule, s->o.alpha, 0, k, 1);
  if (s->o.update_order == DT_ORDER_SEQUENTIAL) return sequential_round(s, run);
  /* send x_j − α y_j (vector 0; a local optimizer's step along y) and y_j (vector 1): both
   * mixes need only these */
  dt_slab v0 = dt_exchange_send_slab(dt_run_the_exchange(run), 0);
  if (s->local != NULL) {
    DT_TRY(dt_slab_copy(dt_run_backend(run), dt_run_theta(run), &v0));
    DT_TRY(dt_local_opt_step_all(s->local, &v0, &s->y, s->alpha));
  } else {
    DT_TRY(dt_slab_axpby(dt_run_backend(run), 1.0f, dt_run_theta(run), -s->alpha, &s->y, &v0));
  }
  DT_TRY(dt_run_send(run, 1, &s->y));
  DT_TRY(dt_run_exchange_go(run, NULL));
  DT_TRY(dt_mix_all(run, 0, dt_run_theta(run)));
  DT_TRY(dt_mix_all(run, 1, &s->tmp));
  /* g⁺ = ∇f_i(x_i); y_i ← Σ_j W_ij y_j + g⁺ − g_i; g_i = g⁺ */
  DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->gnew, NULL));
  DT_TRY(dt_slab_axpby(dt_run_backend(run), 1.0f, &s->tmp, 1.0f, &s->gnew, &s->y));
  DT_TRY(dt_slab_axpby(dt_run_backend(run), 1.0f, &s->y, -1.0f, &s->g, &s->y));
  return dt_slab_copy(dt_run_backend(run), &s->gnew, &s->g);
}

static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  if (((const dt_dsgt_opts *)opts)->update_order == DT_ORDER_SEQUENTIAL) /* round start + two sweeps of (x, y) */
    return 2.0 * 2.0 * g->num_edges * (double)dim * sizeof(float) + 2.0 * dt_mix_sweep_bytes(g, dim, 2);
  return 2.0 * 2.0 * g->num_edges * (double)dim * sizeof(float); /* x − αy and y */
}

static double gradient_step(const void *opts) {
  const dt_dsgt_opts *o = opts;
  return dt_local_step_stable(o->alpha, o->local_optimizer, &o->x);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_dsgt_opts *o = opts;
  if (!dt_local_step_sequential_ok(o->update_order == DT_ORDER_SEQUENTIAL, o->local_optimizer, &o->x, err, err_size))
    return 0;
  return dt_local_step_check(&o->schedule, 0, o->local_optimizer, &o->x, rounds, err, err_size);
}

static int accepts(const void *opts, const dt_run_env *env, dt_refusal *why) {
  return dt_mix_sequential_accepts("dsgt", ((const dt_dsgt_opts *)opts)->update_order == DT_ORDER_SEQUENTIAL, env, why);
}

/* Beyond the slots, per node: the local optimizer's moments (none for plain SGD); per rank, a
 * sequential sweep's scratch vector while it runs. */
static dt_state_size state_extra(const void *opts, size_t dim) {
  const dt_dsgt_opts *o = opts;
  (void)dim;
  return (dt_state_size){.per_node = dt_local_opt_state_vectors((dt_local_opt_kind)o->local_optimizer, (float)o->x.momentum),
                         .per_rank = o->update_order == DT_ORDER_SEQUENTIAL ? 1 : 0};
}

const dt_optimizer_def dt_optimizer_dsgt = {
    .plugin =
        {
            .name = "dsgt",
            .summary = "decentralized stochastic gradient tracking",
            .keys = keys,
            .opts_size = sizeof(dt_dsgt_opts),
            .finalize = finalize,
        },
    DT_STATE(dsgt_state, o, run),
    .slots = slots,
    .exchange_vectors = 2,
    .create = create,
    .destroy = destroy,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .traffic_per_edge = 1,
    .gradient_step = gradient_step,
    .runs_on = DT_RUNS_TIME_VARYING,
    .on_missing = DT_MISSING_RENORMALISE,
    .accepts = accepts,
    .state_extra = state_extra,
};
