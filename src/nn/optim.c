/* Local optimizers (see dt/optim.h): state vectors and the step count; the fused update loops
 * are backend ops. */
#include "dt/optim.h"

#include <string.h>

#include "../backend/backend.h"

struct dt_optim {
  dt_optim_spec spec;
  size_t n;
  float *m, *v; /* Adam moments, or m = SGD momentum buffer */
  long step;
  const dt_backend_ops *ops;
};

static const char *const names[DT_OPTIM_KIND_COUNT] = {"sgd", "adam", "adamw"};

const char *dt_optim_kind_name(dt_optim_kind k) {
  return (unsigned)k < DT_OPTIM_KIND_COUNT ? names[k] : "unknown";
}

dt_optim_spec dt_optim_spec_default(dt_optim_kind kind) {
  dt_optim_spec s = {.kind = kind, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
  if (kind == DT_OPTIM_SGD) s.lr = 1e-2f;
  if (kind == DT_OPTIM_ADAMW) s.weight_decay = 1e-2f;
  return s;
}

dt_status dt_optim_create(const dt_optim_spec *spec, size_t n, dt_optim **out) {
  dt_status st = DT_OK;
  dt_optim *o = NULL;
  *out = NULL;
  DT_CHECK((unsigned)spec->kind < DT_OPTIM_KIND_COUNT, DT_ERR_CONFIG, "unknown optimizer %d", (int)spec->kind);
  DT_ALLOC_GOTO(o, 1, "optimizer");
  o->spec = *spec;
  o->n = n;
  o->ops = &dt_backend_cpu;
  if (spec->kind != DT_OPTIM_SGD || spec->momentum != 0.0f) DT_ALLOC_GOTO(o->m, n, "optimizer state");
  if (spec->kind != DT_OPTIM_SGD) DT_ALLOC_GOTO(o->v, n, "optimizer state");
  *out = o;
  o = NULL;
cleanup:
  dt_optim_free(o);
  return st;
}

void dt_optim_free(dt_optim *o) {
  if (o == NULL) return;
  dt_free(o->m);
  dt_free(o->v);
  dt_free(o);
}

void dt_optim_reset(dt_optim *o) {
  if (o->m != NULL) memset(o->m, 0, sizeof(float) * o->n);
  if (o->v != NULL) memset(o->v, 0, sizeof(float) * o->n);
  o->step = 0;
}

long dt_optim_steps(const dt_optim *o) { return o->step; }

void dt_optim_step(dt_optim *o, float *params, const float *grad, float lr,
                   const dt_grad_extra *extra) {
  const dt_optim_spec *s = &o->spec;
  const float rate = lr >= 0.0f ? lr : s->lr;
  const float ea = extra != NULL ? extra->alpha : 0.0f;
  const float *eb = extra != NULL ? extra->b : NULL;
  o->step++;
  if (s->kind == DT_OPTIM_SGD)
    o->ops->sgd_step(o->n, params, grad, o->m, o->step == 1, rate, s->momentum, s->dampening,
                     s->nesterov, s->weight_decay, ea, eb);
  else
    o->ops->adam_step(o->n, params, grad, o->m, o->v, o->step, rate, s->beta1, s->beta2, s->eps,
                      s->weight_decay, s->kind == DT_OPTIM_ADAMW, ea, eb);
}
