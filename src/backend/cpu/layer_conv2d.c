/* conv2d on the CPU: the kernels of conv2d.c. Without a bias, the scratch holds a zero bias for
 * the forward and a sink for the bias gradient, so the kernels stay one code path. */
#include "cpu_impl.h"

static size_t scratch(const dt_layer_info *li, int max_batch) {
  (void)max_batch;
  return li->n_b == 0 ? 2 * sizeof(float) * (size_t)li->conv.f : 0;
}

static const float *bias(const cpu_layer_call *c) {
  return c->li->n_b > 0 ? c->params + c->li->b_off : (const float *)c->scratch;
}

static void forward(const cpu_layer_call *c) {
  const dt_layer_info *li = c->li;
  dt_cpu_conv2d_forward(&li->conv, c->batch, c->x, c->params + li->w_off, bias(c), c->y, c->col);
}

static void backward(const cpu_layer_call *c) {
  const dt_layer_info *li = c->li;
  float *db = li->n_b > 0 ? c->grad + li->b_off : (float *)c->scratch + li->conv.f;
  dt_cpu_conv2d_backward(&li->conv, c->batch, c->x, c->params + li->w_off, c->dy, c->grad + li->w_off, db, c->dx, c->col,
                         c->dcol);
}

const cpu_layer_ops dt_cpu_layer_conv2d = {.scratch = scratch, .forward = forward, .backward = backward};
