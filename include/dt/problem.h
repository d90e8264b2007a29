/* Problems: the plug-ins that say what is learned (data, model, loss, metrics), and the task
 * that splits one over graph nodes.
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
#include "dt/nn.h"
#include "dt/trace.h"

/* ---- task ----------------------------------------------------------------------------------- */

typedef struct dt_task dt_task;

/* Creates the task for the local nodes [first, first+count) of `split`, computing on be. The
 * samples, split and backend are borrowed. */
DT_MUST_USE dt_status dt_task_create(dt_backend *be, const dt_samples *train, const dt_samples *test, const dt_split *split,
                                     const dt_model_spec *spec, int first, int count, uint64_t seed, dt_task **out);
void dt_task_free(dt_task *t);
size_t dt_task_dim(const dt_task *t);
/* Each local node's model buffers (running statistics), dim 0 and no data for a model without. */
dt_slab *dt_task_buffers(dt_task *t);
const dt_model *dt_task_model(const dt_task *t);
/* Records every later training call of each local node in trace (NULL: stop): the samples'
 * indices (BIDX), labels (BLAB) and inputs as the model sees them (BXIN), then the loss (LOSS,
 * the L2 term included). */
void dt_task_set_trace(dt_task *t, dt_trace *trace);
dt_backend *dt_task_backend(const dt_task *t);
/* θ0 from the seed into a host vector (identical for every node and every problem). */
void dt_task_init_params(const dt_task *t, uint64_t seed, float *theta);
/* The buffers every problem starts from (running means 0, variances 1), to overwrite before the
 * first dt_task_begin (experiment.model.init_file); NULL for a model without buffers. */
float *dt_task_initial_buffers(dt_task *t);
/* Every node's minibatches from o (borrowed; NULL: drawn from the node's stream), set before the
 * first dt_task_begin: each problem starts at o's step 0 of every node; a node that needs a step
 * o does not hold fails the gradient call (DT_ERR_UNSUPPORTED: exit 1). Widest step <= every problem's batch. */
void dt_task_set_batch_order(dt_task *t, const dt_batch_order *o);
/* Augments every training minibatch (experiment.augment): a random crop of the image padded by
 * crop_padding pixels (the normalised value of a black pixel) and a random horizontal flip, drawn
 * per node and image from (seed, DT_RNG_AUGMENT, node), restarted by begin and kept in
 * checkpoints. Full-batch gradients are not augmented. Errors: DT_ERR_CONFIG for data that are
 * not images. */
DT_MUST_USE dt_status dt_task_set_augment(dt_task *t, int crop_padding, int flip);
/* What dt_task_set_augment refuses, for `dtrun check`. */
DT_MUST_USE dt_status dt_augment_check(const dt_samples *train, int crop_padding, int flip);
/* Starts a problem: batch size, full-batch mode, the L2 weight λ (λ/2‖θ‖² joins every node's
 * loss), and every local node's minibatch stream restarted from (seed, DT_RNG_BATCH, node);
 * counters reset. */
DT_MUST_USE dt_status dt_task_begin(dt_task *t, int batch_size, int full_batch, double l2);
/* Node-batched gradients: for every local node l with active[l] (active NULL: all), the gradient
 * of its loss at theta's row l on its next minibatch (or its whole data when full batch) into
 * grad's row l, and the mean loss into loss[l] (host). One backend call per batch. */
DT_MUST_USE dt_status dt_task_gradients(dt_task *t, const dt_slab *theta, dt_slab *grad, const uint8_t *active, float *loss);
/* The same for local node l alone (its next minibatch, its loss into *loss), at a cost that does
 * not grow with the local node count on a host-memory backend (asynchronous algorithms step one
 * node at a time). The same numbers as dt_task_gradients with only l active. */
DT_MUST_USE dt_status dt_task_gradient_node(dt_task *t, const dt_slab *theta, dt_slab *grad, int l, float *loss);
/* Validation loss (mean NLL) and top-1 accuracy of every local node (theta's rows, with the
 * task's buffers) in one backend call, in eval mode, on the test set, or on test_samples of it
 * (0, or not fewer than the set: all): the first test_samples of a permutation drawn from
 * (seed, DT_RNG_EVAL, 0), taken in the set's order, the same for every node, round and problem.
 * The samples are decoded into backend memory on first use. */
DT_MUST_USE dt_status dt_task_evaluate(dt_task *t, const dt_slab *theta, int test_samples, double *val_loss, double *accuracy);
/* The same for one model: parameters theta and buffers (NULL for a model without) in backend
 * memory — the average model of evaluation.nodes: mean. */
DT_MUST_USE dt_status dt_task_evaluate_model(dt_task *t, const float *theta, const float *buffers, int test_samples,
                                             double *val_loss, double *accuracy);
/* Full objective of node (mean loss over its own data + l2 term) at theta (backend vector), for
 * convex tests. */
DT_MUST_USE dt_status dt_task_objective(dt_task *t, int node, const float *theta, double *value);
/* Samples the node has processed since begin, and passes over its data (fractional). */
uint64_t dt_task_samples_seen(const dt_task *t, int node);
/* The training samples of the mean node (all nodes', not only the local ones): what an epoch is
 * for a schedule in epochs. */
double dt_task_mean_node_samples(const dt_task *t);
/* The training samples of node (any node, local or not) step number `step` (0-based from the
 * problem's start) takes, known without running it: its full data with full_batch, else the
 * minibatch size, except the last step of each pass over its data, which takes the rest. */
size_t dt_task_step_samples(const dt_task *t, int node, uint64_t step);
double dt_task_epoch(const dt_task *t, int node);
/* Local node l's training-stream state (minibatch order and position, counters, dropout stream)
 * and model buffers as bytes, and back: what a checkpoint keeps of the task. The size depends on
 * the node's share of the data and the model only, never on the rank count. */
size_t dt_task_node_state_size(const dt_task *t, int l);
DT_MUST_USE dt_status dt_task_node_state_save(dt_task *t, int l, void *buf);
DT_MUST_USE dt_status dt_task_node_state_load(dt_task *t, int l, const void *buf, size_t size);

/* ---- problem plug-ins (problems/<name>/) ------------------------------------------------------
 *
 * A problem is one folder under problems/ that exports one dt_problem_def: the config face the
 * loader sees (name, the dataset names it serves, its keys, its loss and the metrics it can
 * record), how to load its data, its input shape, and its default model. Adding a dataset or a
 * task = its folder, a line in problems/registry.c, a line in meson.build, a test. */

/* A loaded dataset: the samples, and what owns their memory. */
/* A file the data came from, for summary.yaml: its role and the SHA-256 of its content. */
typedef struct dt_data_file {
  char role[32];   /* train_images, train_labels, ... */
  char sha256[65]; /* 64 hex digits */
} dt_data_file;

/* A full-batch problem's gradient runs in chunks of this many samples (its workspaces' batch),
 * and evaluation in chunks of DT_EVAL_CHUNK test samples. */
enum { DT_FULL_BATCH_CHUNK = 256, DT_EVAL_CHUNK = 500 };

typedef struct dt_data {
  dt_samples train, test;
  void *owner;                  /* released by release(owner) */
  void (*release)(void *owner);
  /* NULL for generated data; else fills files[0..*n) (at most 8), hashing on demand */
  void (*files)(const void *owner, dt_data_file *files, int *n);
  /* what each digest covers, for summary.yaml's comment ("uncompressed IDX content", "bytes") */
  const char *files_digest_of;
} dt_data;

typedef struct dt_problem_def {
  dt_problem_plugin schema; /* what the config loader sees */
  /* Loads the data of e->dataset_name; opts are the plug-in's keys. Not collective. */
  dt_status (*load)(const dt_experiment_config *e, const void *opts, dt_data *out);
  /* The shape of one sample and the class count, known without loading (for `dtrun check`). */
  void (*shape)(const dt_experiment_config *e, const void *opts, dt_samples *shape);
  /* The model trained when experiment.model.layers is empty, for samples of that shape. */
  void (*default_model)(const dt_experiment_config *e, const dt_samples *shape, dt_model_spec *spec);
} dt_problem_def;

/* All registered problems, ended by NULL, and their config faces in the same order. */
extern const dt_problem_def *const dt_problems[];
extern const dt_problem_plugin *const dt_problem_plugins[];

/* The problem named `name`, or NULL. */
const dt_problem_def *dt_problem_find(const char *name);
/* The experiment's problem (e->problem) and its options. DT_ERR_INTERNAL when e was loaded with
 * another registry. */
DT_MUST_USE dt_status dt_problem_of(const dt_experiment_config *e, const dt_problem_def **def, const void **opts);
/* Loads the experiment's data through its problem. dt_data_free accepts a zeroed struct. */
DT_MUST_USE dt_status dt_data_load(const dt_experiment_config *e, dt_data *out);
void dt_data_free(dt_data *d);
/* The model the experiment trains on samples of `shape`: experiment.model.layers when given, else
 * the problem's default; input shape and classes from `shape`. */
DT_MUST_USE dt_status dt_problem_model(const dt_config *cfg, const dt_samples *shape, dt_model_spec *spec);
/* The same without data: the shape from the problem (for `dtrun check`). */
DT_MUST_USE dt_status dt_problem_model_unloaded(const dt_config *cfg, dt_model_spec *spec);

/* An upper bound L on the Lipschitz constant of every node's full-batch gradient (without the
 * L2 term: add l2) for a model that is softmax regression ([flatten,] linear): ½λmax(X̃ᵀX̃/n) on
 * the node with the most curvature (problems/curvature.c); 0 for other models, whose curvature
 * is not cheap to bound. Gradient descent at a rate above 2/L may oscillate or diverge. */
DT_MUST_USE dt_status dt_problem_lipschitz(const dt_samples *train, const dt_split *split, const dt_model_spec *spec, double *out);

/* problems/logreg: n samples of `features` floats in `classes` classes, labels drawn from
 * softmax(3 W* x) with W* ~ N(0, 1/features); stream id selects train (0) or test (1). */
DT_MUST_USE dt_status dt_synthetic_make(uint64_t seed, int n, int features, int classes, uint64_t stream,
                                        float **x, uint8_t **labels);

#endif
