/* The distributed-optimizer plug-in interface and registry.
 *
 * An optimizer is one folder under optimizers/ that exports one dt_optimizer_def: its config face
 * (dt_plugin: name, aliases, the table of its config keys and the struct they fill) and the
 * callbacks the runner drives round by round. It sees the run context declared here (implemented
 * in optimizers/run_ctx.c, its checkpoint state in optimizers/run_state.c), the task
 * (dt/problem.h) and the backend; it never calls MPI. */
#ifndef DT_OPTIMIZER_H
#define DT_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include "dt/config.h"
#include "dt/exchange.h"
#include "dt/faults.h"
#include "dt/graph.h"
#include "dt/local_opt.h"
#include "dt/network.h"
#include "dt/problem.h"
#include "dt/schedule.h"
#include "dt/status.h"
#include "dt/timer.h"

/* ---- the run context optimizers see ------------------------------------------------------ */

typedef struct dt_optimizer_def dt_optimizer_def;

/* An algorithm's backend memory in vectors of dim floats (dt_optimizer_def.state_size): per local
 * node, per local node's out-edge, and once per rank. Fractions are fine (a compressed message). */
typedef struct dt_state_size {
  double per_node, per_edge, per_rank;
} dt_state_size;

typedef struct dt_optimizer_run {
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
  dt_exchange *buffer_exchange; /* buffers: mix — the model buffers' own exchange (dt_run_init) */
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
} dt_optimizer_run;

/* What a plug-in does with a message that did not arrive (experiment.network's faults). */
typedef enum dt_missing {
  DT_MISSING_REFUSED = 0, /* it cannot run under faults: refused before anything runs */
  DT_MISSING_RENORMALISE, /* mixing weights renormalised over what arrived, self included (dt_mix_terms) */
  DT_MISSING_SKIP,        /* the message's term is left out (dt_mix_terms); the plug-in handles its own reads */
} dt_missing;

/* Turns the simulated clock of net (borrowed) on for run: made after dt_run_init, before the
 * plug-in's create. */
DT_MUST_USE dt_status dt_run_set_network(dt_optimizer_run *run, const dt_network *net);

/* Turns faults f (borrowed) on for run with the plug-in's missing-message policy: made after
 * dt_run_init (and dt_run_set_network), before the plug-in's create. */
DT_MUST_USE dt_status dt_run_set_faults(dt_optimizer_run *run, dt_faults *f, int on_missing);
/* Under faults, an algorithm whose nodes talk to a centre hosted with node 0 calls this in its
 * create (a no-op without faults): the centre's messages then meet loss, each node's link to the
 * centre fails like a graph link, and churn stops an offline node's pushes and replies (the
 * centre itself never leaves). Registers their state for checkpoints. */
DT_MUST_USE dt_status dt_run_centre_faults(dt_optimizer_run *run);
/* Under centre faults (else NULL: every message arrives): pushes to the centre from every online
 * node with to[i] (to NULL: all), or (reply = 1) the centre's replies to every node with to[i]:
 * which arrive, [N], valid until the next such call of the same kind. Counts the messages (a
 * reply as node 0's, the centre's host) and their bytes, `bytes` each. Not collective. */
const uint8_t *dt_run_centre_send(dt_optimizer_run *run, int reply, const uint8_t *to, size_t bytes);
/* Local node l's messages sent, lost and received in the problem (under faults), and its bytes
 * sent; a centre's counted with node 0, its host. */
void dt_run_messages(const dt_optimizer_run *run, int l, uint64_t out[3]);
uint64_t dt_run_bytes(const dt_optimizer_run *run, int l);
/* Whether the directed edge e (g->nbr_start order) carried a message that arrived in the last
 * exchange: without faults, whether the exchange's mask carried it. */
static inline int dt_run_delivered(const dt_optimizer_run *run, const uint8_t *mask, int e) {
  if (run->delivered != NULL) return run->delivered[e];
  return mask == NULL || mask[e];
}

/* Fills the per-problem fields of run for the local nodes of task (theta, counters, threads);
 * dt_run_free releases what it made (the exchange included). */
DT_MUST_USE dt_status dt_run_init(dt_optimizer_run *run, dt_comm *comm, const dt_graph *g, const dt_problem_config *pc,
                                  dt_task *task, uint64_t seed, int first, int count);
void dt_run_free(dt_optimizer_run *run);
/* Runs round k of def: sets run->round from the schedule, then def->round, then (buffers: mix)
 * mixes every node's model buffers with the round's weights: b_i ← Σ_j W_ij b_j in increasing id,
 * self included, over an exchange of their own whose bytes and time count as the round's. What the
 * runner calls for every round. Collective. */
DT_MUST_USE dt_status dt_run_round(const dt_optimizer_def *def, void *state, dt_optimizer_run *run, int k);
/* Node-batched gradients at x's rows into grad's rows for the active nodes (NULL: all); every
 * node's training loss is accumulated. */
DT_MUST_USE dt_status dt_run_gradients(dt_optimizer_run *run, const dt_slab *x, dt_slab *grad, const uint8_t *active);
/* The same for local node l alone (dt_task_gradient_node: a cost that does not grow with the
 * local node count), its step charged and its loss accumulated alike. */
DT_MUST_USE dt_status dt_run_gradient_node(dt_optimizer_run *run, const dt_slab *x, dt_slab *grad, int l);
/* Runs fn(ctx, l) for every local node index l, in parallel on run->threads threads. The nodes'
 * computations must be independent (each writes only node l's state), which keeps results
 * identical for any thread count. The first failure (lowest l) is returned with its message.
 * Not collective: fn must not communicate. */
DT_MUST_USE dt_status dt_run_for_nodes(dt_optimizer_run *run, dt_status (*fn)(void *ctx, int l), void *ctx);
/* Threads to use for count local nodes on this rank of comm: DT_THREADS if set, else the host's
 * cores divided among the ranks on it (at least 1), and never more than the cores this rank may run on (its CPU affinity, which mpirun's
 * --bind-to / --map-by ...:pe=N set; SLURM_CPUS_PER_TASK under SLURM), nor more than count.
 * One rank per host thus uses the host's cores; five ranks on two cores use one thread each.
 * comm NULL: a process alone on its host (`dtrun check`). */
int dt_run_threads(const dt_comm *comm, int count);
/* The run's exchange for nvec vectors of dim floats (created on first use). Collective. */
DT_MUST_USE dt_status dt_run_exchange(dt_optimizer_run *run, int nvec, dt_exchange **out);
/* The same with vectors of len floats (a compressed message's capacity in floats). */
DT_MUST_USE dt_status dt_run_exchange_len(dt_optimizer_run *run, int nvec, size_t len, dt_exchange **out);
/* The run's per-edge exchange (dt_exchange_create_edges): one message of len floats per directed
 * edge of the union graph (created on first use). Collective. */
DT_MUST_USE dt_status dt_run_exchange_edges(dt_optimizer_run *run, size_t len, dt_exchange **out);
/* Copies src (a slab of the local nodes) into vector vec of every node's send buffer. */
DT_MUST_USE dt_status dt_run_send(dt_optimizer_run *run, int vec, const dt_slab *src);
/* Runs an exchange and charges its time and bytes. mask NULL: this round's edges (every edge of
 * a static graph). Collective. */
DT_MUST_USE dt_status dt_run_exchange_go(dt_optimizer_run *run, const uint8_t *mask);
/* The same, each vector carrying its first `bytes` bytes (dt_exchange_run_sized). */
DT_MUST_USE dt_status dt_run_exchange_go_sized(dt_optimizer_run *run, const uint8_t *mask, size_t bytes);
/* The mean over ALL nodes of v's rows, summed in node order in double (bit-identical for any
 * rank count), as floats into avg (a backend vector of dim floats) on every rank. Collective. */
DT_MUST_USE dt_status dt_run_node_mean(dt_optimizer_run *run, const dt_slab *v, float *avg);
/* The same mean, not charged as traffic or communication time: for state every rank can know
 * without sending (the start all nodes share). Collective. */
DT_MUST_USE dt_status dt_run_mean_uncounted(dt_optimizer_run *run, const dt_slab *v, float *avg);
/* Under centre faults (dt_run_centre_faults; v's rows are overwritten): the pushes of v's rows
 * from the online nodes, of which *arrived reach the centre; avg = their mean (left as it was
 * when none did), summed in node order like dt_run_node_mean. Then dt_run_centre_reply: the
 * centre's replies to the nodes with to[i] (NULL: all), `counted` bytes each in the traffic; *got
 * says which arrived (NULL without faults). Collective. */
DT_MUST_USE dt_status dt_run_centre_mean(dt_optimizer_run *run, dt_slab *v, float *avg, int *arrived);
DT_MUST_USE dt_status dt_run_centre_reply(dt_optimizer_run *run, const uint8_t *to, size_t counted, const uint8_t **got);
/* The fates of the replies of the last dt_run_from_centre under centre faults, [N], else NULL. */
static inline const uint8_t *dt_run_centre_replies(const dt_optimizer_run *run) {
  return run->centre_up != NULL ? run->centre_got + run->graph->n : NULL;
}
/* The traffic of a centre (a parameter server, EASGD's centre variable) hosted with node 0:
 * every node sends it one vector (what dt_run_node_mean counts), and it sends one vector to each
 * of the N nodes (counted on node 0). */
void dt_run_count_to_centre(dt_optimizer_run *run);
void dt_run_count_from_centre(dt_optimizer_run *run);
/* A parameter server's two exchanges, timed as communication (counting stays the caller's:
 * a push is sent, and counted with dt_run_count_to_centre, in the round it is made, but may
 * arrive rounds later).
 *   to_centre:   rank 0 calls apply(ctx, node, x) for each node with arrives[node] != 0, in
 *                node order, x that node's row of v (dt_comm_node_stream). Rank 0 returns the
 *                first failure of apply, the other ranks DT_OK: pass it to from_centre.
 *   from_centre: the centre's dim floats in host (rank 0's) to every rank, with rank 0's
 *                status `centre`: every rank fails when it failed. Counted as the centre's
 *                replies (dt_run_count_from_centre). Collective. */
DT_MUST_USE dt_status dt_run_to_centre(dt_optimizer_run *run, const dt_slab *v, const uint8_t *arrives,
                                       dt_status (*apply)(void *ctx, int node, const float *x), void *ctx);
DT_MUST_USE dt_status dt_run_from_centre(dt_optimizer_run *run, dt_status centre, float *host);
/* The same sum, left in double in sum (backend memory, dim doubles), and not charged as traffic
 * or communication time: for metrics. Collective. */
DT_MUST_USE dt_status dt_run_sum_nodes(dt_optimizer_run *run, const dt_slab *v, double *sum);
/* Records the random draws of plug-ins in the run's trace (nothing without one): n values of
 * local node l under a 4-character tag (tests/twin/README.md lists them). */
DT_MUST_USE dt_status dt_run_trace_i32(dt_optimizer_run *run, int l, const char *tag, const int32_t *v, size_t n);
DT_MUST_USE dt_status dt_run_trace_f32(dt_optimizer_run *run, int l, const char *tag, const float *v, size_t n);
/* Host views of v's rows (the rows themselves on a host-memory backend). */
DT_MUST_USE dt_status dt_run_host_rows(dt_optimizer_run *run, const dt_slab *v, const float *const **rows);

/* ---- the state a checkpoint keeps ----------------------------------------------------------
 *
 * Everything that carries from one round to the next must be registered once, in create, so
 * that `dtrun resume` continues to the same bytes: per-node rows of a slab, per-node host values
 * (elem bytes each, at base + l·elem), or data replicated on every rank (host bytes, or a
 * backend vector of dim floats), kept once: rank 0's copy. dt_run_init registers θ and the
 * run's counters, dt_learners_create the local optimizers; the task's minibatch streams are
 * always kept. Scratch that every round rewrites
 * before reading needs no registration. Names are unique within a run (at most 31 bytes). */
DT_MUST_USE dt_status dt_run_keep_slab(dt_optimizer_run *run, const char *name, dt_slab *s);
/* A slab of per-edge state: one row of dim floats per local out-edge of the union graph, in
 * (node, neighbour) order; node l's record holds its degree's rows. */
DT_MUST_USE dt_status dt_run_keep_edge_slab(dt_optimizer_run *run, const char *name, dt_slab *s);
DT_MUST_USE dt_status dt_run_keep_nodes(dt_optimizer_run *run, const char *name, void *base, size_t elem);
DT_MUST_USE dt_status dt_run_keep_shared(dt_optimizer_run *run, const char *name, void *data, size_t bytes);
/* A replicated vector of dim floats in backend memory (a centre variable, a server's model). */
DT_MUST_USE dt_status dt_run_keep_shared_vec(dt_optimizer_run *run, const char *name, float *vec);
/* A parameter server: its model (dim floats of backend memory, made here at the nodes' common
 * start) and its one-row optimizer of spec, both kept as `name`, `name`.steps, .m and .v. */
DT_MUST_USE dt_status dt_run_server_create(dt_optimizer_run *run, const char *name, const dt_local_opt_spec *spec, float **model,
                                           dt_local_opt **opt);
/* Node l's kept state as bytes (valid until the next call on run), and back; the bytes depend on
 * the node and the config only, never on the rank count. `what` names the source in messages. */
DT_MUST_USE dt_status dt_run_save_node(dt_optimizer_run *run, int l, const void **data, size_t *size);
/* The bytes dt_run_save_node writes for node `node` (a global index: any rank's node), from the
 * items kept and the graph: what a checkpoint reader may expect, and refuses more than. */
size_t dt_run_node_record_size(const dt_optimizer_run *run, int node);
DT_MUST_USE dt_status dt_run_load_node(dt_optimizer_run *run, int l, const void *data, size_t size, const char *what);
/* The replicated state, likewise (the same bytes on every rank). */
DT_MUST_USE dt_status dt_run_save_shared(dt_optimizer_run *run, const void **data, size_t *size);
DT_MUST_USE dt_status dt_run_load_shared(dt_optimizer_run *run, const void *data, size_t size, const char *what);

/* Per local node, a local optimizer and a gradient: the state every SGD-style plug-in keeps. */
typedef struct dt_learners {
  dt_local_opt *opt; /* the state of all local nodes */
  dt_slab grad;
} dt_learners;
/* Creates the learners of optimizer `kind` (dt_local_opt_kind) at rate lr, their state kept for
 * checkpoints under `name`. On failure what was made is freed. */
DT_MUST_USE dt_status dt_learners_create(dt_optimizer_run *run, const char *name, int kind, double lr, dt_learners *out);
/* The same from a full spec (momentum, betas, ...). */
DT_MUST_USE dt_status dt_learners_create_spec(dt_optimizer_run *run, const char *name, const dt_local_opt_spec *spec,
                                              dt_learners *out);
/* A local optimizer for the local nodes alone (no gradient slab: for a step along a direction of
 * the plug-in's own, such as DSGT's tracker), its state kept for checkpoints under `name`. */
DT_MUST_USE dt_status dt_run_local_opt(dt_optimizer_run *run, const char *name, const dt_local_opt_spec *spec,
                                       dt_local_opt **out);
/* Frees the learners; a zeroed struct is fine. */
void dt_learners_free(dt_optimizer_run *run, dt_learners *l);
/* Every active local node (NULL: all): the gradient at its parameters on its next minibatch,
 * then one optimizer step at rate lr. */
DT_MUST_USE dt_status dt_learners_step(dt_optimizer_run *run, dt_learners *ls, float lr, const uint8_t *active);

/* The diminishing rate every plug-in's `mu` means: round k uses r0 / (1 + mu k). */
static inline double dt_rate_at(double r0, double mu, int k) { return r0 / (1.0 + mu * k); }

/* ---- the plug-in ---------------------------------------------------------------------------- */

/* What a run offers an algorithm: the environment its admission rule sees. */
typedef struct dt_run_env {
  const dt_graph *graph; /* the union of every round's graph, its W and spectrum known */
  int directed;          /* experiment.graph.directed: arcs with column-stochastic push weights */
  int schedule;          /* experiment.graph.schedule (dt_schedule_kind): DT_SCHEDULE_STATIC or time-varying */
  int clock;             /* experiment.network has a speed: the simulated clock runs */
  int faults;            /* experiment.network has loss, link failures or churn */
  int buffers_mix;       /* the problem averages model buffers with W (buffers: mix) */
} dt_run_env;

/* Why an algorithm does not run in an environment: a sentence, and the key of the problem's
 * config to blame (relative to problem_configs.NAME: optimizer_config.root, buffers, ...). */
typedef struct dt_refusal {
  char key[96];
  char msg[1024];
} dt_refusal;
/* For an accepts: refuses, blaming `option` of optimizer_config (NULL: alg_name, the algorithm
 * itself) with a printf-style sentence; returns 0. */
int dt_refuse(dt_refusal *why, const char *option, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* dt_optimizer_def.runs_on: what an algorithm runs on besides a static, undirected graph. */
enum {
  DT_RUNS_TIME_VARYING = 1u << 0, /* a graph that changes from round to round (experiment.graph.schedule) */
  DT_RUNS_DIRECTED = 1u << 1,     /* a directed graph: push-sum, or an algorithm that does not use the graph */
};

struct dt_optimizer_def {
  /* What the config loader sees: name = alg_name as written in configs, aliases = its other
   * spellings, keys = its optimizer_config keys filling a struct of opts_size (<= DT_OPTS_MAX)
   * bytes, finalize = its cross-key rules. */
  dt_plugin plugin;
  /* Creates per-problem state; collective. */
  dt_status (*create)(dt_optimizer_run *run, const void *opts, void **state);
  /* Runs round k (0-based) on every local node; collective. */
  dt_status (*round)(void *state, dt_optimizer_run *run, int k);
  void (*destroy)(void *state);
  /* Bytes all nodes together send in one round on graph g with dim-float parameters (the
   * expectation, for randomized algorithms); for `dtrun check` and the docs. */
  double (*bytes_per_round)(const dt_graph *g, size_t dim, const void *opts);
  /* Instead of bytes_per_round where the messages depend on the model's tensor shapes
   * (PowerGossip: low-rank factors of each weight matrix): the same figure from the model.
   * Callers use dt_optimizer_bytes_per_round, which picks. */
  double (*bytes_per_round_model)(const dt_graph *g, const dt_model *m, const void *opts);
  /* Whether that figure is a sum over every directed edge of g (DSGD, DSGT): on a time-varying
   * graph it then scales with the share of edges the rounds use. */
  int traffic_per_edge;
  /* The largest rate of its plain gradient steps (x ← x − rate·∇f) on the nodes' own
   * objectives, for `dtrun check`'s 2/L warning on convex problems; NULL, or 0 for options that
   * take none (adaptive optimizers, penalised primal steps). */
  double (*gradient_step)(const void *opts);
  /* What it runs on besides a static, undirected graph without faults (dt_runs_on flags). */
  unsigned runs_on;
  /* What it does with a message that did not arrive (dt_missing); DT_MISSING_REFUSED (0): it
   * refuses experiment.network's loss, link failures and churn. */
  int on_missing;
  /* Whether these options make it asynchronous (optimizers/async.h: its events happen on the
   * simulated clock, so it needs experiment.network's speed); NULL: never. */
  int (*asynchronous)(const void *opts);
  /* Its admission rule beyond runs_on and on_missing: whether it runs with these options in env
   * (a condition on W such as D²'s λ_min(W) > −1/3, an option that needs a static graph); else
   * dt_refuse(why, ...). NULL: runs_on says all. Called only through dt_optimizer_accepts. */
  int (*accepts)(const void *opts, const dt_run_env *env, dt_refusal *why);
  /* NULL when the graph carries its messages; else why it does not (a centre, or no messages),
   * which `dtrun check` and the run's problem line say: the configured graph changes nothing. */
  const char *graph_unused;
  /* The backend memory it allocates with these options for dim-float parameters, in vectors of
   * dim floats (θ, which the runner allocates, excluded; its exchange buffers included), for
   * `dtrun check`'s memory estimate: tests/e2e/memory.sh checks it against what the CPU backend
   * counts. */
  dt_state_size (*state_size)(const void *opts, size_t dim);
};

/* Whether def with these options is asynchronous. */
static inline int dt_optimizer_asynchronous(const dt_optimizer_def *def, const void *opts) {
  return def->asynchronous != NULL && def->asynchronous(opts);
}

/* All registered optimizers, ended by NULL, and their config faces in the same order. */
extern const dt_optimizer_def *const dt_optimizers[];
extern const dt_plugin *const dt_optimizer_plugins[];

/* The algorithms whose runs_on has flag (dt_runs_on), as "a, b, c" in registry order. */
void dt_optimizers_running_on(unsigned flag, char *buf, size_t size);
/* The optimizer named (or aliased) `name`, or NULL. */
const dt_optimizer_def *dt_optimizer_find(const char *name);
/* def's bytes per round on g for a model m of dim parameters (bytes_per_round_model when it has
 * one, else bytes_per_round). */
double dt_optimizer_bytes_per_round(const dt_optimizer_def *def, const dt_graph *g, const dt_model *m, size_t dim, const void *opts);
/* The admission rule: whether def runs with these options in env (runs_on, on_missing, the
 * asynchronous engine's needs, then def->accepts); otherwise why not. What `check`, `run` and a
 * sweep's pre-check ask, through dt_optimizers_admit. */
int dt_optimizer_accepts(const dt_optimizer_def *def, const void *opts, const dt_run_env *env, dt_refusal *why);
/* The environment problem p of cfg runs in, on its (union) graph g. */
dt_run_env dt_run_env_of(const dt_config *cfg, int p, const dt_graph *g);
/* Every problem's algorithm accepts its environment on graph g; else a config error located at
 * the key to change. */
DT_MUST_USE dt_status dt_optimizers_admit(const dt_config *cfg, const dt_graph *g);

#endif
