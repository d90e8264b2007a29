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

#include "dt/config.h"
#include "dt/data.h"
#include "dt/exchange.h"
#include "dt/graph.h"
#include "dt/nn.h"
#include "dt/optim.h"
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

/* Creates the task for the local nodes [first, first+count) of `split`. The samples and split
 * are borrowed. */
dt_status dt_task_create(const dt_samples *train, const dt_samples *test, const dt_split *split,
                         const dt_model_spec *spec, int first, int count, uint64_t seed,
                         dt_task **out);
void dt_task_free(dt_task *t);
size_t dt_task_dim(const dt_task *t);
const dt_model *dt_task_model(const dt_task *t);
/* θ0 from the seed (identical for every node and every problem). */
void dt_task_init_params(const dt_task *t, uint64_t seed, float *theta);
/* Starts a problem: batch size, full-batch mode, the L2 weight λ (λ/2‖θ‖² joins every node's
 * loss), and every local node's minibatch stream restarted from (seed, DT_RNG_BATCH, node);
 * counters reset. */
dt_status dt_task_begin(dt_task *t, int batch_size, int full_batch, double l2);
/* Gradient of node's loss at theta on its next minibatch (or its whole data when full batch),
 * written to grad; mean loss to *loss. Thread-safe across different nodes. */
dt_status dt_task_gradient(dt_task *t, int node, const float *theta, float *grad, float *loss);
/* Validation loss (mean NLL) and top-1 accuracy on the test set for every local node at once;
 * thetas[l] is local node l's vector. Test images are decoded once per chunk for all nodes, and
 * nodes are evaluated on `threads` threads (see dt_task_set_threads). */
dt_status dt_task_evaluate(dt_task *t, const float *const *thetas, double *val_loss, double *accuracy);
/* Threads for evaluation (one workspace each). */
dt_status dt_task_set_threads(dt_task *t, int threads);
/* Full objective of node (mean loss over its own data + l2 term), for convex tests. */
dt_status dt_task_objective(dt_task *t, int node, const float *theta, double *value);
/* Samples the node has processed since begin, and passes over its data (fractional). */
uint64_t dt_task_samples_seen(const dt_task *t, int node);
double dt_task_epoch(const dt_task *t, int node);

/* ---- the run context optimizers see ------------------------------------------------------ */

typedef struct dt_optimizer_run {
  dt_comm *comm;
  const dt_graph *graph;
  const dt_problem_config *pc;
  dt_task *task;
  uint64_t seed;
  int first, count; /* local nodes */
  size_t dim;
  float **theta;    /* [count] local nodes' parameters; what the runner evaluates */
  double *train_loss_sum; /* [count] minibatch losses since the last evaluation */
  long *train_loss_n;
  uint64_t bytes_other;   /* bytes sent outside exchanges (centralized reductions) */
  uint64_t *node_bytes;   /* [count] bytes each local node sent, exchanges included */
  dt_timer t_compute, t_comm;
  dt_exchange *exchange;  /* created by the optimizer through dt_run_exchange */
  int exchange_nvec;
  int threads;            /* threads computing local nodes in parallel */
} dt_optimizer_run;

/* Minibatch gradient of local node `node` at x; accumulates the node's training loss. Safe to
 * call for different nodes from different threads. */
dt_status dt_run_gradient(dt_optimizer_run *run, int node, const float *x, float *grad);
/* Runs fn(ctx, l) for every local node index l, in parallel on run->threads threads. The nodes'
 * computations must be independent (each writes only node l's state), which keeps results
 * identical for any thread count. The first failure (lowest l) is returned with its message.
 * Not collective: fn must not communicate. */
dt_status dt_run_for_nodes(dt_optimizer_run *run, dt_status (*fn)(void *ctx, int l), void *ctx);
/* Threads to use for count local nodes on a job of `ranks` ranks: DT_THREADS if set, else all
 * cores when one rank holds every node, else 1 (ranks already share the cores). */
int dt_run_threads(int ranks, int count);
/* The run's exchange for nvec vectors of dim floats (created on first use). Collective. */
dt_status dt_run_exchange(dt_optimizer_run *run, int nvec, dt_exchange **out);
/* Runs an exchange and charges its time and bytes. Collective. */
dt_status dt_run_exchange_go(dt_optimizer_run *run, const uint8_t *mask);
/* Sum over ALL nodes of a per-node vector, in node order (bit-identical for any rank count):
 * v[l] is local node l's vector; every rank receives the sum in out (double). Collective. */
dt_status dt_run_node_sum(dt_optimizer_run *run, const float *const *v, double *out);
/* Per local node, a local optimizer and a gradient buffer: the state every SGD-style plug-in
 * keeps. */
typedef struct dt_learners {
  int count;
  dt_optim **opt; /* [count] */
  float **grad;   /* [count] dim floats */
} dt_learners;
/* Creates run->count learners of optimizer `kind` (dt_optim_kind) at rate lr. On failure what
 * was made is freed. */
dt_status dt_learners_create(dt_optimizer_run *run, int kind, double lr, dt_learners *out);
/* Frees the learners; a zeroed struct is fine. */
void dt_learners_free(dt_learners *l);
/* Local node l: the gradient at theta[l] on its next minibatch, then one optimizer step at rate
 * lr. Safe for different nodes on different threads. */
dt_status dt_learners_step(dt_optimizer_run *run, dt_learners *ls, int l, float lr);

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
