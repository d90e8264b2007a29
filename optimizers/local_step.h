/* The local step the SGD-style plug-ins share (DSGD, DSGDm, DSGT, gossip, Choco, solo): the
 * learning-rate schedule of every round (lr_schedule: inverse, constant, multi-step or cosine,
 * each with an optional linear warm-up, in rounds, epochs or fractions of the run) and the
 * options of the local optimizer (momentum, Nesterov, weight decay), as key rows each plug-in's
 * table includes with the macros below. The training recipe of the field's papers ("SGD with
 * Nesterov momentum 0.9, weight decay 1e-4, lr 0.1 with warm-up, decayed 10× at 50% and 75%")
 * is then a config of any of them. */
#ifndef DT_LOCAL_STEP_H
#define DT_LOCAL_STEP_H

#include <stdbool.h>
#include <stddef.h>

#include "dt/config.h"
#include "dt/local_opt.h"
#include "dt/optimizer.h"

typedef enum dt_lr_kind { DT_LR_INVERSE = 0, DT_LR_CONSTANT, DT_LR_MULTISTEP, DT_LR_COSINE } dt_lr_kind;
typedef enum dt_lr_unit { DT_LR_ROUNDS = 0, DT_LR_EPOCHS, DT_LR_FRACTION } dt_lr_unit;

typedef struct dt_lr_schedule {
  int type;              /* dt_lr_kind; inverse: base / (1 + mu t) with the plug-in's mu */
  int unit;              /* dt_lr_unit of milestones, warmup and the inverse decay's t */
  dt_floats milestones;  /* multistep: the rate is multiplied by gamma at each */
  double gamma;
  double final_lr;       /* cosine: the rate the cosine ends at (PyTorch's eta_min) */
  double warmup;         /* linear warm-up over this long (0: none) */
  double warmup_start;   /* the warm-up's first factor of the rate */
} dt_lr_schedule;

/* SGD's options beside the rate (PyTorch's torch.optim.SGD; momentum also RMSprop's). */
typedef struct dt_sgd_extras {
  double momentum, weight_decay;
  bool nesterov;
} dt_sgd_extras;

extern const dt_key dt_lr_schedule_keys[];

/* The rows a plug-in's key table includes: its options struct T holds a dt_lr_schedule `f`
 * (DT_LR_SCHEDULE_KEY) and a dt_sgd_extras `x` (DT_SGD_EXTRAS_KEYS: momentum, nesterov,
 * weight_decay; DT_WEIGHT_DECAY_KEY alone for a plug-in with momentum keys of its own). Written
 * out only when set, so configs without them keep their resolved text. */
#define DT_LR_SCHEDULE_KEY(T, f)                                                                                   \
  {.name = "lr_schedule", .type = DT_KEY_SECTION, .offset = offsetof(T, f), .sub = dt_lr_schedule_keys,           \
   .flags = DT_KEY_EMIT_IF_SET,                                                                                     \
   .help = "the rate of every round's local step: type inverse (default: the rate / (1 + mu t)), constant, "        \
           "multistep or cosine, with an optional linear warm-up"}
#define DT_WEIGHT_DECAY_KEY(T, x)                                                                                  \
  {.name = "weight_decay", .type = DT_KEY_FLOAT, .offset = offsetof(T, x.weight_decay), .def = "0.0", .min = 0,   \
   .max = 1e308, .flags = DT_KEY_EMIT_IF_SET,                                                                       \
   .help = "weight decay of the local optimizer: lambda theta added to the gradient (adamw: decoupled)"}
#define DT_SGD_EXTRAS_KEYS(T, x)                                                                                   \
  {.name = "momentum", .type = DT_KEY_FLOAT, .offset = offsetof(T, x.momentum), .def = "0.0", .min = 0, .max = 1, \
   .flags = DT_KEY_EMIT_IF_SET,                                                                                     \
   .help = "momentum of the local optimizer (sgd, rmsprop): b <- momentum b + g, as torch.optim.SGD"},             \
      {.name = "nesterov", .type = DT_KEY_BOOL, .offset = offsetof(T, x.nesterov), .def = "false",                 \
       .flags = DT_KEY_EMIT_IF_SET, .help = "sgd: Nesterov momentum (needs momentum > 0)"},                        \
      DT_WEIGHT_DECAY_KEY(T, x)

/* The rate of round k (0-based) of a run of `rounds` rounds at base rate `base`, with the
 * plug-in's inverse decay mu; rounds_per_epoch converts rounds to epochs (dt_run_rounds_per_epoch).
 * With the defaults (inverse, rounds, no warm-up) exactly dt_rate_at(base, mu, k). */
double dt_lr_at(const dt_lr_schedule *s, double base, double mu, int k, int rounds, double rounds_per_epoch);
/* Whether the schedule, mu, the local optimizer `kind` and its extras (NULL: none) go together;
 * the reason into err otherwise (for the plug-ins' finalize). */
int dt_local_step_check(const dt_lr_schedule *s, double mu, int kind, const dt_sgd_extras *x, int rounds, char *err,
                        size_t err_size);
/* update_order sequential (the seed reference's sweep, DSGD and DSGT) takes plain SGD steps: 0 and
 * the reason into err for any other local step. */
int dt_local_step_sequential_ok(int sequential, int kind, const dt_sgd_extras *x, char *err, size_t err_size);
/* The local optimizer spec of `kind` at rate lr with the extras (NULL: PyTorch's defaults). */
dt_local_opt_spec dt_local_step_spec(int kind, double lr, const dt_sgd_extras *x);
/* Whether kind with x is SGD's plain step x - lr g (no momentum, no weight decay). */
int dt_local_step_plain(int kind, const dt_sgd_extras *x);
/* The plain gradient step with the stability limit of kind's step at `rate` on a quadratic (for
 * `dtrun check`'s 2/L warning): rate for plain SGD, rate / (1 + b) with heavy-ball momentum b,
 * rate (1 + 2b) / (1 + b) with Nesterov's; 0 for the adaptive optimizers. */
double dt_local_step_stable(double rate, int kind, const dt_sgd_extras *x);
/* Rounds in an epoch: one pass of the mean node's data at the problem's batch size and `steps`
 * local steps per round (full batch: 1/steps). */
double dt_run_rounds_per_epoch(const dt_optimizer_run *run, int steps);
/* The rate of round k of run with these settings (dt_lr_at with the run's rounds and epoch). */
double dt_run_rate(const dt_optimizer_run *run, const dt_lr_schedule *s, double base, double mu, int k, int steps);

#endif
