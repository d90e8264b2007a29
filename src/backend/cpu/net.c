/* The CPU backend's per-node model executor: forward, backward and evaluation of one node's
 * batch through the layer kernels (conv2d.c, linear.c, layers.c), with every scratch array in a
 * workspace sized once, so a training step allocates nothing. model.c runs it on the backend's
 * threads, one workspace per thread. */
#include <string.h>

#include "cpu_impl.h"
#include "dt/nn.h"

/* Scratch in backend memory; the struct itself is on the host. */
struct dt_workspace {
  int max_batch;
  const dt_model *m;
  int L, classes;
  dt_layer_info layers[DT_MAX_LAYERS];
  float *act[DT_MAX_LAYERS + 1]; /* act[l+1] = output of layer l; act[0] = the input */
  int owned[DT_MAX_LAYERS + 1];
  int32_t *argmax[DT_MAX_LAYERS];
  uint8_t *mask[DT_MAX_LAYERS];
  float *grad_a, *grad_b; /* ping-pong buffers for activation gradients */
  float *col, *dcol;
};

const dt_model *dt_workspace_model(const dt_workspace *ws) { return ws->m; }

void dt_workspace_free(dt_backend *be, dt_workspace *ws) {
  if (ws == NULL) return;
  for (int l = 0; l <= DT_MAX_LAYERS; l++)
    if (ws->owned[l]) dt_be_free(be, ws->act[l]);
  for (int l = 0; l < DT_MAX_LAYERS; l++) {
    dt_be_free(be, ws->argmax[l]);
    dt_be_free(be, ws->mask[l]);
  }
  dt_be_free(be, ws->grad_a);
  dt_be_free(be, ws->grad_b);
  dt_be_free(be, ws->col);
  dt_be_free(be, ws->dcol);
  dt_free(ws);
}

/* count elements of *p's type in backend memory */
#define BE_ALLOC(p, count) dt_be_alloc(be, (size_t)(count) * sizeof(*(p)), (void **)&(p))

dt_status dt_workspace_create(dt_backend *be, const dt_model *m, int max_batch, dt_workspace **out) {
  dt_status st = DT_OK;
  dt_workspace *ws = NULL;
  *out = NULL;
  DT_CHECK(max_batch >= 1, DT_ERR_CONFIG, "batch size must be at least 1, found %d", max_batch);
  DT_ALLOC_GOTO(ws, 1, "workspace");
  ws->max_batch = max_batch;
  ws->m = m;
  ws->L = dt_model_num_layers(m);
  ws->classes = dt_model_num_classes(m);
  const size_t B = (size_t)max_batch;
  for (int l = 0; l < ws->L; l++) {
    const dt_layer_info *ly = &ws->layers[l];
    ws->layers[l] = dt_model_layer(m, l);
    if (ly->kind == DT_LAYER_FLATTEN) continue; /* aliases its input */
    DT_TRY_GOTO(BE_ALLOC(ws->act[l + 1], B * ly->out_size));
    ws->owned[l + 1] = 1;
    if (ly->kind == DT_LAYER_MAXPOOL2D) DT_TRY_GOTO(BE_ALLOC(ws->argmax[l], B * ly->out_size));
    if (ly->kind == DT_LAYER_DROPOUT) DT_TRY_GOTO(BE_ALLOC(ws->mask[l], B * ly->out_size));
  }
  DT_TRY_GOTO(BE_ALLOC(ws->grad_a, B * dt_model_max_activation(m)));
  DT_TRY_GOTO(BE_ALLOC(ws->grad_b, B * dt_model_max_activation(m)));
  if (dt_model_col_size(m) > 0) {
    DT_TRY_GOTO(BE_ALLOC(ws->col, dt_model_col_size(m)));
    DT_TRY_GOTO(BE_ALLOC(ws->dcol, dt_model_col_size(m)));
  }
  *out = ws;
  ws = NULL;
cleanup:
  dt_workspace_free(be, ws);
  return st;
}

static void forward(dt_workspace *ws, const float *params, const float *x, int batch, dt_rng *dropout_rng, int train) {
  ws->act[0] = (float *)x; /* read only: no kernel writes its input */
  for (int l = 0; l < ws->L; l++) {
    const dt_layer_info *ly = &ws->layers[l];
    const float *in = ws->act[l];
    float *o = ws->act[l + 1];
    const float *wt = params + ly->w_off, *bs = params + ly->b_off;
    const size_t n_out = (size_t)batch * ly->out_size;
    switch (ly->kind) {
      case DT_LAYER_CONV2D: dt_cpu_conv2d_forward(&ly->conv, batch, in, wt, bs, o, ws->col); break;
      case DT_LAYER_MAXPOOL2D: dt_cpu_maxpool_forward(&ly->pool, batch, in, o, ws->argmax[l]); break;
      case DT_LAYER_LINEAR: dt_cpu_linear_forward(batch, (int)ly->in_size, (int)ly->out_size, in, wt, bs, o); break;
      case DT_LAYER_RELU: dt_cpu_relu_forward(n_out, in, o); break;
      case DT_LAYER_FLATTEN: ws->act[l + 1] = (float *)in; break;
      case DT_LAYER_DROPOUT:
        if (train && ly->p > 0.0f && dropout_rng != NULL)
          dt_cpu_dropout_forward(n_out, ly->p, in, o, ws->mask[l], dropout_rng);
        else
          memcpy(o, in, sizeof(float) * n_out);
        break;
      default: break;
    }
  }
}

dt_status dt_model_forward_backward(dt_backend *be, const dt_model *m, dt_workspace *ws, const float *params,
                                    const float *x, const int32_t *y, int batch, float *grad,
                                    float *loss, dt_rng *dropout_rng) {
  (void)be;
  DT_CHECK(m == ws->m, DT_ERR_INTERNAL, "a workspace used with another model than its own");
  DT_CHECK(batch >= 1 && batch <= ws->max_batch, DT_ERR_INTERNAL,
           "batch %d outside the workspace's 1..%d", batch, ws->max_batch);
  forward(ws, params, x, batch, dropout_rng, 1);
  float *dcur = ws->grad_a, *dnext = ws->grad_b;
  const double total = dt_cpu_log_softmax_nll(batch, ws->classes, ws->act[ws->L], y, dcur, 1.0f / (float)batch, NULL);
  *loss = (float)(total / batch);
  for (int l = ws->L - 1; l >= 0; l--) {
    const dt_layer_info *ly = &ws->layers[l];
    const float *in = ws->act[l];
    const float *wt = params + ly->w_off;
    float *dw = grad + ly->w_off, *db = grad + ly->b_off;
    /* The first layer's input gradient is never needed (the input is data). */
    float *dx = l > 0 ? dnext : NULL;
    const size_t n_out = (size_t)batch * ly->out_size;
    switch (ly->kind) {
      case DT_LAYER_CONV2D: dt_cpu_conv2d_backward(&ly->conv, batch, in, wt, dcur, dw, db, dx, ws->col, ws->dcol); break;
      case DT_LAYER_LINEAR:
        dt_cpu_linear_backward(batch, (int)ly->in_size, (int)ly->out_size, in, wt, dcur, dw, db, dx);
        break;
      case DT_LAYER_MAXPOOL2D:
        if (dx != NULL) dt_cpu_maxpool_backward(&ly->pool, batch, dcur, ws->argmax[l], dx);
        break;
      case DT_LAYER_RELU:
        dt_cpu_relu_backward(n_out, ws->act[l + 1], dcur, dcur);
        dx = dcur; /* in place */
        break;
      case DT_LAYER_DROPOUT:
        if (ly->p > 0.0f && dropout_rng != NULL) dt_cpu_dropout_backward(n_out, ly->p, ws->mask[l], dcur, dcur);
        dx = dcur;
        break;
      case DT_LAYER_FLATTEN: dx = dcur; break;
      default: break;
    }
    if (dx == dnext) {
      dnext = dcur;
      dcur = dx;
    }
  }
  return DT_OK;
}

dt_status dt_model_evaluate(dt_backend *be, const dt_model *m, dt_workspace *ws, const float *params,
                            const float *x, const int32_t *y, int n, double *loss_sum,
                            long *correct) {
  (void)be;
  DT_CHECK(m == ws->m, DT_ERR_INTERNAL, "a workspace used with another model than its own");
  const size_t d = dt_model_input_size(m);
  for (int start = 0; start < n; start += ws->max_batch) {
    int b = n - start < ws->max_batch ? n - start : ws->max_batch;
    forward(ws, params, x + (size_t)start * d, b, NULL, 0);
    *loss_sum += dt_cpu_log_softmax_nll(b, ws->classes, ws->act[ws->L], y + start, NULL, 0.0f, correct);
  }
  return DT_OK;
}
