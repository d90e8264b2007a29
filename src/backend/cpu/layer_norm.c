/* batchnorm2d and groupnorm on the CPU (kernels in norm.c); the scratch keeps the forward's
 * statistics for the backward. */
#include "cpu_impl.h"

static size_t scratch(const dt_layer_info *li, int max_batch) { return sizeof(float) * dt_cpu_norm_stats(&li->norm, max_batch); }

static void forward(const cpu_layer_call *c) {
  dt_cpu_norm_forward(&c->li->norm, c->batch, c->train, c->x, c->y, c->params, c->buffers, (float *)c->scratch);
}

static void backward(const cpu_layer_call *c) {
  dt_cpu_norm_backward(&c->li->norm, c->batch, c->x, c->dy, c->params, c->grad, (const float *)c->scratch, c->dx);
}

const cpu_layer_ops dt_cpu_layer_batchnorm2d = {.scratch = scratch, .forward = forward, .backward = backward};
const cpu_layer_ops dt_cpu_layer_groupnorm = {.scratch = scratch, .forward = forward, .backward = backward};
