/* Option structs of the optimizer plug-ins, filled from their key tables. Each plug-in's .c
 * owns its table; the structs are here so tests can build options directly. */
#ifndef DT_OPTIMIZER_OPTS_H
#define DT_OPTIMIZER_OPTS_H

#include <stdbool.h>

#include "cadmm/cadmm.h"

typedef struct dt_dsgd_opts {
  double alpha0, mu;
} dt_dsgd_opts;

typedef struct dt_dsgt_opts {
  double alpha;
  bool init_grads;
} dt_dsgt_opts;

enum { DT_GOSSIP_PAIRWISE = 0, DT_GOSSIP_PUSH };
typedef struct dt_gossip_opts {
  int mode;
  int local_steps;
  int local_optimizer; /* dt_optim_kind */
  double lr, mu;       /* lr_k = lr_{k-1} (1 - mu lr_{k-1}) */
  double p;            /* push mode: probability of pushing in a round */
} dt_gossip_opts;

enum { DT_CENTRAL_GRADIENT = 0, DT_CENTRAL_MODEL };
typedef struct dt_centralized_opts {
  int mode;
  int local_steps;
  int optimizer;
  double lr, mu;
} dt_centralized_opts;

typedef struct dt_solo_opts {
  int optimizer;
  double lr, mu;
} dt_solo_opts;

#endif
