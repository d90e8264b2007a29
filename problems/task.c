/* The learning task shared by the problems: a model on samples split over nodes. Each local
 * node has its own minibatch stream (reshuffled every epoch, like a DataLoader with
 * shuffle=True; the last batch of an epoch may be smaller). The training set is resident in the
 * backend (a device uploads it once); each call draws every local node's sample indices and
 * augmentation on the host, one backend call gathers all the batches, and the gradients of all
 * nodes come from one node-batched backend call. The test set is decoded into backend memory
 * once, and one backend call evaluates every local node on it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dt/parallel.h"
#include "dt/problem.h"
#include "dt/rng.h"
#include "dt/trace.h"


typedef struct node_state {
  dt_rng rng;
  uint32_t *perm; /* this epoch's order of the node's samples */
  size_t cursor;  /* next position in perm; with a batch order, the steps taken */
  long epochs;    /* completed passes */
  uint64_t seen;  /* samples processed since begin */
} node_state;

struct dt_task {
  dt_backend *be;
  const dt_samples *train, *test;
  const dt_split *split;
  dt_model *model;
  int first, count;
  uint64_t seed;
  double l2;
  int batch, full_batch, ws_batch;
  node_state *node;
  dt_rng *dropout; /* [count] each node's dropout stream (seed, dropout, node), restarted by begin */
  /* augmentation: crop padding and flip, each node's stream (seed, augment, node) restarted by
   * begin, and each node's (dy, dx, flip) per sample of this call; augment NULL when off */
  int crop_padding, flip;
  dt_rng *augment;
  int16_t *aug;
  const int16_t **aug_of; /* [count] node l's row of aug */
  float fill[DT_MAX_CHANNELS];
  /* the training set, resident in the backend, and the batches of all local nodes gathered
   * from it into backend memory */
  void *train_res;
  const uint32_t **idx_of; /* [count] node l's sample indices in this call (host) */
  float *x;
  int32_t *y;
  size_t x_stride, y_stride;
  int *nb;        /* [count] samples in this call */
  float *nb_loss; /* [count] */
  dt_slab gtmp;   /* full batch: one chunk's gradients */
  dt_slab obj_theta, obj_grad, obj_buffers; /* dt_task_objective's vectors */
  /* each node's model buffers (running statistics; no data without any), moved by training
   * calls, read by evaluations, restarted from buf0 by begin */
  dt_slab buffers;
  float *buf0;
  void *train_plan, *eval_plan;
  float *test_x; /* decoded test set, backend memory */
  int32_t *test_y;
  float *sub_x;   /* a test subset (evaluation.test_samples), backend memory */
  int32_t *sub_y;
  size_t sub_n;
  dt_trace *trace; /* --dump-trace: every training call's samples and loss (borrowed), or NULL */
  const dt_batch_order *order; /* experiment.batch_order (borrowed), or NULL */
};

size_t dt_task_dim(const dt_task *t) { return dt_model_num_params(t->model); }
void dt_task_set_trace(dt_task *t, dt_trace *trace) { t->trace = trace; }
dt_slab *dt_task_buffers(dt_task *t) { return &t->buffers; }
const dt_model *dt_task_model(const dt_task *t) { return t->model; }
dt_backend *dt_task_backend(const dt_task *t) { return t->be; }
void dt_task_init_params(const dt_task *t, uint64_t seed, float *theta) { dt_model_init_params(t->model, seed, theta); }
float *dt_task_initial_buffers(dt_task *t) { return t->buf0; }
void dt_task_set_batch_order(dt_task *t, const dt_batch_order *o) { t->order = o; }

static void free_batches(dt_task *t) {
  dt_backend *be = t->be;
  dt_be_free(be, t->x);
  dt_be_free(be, t->y);
  dt_free(t->aug);
  dt_slab_free(be, &t->gtmp);
  if (t->train_plan != NULL) dt_be_plan_free(be, t->train_plan);
  t->x = NULL;
  t->y = NULL;
  t->aug = NULL;
  t->train_plan = NULL;
}

void dt_task_free(dt_task *t) {
  if (t == NULL) return;
  for (int l = 0; t->node != NULL && l < t->count; l++) dt_free(t->node[l].perm);
  dt_free(t->node);
  dt_free(t->dropout);
  dt_free(t->augment);
  dt_free(t->aug_of);
  dt_free(t->idx_of);
  free_batches(t);
  if (t->train_res != NULL) dt_be_samples_free(t->be, t->train_res);
  dt_slab_free(t->be, &t->obj_theta);
  dt_slab_free(t->be, &t->obj_grad);
  dt_slab_free(t->be, &t->obj_buffers);
  dt_slab_free(t->be, &t->buffers);
  dt_free(t->buf0);
  if (t->eval_plan != NULL) dt_be_plan_free(t->be, t->eval_plan);
  dt_be_free(t->be, t->test_x);
  dt_be_free(t->be, t->test_y);
  dt_be_free(t->be, t->sub_x);
  dt_be_free(t->be, t->sub_y);
  dt_free(t->nb);
  dt_free(t->nb_loss);
  dt_model_free(t->model);
  dt_free(t);
}

/* Samples idx[0..n) of the test set (all of it when idx is NULL), decoded into backend memory. */
static dt_status decode_test(dt_task *t, const uint32_t *idx, size_t n, float **x, int32_t **y) {
  const dt_samples *s = t->test;
  dt_backend *be = t->be;
  dt_status st = DT_OK;
  float *xh = NULL;
  int32_t *yh = NULL;
  uint32_t *all = NULL;
  DT_TRY(dt_be_alloc(be, sizeof(float) * n * s->dim, (void **)x));
  DT_TRY(dt_be_alloc(be, sizeof(int32_t) * n, (void **)y));
  xh = be->host_memory ? *x : NULL;
  yh = be->host_memory ? *y : NULL;
  if (!be->host_memory) {
    DT_ALLOC_GOTO(xh, n * s->dim, "test set");
    DT_ALLOC_GOTO(yh, n, "test set");
  }
  if (idx == NULL) {
    DT_ALLOC_GOTO(all, n, "test set");
    for (size_t i = 0; i < n; i++) all[i] = (uint32_t)i;
    idx = all;
  }
  dt_samples_rows(s, idx, n, xh, yh);
  DT_TRY_GOTO(dt_be_upload(be, *x, xh, sizeof(float) * n * s->dim));
  DT_TRY_GOTO(dt_be_upload(be, *y, yh, sizeof(int32_t) * n));
cleanup:
  if (xh != *x) dt_free(xh);
  if (yh != *y) dt_free(yh);
  dt_free(all);
  return st;
}

static int cmp_u32(const void *a, const void *b) {
  const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* The evaluation's samples: the whole test set, or a seeded subset of n of them (kept until
 * another size is asked for). */
static dt_status test_samples(dt_task *t, int want, const float **x, const int32_t **y, size_t *n) {
  const size_t count = t->test->count;
  if (want <= 0 || (size_t)want >= count) {
    if (t->test_x == NULL) DT_TRY(decode_test(t, NULL, count, &t->test_x, &t->test_y));
    *x = t->test_x, *y = t->test_y, *n = count;
    return DT_OK;
  }
  if (t->sub_n != (size_t)want) {
    uint32_t *perm = NULL;
    dt_status st = DT_OK;
    dt_be_free(t->be, t->sub_x);
    dt_be_free(t->be, t->sub_y);
    t->sub_x = NULL, t->sub_y = NULL, t->sub_n = 0;
    DT_ALLOC(perm, count, "test subset");
    for (size_t i = 0; i < count; i++) perm[i] = (uint32_t)i;
    dt_rng r;
    dt_rng_init(&r, t->seed, DT_RNG_EVAL, 0);
    dt_rng_shuffle_u32(&r, perm, count);
    qsort(perm, (size_t)want, sizeof *perm, cmp_u32);
    st = decode_test(t, perm, (size_t)want, &t->sub_x, &t->sub_y);
    dt_free(perm);
    DT_TRY(st);
    t->sub_n = (size_t)want;
  }
  *x = t->sub_x, *y = t->sub_y, *n = t->sub_n;
  return DT_OK;
}

dt_status dt_task_create(dt_backend *be, const dt_samples *train, const dt_samples *test, const dt_split *split,
                         const dt_model_spec *spec, int first, int count, uint64_t seed, dt_task **out) {
  dt_status st = DT_OK;
  dt_task *t = NULL;
  *out = NULL;
  DT_ALLOC_GOTO(t, 1, "task");
  t->be = be;
  t->train = train;
  t->test = test;
  t->split = split;
  t->first = first;
  t->count = count;
  t->seed = seed;
  DT_TRY_GOTO(dt_model_create(spec, &t->model));
  DT_CHECK_KEY_GOTO(dt_model_input_size(t->model) == train->dim, DT_ERR_CONFIG, "experiment.model",
                    "experiment.model: the model takes %zu inputs per sample but the data has %zu", dt_model_input_size(t->model),
                    train->dim);
  DT_ALLOC_GOTO(t->node, count, "task nodes");
  DT_ALLOC_GOTO(t->dropout, count > 0 ? count : 1, "dropout streams");
  for (int l = 0; l < count; l++) DT_ALLOC_GOTO(t->node[l].perm, dt_split_size(split, first + l), "minibatch order");
  DT_ALLOC_GOTO(t->nb, count, "task");
  DT_ALLOC_GOTO(t->nb_loss, count, "task");
  DT_ALLOC_GOTO(t->idx_of, count > 0 ? count : 1, "task");
  DT_TRY_GOTO(dt_be_samples_create(be, train, &t->train_res));
  DT_TRY_GOTO(dt_be_plan_create(be, t->model, DT_EVAL_CHUNK, count, split->num_nodes, &t->eval_plan));
  const size_t nb = dt_model_num_buffers(t->model);
  if (nb > 0) {
    DT_ALLOC_GOTO(t->buf0, nb, "model buffers");
    dt_model_init_buffers(t->model, t->buf0);
    DT_TRY_GOTO(dt_slab_create(be, count, nb, &t->buffers));
  }
  *out = t;
  t = NULL;
cleanup:
  dt_task_free(t);
  return st;
}

static dt_status alloc_batches(dt_task *t, int ws_batch) {
  dt_backend *be = t->be;
  free_batches(t);
  t->x_stride = dt_slab_stride((size_t)ws_batch * t->train->dim);
  t->y_stride = ((size_t)ws_batch + 15) & ~(size_t)15;
  DT_TRY(dt_be_alloc(be, sizeof(float) * t->x_stride * (size_t)t->count, (void **)&t->x));
  DT_TRY(dt_be_alloc(be, sizeof(int32_t) * t->y_stride * (size_t)t->count, (void **)&t->y));
  if (t->augment != NULL) {
    DT_ALLOC(t->aug, 3 * (size_t)ws_batch * (size_t)(t->count > 0 ? t->count : 1), "augmentation");
    for (int l = 0; l < t->count; l++) t->aug_of[l] = t->aug + 3 * (size_t)ws_batch * (size_t)l;
  }
  DT_TRY(dt_slab_create(be, t->count, dt_task_dim(t), &t->gtmp));
  DT_TRY(dt_be_plan_create(be, t->model, ws_batch, t->count, t->split->num_nodes, &t->train_plan));
  t->ws_batch = ws_batch;
  return DT_OK;
}

dt_status dt_task_begin(dt_task *t, int batch_size, int full_batch, double l2) {
  t->l2 = l2;
  const int ws_batch = full_batch ? DT_FULL_BATCH_CHUNK : batch_size;
  for (int l = 0; l < t->count; l++) {
    node_state *ns = &t->node[l];
    const int node = t->first + l;
    dt_rng_init(&ns->rng, t->seed, DT_RNG_BATCH, (uint64_t)node);
    ns->cursor = t->order != NULL ? 0 : dt_split_size(t->split, node); /* empty: the first call shuffles */
    ns->epochs = -1;                                                    /* ... and that first shuffle starts epoch 0 */
    ns->seen = 0;
    dt_rng_init(&t->dropout[l], t->seed, DT_RNG_DROPOUT, (uint64_t)node);
    if (t->augment != NULL) dt_rng_init(&t->augment[l], t->seed, DT_RNG_AUGMENT, (uint64_t)node);
  }
  if (ws_batch != t->ws_batch) DT_TRY(alloc_batches(t, ws_batch));
  if (t->buf0 != NULL) DT_TRY(dt_slab_broadcast_host(t->be, t->buf0, &t->buffers)); /* every problem starts afresh */
  t->batch = batch_size;
  t->full_batch = full_batch;
  return DT_OK;
}

/* Gathers the batches of the nodes with t->nb[l] > 0 (indices t->idx_of[l], augmented when
 * `augmented`) from the resident training set into backend memory. */
static dt_status gather_batches(dt_task *t, int augmented) {
  const dt_gather g = {.count = t->count, .n = t->nb, .idx = t->idx_of, .aug = augmented ? t->aug_of : NULL,
                       .fill = t->fill, .x = t->x, .x_stride = t->x_stride, .y = t->y, .y_stride = t->y_stride,
                       .pad = t->ws_batch};
  DT_TRY(dt_be_samples_gather(t->be, t->train_res, &g));
  return dt_be_profile_mark(t->be, DT_PHASE_BATCH);
}

/* The batched backend call for the nodes with t->nb[l] > 0: gradients into grad, losses into
 * t->nb_loss, running statistics moved in buffers (NULL data: none). */
static dt_status model_gradients(dt_task *t, const dt_slab *theta, dt_slab *grad, dt_slab *buffers) {
  const dt_node_batch nb = {.count = t->count, .theta = theta->data, .theta_stride = theta->stride,
                            .buffers = buffers->data, .buffers_stride = buffers->stride, .grad = grad->data,
                            .grad_stride = grad->stride, .x = t->x, .x_stride = t->x_stride, .y = t->y,
                            .y_stride = t->y_stride, .batch = t->nb, .loss = t->nb_loss,
                            .dropout = t->dropout, .x_padded = 1}; /* gather_batches padded them */
  DT_TRY(dt_be_model_gradients(t->be, t->train_plan, &nb));
  return dt_be_profile_mark(t->be, DT_PHASE_MODEL);
}

/* λ/2‖θ‖² of node l: its gradient joins grad, its value *loss. */
static dt_status add_l2(const dt_task *t, const float *theta, float *grad, double *loss) {
  if (t->l2 == 0.0) return DT_OK;
  const size_t d = dt_task_dim(t);
  double sq;
  DT_TRY(dt_be_axpy(t->be, d, (float)t->l2, theta, grad));
  DT_TRY(dt_be_dot(t->be, d, theta, theta, &sq));
  *loss += 0.5 * t->l2 * sq;
  return DT_OK;
}

/* Mean loss and gradient over all of each active node's samples, in chunks of ws_batch samples
 * (chunk c of every node in one call); grad overwritten, loss[l] the mean loss. */
static dt_status full_gradients(dt_task *t, const dt_slab *theta, dt_slab *grad, dt_slab *buffers, const uint8_t *active,
                                double *loss) {
  dt_backend *be = t->be;
  const size_t d = dt_task_dim(t);
  size_t most = 0;
  for (int l = 0; l < t->count; l++) {
    if (active != NULL && !active[l]) continue;
    const size_t m = dt_split_size(t->split, t->first + l);
    most = m > most ? m : most;
    DT_TRY(dt_be_fill(be, d, 0.0f, dt_slab_node(grad, l)));
    loss[l] = 0;
  }
  for (size_t s = 0; s < most; s += (size_t)t->ws_batch) {
    for (int l = 0; l < t->count; l++) { /* index arithmetic: not worth a thread team */
      const int node = t->first + l;
      const size_t m = dt_split_size(t->split, node);
      t->nb[l] = 0;
      if ((active != NULL && !active[l]) || s >= m) continue;
      const size_t b = m - s < (size_t)t->ws_batch ? m - s : (size_t)t->ws_batch;
      t->idx_of[l] = t->split->idx + t->split->start[node] + s;
      t->nb[l] = (int)b;
    }
    DT_TRY(gather_batches(t, 0));
    DT_TRY(model_gradients(t, theta, &t->gtmp, buffers));
    for (int l = 0; l < t->count; l++) {
      if (t->nb[l] == 0) continue;
      const size_t m = dt_split_size(t->split, t->first + l), b = (size_t)t->nb[l];
      DT_TRY(dt_be_axpy(be, d, (float)b / (float)m, dt_slab_node(&t->gtmp, l), dt_slab_node(grad, l)));
      loss[l] += (double)t->nb_loss[l] * (double)b / (double)m;
    }
  }
  for (int l = 0; l < t->count; l++) {
    if (active != NULL && !active[l]) continue;
    t->node[l].seen += dt_split_size(t->split, t->first + l);
    t->node[l].epochs++;
  }
  return DT_OK;
}

/* Node l's augmentation of its b images in this call: per image, the crop offsets (i, j uniform
 * in [0, 2·padding], torchvision's order) and then the flip (1 in 2) from the node's
 * augmentation stream, as (dy, dx, flip) for the gather. */
static void draw_augment(dt_task *t, int l, size_t b) {
  const int p = t->crop_padding;
  int16_t *a = t->aug + 3 * (size_t)t->ws_batch * (size_t)l;
  for (size_t k = 0; k < b; k++) {
    a[3 * k] = (int16_t)(p > 0 ? (int)dt_rng_below(&t->augment[l], (uint64_t)(2 * p + 1)) - p : 0);
    a[3 * k + 1] = (int16_t)(p > 0 ? (int)dt_rng_below(&t->augment[l], (uint64_t)(2 * p + 1)) - p : 0);
    a[3 * k + 2] = (int16_t)(t->flip ? (int)dt_rng_below(&t->augment[l], 2) : 0);
  }
}

dt_status dt_augment_check(const dt_samples *s, int crop_padding, int flip) {
  if (crop_padding == 0 && !flip) return DT_OK;
  DT_CHECK_KEY(s->u8 != NULL && s->in_h > 1 && s->in_w > 1, DT_ERR_CONFIG, "experiment.augment",
               "experiment.augment: augmentation needs images (C×H×W); this dataset's samples are %zu-float vectors", s->dim);
  return DT_OK;
}

dt_status dt_task_set_augment(dt_task *t, int crop_padding, int flip) {
  const dt_samples *s = t->train;
  if (crop_padding == 0 && !flip) return DT_OK;
  DT_TRY(dt_augment_check(s, crop_padding, flip));
  DT_CHECK_KEY(t->ws_batch == 0, DT_ERR_INTERNAL, "experiment.augment", "augmentation set after the task began");
  DT_CHECK_KEY(crop_padding <= INT16_MAX, DT_ERR_CONFIG, "experiment.augment", "experiment.augment: crop padding %d is over %d",
               crop_padding, INT16_MAX);
  t->crop_padding = crop_padding;
  t->flip = flip;
  DT_ALLOC(t->augment, t->count > 0 ? t->count : 1, "augmentation streams");
  DT_ALLOC(t->aug_of, t->count > 0 ? t->count : 1, "augmentation");
  for (int c = 0; c < s->in_c && c < DT_MAX_CHANNELS; c++) t->fill[c] = (0.0f - s->mean[c]) / s->std[c];
  return DT_OK;
}

/* The next minibatch of node l: its sample indices (t->idx_of[l]), augmentation and size
 * (t->nb[l]). */
size_t dt_task_step_samples(const dt_task *t, int node, uint64_t step) {
  const size_t m = dt_split_size(t->split, node), b = (size_t)t->batch;
  if (t->full_batch || m == 0 || b == 0) return m;
  if (t->order != NULL) return step < t->order->steps[node] ? t->order->start[node][step + 1] - t->order->start[node][step] : b;
  const uint64_t per_epoch = (m + b - 1) / b; /* next_batch's passes: full batches, then the rest */
  return step % per_epoch == per_epoch - 1 ? m - (per_epoch - 1) * b : b;
}

/* Node l's next step of the batch order. */
static dt_status next_ordered_batch(dt_task *t, int l) {
  node_state *ns = &t->node[l];
  const int node = t->first + l;
  const dt_batch_order *o = t->order;
  DT_CHECK(ns->cursor < o->steps[node], DT_ERR_UNSUPPORTED,
           "experiment.batch_order holds %zu minibatches for node %d; the run asks for more (give the file more steps, or run "
           "fewer rounds)",
           o->steps[node], node);
  const size_t b = o->start[node][ns->cursor + 1] - o->start[node][ns->cursor];
  t->idx_of[l] = o->idx[node] + o->start[node][ns->cursor];
  if (t->augment != NULL) draw_augment(t, l, b);
  ns->cursor++;
  ns->seen += b;
  ns->epochs = (long)(ns->seen / dt_split_size(t->split, node)); /* completed passes, by count */
  t->nb[l] = (int)b;
  return DT_OK;
}

static dt_status next_batch(dt_task *t, int l) {
  if (t->order != NULL) return next_ordered_batch(t, l);
  node_state *ns = &t->node[l];
  const int node = t->first + l;
  const size_t m = dt_split_size(t->split, node);
  if (ns->cursor >= m) {
    memcpy(ns->perm, t->split->idx + t->split->start[node], sizeof(uint32_t) * m);
    dt_rng_shuffle_u32(&ns->rng, ns->perm, m);
    ns->cursor = 0;
    ns->epochs++;
  }
  const size_t b = m - ns->cursor < (size_t)t->batch ? m - ns->cursor : (size_t)t->batch;
  t->idx_of[l] = ns->perm + ns->cursor;
  if (t->augment != NULL) draw_augment(t, l, b);
  ns->cursor += b;
  ns->seen += b;
  t->nb[l] = (int)b;
  return DT_OK;
}

typedef struct batch_call {
  dt_task *t;
  const uint8_t *active;
} batch_call;

/* Node l's next minibatch (none when it is not active). */
static dt_status next_batch_of(void *p, int l) {
  const batch_call *c = p;
  c->t->nb[l] = 0;
  return c->active == NULL || c->active[l] ? next_batch(c->t, l) : DT_OK;
}

/* The trace of node l's call: the samples' indices, labels and inputs as the model sees them
 * (normalised, augmented). A full-batch call's are the node's data in split order, rebuilt here. */
static dt_status trace_samples(dt_task *t, int l) {
  const int node = t->first + l;
  const uint32_t *idx;
  size_t b;
  const float *x = t->x + (size_t)l * t->x_stride;
  const int32_t *y = t->y + (size_t)l * t->y_stride;
  float *fx = NULL;
  int32_t *fy = NULL;
  dt_status st = DT_OK;
  if (t->full_batch) {
    b = dt_split_size(t->split, node);
    idx = t->split->idx + t->split->start[node];
    DT_ALLOC_GOTO(fx, b * t->train->dim + 1, "trace");
    DT_ALLOC_GOTO(fy, b + 1, "trace");
    dt_samples_rows(t->train, idx, b, fx, fy);
    x = fx, y = fy;
  } else {
    b = (size_t)t->nb[l];
    idx = t->idx_of[l];
    if (!t->be->host_memory) { /* the gathered batch, as the model sees it */
      DT_ALLOC_GOTO(fx, b * t->train->dim + 1, "trace");
      DT_ALLOC_GOTO(fy, b + 1, "trace");
      DT_TRY_GOTO(dt_be_download(t->be, fx, x, sizeof(float) * b * t->train->dim));
      DT_TRY_GOTO(dt_be_download(t->be, fy, y, sizeof(int32_t) * b));
      x = fx, y = fy;
    }
  }
  _Static_assert(sizeof(uint32_t) == sizeof(int32_t), "indices are written as int32");
  DT_TRY_GOTO(dt_trace_i32(t->trace, l, "BIDX", (const int32_t *)idx, b));
  DT_TRY_GOTO(dt_trace_i32(t->trace, l, "BLAB", y, b));
  DT_TRY_GOTO(dt_trace_f32(t->trace, l, "BXIN", x, b * t->train->dim));
cleanup:
  dt_free(fx);
  dt_free(fy);
  return st;
}

/* The trace of node l's gradient as the call returns it (L2 term included): the twins take from it
 * only which side of a ReLU's kink float32 rounding put a pre-activation near 0 (tests/twin). */
static dt_status trace_gradient(dt_task *t, const dt_slab *grad, int l) {
  const size_t d = dt_task_dim(t);
  if (t->be->host_memory) return dt_trace_f32(t->trace, l, "GRAD", dt_slab_node(grad, l), d);
  float *host = NULL;
  dt_status st = DT_OK;
  DT_ALLOC_GOTO(host, d, "trace");
  DT_TRY_GOTO(dt_slab_download_node(t->be, grad, l, host));
  DT_TRY_GOTO(dt_trace_f32(t->trace, l, "GRAD", host, d));
cleanup:
  dt_free(host);
  return st;
}

dt_status dt_task_gradients(dt_task *t, const dt_slab *theta, dt_slab *grad, const uint8_t *active, float *loss) {
  dt_backend *be = t->be;
  double total[t->count > 0 ? t->count : 1];
  DT_TRY(dt_be_profile_mark(be, DT_PHASE_OTHER));
  if (t->full_batch) {
    for (int l = 0; l < t->count; l++)
      if ((active == NULL || active[l]) && t->node[l].epochs < 0) t->node[l].epochs = 0;
    for (int l = 0; l < t->count && t->trace != NULL; l++)
      if (active == NULL || active[l]) DT_TRY(trace_samples(t, l));
    DT_TRY(full_gradients(t, theta, grad, &t->buffers, active, total));
  } else {
    /* nodes apart (a reshuffle at an epoch's end is O(split size)), on no more threads than nodes */
    const batch_call bc = {t, active};
    DT_TRY(dt_parallel_for(t->count, be->threads < t->count ? be->threads : t->count, next_batch_of, (void *)&bc));
    DT_TRY(gather_batches(t, t->augment != NULL));
    for (int l = 0; l < t->count && t->trace != NULL; l++)
      if (t->nb[l] > 0) DT_TRY(trace_samples(t, l));
    DT_TRY(model_gradients(t, theta, grad, &t->buffers));
    for (int l = 0; l < t->count; l++) total[l] = t->nb_loss[l];
  }
  for (int l = 0; l < t->count; l++) {
    if (active != NULL && !active[l]) continue;
    DT_TRY(add_l2(t, dt_slab_node(theta, l), dt_slab_node(grad, l), &total[l]));
    loss[l] = (float)total[l];
    DT_TRY(dt_trace_f32(t->trace, l, "LOSS", &loss[l], 1));
    if (t->trace != NULL) DT_TRY(trace_gradient(t, grad, l));
  }
  return DT_OK;
}

dt_status dt_task_gradient_node(dt_task *t, const dt_slab *theta, dt_slab *grad, int l, float *loss) {
  if (t->full_batch || !t->be->host_memory) { /* the batched call with one node active */
    uint8_t active[t->count > 0 ? t->count : 1];
    float losses[t->count > 0 ? t->count : 1];
    memset(active, 0, sizeof active);
    active[l] = 1;
    DT_TRY(dt_task_gradients(t, theta, grad, active, losses));
    *loss = losses[l];
    return DT_OK;
  }
  /* node l alone: the calls above with a one-node view, so the cost does not grow with count */
  DT_TRY(dt_be_profile_mark(t->be, DT_PHASE_OTHER));
  DT_TRY(next_batch(t, l));
  const dt_gather g = {.count = 1, .n = &t->nb[l], .idx = &t->idx_of[l], .aug = t->augment != NULL ? &t->aug_of[l] : NULL,
                       .fill = t->fill, .x = t->x + t->x_stride * (size_t)l, .x_stride = t->x_stride,
                       .y = t->y + t->y_stride * (size_t)l, .y_stride = t->y_stride};
  DT_TRY(dt_be_samples_gather(t->be, t->train_res, &g));
  DT_TRY(dt_be_profile_mark(t->be, DT_PHASE_BATCH));
  if (t->trace != NULL) DT_TRY(trace_samples(t, l));
  float *bufs = t->buffers.data != NULL ? dt_slab_node(&t->buffers, l) : NULL;
  const dt_node_batch nb = {.count = 1, .theta = dt_slab_node(theta, l), .theta_stride = theta->stride, .buffers = bufs,
                            .buffers_stride = t->buffers.stride, .grad = dt_slab_node(grad, l), .grad_stride = grad->stride,
                            .x = t->x + t->x_stride * (size_t)l, .x_stride = t->x_stride, .y = t->y + t->y_stride * (size_t)l,
                            .y_stride = t->y_stride, .batch = &t->nb[l], .loss = &t->nb_loss[l],
                            .dropout = t->dropout != NULL ? &t->dropout[l] : NULL};
  DT_TRY(dt_be_model_gradients(t->be, t->train_plan, &nb));
  DT_TRY(dt_be_profile_mark(t->be, DT_PHASE_MODEL));
  double total = t->nb_loss[l];
  DT_TRY(add_l2(t, dt_slab_node(theta, l), dt_slab_node(grad, l), &total));
  *loss = (float)total;
  DT_TRY(dt_trace_f32(t->trace, l, "LOSS", loss, 1));
  return t->trace != NULL ? trace_gradient(t, grad, l) : DT_OK;
}

/* One evaluation call over count models (theta, buffers at their strides; count 1 and stride 0
 * for a single model). */
static dt_status evaluate(dt_task *t, int count, const float *theta, size_t theta_stride, const float *buffers,
                         size_t buffers_stride, int want, double *val_loss, double *accuracy) {
  long *correct = NULL;
  const float *x;
  const int32_t *y;
  size_t n;
  dt_status st = DT_OK;
  DT_TRY(test_samples(t, want, &x, &y, &n));
  DT_ALLOC_GOTO(correct, count, "evaluation");
  for (int l = 0; l < count; l++) val_loss[l] = 0;
  const dt_node_eval ne = {.count = count, .theta = theta, .theta_stride = theta_stride, .buffers = buffers,
                           .buffers_stride = buffers_stride, .x = x, .y = y, .n = (int)n, .loss_sum = val_loss,
                           .correct = correct};
  DT_TRY_GOTO(dt_be_model_evaluate(t->be, t->eval_plan, &ne));
  for (int l = 0; l < count; l++) {
    val_loss[l] /= (double)n;
    accuracy[l] = (double)correct[l] / (double)n;
  }
cleanup:
  dt_free(correct);
  return st;
}

dt_status dt_task_evaluate(dt_task *t, const dt_slab *theta, int test_samples_wanted, double *val_loss, double *accuracy) {
  return evaluate(t, t->count, theta->data, theta->stride, t->buffers.data, t->buffers.stride, test_samples_wanted, val_loss,
                  accuracy);
}

dt_status dt_task_evaluate_model(dt_task *t, const float *theta, const float *buffers, int test_samples_wanted, double *val_loss,
                                 double *accuracy) {
  return evaluate(t, 1, theta, 0, t->buf0 != NULL ? buffers : NULL, 0, test_samples_wanted, val_loss, accuracy);
}

dt_status dt_task_objective(dt_task *t, int node, const float *theta, double *value) {
  const int l = node - t->first;
  node_state *ns = &t->node[l];
  double loss[t->count];
  uint8_t active[t->count];
  if (t->obj_theta.data == NULL) {
    DT_TRY(dt_slab_create(t->be, t->count, dt_task_dim(t), &t->obj_theta));
    DT_TRY(dt_slab_create(t->be, t->count, dt_task_dim(t), &t->obj_grad));
    if (t->buf0 != NULL) DT_TRY(dt_slab_create(t->be, t->count, t->buffers.dim, &t->obj_buffers));
  }
  /* an objective evaluation is not training: it moves a copy of the running statistics */
  if (t->buf0 != NULL) DT_TRY(dt_be_copy(t->be, t->buffers.dim, dt_slab_node(&t->buffers, l), dt_slab_node(&t->obj_buffers, l)));
  memset(active, 0, sizeof active);
  active[l] = 1;
  DT_TRY(dt_be_copy(t->be, dt_task_dim(t), theta, dt_slab_node(&t->obj_theta, l)));
  const uint64_t seen = ns->seen;
  const long epochs = ns->epochs;
  DT_TRY(full_gradients(t, &t->obj_theta, &t->obj_grad, &t->obj_buffers, active, loss));
  DT_TRY(add_l2(t, theta, dt_slab_node(&t->obj_grad, l), &loss[l]));
  ns->seen = seen; /* an objective evaluation is not training */
  ns->epochs = epochs;
  *value = loss[l];
  return DT_OK;
}

uint64_t dt_task_samples_seen(const dt_task *t, int node) { return t->node[node - t->first].seen; }

double dt_task_mean_node_samples(const dt_task *t) {
  return (double)t->split->start[t->split->num_nodes] / t->split->num_nodes;
}

double dt_task_epoch(const dt_task *t, int node) {
  const node_state *ns = &t->node[node - t->first];
  if (ns->epochs < 0) return 0.0;
  if (t->full_batch) return (double)ns->epochs;
  const size_t m = dt_split_size(t->split, node);
  if (t->order != NULL) return (double)ns->seen / (double)m;
  return (double)ns->epochs + (double)ns->cursor / (double)m;
}

/* ---- checkpoints: a node's stream state as bytes ------------------------------------------- */

/* rng, cursor, epochs, seen, dropout rng, then this epoch's order (split size uint32s), then the
 * node's model buffers (none for a model without running statistics) */
#define NODE_FIXED (sizeof(dt_rng) + 3 * sizeof(uint64_t) + sizeof(dt_rng))

static size_t buffer_bytes(const dt_task *t) { return t->buf0 != NULL ? sizeof(float) * t->buffers.dim : 0; }
static size_t augment_bytes(const dt_task *t) { return t->augment != NULL ? sizeof(dt_rng) : 0; }

size_t dt_task_node_state_size(const dt_task *t, int l) {
  return NODE_FIXED + sizeof(uint32_t) * dt_split_size(t->split, t->first + l) + buffer_bytes(t) + augment_bytes(t);
}

dt_status dt_task_node_state_save(dt_task *t, int l, void *buf) {
  const node_state *ns = &t->node[l];
  unsigned char *p = buf;
  const uint64_t cursor = ns->cursor, epochs = (uint64_t)(int64_t)ns->epochs, seen = ns->seen;
  memcpy(p, &ns->rng, sizeof ns->rng), p += sizeof ns->rng;
  memcpy(p, &cursor, 8), p += 8;
  memcpy(p, &epochs, 8), p += 8;
  memcpy(p, &seen, 8), p += 8;
  memcpy(p, &t->dropout[l], sizeof(dt_rng)), p += sizeof(dt_rng);
  memcpy(p, ns->perm, sizeof(uint32_t) * dt_split_size(t->split, t->first + l));
  p += sizeof(uint32_t) * dt_split_size(t->split, t->first + l);
  if (t->buf0 != NULL) DT_TRY(dt_slab_download_node(t->be, &t->buffers, l, (float *)(void *)p));
  p += buffer_bytes(t);
  if (t->augment != NULL) memcpy(p, &t->augment[l], sizeof(dt_rng));
  return DT_OK;
}

dt_status dt_task_node_state_load(dt_task *t, int l, const void *buf, size_t size) {
  node_state *ns = &t->node[l];
  const size_t m = dt_split_size(t->split, t->first + l);
  DT_CHECK(size == dt_task_node_state_size(t, l), DT_ERR_DATA,
           "node %d: the checkpoint's minibatch state has %zu bytes, this node's data need %zu (another split?)", t->first + l,
           size, dt_task_node_state_size(t, l));
  const unsigned char *p = buf;
  uint64_t cursor, epochs, seen;
  memcpy(&ns->rng, p, sizeof ns->rng), p += sizeof ns->rng;
  memcpy(&cursor, p, 8), p += 8;
  memcpy(&epochs, p, 8), p += 8;
  memcpy(&seen, p, 8), p += 8;
  memcpy(&t->dropout[l], p, sizeof(dt_rng)), p += sizeof(dt_rng);
  memcpy(ns->perm, p, sizeof(uint32_t) * m);
  const size_t most = t->order != NULL ? t->order->steps[t->first + l] : m; /* a batch order's cursor counts steps */
  DT_CHECK(cursor <= most && ns->rng.used >= 0 && ns->rng.used <= 4 && t->dropout[l].used >= 0 && t->dropout[l].used <= 4,
           DT_ERR_DATA, "node %d: the checkpoint's minibatch state is corrupt", t->first + l);
  for (size_t j = 0; j < m; j++)
    DT_CHECK(ns->perm[j] < t->train->count, DT_ERR_DATA, "node %d: the checkpoint's minibatch order is corrupt", t->first + l);
  ns->cursor = (size_t)cursor;
  ns->epochs = (long)(int64_t)epochs;
  ns->seen = seen;
  if (t->buf0 != NULL) {
    const unsigned char *bp = p + sizeof(uint32_t) * m;
    double norm;
    DT_TRY(dt_slab_upload_node(t->be, &t->buffers, l, (const float *)(const void *)bp));
    DT_TRY(dt_be_nrm2(t->be, t->buffers.dim, dt_slab_node(&t->buffers, l), &norm));
    DT_CHECK(isfinite(norm), DT_ERR_DATA, "node %d: the checkpoint's model buffers are corrupt (not finite)", t->first + l);
  }
  if (t->augment != NULL) {
    memcpy(&t->augment[l], p + sizeof(uint32_t) * m + buffer_bytes(t), sizeof(dt_rng));
    DT_CHECK(t->augment[l].used >= 0 && t->augment[l].used <= 4, DT_ERR_DATA,
             "node %d: the checkpoint's augmentation stream is corrupt", t->first + l);
  }
  return DT_OK;
}
