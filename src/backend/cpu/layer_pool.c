/* The pooling layers on the CPU: maxpool2d (keeps each window's argmax in its scratch),
 * avgpool2d and global_avgpool (kernels in layers.c). */
#include "cpu_impl.h"

static size_t max_scratch(const dt_layer_info *li, int max_batch) { return sizeof(int32_t) * (size_t)max_batch * li->out_size; }

static void max_forward(const cpu_layer_call *c) {
  dt_cpu_maxpool_forward(&c->li->pool, c->batch, c->x, c->y, (int32_t *)c->scratch);
}

static void max_backward(const cpu_layer_call *c) {
  if (c->dx != NULL) dt_cpu_maxpool_backward(&c->li->pool, c->batch, c->dy, (const int32_t *)c->scratch, c->dx);
}

static void avg_forward(const cpu_layer_call *c) { dt_cpu_avgpool_forward(&c->li->pool, c->batch, c->x, c->y); }

static void avg_backward(const cpu_layer_call *c) {
  if (c->dx != NULL) dt_cpu_avgpool_backward(&c->li->pool, c->batch, c->dy, c->dx);
}

const cpu_layer_ops dt_cpu_layer_maxpool2d = {.scratch = max_scratch, .forward = max_forward, .backward = max_backward};
const cpu_layer_ops dt_cpu_layer_avgpool2d = {.forward = avg_forward, .backward = avg_backward};
const cpu_layer_ops dt_cpu_layer_global_avgpool = {.forward = avg_forward, .backward = avg_backward};
