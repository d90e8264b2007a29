/* The run context's insides, for the run services alone: run_ctx.c, run_state.c, run_clock.c,
 * run_faults.c, mix.c and async.c, compiled with DT_RUN_SERVICES (meson.build). Plug-ins, their
 * shared helpers and the runner see dt_optimizer_run as an opaque type and use the accessors of
 * dt/optimizer.h: including this header anywhere else fails the build. */
#ifndef DT_RUN_IMPL_H
#define DT_RUN_IMPL_H

#ifndef DT_RUN_SERVICES
#error "optimizers/run_impl.h is the run services' own: a plug-in uses the accessors of dt/optimizer.h"
#endif

#include "dt/optimizer.h"

struct dt_optimizer_run {
  dt_comm *comm;
  dt_backend *be;
  const dt_graph *graph;   /* the union of every round's graph: what the exchange is built on */
  dt_schedule *schedule;   /* time-varying graph (borrowed), or NULL: graph every round */
  dt_round_graph round;    /* this round's edges and weights (dt_run_round sets it) */
  const dt_problem_config *pc;
  dt_task *task;
  uint64_t seed;
  int first, count; /* local nodes */
  size_t dim;
  dt_slab theta;          /* local nodes' parameters (backend memory); what the runner evaluates */
  float *loss;            /* [count] losses of the last gradient call */
  double *train_loss_sum; /* [count] minibatch losses since the last evaluation */
  long *train_loss_n;
  uint64_t *node_bytes;   /* [count] bytes each local node sent, exchanges included */
  dt_timer t_compute, t_comm;
  dt_exchange *exchange;  /* created by the optimizer through dt_run_exchange */
  dt_exchange *buffer_exchange; /* buffers: mix — the model buffers' own exchange (dt_run_create) */
  int exchange_nvec;
  size_t exchange_len;    /* floats per vector (dim, or a compressed message's capacity) */
  int threads;            /* threads computing local nodes in parallel */
  double max_epochs;      /* > 0: a node stops training after this many passes over its data (solo) */
  double *sum;            /* dim doubles of backend memory for dt_run_node_mean, made on first use */
  float **host_rows;      /* [count] host views for ordered sums, made on first use off the host */
  size_t host_rows_dim;   /* floats of each such row (the longest vector viewed so far) */
  struct dt_run_item *items; /* the state a checkpoint keeps (dt_run_keep_*) */
  int num_items;
  unsigned char *blob;    /* one node's (or the shared) state as bytes, for checkpoints */
  size_t blob_cap;
  dt_trace *trace;        /* --dump-trace: the run's trace (borrowed), or NULL */
  float *sweep_tmp;       /* dt_mix_sweep's scratch vector (backend memory, dim floats), made at its first sweep */
  /* experiment.network: the simulated clock (optimizers/run_clock.c), or NULL. Every rank holds
   * every node's clock (sim_clock[N]; the local ones are kept in checkpoints); a local step adds
   * its cost to the node's clock, a message arrives at the sender's clock plus its time on the
   * link, and a node goes on when its last message has arrived. */
  const dt_network *net;
  double *sim_clock;      /* [N] seconds */
  uint64_t *sim_steps;    /* [count] local steps taken (the jitter stream's position) */
  uint64_t *sim_seen;     /* [count] scratch: samples seen before a gradient call */
  int sim_hold;           /* > 0: exchanges leave the clocks alone (a sweep clocks itself, run_clock.h) */
  /* experiment.network's faults (run_faults.c), or NULL. Every rank knows every node's and
   * edge's state: online[N] and link_up[2E] for the round (dt_run_round sets them), delivered[2E]
   * for the last exchange (directed edges in g->nbr_start order, like an exchange mask). A message
   * is sent when its sender is online and the exchange's mask carries it; it arrives unless it is
   * lost, its link is down or its receiver is offline. dt_exchange_recv is NULL for a message that
   * did not arrive; the plug-in's on_missing says what it does then. An offline node takes no part
   * in the round: its state is put back as it was before it (run_faults.c). */
  dt_faults *faults;
  int on_missing;         /* the plug-in's dt_missing policy (dt_mix_terms applies it) */
  uint8_t *online;        /* [N] */
  uint8_t *link_up;       /* [2E] */
  uint8_t *delivered;     /* [2E] */
  uint8_t *fault_sent, *fault_lost; /* [2E] scratch */
  uint8_t *burst;         /* [2E] Gilbert–Elliott states (kept) */
  uint64_t exchanges;     /* exchanges so far in the problem: the loss stream's position (kept) */
  uint64_t *msgs;         /* [3·count] messages each local node sent, lost (sent, not arrived), received (kept) */
  /* a centre hosted with node 0 (dt_run_centre_faults): each node's link to it, the push and reply
   * chains, the centre exchange count, and the last push's and reply's fates (push: [0, n),
   * reply: [n, 2n)) */
  uint8_t *centre_up;     /* [N] */
  uint8_t *centre_burst;  /* [2N] (kept) */
  uint64_t centre_exchanges; /* (kept) */
  uint8_t *centre_sent, *centre_lost, *centre_got; /* [N] scratch, [N] scratch, [2N] */
  uint64_t centre_msgs[4];  /* the centre's messages sent, lost, received, and its bytes sent (kept;
                               node 0's in results: node 0's churn does not undo them) */
  unsigned char **parked; /* [count] an offline node's state during a round */
  int unparked;           /* the asynchronous engine keeps offline nodes as they were itself: nothing is parked */
  size_t *parked_size;    /* [count] bytes in parked[l] */
  uint64_t events;        /* asynchronous algorithms: events processed since the problem (or its resume) began */
};

#endif
