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

typedef struct exact_state {
  dt_exact_opts o;
  dt_exact_form form;
  dt_local_opt *local; /* a local optimizer other than plain SGD */
  dt_slab dual, dual_lo; /* y or s, and its Kahan compensation (kept in checkpoints) */
  dt_slab grad, d, lap;  /* scratch */
  dt_mix_laplacian *laplacian;
  dt_optimizer_run *run;
} exact_state;

void dt_exact_destroy(void *p) {
  exact_state *s = p;
  if (s == NULL) return;
  dt_slab *slabs[] = {&s->dual, &s->dual_lo, &s->grad, &s->d, &s->lap};
  for (size_t t = 0; t < sizeof slabs / sizeof *slabs; t++) dt_slab_free(s->run->be, slabs[t]);
  dt_mix_laplacian_free(s->laplacian);
  dt_local_opt_free(s->local);
  dt_free(s);
}

dt_status dt_exact_create(dt_optimizer_run *run, const dt_exact_opts *o, dt_exact_form form, void **out) {
  dt_status st = DT_OK;
  exact_state *s = NULL;
  dt_exchange *ex;
  DT_ALLOC_GOTO(s, 1, "exact method");
  s->run = run;
  s->o = *o;
  s->form = form;
  dt_slab *slabs[] = {&s->dual, &s->dual_lo, &s->grad, &s->d, &s->lap};
  for (size_t t = 0; t < sizeof slabs / sizeof *slabs; t++) DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, slabs[t]));
  DT_TRY_GOTO(dt_mix_laplacian_create(run, &s->laplacian));
  DT_TRY_GOTO(dt_run_keep_slab(run, "dual", &s->dual)); /* zero: the first round is the papers' x¹ */
  DT_TRY_GOTO(dt_run_keep_slab(run, "dual_compensation", &s->dual_lo));
  if (!dt_local_step_plain(o->local_optimizer, &o->x)) {
    const dt_local_opt_spec spec = dt_local_step_spec(o->local_optimizer, o->alpha, &o->x);
    DT_TRY_GOTO(dt_run_local_opt(run, "local", &spec, &s->local));
  }
  DT_TRY_GOTO(dt_run_exchange(run, 1, &ex));
  *out = s;
  s = NULL;
cleanup:
  dt_exact_destroy(s);
  return st;
}

dt_status dt_exact_round(void *p, dt_optimizer_run *run, int k) {
  exact_state *s = p;
  dt_backend *be = run->be;
  const float a = (float)dt_run_rate(run, &s->o.schedule, s->o.alpha, s->o.mu, k, 1);
  /* 1. g = ∇f_i(x); d = α g, or the local optimizer's displacement x − step(x, g) */
  DT_TRY(dt_run_gradients(run, &run->theta, &s->grad, NULL));
  if (s->local != NULL) {
    DT_TRY(dt_slab_copy(be, &run->theta, &s->lap));
    DT_TRY(dt_local_opt_step_all(s->local, &s->lap, &s->grad, a));
    DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, -1.0f, &s->lap, &s->d));
  } else {
    DT_TRY(dt_slab_axpby(be, a, &s->grad, 0.0f, &s->grad, &s->d));
  }
  /* 2. the vector each node sends, straight into its send buffer: x (EXTRA) or v = x − d − s */
  dt_slab v = dt_exchange_send_slab(run->exchange, 0);
  if (s->form == DT_EXACT_EXTRA) {
    DT_TRY(dt_slab_copy(be, &run->theta, &v));
  } else {
    DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, -1.0f, &s->d, &v));
    DT_TRY(dt_slab_axpby(be, 1.0f, &v, -1.0f, &s->dual, &v));
  }
  DT_TRY(dt_run_exchange_go(run, NULL));
  DT_TRY(dt_mix_laplacian_all(s->laplacian, 0, &s->lap)); /* lap_i = L(sent)_i */
  if (s->form == DT_EXACT_EXTRA) { /* x⁺ = x − L(x) − d − y;  y += ½ L(x) */
    DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, -1.0f, &s->lap, &run->theta));
    DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, -1.0f, &s->d, &run->theta));
    DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, -1.0f, &s->dual, &run->theta));
    return dt_slab_add_compensated(be, 0.5f, &s->lap, &s->dual, &s->dual_lo);
  }
  /* x⁺ = v − c L(v);  s += c L(v) */
  const float c = (float)s->o.c;
  DT_TRY(dt_slab_axpby(be, 1.0f, &v, -c, &s->lap, &run->theta));
  return dt_slab_add_compensated(be, c, &s->lap, &s->dual, &s->dual_lo);
}

double dt_exact_gradient_step(const void *opts) {
  const dt_exact_opts *o = opts;
  return dt_local_step_stable(o->alpha, o->local_optimizer, &o->x);
}

/* Per node: the dual and its compensation, grad, d and lap, the local optimizer's moments (none
 * for plain SGD) and the exchange's send vector; per out-edge: its difference. */
dt_state_size dt_exact_state_size(const void *opts, size_t dim) {
  const dt_exact_opts *o = opts;
  (void)dim;
  return (dt_state_size){.per_node = 6 + dt_local_opt_state_vectors((dt_local_opt_kind)o->local_optimizer, (float)o->x.momentum),
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
