/* The distributed-optimizer plug-in interface and registry.
 *
 * An optimizer is one folder under optimizers/ that exports one dt_optimizer_def: its config face
 * (dt_plugin: name, aliases, the table of its config keys and the struct they fill) and the
 * callbacks the runner drives round by round. It sees its run context through the accessors and
 * services declared here (the context itself is private to the run services: optimizers/run_impl.h,
 * run_ctx.c, and its checkpoint state in run_state.c), the task (dt/problem.h) and the backend; it
 * never calls MPI. */
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

typedef struct dt_optimizer_run dt_optimizer_run; /* opaque: optimizers/run_impl.h, the services' own */

/* What a plug-in does with a message that did not arrive (experiment.network's faults). */
typedef enum dt_missing {
  DT_MISSING_REFUSED = 0, /* it cannot run under faults: refused before anything runs */
  DT_MISSING_RENORMALISE, /* mixing weights renormalised over what arrived, self included (dt_mix_terms) */
  DT_MISSING_SKIP,        /* the message's term is left out (dt_mix_terms); the plug-in handles its own reads */
} dt_missing;

/* Turns the simulated clock of net (borrowed) on for run: made after dt_run_create, before the
 * plug-in's create. */
DT_MUST_USE dt_status dt_run_set_network(dt_optimizer_run *run, const dt_network *net);

/* Turns faults f (borrowed) on for run with the plug-in's missing-message policy: made after
 * dt_run_create (and dt_run_set_network), before the plug-in's create. */
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
/* Local node l's messages sent, lost and received in the problem, and its bytes sent; a centre's
 * counted with node 0, its host. Messages are counted under faults only: else 0 (out zeroed). */
int dt_run_messages(const dt_optimizer_run *run, int l, uint64_t out[3]);
uint64_t dt_run_bytes(const dt_optimizer_run *run, int l);
/* Whether the directed edge e (g->nbr_start order) carried a message that arrived in the last
 * exchange: without faults, whether the exchange's mask carried it. */
int dt_run_delivered(const dt_optimizer_run *run, const uint8_t *mask, int e);

/* A problem's run context for the local nodes [first, first + count) of task on graph g (θ, the
 * counters, the threads); dt_run_free releases it and what it made (the exchange included;
 * NULL is fine). */
DT_MUST_USE dt_status dt_run_create(dt_comm *comm, const dt_graph *g, const dt_problem_config *pc, dt_task *task, uint64_t seed,
                                    int first, int count, dt_optimizer_run **out);
void dt_run_free(dt_optimizer_run *run);
/* What the runner sets after dt_run_create, before the plug-in's create: a time-varying graph
 * (borrowed; NULL: the graph every round), the trace of --dump-trace (borrowed), and the passes
 * over its data after which a node stops training (solo; 0: no limit). */
void dt_run_set_schedule(dt_optimizer_run *run, dt_schedule *schedule);
void dt_run_set_trace(dt_optimizer_run *run, dt_trace *trace);
void dt_run_set_max_epochs(dt_optimizer_run *run, double epochs);

/* ---- what a plug-in reads of its run --------------------------------------------------------
 *
 * The whole of the run context a plug-in sees; everything else (the clock, the faults' state,
 * the checkpoint's records) stays inside the run services. */
dt_backend *dt_run_backend(const dt_optimizer_run *run);
/* Floats of one node's parameters. */
size_t dt_run_dim(const dt_optimizer_run *run);
/* The local nodes: global ids first .. first + count − 1, row l of a slab being node first + l. */
int dt_run_first(const dt_optimizer_run *run);
int dt_run_count(const dt_optimizer_run *run);
/* The local nodes' out-edges in the union graph, dt_run_graph(run)->nbr_start[first] on: the rows
 * of a per-edge slab. */
int dt_run_local_edges(const dt_optimizer_run *run);
/* The local nodes' parameters (backend memory): what the runner evaluates. */
dt_slab *dt_run_theta(dt_optimizer_run *run);
/* The union of every round's graph (what the exchange is built on), and this round's edges and
 * weights (dt_run_round sets them). */
const dt_graph *dt_run_graph(const dt_optimizer_run *run);
const dt_round_graph *dt_run_this_round(const dt_optimizer_run *run);
/* Whether the graph changes from round to round (a time-varying experiment.graph.schedule). */
int dt_run_time_varying(const dt_optimizer_run *run);
/* The problem's config (rounds, batch size) and its task (the model, the nodes' data). */
const dt_problem_config *dt_run_problem(const dt_optimizer_run *run);
dt_task *dt_run_task(const dt_optimizer_run *run);
/* The experiment's seed: what a plug-in's own random streams derive from. */
uint64_t dt_run_seed(const dt_optimizer_run *run);
/* The exchange the plug-in made (dt_run_exchange*), or NULL before. */
dt_exchange *dt_run_the_exchange(const dt_optimizer_run *run);
/* Whether experiment.network's loss, link failures or churn act on this run, and whether node
 * (a global id) is online this round (always, without churn). */
int dt_run_faulty(const dt_optimizer_run *run);
int dt_run_online(const dt_optimizer_run *run, int node);
/* Whether --dump-trace records this run (dt_run_trace_*). */
int dt_run_tracing(const dt_optimizer_run *run);
/* The passes over its data after which a node stops training (solo), or 0. */
double dt_run_max_epochs(const dt_optimizer_run *run);

/* ---- what the runner reads of a run --------------------------------------------------------- */

dt_trace *dt_run_trace(const dt_optimizer_run *run);
/* Seconds of computation (each round's wall time less its communication) and of communication
 * (the exchanges) so far, and back (a resumed run's). */
void dt_run_times(const dt_optimizer_run *run, double *compute, double *comm);
void dt_run_set_times(dt_optimizer_run *run, double compute, double comm);
/* Local node l's mean minibatch loss since the last dt_run_train_loss_reset (NaN without one), and
 * whether a local node's training loss is no longer finite. */
double dt_run_train_loss(const dt_optimizer_run *run, int l);
void dt_run_train_loss_reset(dt_optimizer_run *run);
/* The sum of node l's minibatch losses and their number since that reset (TensorBoard's windows). */
void dt_run_train_loss_totals(const dt_optimizer_run *run, int l, double *sum, long *n);
int dt_run_diverged(const dt_optimizer_run *run);
/* Node `node`'s simulated clock in seconds (a global id), or NaN without experiment.network's speed. */
double dt_run_sim_time(const dt_optimizer_run *run, int node);
/* The asynchronous engine's events so far in the problem (0 for a synchronous algorithm). */
uint64_t dt_run_events(const dt_optimizer_run *run);

/* Runs round k of def: sets this round's graph from the schedule, then def->round, then (buffers: mix)
 * mixes every node's model buffers with the round's weights: b_i ← Σ_j W_ij b_j in increasing id,
 * self included, over an exchange of their own whose bytes and time count as the round's. Its wall
 * time less its communication counts as computation (dt_run_times). What the runner calls for
 * every round. Collective. */
DT_MUST_USE dt_status dt_run_round(const dt_optimizer_def *def, void *state, dt_optimizer_run *run, int k);
/* Node-batched gradients at x's rows into grad's rows for the active nodes (NULL: all); every
 * node's training loss is accumulated. */
DT_MUST_USE dt_status dt_run_gradients(dt_optimizer_run *run, const dt_slab *x, dt_slab *grad, const uint8_t *active);
/* The same for local node l alone (dt_task_gradient_node: a cost that does not grow with the
 * local node count), its step charged and its loss accumulated alike. */
DT_MUST_USE dt_status dt_run_gradient_node(dt_optimizer_run *run, const dt_slab *x, dt_slab *grad, int l);
/* Runs fn(ctx, l) for every local node index l, in parallel on the run's threads. The nodes'
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
const uint8_t *dt_run_centre_replies(const dt_optimizer_run *run);
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

/* ---- declared state ---------------------------------------------------------------------------
 *
 * The vectors a plug-in keeps, declared once in a table of its definition (dt_optimizer_def.slots):
 * the run services allocate them zeroed before its create, register the kept ones for
 * checkpoints in the table's order, free them after its destroy, and count them in `dtrun
 * check`'s memory estimate, so that the estimate cannot drift from the allocations. */
typedef enum dt_slot_kind {
  DT_SLOT_NODE = 1, /* a dt_slab: a row of dim (+ plus) floats per local node */
  DT_SLOT_EDGE,     /* a dt_slab: a row per local out-edge of the union graph, in (node, neighbour) order */
  DT_SLOT_SHARED,   /* a float *: one vector of dim floats of backend memory, the same on every rank */
  DT_SLOT_HOST,     /* a host array of elem bytes per local node (push-sum weights) */
  DT_SLOT_LEARNERS, /* a dt_learners: a local optimizer and its gradient slab */
} dt_slot_kind;

/* Where a learners slot without spec() finds its local optimizer in the options: the kind (an int,
 * dt_local_opt_kind) at kind, the rate (a double) at lr and, when has_extras, the momentum,
 * Nesterov and weight decay (a dt_sgd_extras, optimizers/local_step.h) at extras; without them
 * PyTorch's defaults. */
typedef struct dt_learner_fields {
  size_t kind, lr, extras;
  int has_extras;
} dt_learner_fields;

typedef struct dt_state_slot {
  const char *name; /* its checkpoint record (learners: the records' prefix); unique in the run, < 32 bytes */
  dt_slot_kind kind;
  size_t offset;    /* of its dt_slab, float *, host pointer or dt_learners in the state struct */
  int scratch;      /* rewritten before it is read in every round: not kept in checkpoints */
  int plus;         /* DT_SLOT_NODE, DT_SLOT_EDGE: floats beyond dim in each row (a payload with its weight) */
  size_t elem;      /* DT_SLOT_HOST: bytes per node */
  int keep_grad;    /* DT_SLOT_LEARNERS: its gradient is kept too, as "grad" (an asynchronous step's, taken when it began) */
  int (*when)(const void *opts);                /* whether it exists with these options; NULL: always */
  dt_local_opt_spec (*spec)(const void *opts); /* DT_SLOT_LEARNERS: the local optimizer; NULL: from */
  dt_learner_fields from;                      /* DT_SLOT_LEARNERS without spec */
} dt_state_slot;

/* A learners slot's optimizer from the options (struct O): its KIND and LR fields (and its
 * dt_sgd_extras X). */
#define DT_LEARNER_FROM(O, KIND, LR) {.kind = DT_FIELD_AT_(O, KIND, int), .lr = DT_FIELD_AT_(O, LR, double)}
#define DT_LEARNER_FROM_X(O, KIND, LR, X)                                                                                    \
  {.kind = DT_FIELD_AT_(O, KIND, int), .lr = DT_FIELD_AT_(O, LR, double), .extras = DT_FIELD_AT_(O, X, dt_sgd_extras),      \
   .has_extras = 1}
/* offsetof(O, F), which fails to compile unless the field is of type TYPE */
#define DT_FIELD_AT_(O, F, TYPE) (offsetof(O, F) + 0 * sizeof(char[_Generic(((O *)0)->F, TYPE: 1)]))

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

/* dt_optimizer_def.state_fill */
enum { DT_STATE_OPTS = 1u << 0, DT_STATE_RUN = 1u << 1 };
#define DT_STATE(T, O, R)                                                                                                    \
  .state_bytes = sizeof(T), .state_fill = DT_STATE_OPTS | DT_STATE_RUN, .opts_at = offsetof(T, O), .run_at = offsetof(T, R)

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
  /* Its per-problem state: a struct of state_bytes, and the vectors it keeps in it, declared as a
   * table of slots ended by {0} (NULL: none). dt_optimizer_create allocates both, zeroed, then
   * calls create for the rest (a first gradient, an exchange of another kind, host arrays sized
   * by the graph);
   * dt_optimizer_destroy calls destroy for what create made, then frees the slots and the struct.
   * create and destroy may be NULL. create is collective. */
  size_t state_bytes;
  const dt_state_slot *slots;
  /* What dt_optimizer_create writes into the struct before create (dt_state_fill flags): the
   * options (opts_size bytes) at opts_at, the run context's pointer at run_at. DT_STATE(T, O, R)
   * declares a struct T that keeps both in its fields O and R. */
  unsigned state_fill;
  size_t opts_at, run_at;
  /* > 0: the run's exchange of that many vectors of dim floats per node (dt_run_exchange), made
   * before create and counted; 0: create makes its own exchange, if any (dt_run_exchange_len,
   * dt_run_exchange_edges), and state_extra counts it. */
  int exchange_vectors;
  dt_status (*create)(dt_optimizer_run *run, const void *opts, void *state);
  void (*destroy)(dt_optimizer_run *run, void *state);
  /* Runs round k (0-based) on every local node; collective. */
  dt_status (*round)(void *state, dt_optimizer_run *run, int k);
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
  /* The backend memory create allocates beyond the slots with these options for dim-float
   * parameters, in vectors of dim floats (its exchange's buffers, a codec's, a parameter server's),
   * NULL: none. dt_optimizer_state_size adds the slots' for `dtrun check`'s memory estimate, which
   * tests/e2e/memory.sh holds to what the CPU backend counts. */
  dt_state_size (*state_extra)(const void *opts, size_t dim);
};

/* def's state for run with these options (dt_optimizer_def.slots, then its create); on failure
 * nothing is left. Collective. */
DT_MUST_USE dt_status dt_optimizer_create(const dt_optimizer_def *def, dt_optimizer_run *run, const void *opts, void **state);
/* Its destroy, then the slots and the struct (NULL is fine). */
void dt_optimizer_destroy(const dt_optimizer_def *def, dt_optimizer_run *run, void *state);
/* The backend memory def's state takes with these options, in vectors of dim floats: its slots
 * (their scratch included) and its state_extra. */
dt_state_size dt_optimizer_state_size(const dt_optimizer_def *def, const void *opts, size_t dim);

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
