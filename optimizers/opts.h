/* Option structs of the optimizer plug-ins, filled from their key tables. Each plug-in's .c
 * owns its table; the structs are here so tests can build options directly. */
#ifndef DT_OPTIMIZER_OPTS_H
#define DT_OPTIMIZER_OPTS_H

#include <stdbool.h>

#include "cadmm/cadmm.h"

/* update_order: synchronous (every node mixes round-k values; the default, what ranks exchanging
 * messages compute) or sequential (the seed reference's in-place sweep in node order; one
 * process only). */
enum { DT_ORDER_SYNCHRONOUS = 0, DT_ORDER_SEQUENTIAL };
extern const char *const dt_update_orders[];

typedef struct dt_dsgd_opts {
  double alpha0, mu;
  int update_order;
} dt_dsgd_opts;

typedef struct dt_dsgt_opts {
  double alpha;
  bool init_grads;
  int update_order;
} dt_dsgt_opts;

enum { DT_GOSSIP_PAIRWISE = 0, DT_GOSSIP_PUSH };
typedef struct dt_gossip_opts {
  int mode;
  int local_steps;
  int local_optimizer; /* dt_local_opt_kind */
  double lr, mu;       /* round k uses lr_k = lr / (1 + mu k) (dt_rate_at) */
  double p;            /* push mode: probability of pushing in a round */
} dt_gossip_opts;

enum { DT_CENTRAL_GRADIENT = 0, DT_CENTRAL_MODEL };
typedef struct dt_centralized_opts {
  int mode;
  int local_steps;
  int optimizer;
  double lr, mu;
} dt_centralized_opts;

typedef struct dt_easgd_opts {
  double alpha;         /* the workers' elastic moving rate (mpi_learn: elastic_force) */
  double beta;          /* the centre's moving rate; 0: N·alpha (the paper's β = pα) */
  int tau;              /* local steps per round (mpi_learn: sync_every) */
  int worker_optimizer; /* dt_local_opt_kind */
  double lr, mu;        /* the workers' rate (mpi_learn: elastic_lr) and its decay */
  double momentum;      /* sgd: Nesterov momentum (mpi_learn: elastic_momentum) */
} dt_easgd_opts;

typedef struct dt_downpour_opts {
  int sync_every;       /* worker steps between a push and a fetch: one round */
  int worker_optimizer; /* dt_local_opt_kind */
  double worker_lr;
  int optimizer;        /* the server's */
  double lr, mu;        /* the server's rate and its decay */
  int max_staleness;    /* a push is applied 0..max_staleness rounds after it is sent */
} dt_downpour_opts;

typedef struct dt_choco_compression {
  int op;       /* dt_codec_op */
  double ratio; /* top_k, random_k: share of coordinates sent */
  int levels;   /* qsgd: s */
} dt_choco_compression;

typedef struct dt_choco_opts {
  double lr, mu;       /* round k's local rate lr / (1 + mu k) */
  int local_optimizer; /* dt_local_opt_kind */
  double gamma;        /* consensus step size */
  dt_choco_compression compression;
} dt_choco_opts;

typedef struct dt_solo_opts {
  int optimizer;
  double lr, mu;
} dt_solo_opts;

#endif
