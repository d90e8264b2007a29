/* CADMM / DiNNO config keys (see README.md in this folder). */
#include <stdio.h>

#include "../options_impl.h"
#include "cadmm.h"

static const char *const decay_names[] = {"constant", "linear", "log", NULL};
static const char *const primal_lr_excludes[] = {"primal_lr_start", "primal_lr_finish", "lr_decay_type", NULL};

const dt_key dt_cadmm_keys[] = {
    {.name = "rho_init", .type = DT_KEY_FLOAT, .offset = offsetof(dt_cadmm_opts, rho_init), .def = "0.5", .min = 0, .max = DT_INF,
     .help = "initial penalty rho; round k uses rho_init * rho_scaling^(k+1)"},
    {.name = "rho_scaling", .type = DT_KEY_FLOAT, .offset = offsetof(dt_cadmm_opts, rho_scaling), .def = "1.0", .min = 0, .max = DT_INF,
     .help = "factor applied to rho before every round"},
    {.name = "primal_iterations", .type = DT_KEY_INT, .offset = offsetof(dt_cadmm_opts, primal_iterations), .def = "2", .min = 1, .max = 1e6,
     .help = "local optimizer steps per round, each on a new minibatch"},
    {.name = "primal_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_cadmm_opts, primal_optimizer), .def = "adam",
     .values = dt_local_opt_names, .help = "local optimizer of the primal step"},
    {.name = "persistent_primal_opt", .type = DT_KEY_BOOL, .offset = offsetof(dt_cadmm_opts, persistent_primal_opt), .def = "false",
     .help = "keep the primal optimizer's state across rounds (false: a fresh optimizer each round)"},
    {.name = "persistant_primal_opt", .type = DT_KEY_BOOL, .alias_of = "persistent_primal_opt", .flags = DT_KEY_NO_EMIT,
     .help = "the seed reference's spelling of persistent_primal_opt"},
    {.name = "primal_lr_start", .type = DT_KEY_FLOAT, .offset = offsetof(dt_cadmm_opts, primal_lr_start), .def = "0.005", .min = 0, .max = DT_INF,
     .help = "primal learning rate in round 0"},
    {.name = "primal_lr_finish", .type = DT_KEY_FLOAT, .offset = offsetof(dt_cadmm_opts, primal_lr_finish), .def = "0.0005", .min = 0, .max = DT_INF,
     .help = "primal learning rate in the last round (linear and log schedules)"},
    {.name = "lr_decay_type", .type = DT_KEY_ENUM, .offset = offsetof(dt_cadmm_opts, lr_decay_type), .def = "log", .values = decay_names,
     .help = "schedule from primal_lr_start to primal_lr_finish over the rounds: constant, linear, or log (geometric)"},
    {.name = "primal_lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_cadmm_opts, primal_lr), .min = 1e-300, .max = DT_INF,
     .flags = DT_KEY_NO_EMIT, .excludes = primal_lr_excludes,
     .help = "shorthand for a constant rate: primal_lr_start = primal_lr_finish = primal_lr, lr_decay_type = constant"},
    {0},
};

int dt_cadmm_finalize(void *opts, int rounds, char *err, size_t err_size) {
  dt_cadmm_opts *o = opts;
  (void)rounds;
  if (o->primal_lr > 0) {
    o->primal_lr_start = o->primal_lr_finish = o->primal_lr;
    o->lr_decay_type = DT_CADMM_LR_CONSTANT;
    o->primal_lr = 0; /* resolved: the emitted config spells it out */
  }
  if (o->lr_decay_type == DT_CADMM_LR_LOG && (o->primal_lr_start <= 0 || o->primal_lr_finish <= 0)) {
    snprintf(err, err_size, "lr_decay_type log needs primal_lr_start and primal_lr_finish > 0 (found %g and %g)",
             o->primal_lr_start, o->primal_lr_finish);
    return 0;
  }
  return 1;
}
