/* The round EXTRA, NIDS and D² share (exact.h). Per local node i, round k, with x = x_i^k,
 * x⁻ = x_i^{k−1} and d⁻ = d_i^{k−1} kept from the previous round (x⁻ = x⁰ and d⁻ = 0 before the
 * first):
 *   1. g = ∇f_i(x) on one minibatch; d = α_k g, or x − step(x, g) for another local optimizer;
 *   2. EXTRA: u = x (round 0) or x − x⁻/2; exchange u; x⁺ = Σ_j W_ij u_j − d + d⁻ (round 0) or
 *      Σ_j W_ij u_j + u − d + d⁻, which is (I + W) x − ½ (I + W) x⁻ − (d − d⁻);
 *      NIDS, D²: v = 2x − x⁻ − d + d⁻ (= x⁰ − d⁰ in round 0); exchange v;
 *      x⁺ = (1 − c) v + c Σ_j W_ij v_j (D²: c = 1);
 *   3. x⁻ ← x, d⁻ ← d, x ← x⁺. */

#include <stdio.h>
#include <string.h>

#include "exact.h"
#include "mix.h"

typedef struct exact_state {
  dt_exact_opts o;
  dt_exact_form form;
  dt_local_opt *local; /* a local optimizer other than plain SGD */
  dt_slab prev, dprev; /* x⁻ and d⁻ (kept in checkpoints) */
  dt_slab grad, d, mixed; /* scratch */
  dt_optimizer_run *run;
} exact_state;

void dt_exact_destroy(void *p) {
  exact_state *s = p;
  if (s == NULL) return;
  dt_slab_free(s->run->be, &s->prev);
  dt_slab_free(s->run->be, &s->dprev);
  dt_slab_free(s->run->be, &s->grad);
  dt_slab_free(s->run->be, &s->d);
  dt_slab_free(s->run->be, &s->mixed);
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
  DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, &s->prev));
  DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, &s->dprev));
  DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, &s->grad));
  DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, &s->d));
  DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, &s->mixed));
  DT_TRY_GOTO(dt_slab_copy(run->be, &run->theta, &s->prev)); /* x⁻ = x⁰, d⁻ = 0 */
  DT_TRY_GOTO(dt_slab_fill(run->be, &s->dprev, 0.0f));
  DT_TRY_GOTO(dt_run_keep_slab(run, "previous_theta", &s->prev));
  DT_TRY_GOTO(dt_run_keep_slab(run, "previous_step", &s->dprev));
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
    DT_TRY(dt_slab_copy(be, &run->theta, &s->mixed));
    DT_TRY(dt_local_opt_step_all(s->local, &s->mixed, &s->grad, a));
    DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, -1.0f, &s->mixed, &s->d));
  } else {
    DT_TRY(dt_slab_axpby(be, a, &s->grad, 0.0f, &s->grad, &s->d));
  }
  /* 2. the vector each node sends, straight into its send buffer */
  dt_slab v = dt_exchange_send_slab(run->exchange, 0);
  if (s->form == DT_EXACT_EXTRA) {
    if (k == 0) DT_TRY(dt_slab_copy(be, &run->theta, &v));                     /* u = x⁰ */
    else DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, -0.5f, &s->prev, &v)); /* u = x − x⁻/2 */
  } else {                                                                    /* v = 2x − x⁻ − d + d⁻ */
    DT_TRY(dt_slab_axpby(be, 2.0f, &run->theta, -1.0f, &s->prev, &v));
    DT_TRY(dt_slab_axpby(be, 1.0f, &v, -1.0f, &s->d, &v));
    DT_TRY(dt_slab_axpby(be, 1.0f, &v, 1.0f, &s->dprev, &v));
  }
  DT_TRY(dt_run_exchange_go(run, NULL));
  DT_TRY(dt_mix_all(run, 0, &s->mixed)); /* mixed_i = Σ_j W_ij v_j */
  /* 3. x⁻ ← x, then x ← x⁺, d⁻ ← d */
  DT_TRY(dt_slab_copy(be, &run->theta, &s->prev));
  if (s->form == DT_EXACT_EXTRA) {
    if (k == 0) DT_TRY(dt_slab_copy(be, &s->mixed, &run->theta));
    else DT_TRY(dt_slab_axpby(be, 1.0f, &s->mixed, 1.0f, &v, &run->theta));
    DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, -1.0f, &s->d, &run->theta));
    DT_TRY(dt_slab_axpby(be, 1.0f, &run->theta, 1.0f, &s->dprev, &run->theta));
  } else if (s->o.c == 1.0) {
    DT_TRY(dt_slab_copy(be, &s->mixed, &run->theta));
  } else {
    DT_TRY(dt_slab_axpby(be, (float)(1.0 - s->o.c), &v, (float)s->o.c, &s->mixed, &run->theta));
  }
  return dt_slab_copy(be, &s->d, &s->dprev);
}

double dt_exact_gradient_step(const void *opts) {
  const dt_exact_opts *o = opts;
  return dt_local_step_stable(o->alpha, o->local_optimizer, &o->x);
}

/* Per node: prev, dprev, grad, d and mixed, the local optimizer's moments (none for plain SGD) and
 * the exchange's send vector. */
dt_state_size dt_exact_state_size(const void *opts, size_t dim) {
  const dt_exact_opts *o = opts;
  (void)dim;
  return (dt_state_size){.per_node = 6 + dt_local_opt_state_vectors((dt_local_opt_kind)o->local_optimizer, (float)o->x.momentum)};
}

int dt_exact_finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_exact_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, o->local_optimizer, &o->x, rounds, err, err_size);
}

int dt_exact_mixing_ok(const char *name, double c, const dt_graph *g, char *err, size_t err_size) {
  const double low = 1.0 - c * (1.0 - g->lambda_min); /* W̃'s smallest eigenvalue */
  if (low > -1.0 / 3.0 + 1e-9) return 1;
  const double cmax = (4.0 / 3.0) / (1.0 - g->lambda_min);
  if (strcmp(name, "d2") == 0)
    snprintf(err, err_size,
             "d2 needs the mixing matrix's smallest eigenvalue above -1/3, and this graph's W has %.6g (D2 diverges on "
             "it); use nids, whose c = 0.5 converges on every symmetric doubly stochastic W (any c < %.6g here)",
             g->lambda_min, cmax);
  else
    snprintf(err, err_size,
             "%s mixes with W~ = I - c (I - W), whose smallest eigenvalue with c = %g is %.6g on this graph (W's: %.6g); "
             "at or below -1/3 the recursion diverges: use c < %.6g (0.5 converges on every symmetric doubly "
             "stochastic W)",
             name, c, low, g->lambda_min, cmax);
  return 0;
}
