/* Local optimizers — the step a node takes on its own gradient — with PyTorch's exact update
 * formulas and defaults: SGD (momentum, dampening, nesterov, weight decay), Adam, AdamW, RMSprop
 * (not centered), Adadelta and NAdam (PyTorch 2's formula: Debian's torch 1.13 multiplies μ_t
 * twice into the second term's product, fixed upstream in 2.0).
 * (The distributed algorithms that call them are the plug-ins of dt/optimizer.h.) One dt_local_opt holds the
 * state of `count` nodes as backend slabs beside their parameters; each step is one fused backend
 * op over a node's vector or over the whole slab. */
#ifndef DT_LOCAL_OPT_H
#define DT_LOCAL_OPT_H

#include <stddef.h>

#include "dt/backend.h"
#include "dt/status.h"

typedef enum dt_local_opt_kind {
  DT_LOCAL_SGD = 0,
  DT_LOCAL_ADAM,
  DT_LOCAL_ADAMW,
  DT_LOCAL_RMSPROP,
  DT_LOCAL_ADADELTA,
  DT_LOCAL_NADAM,
  DT_LOCAL_KIND_COUNT
} dt_local_opt_kind;

/* "sgd", "adam", "adamw", "rmsprop", "adadelta", "nadam", NULL: the config's values, in kind order. */
extern const char *const dt_local_opt_names[];
const char *dt_local_opt_kind_name(dt_local_opt_kind k);

typedef struct dt_local_opt_spec {
  dt_local_opt_kind kind;
  float lr;
  float weight_decay; /* SGD, Adam: L2 added to the gradient; AdamW: decoupled */
  float momentum;     /* SGD */
  float dampening;    /* SGD */
  int nesterov;       /* SGD */
  float beta1, beta2; /* Adam(W), NAdam; defaults 0.9, 0.999 */
  float eps;          /* Adam(W), RMSprop, NAdam: default 1e-8; Adadelta: 1e-6 */
  float alpha;        /* RMSprop: smoothing of the squared gradient, default 0.99 */
  float rho;          /* Adadelta: default 0.9 */
  float momentum_decay; /* NAdam: ψ, default 4e-3 */
} dt_local_opt_spec;

/* PyTorch's defaults for kind: lr 1e-3 (Adam, AdamW), 1e-2 (SGD, RMSprop), 1.0 (Adadelta),
 * 2e-3 (NAdam); betas (0.9, 0.999), eps 1e-8 (Adadelta 1e-6), weight decay 0 (AdamW: 1e-2),
 * momentum 0, RMSprop alpha 0.99, Adadelta rho 0.9, NAdam momentum_decay 4e-3.
 *
 * The updates, with g ← g + weight_decay·θ first (AdamW aside):
 *   RMSprop   v ← αv + (1−α)g²;  u = g/(√v + ε);  with momentum b ← μb + u, u = b;  θ ← θ − lr·u
 *   Adadelta  v ← ρv + (1−ρ)g²;  Δ = √(a + ε)/√(v + ε)·g;  a ← ρa + (1−ρ)Δ²;  θ ← θ − lr·Δ
 *   NAdam     μ_t = β1(1 − ½·0.96^(tψ)),  Π_t = μ_1⋯μ_t;  m ← β1m + (1−β1)g;  v ← β2v + (1−β2)g²;
 *             d = √(v/(1−β2^t)) + ε;  θ ← θ − lr(1−μ_t)/(1−Π_t)·g/d − lr·μ_{t+1}/(1−Π_t·μ_{t+1})·m/d */
dt_local_opt_spec dt_local_opt_spec_default(dt_local_opt_kind kind);

/* An extra gradient term that is affine in the parameters: g ← g + alpha·θ + b (b may be NULL,
 * else a backend vector like θ). CADMM's penalty has exactly this form within a round, so it
 * fuses into the step. */
typedef struct dt_grad_extra {
  float alpha;
  const float *b;
} dt_grad_extra;

typedef struct dt_local_opt dt_local_opt;


/* Vectors of dim floats per node that dt_local_opt_create allocates for this kind and momentum
 * (the moment buffers: SGD and RMSprop keep m only as a momentum buffer). */
int dt_local_opt_state_vectors(dt_local_opt_kind kind, float momentum);

/* State for count nodes of dim parameters in be's memory. */
DT_MUST_USE dt_status dt_local_opt_create(dt_backend *be, const dt_local_opt_spec *spec, int count, size_t dim,
                                          dt_local_opt **out);
void dt_local_opt_free(dt_local_opt *o);
/* Forgets all state (moments, momentum buffer, step counts) of every node: fresh optimizers. */
DT_MUST_USE dt_status dt_local_opt_reset(dt_local_opt *o);
/* One step of node l on its parameters with gradient grad (not modified), both backend vectors
 * of dim floats. lr overrides spec.lr when >= 0 (schedules). extra may be NULL. Safe for
 * different nodes on different threads. */
DT_MUST_USE dt_status dt_local_opt_step(dt_local_opt *o, int l, float *params, const float *grad, float lr,
                                        const dt_grad_extra *extra);
/* One step of every node: params and grad are slabs of count nodes. */
DT_MUST_USE dt_status dt_local_opt_step_all(dt_local_opt *o, dt_slab *params, const dt_slab *grad, float lr);
/* One step of every node with each node's extra term (extra_alpha[l], row l of extra_b; either may
 * be NULL): dt_local_opt_step's arithmetic for each node, every node in one backend call. */
DT_MUST_USE dt_status dt_local_opt_step_all_extra(dt_local_opt *o, dt_slab *params, const dt_slab *grad, float lr,
                                                  const float *extra_alpha, const dt_slab *extra_b);
long dt_local_opt_steps(const dt_local_opt *o, int l);
/* The state that carries between steps, for checkpoints: the moment slabs (data NULL when the
 * kind keeps none) and the per-node step counts ([count]); NAdam's Π_t follows from the count.
 * m: Adam's and NAdam's m, SGD's and RMSprop's momentum buffer, Adadelta's accumulated Δ²;
 * v: the squared-gradient average of Adam, NAdam, RMSprop and Adadelta. */
void dt_local_opt_state(dt_local_opt *o, dt_slab **m, dt_slab **v, long **steps);

#endif
