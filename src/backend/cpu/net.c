/* The CPU backend's per-node model executor: forward, backward and evaluation of one node's
 * batch, each layer run through its type's entry in the layer table (layer_*.c), with every
 * scratch array in a workspace sized once, so a training step allocates nothing. model.c runs it
 * on the backend's threads, one workspace per thread. */
#include <string.h>

#include "cpu_impl.h"
#include "dt/nn.h"
#include "dt/timer.h"

static const cpu_layer_ops *const layer_ops[DT_LAYER_KIND_COUNT] = {
#define CPU_LAYER_ENTRY(upper, lower) [DT_LAYER_##upper] = &dt_cpu_layer_##lower,
    DT_LAYER_LIST(CPU_LAYER_ENTRY)
#undef CPU_LAYER_ENTRY
};

/* Scratch in backend memory; the struct itself is on the host. */
struct dt_workspace {
  int max_batch;
  const dt_model *m;
  int L, classes;
  const dt_layer_info *layers;       /* the model's compiled list */
  float *act[DT_MAX_COMPILED + 1];   /* act[l+1] = output of layer l; act[0] = the input */
  int owned[DT_MAX_COMPILED + 1];
  void *scratch[DT_MAX_COMPILED];    /* each layer's own (argmax, mask, statistics, ...) */
  float *grad_a, *grad_b;            /* ping-pong buffers for activation gradients */
  float *col, *dcol;
  int eval;                          /* forward only (dt_workspace_create_eval): outputs share pool */
  float *pool[DT_MAX_COMPILED];      /* eval: the buffers the layers' outputs take turns in */
  int dry;                           /* dt_workspace_bytes: nothing allocated, the bytes counted */
  size_t dry_bytes;
};

const dt_model *dt_workspace_model(const dt_workspace *ws) { return ws->m; }

void dt_workspace_free(dt_backend *be, dt_workspace *ws) {
  if (ws == NULL) return;
  if (ws->dry) { /* dt_workspace_bytes: nothing was allocated */
    dt_free(ws);
    return;
  }
  for (int l = 0; l <= DT_MAX_COMPILED; l++)
    if (ws->owned[l]) dt_be_free(be, ws->act[l]);
  for (int k = 0; k < DT_MAX_COMPILED; k++) dt_be_free(be, ws->pool[k]);
  for (int l = 0; l < DT_MAX_COMPILED; l++) dt_be_free(be, ws->scratch[l]);
  dt_be_free(be, ws->grad_a);
  dt_be_free(be, ws->grad_b);
  dt_be_free(be, ws->col);
  dt_be_free(be, ws->dcol);
  dt_free(ws);
}

/* count elements of *p's type in backend memory */
/* An allocation of the workspace, or with ws->dry its size counted as dt_calloc_ rounds it. */
static dt_status ws_alloc(dt_backend *be, dt_workspace *ws, size_t bytes, void **out) {
  if (!ws->dry) return dt_be_alloc(be, bytes, out);
  ws->dry_bytes += (bytes + 63) & ~(size_t)63;
  *out = NULL;
  return DT_OK;
}
#define BE_ALLOC(p, count) ws_alloc(be, ws, (size_t)(count) * sizeof(*(p)), (void **)&(p))

/* Forward only, each layer's output lives from the layer that writes it to its last reader: the
 * next layer, and the residual end that adds its block's input. Outputs whose lives do not
 * overlap share a buffer (first fit in layer order); an aliasing layer's output is its input's
 * buffer. For ResNet-20 at 500 samples this is 4 buffers of the largest activation instead of all
 * 60 layers' outputs (1.2 GB a thread). */
static dt_status eval_buffers(dt_backend *be, dt_workspace *ws, size_t B) {
  const int L = ws->L;
  int root[DT_MAX_COMPILED + 1], last[DT_MAX_COMPILED + 1], buf[DT_MAX_COMPILED + 1], busy[DT_MAX_COMPILED];
  size_t need[DT_MAX_COMPILED] = {0};
  for (int i = 0; i <= L; i++) last[i] = i, root[i] = i; /* act[i] is read by layer i (act[L]: by the loss) */
  for (int l = 0; l < L; l++) {
    const dt_layer_info *li = &ws->layers[l];
    if (li->kind == DT_LAYER_RESIDUAL_END && last[li->pair] < l) last[li->pair] = l;
    if (layer_ops[li->kind]->forward_alias) root[l + 1] = root[l];
  }
  for (int i = L; i >= 1; i--)
    if (root[i] != i && last[root[i]] < last[i]) last[root[i]] = last[i];
  int n = 0;
  for (int i = 1; i <= L; i++) {
    if (root[i] != i) continue;
    int k = 0;
    while (k < n && busy[k] >= i - 1) k++; /* free once its last reader ran before layer i - 1 */
    if (k == n) n++;
    busy[k] = last[i];
    buf[i] = k;
    if (ws->layers[i - 1].out_size > need[k]) need[k] = ws->layers[i - 1].out_size;
  }
  for (int k = 0; k < n; k++) DT_TRY(BE_ALLOC(ws->pool[k], B * need[k]));
  for (int i = 1; i <= L; i++)
    if (root[i] == i) ws->act[i] = ws->pool[buf[i]];
  return DT_OK;
}

static dt_status workspace_make(dt_backend *be, const dt_model *m, int max_batch, int eval, int dry, dt_workspace **out) {
  dt_status st = DT_OK;
  dt_workspace *ws = NULL;
  *out = NULL;
  DT_CHECK(max_batch >= 1, DT_ERR_CONFIG, "batch size must be at least 1, found %d", max_batch);
  DT_ALLOC_GOTO(ws, 1, "workspace");
  ws->dry = dry;
  ws->max_batch = max_batch;
  ws->m = m;
  ws->L = dt_model_num_layers(m);
  ws->classes = dt_model_num_classes(m);
  ws->layers = dt_model_layer(m, 0);
  ws->eval = eval;
  const size_t B = (size_t)max_batch;
  for (int l = 0; l < ws->L; l++) {
    const dt_layer_info *li = &ws->layers[l];
    const cpu_layer_ops *ops = layer_ops[li->kind];
    if (ops->scratch != NULL && ops->scratch(li, max_batch) > 0)
      DT_TRY_GOTO(ws_alloc(be, ws, ops->scratch(li, max_batch), &ws->scratch[l]));
    if (ops->forward_alias || eval) continue; /* its output is its input; eval: eval_buffers */
    DT_TRY_GOTO(BE_ALLOC(ws->act[l + 1], B * li->out_size));
    ws->owned[l + 1] = 1;
  }
  if (eval) {
    DT_TRY_GOTO(eval_buffers(be, ws, B));
  } else {
    DT_TRY_GOTO(BE_ALLOC(ws->grad_a, B * dt_model_max_activation(m)));
    DT_TRY_GOTO(BE_ALLOC(ws->grad_b, B * dt_model_max_activation(m)));
  }
  if (dt_model_col_size(m) > 0) {
    DT_TRY_GOTO(BE_ALLOC(ws->col, dt_model_col_size(m)));
    if (!eval) DT_TRY_GOTO(BE_ALLOC(ws->dcol, dt_model_col_size(m)));
  }
  *out = ws;
  ws = NULL;
cleanup:
  dt_workspace_free(be, ws);
  return st;
}

dt_status dt_workspace_create(dt_backend *be, const dt_model *m, int max_batch, dt_workspace **out) {
  return workspace_make(be, m, max_batch, 0, 0, out);
}

dt_status dt_workspace_create_eval(dt_backend *be, const dt_model *m, int max_batch, dt_workspace **out) {
  return workspace_make(be, m, max_batch, 1, 0, out);
}

size_t dt_workspace_bytes(const dt_model *m, int max_batch, int eval) {
  dt_workspace *ws = NULL;
  if (workspace_make(NULL, m, max_batch, eval, 1, &ws) != DT_OK) {
    dt_error_clear();
    return 0;
  }
  const size_t bytes = ws->dry_bytes;
  dt_workspace_free(NULL, ws);
  return bytes;
}

/* A call on layer l with what every layer gets. */
static cpu_layer_call layer_call(dt_workspace *ws, int l, int batch, int train, const float *params, float *grad,
                                 float *buffers, dt_rng *rng) {
  return (cpu_layer_call){.li = &ws->layers[l], .layers = ws->layers, .l = l, .batch = batch, .train = train,
                          .x = ws->act[l], .y = ws->act[l + 1], .params = params, .grad = grad, .buffers = buffers,
                          .scratch = ws->scratch[l], .col = ws->col, .dcol = ws->dcol, .rng = rng,
                          .act = (const float *const *)ws->act, .scratch_of = ws->scratch};
}

static void forward(dt_workspace *ws, const float *params, float *buffers, const float *x, int batch, dt_rng *dropout_rng,
                    int train) {
  ws->act[0] = (float *)x; /* read only: no kernel writes its input */
  for (int l = 0; l < ws->L; l++) {
    const cpu_layer_ops *ops = layer_ops[ws->layers[l].kind];
    if (ops->forward_alias) ws->act[l + 1] = ws->act[l];
    const cpu_layer_call c = layer_call(ws, l, batch, train, params, NULL, buffers, dropout_rng);
    ops->forward(&c);
  }
}

dt_status dt_model_forward_backward(dt_backend *be, const dt_model *m, dt_workspace *ws, const float *params,
                                    float *buffers, const float *x, const int32_t *y, int batch, float *grad,
                                    float *loss, dt_rng *dropout_rng) {
  (void)be;
  DT_CHECK(m == ws->m, DT_ERR_INTERNAL, "a workspace used with another model than its own");
  DT_CHECK(!ws->eval, DT_ERR_INTERNAL, "a training step on an evaluation workspace (it keeps no activations)");
  DT_CHECK(batch >= 1 && batch <= ws->max_batch, DT_ERR_INTERNAL,
           "batch %d outside the workspace's 1..%d", batch, ws->max_batch);
  DT_CHECK(buffers != NULL || dt_model_num_buffers(m) == 0, DT_ERR_INTERNAL, "a model with buffers called without them");
  forward(ws, params, buffers, x, batch, dropout_rng, 1);
  float *dcur = ws->grad_a, *dnext = ws->grad_b;
  const double total = dt_cpu_log_softmax_nll(batch, ws->classes, ws->act[ws->L], y, dcur, 1.0f / (float)batch, NULL);
  *loss = (float)(total / batch);
  for (int l = ws->L - 1; l >= 0; l--) {
    const cpu_layer_ops *ops = layer_ops[ws->layers[l].kind];
    cpu_layer_call c = layer_call(ws, l, batch, 1, params, grad, buffers, dropout_rng);
    c.dy = dcur;
    /* The first layer's input gradient is never needed (the input is data). */
    c.dx = ops->backward_in_place ? dcur : l > 0 ? dnext : NULL;
    ops->backward(&c);
    if (c.dx == dnext) {
      dnext = dcur;
      dcur = c.dx;
    }
  }
  return DT_OK;
}

dt_status dt_model_evaluate(dt_backend *be, const dt_model *m, dt_workspace *ws, const float *params,
                            const float *buffers, const float *x, const int32_t *y, int n, double *loss_sum,
                            long *correct) {
  (void)be;
  DT_CHECK(m == ws->m, DT_ERR_INTERNAL, "a workspace used with another model than its own");
  const size_t d = dt_model_input_size(m);
  for (int start = 0; start < n; start += ws->max_batch) {
    int b = n - start < ws->max_batch ? n - start : ws->max_batch;
    DT_CHECK(!dt_stop_evaluation(), DT_ERR_INTERRUPTED, "evaluation interrupted by signal %d", dt_stop_requested());
    forward(ws, params, (float *)buffers /* eval mode reads them only */, x + (size_t)start * d, b, NULL, 0);
    dt_heartbeat();
    *loss_sum += dt_cpu_log_softmax_nll(b, ws->classes, ws->act[ws->L], y + start, NULL, 0.0f, correct);
  }
  return DT_OK;
}

dt_status dt_model_logits(dt_backend *be, const dt_model *m, dt_workspace *ws, const float *params, const float *buffers,
                          const float *x, int n, float *out) {
  (void)be;
  DT_CHECK(m == ws->m, DT_ERR_INTERNAL, "a workspace used with another model than its own");
  const size_t d = dt_model_input_size(m), k = (size_t)ws->classes;
  for (int start = 0; start < n; start += ws->max_batch) {
    int b = n - start < ws->max_batch ? n - start : ws->max_batch;
    forward(ws, params, (float *)buffers, x + (size_t)start * d, b, NULL, 0);
    memcpy(out + (size_t)start * k, ws->act[ws->L], sizeof(float) * (size_t)b * k);
  }
  return DT_OK;
}
