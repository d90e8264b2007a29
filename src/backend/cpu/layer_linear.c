/* linear on the CPU: the kernels of linear.c (a zero bias from the scratch when it has none). */
#include "cpu_impl.h"

static size_t scratch(const dt_layer_info *li, int max_batch) {
  (void)max_batch;
  return li->n_b == 0 ? 2 * sizeof(float) * li->out_size : 0;
}

static void forward(const cpu_layer_call *c) {
  const dt_layer_info *li = c->li;
  const float *b = li->n_b > 0 ? c->params + li->b_off : (const float *)c->scratch;
  dt_cpu_linear_forward(c->batch, (int)li->in_size, (int)li->out_size, c->x, c->params + li->w_off, b, c->y);
}

static void backward(const cpu_layer_call *c) {
  const dt_layer_info *li = c->li;
  float *db = li->n_b > 0 ? c->grad + li->b_off : (float *)c->scratch + li->out_size;
  dt_cpu_linear_backward(c->batch, (int)li->in_size, (int)li->out_size, c->x, c->params + li->w_off, c->dy,
                         c->grad + li->w_off, db, c->dx);
}

const cpu_layer_ops dt_cpu_layer_linear = {.scratch = scratch, .forward = forward, .backward = backward};
