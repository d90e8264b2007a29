/* A learning problem split over graph nodes (a "task"), and the per-problem run context that
 * optimizers drive.
 *
 * The task owns the data (uint8 images or float features), each node's sample indices, each
 * node's minibatch stream (seeded by (seed, node), restarted for every problem), the model and
 * per-node scratch. Optimizers ask it for gradients; the runner asks it for evaluations. */
#ifndef DT_PROBLEM_H
#define DT_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "dt/backend.h"
#include "dt/config.h"
#include "dt/data.h"
#include "dt/exchange.h"
#include "dt/graph.h"
#include "dt/nn.h"
#include "dt/local_opt.h"
#include "dt/timer.h"

/* Samples: either uint8 images (normalised when batches are built) or float feature rows. */
typedef struct dt_samples {
  size_t count;
  size_t dim;            /* floats per sample */
  const uint8_t *u8;     /* count*dim bytes, or NULL */
  const float *f32;      /* count*dim floats, or NULL */
  const uint8_t *labels; /* count */
  float mean, std;       /* normalisation of u8 */
  int in_c, in_h, in_w;  /* shape for the model */
  int num_classes;
} dt_samples;

/* ---- splits ------------------------------------------------------------------------------- */

typedef struct dt_split {
  int num_nodes;
  size_t *start;   /* num_nodes + 1 offsets into idx */
  uint32_t *idx;   /* sample indices of node i: idx[start[i] .. start[i+1]) */
} dt_split;

/* Splits `train` over the experiment's nodes as configured (random, hetero, dirichlet), drawing
 * from (seed, DT_RNG_SPLIT). Errors: DT_ERR_CONFIG when a node would get no sample. */
dt_status dt_split_make(const dt_samples *train, const dt_experiment_config *e, dt_split *out);
void dt_split_free(dt_split *s);
static inline size_t dt_split_size(const dt_split *s, int node) { return s->start[node + 1] - s->start[node]; }

/* ---- task ----------------------------------------------------------------------------------- */

typedef struct dt_task dt_task;

/* Creates the task for the local nodes [first, first+count) of `split`, computing on be. The
 * samples, split and backend are borrowed. */
DT_MUST_USE dt_status dt_task_create(dt_backend *be, const dt_samples *train, const dt_samples *test, const dt_split *split,
                                     const dt_model_spec *spec, int first, int count, uint64_t seed, dt_task **out);
void dt_task_free(dt_task *t);
size_t dt_task_dim(const dt_task *t);
const dt_model *dt_task_model(const dt_task *t);
dt_backend *dt_task_backend(const dt_task *t);
/* θ0 from the seed into a host vector (identical for every node and every problem). */
void dt_task_init_params(const dt_task *t, uint64_t seed, float *theta);
/* Starts a problem: batch size, full-batch mode, the L2 weight λ (λ/2‖θ‖² joins every node's
 * loss), and every local node's minibatch stream restarted from (seed, DT_RNG_BATCH, node);
 * counters reset. */
DT_MUST_USE dt_status dt_task_begin(dt_task *t, int batch_size, int full_batch, double l2);
/* Node-batched gradients: for every local node l with active[l] (active NULL: all), the gradient
 * of its loss at theta's row l on its next minibatch (or its whole data when full batch) into
 * grad's row l, and the mean loss into loss[l] (host). One backend call per batch. */
DT_MUST_USE dt_status dt_task_gradients(dt_task *t, const dt_slab *theta, dt_slab *grad, const uint8_t *active, float *loss);
/* Validation loss (mean NLL) and top-1 accuracy on the test set of every local node (theta's
 * rows) in one backend call; the test set is decoded into backend memory on first use. */
DT_MUST_USE dt_status dt_task_evaluate(dt_task *t, const dt_slab *theta, double *val_loss, double *accuracy);
/* Full objective of node (mean loss over its own data + l2 term) at theta (backend vector), for
 * convex tests. */
DT_MUST_USE dt_status dt_task_objective(dt_task *t, int node, const float *theta, double *value);
/* Samples the node has processed since begin, and passes over its data (fractional). */
uint64_t dt_task_samples_seen(const dt_task *t, int node);
double dt_task_epoch(const dt_task *t, int node);

/* ---- the run context optimizers see ------------------------------------------------------ */

typedef struct dt_optimizer_run {
  dt_comm *comm;
  dt_backend *be;
  const dt_graph *graph;
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
  int exchange_nvec;
  int threads;            /* threads computing local nodes in parallel */
  double max_epochs;      /* > 0: a node stops training after this many passes over its data (solo) */
  double *sum;            /* dim doubles of backend memory for dt_run_node_mean, made on first use */
  float **host_rows;      /* [count] host views for ordered sums, made on first use off the host */
} dt_optimizer_run;

/* Fills the per-problem fields of run for the local nodes of task (theta, counters, threads);
 * dt_run_free releases what it made (the exchange included). */
DT_MUST_USE dt_status dt_run_init(dt_optimizer_run *run, dt_comm *comm, const dt_graph *g, const dt_problem_config *pc,
                                  dt_task *task, uint64_t seed, int first, int count, int ranks);
void dt_run_free(dt_optimizer_run *run);
/* Node-batched gradients at x's rows into grad's rows for the active nodes (NULL: all); every
 * node's training loss is accumulated. */
DT_MUST_USE dt_status dt_run_gradients(dt_optimizer_run *run, const dt_slab *x, dt_slab *grad, const uint8_t *active);
/* Runs fn(ctx, l) for every local node index l, in parallel on run->threads threads. The nodes'
 * computations must be independent (each writes only node l's state), which keeps results
 * identical for any thread count. The first failure (lowest l) is returned with its message.
 * Not collective: fn must not communicate. */
DT_MUST_USE dt_status dt_run_for_nodes(dt_optimizer_run *run, dt_status (*fn)(void *ctx, int l), void *ctx);
/* Threads to use for count local nodes on a job of `ranks` ranks: DT_THREADS if set, else all
 * cores when one rank holds every node, else 1 (ranks already share the cores). */
int dt_run_threads(int ranks, int count);
/* The run's exchange for nvec vectors of dim floats (created on first use). Collective. */
DT_MUST_USE dt_status dt_run_exchange(dt_optimizer_run *run, int nvec, dt_exchange **out);
/* Copies src (a slab of the local nodes) into vector vec of every node's send buffer. */
DT_MUST_USE dt_status dt_run_send(dt_optimizer_run *run, int vec, const dt_slab *src);
/* Runs an exchange and charges its time and bytes. Collective. */
DT_MUST_USE dt_status dt_run_exchange_go(dt_optimizer_run *run, const uint8_t *mask);
/* The mean over ALL nodes of v's rows, summed in node order in double (bit-identical for any
 * rank count), as floats into avg (a backend vector of dim floats) on every rank. Collective. */
DT_MUST_USE dt_status dt_run_node_mean(dt_optimizer_run *run, const dt_slab *v, float *avg);
/* The same sum, left in double in sum (backend memory, dim doubles), and not charged as traffic
 * or communication time: for metrics. Collective. */
DT_MUST_USE dt_status dt_run_sum_nodes(dt_optimizer_run *run, const dt_slab *v, double *sum);
/* Host views of v's rows (the rows themselves on a host-memory backend). */
DT_MUST_USE dt_status dt_run_host_rows(dt_optimizer_run *run, const dt_slab *v, const float *const **rows);

/* Per local node, a local optimizer and a gradient: the state every SGD-style plug-in keeps. */
typedef struct dt_learners {
  dt_local_opt *opt; /* the state of all local nodes */
  dt_slab grad;
} dt_learners;
/* Creates the learners of optimizer `kind` (dt_local_opt_kind) at rate lr. On failure what was
 * made is freed. */
DT_MUST_USE dt_status dt_learners_create(dt_optimizer_run *run, int kind, double lr, dt_learners *out);
/* Frees the learners; a zeroed struct is fine. */
void dt_learners_free(dt_optimizer_run *run, dt_learners *l);
/* Every active local node (NULL: all): the gradient at its parameters on its next minibatch,
 * then one optimizer step at rate lr. */
DT_MUST_USE dt_status dt_learners_step(dt_optimizer_run *run, dt_learners *ls, float lr, const uint8_t *active);

/* The diminishing rate every plug-in's `mu` means: round k uses r0 / (1 + mu k). */
static inline double dt_rate_at(double r0, double mu, int k) { return r0 / (1.0 + mu * k); }

/* ---- datasets (problems/mnist, problems/logreg) ---------------------------------------------- */

typedef struct dt_data dt_data;
/* Loads the experiment's dataset: MNIST or Fashion-MNIST from data_dir, or the synthetic
 * multinomial-logistic data drawn from (seed, DT_RNG_DATA). train/test point into *out. */
dt_status dt_data_load(const dt_experiment_config *e, dt_data **out, dt_samples *train, dt_samples *test);
void dt_data_free(dt_data *d);
/* Synthetic data only: n samples of `features` floats in `classes` classes, labels drawn from
 * softmax(W* x) with W* ~ N(0, 1); stream id selects train (0) or test (1). */
dt_status dt_synthetic_make(uint64_t seed, int n, int features, int classes, uint64_t stream,
                            float **x, uint8_t **labels);

#endif
