/* The local step the SGD-style plug-ins share: the learning-rate schedule and the local
 * optimizer's options (see local_step.h). */
#include "local_step.h"

#include <math.h>
#include <stdio.h>

static const char *const lr_kinds[] = {"inverse", "constant", "multistep", "cosine", NULL};
static const char *const lr_units[] = {"rounds", "epochs", "fraction", NULL};

const dt_key dt_lr_schedule_keys[] = {
    {.name = "type", .type = DT_KEY_ENUM, .offset = offsetof(dt_lr_schedule, type), .def = "inverse", .values = lr_kinds,
     .help = "inverse: rate / (1 + mu t) with the algorithm's mu (today's decay); constant; multistep: times gamma at each "
             "milestone; cosine: from the rate down to final_lr over the run (after the warm-up)"},
    {.name = "unit", .type = DT_KEY_ENUM, .offset = offsetof(dt_lr_schedule, unit), .def = "rounds", .values = lr_units,
     .help = "what milestones, warmup and the inverse decay's t count: rounds, epochs (passes of the mean node's data) or "
             "fraction (of the problem's rounds, 0 to 1)"},
    {.name = "milestones", .type = DT_KEY_FLOATS, .offset = offsetof(dt_lr_schedule, milestones), .min = 0, .max = 1e12,
     .help = "multistep: increasing times (in unit) from which the rate is multiplied by gamma once more"},
    {.name = "gamma", .applies = "type=multistep", .type = DT_KEY_FLOAT, .offset = offsetof(dt_lr_schedule, gamma), .def = "0.1", .min = 0, .max = 1e6,
     .help = "multistep: the factor at each milestone"},
    {.name = "final_lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_lr_schedule, final_lr), .def = "0.0", .min = 0, .max = 1e308,
     .help = "cosine: the rate at the end of the run (PyTorch's eta_min)"},
    {.name = "warmup", .type = DT_KEY_FLOAT, .offset = offsetof(dt_lr_schedule, warmup), .def = "0.0", .min = 0, .max = 1e12,
     .help = "linear warm-up over this long (in unit) at the start: the rate times warmup_start + (1 - warmup_start) t / warmup"},
    {.name = "warmup_start", .applies = "warmup>0", .type = DT_KEY_FLOAT, .offset = offsetof(dt_lr_schedule, warmup_start), .def = "0.1", .min = 0,
     .max = 1, .help = "the warm-up's factor at t = 0 (PyTorch's LinearLR start_factor)"},
    {0},
};

double dt_lr_at(const dt_lr_schedule *s, double base, double mu, int k, int rounds, double rounds_per_epoch) {
  double t = k, end = rounds; /* in the schedule's unit */
  if (s->unit == DT_LR_EPOCHS) t = k / rounds_per_epoch, end = rounds / rounds_per_epoch;
  else if (s->unit == DT_LR_FRACTION) t = (double)k / rounds, end = 1;
  double lr;
  switch (s->type) {
    case DT_LR_CONSTANT: lr = base; break;
    case DT_LR_MULTISTEP: {
      int passed = 0;
      for (int i = 0; i < s->milestones.n; i++) passed += t >= s->milestones.v[i];
      lr = base * pow(s->gamma, passed); /* PyTorch's closed form of MultiStepLR */
      break;
    }
    case DT_LR_COSINE: { /* CosineAnnealingLR over what follows the warm-up */
      double p = end > s->warmup ? (t - s->warmup) / (end - s->warmup) : 1;
      p = p < 0 ? 0 : p > 1 ? 1 : p;
      lr = s->final_lr + (base - s->final_lr) * (1 + cos(M_PI * p)) / 2;
      break;
    }
    default: lr = base / (1.0 + mu * t); /* dt_rate_at's expression, to the bit */
  }
  if (s->warmup > 0 && t < s->warmup) lr *= s->warmup_start + (1 - s->warmup_start) * t / s->warmup;
  return lr;
}

int dt_local_step_check(const dt_lr_schedule *s, double mu, int kind, const dt_sgd_extras *x, int rounds, char *err,
                        size_t err_size) {
  const char *type = dt_lr_schedule_keys[0].values[s->type];
  if (s->type != DT_LR_INVERSE && mu != 0) {
    snprintf(err, err_size, "lr_schedule.type %s replaces the inverse decay mu; set mu: 0 (found mu %g)", type, mu);
    return 0;
  }
  if (s->type == DT_LR_MULTISTEP && s->milestones.n == 0) {
    snprintf(err, err_size, "lr_schedule.type multistep needs milestones (times at which the rate is multiplied by gamma)");
    return 0;
  }
  if (s->type != DT_LR_MULTISTEP && s->milestones.n > 0) {
    snprintf(err, err_size, "lr_schedule.milestones apply to type multistep, found type %s", type);
    return 0;
  }
  for (int i = 1; i < s->milestones.n; i++)
    if (s->milestones.v[i] <= s->milestones.v[i - 1]) {
      snprintf(err, err_size, "lr_schedule.milestones must increase, found %g after %g", s->milestones.v[i], s->milestones.v[i - 1]);
      return 0;
    }
  if (s->type != DT_LR_COSINE && s->final_lr != 0) {
    snprintf(err, err_size, "lr_schedule.final_lr applies to type cosine, found type %s", type);
    return 0;
  }
  const double end = s->unit == DT_LR_FRACTION ? 1 : s->unit == DT_LR_ROUNDS ? rounds : INFINITY;
  for (int i = 0; i < s->milestones.n; i++)
    if (s->milestones.v[i] > end) {
      snprintf(err, err_size, "lr_schedule.milestones: %g is past the end of the run (%g %s)", s->milestones.v[i], end,
               dt_lr_schedule_keys[1].values[s->unit]);
      return 0;
    }
  if (s->warmup >= end) {
    snprintf(err, err_size, "lr_schedule.warmup %g lasts the whole run (%g %s)", s->warmup, end, dt_lr_schedule_keys[1].values[s->unit]);
    return 0;
  }
  if (x == NULL) return 1;
  if (x->momentum != 0 && kind != DT_LOCAL_SGD && kind != DT_LOCAL_RMSPROP) {
    snprintf(err, err_size, "momentum %g is an option of local optimizers sgd and rmsprop, found %s", x->momentum,
             dt_local_opt_kind_name((dt_local_opt_kind)kind));
    return 0;
  }
  if (x->nesterov && (kind != DT_LOCAL_SGD || x->momentum == 0)) {
    snprintf(err, err_size, "nesterov needs local optimizer sgd with momentum > 0, found %s with momentum %g",
             dt_local_opt_kind_name((dt_local_opt_kind)kind), x->momentum);
    return 0;
  }
  return 1;
}

int dt_local_step_sequential_ok(int sequential, int kind, const dt_sgd_extras *x, char *err, size_t err_size) {
  if (!sequential || dt_local_step_plain(kind, x)) return 1;
  snprintf(err, err_size, "update_order sequential (the seed reference's sweep) takes plain SGD steps; use synchronous with "
           "local_optimizer %s", dt_local_opt_kind_name((dt_local_opt_kind)kind));
  return 0;
}

dt_local_opt_spec dt_local_step_spec(int kind, double lr, const dt_sgd_extras *x) {
  dt_local_opt_spec spec = dt_local_opt_spec_default((dt_local_opt_kind)kind);
  spec.lr = (float)lr;
  if (x == NULL) return spec;
  spec.momentum = (float)x->momentum;
  spec.nesterov = x->nesterov;
  /* weight_decay 0 leaves AdamW at PyTorch's default 0.01, as before the key existed */
  if (x->weight_decay != 0 || kind != DT_LOCAL_ADAMW) spec.weight_decay = (float)x->weight_decay;
  return spec;
}

int dt_local_step_plain(int kind, const dt_sgd_extras *x) {
  return kind == DT_LOCAL_SGD && (x == NULL || (x->momentum == 0 && x->weight_decay == 0));
}

double dt_local_step_stable(double rate, int kind, const dt_sgd_extras *x) {
  if (kind != DT_LOCAL_SGD) return 0;
  const double b = x != NULL ? x->momentum : 0;
  return x != NULL && x->nesterov ? rate * (1 + 2 * b) / (1 + b) : rate / (1 + b);
}

double dt_run_rounds_per_epoch(const dt_optimizer_run *run, int steps) {
  if (dt_run_problem(run)->full_batch) return 1.0 / steps;
  return dt_task_mean_node_samples(dt_run_task(run)) / ((double)dt_run_problem(run)->train_batch_size * steps);
}

double dt_run_rate(const dt_optimizer_run *run, const dt_lr_schedule *s, double base, double mu, int k, int steps) {
  const double rpe = s->unit == DT_LR_EPOCHS ? dt_run_rounds_per_epoch(run, steps) : 1;
  return dt_lr_at(s, base, mu, k, dt_run_problem(run)->outer_iterations, rpe);
}
