/* Local optimizers with PyTorch's exact update formulas and defaults: SGD (momentum, dampening,
 * nesterov, weight decay), Adam and AdamW. State lives in flat vectors beside the parameters;
 * each step is one fused pass over the vector. */
#ifndef DT_OPTIM_H
#define DT_OPTIM_H

#include <stddef.h>

#include "dt/status.h"

typedef enum dt_optim_kind { DT_OPTIM_SGD = 0, DT_OPTIM_ADAM, DT_OPTIM_ADAMW, DT_OPTIM_KIND_COUNT } dt_optim_kind;

const char *dt_optim_kind_name(dt_optim_kind k);

typedef struct dt_optim_spec {
  dt_optim_kind kind;
  float lr;
  float weight_decay; /* SGD, Adam: L2 added to the gradient; AdamW: decoupled */
  float momentum;     /* SGD */
  float dampening;    /* SGD */
  int nesterov;       /* SGD */
  float beta1, beta2; /* Adam(W); defaults 0.9, 0.999 */
  float eps;          /* Adam(W); default 1e-8 */
} dt_optim_spec;

/* PyTorch's defaults for kind: lr 1e-3 (Adam, AdamW) or 1e-2 (SGD), betas (0.9, 0.999),
 * eps 1e-8, weight decay 0 (AdamW: 1e-2), momentum 0. */
dt_optim_spec dt_optim_spec_default(dt_optim_kind kind);

/* An extra gradient term that is affine in the parameters: g ← g + alpha·θ + b (b may be NULL).
 * CADMM's penalty has exactly this form within a round, so it fuses into the step. */
typedef struct dt_grad_extra {
  float alpha;
  const float *b;
} dt_grad_extra;

typedef struct dt_optim dt_optim;

dt_status dt_optim_create(const dt_optim_spec *spec, size_t n, dt_optim **out);
void dt_optim_free(dt_optim *o);
/* Forgets all state (moments, momentum buffer, step count): a fresh optimizer. */
void dt_optim_reset(dt_optim *o);
/* One step on params with gradient grad (grad is not modified). lr overrides spec.lr when >= 0
 * (learning-rate schedules). extra may be NULL. */
void dt_optim_step(dt_optim *o, float *params, const float *grad, float lr,
                   const dt_grad_extra *extra);
long dt_optim_steps(const dt_optim *o);

#endif
