/* The learning task shared by the problems: a model on samples split over nodes. Each local
 * node has its own minibatch stream (reshuffled every epoch, like a DataLoader with
 * shuffle=True; the last batch of an epoch may be smaller), its own scratch and batch buffers,
 * so nodes can be computed in parallel. Evaluation decodes each chunk of the test set once and
 * runs every local node's model on it. */
#include <math.h>
#include <string.h>

#include "dt/problem.h"
#include "dt/rng.h"
#ifdef _OPENMP
#include <omp.h>
#endif

enum { EVAL_CHUNK = 500 };

typedef struct node_state {
  dt_rng rng;
  uint32_t *perm;   /* this epoch's order of the node's samples */
  size_t cursor;    /* next position in perm */
  long epochs;      /* completed passes */
  uint64_t seen;    /* samples processed since begin */
  dt_workspace *ws;
  float *x;         /* batch inputs */
  int32_t *y;
  float *gtmp;      /* full-batch accumulation */
} node_state;

struct dt_task {
  const dt_samples *train, *test;
  const dt_split *split;
  dt_model *model;
  int first, count;
  uint64_t seed;
  double l2;
  int batch, full_batch, ws_batch;
  node_state *node;
  int threads;
  dt_workspace **eval_ws; /* one per thread */
  float *eval_x;
  int32_t *eval_y;
};

size_t dt_task_dim(const dt_task *t) { return dt_model_num_params(t->model); }
const dt_model *dt_task_model(const dt_task *t) { return t->model; }
void dt_task_init_params(const dt_task *t, uint64_t seed, float *theta) { dt_model_init_params(t->model, seed, theta); }

static void build(const dt_samples *s, const uint32_t *idx, size_t n, float *x, int32_t *y) {
  if (s->u8 != NULL) {
    dt_image_set view = {.count = s->count, .rows = 1, .cols = (int)s->dim, .pixels = (uint8_t *)s->u8, .labels = (uint8_t *)s->labels};
    dt_batch_build(&view, idx, n, s->mean, s->std, x, y);
    return;
  }
  for (size_t b = 0; b < n; b++) {
    memcpy(x + b * s->dim, s->f32 + (size_t)idx[b] * s->dim, sizeof(float) * s->dim);
    y[b] = s->labels[idx[b]];
  }
}

void dt_task_free(dt_task *t) {
  if (t == NULL) return;
  for (int l = 0; t->node != NULL && l < t->count; l++) {
    dt_free(t->node[l].perm);
    dt_workspace_free(t->node[l].ws);
    dt_free(t->node[l].x);
    dt_free(t->node[l].y);
    dt_free(t->node[l].gtmp);
  }
  dt_free(t->node);
  for (int k = 0; t->eval_ws != NULL && k < t->threads; k++) dt_workspace_free(t->eval_ws[k]);
  dt_free(t->eval_ws);
  dt_free(t->eval_x);
  dt_free(t->eval_y);
  dt_model_free(t->model);
  dt_free(t);
}

dt_status dt_task_create(const dt_samples *train, const dt_samples *test, const dt_split *split,
                         const dt_model_spec *spec, int first, int count, uint64_t seed,
                         dt_task **out) {
  dt_status st = DT_OK;
  dt_task *t = NULL;
  *out = NULL;
  DT_ALLOC_GOTO(t, 1, "task");
  t->train = train;
  t->test = test;
  t->split = split;
  t->first = first;
  t->count = count;
  t->seed = seed;
  DT_TRY_GOTO(dt_model_create(spec, &t->model));
  DT_CHECK_GOTO(dt_model_input_size(t->model) == train->dim, DT_ERR_CONFIG,
                "experiment.model: the model takes %zu inputs per sample but the data has %zu", dt_model_input_size(t->model), train->dim);
  DT_ALLOC_GOTO(t->node, count, "task nodes");
  for (int l = 0; l < count; l++) DT_ALLOC_GOTO(t->node[l].perm, dt_split_size(split, first + l), "minibatch order");
  DT_TRY_GOTO(dt_task_set_threads(t, 1));
  DT_ALLOC_GOTO(t->eval_x, (size_t)EVAL_CHUNK * test->dim, "evaluation batch");
  DT_ALLOC_GOTO(t->eval_y, EVAL_CHUNK, "evaluation batch");
  *out = t;
  t = NULL;
cleanup:
  dt_task_free(t);
  return st;
}

dt_status dt_task_set_threads(dt_task *t, int threads) {
  dt_status st = DT_OK;
  dt_workspace **ws = NULL;
  DT_ALLOC_GOTO(ws, threads, "evaluation workspaces");
  for (int k = 0; k < threads; k++) DT_TRY_GOTO(dt_workspace_create(t->model, EVAL_CHUNK, &ws[k]));
  for (int k = 0; t->eval_ws != NULL && k < t->threads; k++) dt_workspace_free(t->eval_ws[k]);
  dt_free(t->eval_ws);
  t->eval_ws = ws;
  t->threads = threads;
  ws = NULL;
cleanup:
  for (int k = 0; ws != NULL && k < threads; k++) dt_workspace_free(ws[k]);
  dt_free(ws);
  return st;
}

dt_status dt_task_begin(dt_task *t, int batch_size, int full_batch, double l2) {
  dt_status st = DT_OK;
  t->l2 = l2;
  const int ws_batch = full_batch ? 256 : batch_size;
  for (int l = 0; l < t->count; l++) {
    node_state *ns = &t->node[l];
    const int node = t->first + l;
    dt_rng_init(&ns->rng, t->seed, DT_RNG_BATCH, (uint64_t)node);
    ns->cursor = dt_split_size(t->split, node); /* empty: the first call shuffles */
    ns->epochs = -1;                            /* ... and that first shuffle starts epoch 0 */
    ns->seen = 0;
    if (ws_batch != t->ws_batch) {
      dt_workspace_free(ns->ws);
      dt_free(ns->x);
      dt_free(ns->y);
      dt_free(ns->gtmp);
      ns->ws = NULL;
      ns->x = ns->gtmp = NULL;
      ns->y = NULL;
      DT_TRY_GOTO(dt_workspace_create(t->model, ws_batch, &ns->ws));
      DT_ALLOC_GOTO(ns->x, (size_t)ws_batch * t->train->dim, "batch");
      DT_ALLOC_GOTO(ns->y, ws_batch, "batch");
      DT_ALLOC_GOTO(ns->gtmp, dt_task_dim(t), "gradient");
    }
  }
  t->ws_batch = ws_batch;
  t->batch = batch_size;
  t->full_batch = full_batch;
cleanup:
  return st;
}

static void add_l2(const dt_task *t, const float *theta, float *grad, double *loss) {
  if (t->l2 == 0.0) return;
  const size_t d = dt_task_dim(t);
  double sq = 0;
  const float l2 = (float)t->l2;
  for (size_t i = 0; i < d; i++) {
    grad[i] += l2 * theta[i];
    sq += (double)theta[i] * theta[i];
  }
  *loss += 0.5 * t->l2 * sq;
}

/* Mean loss and gradient over all of node's samples (chunked); grad overwritten. */
static dt_status full_gradient(dt_task *t, node_state *ns, int node, const float *theta, float *grad, double *loss) {
  const size_t m = dt_split_size(t->split, node), d = dt_task_dim(t);
  const uint32_t *idx = t->split->idx + t->split->start[node];
  memset(grad, 0, sizeof(float) * d);
  *loss = 0;
  for (size_t s = 0; s < m; s += (size_t)t->ws_batch) {
    size_t b = m - s < (size_t)t->ws_batch ? m - s : (size_t)t->ws_batch;
    build(t->train, idx + s, b, ns->x, ns->y);
    float l;
    DT_TRY(dt_model_forward_backward(t->model, ns->ws, theta, ns->x, ns->y, (int)b, ns->gtmp, &l, NULL));
    const float w = (float)b / (float)m;
    for (size_t i = 0; i < d; i++) grad[i] += w * ns->gtmp[i];
    *loss += (double)l * (double)b / (double)m;
  }
  ns->seen += m;
  ns->epochs++;
  return DT_OK;
}

dt_status dt_task_gradient(dt_task *t, int node, const float *theta, float *grad, float *loss) {
  node_state *ns = &t->node[node - t->first];
  const size_t m = dt_split_size(t->split, node);
  double total;
  if (t->full_batch) {
    if (ns->epochs < 0) ns->epochs = 0;
    DT_TRY(full_gradient(t, ns, node, theta, grad, &total));
  } else {
    if (ns->cursor >= m) {
      memcpy(ns->perm, t->split->idx + t->split->start[node], sizeof(uint32_t) * m);
      dt_rng_shuffle_u32(&ns->rng, ns->perm, m);
      ns->cursor = 0;
      ns->epochs++;
    }
    size_t b = m - ns->cursor < (size_t)t->batch ? m - ns->cursor : (size_t)t->batch;
    build(t->train, ns->perm + ns->cursor, b, ns->x, ns->y);
    float l;
    DT_TRY(dt_model_forward_backward(t->model, ns->ws, theta, ns->x, ns->y, (int)b, grad, &l, NULL));
    ns->cursor += b;
    ns->seen += b;
    total = l;
  }
  add_l2(t, theta, grad, &total);
  *loss = (float)total;
  return DT_OK;
}

dt_status dt_task_evaluate(dt_task *t, const float *const *thetas, double *val_loss, double *accuracy) {
  const dt_samples *s = t->test;
  uint32_t idx[EVAL_CHUNK];
  long *correct = NULL;
  dt_status st = DT_OK;
  DT_ALLOC_GOTO(correct, t->count, "evaluation");
  for (int l = 0; l < t->count; l++) val_loss[l] = 0;
  for (size_t start = 0; start < s->count; start += EVAL_CHUNK) {
    size_t b = s->count - start < EVAL_CHUNK ? s->count - start : EVAL_CHUNK;
    for (size_t i = 0; i < b; i++) idx[i] = (uint32_t)(start + i);
    build(s, idx, b, t->eval_x, t->eval_y);
    /* nodes in parallel, each summing its own chunks in order: the same result for any threads */
#pragma omp parallel for schedule(dynamic, 1) num_threads(t->threads)
    for (int l = 0; l < t->count; l++) {
#ifdef _OPENMP
      dt_workspace *ws = t->eval_ws[omp_get_thread_num()];
#else
      dt_workspace *ws = t->eval_ws[0];
#endif
      dt_model_evaluate(t->model, ws, thetas[l], t->eval_x, t->eval_y, (int)b, &val_loss[l], &correct[l]);
    }
  }
  for (int l = 0; l < t->count; l++) {
    val_loss[l] /= (double)s->count;
    accuracy[l] = (double)correct[l] / (double)s->count;
  }
cleanup:
  dt_free(correct);
  return st;
}

dt_status dt_task_objective(dt_task *t, int node, const float *theta, double *value) {
  node_state *ns = &t->node[node - t->first];
  float *g = NULL;
  dt_status st = DT_OK;
  DT_ALLOC_GOTO(g, dt_task_dim(t), "objective");
  uint64_t seen = ns->seen;
  long epochs = ns->epochs;
  DT_TRY_GOTO(full_gradient(t, ns, node, theta, g, value));
  add_l2(t, theta, g, value);
  ns->seen = seen; /* an objective evaluation is not training */
  ns->epochs = epochs;
cleanup:
  dt_free(g);
  return st;
}

uint64_t dt_task_samples_seen(const dt_task *t, int node) { return t->node[node - t->first].seen; }

double dt_task_epoch(const dt_task *t, int node) {
  const node_state *ns = &t->node[node - t->first];
  if (ns->epochs < 0) return 0.0;
  if (t->full_batch) return (double)ns->epochs;
  const size_t m = dt_split_size(t->split, node);
  return (double)ns->epochs + (double)ns->cursor / (double)m;
}
