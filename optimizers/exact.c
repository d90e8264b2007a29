/* The round EXTRA, NIDS and D² share (exact.h), in primal–dual form: the paper's two-step
 * recursions carry x^{k−1} and d^{k−1} forward, so in float32 every round's rounding enters the
 * quantity they conserve (Σ_i of the implicit dual) and stays there, and the iterates walk away
 * from the optimum like a random walk (issue 61: EXTRA's gap 1.8e-6 after 4,000 rounds, 2.7e-5
 * after 16,000). Here the dual is a vector of its own, grown by the graph Laplacian of exchanged
 * values formed from per-edge differences (dt_mix_laplacian_all: the two ends of an edge add
 * exactly opposite terms) and kept by compensated (Kahan) summation, so what Σ_i y_i gains per
 * round is rounding of the differences, which vanishes as the nodes agree.
 *
 * Per local node i, round k, with L(u)_i = Σ_j W_ij (u_i − u_j) = ((I − W) u)_i over this round's
 * terms, and the dual y (EXTRA) or s (NIDS, D²) zero before round 0:
 *   1. g = ∇f_i(x) on one minibatch; d = α_k g, or x − step(x, g) for another local optimizer;
 *   2. EXTRA: exchange x; x⁺ = x − L(x) − d − y;  y ← y + ½ L(x)
 *      NIDS, D²: v = x − d − s; exchange v; x⁺ = v − c L(v);  s ← s + c L(v)   (D²: c = 1)
 * which are the papers' x⁺ = (I + W) x − ½ (I + W) x⁻ − (d − d⁻) and x⁺ = W̃ (2x − x⁻ − d + d⁻)
 * with y = ½ Σ_{t<k} L(x^t) and s = c Σ_{t<k} L(v^t) (README.md of each plug-in). */

#include <stdio.h>
#include <string.h>

#include "exact.h"
#include "mix.h"

static dt_local_opt_spec local_spec(const void *opts) {
  const dt_exact_opts *o = opts;
  return dt_local_step_spec(o->local_optimizer, o->alpha, &o->x);
}
static int not_plain(const void *opts) {
  const dt_exact_opts *o = opts;
  return !dt_local_step_plain(o->local_optimizer, &o->x);
}

const dt_state_slot dt_exact_slots[] = {
    {.name = "dual", .kind = DT_SLOT_NODE, .offset = offsetof(dt_exact_state, dual)}, /* zero: the first round is the papers' x¹ */
    {.name = "dual_compensation", .kind = DT_SLOT_NODE, .offset = offsetof(dt_exact_state, dual_lo)},
    {.name = "grad", .kind = DT_SLOT_NODE, .offset = offsetof(dt_exact_state, grad), .scratch = 1},
    {.name = "d", .kind = DT_SLOT_NODE, .offset = offsetof(dt_exact_state, d), .scratch = 1},
    {.name = "lap", .kind = DT_SLOT_NODE, .offset = offsetof(dt_exact_state, lap), .scratch = 1},
    {0},
};

void dt_exact_destroy(dt_optimizer_run *run, void *state) {
  dt_exact_state *s = state;
  (void)run;
  dt_mix_laplacian_free(s->laplacian);
  dt_local_opt_free(s->local);
}

dt_status dt_exact_create(dt_optimizer_run *run, const dt_exact_opts *o, dt_exact_form form, void *state) {
  dt_exact_state *s = state;
  s->run = run;
  s->o = *o;
  s->form = form;
  DT_TRY(dt_mix_laplacian_create(run, &s->laplacian));
  if (!not_plain(o)) return DT_OK;
  const dt_local_opt_spec spec = local_spec(o);
  return dt_run_local_opt(run, "local", &spec, &s->local);
}

dt_status dt_exact_round(void *p, dt_optimizer_run *run, int k) {
  dt_exact_state *s = p;
  dt_backend *be = dt_run_backend(run);
  const float a = (float)dt_run_rate(run, &s->o.schedule, s->o.alpha, s->o.mu, k, 1);
  /* 1. g = ∇f_i(x); d = α g, or the local optimizer's displacement x − step(x, g) */
  DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->grad, NULL));
  if (s->local != NULL) {
    DT_TRY(dt_slab_copy(be, dt_run_theta(run), &s->lap));
    DT_TRY(dt_local_opt_step_all(s->local, &s->lap, &s->grad, a));
    DT_TRY(dt_slab_axpby(be, 1.0f, dt_run_theta(run), -1.0f, &s->lap, &s->d));
  } else {
    DT_TRY(dt_slab_axpby(be, a, &s->grad, 0.0f, &s->grad, &s->d));
  }
  /* 2. the vector each node sends, straight into its send buffer: x (EXTRA) or v = x − d − s */
  dt_slab v = dt_exchange_send_slab(dt_run_the_exchange(run), 0);
  if (s->form == DT_EXACT_EXTRA) {
    DT_TRY(dt_slab_copy(be, dt_run_theta(run), &v));
  } else {
    DT_TRY(dt_slab_axpby(be, 1.0f, dt_run_theta(run), -1.0f, &s->d, &v));
    DT_TRY(dt_slab_axpby(be, 1.0f, &v, -1.0f, &s->dual, &v));
  }
  DT_TRY(dt_run_exchange_go(run, NULL));
  DT_TRY(dt_mix_laplacian_all(s->laplacian, 0, &s->lap)); /* lap_i = L(sent)_i */
  if (s->form == DT_EXACT_EXTRA) { /* x⁺ = x − L(x) − d − y;  y += ½ L(x) */
    DT_TRY(dt_slab_axpby(be, 1.0f, dt_run_theta(run), -1.0f, &s->lap, dt_run_theta(run)));
    DT_TRY(dt_slab_axpby(be, 1.0f, dt_run_theta(run), -1.0f, &s->d, dt_run_theta(run)));
    DT_TRY(dt_slab_axpby(be, 1.0f, dt_run_theta(run), -1.0f, &s->dual, dt_run_theta(run)));
    return dt_slab_add_compensated(be, 0.5f, &s->lap, &s->dual, &s->dual_lo);
  }
  /* x⁺ = v − c L(v);  s += c L(v) */
  const float c = (float)s->o.c;
  DT_TRY(dt_slab_axpby(be, 1.0f, &v, -c, &s->lap, dt_run_theta(run)));
  return dt_slab_add_compensated(be, c, &s->lap, &s->dual, &s->dual_lo);
}

double dt_exact_gradient_step(const void *opts) {
  const dt_exact_opts *o = opts;
  return dt_local_step_stable(o->alpha, o->local_optimizer, &o->x);
}

/* Beyond the slots and the exchange: the local optimizer's moments per node (none for plain SGD);
 * per out-edge, the Laplacian's difference. */
dt_state_size dt_exact_state_extra(const void *opts, size_t dim) {
  const dt_exact_opts *o = opts;
  (void)dim;
  return (dt_state_size){.per_node = dt_local_opt_state_vectors((dt_local_opt_kind)o->local_optimizer, (float)o->x.momentum),
                         .per_edge = dt_mix_laplacian_per_edge()};
}

int dt_exact_finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_exact_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, o->local_optimizer, &o->x, rounds, err, err_size);
}

int dt_exact_mixing_ok(const char *name, double c, const dt_graph *g, dt_refusal *why) {
  const double low = 1.0 - c * (1.0 - g->lambda_min); /* W̃'s smallest eigenvalue */
  if (low > -1.0 / 3.0 + 1e-9) return 1;
  const double cmax = (4.0 / 3.0) / (1.0 - g->lambda_min);
  if (strcmp(name, "d2") == 0)
    return dt_refuse(why, NULL,
             "d2 needs the mixing matrix's smallest eigenvalue above -1/3, and this graph's W has %.6g (D2 diverges on "
             "it); use nids, whose c = 0.5 converges on every symmetric doubly stochastic W (any c < %.6g here)",
             g->lambda_min, cmax);
  return dt_refuse(why, "c",
             "%s mixes with W~ = I - c (I - W), whose smallest eigenvalue with c = %g is %.6g on this graph (W's: %.6g); "
             "at or below -1/3 the recursion diverges: use c < %.6g (0.5 converges on every symmetric doubly "
             "stochastic W)",
             name, c, low, g->lambda_min, cmax);
}
