/* Local optimizers (see dt/local_opt.h): state slabs, per-node step counts, and each step's
 * coefficients, computed once here for every backend; the per-element update is dt/formulas.h's,
 * run by the backend's fused local_step op. */
#include "dt/local_opt.h"

#include <math.h>
#include <string.h>

struct dt_local_opt {
  dt_local_opt_spec spec;
  dt_backend *be;
  int count;
  size_t dim;
  dt_slab m, v; /* Adam moments, or m = SGD momentum buffer; empty when unused */
  long *step;   /* [count] */
  /* NAdam: Π_t = μ_1⋯μ_t of each node and the t it belongs to; a product whose t is not the
   * step before (a checkpoint restored the counts, or the slab path stepped every node through
   * node 0) is recomputed from the count, so it is never state of its own */
  double *mu_prod;
  long *mu_prod_at;
};

const char *const dt_local_opt_names[DT_LOCAL_KIND_COUNT + 1] = {"sgd", "adam", "adamw", "rmsprop", "adadelta", "nadam", NULL};

const char *dt_local_opt_kind_name(dt_local_opt_kind k) {
  return (unsigned)k < DT_LOCAL_KIND_COUNT ? dt_local_opt_names[k] : "unknown";
}

dt_local_opt_spec dt_local_opt_spec_default(dt_local_opt_kind kind) {
  dt_local_opt_spec s = {.kind = kind, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .alpha = 0.99f, .rho = 0.9f,
                         .momentum_decay = 4e-3f};
  if (kind == DT_LOCAL_SGD || kind == DT_LOCAL_RMSPROP) s.lr = 1e-2f;
  if (kind == DT_LOCAL_ADAMW) s.weight_decay = 1e-2f;
  if (kind == DT_LOCAL_ADADELTA) s.lr = 1.0f, s.eps = 1e-6f;
  if (kind == DT_LOCAL_NADAM) s.lr = 2e-3f;
  return s;
}

/* The moment buffers a kind keeps: m (SGD and RMSprop only as a momentum buffer) and v. */
static int has_m(dt_local_opt_kind kind, float momentum) {
  return !(kind == DT_LOCAL_SGD || kind == DT_LOCAL_RMSPROP) || momentum != 0.0f;
}
static int has_v(dt_local_opt_kind kind) { return kind != DT_LOCAL_SGD; }

dt_status dt_local_opt_create(dt_backend *be, const dt_local_opt_spec *spec, int count, size_t dim, dt_local_opt **out) {
  dt_status st = DT_OK;
  dt_local_opt *o = NULL;
  *out = NULL;
  DT_CHECK((unsigned)spec->kind < DT_LOCAL_KIND_COUNT, DT_ERR_CONFIG, "unknown local optimizer %d", (int)spec->kind);
  DT_ALLOC_GOTO(o, 1, "local optimizer");
  o->spec = *spec;
  o->be = be;
  o->count = count;
  o->dim = dim;
  DT_ALLOC_GOTO(o->step, count, "local optimizer");
  if (spec->kind == DT_LOCAL_NADAM) {
    DT_ALLOC_GOTO(o->mu_prod, count, "local optimizer");
    DT_ALLOC_GOTO(o->mu_prod_at, count, "local optimizer");
    for (int l = 0; l < count; l++) o->mu_prod_at[l] = -1;
  }
  if (has_m(spec->kind, spec->momentum)) DT_TRY_GOTO(dt_slab_create(be, count, dim, &o->m));
  if (has_v(spec->kind)) DT_TRY_GOTO(dt_slab_create(be, count, dim, &o->v));
  *out = o;
  o = NULL;
cleanup:
  dt_local_opt_free(o);
  return st;
}

void dt_local_opt_free(dt_local_opt *o) {
  if (o == NULL) return;
  dt_slab_free(o->be, &o->m);
  dt_slab_free(o->be, &o->v);
  dt_free(o->step);
  dt_free(o->mu_prod);
  dt_free(o->mu_prod_at);
  dt_free(o);
}

dt_status dt_local_opt_reset(dt_local_opt *o) {
  if (o->m.data != NULL) DT_TRY(dt_slab_fill(o->be, &o->m, 0.0f));
  if (o->v.data != NULL) DT_TRY(dt_slab_fill(o->be, &o->v, 0.0f));
  memset(o->step, 0, sizeof(long) * (size_t)o->count);
  for (int l = 0; o->mu_prod_at != NULL && l < o->count; l++) o->mu_prod_at[l] = -1;
  return DT_OK;
}

long dt_local_opt_steps(const dt_local_opt *o, int l) { return o->step[l]; }

void dt_local_opt_state(dt_local_opt *o, dt_slab **m, dt_slab **v, long **steps) {
  *m = &o->m;
  *v = &o->v;
  *steps = o->step;
}

/* NAdam's μ_t = β1(1 − ½·0.96^(tψ)) */
static double nadam_mu(const dt_local_opt_spec *s, long t) {
  return s->beta1 * (1.0 - 0.5 * pow(0.96, (double)t * s->momentum_decay));
}

/* Π_step of node l, from the product at step - 1 when it is there. */
static double nadam_product(dt_local_opt *o, int l, long step) {
  if (o->mu_prod_at[l] != step - 1) {
    o->mu_prod[l] = 1.0;
    for (long t = 1; t < step; t++) o->mu_prod[l] *= nadam_mu(&o->spec, t);
  }
  o->mu_prod[l] *= nadam_mu(&o->spec, step);
  o->mu_prod_at[l] = step;
  return o->mu_prod[l];
}

/* The step's coefficients for step number `step` (1-based) at rate lr: everything of
 * dt/formulas.h's update that does not depend on the element, computed once here for every
 * backend. */
static dt_step make_step(dt_local_opt *o, int l, long step, float lr, float extra_alpha) {
  const dt_local_opt_spec *s = &o->spec;
  dt_step st = {.extra_alpha = extra_alpha};
  switch (s->kind) {
    case DT_LOCAL_SGD:
      st.kind = DT_STEP_sgd;
      st.c.sgd = (dt_sgd_coef){.lr = lr, .momentum = s->momentum, .dampening = s->dampening, .wd = s->weight_decay,
                               .first = step == 1, .nesterov = s->nesterov};
      break;
    case DT_LOCAL_RMSPROP:
      st.kind = DT_STEP_rmsprop;
      st.c.rmsprop = (dt_rmsprop_coef){.lr = lr, .alpha = s->alpha, .one_a = 1.0f - s->alpha, .eps = s->eps,
                                       .wd = s->weight_decay, .momentum = s->momentum};
      break;
    case DT_LOCAL_ADADELTA:
      st.kind = DT_STEP_adadelta;
      st.c.adadelta = (dt_adadelta_coef){.lr = lr, .rho = s->rho, .one_r = 1.0f - s->rho, .eps = s->eps,
                                         .wd = s->weight_decay};
      break;
    case DT_LOCAL_NADAM: {
      const double mu = nadam_mu(s, step), mu_next = nadam_mu(s, step + 1), prod = nadam_product(o, l, step);
      st.kind = DT_STEP_nadam;
      st.c.nadam = (dt_nadam_coef){.c_grad = (float)(lr * (1.0 - mu) / (1.0 - prod)),
                                   .c_m = (float)(lr * mu_next / (1.0 - prod * mu_next)),
                                   .inv_bc2_sqrt = (float)(1.0 / sqrt(1.0 - pow((double)s->beta2, (double)step))),
                                   .beta1 = s->beta1, .beta2 = s->beta2, .one_b1 = 1.0f - s->beta1,
                                   .one_b2 = 1.0f - s->beta2, .eps = s->eps, .wd = s->weight_decay};
      break;
    }
    default: { /* Adam and AdamW, as torch.optim (1.13, single-tensor path) */
      const int decoupled = s->kind == DT_LOCAL_ADAMW;
      const double bc1 = 1.0 - pow((double)s->beta1, (double)step), bc2 = 1.0 - pow((double)s->beta2, (double)step);
      st.kind = DT_STEP_adam;
      st.c.adam = (dt_adam_coef){.step_size = (float)(lr / bc1), .inv_bc2_sqrt = (float)(1.0 / sqrt(bc2)),
                                 .decay = decoupled ? 1.0f - lr * s->weight_decay : 1.0f,
                                 .l2 = decoupled ? 0.0f : s->weight_decay, .beta1 = s->beta1, .beta2 = s->beta2,
                                 .one_b1 = 1.0f - s->beta1, .one_b2 = 1.0f - s->beta2, .eps = s->eps};
      break;
    }
  }
  return st;
}

/* n floats of node l's state starting at its row (n = dim, or a whole slab's span from node 0) */
static dt_status step_span(dt_local_opt *o, int l, size_t n, float *params, const float *grad, float lr,
                           const dt_grad_extra *extra) {
  const float rate = lr >= 0.0f ? lr : o->spec.lr;
  const dt_step st = make_step(o, l, o->step[l], rate, extra != NULL ? extra->alpha : 0.0f);
  float *m = o->m.data != NULL ? dt_slab_node(&o->m, l) : NULL, *v = o->v.data != NULL ? dt_slab_node(&o->v, l) : NULL;
  return dt_be_local_step(o->be, n, &st, params, grad, m, v, extra != NULL ? extra->b : NULL);
}

dt_status dt_local_opt_step(dt_local_opt *o, int l, float *params, const float *grad, float lr, const dt_grad_extra *extra) {
  o->step[l]++;
  return step_span(o, l, o->dim, params, grad, lr, extra);
}

dt_status dt_local_opt_step_all(dt_local_opt *o, dt_slab *params, const dt_slab *grad, float lr) {
  DT_ASSERT(params->count == o->count && grad->count == o->count);
  int uniform = params->stride == grad->stride && params->stride == dt_slab_stride(o->dim);
  for (int l = 1; l < o->count && uniform; l++) uniform = o->step[l] == o->step[0];
  if (!uniform) {
    for (int l = 0; l < o->count; l++) DT_TRY(dt_local_opt_step(o, l, dt_slab_node(params, l), dt_slab_node(grad, l), lr, NULL));
    return DT_OK;
  }
  /* one fused op over every node (the padding between nodes is zero and stays zero) */
  for (int l = 0; l < o->count; l++) o->step[l]++;
  if (o->count == 0) return DT_OK;
  return step_span(o, 0, (size_t)(o->count - 1) * params->stride + o->dim, params->data, grad->data, lr, NULL);
}

dt_status dt_local_opt_step_all_extra(dt_local_opt *o, dt_slab *params, const dt_slab *grad, float lr, const float *extra_alpha,
                                      const dt_slab *extra_b) {
  DT_ASSERT(params->count == o->count && grad->count == o->count && (extra_b == NULL || extra_b->count == o->count));
  DT_ASSERT(o->m.data == NULL || o->v.data == NULL || o->m.stride == o->v.stride);
  if (o->count == 0) return DT_OK;
  dt_step *st = dt_calloc_((size_t)o->count, sizeof(dt_step));
  if (st == NULL) return DT_ERROR(DT_ERR_MEMORY, "out of memory for %d local steps", o->count);
  const float rate = lr >= 0.0f ? lr : o->spec.lr;
  for (int l = 0; l < o->count; l++) { /* each node's coefficients, as dt_local_opt_step makes them */
    o->step[l]++;
    st[l] = make_step(o, l, o->step[l], rate, extra_alpha != NULL ? extra_alpha[l] : 0.0f);
  }
  const dt_slab *mv = o->m.data != NULL ? &o->m : &o->v;
  const dt_status s = dt_be_local_step_rows(o->be, o->dim, o->count, st, params->data, params->stride, grad->data, grad->stride,
                                            o->m.data, o->v.data, mv->stride, extra_b != NULL ? extra_b->data : NULL,
                                            extra_b != NULL ? extra_b->stride : 0);
  dt_free(st);
  return s;
}

int dt_local_opt_state_vectors(dt_local_opt_kind kind, float momentum) { return has_m(kind, momentum) + has_v(kind); }
