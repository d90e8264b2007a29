/* The exact methods EXTRA, NIDS and D² (optimizers/extra, nids, d2), which remove DSGD's bias
 * under heterogeneous data by correcting each step with the previous round's: one shared round,
 * the three plug-ins differing in how it mixes (README.md of each; the equations in the code's
 * order are in exact.c). With stochastic gradients and any local optimizer: the plain step α g
 * becomes the local optimizer's displacement d = x − step(x, g). */
#ifndef DT_EXACT_H
#define DT_EXACT_H
#include "local_step.h"
#include "mix.h"

typedef enum dt_exact_form {
  DT_EXACT_EXTRA = 0, /* x⁺ = (I + W) x − ½ (I + W) x⁻ − (d − d⁻); round 0: x¹ = W x⁰ − d⁰ */
  DT_EXACT_NIDS,      /* x⁺ = W̃ (2x − x⁻ − d + d⁻), W̃ = I − c (I − W); round 0: x¹ = W̃ (x⁰ − d⁰) */
} dt_exact_form;

/* The options all three fill (each plug-in's key table fills what it has). */
typedef struct dt_exact_opts {
  double alpha, mu;
  double c;            /* NIDS: W̃ = I − c (I − W); D²: 1 */
  int local_optimizer; /* dt_local_opt_kind */
  dt_sgd_extras x;
  dt_lr_schedule schedule;
} dt_exact_opts;

/* The key rows the three share (step, decay, local optimizer, its extras, the schedule). */
#define DT_EXACT_COMMON_KEYS                                                                                           \
  {.name = "alpha", .type = DT_KEY_FLOAT, .offset = offsetof(dt_exact_opts, alpha), .def = "0.005", .min = 0,         \
   .max = 1e308, .help = "step size (constant unless mu or lr_schedule say otherwise: the methods are exact with a "   \
                         "constant step)"},                                                                            \
      {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_exact_opts, mu), .def = "0.0", .min = 0,             \
       .max = 1e308, .help = "step decay of the default lr_schedule: round k uses alpha / (1 + mu k)"},               \
      {.name = "local_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_exact_opts, local_optimizer),            \
       .def = "sgd", .values = dt_local_opt_names, .flags = DT_KEY_EMIT_IF_SET,                                        \
       .help = "the local step whose displacement d = x - step(x, g) replaces alpha g: sgd (the default), or adam, "   \
               "adamw, rmsprop, adadelta, nadam"},                                                                     \
      DT_SGD_EXTRAS_KEYS(dt_exact_opts, x), DT_LR_SCHEDULE_KEY(dt_exact_opts, schedule)

/* The state the three share: the dual and its compensation (kept), three scratch slabs, and what
 * create makes (the Laplacian's workspace, a local optimizer other than plain SGD). */
typedef struct dt_exact_state {
  dt_exact_opts o;
  dt_exact_form form;
  dt_local_opt *local;     /* a local optimizer other than plain SGD */
  dt_slab dual, dual_lo;   /* y or s, and its Kahan compensation (kept in checkpoints) */
  dt_slab grad, d, lap;    /* scratch */
  dt_mix_laplacian *laplacian;
  dt_optimizer_run *run;
} dt_exact_state;
extern const dt_state_slot dt_exact_slots[];

/* The plug-in fields the three share, with form's create (each file defines create(), which
 * passes its form and options to dt_exact_create) and one vector in every exchange. */
#define DT_EXACT_DEF_COMMON                                                                                            \
  .state_bytes = sizeof(dt_exact_state), .slots = dt_exact_slots, .exchange_vectors = 1, .create = create,             \
  .destroy = dt_exact_destroy, .round = dt_exact_round, .bytes_per_round = dt_mix_one_vector_bytes,                    \
  .traffic_per_edge = 1, .gradient_step = dt_exact_gradient_step, .state_extra = dt_exact_state_extra,                 \
  .on_missing = DT_MISSING_RENORMALISE

DT_MUST_USE dt_status dt_exact_create(dt_optimizer_run *run, const dt_exact_opts *o, dt_exact_form form, void *state);
DT_MUST_USE dt_status dt_exact_round(void *state, dt_optimizer_run *run, int k);
void dt_exact_destroy(dt_optimizer_run *run, void *state);
double dt_exact_gradient_step(const void *opts);
/* Backend vectors beyond the slots and the exchange (dt_optimizer_def.state_extra): per node the
 * local optimizer's moments; per out-edge the Laplacian's difference. */
dt_state_size dt_exact_state_extra(const void *opts, size_t dim);
/* NIDS's and D²'s recursion x⁺ = W̃ (2x − x⁻ − …) diverges where an eigenvalue of W̃ = I − c (I − W)
 * is at or below −1/3 (D²'s condition, Tang et al. 2018, for c = 1): refused (dt_refuse) then,
 * naming the algorithm, at nids's c. */
int dt_exact_mixing_ok(const char *name, double c, const dt_graph *g, dt_refusal *why);
int dt_exact_finalize(void *opts, int rounds, char *err, size_t err_size);
#endif
