/* CADMM / DiNNO options (the plug-in's own struct, filled from dt_cadmm_keys). */
#ifndef DT_CADMM_H
#define DT_CADMM_H

#include <stdbool.h>
#include <stddef.h>

#include "dt/config.h"

enum { DT_CADMM_LR_CONSTANT = 0, DT_CADMM_LR_LINEAR, DT_CADMM_LR_LOG };

typedef struct dt_cadmm_opts {
  double rho_init, rho_scaling;
  int primal_iterations;
  int primal_optimizer; /* dt_local_opt_kind */
  bool persistent_primal_opt;
  double primal_lr_start, primal_lr_finish;
  int lr_decay_type;
  double primal_lr; /* shorthand; 0 when not given */
} dt_cadmm_opts;

extern const dt_key dt_cadmm_keys[];
int dt_cadmm_finalize(void *opts, int rounds, char *err, size_t err_size);

#endif
